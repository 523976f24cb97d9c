/* Catalog: the embedded file, lookups, floors and overrides. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "coll_fixture.h"
#include "collective/collective.h"
#include "collective/sweep.h"
#include "config/catalog.h"
#include "config/config.h"
#include "judge/curves.h"
#include "judge/floor.h"
#include "judge/judge.h"
#include "verdict/verdict.h"

static struct pf_catalog cat;

static void load_embedded(void)
{
    char err[PF_ERRLEN];
    cr_assert_eq(pf_catalog_load(&cat, NULL, err), PF_OK, "%s", err);
}

static void unload(void) { pf_catalog_free(&cat); }

TestSuite(catalog, .init = load_embedded, .fini = unload);

Test(catalog, embedded_has_every_facts_type)
{
    static const struct { const char *type; int efa, accel; } want[] = {
        { "p3dn.24xlarge", 1, 8 }, { "p4d.24xlarge", 4, 8 },
        { "p4de.24xlarge", 4, 8 }, { "p5.48xlarge", 32, 8 },
        { "p5e.48xlarge", 32, 8 }, { "p5en.48xlarge", 16, 8 },
        { "p6-b200.48xlarge", 8, 8 }, { "p6-b300.48xlarge", 16, 8 },
        { "g5.48xlarge", 1, 8 }, { "g6e.48xlarge", 4, 8 },
        { "g6e.24xlarge", 2, 4 }, { "trn1.32xlarge", 8, 16 },
        { "trn1n.32xlarge", 16, 16 }, { "trn2.48xlarge", 16, 16 },
        { "hpc7a.96xlarge", 2, 0 }, { "c5n.18xlarge", 1, 0 },
        { "hpc6a.48xlarge", 1, 0 },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct pf_instance *it = pf_catalog_find(&cat, want[i].type);
        cr_assert_not_null(it, "%s missing", want[i].type);
        cr_assert_eq(it->efa_count, want[i].efa, "%s", want[i].type);
        cr_assert_eq(it->accel_count, want[i].accel, "%s", want[i].type);
    }
}

Test(catalog, quirks_and_unverified_markers)
{
    cr_assert(pf_catalog_find(&cat, "p5en.48xlarge")->recount_efa);
    cr_assert(pf_catalog_find(&cat, "p6-b200.48xlarge")->ignore_non_efa);
    cr_assert(pf_catalog_find(&cat, "trn1.32xlarge")->no_nccl);
    cr_assert_not(pf_catalog_find(&cat, "p6-b300.48xlarge")->verified);
    cr_assert_not(pf_catalog_find(&cat, "hpc7a.12xlarge")->verified);
    cr_assert_not(pf_catalog_find(&cat, "g6e.24xlarge")->verified);
    cr_assert(pf_catalog_find(&cat, "p5.48xlarge")->verified);
    cr_assert(pf_catalog_find(&cat, "p4d.24xlarge")->gdr_required);
    cr_assert_not(pf_catalog_find(&cat, "g5.48xlarge")->gdr_required);
}

Test(catalog, hyperpod_prefix_and_unknown)
{
    cr_assert_eq(pf_catalog_find(&cat, "ml.p5.48xlarge"),
                 pf_catalog_find(&cat, "p5.48xlarge"));
    cr_assert_null(pf_catalog_find(&cat, "m5.large"));
    cr_assert_null(pf_catalog_find(&cat, "hpc7"));
    cr_assert_null(pf_catalog_find(&cat, ""));
}

static double floor_gbps(const struct pf_instance *it, int nodes)
{
    struct pf_floor f;
    return pf_instance_floor(it, nodes, &f) ? f.busbw_gbps : 0;
}

static struct pf_floor floor_at(const struct pf_instance *it, int nodes)
{
    struct pf_floor f;
    cr_assert(pf_instance_floor(it, nodes, &f), "%s at %d nodes: no floor",
              it ? it->name : "NULL", nodes);
    return f;
}

/* Lays a --catalog FILE over the embedded catalog; the text must parse. */
static void override(const char *text)
{
    char err[PF_ERRLEN];

    cr_assert_eq(pf_catalog_parse(&cat, "o.yaml", text, strlen(text), err),
                 PF_OK, "%s", err);
}

/* The step rule held 300 GB/s (the 2-node floor) at 8, 128 and 1000 nodes,
 * where healthy p5 fabrics give ~270 and ~156: every large job failed. */
Test(catalog, floors_by_node_count)
{
    static const struct { const char *type; int nodes; double want; } cases[] = {
        { "p5.48xlarge", 1, 400 },          /* NVLink, 1 only */
        { "p5.48xlarge", 2, 250 }, { "p5.48xlarge", 8, 200 },
        { "p5.48xlarge", 32, 150 }, { "p5.48xlarge", 128, 110 },
        { "p5.48xlarge", 1024, 50 }, { "p5.48xlarge", 100000, 50 },
        { "p6-b200.48xlarge", 1, 0 },
        { NULL, 2, 0 },                     /* no instance */
        { "p5.48xlarge", 0, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *type = cases[i].type;
        const struct pf_instance *it = type ? pf_catalog_find(&cat, type) : NULL;

        cr_assert_float_eq(floor_gbps(it, cases[i].nodes), cases[i].want, 1e-9,
                           "case %s at %d nodes", type ? type : "no instance",
                           cases[i].nodes);
    }
}

/* The public healthy figures pass every curve with margin (FACTS.md): a
 * floor catches a broken fabric, it never ranks healthy ones. */
Test(catalog, public_healthy_figures_pass_with_margin)
{
    static const struct { const char *type; int nodes; double healthy; } pub[] = {
        { "p5.48xlarge", 2, 340 }, { "p5.48xlarge", 8, 270 },
        { "p5.48xlarge", 125, 140 },            /* low end of 140-180 */
        { "p5e.48xlarge", 8, 270 }, { "p5en.48xlarge", 125, 140 },
        { "p6-b200.48xlarge", 8, 270 },
        { "p4d.24xlarge", 2, 57.2 }, { "p4d.24xlarge", 3, 31.8 },
        { "p4d.24xlarge", 4, 29.6 }, { "p4de.24xlarge", 2, 78.3 },
    };
    for (size_t i = 0; i < sizeof(pub) / sizeof(pub[0]); i++) {
        const struct pf_instance *it = pf_catalog_find(&cat, pub[i].type);
        double f = floor_gbps(it, pub[i].nodes);
        cr_assert_gt(f, 0, "%s at %d nodes", pub[i].type, pub[i].nodes);
        cr_assert_leq(f, 0.8 * pub[i].healthy, "%s at %d nodes: floor %.1f "
                      "vs healthy %.1f", pub[i].type, pub[i].nodes, f,
                      pub[i].healthy);
    }
    /* and a crawling fabric (EFA off: ~4 GB/s on 2x p4d) still fails */
    cr_assert_gt(floor_gbps(pf_catalog_find(&cat, "p4d.24xlarge"), 1024), 4.1);
}

/* Every GPU type with a multi-node floor has points at 2, 8, 32 and 128
 * nodes, and the curve never rises with the node count. */
Test(catalog, every_gpu_curve_has_the_node_counts)
{
    static const int need[] = { 2, 8, 32, 128 };
    int n = 0;
    for (int i = 0; i < cat.n; i++) {
        const struct pf_instance *it = &cat.items[i];
        bool multi = false;
        for (int f = 0; f < it->nfloors; f++)
            multi |= it->floors[f].nodes >= 2;
        if (!multi || strcmp(it->accel_kind, "gpu"))
            continue;
        n++;
        for (size_t k = 0; k < sizeof(need) / sizeof(need[0]); k++) {
            bool have = false;
            for (int f = 0; f < it->nfloors; f++)
                have |= it->floors[f].nodes == need[k];
            cr_assert(have, "%s: no point at %d nodes", it->name, need[k]);
        }
        for (int nodes = 3; nodes <= 4096; nodes++)
            cr_assert_leq(floor_gbps(it, nodes), floor_gbps(it, nodes - 1) + 1e-9,
                          "%s rises at %d nodes", it->name, nodes);
    }
    cr_assert_geq(n, 7);
}

/* Linear in log2 N between two points: halfway in log2 (16 between 8 and
 * 32) is the mean; 64 is halfway between 32 and 128. */
Test(catalog, curve_interpolates_in_log2_n)
{
    const struct pf_instance *p5 = pf_catalog_find(&cat, "p5.48xlarge");
    struct pf_floor f = floor_at(p5, 16);

    cr_assert_float_eq(f.busbw_gbps, 175, 1e-9);
    cr_assert_eq(f.nodes, 16);
    cr_assert_eq(f.from_bytes, 1ull << 30);
    cr_assert(f.verified);       /* 8 and 32 nodes rest on public figures */
    cr_assert(strstr(f.source, "8-node") && strstr(f.source, "32-node"),
              "%s", f.source);
    cr_assert_float_eq(floor_gbps(p5, 64), 130, 1e-9);
    /* 4 nodes: a quarter of the way... no, half of log2 2..8 is 4 */
    cr_assert_float_eq(floor_gbps(p5, 4), 225, 1e-9);
    /* 3 nodes: log2 3 = 1.585 of 1..3 */
    cr_assert_float_eq(floor_gbps(p5, 3),
                       250 - 50 * (log2(3) - 1) / 2, 1e-9);
    /* between two verified points the value is verified */
    cr_assert(floor_at(p5, 5).verified);
    /* on a point: the point itself */
    f = floor_at(p5, 8);
    cr_assert(f.verified);
    cr_assert(strstr(f.source, "274"), "%s", f.source);
}

/* A point by message size: linear in log2 size between two sizes, flat
 * beyond the last, nothing below the first; between node points, each
 * size interpolated as the node curve is. */
Test(catalog, floor_interpolates_over_sizes)
{
    const struct pf_instance *p5 = pf_catalog_find(&cat, "p5.48xlarge");
    struct pf_config cfg;
    struct pf_floor_rule rule;
    struct pf_floor f = floor_at(p5, 2);

    cr_assert_eq(f.nsizes, 3);
    cr_assert_eq(f.sizes[0].bytes, 256ull << 20);
    cr_assert_float_eq(f.sizes[0].gbps, 200, 1e-9);
    cr_assert_float_eq(f.sizes[2].gbps, 300, 1e-9);
    pf_config_defaults(&cfg);
    pf_floor_for(&cfg, p5, PF_ENGINE_NCCL, NULL, 2, 0, &rule);
    cr_assert_float_eq(rule.gbps, 250, 1e-9);          /* at from_bytes */
    cr_assert_eq(rule.from_bytes, 1ull << 30);
    cr_assert_eq(pf_floor_rule_min_bytes(&rule), 256ull << 20);
    cr_assert_float_eq(pf_floor_rule_at(&rule, 128ull << 20), 0, 1e-9);
    cr_assert_float_eq(pf_floor_rule_at(&rule, 256ull << 20), 200, 1e-9);
    /* 512 MiB: half of log2 256M..1G */
    cr_assert_float_eq(pf_floor_rule_at(&rule, 512ull << 20), 225, 1e-9);
    /* 2 GiB: a third of log2 1G..8G */
    cr_assert_float_eq(pf_floor_rule_at(&rule, 2ull << 30), 250 + 50.0 / 3,
                       1e-9);
    cr_assert_float_eq(pf_floor_rule_at(&rule, 8ull << 30), 300, 1e-9);
    cr_assert_float_eq(pf_floor_rule_at(&rule, 32ull << 30), 300, 1e-9);
    /* 4 nodes, halfway in log2 between 2 and 8: each size the mean */
    f = floor_at(p5, 4);
    cr_assert_eq(f.nsizes, 3);
    cr_assert_float_eq(f.sizes[0].gbps, 180, 1e-9);
    cr_assert_float_eq(f.sizes[1].gbps, 225, 1e-9);
    cr_assert_float_eq(f.sizes[2].gbps, 275, 1e-9);
    /* --min-busbw-gbps is one size: no curve */
    cfg.min_busbw_gbps = 10;
    pf_floor_for(&cfg, p5, PF_ENGINE_NCCL, NULL, 2, 0, &rule);
    cr_assert_eq(rule.nsizes, 0);
    cr_assert_float_eq(pf_floor_rule_at(&rule, 8), 10, 1e-9);
}

/* Points whose sizes differ: the curve between them starts where both
 * have a floor. */
Test(catalog, sizes_between_points_start_where_both_hold)
{
    const char *o = "version: 1\ninstances:\n  x.sz:\n    floors:\n"
                    "      2: {busbw_gbps: 100, from_bytes: 1G, "
                    "sizes: {64M: 40, 4G: 120}}\n"
                    "      8: {busbw_gbps: 60, from_bytes: 256M}\n";
    struct pf_floor f;

    override(o);
    f = floor_at(pf_catalog_find(&cat, "x.sz"), 4);
    cr_assert_eq(f.from_bytes, 1ull << 30);
    /* 256M, 1G, 4G; the 8-node point is flat above 256M */
    cr_assert_eq(f.nsizes, 3);
    cr_assert_eq(f.sizes[0].bytes, 256ull << 20);
    /* 2 nodes at 256M: 40 + (2/4) x 60 = 70; halfway to 60: 65 */
    cr_assert_float_eq(f.sizes[0].gbps, 65, 1e-9);
    cr_assert_float_eq(f.sizes[1].gbps, 80, 1e-9);
    cr_assert_float_eq(f.sizes[2].gbps, 90, 1e-9);
    cr_assert_float_eq(f.busbw_gbps, 80, 1e-9);
}

/* Sizes are checked like the rest of the catalog. */
Test(catalog, bad_sizes_are_errors)
{
    static const char *const bad[] = {
        "      2: {busbw_gbps: 100, from_bytes: 1G, sizes: {1G: 90}}\n",
        "      2: {busbw_gbps: 100, sizes: {2G: 90}}\n",
        "      2: {busbw_gbps: 100, from_bytes: 1G, sizes: {x: 90}}\n",
        "      2: {busbw_gbps: 100, from_bytes: 1G, sizes: {2G: -1}}\n",
        "      2: {busbw_gbps: 100, from_bytes: 1G, sizes: [2G]}\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[512], err[PF_ERRLEN] = "";
        struct pf_catalog c = { 0 };
        snprintf(text, sizeof(text), "version: 1\ninstances:\n  x.bad:\n"
                 "    floors:\n%s", bad[i]);
        cr_assert_eq(pf_catalog_parse(&c, "o.yaml", text, strlen(text), err),
                     PF_ERR_CONFIG, "%s", bad[i]);
        cr_assert(strstr(err, "o.yaml:"), "%s", err);
        pf_catalog_free(&c);
    }
}

Test(catalog, curve_is_flat_at_its_ends)
{
    const char *o = "version: 1\ninstances:\n  x.flat:\n    floors:\n"
                    "      1: 90\n"
                    "      4: {busbw_gbps: 40, from_bytes: 1G, source: first}\n"
                    "      16: {busbw_gbps: 20, from_bytes: 256M, verified: false, "
                    "source: last}\n";
    const struct pf_instance *x;
    struct pf_floor f;

    override(o);
    x = pf_catalog_find(&cat, "x.flat");
    /* one node: the 1-node point only */
    cr_assert_float_eq(floor_gbps(x, 1), 90, 1e-9);
    /* below the first multi-node point: that point, never the NVLink one */
    f = floor_at(x, 2);
    cr_assert_float_eq(f.busbw_gbps, 40, 1e-9);
    cr_assert_str_eq(f.source, "first");
    cr_assert_float_eq(floor_gbps(x, 3), 40, 1e-9);
    /* between: the larger from_bytes, an estimate if either is */
    f = floor_at(x, 8);
    cr_assert_float_eq(f.busbw_gbps, 30, 1e-9);
    cr_assert_eq(f.from_bytes, 1ull << 30);
    cr_assert_not(f.verified);
    /* beyond the last: flat */
    f = floor_at(x, 17);
    cr_assert_float_eq(f.busbw_gbps, 20, 1e-9);
    cr_assert_str_eq(f.source, "last");
    cr_assert_float_eq(floor_gbps(x, 100000), 20, 1e-9);

    /* a type whose only point is the 1-node one has no floor across nodes */
    o = "version: 1\ninstances:\n  x.one: {floors: {1: 90}}\n";
    override(o);
    cr_assert_float_eq(floor_gbps(pf_catalog_find(&cat, "x.one"), 2), 0, 1e-9);
    cr_assert_float_eq(floor_gbps(pf_catalog_find(&cat, "x.one"), 1), 90, 1e-9);
}

/* --catalog FILE may change one point of a curve by its node count; the
 * other points stay, a new count is added in order, 0 removes a point. */
Test(catalog, override_changes_one_point)
{
    const char *o = "version: 1\ninstances:\n  p5.48xlarge:\n    floors:\n"
                    "      8: {busbw_gbps: 180, from_bytes: 2G, verified: false, "
                    "source: \"our 8-node baseline\"}\n";
    const struct pf_instance *p5;
    struct pf_floor f;
    struct pf_config cfg;
    struct pf_floor_rule rule;

    override(o);
    p5 = pf_catalog_find(&cat, "p5.48xlarge");
    cr_assert_eq(p5->nfloors, 7);
    f = floor_at(p5, 8);
    cr_assert_float_eq(f.busbw_gbps, 180, 1e-9);
    cr_assert_eq(f.from_bytes, 2ull << 30);
    cr_assert_str_eq(f.source, "our 8-node baseline");
    cr_assert_float_eq(floor_gbps(p5, 2), 250, 1e-9);     /* kept */
    cr_assert_float_eq(floor_gbps(p5, 128), 110, 1e-9);   /* kept */
    /* held from 2 GiB: the 32-node curve there is 150 + 1/3 x (225 - 150)
     * (a third of log2 1G..8G), and 16 is halfway: (180 + 175) / 2 */
    cr_assert_float_eq(floor_gbps(p5, 16), 177.5, 1e-9);
    cr_assert_eq(floor_at(p5, 16).from_bytes, 2ull << 30);

    /* the one floor rule follows */
    pf_config_defaults(&cfg);
    pf_floor_for(&cfg, p5, PF_ENGINE_NCCL, NULL, 8, 0, &rule);
    cr_assert_float_eq(rule.gbps, 180, 1e-9);
    cr_assert_str_eq(rule.src, "catalog floor for p5.48xlarge at 8 node(s), "
                     "estimated");

    /* a new count goes in order; 0 removes one */
    o = "version: 1\ninstances:\n  p5.48xlarge:\n    floors: {64: 120, 32: 0}\n";
    override(o);
    p5 = pf_catalog_find(&cat, "p5.48xlarge");
    cr_assert_eq(p5->nfloors, 7);
    for (int i = 1; i < p5->nfloors; i++)
        cr_assert_lt(p5->floors[i - 1].nodes, p5->floors[i].nodes);
    cr_assert_float_eq(floor_gbps(p5, 64), 120, 1e-9);
    cr_assert_float_eq(floor_gbps(p5, 32), 180 - 60 * (5 - 3) / 3.0, 1e-9);
    cr_assert_eq(floor_at(p5, 64).from_bytes, 0);         /* bare number */
}

/* The one floor rule says where an interpolated or flat floor comes from. */
Test(catalog, floor_rule_names_the_points)
{
    const struct pf_instance *p5 = pf_catalog_find(&cat, "p5.48xlarge");
    struct pf_config cfg;
    struct pf_floor_rule rule;

    pf_config_defaults(&cfg);
    pf_floor_for(&cfg, p5, PF_ENGINE_NCCL, NULL, 64, 0, &rule);
    cr_assert_float_eq(rule.gbps, 130, 1e-9);
    cr_assert_eq(rule.from_bytes, 1ull << 30);
    cr_assert_str_eq(rule.src, "catalog floor for p5.48xlarge at 64 node(s), "
                     "between its 32- and 128-node points, estimated");
    pf_floor_for(&cfg, p5, PF_ENGINE_NCCL, NULL, 2048, 0, &rule);
    cr_assert_float_eq(rule.gbps, 50, 1e-9);
    cr_assert_str_eq(rule.src, "catalog floor for p5.48xlarge at 2048 "
                     "node(s), its 1024-node point (flat beyond), estimated");
    pf_floor_for(&cfg, p5, PF_ENGINE_NCCL, NULL, 2, 0, &rule);
    cr_assert_str_eq(rule.src, "catalog floor for p5.48xlarge at 2 node(s)");
    pf_floor_for(&cfg, pf_catalog_find(&cat, "p6-b200.48xlarge"), PF_ENGINE_NCCL,
                 NULL, 1, 0, &rule);
    cr_assert_float_eq(rule.gbps, 0, 1e-9);
}

/* `catalog` shows each curve at the node counts users plan for, and its
 * output still parses as a catalog. */
Test(catalog, print_shows_effective_floors)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    pf_curves_print(&cat, f);
    fclose(f);
    cr_assert(strstr(buf, "# type                              2            8"
                     "           32          128          512         1024\n"),
              "%s", buf);
    cr_assert(strstr(buf, "# p5.48xlarge              250.0 (1G)   200.0 (1G)"
                     "   150.0 (1G)  ~110.0 (1G)   ~70.0 (1G)   ~50.0 (1G)\n"),
              "%s", buf);
    cr_assert(strstr(buf, "# p4d.24xlarge              40.0 (1G)   ~20.0 (1G)"),
              "%s", buf);
    cr_assert_null(strstr(buf, "# trn1.32xlarge"));     /* host floors only */
    free(buf);
}

Test(catalog, print_json_carries_effective_floors)
{
    char *buf = NULL, err[PF_ERRLEN];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cJSON *doc, *it, *p5 = NULL;

    cr_assert_eq(pf_curves_print_json(&cat, f, err), PF_OK, "%s", err);
    fclose(f);
    doc = cJSON_Parse(buf);
    cr_assert_not_null(doc, "%s", buf);
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(doc, "instances"))
        if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, "p5.48xlarge"))
            p5 = it;
    cr_assert_not_null(p5);
    cJSON *eff = cJSON_GetObjectItem(p5, "effective_floors");
    static const int nodes[] = { 2, 8, 32, 128, 512, 1024 };
    static const double gbps[] = { 250, 200, 150, 110, 70, 50 };
    cr_assert_eq(cJSON_GetArraySize(eff), 6);
    for (int i = 0; i < 6; i++) {
        cJSON *e = cJSON_GetArrayItem(eff, i);
        cr_assert_eq(cJSON_GetObjectItem(e, "nodes")->valueint, nodes[i]);
        cr_assert_float_eq(cJSON_GetObjectItem(e, "busbw_gbps")->valuedouble,
                           gbps[i], 1e-9);
        cr_assert_float_eq(cJSON_GetObjectItem(e, "from_bytes")->valuedouble,
                           1073741824.0, 1e-3);
        cr_assert(cJSON_IsBool(cJSON_GetObjectItem(e, "verified")));
        cr_assert(cJSON_IsString(cJSON_GetObjectItem(e, "source")));
    }
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p5, "floors")), 7);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p5, "host_floors")), 0);
    cJSON_Delete(doc);
    free(buf);
}

/* Every catalog floor says from which message size it holds and on what
 * public figure it rests: large-message floors judged at 64 MiB would fail
 * healthy nodes. */
Test(catalog, every_floor_states_its_size_and_source)
{
    int n = 0;
    for (int i = 0; i < cat.n; i++)
        for (int f = 0; f < cat.items[i].nfloors; f++, n++) {
            const struct pf_floor *fl = &cat.items[i].floors[f];
            cr_assert_geq(fl->from_bytes, 256ull << 20, "%s %d nodes",
                          cat.items[i].name, fl->nodes);
            cr_assert(fl->source[0], "%s %d nodes: no source",
                      cat.items[i].name, fl->nodes);
        }
    cr_assert_geq(n, 10);
    struct pf_floor p5 = floor_at(pf_catalog_find(&cat, "p5.48xlarge"), 2);
    cr_assert_eq(p5.from_bytes, 1ull << 30);
    cr_assert(p5.verified);
    cr_assert_not(floor_at(pf_catalog_find(&cat, "p6-b200.48xlarge"), 2).verified);
}

Test(catalog, floor_forms_and_their_errors)
{
    char err[PF_ERRLEN];
    const char *ok = "version: 1\ninstances:\n  x.1:\n    floors:\n"
                     "      2: {busbw_gbps: 10, from_bytes: 512M, verified: false, "
                     "source: \"a test\"}\n      4: 7.5\n";
    override(ok);
    const struct pf_instance *x = pf_catalog_find(&cat, "x.1");
    cr_assert_eq(floor_at(x, 2).from_bytes, 512ull << 20);
    cr_assert_not(floor_at(x, 2).verified);
    cr_assert_str_eq(floor_at(x, 2).source, "a test");
    cr_assert_eq(floor_at(x, 9).from_bytes, 0);   /* bare number */
    cr_assert(floor_at(x, 9).verified);
    cr_assert_float_eq(floor_at(x, 9).busbw_gbps, 7.5, 1e-9);

    const char *bad[][2] = {
        { "      2: {from_bytes: 1G}\n", "a floor needs busbw_gbps" },
        { "      2: {busbw_gbps: 1, from_bytes: lots}\n", "from_bytes 'lots' is not a size" },
        { "      2: {busbw_gbps: 1, speed: 3}\n", "unknown floor field 'speed'" },
        { "      2: {busbw_gbps: 1, busbw_gbps: 2}\n", "given twice" },
        { "      2: [1]\n", "a floor is a number" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char doc[512];
        snprintf(doc, sizeof(doc), "version: 1\ninstances:\n  y.1:\n    floors:\n%s",
                 bad[i][0]);
        cr_assert_eq(pf_catalog_parse(&cat, "bad.yaml", doc, strlen(doc), err),
                     PF_ERR_CONFIG, "case %zu", i);
        cr_assert(strstr(err, bad[i][1]) && strstr(err, "bad.yaml:5"), "case %zu: %s", i, err);
    }
}

Test(catalog, override_changes_one_field_and_adds_types)
{
    const char *o = "version: 1\ninstances:\n"
                    "  p5.48xlarge:\n    floors: {2: 320}\n"
                    "  ml.p9.48xlarge:\n    efa: 64\n    accelerators: 8\n";
    override(o);
    const struct pf_instance *p5 = pf_catalog_find(&cat, "p5.48xlarge");
    cr_assert_eq(p5->efa_count, 32);          /* kept */
    cr_assert_float_eq(floor_gbps(p5, 2), 320, 1e-9);
    cr_assert_eq(p5->nfloors, 7);             /* the other points kept */
    cr_assert_float_eq(floor_gbps(p5, 8), 200, 1e-9);
    cr_assert_eq(pf_catalog_find(&cat, "p9.48xlarge")->efa_count, 64);
}

Test(catalog, bad_override_names_line_and_keeps_entry)
{
    char err[PF_ERRLEN];
    const char *o = "version: 1\ninstances:\n  p5.48xlarge:\n    efa: 30\n    efaa: 2\n";
    cr_assert_eq(pf_catalog_parse(&cat, "o.yaml", o, strlen(o), err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "o.yaml:5: p5.48xlarge: unknown field 'efaa'");
    cr_assert_eq(pf_catalog_find(&cat, "p5.48xlarge")->efa_count, 32);
}

struct bad_doc { const char *text, *want; };

/* Parsing each text into a fresh catalog fails with exactly its want. */
static void parse_fails(const struct bad_doc *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct pf_catalog c2 = { 0 };
        char err[PF_ERRLEN];

        cr_assert_eq(pf_catalog_parse(&c2, "x", cases[i].text,
                                      strlen(cases[i].text), err),
                     PF_ERR_CONFIG, "case %zu", i);
        cr_assert_str_eq(err, cases[i].want, "case %zu", i);
        pf_catalog_free(&c2);
    }
}

Test(catalog, parse_errors)
{
    static const struct bad_doc cases[] = {
        { "version: 2\ninstances: {}\n", "x:1: unsupported catalog version '2' (expected 1)" },
        { "version: 1\n", "x: no 'instances' mapping" },
        { "version: 1\ninstances:\n  P5!: {efa: 1}\n", "x:3: 'P5!' is not an instance type name" },
        { "version: 1\ninstances:\n  a.b:\n    quirks: [fast]\n", "x:4: a.b: unknown quirk 'fast' (recount_efa, ignore_non_efa, no_nccl)" },
        { "version: 1\ninstances:\n  a.b:\n    floors: {two: 1}\n", "x:4: a.b: 'floors key (node count)' must be an integer in range" },
        { "version: 1\ninstances:\n  a.b:\n    efa: -3\n", "x:4: a.b: 'efa' must be an integer in range" },
        { "[1, 2]\n", "x:1: a catalog is a mapping with 'version: 1' and 'instances'" },
    };
    parse_fails(cases, sizeof(cases) / sizeof(cases[0]));
}

Test(catalog, duplicate_keys_are_errors)
{
    /* With duplicates the last (or, for floors, the first) silently won:
     * {2: 1, 2: 900} gave a 2-node floor of 1 GB/s. */
    static const struct bad_doc cases[] = {
        { "version: 1\ninstances:\n  p5.48xlarge:\n    efa: 4\n    efa: 32\n",
          "x:5: p5.48xlarge: field 'efa' given twice" },
        { "version: 1\ninstances:\n  p5.48xlarge:\n    floors: {2: 1, 2: 900}\n",
          "x:4: p5.48xlarge: floor for 2 nodes given twice" },
        { "version: 1\ninstances:\n  a.b: {efa: 1}\n  ml.a.b: {efa: 2}\n",
          "x:4: instance type 'a.b' given twice" },
        { "version: 1\ninstances: {}\nversion: 1\n", "x:3: key 'version' given twice" },
    };
    parse_fails(cases, sizeof(cases) / sizeof(cases[0]));
}

Test(catalog, print_round_trips)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct pf_catalog again = { 0 };
    char err[PF_ERRLEN];
    pf_curves_print(&cat, f);
    fclose(f);
    cr_assert_eq(pf_catalog_parse(&again, "printed", buf, len, err), PF_OK, "%s", err);
    cr_assert_eq(again.n, cat.n);
    for (int i = 0; i < cat.n; i++)
        cr_assert_eq(memcmp(&again.items[i], &cat.items[i], sizeof(cat.items[i])), 0,
                     "%s differs", cat.items[i].name);
    pf_catalog_free(&again);
    free(buf);
}

/* Many types in one file: every one is kept and found, the 1025th is an
 * error naming its line. Growing the table one entry at a time copied it
 * each time (seconds under the fuzzer for ~1000 types). */
Test(catalog, many_types)
{
    size_t cap = 64 + 1100 * 24, len = 0;
    char *text = malloc(cap);
    struct pf_catalog many = { 0 };
    char err[PF_ERRLEN], name[32];

    cr_assert_not_null(text);
    len += (size_t)snprintf(text, cap, "version: 1\ninstances:\n");
    for (int i = 0; i < 1024; i++)
        len += (size_t)snprintf(text + len, cap - len, "  t%d.x: {efa: %d}\n", i, i % 33);
    cr_assert_eq(pf_catalog_parse(&many, "m", text, len, err), PF_OK, "%s", err);
    cr_assert_eq(many.n, 1024);
    cr_assert_geq(many.cap, many.n);
    for (int i = 0; i < 1024; i++) {
        snprintf(name, sizeof(name), "t%d.x", i);
        cr_assert_not_null(pf_catalog_find(&many, name), "%s", name);
        cr_assert_eq(pf_catalog_find(&many, name)->efa_count, i % 33);
    }
    pf_catalog_free(&many);
    cr_assert_eq(many.cap, 0);

    len += (size_t)snprintf(text + len, cap - len, "  one.more: {}\n");
    cr_assert_eq(pf_catalog_parse(&many, "m", text, len, err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "m:1027: more than 1024 instance types");
    pf_catalog_free(&many);
    free(text);
}

/* "did you mean": the nearest catalog name within two slips, ml. kept;
 * nothing for a type near none, a type the catalog has, or a pattern. */
Test(catalog, suggests_the_nearest_name_for_a_near_miss)
{
    static const struct {
        const char *name, *typo, *want;   /* want NULL: no suggestion */
    } cases[] = {
        { "a slip", "p5.48xlrge", "p5.48xlarge" },
        { "a trailing space", "p5e.48xlarge ", "p5e.48xlarge" },
        { "ml. kept", "ml.p4d.24xlarg", "ml.p4d.24xlarge" },
        { "a catalog type needs no guess", "p5.48xlarge", NULL },
        { "near none", "m5.large", NULL },
        { "five slips away is no near miss", "p5.4xl", NULL },
        { "empty", "", NULL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char near[64];
        bool got = pf_catalog_suggest(&cat, cases[i].typo, near, sizeof(near));

        cr_assert_eq(got, cases[i].want != NULL, "case %s", cases[i].name);
        if (cases[i].want)
            cr_assert_str_eq(near, cases[i].want, "case %s", cases[i].name);
    }
}

/* The verdict uses the curve: a healthy 8-node p5 ring at 220 GB/s (under
 * the 2-node floor, over the 8-node one) passes; the same busbw on 2 nodes
 * misses its floor. The step rule held 300 GB/s at 8 nodes and failed it. */
static const struct pf_check *busbw_check(int nnodes, double busbw)
{
    static struct pf_run run;
    struct pf_coll *c = &run.coll;

    memset(&run, 0, sizeof(run));
    pf_config_defaults(&run.cfg);
    run.cfg.command = PF_CMD_RUN;
    run.instance = pf_catalog_find(&cat, "p5.48xlarge");
    c->ran = true;
    c->slow_rank = -1;
    snprintf(c->engine, sizeof(c->engine), "nccl");
    c->engine_kind = PF_ENGINE_NCCL;
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "efa");
    c->nnodes = nnodes;
    c->nranks = 8 * nnodes;
    c->nrows = 1;
    pf_sweep_fill_row(&c->rows[0], 1ull << 30, c->nranks,
                      pf_busbw_factor(c->nranks) * (double)(1ull << 30) / 1e9 / busbw,
                      pf_busbw_factor(c->nranks) * (double)(1ull << 30) / 1e9 / busbw,
                      0, 0);
    pf_sweep_summarize(c);
    pf_test_judged(&run);
    pf_verdict_fabric(&run);
    for (int i = 0; i < run.verdict.n; i++)
        if (!strcmp(run.verdict.checks[i].name, "busbw"))
            return &run.verdict.checks[i];
    return NULL;
}

Test(catalog, verdict_judges_a_ring_by_its_node_count)
{
    const struct pf_check *b = busbw_check(8, 220);

    cr_assert_not_null(b);
    cr_assert_eq(b->status, PF_PASS, "%s: %s", pf_reason_name(b->reason), b->message);
    b = busbw_check(2, 220);
    cr_assert_not_null(b);
    cr_assert_eq(b->status, PF_FAIL, "%s", b->message);
    cr_assert_eq(b->reason, PF_R_BandwidthBelowThreshold, "%s", b->message);
    cr_assert(strstr(b->message, "floor 250.00 GB/s"), "%s", b->message);
    /* 125 nodes at the low end of the healthy range (140 GB/s) passes */
    b = busbw_check(125, 140);
    cr_assert_eq(b->status, PF_PASS, "%s", b->message);
    /* 64 nodes: 130 between the 32- and 128-node points */
    b = busbw_check(64, 125);
    cr_assert_eq(b->status, PF_FAIL, "%s", b->message);
    cr_assert(strstr(b->message, "floor 130.00 GB/s"), "%s", b->message);
    cr_assert(strstr(b->message, "between its 32- and 128-node points"), "%s", b->message);
}
