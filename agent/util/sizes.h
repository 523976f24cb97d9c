/* Buffer sizes shared by the data model and the leaf libraries. */
#ifndef PF_SIZES_H
#define PF_SIZES_H

#define PF_PATH_MAX 1024
#define PF_NAME_MAX 256

#endif
