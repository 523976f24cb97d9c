/* The host engine's sum alone (agent/collective/host/reduce.c): T threads,
 * each summing its own arrays as a rail thread sums its own chunks, for T
 * = 1, 2, 4, 8 (or the counts given). Two footprints per thread: 1 MiB
 * arrays (a chunk, cache-resident, what a rail thread sums right after
 * the socket or NIC wrote it) and 64 MiB arrays (memory-bound). GB/s
 * counts the summed vector (n x 4 bytes per pass, out of place d = a + b;
 * memory traffic is three times that); per sweep the median of 5 timed
 * rounds, and the table the median of REPEAT (default 3) sweeps. Thread
 * k is pinned to the k-th CPU in an order that takes one CPU of each
 * physical core before any core's second hyperthread, so T threads are
 * T cores while T <= cores.
 *
 *   make build/bench/host_reduce && [REPEAT=N] build/bench/host_reduce [T ...]
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collective/host/reduce.h"

#define ROUNDS 5

struct worker {
    pthread_t t;
    int cpu;                          /* -1: not pinned */
    pthread_barrier_t *bar;
    size_t n;                         /* elements per array */
    int passes;
    float *a, *b, *d;
    int ok;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *run(void *arg)
{
    struct worker *w = arg;

    if (w->cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(w->cpu, &one);
        pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    }
    /* First touch by the thread that sums: its memory, its node. */
    w->a = aligned_alloc(4096, w->n * sizeof(float));
    w->b = aligned_alloc(4096, w->n * sizeof(float));
    w->d = aligned_alloc(4096, w->n * sizeof(float));
    w->ok = w->a && w->b && w->d;
    if (w->ok)
        for (size_t i = 0; i < w->n; i++) {
            w->a[i] = (float)(i % 97);
            w->b[i] = (float)(i % 89) * 0.5f;
            w->d[i] = 0;
        }
    for (int r = 0; r < ROUNDS + 1; r++) {    /* round 0 warms up */
        pthread_barrier_wait(w->bar);
        for (int p = 0; p < w->passes && w->ok; p++)
            pf_reduce_add3(w->d, w->a, w->b, w->n);
        pthread_barrier_wait(w->bar);
    }
    if (w->ok)    /* the sum was done, and right */
        for (size_t i = 0; i < w->n; i += 4093)
            w->ok &= w->d[i] == w->a[i] + w->b[i];
    free(w->a);
    free(w->b);
    free(w->d);
    return NULL;
}

/* The CPUs this process may use, one per physical core first (by
 * topology/core_id and physical_package_id), then the rest. */
static int cpu_order(int *out, int max)
{
    cpu_set_t set;
    long key[CPU_SETSIZE];
    int n = 0, cpus[CPU_SETSIZE], taken[CPU_SETSIZE] = { 0 };

    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        char path[128];
        long core = c, pkg = 0;
        FILE *f;
        if (!CPU_ISSET(c, &set))
            continue;
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%ld", &core) != 1)
                core = c;
            fclose(f);
        }
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%ld", &pkg) != 1)
                pkg = 0;
            fclose(f);
        }
        key[n] = pkg * 100000 + core;
        cpus[n++] = c;
    }
    int m = 0;
    while (m < n && m < max) {        /* each round: one CPU per core */
        static long used[CPU_SETSIZE];
        int nu = 0;
        for (int i = 0; i < n && m < max; i++) {
            int dup = 0;
            if (taken[i])
                continue;
            for (int j = 0; j < nu && !dup; j++)
                dup = used[j] == key[i];
            if (dup)
                continue;
            used[nu++] = key[i];
            taken[i] = 1;
            out[m++] = cpus[i];
        }
    }
    return m;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* GB/s of all T threads together; -1 on failure. */
static double measure(int nt, size_t bytes, int passes)
{
    struct worker *w = calloc((size_t)nt, sizeof(*w));
    static int order[CPU_SETSIZE];
    int ncpu = cpu_order(order, CPU_SETSIZE);
    pthread_barrier_t bar;
    double t[ROUNDS];
    int ok = 1;

    if (!w || pthread_barrier_init(&bar, NULL, (unsigned)nt + 1) != 0)
        return -1;
    for (int k = 0; k < nt; k++) {
        w[k].bar = &bar;
        w[k].cpu = ncpu > 0 ? order[k % ncpu] : -1;
        w[k].n = bytes / sizeof(float);
        w[k].passes = passes;
        if (pthread_create(&w[k].t, NULL, run, &w[k]) != 0)
            return -1;
    }
    for (int r = 0; r < ROUNDS + 1; r++) {
        double t0;
        pthread_barrier_wait(&bar);
        t0 = now_s();
        pthread_barrier_wait(&bar);
        if (r > 0)
            t[r - 1] = now_s() - t0;
    }
    for (int k = 0; k < nt; k++) {
        pthread_join(w[k].t, NULL);
        ok &= w[k].ok;
    }
    pthread_barrier_destroy(&bar);
    free(w);
    if (!ok)
        return -1;
    qsort(t, ROUNDS, sizeof(t[0]), cmp);
    return (double)nt * (double)bytes * passes / t[ROUNDS / 2] / 1e9;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int counts[16] = { 1, 2, 4, 8 }, nc = 4;
    const char *rep_env = getenv("REPEAT");
    int repeat = rep_env ? atoi(rep_env) : 3;
    static double g[16][2][64];       /* count, footprint, sweep */
    double base[2];

    if (repeat < 1 || repeat > 64) {
        fprintf(stderr, "host_reduce: REPEAT '%s' is not 1..64\n", rep_env);
        return 2;
    }
    if (argc > 1) {
        nc = 0;
        for (int i = 1; i < argc && nc < 16; i++) {
            counts[nc] = atoi(argv[i]);
            if (counts[nc] < 1 || counts[nc] > 1024) {
                fprintf(stderr, "host_reduce: thread count '%s' is not "
                        "1..1024\n", argv[i]);
                return 2;
            }
            nc++;
        }
    }
    /* Whole sweeps, repeated: a VM's speed drifts (turbo, neighbours),
     * and alternating the counts spreads the drift over all of them. */
    for (int rep = 0; rep < repeat; rep++)
        for (int i = 0; i < nc; i++) {
            g[i][0][rep] = measure(counts[i], 1u << 20, 1000);
            g[i][1][rep] = measure(counts[i], 64u << 20, 16);
            if (g[i][0][rep] < 0 || g[i][1][rep] < 0) {
                fprintf(stderr, "host_reduce: %d threads: failed or wrong "
                        "sums\n", counts[i]);
                return 1;
            }
        }
    printf("| threads | 1 MiB arrays: GB/s | per thread | x 1 thread | "
           "64 MiB arrays: GB/s | per thread | x 1 thread |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    base[0] = median(g[0][0], repeat);
    base[1] = median(g[0][1], repeat);
    for (int i = 0; i < nc; i++) {
        int nt = counts[i];
        double m0 = median(g[i][0], repeat), m1 = median(g[i][1], repeat);

        printf("| %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f |\n", nt, m0,
               m0 / nt, m0 / base[0], m1, m1 / nt, m1 / base[1]);
    }
    printf("\nmedians of %d sweeps; the first count is the base\n", repeat);
    return 0;
}
