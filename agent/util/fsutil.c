#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pf_err pf_read_file(const char *path, size_t max, char **out, size_t *len_out,
                    char *err)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;

    *out = NULL;
    if (!f)
        return pf_fail(err, errno == ENOENT ? PF_ERR_NOTFOUND : PF_ERR_IO,
                       "%s: %s", path, strerror(errno));
    buf = malloc(max + 1);
    if (!buf) {
        fclose(f);
        return pf_fail(err, PF_ERR_NOMEM, "%s: out of memory", path);
    }
    n = fread(buf, 1, max + 1, f);
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        free(buf);
        return pf_fail(err, PF_ERR_IO, "%s: read failed: %s", path, strerror(e));
    }
    fclose(f);
    if (n > max) {
        free(buf);
        return pf_fail(err, PF_ERR_IO, "%s: larger than %zu bytes", path, max);
    }
    buf[n] = '\0';
    *out = buf;
    if (len_out)
        *len_out = n;
    return PF_OK;
}

pf_err pf_read_line(const char *path, char *buf, size_t len, char *err)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (len == 0)
        return pf_fail(err, PF_ERR_USAGE, "%s: empty buffer", path);
    buf[0] = '\0';
    if (!f)
        return pf_fail(err, errno == ENOENT ? PF_ERR_NOTFOUND : PF_ERR_IO,
                       "%s: %s", path, strerror(errno));
    if (!fgets(buf, (int)len, f))
        buf[0] = '\0';
    fclose(f);
    n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' ||
                     buf[n - 1] == '\t' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    return PF_OK;
}

pf_err pf_write_file_atomic(const char *path, const char *data, size_t len,
                            char *err)
{
    char tmp[4096];
    int fd;
    size_t off = 0;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >=
        (int)sizeof(tmp))
        return pf_fail(err, PF_ERR_USAGE, "%s: path too long", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return pf_fail(err, PF_ERR_IO, "%s: %s", tmp, strerror(errno));
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return pf_fail(err, PF_ERR_IO, "%s: write failed: %s", tmp,
                           strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return pf_fail(err, PF_ERR_IO, "%s: %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return pf_fail(err, PF_ERR_IO, "%s: rename failed: %s", path,
                       strerror(e));
    }
    return PF_OK;
}

pf_err pf_path_join(char *buf, size_t len, const char *root, const char *path,
                    char *err)
{
    int n = snprintf(buf, len, "%s%s", root ? root : "", path);
    if (n < 0 || (size_t)n >= len)
        return pf_fail(err, PF_ERR_USAGE, "path too long: %s%s",
                       root ? root : "", path);
    return PF_OK;
}
