/* The host engine's sums (collective/host/reduce.c) against a scalar loop:
 * odd lengths and offsets (the vector body and its tail), and one buffer
 * summed by several threads, each its part, as rail threads do. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "collective/host/reduce.h"

static float val(uint64_t i, int k)
{
    return (float)((i * 7 + (uint64_t)k * 13) % 31) - 15.0f + 0.25f * (float)k;
}

Test(host_reduce, add3_matches_scalar_on_odd_sizes_and_offsets)
{
    static const uint64_t lens[] = { 0, 1, 3, 15, 16, 17, 31, 33, 1000, 4099 };
    float *a = malloc(5000 * sizeof(float)), *b = malloc(5000 * sizeof(float));
    float *d = malloc(5000 * sizeof(float));

    cr_assert(a && b && d);
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
        for (uint64_t off = 0; off < 5; off++) {
            uint64_t n = lens[l];
            for (uint64_t i = 0; i < 5000; i++) {
                a[i] = val(i, 1);
                b[i] = val(i, 2);
                d[i] = -1e9f;                       /* poison */
            }
            pf_reduce_add3(d + off, a + off, b + off, n);
            for (uint64_t i = 0; i < 5000; i++) {
                float want = i >= off && i < off + n ? a[i] + b[i] : -1e9f;
                cr_assert_eq(d[i], want, "n %llu off %llu i %llu: %g != %g",
                             (unsigned long long)n, (unsigned long long)off,
                             (unsigned long long)i, (double)d[i],
                             (double)want);
            }
        }
    free(a);
    free(b);
    free(d);
}

Test(host_reduce, add_in_place_matches_scalar_on_odd_sizes)
{
    static const uint64_t lens[] = { 1, 7, 16, 29, 257, 4097 };
    float *d = malloc(4200 * sizeof(float)), *in = malloc(4200 * sizeof(float));

    cr_assert(d && in);
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        uint64_t n = lens[l];
        for (uint64_t i = 0; i < 4200; i++) {
            d[i] = val(i, 3);
            in[i] = val(i, 4);
        }
        pf_reduce_add(d + 1, in + 1, n);
        for (uint64_t i = 0; i < 4200; i++) {
            float want = val(i, 3) + (i >= 1 && i <= n ? val(i, 4) : 0.0f);
            cr_assert_eq(d[i], want, "n %llu i %llu", (unsigned long long)n,
                         (unsigned long long)i);
        }
    }
    free(d);
    free(in);
}

Test(host_reduce, parts_cover_exactly_on_cache_line_boundaries)
{
    static const uint64_t lens[] = { 0, 1, 15, 16, 17, 100, 1023, 1 << 20 };
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
        for (int parts = 1; parts <= 9; parts++) {
            uint64_t next = 0, off, len;
            for (int k = 0; k < parts; k++) {
                pf_reduce_part(lens[l], parts, k, &off, &len);
                cr_assert_eq(off, next, "n %llu parts %d k %d",
                             (unsigned long long)lens[l], parts, k);
                cr_assert(len == 0 || off % 16 == 0);
                next = off + len;
            }
            cr_assert_eq(next, lens[l]);
        }
}

struct part {
    pthread_t t;
    float *d;
    const float *a, *b;
    uint64_t n;
    int parts, k;
};

static void *sum_part(void *arg)
{
    struct part *p = arg;
    uint64_t off, len;

    pf_reduce_part(p->n, p->parts, p->k, &off, &len);
    pf_reduce_add3(p->d + off, p->a + off, p->b + off, len);
    return NULL;
}

Test(host_reduce, threaded_sum_matches_scalar_on_odd_sizes)
{
    static const uint64_t lens[] = { 5, 127, 1001, 65537, (1 << 20) + 3 };
    static const int threads[] = { 1, 2, 3, 4, 7, 8 };

    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
        for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
            uint64_t n = lens[l];
            int nt = threads[t];
            float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
            float *d = malloc(n * sizeof(float));
            struct part p[8];

            cr_assert(a && b && d);
            for (uint64_t i = 0; i < n; i++) {
                a[i] = val(i, 5);
                b[i] = val(i, 6);
                d[i] = -1e9f;
            }
            for (int k = 0; k < nt; k++) {
                p[k] = (struct part){ .d = d, .a = a, .b = b, .n = n,
                                      .parts = nt, .k = k };
                cr_assert_eq(pthread_create(&p[k].t, NULL, sum_part, &p[k]), 0);
            }
            for (int k = 0; k < nt; k++)
                pthread_join(p[k].t, NULL);
            for (uint64_t i = 0; i < n; i++)
                cr_assert_eq(d[i], a[i] + b[i], "n %llu threads %d i %llu",
                             (unsigned long long)n, nt, (unsigned long long)i);
            free(a);
            free(b);
            free(d);
        }
}
