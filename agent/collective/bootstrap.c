/* pf_boot_open: the rendezvous for local, static and k8s bootstraps, MPI
 * under mpirun. Turns run->peers, run->cfg and run->node into a
 * rendezvous configuration. */
#include "bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "rendezvous.h"

#define SECRET_MAX (64 * 1024)

/* Rank 0 gives up joining a little before the others do, so its ABORT
 * naming the missing ranks reaches them before their own deadline and
 * everyone still has time to report within it. */
static int64_t root_margin_ms(int timeout_s)
{
    int64_t m = (int64_t)timeout_s * 200;     /* a fifth of the timeout */
    return m > 3000 ? 3000 : m;
}

static void warn_mixed_types(const struct pf_rdv_facts *t, int world)
{
    for (int i = 1; i < world; i++) {
        if (strcmp(t[i].instance_type, t[0].instance_type)) {
            pf_warn("ranks run on different instance types: rank 0 on %s, "
                    "rank %d on %s", t[0].instance_type[0] ? t[0].instance_type
                                                           : "unknown",
                    i, t[i].instance_type[0] ? t[i].instance_type : "unknown");
            return;
        }
    }
}

pf_err pf_boot_open(struct pf_run *run, struct pf_boot **out, char *err)
{
    const struct pf_peers *p = &run->peers;
    struct pf_rdv_cfg rc_cfg;
    struct pf_rdv_facts *table;
    char *secret = NULL;
    size_t secret_len = 0;
    int64_t deadline;
    pf_err rc;

    *out = NULL;
    if (!strcmp(p->bootstrap, "mpi"))
        return pf_boot_open_mpi(run, out, err);
    if (p->world < 1 || !p->list || p->rank < 0 || p->rank >= p->world)
        return pf_fail(err, PF_ERR_USAGE, "no peer table: rank %d of %d "
                       "(discovery has not run)", p->rank, p->world);
    if (run->cfg.secret_file[0]) {
        rc = pf_read_file(run->cfg.secret_file, SECRET_MAX, &secret,
                          &secret_len, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "--secret-file");
            return rc == PF_ERR_NOMEM ? rc : PF_ERR_USAGE;
        }
        if (secret_len == 0) {
            free(secret);
            return pf_fail(err, PF_ERR_USAGE, "--secret-file %s is empty",
                           run->cfg.secret_file);
        }
    }

    memset(&rc_cfg, 0, sizeof(rc_cfg));
    rc_cfg.rank = p->rank;
    rc_cfg.world = p->world;
    snprintf(rc_cfg.root_host, sizeof(rc_cfg.root_host), "%s", p->list[0].host);
    rc_cfg.root_port = p->list[0].port > 0 ? p->list[0].port : run->cfg.port;
    /* local ranks never leave the machine: keep the port off the network. */
    snprintf(rc_cfg.bind_addr, sizeof(rc_cfg.bind_addr), "%s",
             run->cfg.bind_addr[0] ? run->cfg.bind_addr
             : !strcmp(p->bootstrap, "local") ? "127.0.0.1" : "");
    snprintf(rc_cfg.run_id, sizeof(rc_cfg.run_id), "%s", p->run_id);
    rc_cfg.secret = (const uint8_t *)secret;
    rc_cfg.secret_len = secret_len;
    snprintf(rc_cfg.self.hostname, sizeof(rc_cfg.self.hostname), "%s",
             run->node.hostname);
    snprintf(rc_cfg.self.instance_type, sizeof(rc_cfg.self.instance_type), "%s",
             run->node.instance_type);
    rc_cfg.self.efa_count = run->node.efa_count;
    rc_cfg.self.gpu_count = run->node.gpu_count;
    rc_cfg.expected = p->list;
    rc_cfg.fault = &run->coll.fault;
    rc_cfg.progress = &run->progress;
    deadline = pf_run_deadline(run);
    rc_cfg.deadline = p->rank == 0 ? deadline - root_margin_ms(run->cfg.timeout_s)
                                   : deadline;

    table = calloc((size_t)p->world, sizeof(*table));
    if (!table) {
        free(secret);
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the peer table");
    }
    pf_progress_begin(&run->progress, "waiting for peers", pf_now_ms());
    rc = pf_rdv_open(&rc_cfg, out, table, err);
    pf_progress_end(&run->progress);
    if (secret) {
        memset(secret, 0, secret_len);
        free(secret);
    }
    if (rc == PF_OK) {
        for (int i = 0; i < p->world; i++)
            if (!p->list[i].node[0])
                snprintf(p->list[i].node, sizeof(p->list[i].node), "%s",
                         table[i].hostname);
        warn_mixed_types(table, p->world);
    }
    free(table);
    return rc;
}
