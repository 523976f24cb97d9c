/* NCCL transport checks, condition EFAFabricReady, from what NCCL's own
 * INFO log said (collective/nccl/nccl_log.h reads it; the engine's facts
 * carry it into run->coll):
 *
 *   nccl_transport  SocketFallback    a channel went via NET/Socket: NCCL
 *                                     moved rank-to-rank data over TCP.
 *                                     NCCL uses NET only for peers it does
 *                                     not reach by P2P or SHM, so on one
 *                                     host two processes with those
 *                                     disabled count too (documented in
 *                                     nccl_log.h).
 *   nccl_net_plugin NetPluginMissing  EFA is expected here (catalog entry or
 *                                     EFA devices seen) and no external net
 *                                     plugin (aws-ofi-nccl) loaded.
 *   nccl_gdr        GDRDisabled       NET channels over a real network
 *                                     without GDRDMA, where the catalog
 *                                     entry requires GPUDirect RDMA.
 *
 * Only for the nccl engine; each check is skipped when the log did not
 * show what it needs (a user's NCCL_DEBUG_SUBSYS without INIT, a failure
 * before NCCL logged). */
#include "verdict.h"

#include <stdio.h>
#include <string.h>

#define COND PF_COND_FABRIC

/* A NET transport other than Socket in the comma-separated list. */
static bool has_real_net(const char *transports)
{
    for (const char *p = transports; (p = strstr(p, "NET/")) != NULL; p += 4) {
        bool starts = p == transports || p[-1] == ',';
        if (starts && strncmp(p, "NET/Socket", 10) != 0)
            return true;
    }
    return false;
}

static bool efa_expected(const struct pf_run *run, char *why, size_t len)
{
    const struct pf_instance *it = run->instance;

    if (it && it->efa_count > 0 && !it->no_nccl) {
        snprintf(why, len, "%s has %d EFA interfaces", it->name,
                 it->efa_count);
        return true;
    }
    if (run->node.efa_count > 0) {
        snprintf(why, len, "%d EFA devices on this node",
                 run->node.efa_count);
        return true;
    }
    snprintf(why, len, "no EFA expected on %s",
             run->node.instance_type[0] ? run->node.instance_type
                                        : "this node");
    return false;
}

static void socket_check(struct pf_run *run, bool known)
{
    const struct pf_fabric_facts *c = &run->coll.fabric;

    if (!c->transport[0]) {
        pf_verdict_add(&run->verdict, "nccl_transport", COND, PF_SKIP, PF_R_None, "",
                       "NCCL's log showed no channel connections%s",
                       known ? "" : " (log unavailable)");
        return;
    }
    if (c->inter_node_socket) {
        pf_verdict_add(&run->verdict, "nccl_transport", COND, PF_FAIL,
                       PF_R_SocketFallback, "",
                       "NCCL moved rank-to-rank data over TCP sockets "
                       "(transports %s, network %s): a fraction of EFA's "
                       "bandwidth",
                       c->transport,
                       c->nccl_network[0] ? c->nccl_network : "?");
        return;
    }
    pf_verdict_add(&run->verdict, "nccl_transport", COND, PF_PASS, PF_R_None, "",
                   "transports %s, network %s", c->transport,
                   c->nccl_network[0] ? c->nccl_network : "?");
}

static void plugin_check(struct pf_run *run, bool known)
{
    const struct pf_fabric_facts *c = &run->coll.fabric;
    char why[160];

    if (!efa_expected(run, why, sizeof(why))) {
        pf_verdict_add(&run->verdict, "nccl_net_plugin", COND, PF_SKIP, PF_R_None,
                       "", "%s; net plugin %s", why,
                       c->net_plugin_loaded ? "loaded" : "not loaded");
        return;
    }
    if (!known) {
        pf_verdict_add(&run->verdict, "nccl_net_plugin", COND, PF_SKIP, PF_R_None,
                       "", "%s, but NCCL's log was unavailable", why);
        return;
    }
    if (!c->net_plugin_loaded) {
        pf_verdict_add(&run->verdict, "nccl_net_plugin", COND, PF_FAIL,
                       PF_R_NetPluginMissing, "",
                       "%s but NCCL loaded no external net plugin "
                       "(network %s): multi-node traffic falls back to "
                       "sockets", why,
                       c->nccl_network[0] ? c->nccl_network : "?");
        return;
    }
    pf_verdict_add(&run->verdict, "nccl_net_plugin", COND, PF_PASS, PF_R_None, "",
                   "net plugin loaded, network %s",
                   c->nccl_network[0] ? c->nccl_network : "?");
}

static void gdr_check(struct pf_run *run)
{
    const struct pf_fabric_facts *c = &run->coll.fabric;
    const struct pf_instance *it = run->instance;
    bool required = it && it->gdr_required;

    if (!has_real_net(c->transport)) {
        pf_verdict_add(&run->verdict, "nccl_gdr", COND, PF_SKIP, PF_R_None, "",
                       "no channel over a network plugin (transports %s)",
                       c->transport[0] ? c->transport : "none seen");
        return;
    }
    if (c->net_gdr) {
        pf_verdict_add(&run->verdict, "nccl_gdr", COND, PF_PASS, PF_R_None, "",
                       "GPUDirect RDMA in use (%s)", c->transport);
        return;
    }
    if (required) {
        pf_verdict_add(&run->verdict, "nccl_gdr", COND, PF_FAIL,
                       PF_R_GDRDisabled, "",
                       "NCCL's network channels run without GPUDirect RDMA "
                       "(%s) but %s requires it", c->transport, it->name);
        return;
    }
    pf_verdict_add(&run->verdict, "nccl_gdr", COND, PF_PASS, PF_R_None, "",
                   "network channels without GPUDirect RDMA (%s), not "
                   "required on %s", c->transport,
                   it ? it->name : "an unknown instance type");
}

void pf_verdict_transport(struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;

    if (c->engine_kind != PF_ENGINE_NCCL)
        return;
    /* an empty network means NCCL's log never said anything useful */
    bool known = c->fabric.nccl_network[0] || c->fabric.transport[0];
    socket_check(run, known);
    plugin_check(run, known);
    gdr_check(run);
}
