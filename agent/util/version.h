/* The agent's version: --version, the report, the API client's User-Agent. */
#ifndef PF_VERSION_H
#define PF_VERSION_H

#define PF_VERSION "0.1.0"

#endif
