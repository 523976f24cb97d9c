/* Internals of the host engine (engine_host.c, host_ep.c): one libfabric
 * RDM endpoint per rank, tagged sends to rank+1 and receives from rank-1,
 * and a set of "columns" that walk the ring steps chunk by chunk. */
#ifndef PF_HOST_H
#define PF_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "bootstrap.h"
#include "fabric.h"

/* Tuned on loopback tcp (bench/results/host_allreduce.md): chunks large
 * enough that per-message costs vanish, enough in flight to keep both
 * directions of every link busy, small enough that staging stays a few
 * MiB whatever the buffer size. */
#define PF_HOST_CHUNK_BYTES (1u << 20)
#define PF_HOST_DEPTH 4
#define PF_HOST_MAX_DEPTH 16
#define PF_HOST_ADDR_MAX 240
/* How often a wait on the fabric also asks the bootstrap about peers. */
#define PF_HOST_BOOT_POLL_MS 100
/* Longest single sleep on the queue's fd. */
#define PF_HOST_WAIT_MS 10
/* How long an idle rank keeps polling before it sleeps: 200 us measured
 * best for 1-4 MiB (2 ranks, 1 MiB: 1.09 -> 1.76 GB/s), neutral at 16 MiB
 * and up (bench/results/host_allreduce.md). */
#define PF_HOST_SPIN_US 200

enum host_op_kind { OP_SEND, OP_RECV, OP_HS_SEND, OP_HS_RECV };

struct host_col;

/* One posted operation; its address is the completion context, so the
 * provider's scratch space (FI_CONTEXT/FI_CONTEXT2 mode) comes first. */
struct host_op {
    struct fi_context2 ctx;
    struct host_col *col;
    enum host_op_kind kind;
};

/* One chunk index travelling through all 2(n-1) ring steps, one step at a
 * time: both the send and the receive of step t complete before step t+1
 * is posted, which keeps in-place buffers safe without further tracking. */
struct host_col {
    struct host_op send_op, recv_op;
    bool active;
    uint64_t chunk;
    int step;
    bool send_posted, recv_posted, send_done, recv_done;
    float *stage;                     /* reduce-scatter landing area */
    const float *send_ptr;
    float *recv_ptr;
    uint64_t send_len, recv_len;      /* elements */
    uint64_t recv_off;                /* element offset of recv in dst */
};

struct host {
    struct pf_fi fi;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    int wait_fd;                      /* the queue's fd, -1 = poll only */
    struct fid_ep *ep;
    struct fid_mr *mr[3];             /* send, recv, stage when FI_MR_LOCAL */
    void *desc[3];
    fi_addr_t *addrs;                 /* n entries, rank order */
    fi_addr_t left, right;

    struct pf_run *run;
    struct pf_boot *boot;
    int rank, n;
    char provider[32];
    bool provider_is_efa;

    float *sendbuf, *recvbuf, *stage;
    uint64_t max_count, chunk_elems;
    int depth;
    uint32_t seq;                     /* all_reduce counter, part of tags */
    int64_t next_boot_poll;
    double idle_since;                /* first empty poll, 0 while busy */

    /* the all_reduce in progress */
    const float *src;
    float *dst;
    uint64_t count, nchunks, next_chunk, done_chunks;
    int slow_step;                    /* last step the slow rank slept for */
    struct host_col cols[PF_HOST_MAX_DEPTH];
    struct host_op hs_ops[2];         /* handshake send, recv */
    bool hs_send_done, hs_recv_done;
    int pair_peer;                    /* pairwise re-test partner, -1 none;
                                         it reuses hs_ops */
};

/* host_ep.c: fabric objects, buffers, address exchange, the first
 * exchange with the neighbours (which is where a blocked fabric shows). */
pf_err pf_host_ep_open(struct host *h, int64_t deadline, char *err);
void pf_host_ep_close(struct host *h);

/* engine_host.c: drive completions until *flag_a && *flag_b or the
 * deadline; what names the wait goes into messages. */
pf_err pf_host_wait(struct host *h, const bool *flag_a, const bool *flag_b,
                    int64_t deadline, const char *what, char *err);
/* Read at most one batch of completions; PF_OK when none were ready. */
pf_err pf_host_progress(struct host *h, int64_t deadline, const char *what,
                        char *err);

/* The memory-registration descriptor covering ptr (NULL when none). */
void *pf_host_desc(const struct host *h, const void *ptr);

#endif
