/* Host engine set-up: provider, one rail (endpoint) per NIC, buffers,
 * address exchange and the first message round the ring on every rail. */
#include "host.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "../../util/clock.h"
#include "../../util/log.h"

struct rail_count {                   /* first exchange: what each rank has */
    int32_t nics, lanes;              /* rails = nics x lanes */
    int32_t addrlen;                  /* longest endpoint name */
};

static pf_err fi_failed(const struct host *h, char *err, const char *call,
                        int rc)
{
    return pf_fail(err, PF_ERR_ENGINE, "%s failed (provider %s): %s (%d)",
                   call, h->provider[0] ? h->provider : "?",
                   h->fi.strerror(rc < 0 ? -rc : rc), rc);
}

static bool is_efa(const char *prov)
{
    size_t n = strcspn(prov, ";");
    return (n == 3 && !strncmp(prov, "efa", 3)) ||
           (n == 10 && !strncmp(prov, "efa-direct", 10));
}

/* tcp (or sockets), reached through rxm: addresses, lanes and rxm's
 * settings apply. */
static bool is_socket(const char *prov)
{
    return !is_efa(prov) && strcmp(prov, "shm");
}

/* Socket-based providers must bind the address the peers reach us on (the
 * rendezvous address), not whatever interface comes first; efa and shm
 * choose their own. */
static const char *source_node(const struct host *h)
{
    const struct pf_roster *p = h->args.roster;

    if (h->args.bind_addr && h->args.bind_addr[0])
        return h->args.bind_addr;
    if (p && p->list && h->rank < p->world && p->list[h->rank].host[0])
        return p->list[h->rank].host;
    return NULL;
}

static struct fi_info *hints_for(struct host *h, const char *want)
{
    struct fi_info *hints = h->fi.dupinfo(NULL);

    if (!hints)
        return NULL;
    hints->caps = FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
                                  FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    /* A send completes when the peer has the data, not when a socket
     * took it (set_eager_limit says why). */
    if (is_socket(want))
        hints->tx_attr->op_flags = FI_TRANSMIT_COMPLETE;
    hints->fabric_attr->prov_name = strdup(want);
    return hints;
}

static pf_err getinfo_failed(struct host *h, int rc, const char *want,
                             const char *node, char *err)
{
    if (rc == -FI_ENODATA)
        return pf_fail(err, PF_ERR_UNSUPPORTED,
                       "libfabric %s has no provider '%s' with reliable "
                       "datagram endpoints%s%s (fi_getinfo: no data)",
                       h->fi.path, want, node ? " bound to " : "",
                       node ? node : "");
    return pf_fail(err, PF_ERR_ENGINE, "fi_getinfo(provider %s%s%s): %s (%d)",
                   want, node ? ", node " : "", node ? node : "",
                   h->fi.strerror(-rc), rc);
}

static pf_err add_rail(struct host *h, const struct fi_info *info,
                       const char *name, int nic, int lane, char *err)
{
    struct host_rail *r = &h->rails[h->nopened];

    memset(r, 0, sizeof(*r));
    r->h = h;
    r->index = h->nopened;
    r->nic = nic;
    r->lane = lane;
    r->wait_fd = -1;
    snprintf(r->name, sizeof(r->name), "%s", name);
    r->info = h->fi.dupinfo(info);
    if (!r->info)
        return pf_fail(err, PF_ERR_NOMEM, "fi_dupinfo: out of memory");
    h->nopened++;
    return PF_OK;
}

/* efa: one rail per EFA device (domain "rdmap16s27-rdm"), each listed
 * once (libfabric 2.x lists a device under efa and efa-direct). */
static pf_err efa_rails(struct host *h, struct fi_info *list, char *err)
{
    for (struct fi_info *i = list; i && h->nopened < PF_MAX_EFA; i = i->next) {
        const char *dom = i->domain_attr && i->domain_attr->name
                              ? i->domain_attr->name : "efa";
        char name[64];
        bool seen = false;
        size_t len = strcspn(dom, "-");

        snprintf(name, sizeof(name), "%.*s", (int)len, dom);
        for (int r = 0; r < h->nopened && !seen; r++)
            seen = !strcmp(h->rails[r].name, name);
        if (!seen && add_rail(h, i, name, h->nopened, 0, err) != PF_OK)
            return PF_ERR_NOMEM;
    }
    return PF_OK;
}

/* Endpoints per address of a socket provider: fabric_lanes, else the
 * cores this process may use shared among the ranks on this host and the
 * addresses, 1 to PF_HOST_MAX_LANES; then each rail thread has a core of
 * its own, and is pinned to it (h->pin): spinning threads that the
 * scheduler stacks two to a core made whole first sizes of a sweep run
 * ten times slower until it moved them (bench/results/host_allreduce.md). */
static int lanes_for(struct host *h, int naddrs)
{
    const struct pf_roster *p = h->args.roster;
    int cores = 1, here = 0, lanes;

    if (sched_getaffinity(0, sizeof(h->allowed), &h->allowed) == 0)
        cores = CPU_COUNT(&h->allowed);
    if (p && p->list && h->rank >= 0 && h->rank < p->world)
        for (int r = 0; r < p->world; r++)
            if (!strcmp(p->list[r].host, p->list[h->rank].host)) {
                here++;
                if (r < h->rank)
                    h->local_index++;
            }
    if (here < 1)
        here = 1;
    if (h->args.fabric_lanes > 0) {
        lanes = h->args.fabric_lanes;
    } else {
        lanes = cores / here / naddrs;
        if (lanes > PF_HOST_MAX_LANES)
            lanes = PF_HOST_MAX_LANES;
        h->pin = here * naddrs * lanes <= cores;
    }
    if (lanes * naddrs > PF_MAX_EFA)
        lanes = PF_MAX_EFA / naddrs;
    return lanes < 1 ? 1 : lanes;
}

/* The NICs to use: efa lists its devices, shm is one, a socket provider
 * binds lanes endpoints per --fabric-addrs address (else the bind
 * address). */
static pf_err get_rails(struct host *h, char *err)
{
    const char *want = h->args.provider && h->args.provider[0]
                           ? h->args.provider : "efa";
    const char *addrs = h->args.fabric_addrs ? h->args.fabric_addrs : "";
    bool sockets = is_socket(want);
    int naddrs = 1, lanes = 1;
    pf_err rc = PF_OK;

    for (const char *p = addrs; *p; p++)
        naddrs += *p == ',';
    if (naddrs > PF_MAX_EFA)
        naddrs = PF_MAX_EFA;
    if (sockets)
        lanes = lanes_for(h, naddrs);

    h->rails = calloc(PF_MAX_EFA, sizeof(*h->rails));
    if (!h->rails)
        return pf_fail(err, PF_ERR_NOMEM, "host engine: out of memory");
    for (const char *p = addrs; rc == PF_OK; ) {
        char node[PF_NAME_MAX] = "";
        const char *bind = NULL;
        struct fi_info *hints, *list = NULL;
        int frc;

        if (sockets && *p) {
            size_t len = strcspn(p, ",");
            snprintf(node, sizeof(node), "%.*s", (int)len, p);
            bind = node;
            p += len + (p[len] == ',');
        } else if (sockets) {
            bind = source_node(h);
        }
        if (!(hints = hints_for(h, want)))
            return pf_fail(err, PF_ERR_NOMEM, "fi_dupinfo: out of memory");
        frc = h->fi.getinfo(pf_fi_api_version(&h->fi), bind, NULL,
                            bind ? FI_SOURCE : 0, hints, &list);
        h->fi.freeinfo(hints);
        if (frc != 0)
            return getinfo_failed(h, frc, want, bind, err);
        if (!h->provider[0])
            snprintf(h->provider, sizeof(h->provider), "%s",
                     list->fabric_attr->prov_name);
        if (is_efa(want))
            rc = efa_rails(h, list, err);
        else {
            int nic = h->nics_here++;
            for (int l = 0; l < lanes && rc == PF_OK; l++)
                rc = add_rail(h, list, bind ? bind : want, nic, l, err);
        }
        h->fi.freeinfo(list);
        if (!sockets || !*p || h->nopened + lanes > PF_MAX_EFA)
            break;
    }
    if (is_efa(want)) {
        h->nics_here = h->nopened;
        lanes = 1;
    }
    h->lanes_here = lanes;
    h->provider_is_efa = is_efa(h->provider);
    return rc;
}

static pf_err open_rail(struct host *h, struct host_rail *r, char *err)
{
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
                                  .size = 4 * PF_HOST_MAX_DEPTH + 16,
                                  .wait_obj = FI_WAIT_NONE };
    struct fi_cq_attr cq_attr_fd = cq_attr;
    struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC,
                                  .count = (size_t)h->n };
    int rc;

    cq_attr_fd.wait_obj = FI_WAIT_FD;
    if ((rc = h->fi.fabric(r->info->fabric_attr, &r->fabric, NULL)))
        return fi_failed(h, err, "fi_fabric", rc);
    if ((rc = fi_domain(r->fabric, r->info, &r->domain, NULL)))
        return fi_failed(h, err, "fi_domain", rc);
    /* A queue with a file descriptor lets a rank with nothing to do sleep
     * in poll() (bounded by our own timeout) instead of spinning on cores
     * that other ranks need; efa and shm have none and are polled. */
    if (fi_cq_open(r->domain, &cq_attr_fd, &r->cq, NULL) == 0) {
        if (fi_control(&r->cq->fid, FI_GETWAIT, &r->wait_fd) != 0)
            r->wait_fd = -1;
    } else if ((rc = fi_cq_open(r->domain, &cq_attr, &r->cq, NULL))) {
        return fi_failed(h, err, "fi_cq_open", rc);
    }
    if ((rc = fi_av_open(r->domain, &av_attr, &r->av, NULL)))
        return fi_failed(h, err, "fi_av_open", rc);
    if ((rc = fi_endpoint(r->domain, r->info, &r->ep, NULL)))
        return fi_failed(h, err, "fi_endpoint", rc);
    if ((rc = fi_ep_bind(r->ep, &r->av->fid, 0)))
        return fi_failed(h, err, "fi_ep_bind(av)", rc);
    if ((rc = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV)))
        return fi_failed(h, err, "fi_ep_bind(cq)", rc);
    if ((rc = fi_enable(r->ep)))
        return fi_failed(h, err, "fi_enable", rc);
    return PF_OK;
}

static pf_err alloc_buffers(struct host *h, char *err)
{
    size_t data = (size_t)(h->max_count ? h->max_count : 1) * sizeof(float);
    size_t per_rail = (size_t)h->depth * h->chunk_elems;
    size_t stage = (size_t)h->nrails * per_rail * sizeof(float);
    void **bufs[3] = { (void **)&h->sendbuf, (void **)&h->recvbuf,
                       (void **)&h->stage };
    size_t lens[3] = { data, data, stage };

    for (int i = 0; i < 3; i++) {
        /* Page-aligned and untouched: RSS grows only with the sizes used.
         * Staging excepted, a few MiB: it is touched here, not by the
         * first timed all_reduces (first touches are slow on some VMs). */
        if (posix_memalign(bufs[i], 4096, lens[i]) != 0)
            return pf_fail(err, PF_ERR_NOMEM,
                           "host engine: cannot allocate %zu bytes", lens[i]);
        if (i == 2)
            memset(*bufs[i], 0, lens[i]);
        for (int k = 0; k < h->nrails; k++) {
            struct host_rail *r = &h->rails[k];
            int rc;

            if (!(r->info->domain_attr->mr_mode & FI_MR_LOCAL))
                continue;
            rc = fi_mr_reg(r->domain, *bufs[i], lens[i], FI_SEND | FI_RECV,
                           0, 0, 0, &r->mr[i], NULL);
            if (rc)
                return fi_failed(h, err, "fi_mr_reg", rc);
            r->desc[i] = fi_mr_desc(r->mr[i]);
        }
    }
    for (int k = 0; k < h->nrails; k++) {
        struct host_rail *r = &h->rails[k];
        r->cols = calloc((size_t)h->depth, sizeof(*r->cols));
        if (!r->cols)
            return pf_fail(err, PF_ERR_NOMEM, "host engine: out of memory");
        for (int i = 0; i < h->depth; i++) {
            r->cols[i].rail = r;
            r->cols[i].stage = h->stage + (size_t)k * per_rail +
                               (size_t)i * h->chunk_elems;
        }
    }
    return PF_OK;
}

static const char *host_of(const struct host *h, int rank)
{
    const struct pf_roster *p = h->args.roster;

    if (p && p->list && rank >= 0 && rank < p->world && p->list[rank].host[0])
        return p->list[rank].host;
    return "?";
}

/* Put the rails in use first, lane-major (rail j = lane j / nnics of NIC
 * j % nnics, so that chunk c % nrails reaches every NIC before a second
 * lane of any), the rest after them (still to be closed); names and lens
 * follow their rails. */
static pf_err order_rails(struct host *h, uint8_t (*names)[PF_HOST_ADDR_MAX],
                          size_t *lens, char *err)
{
    struct host_rail *old = malloc((size_t)h->nopened * sizeof(*old));
    uint8_t (*onames)[PF_HOST_ADDR_MAX] =
        malloc((size_t)h->nopened * sizeof(*onames));
    size_t olens[PF_MAX_EFA];
    bool used[PF_MAX_EFA] = { false };
    int j = 0;

    if (!old || !onames) {
        free(old);
        free(onames);
        return pf_fail(err, PF_ERR_NOMEM, "host engine: rail table");
    }
    memcpy(old, h->rails, (size_t)h->nopened * sizeof(*old));
    memcpy(onames, names, (size_t)h->nopened * sizeof(*onames));
    memcpy(olens, lens, (size_t)h->nopened * sizeof(*olens));
    for (int pass = 0; pass < 2; pass++)
        for (int l = 0; l < h->lanes_here; l++)
            for (int nic = 0; nic < h->nics_here; nic++) {
                int k = nic * h->lanes_here + l;
                bool in = nic < h->nnics && l < h->lanes;
                if (k >= h->nopened || used[k] || in != (pass == 0))
                    continue;
                used[k] = true;
                h->rails[j] = old[k];
                h->rails[j].index = j;
                memcpy(names[j], onames[k], sizeof(names[j]));
                lens[j] = olens[k];
                j++;
            }
    free(old);
    free(onames);
    return PF_OK;
}

/* Agree on the NIC and lane counts (the smallest any rank has), then swap
 * every rail's endpoint name: rail r of every rank goes into rail r's
 * table. */
static pf_err exchange_addresses(struct host *h, int64_t deadline, char *err)
{
    struct rail_count mine = { h->nics_here, h->lanes_here, 0 }, *counts;
    uint8_t (*names)[PF_HOST_ADDR_MAX] = NULL;
    uint8_t *blob = NULL, *all = NULL;
    size_t lens[PF_MAX_EFA], stride;
    pf_err rc;
    int frc, minr, minn = h->nics_here, minl = h->lanes_here, maxlen = 0;

    names = calloc(PF_MAX_EFA, sizeof(*names));
    counts = calloc((size_t)h->n, sizeof(*counts));
    if (!names || !counts) {
        rc = pf_fail(err, PF_ERR_NOMEM, "host engine: address table");
        goto out;
    }
    for (int k = 0; k < h->nopened; k++) {
        lens[k] = PF_HOST_ADDR_MAX;
        if ((frc = fi_getname(&h->rails[k].ep->fid, names[k], &lens[k]))) {
            rc = fi_failed(h, err, "fi_getname", frc);
            goto out;
        }
        if ((int)lens[k] > mine.addrlen)
            mine.addrlen = (int32_t)lens[k];
    }
    rc = pf_boot_allgather(h->boot, &mine, sizeof(mine), counts, deadline,
                           err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "exchanging rail counts");
        goto out;
    }
    for (int r = 0; r < h->n; r++) {
        if (counts[r].nics < 1 || counts[r].lanes < 1 ||
            counts[r].nics > PF_MAX_EFA || counts[r].lanes > PF_MAX_EFA ||
            counts[r].nics * counts[r].lanes > PF_MAX_EFA ||
            counts[r].addrlen < 1 || counts[r].addrlen > PF_HOST_ADDR_MAX) {
            rc = pf_fail(err, PF_ERR_PROTOCOL, "rank %d (%s) sent %d NICs "
                         "x %d lanes of %d-byte addresses", r, host_of(h, r),
                         counts[r].nics, counts[r].lanes, counts[r].addrlen);
            goto out;
        }
        if (counts[r].nics < minn)
            minn = counts[r].nics;
        if (counts[r].lanes < minl)
            minl = counts[r].lanes;
        if (counts[r].addrlen > maxlen)
            maxlen = counts[r].addrlen;
    }
    if (minn < h->nics_here)
        pf_warn("host engine: %d NICs here, but a peer has only %d: the "
                "last %d stay unused", h->nics_here, minn,
                h->nics_here - minn);
    h->nnics = minn;
    h->lanes = minl;
    h->nrails = minr = minn * minl;
    if ((rc = order_rails(h, names, lens, err)) != PF_OK)
        goto out;
    stride = 2 + (size_t)maxlen;
    blob = calloc((size_t)minr, stride);
    all = calloc((size_t)h->n * (size_t)minr, stride);
    if (!blob || !all) {
        rc = pf_fail(err, PF_ERR_NOMEM, "host engine: address table");
        goto out;
    }
    for (int k = 0; k < minr; k++) {
        blob[k * stride] = (uint8_t)(lens[k] >> 8);
        blob[k * stride + 1] = (uint8_t)lens[k];
        memcpy(blob + k * stride + 2, names[k], lens[k]);
    }
    rc = pf_boot_allgather(h->boot, blob, (size_t)minr * stride, all,
                           deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "exchanging fabric addresses");
        goto out;
    }
    for (int k = 0; k < minr && rc == PF_OK; k++) {
        struct host_rail *rl = &h->rails[k];

        rl->addrs = calloc((size_t)h->n, sizeof(*rl->addrs));
        if (!rl->addrs) {
            rc = pf_fail(err, PF_ERR_NOMEM, "host engine: address table");
            break;
        }
        for (int r = 0; r < h->n && rc == PF_OK; r++) {
            const uint8_t *e = all + ((size_t)r * minr + k) * stride;
            size_t len = (size_t)e[0] << 8 | e[1];
            if (len == 0 || len > (size_t)maxlen ||
                fi_av_insert(rl->av, e + 2, 1, &rl->addrs[r], 0, NULL) != 1)
                rc = pf_fail(err, PF_ERR_PROTOCOL,
                             "fabric address of rank %d (%s) on rail %d is "
                             "not usable with provider %s", r, host_of(h, r),
                             k, h->provider);
        }
        rl->left = rl->addrs[(h->rank + h->n - 1) % h->n];
        rl->right = rl->addrs[(h->rank + 1) % h->n];
    }
out:
    free(names);
    free(counts);
    free(blob);
    free(all);
    return rc;
}

/* The handshake's word: slot 0 of rail r's first staging buffer for the
 * send, slot 1 for the receive. */
static pf_err post_handshake(struct host *h, struct host_rail *r, bool recv,
                             int64_t deadline, char *err)
{
    uint64_t *word = (uint64_t *)(void *)r->cols[0].stage + (recv ? 1 : 0);

    return pf_host_post(h, r, recv, word, sizeof(*word), r->desc[2], r->right,
                        PF_HOST_TAG_HANDSHAKE, deadline, "fabric handshake",
                        err);
}

/* One 8-byte message to the right neighbour and one from the left on
 * every rail: the first use of every link and NIC, where a blocked fabric
 * shows up as a hang. */
static pf_err handshake(struct host *h, int64_t deadline, char *err)
{
    int left = (h->rank + h->n - 1) % h->n, right = (h->rank + 1) % h->n;
    int64_t started = pf_now_ms();
    pf_err rc = PF_OK;

    for (int k = 0; k < h->nrails && rc == PF_OK; k++) {
        struct host_rail *r = &h->rails[k];
        uint64_t *words = (uint64_t *)(void *)r->cols[0].stage;

        words[0] = (uint64_t)h->rank;
        words[1] = UINT64_MAX;
        r->hs_send_done = r->hs_recv_done = false;
        rc = post_handshake(h, r, true, deadline, err);
        if (rc == PF_OK)
            rc = post_handshake(h, r, false, deadline, err);
    }
    if (rc == PF_OK)
        rc = pf_host_wait_handshake(h, deadline, "fabric handshake", err);
    if (rc == PF_ERR_TIMEOUT) {
        char who[384] = "";
        for (int k = 0; k < h->nrails; k++) {
            const struct host_rail *r = &h->rails[k];
            size_t used = strlen(who);
            char nic[80] = "";

            if (r->hs_send_done && r->hs_recv_done)
                continue;
            if (h->nnics > 1)
                snprintf(nic, sizeof(nic), "NIC %s: ", r->name);
            if (!r->hs_send_done && !r->hs_recv_done)
                snprintf(who + used, sizeof(who) - used, "%s%snothing "
                         "reached rank %d (%s) and nothing came from rank %d "
                         "(%s)", used ? "; " : "", nic, right,
                         host_of(h, right), left, host_of(h, left));
            else if (!r->hs_send_done)
                snprintf(who + used, sizeof(who) - used, "%s%snothing "
                         "reached rank %d (%s)", used ? "; " : "", nic, right,
                         host_of(h, right));
            else
                snprintf(who + used, sizeof(who) - used, "%s%snothing came "
                         "from rank %d (%s)", used ? "; " : "", nic, left,
                         host_of(h, left));
        }
        return pf_fail(err, PF_ERR_TIMEOUT,
                       "fabric handshake over %s timed out after %.0f s: %s, "
                       "although the TCP rendezvous reached every rank; on "
                       "EFA this is the symptom of a security group without "
                       "a rule allowing all traffic to and from itself",
                       h->provider, (double)(pf_now_ms() - started) / 1000.0,
                       who);
    }
    if (rc != PF_OK)
        return rc;
    for (int k = 0; k < h->nrails; k++) {
        uint64_t *words = (uint64_t *)(void *)h->rails[k].cols[0].stage;
        if (words[1] != (uint64_t)left)
            return pf_fail(err, PF_ERR_PROTOCOL,
                           "fabric handshake on rail %d: expected rank %d "
                           "(%s) on the left, got %llu", k, left,
                           host_of(h, left), (unsigned long long)words[1]);
    }
    return PF_OK;
}

/* rxm over tcp places a message straight into the posted receive buffer
 * (dynamic receive buffers, on by default), and then sends eagerly only
 * up to its eager limit, 16 KiB by default: every larger chunk took a
 * rendezvous, a request, an RMA read and a done message, three trips per
 * ring step, where eager is one, with no copy more and no buffer pool
 * larger (8 ranks at 1 MiB: 0.63 -> 1.94 of MPI,
 * bench/results/host_allreduce.md). So every ring chunk goes eager.
 *
 * An eager send would complete once a socket took it, and a rank whose
 * sends to a slow NIC's link completed early would start the next
 * operation ahead of its neighbours, waiting on its healthy rails for
 * them: the time each rail is judged by would then blame a good NIC.
 * hints_for asks for FI_TRANSMIT_COMPLETE, which tcp meets with an
 * acknowledgement from the peer, so a send completes when the data
 * arrived, as over EFA (8 ranks at 1 MiB in one call: 1.31 of MPI, not
 * 1.81; in the bar's run 1.61).
 *
 * rxm refuses a connection from a peer with another limit, which is why
 * the rendezvous version changed with it; a value the user set stays (and
 * must then be set on every rank). */
static void set_eager_limit(void)
{
    char bytes[24];

    snprintf(bytes, sizeof(bytes), "%u", PF_HOST_CHUNK_BYTES);
    setenv("FI_OFI_RXM_EAGER_LIMIT", bytes, 0);
}

pf_err pf_host_ep_open(struct host *h, int64_t deadline, char *err)
{
    const char *prov = h->args.provider && h->args.provider[0]
                           ? h->args.provider : "efa";
    pf_err rc;

    /* rxm (over tcp) pre-posts 4096 receive buffers per endpoint, about
     * 100 MiB each; the ring keeps at most depth messages in flight per
     * rail, so 128 are plenty and leave room for lanes under the RSS bar
     * (36 MiB a lane, bench/results/host_allreduce.md). libfabric reads it
     * when its providers load, which on a node without EFA (the only
     * place rxm is used) is here; a value the user set stays. */
    if (is_socket(prov)) {
        setenv("FI_OFI_RXM_MSG_RX_SIZE", "128", 0);
        set_eager_limit();
    }
    if ((rc = pf_fi_load(&h->fi, h->args.libfabric_path, err)) != PF_OK)
        return rc;
    if ((rc = get_rails(h, err)) != PF_OK)
        return rc;
    snprintf(h->facts->provider, sizeof(h->facts->provider), "%s",
             h->provider);
    h->facts->provider_is_fallback = !h->provider_is_efa;
    for (int k = 0; k < h->nopened; k++)
        if ((rc = open_rail(h, &h->rails[k], err)) != PF_OK) {
            if (h->nopened > 1)
                pf_err_prefix(err, "NIC %s", h->rails[k].name);
            return rc;
        }
    if ((rc = exchange_addresses(h, deadline, err)) != PF_OK)
        return rc;
    if ((rc = alloc_buffers(h, err)) != PF_OK)
        return rc;
    return handshake(h, deadline, err);
}

/* Did the receive posted with ctx complete (or fail, a truncation)? A
 * few reads, since rxm completes a receive that matched a message it
 * already holds while posting it; other completions (an abandoned
 * operation's) are dropped. */
static bool drained_one(struct host_rail *r, struct fi_context2 *ctx)
{
    for (int i = 0; i < 64; i++) {
        struct fi_cq_entry ce;
        struct fi_cq_err_entry ee;
        ssize_t n = fi_cq_read(r->cq, &ce, 1);

        if (n == 1 && ce.op_context == ctx)
            return true;
        if (n == -FI_EAVAIL) {
            memset(&ee, 0, sizeof(ee));
            if (fi_cq_readerr(r->cq, &ee, 0) == 1 && ee.op_context == ctx)
                return true;
        }
    }
    return false;
}

/* rxm keeps a message that arrived before its receive was posted in a
 * buffer of its size, and frees none still held when the endpoint closes
 * (rxm_recv_queue_close, libfabric 1.17). After a run that stopped early
 * (a lost peer) its neighbours' last chunks are such messages: receive
 * them into the scratch of recvbuf, as many as there are, then cancel
 * the one receive left waiting. Bounded: rxm holds at most what the
 * peers sent ahead. */
static void drain_unexpected(struct host *h, struct host_rail *r)
{
    size_t bytes = (size_t)h->max_count * sizeof(float);

    if (!r->ep || !r->cq || !h->recvbuf || !strstr(h->provider, "ofi_rxm"))
        return;
    for (int i = 0; i < 4096; i++) {
        struct fi_context2 ctx;

        if (fi_trecv(r->ep, h->recvbuf, bytes, pf_host_desc(r, h, h->recvbuf),
                     FI_ADDR_UNSPEC, 0, ~0ULL, &ctx) != 0)
            return;
        if (!drained_one(r, &ctx)) {
            fi_cancel(&r->ep->fid, &ctx);
            drained_one(r, &ctx);     /* its FI_ECANCELED entry */
            return;
        }
    }
}

void pf_host_ep_close(struct host *h)
{
    for (int k = 0; h->rails && k < h->nopened; k++) {
        struct host_rail *r = &h->rails[k];

        drain_unexpected(h, r);
        /* Endpoint first: it references the queue, the table and the
         * registrations. */
        if (r->ep)
            fi_close(&r->ep->fid);
        if (r->av)
            fi_close(&r->av->fid);
        if (r->cq)
            fi_close(&r->cq->fid);
        for (int i = 0; i < 3; i++)
            if (r->mr[i])
                fi_close(&r->mr[i]->fid);
        if (r->domain)
            fi_close(&r->domain->fid);
        if (r->fabric)
            fi_close(&r->fabric->fid);
        if (r->info)
            h->fi.freeinfo(r->info);
        free(r->addrs);
        free(r->cols);
    }
    free(h->rails);
    h->rails = NULL;
    free(h->sendbuf);
    free(h->recvbuf);
    free(h->stage);
    if (h->fi.dl)
        pf_fi_unload(&h->fi);
}
