/* Internals of the host engine (its files are listed below): one libfabric
 * RDM endpoint per NIC and rank (a "rail"), tagged sends to rank+1 and
 * receives from rank-1, and per rail a set of "columns" that walk the
 * ring steps chunk by chunk.
 *
 * Rails: with efa, one per EFA device (every domain fi_getinfo lists);
 * with a socket provider (tcp), one per address of --fabric-addrs, else
 * one on the bind address; shm, one. A socket provider opens several
 * endpoints ("lanes") per address, each a rail with its own thread: one
 * TCP stream and the one core that copies it cannot fill a NIC (NCCL's
 * socket transport opens several streams and threads per peer for the
 * same reason). Every rank uses the smallest NIC and lane counts any rank
 * has, so rail r of one rank always talks to rail r of its neighbours. Chunk c of an all_reduce travels on rail c % nrails through
 * every step and every rank, so each rail's share is timed on its own:
 * a slow NIC shows as a slow rail. */
#ifndef PF_HOST_H
#define PF_HOST_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "../engine.h"
#include "../../types/node.h"
#include "../../util/fabriclib.h"

/* Tuned on loopback tcp (bench/results/host_allreduce.md): chunks large
 * enough that per-message costs vanish, enough in flight to keep both
 * directions of every link busy, small enough that staging stays a few
 * MiB per rail whatever the buffer size. */
#define PF_HOST_CHUNK_BYTES (1u << 20)
#define PF_HOST_DEPTH 4               /* columns in flight per rail */
#define PF_HOST_MAX_DEPTH 16
/* Segments that give fewer chunks than columns (depth x rails) are cut
 * finer, down to this, so that every column of every rail has a chunk:
 * one 128 KiB chunk per segment (1 MiB over 8 ranks) left the ring one
 * message deep, each step waiting for the last. */
#define PF_HOST_MIN_CHUNK_BYTES (64u << 10)
/* Cutting to keep depth columns busy stops at this: more, smaller messages
 * cost more than the overlap gains, with every chunk eager as well (64 KiB
 * here: 8 ranks at 4 MiB 1.12 of MPI against 1.93,
 * bench/results/host_allreduce.md). */
#define PF_HOST_MIN_DEPTH_CHUNK_BYTES (256u << 10)
/* Lanes per address when the cores allow (fabric_lanes 0): each holds
 * tens of MiB of provider buffers, and the RSS bar (3 x buffer + 16 MiB)
 * leaves room for four. */
#define PF_HOST_MAX_LANES 4
#define PF_HOST_ADDR_MAX 240
/* How often a wait on the fabric also asks the bootstrap about peers. */
#define PF_HOST_BOOT_POLL_MS 100
/* Longest single sleep on the queues' fds. */
#define PF_HOST_WAIT_MS 10
/* How long an idle rank keeps polling before it sleeps: 200 us measured
 * best for 1-4 MiB (2 ranks, 1 MiB: 1.09 -> 1.76 GB/s), neutral at 16 MiB
 * and up (bench/results/host_allreduce.md). */
#define PF_HOST_SPIN_US 200

enum host_op_kind { OP_SEND, OP_RECV, OP_HS_SEND, OP_HS_RECV };

struct host_col;
struct host_rail;

/* One posted operation; its address is the completion context, so the
 * provider's scratch space (FI_CONTEXT/FI_CONTEXT2 mode) comes first. */
struct host_op {
    struct fi_context2 ctx;
    struct host_col *col;             /* OP_SEND, OP_RECV */
    struct host_rail *rail;
    enum host_op_kind kind;
};

/* One chunk index travelling through all 2(n-1) ring steps, one step at a
 * time: both the send and the receive of step t complete before step t+1
 * is posted, which keeps in-place buffers safe without further tracking. */
struct host_col {
    struct host_op send_op, recv_op;
    struct host_rail *rail;
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

/* One NIC: its own fabric objects, address table and columns. With
 * several rails, rail k > 0 is driven during an all_reduce by its own
 * thread (posts, completions and the sums of its chunks), rail 0 by the
 * caller; outside all_reduces the caller drives every rail. */
struct host_rail {
    struct host *h;
    int index;
    int nic, lane;                    /* which address / EFA device, and
                                         which of its endpoints */
    char name[64];                    /* EFA device, address, or provider */
    struct fi_info *info;             /* owned (a dup) */
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

    struct host_col *cols;            /* h->depth of them */
    /* the all_reduce in progress: this rail's chunks are index, index +
     * nrails, ...; rail-local counts */
    uint64_t nchunks, next_chunk, done_chunks;
    double t0;                        /* when its first chunk started */
    double idle_since;                /* first empty poll, 0 while busy */
    int slow_step;                    /* last step the slow rank slept for */

    /* its thread (rails 1.. when there are several) */
    pthread_t thread;
    bool has_thread;
    atomic_uint done_gen;             /* the last all_reduce it finished */
    pf_err rc;                        /* ... and how */
    char err[PF_ERRLEN];

    /* handshake and pair exchanges */
    struct host_op hs_ops[2];         /* send, recv */
    bool hs_send_done, hs_recv_done;
    uint64_t pair_next, pair_chunks;  /* rail-local chunk of an exchange */
    uint64_t pair_len;                /* elements of the chunk in flight */
    bool pair_busy;

    /* since open: what this NIC carried and how long it took */
    uint64_t bytes;                   /* sent + received */
    double seconds;                   /* per all_reduce (or timed exchange):
                                         start until its last chunk */
};

struct host {
    struct pf_fi fi;
    struct host_rail *rails;
    int nrails;                       /* used: nnics x lanes */
    int nnics, lanes;                 /* used: the smallest of every rank */
    int nopened;                      /* rails with objects to close */
    int nics_here, lanes_here;        /* opened */
    /* Rail threads pinned to CPUs of their own (lanes by the cores): rail
     * j of the i-th rank on this host on allowed CPU i x nrails + j. */
    bool pin;
    int local_index;                  /* among the ranks on this host */
    cpu_set_t allowed, caller_cpus;   /* the process's; the caller's */
    bool caller_pinned;

    struct pf_engine_args args;       /* as open was given them */
    struct pf_fabric_facts *facts;    /* the engine's, filled at open */
    struct pf_boot *boot;
    int rank, n;
    char provider[32];
    bool provider_is_efa;

    float *sendbuf, *recvbuf, *stage;
    uint64_t max_count, chunk_elems;
    uint64_t min_chunk_elems;         /* finest cut (chunks_for) */
    int depth;                        /* columns per rail */
    uint32_t seq;                     /* all_reduce counter, part of tags */
    int64_t next_boot_poll;
    double idle_since;                /* first empty poll, 0 while busy */

    /* the all_reduce in progress */
    const float *src;
    float *dst;
    uint64_t count, nchunks;
    int64_t deadline;
    char what[96];
    int pair_peer;                    /* pairwise re-test partner, -1 none */

    /* rail threads: gen counts all_reduces handed to them; quit ends
     * them; stop makes them give up the one in progress (a peer was lost
     * on the bootstrap) */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    bool sync_ready;
    atomic_uint gen;
    atomic_bool quit, stop;
};

/* The message tag: all_reduce number (23 bits), ring step (16), chunk
 * (24); bit 63 marks the handshake. Several chunks of several steps can
 * be in flight and each lands in its own buffer whatever order the
 * provider delivers them in, and an early message of the next all_reduce
 * never matches a receive of this one. */
#define PF_HOST_TAG_SEQ_MASK 0x7fffffu
#define PF_HOST_TAG_CHUNK_MASK 0xffffffu
#define PF_HOST_TAG_HANDSHAKE (1ULL << 63)
/* Pairwise re-test messages carry this step, which no ring step reaches
 * (host_open keeps 2n-3, the last ring step, below it), so they never match
 * a ring receive. */
#define PF_HOST_PAIR_STEP 0xffff
/* The most ranks whose ring steps fit the tag's 16-bit step field
 * (2n-3 < PF_HOST_PAIR_STEP). */
#define PF_HOST_TAG_RING_RANKS ((PF_HOST_PAIR_STEP + 2) / 2)

static inline uint64_t pf_host_tag(uint32_t seq, int step, uint64_t chunk)
{
    return ((uint64_t)(seq & PF_HOST_TAG_SEQ_MASK) << 40) |
           ((uint64_t)step << 24) | (chunk & PF_HOST_TAG_CHUNK_MASK);
}

/* The memory-registration descriptor of rail r covering ptr (NULL when
 * none). Here, not in a .c file, because set-up (host_ep.c) and the
 * columns (host_cols.c) both need it and neither may call the other. */
static inline void *pf_host_desc(const struct host_rail *r,
                                 const struct host *h, const void *ptr)
{
    const char *p = ptr;
    size_t data = (size_t)(h->max_count ? h->max_count : 1) * sizeof(float);

    if (p >= (const char *)h->sendbuf && p < (const char *)h->sendbuf + data)
        return r->desc[0];
    if (p >= (const char *)h->recvbuf && p < (const char *)h->recvbuf + data)
        return r->desc[1];
    return r->desc[2];
}

/* The engine's files, lowest first; each calls only those above it, so
 * none calls back into another (tests/integration/test_layout.sh):
 *   host_cols.c    a column: one chunk through the ring steps;
 *   host_queue.c   the rails' completion queues: posting, reading,
 *                  waiting, a rail's share of an all_reduce;
 *   host_ep.c      set-up: rails, buffers, addresses, the handshake;
 *   engine_host.c  the engine: all_reduce over the rail threads, the
 *                  pairwise re-test, the ops table. */

/* ---- host_cols.c ---- */
/* Start c on the next chunk of its rail, if any is left. */
void pf_host_col_next(struct host *h, struct host_col *c);
/* Finish every step of c whose send and receive are both done (summing
 * what a reduce step received), then start its next chunk. */
void pf_host_col_advance(struct host *h, struct host_col *c);
/* Post c's receive and send for its step where not posted yet (the
 * provider may push back: retried on the next call). */
pf_err pf_host_col_post(struct host *h, struct host_col *c, char *err);

/* ---- host_queue.c ---- */
/* Read at most one batch of completions per rail; PF_OK when none were
 * ready. */
pf_err pf_host_progress(struct host *h, int64_t deadline, const char *what,
                        char *err);
/* Drive completions until every rail's handshake flags are set, or the
 * deadline; what names the wait in messages. */
pf_err pf_host_wait_handshake(struct host *h, int64_t deadline,
                              const char *what, char *err);
/* Post a tagged receive (from anyone) or send (to `to`) on rail r through
 * its handshake slot, progressing the queues while the provider pushes
 * back (-FI_EAGAIN); the handshake and the pair exchange share it. */
pf_err pf_host_post(struct host *h, struct host_rail *r, bool recv,
                    void *buf, size_t bytes, void *desc, fi_addr_t to,
                    uint64_t tag, int64_t deadline, const char *what,
                    char *err);
/* Rail r's share of the all_reduce in progress (main: the caller's
 * thread, which also watches the bootstrap); PF_ERR_TIMEOUT unreported,
 * for the caller to name every rail still busy. */
pf_err pf_host_rail_run(struct host *h, struct host_rail *r, bool main,
                        char *err);
/* The caller's thread: ask the bootstrap about peers, every
 * PF_HOST_BOOT_POLL_MS. */
pf_err pf_host_boot_check(struct host *h, int64_t now, const char *what,
                          char *err);
/* The deadline passed during `what`: a message naming the neighbours (or
 * the pair partner) and every NIC still waiting. */
pf_err pf_host_deadline_passed(const struct host *h, const char *what,
                               char *err);

/* ---- host_ep.c: rails (fabric objects, buffers), address exchange, the
 * first exchange with the neighbours on every rail (which is where a
 * blocked fabric or NIC shows). ---- */
pf_err pf_host_ep_open(struct host *h, int64_t deadline, char *err);
void pf_host_ep_close(struct host *h);

#endif
