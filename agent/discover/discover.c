/* discover: pick the bootstrap and fill run->peers (world, own rank, every
 * rank's address, run id, the run's deadline). */
#include "discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../config/run_clock.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/sanitize.h"
#include "mpi.h"

extern char **environ;

/* One discoverer per bootstrap; `auto` has none, the config resolves it. */
typedef pf_err discover_fn(struct pf_run *run, char *err);
static const struct {
    enum pf_bootstrap bootstrap;
    discover_fn *discover;
} discoverers[] = {
    { PF_BOOT_LOCAL, pf_discover_local },
    { PF_BOOT_STATIC, pf_discover_static },
    { PF_BOOT_MPI, pf_discover_mpi },
    { PF_BOOT_K8S, pf_discover_k8s },
};

static discover_fn *discoverer(enum pf_bootstrap b)
{
    for (size_t i = 0; i < sizeof(discoverers) / sizeof(discoverers[0]); i++)
        if (discoverers[i].bootstrap == b)
            return discoverers[i].discover;
    return NULL;
}

pf_err pf_discover(struct pf_run *run, char *err)
{
    int64_t deadline = pf_run_deadline(run);
    discover_fn *discover;
    enum pf_bootstrap b;
    pf_err rc;

    pf_peers_free(&run->peers);
    memset(&run->peers, 0, sizeof(run->peers));
    /* The config stage resolved `auto`; a run built without it (tests, the
     * launcher's children) takes the same rule. */
    b = pf_config_bootstrap(&run->cfg, environ);
    run->peers.deadline_ms = deadline;
    run->peers.bootstrap = b;

    if (!(discover = discoverer(b)))
        return pf_fail(err, PF_ERR_USAGE, "--bootstrap '%s': expected auto, "
                       "local, static, mpi or k8s", pf_bootstrap_name(b));
    if ((rc = discover(run, err)) != PF_OK) {
        pf_peers_free(&run->peers);
        return rc;
    }
    /* k8s fills the table itself; keep what every bootstrap must agree on. */
    run->peers.bootstrap = b;
    run->peers.deadline_ms = deadline;
    if (run->peers.world < 1 || !run->peers.list || run->peers.rank < 0 ||
        run->peers.rank >= run->peers.world)
        return pf_fail(err, PF_ERR_USAGE, "bootstrap %s gave rank %d of %d "
                       "ranks (want a world of at least 1 and a rank inside "
                       "it)", pf_bootstrap_name(b), run->peers.rank,
                       run->peers.world);
    /* Names other ranks (MPI) or the API server sent: from here on they
     * reach logs, messages and the report. */
    for (int i = 0; i < run->peers.world; i++) {
        struct pf_peer *pe = &run->peers.list[i];
        pf_sanitize_inplace(pe->host, sizeof(pe->host));
        pf_sanitize_inplace(pe->pod, sizeof(pe->pod));
        pf_sanitize_inplace(pe->node, sizeof(pe->node));
    }
    pf_sanitize_inplace(run->peers.run_id, sizeof(run->peers.run_id));
    pf_info("discover: %s bootstrap, rank %d of %d, run %s",
            pf_bootstrap_name(b),
            run->peers.rank, run->peers.world, run->peers.run_id);
    return PF_OK;
}

void pf_peers_free(struct pf_peers *p)
{
    free(p->list);
    p->list = NULL;
}

pf_err pf_roster_from_peers(struct pf_roster *r, const struct pf_peers *p,
                            char *err)
{
    pf_roster_free(r);
    r->bootstrap = p->bootstrap;
    r->world = 0;
    if (!p->list || p->world < 1)
        return PF_OK;
    r->list = calloc((size_t)p->world, sizeof(*r->list));
    if (!r->list)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for a roster of %d "
                       "ranks", p->world);
    memcpy(r->list, p->list, (size_t)p->world * sizeof(*r->list));
    r->world = p->world;
    return PF_OK;
}

void pf_roster_free(struct pf_roster *r)
{
    free(r->list);
    r->list = NULL;
    r->world = 0;
}

/* Kubernetes names Nodes; elsewhere a hostname alone can repeat (network
 * namespaces, pods on one host share it), so the address must match too. */
static void node_key(const struct pf_roster *r, int i, char *buf, size_t len)
{
    const struct pf_peer *x = &r->list[i];

    if (r->bootstrap == PF_BOOT_K8S && x->node[0])
        snprintf(buf, len, "%s", x->node);
    else
        snprintf(buf, len, "%s@%s", x->node, x->host);
}

bool pf_roster_same_node(const struct pf_roster *r, int a, int b)
{
    char ka[2 * PF_NAME_MAX + 2], kb[2 * PF_NAME_MAX + 2];

    if (a == b)
        return true;
    if (!r->list || a < 0 || b < 0 || a >= r->world || b >= r->world)
        return false;
    node_key(r, a, ka, sizeof(ka));
    node_key(r, b, kb, sizeof(kb));
    return !strcmp(ka, kb);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int pf_roster_count_nodes(const struct pf_roster *r)
{
    size_t klen = 2 * PF_NAME_MAX + 2;
    char **keys, *store;
    int nodes = 1;

    if (!r->list || r->world <= 1)
        return 1;
    keys = malloc((size_t)r->world * sizeof(*keys));
    store = malloc((size_t)r->world * klen);
    if (!keys || !store) {
        free(keys);
        free(store);
        return 1;
    }
    for (int i = 0; i < r->world; i++) {
        keys[i] = store + (size_t)i * klen;
        node_key(r, i, keys[i], klen);
    }
    /* sorted, so thousands of peers cost n log n */
    qsort(keys, (size_t)r->world, sizeof(*keys), by_key);
    for (int i = 1; i < r->world; i++)
        nodes += strcmp(keys[i - 1], keys[i]) != 0;
    free(keys);
    free(store);
    return nodes;
}
