/* The NCCL engine's control flow against the host-memory double
 * (tests/fakes/gpu/gpu_double.c): missing library, old version, init timeout,
 * async error mid-sweep, hangs and lost peers ending in ncclCommAbort, and
 * data checks. Each Criterion test runs in its own process, so setenv is
 * local to the test. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collective/engine.h"
#include "fork_boot.h"
#include "util/clock.h"
#include "util/fsutil.h"

#include "unit_files.h"

/* ------------------------------------------------------- a fake group */

/* The engine's allgather payload starts with char host[64], int32 ngpu;
 * the other processes' entries are copies of ours with those changed. */
struct fake {
    int counts[4];          /* other processes' GPU counts (0: as ours) */
    bool same_host;         /* other processes on this host */
    int poll_ok;            /* polls that succeed before PF_ERR_LOST */
    int polls;
};

static pf_err fake_allgather(struct pf_boot *b, const void *mine, size_t len,
                             void *all, int64_t deadline, char *err)
{
    struct fake *f = b->impl;
    (void)deadline;
    (void)err;
    cr_assert_gt(len, 64 + sizeof(int32_t));
    for (int p = 0; p < b->world; p++) {
        char *slot = (char *)all + (size_t)p * len;
        memcpy(slot, mine, len);
        if (p == b->rank)
            continue;
        if (!f->same_host)
            snprintf(slot, 64, "peer-host-%d", p);
        if (f->counts[p] > 0) {
            int32_t n = f->counts[p];
            memcpy(slot + 64, &n, sizeof(n));
        }
    }
    return PF_OK;
}

static pf_err fake_bcast(struct pf_boot *b, void *buf, size_t len, int root,
                         int64_t deadline, char *err)
{
    (void)deadline;
    (void)err;
    (void)root;
    if (b->rank != 0) {
        /* the id rank 0 would have sent: this test's own, since the
         * double's ranks in several processes meet by it */
        memset(buf, 'x', len);
        snprintf(buf, len, "fake-id-%d", (int)getpid());
    }
    return PF_OK;
}

static pf_err fake_barrier(struct pf_boot *b, int64_t deadline, char *err)
{
    (void)b;
    (void)deadline;
    (void)err;
    return PF_OK;
}

static pf_err fake_poll(struct pf_boot *b, char *err)
{
    struct fake *f = b->impl;
    if (f->poll_ok >= 0 && f->polls++ >= f->poll_ok)
        return pf_fail(err, PF_ERR_LOST, "rank 1 (10.254.0.2) hung up");
    return PF_OK;
}

static void fake_abort(struct pf_boot *b, const char *why)
{
    (void)b;
    (void)why;
}

static void fake_close(struct pf_boot *b) { (void)b; }

static const struct pf_boot_ops fake_ops = {
    fake_allgather, fake_bcast, fake_barrier, fake_poll, fake_abort,
    fake_close,
};

static struct fake fk;
static struct pf_boot boot;
static struct pf_run run;
static char trace_path[PF_PATH_MAX];

/* build/unit_tests -> build/double/libgpu-double.so */
static void use_double(void)
{
    char lib[PF_PATH_MAX + 32];

    pf_test_use_gpu_double(lib, sizeof(lib));
    snprintf(trace_path, sizeof(trace_path), "/tmp/pf-double-trace.%d",
             (int)getpid());
    unlink(trace_path);
    setenv("PF_DOUBLE_TRACE", trace_path, 1);
    unsetenv("NCCL_DEBUG_FILE");
    unsetenv("NCCL_DEBUG");
    unsetenv("NCCL_DEBUG_SUBSYS");
    unsetenv("CUDA_VISIBLE_DEVICES");
    memset(&fk, 0, sizeof(fk));
    fk.poll_ok = -1;
    boot = (struct pf_boot){ .ops = &fake_ops, .rank = 0, .world = 1,
                             .impl = &fk };
    memset(&run, 0, sizeof(run));
    run.cfg.debug_corrupt_rank = -1;
}

static int trace_count(const char *what)
{
    char *text = NULL, err[PF_ERRLEN];
    int n = 0;
    if (pf_read_file(trace_path, 1 << 20, &text, NULL, err) != PF_OK)
        return 0;
    for (char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    free(text);
    return n;
}

static pf_err open_engine(struct pf_engine *e, uint64_t max_count,
                          int64_t ms, char *err)
{
    *e = (struct pf_engine){ .ops = &pf_engine_nccl };
    return pf_test_engine_open(e, &run, &boot, max_count, pf_deadline_in(ms),
                               err);
}

/* open() with 5 s to spare, which must succeed. */
static void open_ok(struct pf_engine *e, uint64_t max_count)
{
    char err[PF_ERRLEN] = "";

    cr_assert_eq(open_engine(e, max_count, 5000, err), PF_OK, "%s", err);
}

/* Fill, then `times` all_reduces with ms to finish them: what run says. */
static pf_err fill_and_run(struct pf_engine *e, uint64_t count, bool in_place,
                           int times, int64_t ms, char *err)
{
    double secs;

    cr_assert_eq(e->ops->fill(e, count, in_place, err), PF_OK, "%s", err);
    return e->ops->run(e, count, in_place, times, &secs, pf_deadline_in(ms),
                       err);
}

/* Fill, `times` all_reduces, check: the wrong elements it counted. */
static long wrong_after(struct pf_engine *e, uint64_t count, bool in_place,
                        int times, double *secs)
{
    char err[PF_ERRLEN] = "";
    long wrong = -1;

    cr_assert_eq(e->ops->fill(e, count, in_place, err), PF_OK, "%s", err);
    cr_assert_eq(e->ops->run(e, count, in_place, times, secs,
                             pf_deadline_in(5000), err), PF_OK, "%s", err);
    cr_assert_eq(e->ops->check(e, count, in_place, &wrong, err), PF_OK);
    return wrong;
}

TestSuite(nccl_engine, .init = use_double, .timeout = 30);

/* ---------------------------------------------------------------- tests */

/* open() refusing to start: the setting or fault that makes it refuse,
 * what it returns, what its message says and what the double saw. */
struct refusal {
    /* Arrays, not pointers: Criterion copies a row into a test process
     * that may have its strings at other addresses. "" = none. */
    char what[64];                    /* the behaviour, named on failure */
    char env[32], value[32];
    int64_t ms;                       /* open's deadline */
    pf_err rc;
    char says[2][32];                 /* in the message */
    char never[32];                   /* never in the message */
    char trace[16];                   /* a line of the double's trace ... */
    int trace_n;                      /* ... seen this often */
};

static struct refusal refusals[] = {
    { "missing library is a clear error", "EFA_PREFLIGHT_NCCL",
      "/nonexistent/libnccl.so.2", 5000, PF_ERR_UNSUPPORTED,
      { "NCCL not found", "/nonexistent/libnccl.so.2" }, "", "", 0 },
    { "missing CUDA runtime is a clear error", "EFA_PREFLIGHT_CUDART",
      "/nonexistent/libcudart.so", 5000, PF_ERR_UNSUPPORTED,
      { "CUDA runtime not found", "" }, "", "", 0 },
    { "version older than 2.18 is refused", "PF_DOUBLE_NCCL_VERSION", "21705",
      5000, PF_ERR_UNSUPPORTED, { "NCCL 2.17.5", ">= 2.18.0" }, "",
      "init rank", 0 },
    { "no visible device is an error", "CUDA_VISIBLE_DEVICES", "", 5000,
      PF_ERR_NOTFOUND, { "no CUDA device visible", "" }, "", "", 0 },
    { "init hang in one process gives no security group hint",
      "PF_DOUBLE_FAULT", "init_hang", 300, PF_ERR_TIMEOUT, { "", "" },
      "security group", "", 0 },
    { "init error is reported and aborted", "PF_DOUBLE_FAULT", "init_error",
      5000, PF_ERR_ENGINE, { "unhandled system error", "" }, "",
      "abort rank", 2 },
};

ParameterizedTestParameters(nccl_engine, open_refuses)
{
    return cr_make_param_array(struct refusal, refusals,
                               sizeof(refusals) / sizeof(refusals[0]));
}

ParameterizedTest(struct refusal *r, nccl_engine, open_refuses)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";

    setenv(r->env, r->value, 1);
    cr_assert_eq(open_engine(&e, 1024, r->ms, err), r->rc, "%s: %s", r->what,
                 err);
    for (int i = 0; i < 2 && r->says[i][0]; i++)
        cr_assert(strstr(err, r->says[i]), "%s: %s", r->what, err);
    if (r->never[0])
        cr_assert_null(strstr(err, r->never), "%s: %s", r->what, err);
    if (r->trace[0])
        cr_assert_eq(trace_count(r->trace), r->trace_n, "%s", r->what);
    cr_assert_null(e.impl, "%s", r->what);
}

Test(nccl_engine, one_process_drives_every_visible_gpu)
{
    struct pf_engine e;

    setenv("PF_DOUBLE_GPUS", "3", 1);
    open_ok(&e, 1024);
    cr_assert_eq(e.nranks, 3);
    cr_assert_eq(e.local_ranks, 3);
    cr_assert_eq(trace_count("init rank"), 3);
    cr_assert_eq(trace_count("split rank"), 3);
    e.ops->close(&e);
    cr_assert_eq(trace_count("destroy rank"), 6);   /* children, parents */
    cr_assert_eq(trace_count("abort rank"), 0);
}

Test(nccl_engine, cuda_visible_devices_is_respected)
{
    struct pf_engine e;

    setenv("PF_DOUBLE_GPUS", "4", 1);
    setenv("CUDA_VISIBLE_DEVICES", "2", 1);
    open_ok(&e, 1024);
    cr_assert_eq(e.local_ranks, 1);
    cr_assert_eq(e.nranks, 1);
    e.ops->close(&e);
}

/* Which GPUs and global ranks this process gets, from the other
 * processes' GPU counts and hosts: the ranks it inits are in the trace. */
struct layout {
    char what[64];                    /* the behaviour, named on failure */
    int world, rank;                  /* this process in the boot */
    int count0;                       /* process 0's GPUs (0: as ours) */
    bool same_host;
    int nranks, local_ranks;
    char trace[2][24];                /* each seen once in the trace */
};

static struct layout layouts[] = {
    /* this process is rank 1 of 2; rank 0 drives 3 GPUs */
    { "global ranks follow the process order", 2, 1, 3, false, 5, 2,
      { "init rank 3 nranks 5", "init rank 4 nranks 5" } },
    /* `local` with 2 ranks: both processes see both GPUs */
    { "processes sharing a host share out its GPUs", 2, 1, 0, true, 2, 1,
      { "init rank 1 nranks 2", "init rank" } },
};

ParameterizedTestParameters(nccl_engine, ranks_by_layout)
{
    return cr_make_param_array(struct layout, layouts,
                               sizeof(layouts) / sizeof(layouts[0]));
}

ParameterizedTest(struct layout *l, nccl_engine, ranks_by_layout)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";

    boot.world = l->world;
    boot.rank = l->rank;
    fk.counts[0] = l->count0;
    fk.same_host = l->same_host;
    cr_assert_eq(open_engine(&e, 1024, 5000, err), PF_OK, "%s: %s", l->what,
                 err);
    cr_assert_eq(e.nranks, l->nranks, "%s", l->what);
    cr_assert_eq(e.local_ranks, l->local_ranks, "%s", l->what);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(trace_count(l->trace[i]), 1, "%s: %s", l->what,
                     l->trace[i]);
    e.ops->close(&e);
}

Test(nccl_engine, more_processes_than_gpus_on_a_host_is_a_usage_error)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";

    boot.world = 3;
    boot.rank = 0;
    fk.same_host = true;
    cr_assert_eq(open_engine(&e, 1024, 5000, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "rank 2 on "), "%s", err);
    cr_assert(strstr(err, "has no GPU of its own"), "%s", err);
    cr_assert_eq(trace_count("init rank"), 0);
}

Test(nccl_engine, sums_are_exact_across_chunks_in_and_out_of_place)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";
    uint64_t count = 31u * 65536u * 2u + 7u;   /* three staging chunks */
    double secs = -1;
    long wrong = -1;

    setenv("PF_DOUBLE_GPUS", "3", 1);
    cr_assert_eq(open_engine(&e, count, 10000, err), PF_OK, "%s", err);
    for (int ip = 0; ip < 2; ip++) {
        wrong = wrong_after(&e, count, ip, 1, &secs);
        cr_assert_geq(secs, 0.0);
        cr_assert_eq(wrong, 0, "in_place=%d: %ld wrong", ip, wrong);
    }
    e.ops->close(&e);
}

Test(nccl_engine, wrong_elements_are_counted_exactly)
{
    struct pf_engine e;
    double secs;

    setenv("PF_DOUBLE_CORRUPT", "1:5", 1);
    open_ok(&e, 4096);
    cr_assert_eq(wrong_after(&e, 4096, false, 1, &secs), 5);
    e.ops->close(&e);
}

Test(nccl_engine, debug_corrupt_rank_spoils_one_element_everywhere)
{
    struct pf_engine e;
    double secs;

    setenv("PF_DOUBLE_GPUS", "3", 1);
    run.cfg.debug_corrupt_rank = 2;
    open_ok(&e, 4096);
    for (int ip = 0; ip < 2; ip++)
        cr_assert_eq(wrong_after(&e, 4096, ip, 1, &secs), 3,   /* one per rank */
                     "in_place=%d", ip);
    e.ops->close(&e);
}

Test(nccl_engine, result_never_written_counts_every_element)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";
    long wrong = -1;

    /* fill poisons recv; checking without a run sees only NaNs */
    open_ok(&e, 1000);
    cr_assert_eq(e.ops->fill(&e, 1000, false, err), PF_OK);
    cr_assert_eq(e.ops->check(&e, 1000, false, &wrong, err), PF_OK);
    cr_assert_eq(wrong, 2000);      /* 1000 per local rank, 2 ranks */
    e.ops->close(&e);
}

Test(nccl_engine, init_that_never_completes_is_aborted_on_time)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";

    setenv("PF_DOUBLE_FAULT", "init_hang", 1);
    int64_t t0 = pf_now_ms();
    cr_assert_eq(open_engine(&e, 1024, 300, err), PF_ERR_TIMEOUT);
    int64_t took = pf_now_ms() - t0;
    cr_assert_geq(took, 300);
    cr_assert_lt(took, 3000, "took %lld ms", (long long)took);
    cr_assert(strstr(err, "NCCL communicator init"), "%s", err);
    cr_assert_eq(trace_count("abort rank"), 2);
    cr_assert_eq(trace_count("destroy rank"), 0);
    cr_assert_null(e.impl);
}

Test(nccl_engine, init_hang_across_processes_names_the_security_group)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";

    /* rank 1 of 2 processes: the rendezvous worked, NCCL never connects */
    boot.world = 2;
    boot.rank = 1;
    fk.counts[0] = 2;
    setenv("PF_DOUBLE_FAULT", "init_hang", 1);
    cr_assert_eq(open_engine(&e, 1024, 300, err), PF_ERR_TIMEOUT);
    cr_assert(strstr(err, "NCCL communicator init: deadline passed"), "%s", err);
    cr_assert(strstr(err, "security group without a rule allowing all traffic"),
              "%s", err);
}

Test(nccl_engine, async_error_mid_sweep_aborts_and_stays_failed)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";
    double secs;

    setenv("PF_DOUBLE_FAULT", "async_error", 1);
    setenv("PF_DOUBLE_FAULT_AT", "3", 1);
    open_ok(&e, 256);
    cr_assert_eq(fill_and_run(&e, 256, false, 3, 5000, err), PF_OK, "%s", err);
    cr_assert_eq(trace_count("abort rank"), 0);
    int64_t t0 = pf_now_ms();
    cr_assert_eq(e.ops->run(&e, 256, false, 3, &secs, pf_deadline_in(5000),
                            err), PF_ERR_ENGINE);
    cr_assert_lt(pf_now_ms() - t0, 2500);      /* not the deadline */
    cr_assert(strstr(err, "remote process exited"), "%s", err);
    cr_assert(strstr(err, "double: injected remote error"), "%s", err);
    cr_assert_eq(trace_count("abort rank"), 4);     /* children, parents */
    cr_assert_eq(e.ops->run(&e, 256, false, 1, &secs, pf_deadline_in(5000),
                            err), PF_ERR_ENGINE);
    cr_assert(strstr(err, "aborted earlier"), "%s", err);
    e.ops->close(&e);
    cr_assert_eq(trace_count("destroy rank"), 0);
}

Test(nccl_engine, collective_that_never_completes_is_aborted_on_time)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";
    double secs;

    setenv("PF_DOUBLE_FAULT", "hang", 1);
    open_ok(&e, 256);
    cr_assert_eq(e.ops->fill(&e, 256, true, err), PF_OK);
    int64_t t0 = pf_now_ms();
    cr_assert_eq(e.ops->run(&e, 256, true, 5, &secs, pf_deadline_in(250),
                            err), PF_ERR_TIMEOUT);
    int64_t took = pf_now_ms() - t0;
    cr_assert_geq(took, 250);
    cr_assert_lt(took, 3000, "took %lld ms", (long long)took);
    cr_assert(strstr(err, "all_reduce of 1024 bytes"), "%s", err);
    cr_assert_eq(trace_count("abort rank"), 4);
    e.ops->close(&e);
}

Test(nccl_engine, lost_peer_aborts_without_waiting_for_the_deadline)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";
    double secs;

    setenv("PF_DOUBLE_FAULT", "hang", 1);
    open_ok(&e, 256);
    cr_assert_eq(e.ops->fill(&e, 256, false, err), PF_OK);
    fk.poll_ok = 2;
    int64_t t0 = pf_now_ms();
    cr_assert_eq(e.ops->run(&e, 256, false, 1, &secs, pf_deadline_in(20000),
                            err), PF_ERR_LOST);
    cr_assert_lt(pf_now_ms() - t0, 5000);      /* not the 20 s deadline */
    cr_assert(strstr(err, "rank 1 (10.254.0.2) hung up"), "%s", err);
    cr_assert_eq(trace_count("abort rank"), 4);
    e.ops->close(&e);
}

Test(nccl_engine, peers_in_another_process_that_never_come_time_out)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";

    /* ranks 2-3 of 4: the double never sees ranks 0-1 launch */
    boot.world = 2;
    boot.rank = 1;
    fk.counts[0] = 2;
    open_ok(&e, 64);
    cr_assert_eq(fill_and_run(&e, 64, false, 2, 200, err), PF_ERR_TIMEOUT);
    cr_assert(strstr(err, "ranks 2-3 of 4"), "%s", err);
    cr_assert_eq(trace_count("abort rank"), 4);
    e.ops->close(&e);
}

/* Each forked process drives 2 GPUs of its own (distinct PCI bus ids), so
 * every all_reduce spans processes and meets in the double's shared
 * memory. */
struct xproc {
    long wrong[4];
    int nranks[4], local[4];
    pf_err rc[4];
    char err[4][PF_ERRLEN];
};

static int xproc_rank(struct pf_boot *b, void *arg)
{
    struct xproc *x = arg;
    struct pf_engine e = { .ops = &pf_engine_nccl };
    struct pf_run *r = calloc(1, sizeof(*r));
    char vis[32], *err = x->err[b->rank];
    uint64_t count = 31u * 1024u + 5u;
    double secs;
    long w, total = 0;
    pf_err rc;

    snprintf(vis, sizeof(vis), "%d,%d", 2 * b->rank, 2 * b->rank + 1);
    setenv("CUDA_VISIBLE_DEVICES", vis, 1);
    r->cfg.debug_corrupt_rank = -1;
    rc = pf_test_engine_open(&e, r, b, count, pf_deadline_in(10000), err);
    x->nranks[b->rank] = e.nranks;
    x->local[b->rank] = e.local_ranks;
    for (int ip = 0; rc == PF_OK && ip < 2; ip++) {
        /* several in flight, then a fresh one to check */
        rc = e.ops->fill(&e, count, ip, err);
        if (rc == PF_OK)
            rc = e.ops->run(&e, count, ip, 5, &secs, pf_deadline_in(10000),
                            err);
        if (rc == PF_OK)
            rc = e.ops->fill(&e, count, ip, err);
        if (rc == PF_OK)
            rc = e.ops->run(&e, count, ip, 1, &secs, pf_deadline_in(10000),
                            err);
        if (rc == PF_OK)
            rc = e.ops->check(&e, count, ip, &w, err);
        total += rc == PF_OK ? w : 0;
    }
    /* Leave together: the fork boot has no orderly goodbye, and a peer
     * that exits while another still polls reads as lost. */
    if (rc == PF_OK)
        rc = pf_boot_barrier(b, pf_deadline_in(10000), err);
    if (e.impl)
        e.ops->close(&e);
    x->rc[b->rank] = rc;
    x->wrong[b->rank] = total;
    free(r);
    return rc == PF_OK ? 0 : 1;
}

/* Three processes of 2 GPUs each run xproc_rank: every one exits 0. */
static struct xproc *three_processes(void)
{
    struct xproc *x = pf_test_shared(sizeof(*x));
    int codes[3];

    setenv("PF_DOUBLE_GPUS", "6", 1);
    cr_assert_eq(pf_test_fork_ranks(3, xproc_rank, x, 30, codes), 0,
                 "rank 0: %s / rank 1: %s / rank 2: %s", x->err[0], x->err[1],
                 x->err[2]);
    return x;
}

Test(nccl_engine, ranks_in_several_processes_meet_and_sum_exactly)
{
    struct xproc *x = three_processes();

    for (int r = 0; r < 3; r++) {
        cr_assert_eq(x->nranks[r], 6);
        cr_assert_eq(x->local[r], 2);
        cr_assert_eq(x->wrong[r], 0, "process %d: %ld wrong", r, x->wrong[r]);
    }
}

Test(nccl_engine, a_wrong_rank_in_another_process_is_counted_there)
{
    struct xproc *x;

    setenv("PF_DOUBLE_CORRUPT", "3:2", 1);      /* process 1's second GPU */
    x = three_processes();
    cr_assert_eq(x->wrong[0], 0);
    cr_assert_eq(x->wrong[1], 4);               /* 2 x out of / in place */
    cr_assert_eq(x->wrong[2], 0);
}

Test(nccl_engine, collectives_run_on_a_blocking_split_child)
{
    struct pf_engine e;
    double secs;

    unsetenv("NCCL_RUNTIME_CONNECT");
    open_ok(&e, 512);
    cr_assert_str_eq(getenv("NCCL_RUNTIME_CONNECT"), "0");
    cr_assert_eq(trace_count("split rank"), 2);
    cr_assert_eq(wrong_after(&e, 512, false, 3, &secs), 0);
    e.ops->close(&e);
    cr_assert_null(getenv("NCCL_RUNTIME_CONNECT"));
    cr_assert_eq(trace_count("destroy rank"), 4);
}

Test(nccl_engine, users_runtime_connect_is_left_alone)
{
    struct pf_engine e;

    setenv("NCCL_RUNTIME_CONNECT", "1", 1);
    open_ok(&e, 64);
    e.ops->close(&e);
    cr_assert_str_eq(getenv("NCCL_RUNTIME_CONNECT"), "1");
}

Test(nccl_engine, split_that_never_completes_is_aborted_on_time)
{
    struct pf_engine e;
    char err[PF_ERRLEN] = "";

    setenv("PF_DOUBLE_FAULT", "split_hang", 1);
    int64_t t0 = pf_now_ms();
    cr_assert_eq(open_engine(&e, 64, 300, err), PF_ERR_TIMEOUT);
    cr_assert_lt(pf_now_ms() - t0, 3000);
    cr_assert(strstr(err, "NCCL communicator split"), "%s", err);
    cr_assert_eq(trace_count("abort rank"), 2);     /* the parents */
    cr_assert_null(e.impl);
}

Test(nccl_engine, failed_split_falls_back_to_the_nonblocking_comm)
{
    struct pf_engine e;
    double secs;

    setenv("PF_DOUBLE_FAULT", "split_error", 1);
    open_ok(&e, 512);
    cr_assert_eq(trace_count("split rank"), 0);
    cr_assert_eq(wrong_after(&e, 512, false, 3, &secs), 0);
    e.ops->close(&e);
    cr_assert_eq(trace_count("destroy rank"), 2);
    cr_assert_eq(trace_count("abort rank"), 0);
}

Test(nccl_engine, transport_facts_come_back_from_close)
{
    struct pf_engine e;

    setenv("PF_DOUBLE_TRANSPORT", "NET/Socket/0", 1);
    open_ok(&e, 64);
    cr_assert_str_eq(getenv("NCCL_DEBUG"), "INFO");
    cr_assert_str_eq(getenv("NCCL_DEBUG_SUBSYS"), "INIT,NET");
    char path[PF_PATH_MAX];
    snprintf(path, sizeof(path), "%s", getenv("NCCL_DEBUG_FILE"));
    e.ops->close(&e);
    cr_assert_str_eq(e.facts.transport, "NET/Socket");
    cr_assert_str_eq(e.facts.nccl_network, "Socket");
    cr_assert(e.facts.inter_node_socket);
    cr_assert_not(e.facts.net_plugin_loaded);
    cr_assert_not(e.facts.net_gdr);
    /* the private log is gone and the environment restored */
    cr_assert_neq(access(path, F_OK), 0);
    cr_assert_null(getenv("NCCL_DEBUG_FILE"));
    cr_assert_null(getenv("NCCL_DEBUG"));
    cr_assert_null(getenv("NCCL_DEBUG_SUBSYS"));
}

Test(nccl_engine, users_debug_file_is_read_and_kept)
{
    struct pf_engine e;
    char mine[PF_PATH_MAX];

    setenv("NCCL_DEBUG_FILE", "/tmp/pf-user-nccl.%p.log", 1);
    setenv("NCCL_DEBUG", "WARN", 1);
    setenv("PF_DOUBLE_PLUGIN", "loaded", 1);
    setenv("PF_DOUBLE_NETWORK", "AWS Libfabric", 1);
    setenv("PF_DOUBLE_TRANSPORT", "NET/AWS Libfabric/0/GDRDMA", 1);
    snprintf(mine, sizeof(mine), "/tmp/pf-user-nccl.%d.log", (int)getpid());
    open_ok(&e, 64);
    cr_assert_str_eq(getenv("NCCL_DEBUG"), "INFO");
    e.ops->close(&e);
    cr_assert_eq(access(mine, R_OK), 0, "user's log %s removed", mine);
    unlink(mine);
    cr_assert_str_eq(getenv("NCCL_DEBUG_FILE"), "/tmp/pf-user-nccl.%p.log");
    cr_assert_str_eq(getenv("NCCL_DEBUG"), "WARN");
    cr_assert_str_eq(e.facts.transport, "NET/AWS Libfabric/GDRDMA");
    cr_assert_str_eq(e.facts.nccl_network, "AWS Libfabric");
    cr_assert(e.facts.net_plugin_loaded);
    cr_assert(e.facts.net_gdr);
    cr_assert_not(e.facts.inter_node_socket);
}
