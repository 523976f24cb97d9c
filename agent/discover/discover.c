/* discover: pick the bootstrap and fill run->peers (world, own rank, every
 * rank's address, run id, the run's deadline). */
#include "discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/sanitize.h"
#include "mpi.h"

extern char **environ;

pf_err pf_discover(struct pf_run *run, char *err)
{
    const char *b = run->cfg.bootstrap;
    int64_t deadline = pf_run_deadline(run);
    pf_err rc;

    pf_peers_free(&run->peers);
    memset(&run->peers, 0, sizeof(run->peers));
    /* The config stage resolved `auto`; a run built without it (tests, the
     * launcher's children) takes the same rule. */
    b = pf_config_bootstrap(&run->cfg, environ);
    run->peers.deadline_ms = deadline;
    snprintf(run->peers.bootstrap, sizeof(run->peers.bootstrap), "%s", b);

    if (!strcmp(b, "local"))
        rc = pf_discover_local(run, err);
    else if (!strcmp(b, "static"))
        rc = pf_discover_static(run, err);
    else if (!strcmp(b, "mpi"))
        rc = pf_discover_mpi(run, err);
    else if (!strcmp(b, "k8s"))
        rc = pf_discover_k8s(run, err);
    else
        return pf_fail(err, PF_ERR_USAGE, "--bootstrap '%s': expected auto, "
                       "local, static, mpi or k8s", b);
    if (rc != PF_OK) {
        pf_peers_free(&run->peers);
        return rc;
    }
    /* k8s fills the table itself; keep what every bootstrap must agree on. */
    snprintf(run->peers.bootstrap, sizeof(run->peers.bootstrap), "%s", b);
    run->peers.deadline_ms = deadline;
    if (run->peers.world < 1 || !run->peers.list || run->peers.rank < 0 ||
        run->peers.rank >= run->peers.world)
        return pf_fail(err, PF_ERR_USAGE, "bootstrap %s gave rank %d of %d "
                       "ranks (want a world of at least 1 and a rank inside "
                       "it)", b, run->peers.rank, run->peers.world);
    /* Names other ranks (MPI) or the API server sent: from here on they
     * reach logs, messages and the report. */
    for (int i = 0; i < run->peers.world; i++) {
        struct pf_peer *pe = &run->peers.list[i];
        pf_sanitize_inplace(pe->host, sizeof(pe->host));
        pf_sanitize_inplace(pe->pod, sizeof(pe->pod));
        pf_sanitize_inplace(pe->node, sizeof(pe->node));
    }
    pf_sanitize_inplace(run->peers.run_id, sizeof(run->peers.run_id));
    pf_info("discover: %s bootstrap, rank %d of %d, run %s", b,
            run->peers.rank, run->peers.world, run->peers.run_id);
    return PF_OK;
}

void pf_peers_free(struct pf_peers *p)
{
    free(p->list);
    p->list = NULL;
}

/* Kubernetes names Nodes; elsewhere a hostname alone can repeat (network
 * namespaces, pods on one host share it), so the address must match too. */
static void node_key(const struct pf_peers *p, int r, char *buf, size_t len)
{
    const struct pf_peer *x = &p->list[r];

    if (!strcmp(p->bootstrap, "k8s") && x->node[0])
        snprintf(buf, len, "%s", x->node);
    else
        snprintf(buf, len, "%s@%s", x->node, x->host);
}

bool pf_peers_same_node(const struct pf_peers *p, int a, int b)
{
    char ka[2 * PF_NAME_MAX + 2], kb[2 * PF_NAME_MAX + 2];

    if (a == b)
        return true;
    if (!p->list || a < 0 || b < 0 || a >= p->world || b >= p->world)
        return false;
    node_key(p, a, ka, sizeof(ka));
    node_key(p, b, kb, sizeof(kb));
    return !strcmp(ka, kb);
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int pf_peers_count_nodes(const struct pf_peers *p)
{
    size_t klen = 2 * PF_NAME_MAX + 2;
    char **keys, *store;
    int nodes = 1;

    if (!p->list || p->world <= 1)
        return 1;
    keys = malloc((size_t)p->world * sizeof(*keys));
    store = malloc((size_t)p->world * klen);
    if (!keys || !store) {
        free(keys);
        free(store);
        return 1;
    }
    for (int i = 0; i < p->world; i++) {
        keys[i] = store + (size_t)i * klen;
        node_key(p, i, keys[i], klen);
    }
    /* sorted, so thousands of peers cost n log n */
    qsort(keys, (size_t)p->world, sizeof(*keys), by_key);
    for (int i = 1; i < p->world; i++)
        nodes += strcmp(keys[i - 1], keys[i]) != 0;
    free(keys);
    free(store);
    return nodes;
}
