#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *pf_err_name(pf_err e)
{
    switch (e) {
    case PF_OK: return "ok";
    case PF_ERR_USAGE: return "usage";
    case PF_ERR_CONFIG: return "config";
    case PF_ERR_IO: return "io";
    case PF_ERR_SYS: return "system";
    case PF_ERR_NOMEM: return "out of memory";
    case PF_ERR_NOTFOUND: return "not found";
    case PF_ERR_UNSUPPORTED: return "unsupported";
    case PF_ERR_TIMEOUT: return "timeout";
    case PF_ERR_REJECTED: return "rejected";
    case PF_ERR_LOST: return "peer lost";
    case PF_ERR_PROTOCOL: return "protocol";
    case PF_ERR_DATA: return "data corruption";
    case PF_ERR_API: return "api";
    case PF_ERR_FORBIDDEN: return "forbidden";
    case PF_ERR_UNAUTHORIZED: return "unauthorized";
    case PF_ERR_ENGINE: return "engine";
    }
    return "unknown";
}

pf_err pf_fail(char *msg, pf_err code, const char *fmt, ...)
{
    if (msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, PF_ERRLEN, fmt, ap);
        va_end(ap);
    }
    return code;
}

void pf_err_prefix(char *msg, const char *fmt, ...)
{
    char head[PF_ERRLEN], old[PF_ERRLEN];
    va_list ap;

    if (!msg)
        return;
    va_start(ap, fmt);
    vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    snprintf(old, sizeof(old), "%s", msg);
    snprintf(msg, PF_ERRLEN, "%s: %s", head, old);
}
