/* Locked-memory limit (EFA registers memory) and huge pages (libfabric's
 * EFA provider uses them for its buffers by default). meminfo is read as
 * <sysfs_root>/proc/meminfo so fixture trees can carry their own. */
#include "probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../util/fsutil.h"

#define MEMINFO_MAX (64 * 1024)

static uint64_t limit_bytes(rlim_t v)
{
    return v == RLIM_INFINITY ? UINT64_MAX : (uint64_t)v;
}

/* Value of "Key:   123 ..." in meminfo text, -1 when absent. */
static long meminfo_value(const char *text, const char *key)
{
    size_t klen = strlen(key);
    const char *p = text;

    while (p && *p) {
        if (!strncmp(p, key, klen) && p[klen] == ':')
            return strtol(p + klen + 1, NULL, 10);
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

void pf_probe_limits(const struct pf_config *cfg, struct pf_node *node)
{
    char path[PF_PATH_MAX], err[PF_ERRLEN];
    struct rlimit rl;
    char *text = NULL;

    node->memlock_soft = node->memlock_hard = 0;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        node->memlock_soft = limit_bytes(rl.rlim_cur);
        node->memlock_hard = limit_bytes(rl.rlim_max);
    }

    node->hugepages_total = node->hugepages_free = node->hugepage_kb = -1;
    if (pf_path_join(path, sizeof(path), cfg->sysfs_root, "/proc/meminfo",
                     err) != PF_OK ||
        pf_read_file(path, MEMINFO_MAX, &text, NULL, err) != PF_OK)
        return;
    node->hugepages_total = meminfo_value(text, "HugePages_Total");
    node->hugepages_free = meminfo_value(text, "HugePages_Free");
    node->hugepage_kb = meminfo_value(text, "Hugepagesize");
    free(text);
}
