/* The fleet baseline as data (baseline/baseline.h): folding keeps the last
 * PF_BASE_K runs and the median, the summary stays small whatever the
 * fleet folds into it (what a pair is held to: tests/unit/judge/
 * test_links.c), and a --baseline file is parsed strictly. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "baseline/baseline.h"
#include "baseline/configmap.h"

#define GIB (1ull << 30)

static struct pf_base_obs pair(double gbps)
{
    struct pf_base_obs o = { .nodes = 2, .bytes = GIB, .gbps = gbps };
    snprintf(o.type, sizeof(o.type), "p5.48xlarge");
    snprintf(o.engine, sizeof(o.engine), "nccl");
    snprintf(o.kind, sizeof(o.kind), "pair");
    return o;
}

static void fold(struct pf_baseline *b, double gbps)
{
    struct pf_base_obs o = pair(gbps);
    char err[PF_ERRLEN];
    cr_assert_eq(pf_base_fold(b, &o, "2026-11-28T12:00:00Z", err), PF_OK,
                 "%s", err);
}

Test(baseline, keeps_the_last_k_runs_and_their_median)
{
    struct pf_baseline b = { 0 };
    const struct pf_base_entry *e;

    for (int i = 1; i <= 20; i++)
        fold(&b, i);
    cr_assert_eq(b.n, 1);
    e = &b.e[0];
    cr_assert_eq(e->n, PF_BASE_K);
    cr_assert_eq(e->runs, 20);
    cr_assert_float_eq(e->v[0], 5, 1e-12);          /* 1..4 fell out */
    cr_assert_float_eq(e->v[PF_BASE_K - 1], 20, 1e-12);
    cr_assert_float_eq(pf_base_median(e), 12.5, 1e-12);  /* 5..20 */
    pf_base_free(&b);
}

/* One degraded node hardly moves the median; a fleet-wide change (a new
 * driver) moves it within K runs. */
Test(baseline, median_is_robust_and_follows_a_shift)
{
    struct pf_baseline b = { 0 };

    for (int i = 0; i < 15; i++)
        fold(&b, 400 + i % 3);
    fold(&b, 10);                                    /* one broken run */
    cr_assert_geq(pf_base_median(&b.e[0]), 400, "%f",
                        pf_base_median(&b.e[0]));
    for (int i = 0; i < 9; i++)
        fold(&b, 300);
    cr_assert_float_eq(pf_base_median(&b.e[0]), 300, 1e-9);
    pf_base_free(&b);
}

/* 1000 nodes' runs folded in (pairs and rings of every bucket up to 1024
 * nodes): one key per (type, kind, bucket, size), never one per node, and
 * each key's ConfigMap value well under 4 KiB. */
Test(baseline, stays_small_with_1000_nodes_folded_in)
{
    struct pf_baseline b = { 0 };
    char err[PF_ERRLEN];
    cJSON *data;
    const cJSON *f;
    size_t total = 0;

    for (int node = 0; node < 1000; node++) {
        struct pf_base_obs p = pair(380 + node % 97), r = pair(200 + node % 13);
        snprintf(r.kind, sizeof(r.kind), "ring");
        r.nodes = pf_base_bucket(2 + node);
        cr_assert_eq(pf_base_fold(&b, &p, "2026-11-28T12:00:00Z", err), PF_OK);
        cr_assert_eq(pf_base_fold(&b, &r, "2026-11-28T12:00:00Z", err), PF_OK);
    }
    /* the pair key and ring buckets 2..1024: 1 + 10 */
    cr_assert_eq(b.n, 11, "%d keys", b.n);
    data = pf_base_cm_data(&b);
    cr_assert_not_null(data);
    cJSON_ArrayForEach(f, data) {
        size_t len = strlen(f->valuestring) + strlen(f->string);
        cr_assert_lt(len, 4096, "%s: %zu bytes", f->string, len);
        total += len;
    }
    cr_assert_lt(total, 11 * 1024, "%zu bytes in all", total);
    cJSON_Delete(data);
    cr_assert_eq(pf_base_find(&b, "p5.48xlarge", "nccl", "pair", 2, GIB)->runs,
                 1000);
    pf_base_free(&b);
}

Test(baseline, buckets_and_keys)
{
    char key[256];

    cr_assert_eq(pf_base_bucket(2), 2);
    cr_assert_eq(pf_base_bucket(3), 4);
    cr_assert_eq(pf_base_bucket(60), 64);
    cr_assert_eq(pf_base_bucket(64), 64);
    cr_assert_eq(pf_base_bucket(1000), 1024);
    pf_base_key("p5.48xlarge", "nccl", "pair", 2, GIB, key, sizeof(key));
    cr_assert_str_eq(key, "p5.48xlarge.nccl.pair.n2.1073741824");
    pf_base_key("hpc7a.*", "host", "ring", 8, 4096, key, sizeof(key));
    cr_assert_str_eq(key, "hpc7a.-.host.ring.n8.4096");
}

Test(baseline, json_round_trips)
{
    struct pf_baseline a = { 0 }, b = { 0 };
    char err[PF_ERRLEN] = "", *text;
    cJSON *j;

    for (int i = 0; i < 4; i++)
        fold(&a, 100.125 + i);
    j = pf_base_json(&a);
    text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    cr_assert_eq(pf_base_parse("x.json", text, strlen(text), &b, err), PF_OK,
                 "%s", err);
    cr_assert_eq(b.n, 1);
    cr_assert_eq(b.e[0].n, 4);
    cr_assert_eq(b.e[0].runs, 4);
    cr_assert_float_eq(pf_base_median(&b.e[0]), pf_base_median(&a.e[0]),
                       1e-9);
    cr_assert_str_eq(b.e[0].updated, "2026-11-28T12:00:00Z");
    cJSON_free(text);
    pf_base_free(&a);
    pf_base_free(&b);
}

/* Bad files: exit 2 naming the file and the field. */
Test(baseline, bad_files_name_the_file_and_field)
{
    static const struct { const char *text, *want; } bad[] = {
        { "[]", "an object" },
        { "{\"version\":2,\"entries\":[]}", "'version'" },
        { "{\"version\":1}", "'entries'" },
        { "{\"version\":1,\"entries\":[],\"x\":1}", "'x'" },
        { "{\"version\":1,\"entries\":[{\"type\":\"p5.48xlarge\","
          "\"engine\":\"nccl\",\"kind\":\"pair\",\"nodes\":2,\"bytes\":1,"
          "\"values\":[1,-2],\"runs\":2}]}", "entries[0]: field 'values'" },
        { "{\"version\":1,\"entries\":[{\"type\":\"p5.48xlarge\","
          "\"engine\":\"gpu\",\"kind\":\"pair\",\"nodes\":2,\"bytes\":1,"
          "\"values\":[],\"runs\":0}]}", "field 'engine'" },
        { "{\"version\":1,\"entries\":[{\"type\":\"p5.48xlarge\","
          "\"engine\":\"nccl\",\"kind\":\"ring\",\"nodes\":6,\"bytes\":1,"
          "\"values\":[],\"runs\":0}]}", "field 'nodes'" },
        { "{\"version\":1,\"entries\":[{\"type\":\"p5.48xlarge\","
          "\"engine\":\"nccl\",\"kind\":\"pair\",\"nodes\":2,\"bytes\":1,"
          "\"values\":[1,2],\"runs\":1}]}", "field 'runs'" },
        { "{\"version\":1,\"entries\":[{\"type\":\"p5.48xlarge\","
          "\"engine\":\"nccl\",\"kind\":\"pair\",\"nodes\":2,\"bytes\":1,"
          "\"values\":[],\"runs\":0,\"color\":1}]}", "field 'color'" },
        { "{\"version\":1,\"entries\":[{\"type\":\"p5.48xlarge\","
          "\"engine\":\"nccl\",\"kind\":\"pair\",\"nodes\":2,\"bytes\":1,"
          "\"values\":[],\"runs\":0},{\"type\":\"p5.48xlarge\","
          "\"engine\":\"nccl\",\"kind\":\"pair\",\"nodes\":2,\"bytes\":1,"
          "\"values\":[],\"runs\":0}]}", "entries[1]: the same key" },
        { "{\"version\":1,", "not JSON" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct pf_baseline b = { 0 };
        char err[PF_ERRLEN] = "";
        cr_assert_eq(pf_base_parse("f.json", bad[i].text, strlen(bad[i].text),
                                   &b, err), PF_ERR_USAGE, "%s", bad[i].text);
        cr_assert(strstr(err, "f.json") && strstr(err, bad[i].want),
                  "%s: %s", bad[i].text, err);
        pf_base_free(&b);
    }
}

/* A ConfigMap key that does not parse is left out, the others kept. */
Test(baseline, configmap_data_keeps_the_good_keys)
{
    struct pf_baseline a = { 0 }, b = { 0 };
    cJSON *data;

    fold(&a, 42);
    data = pf_base_cm_data(&a);
    cJSON_AddStringToObject(data, "junk", "{\"type\":1}");
    cJSON_AddStringToObject(data, "junk2", "not json");
    pf_base_cm_parse_data(data, "ConfigMap t/t", &b);
    cr_assert_eq(b.n, 1);
    cr_assert_float_eq(b.e[0].v[0], 42, 1e-9);
    cJSON_Delete(data);
    pf_base_free(&a);
    pf_base_free(&b);
}
