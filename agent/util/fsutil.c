#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Open a file to read it: non-blocking, so a FIFO or a device named as a
 * config, catalog, secret or token file fails at once instead of blocking
 * the run, and only a regular file is read. */
static pf_err open_regular(const char *path, int *fd_out, char *err)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

    *fd_out = -1;
    if (fd < 0)
        return pf_fail(err, errno == ENOENT ? PF_ERR_NOTFOUND : PF_ERR_IO,
                       "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return pf_fail(err, PF_ERR_IO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return pf_fail(err, PF_ERR_IO, "%s: not a regular file (%s)", path,
                       S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISDIR(st.st_mode) ? "a directory"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : "not a file");
    }
    /* Back to blocking reads: a regular file never blocks anyway. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *fd_out = fd;
    return PF_OK;
}

pf_err pf_read_file(const char *path, size_t max, char **out, size_t *len_out,
                    char *err)
{
    char *buf;
    size_t n = 0;
    int fd;
    pf_err rc;

    *out = NULL;
    rc = open_regular(path, &fd, err);
    if (rc != PF_OK)
        return rc;
    buf = malloc(max + 1);
    if (!buf) {
        close(fd);
        return pf_fail(err, PF_ERR_NOMEM, "%s: out of memory", path);
    }
    /* One byte more than allowed tells "too large" from "just fits";
     * sysfs and procfs files report size 0, so read until EOF. */
    while (n < max + 1) {
        ssize_t r = read(fd, buf + n, max + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return pf_fail(err, PF_ERR_IO, "%s: read failed: %s", path,
                           strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
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
    size_t n = 0;
    char *nl;
    int fd;
    pf_err rc;

    if (len == 0)
        return pf_fail(err, PF_ERR_USAGE, "%s: empty buffer", path);
    buf[0] = '\0';
    rc = open_regular(path, &fd, err);
    if (rc != PF_OK)
        return rc;
    while (n + 1 < len) {
        ssize_t r = read(fd, buf + n, len - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (memchr(buf + n - (size_t)r, '\n', (size_t)r))
            break;
    }
    close(fd);
    buf[n] = '\0';
    nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    n = strlen(buf);
    while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t' ||
                     buf[n - 1] == '\r'))
        buf[--n] = '\0';
    return PF_OK;
}

static const char *kind_of(mode_t m)
{
    return S_ISLNK(m) ? "a symbolic link"
           : S_ISCHR(m) ? "a character device"
           : S_ISBLK(m) ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISDIR(m) ? "a directory"
           : S_ISREG(m) ? "a regular file"
           : "not a regular file";
}

/* What path's own directory entry is (never what a link points to):
 * PF_OK when it is missing or a regular file. */
static pf_err entry_replaceable(const char *path, char *err)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return errno == ENOENT ? PF_OK
               : pf_fail(err, PF_ERR_IO, "%s: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode))
        return PF_OK;
    return pf_fail(err, PF_ERR_USAGE, "%s is %s, not a regular file: only a "
                   "regular file (or a missing one) is replaced", path,
                   kind_of(st.st_mode));
}

/* An unpredictable temp name beside path: ".<name>.<16 hex>". */
static pf_err temp_name(const char *path, char *out, size_t len, char *err)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    unsigned char rnd[8];
    char hex[17];
    size_t got = 0;
    int n;

    while (got < sizeof(rnd)) {
        ssize_t r = getrandom(rnd + got, sizeof(rnd) - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return pf_fail(err, PF_ERR_SYS, "getrandom: %s", strerror(errno));
        got += (size_t)r;
    }
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
    n = snprintf(out, len, "%.*s.%s.%s", (int)dirlen, path, path + dirlen,
                 hex);
    if (n < 0 || (size_t)n >= len)
        return pf_fail(err, PF_ERR_USAGE, "%s: path too long", path);
    return PF_OK;
}

pf_err pf_write_file_atomic(const char *path, const char *data, size_t len,
                            char *err)
{
    char tmp[PATH_MAX + 32];
    int fd = -1;
    size_t off = 0;

    /* Created exclusively under a name no one can guess, never through a
     * link: a symlink planted beside the report cannot redirect the
     * write, whoever runs the agent. */
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        pf_err rc = temp_name(path, tmp, sizeof(tmp), err);
        if (rc != PF_OK)
            return rc;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0644);
        if (fd < 0 && errno != EEXIST)
            return pf_fail(err, PF_ERR_IO, "%s: cannot create a temporary "
                           "file beside it: %s", path, strerror(errno));
    }
    if (fd < 0)
        return pf_fail(err, PF_ERR_IO, "%s: no free temporary name", path);
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
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
    /* rename would replace whatever the entry is (a device node, a link)
     * with a regular file: it is checked again here, as the entry may
     * have changed since the check before the run. */
    if (entry_replaceable(path, err) != PF_OK) {
        unlink(tmp);
        return PF_ERR_IO;
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return pf_fail(err, PF_ERR_IO, "%s: rename failed: %s", path,
                       strerror(e));
    }
    return PF_OK;
}

pf_err pf_check_writable_path(const char *path, char *err)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    struct stat st;

    if (!path[0])
        return pf_fail(err, PF_ERR_USAGE, "empty path");
    if (slash && slash[1] == '\0')
        return pf_fail(err, PF_ERR_USAGE, "%s names a directory, not a file",
                       path);
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else if ((size_t)(slash - path) >= sizeof(dir))
        return pf_fail(err, PF_ERR_USAGE, "%s: path too long", path);
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (stat(dir, &st) != 0)
        return pf_fail(err, PF_ERR_USAGE, "%s: directory %s: %s", path, dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return pf_fail(err, PF_ERR_USAGE, "%s: %s is not a directory", path,
                       dir);
    if (access(dir, W_OK | X_OK) != 0)
        return pf_fail(err, PF_ERR_USAGE, "%s: directory %s is not writable: "
                       "%s", path, dir, strerror(errno));
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return pf_fail(err, PF_ERR_USAGE, "%s is a directory, not a file",
                       path);
    return entry_replaceable(path, err) == PF_OK ? PF_OK : PF_ERR_USAGE;
}

pf_err pf_check_root_dir(const char *root, const char *key, char *err)
{
    struct stat st;

    if (!root[0])
        return PF_OK;
    if (stat(root, &st) != 0)
        return pf_fail(err, PF_ERR_USAGE, "%s '%s': %s", key, root,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return pf_fail(err, PF_ERR_USAGE, "%s '%s': not a directory", key,
                       root);
    return PF_OK;
}

pf_err pf_check_dir_path(const char *path, char *err)
{
    struct stat st;
    char parent[PATH_MAX];
    size_t n = strlen(path);

    if (!n)
        return pf_fail(err, PF_ERR_USAGE, "empty path");
    /* A link to a directory is a directory: the entries written inside
     * are checked one by one. */
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return pf_fail(err, PF_ERR_USAGE, "%s is %s, not a directory",
                           path, kind_of(st.st_mode));
        if (access(path, W_OK | X_OK) != 0)
            return pf_fail(err, PF_ERR_USAGE, "directory %s is not writable: "
                           "%s", path, strerror(errno));
        return PF_OK;
    }
    if (errno != ENOENT)
        return pf_fail(err, PF_ERR_USAGE, "%s: %s", path, strerror(errno));
    if (lstat(path, &st) == 0)
        return pf_fail(err, PF_ERR_USAGE, "%s is a symbolic link to nothing, "
                       "not a directory", path);
    /* Missing: created at the end, in a parent that must exist. */
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n >= sizeof(parent))
        return pf_fail(err, PF_ERR_USAGE, "%s: path too long", path);
    snprintf(parent, sizeof(parent), "%.*s", (int)n, path);
    return pf_check_writable_path(parent, err);
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
