/* The history directory's file names (histdir.h). File names are UTC
 * times to the microsecond, so a plain sort is a sort by time, and only
 * names of that exact shape are read or removed: the directory may hold
 * other files. */
#include "histdir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUFFIX ".json"

void pf_history_name(const struct timespec *t, char out[PF_HISTORY_NAME])
{
    struct tm tm;
    char day[20];

    gmtime_r(&t->tv_sec, &tm);
    strftime(day, sizeof(day), "%Y%m%dT%H%M%S", &tm);
    snprintf(out, PF_HISTORY_NAME, "%s.%06ldZ" SUFFIX, day,
             (long)(t->tv_nsec / 1000));
}

bool pf_history_is_name(const char *name)
{
    /* 20260122T010203.123456Z.json */
    static const char shape[] = "DDDDDDDDTDDDDDD.DDDDDDZ" SUFFIX;

    if (strlen(name) != sizeof(shape) - 1)
        return false;
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'D' ? !isdigit((unsigned char)name[i])
                            : name[i] != shape[i])
            return false;
    }
    return true;
}

static int newest_first(const void *a, const void *b)
{
    return strcmp(*(char *const *)b, *(char *const *)a);
}

void pf_history_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Our file names in dir, newest first. */
pf_err pf_history_list(const char *dir, char ***out, size_t *n, char *err)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t cap = 0;

    *out = NULL;
    *n = 0;
    if (!d)
        return pf_fail(err, errno == ENOENT || errno == ENOTDIR
                                ? PF_ERR_USAGE : PF_ERR_IO,
                       "history directory %s: %s", dir, strerror(errno));
    while ((e = readdir(d))) {
        if (!pf_history_is_name(e->d_name))
            continue;
        if (*n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            char **p = realloc(names, ncap * sizeof(*p));
            if (!p)
                goto oom;
            names = p;
            cap = ncap;
        }
        if (!(names[*n] = strdup(e->d_name)))
            goto oom;
        (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(names, *n, sizeof(*names), newest_first);
    *out = names;
    return PF_OK;
oom:
    closedir(d);
    pf_history_names_free(names, *n);
    *n = 0;
    return pf_fail(err, PF_ERR_NOMEM, "history directory %s: out of memory",
                   dir);
}
