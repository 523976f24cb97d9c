/* collective: connect the ranks, pick an engine, run the sweep (then the
 * pairwise test: on every run of 3 or more nodes, and whenever the ring
 * missed its floor or carried wrong data), and record in
 * run->coll what happened. Fabric failures (a peer that never came, a
 * link that hangs, wrong data) are findings for the verdict, not errors of
 * this function: only bad input is returned.
 *
 * Engine contract: open releases what it allocated when it fails; close is
 * called only after a successful open. */
#include "collective.h"
#include "inside.h"
#include "nics.h"
#include "plan.h"
#include "straggler.h"
#include "sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../config/run_clock.h"
#include "../discover/discover.h"
#include "../judge/judge.h"
#include "../probe/gpu_health.h"
#include "../transport/bootstrap.h"
#include "../util/clock.h"
#include "../util/log.h"

#define REPORT_MARGIN_MS 2000

static bool is_usage(pf_err rc)
{
    return pf_err_class(rc) == PF_CLASS_USAGE;
}

/* nccl where GPUs and NCCL are there and the instance type allows it
 * (trn: Neuron, no NCCL); host otherwise; --engine forces either. */
static pf_err choose_engine(const struct pf_run *run,
                            const struct pf_engine_ops **ops, char *err)
{
    switch (run->cfg.engine) {
    case PF_ENGINE_NCCL:
        *ops = &pf_engine_nccl;
        return PF_OK;
    case PF_ENGINE_HOST:
        *ops = &pf_engine_host;
        return PF_OK;
    case PF_ENGINE_AUTO: {
        bool gpus = run->node.gpu_count > 0 && run->node.nccl_loaded;
        bool allowed = !(run->instance && run->instance->no_nccl);
        *ops = gpus && allowed ? &pf_engine_nccl : &pf_engine_host;
        return PF_OK;
    }
    }
    return pf_fail(err, PF_ERR_USAGE, "engine '%s': expected auto, nccl or "
                   "host", pf_engine_name(run->cfg.engine));
}

/* Record a failure. The first one a rank detects is the one its report
 * carries: the rendezvous or an engine may have recorded it already. */
static void record(struct pf_coll *c, pf_err rc, const char *msg)
{
    struct pf_fault *f = &c->fault;

    if (f->reason == PF_R_None) {
        pf_fault_set(f, rc, pf_reason_for_err(rc, PF_STAGE_COLLECTIVE), msg);
    } else if (f->err == PF_OK) {
        f->err = rc;
        snprintf(f->msg, sizeof(f->msg), "%s", msg);
    }
    pf_error("collective: %s: %s", pf_reason_name(f->reason), f->msg);
}

static pf_err open_boot(struct pf_run *run, struct pf_boot **boot, char *err)
{
    struct pf_boot_args a = {
        .peers = &run->peers,
        .roster = &run->coll.roster,
        .secret_file = run->cfg.secret_file,
        .bind_addr = run->cfg.bind_addr,
        .port = run->cfg.port,
        .timeout_s = run->cfg.timeout_s,
        .deadline = pf_run_deadline(run),
        .hostname = run->node.hostname,
        .instance_type = run->node.instance_type,
        .efa_count = run->node.efa_count,
        .gpu_count = run->node.gpu_count,
        .progress = &run->progress,
        .fault = &run->coll.fault,
        .gone = run->peer_gone,
        .gone_ctx = run,
    };
    return pf_boot_open(&a, boot, err);
}

void pf_engine_args_for(struct pf_run *run, struct pf_boot *boot,
                        uint64_t max_count, struct pf_engine_args *a)
{
    *a = (struct pf_engine_args){
        .boot = boot,
        .max_count = max_count,
        .provider = run->cfg.fabric_provider,
        .fabric_addrs = run->cfg.fabric_addrs,
        .fabric_lanes = run->cfg.fabric_lanes,
        .libfabric_path = run->cfg.libfabric_path,
        .bind_addr = run->cfg.bind_addr,
        .roster = &run->coll.roster,
        .progress = &run->progress,
        .corrupt_rank = run->cfg.debug_corrupt_rank,
        .slow_rank = run->cfg.debug_slow_rank,
        .slow_ms = run->cfg.debug_slow_ms,
    };
}

pf_err pf_collective(struct pf_run *run, char *err)
{
    struct pf_coll *c = &run->coll;
    const struct pf_engine_ops *ops = NULL;
    struct pf_engine engine = { 0 };
    struct pf_engine_args args;
    struct pf_boot *boot = NULL;
    char msg[PF_ERRLEN] = "";
    double t0 = pf_now_s();
    int64_t deadline, timeout_ms;
    pf_err rc;

    c->slow_rank = -1;
    pf_coll_free(c);
    memset(&c->strag, 0, sizeof(c->strag));
    memset(&c->nics, 0, sizeof(c->nics));
    memset(&c->inside, 0, sizeof(c->inside));
    memset(&c->plan, 0, sizeof(c->plan));
    memset(&c->judgement, 0, sizeof(c->judgement));
    c->nranks = run->peers.world;
    if ((rc = pf_roster_from_peers(&c->roster, &run->peers, err)) != PF_OK)
        return rc;
    c->nnodes = pf_roster_count_nodes(&c->roster);
    if ((rc = choose_engine(run, &ops, err)) != PF_OK)
        return rc;
    snprintf(c->engine, sizeof(c->engine), "%s", ops->name);
    c->engine_kind = ops == &pf_engine_nccl ? PF_ENGINE_NCCL : PF_ENGINE_HOST;
    /* Sweep up to the floor's size unless -e says otherwise, so a
     * catalogued type is judged where its floor holds (the host engine
     * will stripe over every EFA device). */
    pf_judge_plan(run);
    /* Bad sizes are the user's to fix before any peer is waited for. */
    if ((rc = pf_sweep_plan(&run->cfg, &c->judgement.planned, &c->sweep,
                            err)) != PF_OK)
        return rc;
    /* cfg.timeout_s bounds the whole run and the clock started before
     * probe and discovery: keep a margin so a stuck fabric is reported as
     * PeerTimeout before a launcher or controller kills the rank. */
    timeout_ms = pf_ms_left(pf_run_deadline(run));
    deadline = pf_deadline_in(timeout_ms > 2 * REPORT_MARGIN_MS
                                  ? timeout_ms - REPORT_MARGIN_MS
                                  : timeout_ms / 2);

    rc = open_boot(run, &boot, msg);
    if (rc == PF_OK) {
        /* The rendezvous named every rank's host (and, for non-leaders
         * under Kubernetes, peers discovery did not name): count again. */
        c->nnodes = pf_roster_count_nodes(&c->roster);
        engine.ops = ops;
        pf_info("collective: %s engine, %d ranks on %d node(s)", ops->name,
                boot->world, c->nnodes);
        pf_engine_args_for(run, boot, c->sweep.max_bytes / sizeof(float),
                           &args);
        rc = ops->open(&engine, &args, deadline, msg);
        c->fabric = engine.facts;
        if (rc == PF_OK) {
            struct pf_nic_watch watch;
            struct pf_rail_use rails0[PF_MAX_EFA], rails1[PF_MAX_EFA];
            int nrails = pf_rails_read(&engine, rails0);

            c->nranks = engine.nranks;
            /* The provider is known: what the sweep's stop rule holds
             * the ring to. */
            pf_judge_stop(run);
            /* The group has formed: split what is left between the sweep
             * and the localisation after it. */
            pf_plan_make(&c->plan, pf_now_ms(),
                         pf_run_deadline(run) -
                             (int64_t)run->cfg.timeout_s * 1000,
                         run->cfg.timeout_s, deadline,
                         (double)(pf_run_deadline(run) - deadline) / 1000.0);
            /* Read even when the sweep fails: errors on a NIC may be why. */
            pf_nics_begin(run, &watch);
            pf_gpu_health_begin(run);
            rc = pf_sweep(run, &engine, boot, deadline, msg);
            /* right after the sweep: the GPUs' clocks and PCIe links are
             * still as the load left them */
            pf_gpu_health_end(run);
            pf_nics_end(run, &watch, "sweep", -1);
            if (nrails > 0 && pf_rails_read(&engine, rails1) == nrails)
                pf_rails_sweep(&c->nics, run->cfg.nic_slow_ratio, rails0,
                               rails1, nrails);
            /* The rows, the NICs striped over and the provider are known:
             * the judgement, once; the re-tests below, the verdict and
             * publishing read it. */
            pf_judge(run);
            if (rc == PF_OK)
                rc = pf_straggler_retest(run, &engine, boot, deadline, msg);
            if (rc == PF_OK)
                rc = pf_inside(run, &engine, boot, deadline, msg);
            ops->close(&engine);
            c->fabric = engine.facts;
        }
        if (rc != PF_OK && !is_usage(rc))
            pf_boot_abort(boot, msg);
    }
    c->wall_s = pf_now_s() - t0;
    pf_nics_spread(run);
    /* No sweep ran (no peers, the engine did not open): the floor that
     * would have applied, with the engine's facts as far as it got. */
    if (!c->judgement.done)
        pf_judge(run);
    if (is_usage(rc)) {
        pf_boot_close(boot);
        return pf_fail(err, rc, "%s", msg);
    }
    if (rc != PF_OK)
        record(c, rc, msg);
    else
        c->ran = true;
    pf_boot_close(boot);
    return PF_OK;
}

void pf_coll_free(struct pf_coll *c)
{
    free(c->rank_seconds);
    c->rank_seconds = NULL;
    c->nrank_seconds = 0;
    free(c->strag.links);
    c->strag.links = NULL;
    c->strag.nlinks = 0;
    free(c->strag.culprits);
    c->strag.culprits = NULL;
    free(c->strag.culprit_bad);
    c->strag.culprit_bad = NULL;
    c->strag.nculprits = 0;
    free(c->inside.ids);
    free(c->inside.links);
    free(c->inside.culprits);
    memset(&c->inside, 0, sizeof(c->inside));
    pf_roster_free(&c->roster);
}
