/* Host engine set-up: provider, endpoint, buffers, address exchange and
 * the first message round the ring. */
#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "../util/clock.h"
#include "../util/log.h"

#define TAG_HANDSHAKE (1ULL << 63)

struct addr_blob {
    uint32_t len;
    uint8_t bytes[PF_HOST_ADDR_MAX];
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

/* Socket-based providers must bind the address the peers reach us on (the
 * rendezvous address), not whatever interface comes first; efa and shm
 * choose their own. */
static const char *source_node(const struct host *h, const char *want)
{
    const struct pf_run *run = h->run;

    if (is_efa(want) || !strcmp(want, "shm"))
        return NULL;
    if (run->cfg.bind_addr[0])
        return run->cfg.bind_addr;
    if (run->peers.list && h->rank < run->peers.world &&
        run->peers.list[h->rank].host[0])
        return run->peers.list[h->rank].host;
    return NULL;
}

static pf_err get_info(struct host *h, char *err)
{
    const char *want = h->run->cfg.fabric_provider[0]
                           ? h->run->cfg.fabric_provider : "efa";
    const char *node = source_node(h, want);
    struct fi_info *hints = h->fi.dupinfo(NULL);
    int rc;

    if (!hints)
        return pf_fail(err, PF_ERR_NOMEM, "fi_dupinfo: out of memory");
    hints->caps = FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED |
                                  FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(want);
    rc = h->fi.getinfo(pf_fi_api_version(&h->fi), node, NULL,
                       node ? FI_SOURCE : 0, hints, &h->info);
    h->fi.freeinfo(hints);
    if (rc == -FI_ENODATA)
        return pf_fail(err, PF_ERR_UNSUPPORTED,
                       "libfabric %s has no provider '%s' with reliable "
                       "datagram endpoints%s%s (fi_getinfo: no data)",
                       h->fi.path, want, node ? " bound to " : "",
                       node ? node : "");
    if (rc != 0)
        return pf_fail(err, PF_ERR_ENGINE,
                       "fi_getinfo(provider %s%s%s): %s (%d)", want,
                       node ? ", node " : "", node ? node : "",
                       h->fi.strerror(-rc), rc);
    snprintf(h->provider, sizeof(h->provider), "%s",
             h->info->fabric_attr->prov_name);
    h->provider_is_efa = is_efa(h->provider);
    return PF_OK;
}

static pf_err alloc_buffers(struct host *h, char *err)
{
    size_t data = (size_t)(h->max_count ? h->max_count : 1) * sizeof(float);
    size_t stage = (size_t)h->depth * h->chunk_elems * sizeof(float);
    void **bufs[3] = { (void **)&h->sendbuf, (void **)&h->recvbuf,
                       (void **)&h->stage };
    size_t lens[3] = { data, data, stage };

    for (int i = 0; i < 3; i++) {
        /* Page-aligned and untouched: RSS grows only with the sizes used. */
        if (posix_memalign(bufs[i], 4096, lens[i]) != 0)
            return pf_fail(err, PF_ERR_NOMEM,
                           "host engine: cannot allocate %zu bytes", lens[i]);
        if (h->info->domain_attr->mr_mode & FI_MR_LOCAL) {
            int rc = fi_mr_reg(h->domain, *bufs[i], lens[i],
                               FI_SEND | FI_RECV, 0, 0, 0, &h->mr[i], NULL);
            if (rc)
                return fi_failed(h, err, "fi_mr_reg", rc);
            h->desc[i] = fi_mr_desc(h->mr[i]);
        }
    }
    for (int i = 0; i < h->depth; i++)
        h->cols[i].stage = h->stage + (size_t)i * h->chunk_elems;
    return PF_OK;
}

static pf_err open_objects(struct host *h, char *err)
{
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT,
                                  .size = 4 * PF_HOST_MAX_DEPTH + 16,
                                  .wait_obj = FI_WAIT_NONE };
    struct fi_cq_attr cq_attr_fd = { .format = FI_CQ_FORMAT_CONTEXT,
                                     .size = 4 * PF_HOST_MAX_DEPTH + 16,
                                     .wait_obj = FI_WAIT_FD };
    struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC,
                                  .count = (size_t)h->n };
    int rc;

    if ((rc = h->fi.fabric(h->info->fabric_attr, &h->fabric, NULL)))
        return fi_failed(h, err, "fi_fabric", rc);
    if ((rc = fi_domain(h->fabric, h->info, &h->domain, NULL)))
        return fi_failed(h, err, "fi_domain", rc);
    /* A queue with a file descriptor lets a rank with nothing to do sleep
     * in poll() (bounded by our own timeout) instead of spinning on cores
     * that other ranks need; efa and shm have none and are polled. */
    h->wait_fd = -1;
    if (fi_cq_open(h->domain, &cq_attr_fd, &h->cq, NULL) == 0) {
        if (fi_control(&h->cq->fid, FI_GETWAIT, &h->wait_fd) != 0)
            h->wait_fd = -1;
    } else if ((rc = fi_cq_open(h->domain, &cq_attr, &h->cq, NULL))) {
        return fi_failed(h, err, "fi_cq_open", rc);
    }
    if ((rc = fi_av_open(h->domain, &av_attr, &h->av, NULL)))
        return fi_failed(h, err, "fi_av_open", rc);
    if ((rc = fi_endpoint(h->domain, h->info, &h->ep, NULL)))
        return fi_failed(h, err, "fi_endpoint", rc);
    if ((rc = fi_ep_bind(h->ep, &h->av->fid, 0)))
        return fi_failed(h, err, "fi_ep_bind(av)", rc);
    if ((rc = fi_ep_bind(h->ep, &h->cq->fid, FI_TRANSMIT | FI_RECV)))
        return fi_failed(h, err, "fi_ep_bind(cq)", rc);
    if ((rc = fi_enable(h->ep)))
        return fi_failed(h, err, "fi_enable", rc);
    return PF_OK;
}

static const char *host_of(const struct host *h, int rank)
{
    const struct pf_peers *p = &h->run->peers;

    if (p->list && rank >= 0 && rank < p->world && p->list[rank].host[0])
        return p->list[rank].host;
    return "?";
}

static pf_err exchange_addresses(struct host *h, int64_t deadline, char *err)
{
    struct addr_blob mine, *all;
    size_t len = sizeof(mine.bytes);
    pf_err rc = PF_OK;
    int frc;

    memset(&mine, 0, sizeof(mine));
    if ((frc = fi_getname(&h->ep->fid, mine.bytes, &len)))
        return fi_failed(h, err, "fi_getname", frc);
    mine.len = (uint32_t)len;
    all = calloc((size_t)h->n, sizeof(*all));
    h->addrs = calloc((size_t)h->n, sizeof(*h->addrs));
    if (!all || !h->addrs) {
        free(all);
        return pf_fail(err, PF_ERR_NOMEM, "host engine: address table");
    }
    rc = pf_boot_allgather(h->boot, &mine, sizeof(mine), all, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "exchanging fabric addresses");
        free(all);
        return rc;
    }
    for (int r = 0; r < h->n && rc == PF_OK; r++) {
        if (all[r].len == 0 || all[r].len > PF_HOST_ADDR_MAX ||
            fi_av_insert(h->av, all[r].bytes, 1, &h->addrs[r], 0, NULL) != 1)
            rc = pf_fail(err, PF_ERR_PROTOCOL,
                         "fabric address of rank %d (%s) is not usable with "
                         "provider %s", r, host_of(h, r), h->provider);
    }
    free(all);
    h->left = h->addrs[(h->rank + h->n - 1) % h->n];
    h->right = h->addrs[(h->rank + 1) % h->n];
    return rc;
}

/* Post with the provider's back-pressure: -FI_EAGAIN means "progress the
 * completion queue and try again". */
static pf_err post_handshake(struct host *h, bool recv, int64_t deadline,
                             char *err)
{
    struct host_op *op = &h->hs_ops[recv ? 1 : 0];
    uint64_t *word = (uint64_t *)(void *)h->stage + (recv ? 1 : 0);
    ssize_t rc;

    op->col = NULL;
    op->kind = recv ? OP_HS_RECV : OP_HS_SEND;
    for (;;) {
        if (recv)
            rc = fi_trecv(h->ep, word, sizeof(*word), h->desc[2],
                          FI_ADDR_UNSPEC, TAG_HANDSHAKE, 0, &op->ctx);
        else
            rc = fi_tsend(h->ep, word, sizeof(*word), h->desc[2], h->right,
                          TAG_HANDSHAKE, &op->ctx);
        if (rc == 0)
            return PF_OK;
        if (rc != -FI_EAGAIN)
            return fi_failed(h, err, recv ? "fi_trecv" : "fi_tsend",
                             (int)rc);
        pf_err prc = pf_host_progress(h, deadline, "fabric handshake", err);
        if (prc != PF_OK)
            return prc;
    }
}

/* One 8-byte message to the right neighbour and one from the left: the
 * first use of every link, where a blocked fabric shows up as a hang. */
static pf_err handshake(struct host *h, int64_t deadline, char *err)
{
    uint64_t *words = (uint64_t *)(void *)h->stage;
    int left = (h->rank + h->n - 1) % h->n, right = (h->rank + 1) % h->n;
    int64_t started = pf_now_ms();
    pf_err rc;

    words[0] = (uint64_t)h->rank;
    words[1] = UINT64_MAX;
    h->hs_send_done = h->hs_recv_done = false;
    rc = post_handshake(h, true, deadline, err);
    if (rc == PF_OK)
        rc = post_handshake(h, false, deadline, err);
    if (rc == PF_OK)
        rc = pf_host_wait(h, &h->hs_send_done, &h->hs_recv_done, deadline,
                          "fabric handshake", err);
    if (rc == PF_ERR_TIMEOUT) {
        char who[320];
        if (!h->hs_send_done && !h->hs_recv_done)
            snprintf(who, sizeof(who), "nothing reached rank %d (%s) and "
                     "nothing came from rank %d (%s)", right,
                     host_of(h, right), left, host_of(h, left));
        else if (!h->hs_send_done)
            snprintf(who, sizeof(who), "nothing reached rank %d (%s)", right,
                     host_of(h, right));
        else
            snprintf(who, sizeof(who), "nothing came from rank %d (%s)",
                     left, host_of(h, left));
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
    if (words[1] != (uint64_t)left)
        return pf_fail(err, PF_ERR_PROTOCOL,
                       "fabric handshake: expected rank %d (%s) on the left, "
                       "got %llu", left, host_of(h, left),
                       (unsigned long long)words[1]);
    return PF_OK;
}

pf_err pf_host_ep_open(struct host *h, int64_t deadline, char *err)
{
    pf_err rc;

    if ((rc = pf_fi_load(&h->fi, h->run->cfg.libfabric_path, err)) != PF_OK)
        return rc;
    if ((rc = get_info(h, err)) != PF_OK)
        return rc;
    snprintf(h->run->coll.provider, sizeof(h->run->coll.provider), "%s",
             h->provider);
    h->run->coll.provider_is_fallback = !h->provider_is_efa;
    if ((rc = open_objects(h, err)) != PF_OK)
        return rc;
    if ((rc = alloc_buffers(h, err)) != PF_OK)
        return rc;
    if ((rc = exchange_addresses(h, deadline, err)) != PF_OK)
        return rc;
    return handshake(h, deadline, err);
}

void pf_host_ep_close(struct host *h)
{
    /* Endpoint first: it references the queue, the table and the
     * registrations. */
    if (h->ep)
        fi_close(&h->ep->fid);
    if (h->av)
        fi_close(&h->av->fid);
    if (h->cq)
        fi_close(&h->cq->fid);
    for (int i = 0; i < 3; i++)
        if (h->mr[i])
            fi_close(&h->mr[i]->fid);
    if (h->domain)
        fi_close(&h->domain->fid);
    if (h->fabric)
        fi_close(&h->fabric->fid);
    if (h->info)
        h->fi.freeinfo(h->info);
    free(h->addrs);
    free(h->sendbuf);
    free(h->recvbuf);
    free(h->stage);
    if (h->fi.dl)
        pf_fi_unload(&h->fi);
}
