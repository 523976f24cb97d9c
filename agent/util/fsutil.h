/* Small file helpers used by probes and config. */
#ifndef PF_FSUTIL_H
#define PF_FSUTIL_H

#include <stddef.h>
#include "err.h"

/* Read a whole regular file (at most max bytes) into a NUL-terminated
 * malloc'd buffer. *len_out may be NULL. Anything but a regular file (a
 * FIFO, a directory, a device) is an error at once, never a blocked read. */
pf_err pf_read_file(const char *path, size_t max, char **out, size_t *len_out,
                    char *err);
/* Read the first line of a small regular file (sysfs attribute), trailing
 * whitespace stripped. Returns PF_ERR_NOTFOUND if the file is absent. */
pf_err pf_read_line(const char *path, char *buf, size_t len, char *err);
/* Write a file atomically, so a report is never half written: a temp file
 * beside it, created exclusively (O_EXCL | O_NOFOLLOW) under a random name,
 * then renamed over path, only when path's own entry is missing or a
 * regular file (checked with lstat just before the rename): a device node
 * or a link at path is never replaced. */
pf_err pf_write_file_atomic(const char *path, const char *data, size_t len,
                            char *err);
/* Whether pf_write_file_atomic(path) can work, checked before a run: the
 * directory exists and is writable, path is missing or a regular file (not
 * a directory, a link, a device, a FIFO). PF_ERR_USAGE with the reason. */
pf_err pf_check_writable_path(const char *path, char *err);
/* Whether path can serve as a directory files are written into: it is a
 * writable directory (or a link to one), or it is missing and could be
 * created (pf_check_writable_path on it). PF_ERR_USAGE with the reason. */
pf_err pf_check_dir_path(const char *path, char *err);
/* A tree read in place of / (sysfs_root, dev_root): "" (the real root) or
 * an existing directory; PF_ERR_USAGE naming key and path otherwise. */
pf_err pf_check_root_dir(const char *root, const char *key, char *err);
/* snprintf into buf; returns PF_ERR_USAGE if it did not fit. */
pf_err pf_path_join(char *buf, size_t len, const char *root, const char *path,
                    char *err);

#endif
