/* Every counter file of every EFA device (monitor.h).
 *
 * Unlike probe/hw_counters.c, which knows the counters the gate judges by
 * name, this reads whatever files the driver exposes: a newer driver's
 * counters are exported without a release of the agent, and an older one
 * simply has fewer. */
#include "monitor.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/clock.h"
#include "../util/fsutil.h"

static int not_dot(const struct dirent *d) { return d->d_name[0] != '.'; }

static bool read_u64(const char *path, uint64_t *out)
{
    char buf[32], err[PF_ERRLEN], *end;
    unsigned long long v;

    if (pf_read_line(path, buf, sizeof(buf), err) != PF_OK || !buf[0] ||
        buf[0] == '-')
        return false;
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* Append every numeric file of dir as port's counters. */
static pf_err read_dir(const char *dir, int port, struct pf_mon_nic *nic,
                       int *cap, char *err)
{
    char path[PF_PATH_MAX];
    struct dirent **list;
    pf_err rc = PF_OK;
    int n = scandir(dir, &list, not_dot, alphasort);

    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        uint64_t v;

        if (rc == PF_OK && strlen(name) < sizeof(nic->c[0].name) &&
            pf_mon_metric_name_ok(name)) {
            snprintf(path, sizeof(path), "%s/%s", dir, name);
            if (read_u64(path, &v)) {
                if (nic->n == *cap) {
                    int ncap = *cap ? 2 * *cap : 32;
                    void *p = realloc(nic->c, (size_t)ncap * sizeof(*nic->c));
                    if (!p) {
                        rc = pf_fail(err, PF_ERR_SYS, "out of memory reading "
                                     "%s", dir);
                    } else {
                        nic->c = p;
                        *cap = ncap;
                    }
                }
                if (rc == PF_OK) {
                    struct pf_mon_counter *c = &nic->c[nic->n++];
                    snprintf(c->name, sizeof(c->name), "%s", name);
                    c->port = port;
                    c->v = v;
                }
            }
        }
        free(list[i]);
    }
    if (n >= 0)
        free(list);
    return rc;
}

static pf_err read_nic(const char *root, const char *dev,
                       struct pf_mon_nic *nic, char *err)
{
    char rel[PF_PATH_MAX], base[PF_PATH_MAX], dir[PF_PATH_MAX];
    struct dirent **list;
    int cap = 0, n;
    pf_err rc = PF_OK;

    snprintf(nic->name, sizeof(nic->name), "%s", dev);
    snprintf(nic->port_state, sizeof(nic->port_state), "no port");
    snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s", dev);
    if (pf_path_join(base, sizeof(base), root, rel, err) != PF_OK)
        return PF_ERR_USAGE;
    snprintf(dir, sizeof(dir), "%s/hw_counters", base);
    rc = read_dir(dir, 0, nic, &cap, err);
    snprintf(dir, sizeof(dir), "%s/ports", base);
    n = scandir(dir, &list, not_dot, alphasort);
    nic->port_active = n > 0;
    for (int i = 0; i < n; i++) {
        char state[32], serr[PF_ERRLEN], *end;
        long port = strtol(list[i]->d_name, &end, 10);

        if (rc == PF_OK && !*end && port > 0 && port < 1 << 16) {
            nic->nports++;
            snprintf(rel, sizeof(rel), "%s/%s/state", dir, list[i]->d_name);
            if (pf_read_line(rel, state, sizeof(state), serr) != PF_OK)
                snprintf(state, sizeof(state), "unreadable");
            if (!strstr(state, "ACTIVE") && nic->port_active) {
                nic->port_active = false;
                snprintf(nic->port_state, sizeof(nic->port_state), "%s",
                         state);
            } else if (nic->port_active) {
                snprintf(nic->port_state, sizeof(nic->port_state), "%s",
                         state);
            }
            snprintf(rel, sizeof(rel), "%s/%s/hw_counters", dir,
                     list[i]->d_name);
            rc = read_dir(rel, (int)port, nic, &cap, err);
        }
        free(list[i]);
    }
    if (n >= 0)
        free(list);
    return rc;
}

pf_err pf_mon_read(const char *root, const struct pf_node *node,
                   int expected, struct pf_mon_snap *out, char *err)
{
    int n = node->efa_count < PF_MAX_EFA ? node->efa_count : PF_MAX_EFA;

    memset(out, 0, sizeof(*out));
    out->t = pf_now_s();
    out->expected = expected;
    out->efa_count = node->efa_count;
    out->module_loaded = node->efa_module_loaded;
    out->uverbs_present = node->uverbs_present;
    if (n <= 0)
        return PF_OK;
    out->nics = calloc((size_t)n, sizeof(*out->nics));
    if (!out->nics)
        return pf_fail(err, PF_ERR_SYS, "out of memory (%d NICs)", n);
    out->n = n;
    for (int i = 0; i < n; i++) {
        pf_err rc = read_nic(root ? root : "", node->efa[i].name,
                             &out->nics[i], err);
        if (rc != PF_OK) {
            pf_mon_snap_free(out);
            return rc;
        }
    }
    return PF_OK;
}

void pf_mon_snap_free(struct pf_mon_snap *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->nics[i].c);
    free(s->nics);
    s->nics = NULL;
    s->n = 0;
}

const struct pf_mon_counter *pf_mon_counter_find(const struct pf_mon_nic *nic,
                                                 const char *name, int port)
{
    for (int i = 0; i < nic->n; i++)
        if (nic->c[i].port == port && !strcmp(nic->c[i].name, name))
            return &nic->c[i];
    return NULL;
}

const struct pf_mon_nic *pf_mon_nic_find(const struct pf_mon_snap *s,
                                         const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->nics[i].name, name))
            return &s->nics[i];
    return NULL;
}

bool pf_mon_metric_name_ok(const char *name)
{
    if (!*name)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}
