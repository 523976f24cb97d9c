/* Catalog: the embedded file, lookups, floors and overrides. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/catalog.h"

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
    const struct pf_floor *f = pf_instance_floor(it, nodes);
    return f ? f->busbw_gbps : 0;
}

Test(catalog, floors_by_node_count)
{
    const struct pf_instance *p5 = pf_catalog_find(&cat, "p5.48xlarge");
    cr_assert_float_eq(floor_gbps(p5, 1), 400, 1e-9);
    cr_assert_float_eq(floor_gbps(p5, 2), 300, 1e-9);
    cr_assert_float_eq(floor_gbps(p5, 128), 300, 1e-9);
    cr_assert_float_eq(floor_gbps(pf_catalog_find(&cat, "p6-b200.48xlarge"), 1),
                       0, 1e-9);
    cr_assert_float_eq(floor_gbps(NULL, 2), 0, 1e-9);
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
    const struct pf_floor *p5 = pf_instance_floor(pf_catalog_find(&cat, "p5.48xlarge"), 2);
    cr_assert_eq(p5->from_bytes, 1ull << 30);
    cr_assert(p5->verified);
    cr_assert_not(pf_instance_floor(pf_catalog_find(&cat, "p6-b200.48xlarge"), 2)->verified);
}

Test(catalog, floor_forms_and_their_errors)
{
    char err[PF_ERRLEN];
    const char *ok = "version: 1\ninstances:\n  x.1:\n    floors:\n"
                     "      2: {busbw_gbps: 10, from_bytes: 512M, verified: false, "
                     "source: \"a test\"}\n      4: 7.5\n";
    cr_assert_eq(pf_catalog_parse(&cat, "ok.yaml", ok, strlen(ok), err), PF_OK, "%s", err);
    const struct pf_instance *x = pf_catalog_find(&cat, "x.1");
    cr_assert_eq(pf_instance_floor(x, 3)->from_bytes, 512ull << 20);
    cr_assert_not(pf_instance_floor(x, 3)->verified);
    cr_assert_str_eq(pf_instance_floor(x, 3)->source, "a test");
    cr_assert_eq(pf_instance_floor(x, 9)->from_bytes, 0);   /* bare number */
    cr_assert_float_eq(pf_instance_floor(x, 9)->busbw_gbps, 7.5, 1e-9);

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
    char err[PF_ERRLEN];
    const char *o = "version: 1\ninstances:\n"
                    "  p5.48xlarge:\n    floors: {2: 320}\n"
                    "  ml.p9.48xlarge:\n    efa: 64\n    accelerators: 8\n";
    cr_assert_eq(pf_catalog_parse(&cat, "o.yaml", o, strlen(o), err), PF_OK, "%s", err);
    const struct pf_instance *p5 = pf_catalog_find(&cat, "p5.48xlarge");
    cr_assert_eq(p5->efa_count, 32);          /* kept */
    cr_assert_float_eq(floor_gbps(p5, 2), 320, 1e-9);
    cr_assert_eq(p5->nfloors, 1);             /* floors replaced as a whole */
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

Test(catalog, parse_errors)
{
    struct { const char *text, *want; } cases[] = {
        { "version: 2\ninstances: {}\n", "x:1: unsupported catalog version '2' (expected 1)" },
        { "version: 1\n", "x: no 'instances' mapping" },
        { "version: 1\ninstances:\n  P5!: {efa: 1}\n", "x:3: 'P5!' is not an instance type name" },
        { "version: 1\ninstances:\n  a.b:\n    quirks: [fast]\n", "x:4: a.b: unknown quirk 'fast' (recount_efa, ignore_non_efa, no_nccl)" },
        { "version: 1\ninstances:\n  a.b:\n    floors: {two: 1}\n", "x:4: a.b: 'floors key (node count)' must be an integer in range" },
        { "version: 1\ninstances:\n  a.b:\n    efa: -3\n", "x:4: a.b: 'efa' must be an integer in range" },
        { "[1, 2]\n", "x:1: a catalog is a mapping with 'version: 1' and 'instances'" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pf_catalog c2 = { 0 };
        char err[PF_ERRLEN];
        cr_assert_eq(pf_catalog_parse(&c2, "x", cases[i].text, strlen(cases[i].text), err),
                     PF_ERR_CONFIG, "case %zu", i);
        cr_assert_str_eq(err, cases[i].want, "case %zu", i);
        pf_catalog_free(&c2);
    }
}

Test(catalog, duplicate_keys_are_errors)
{
    /* With duplicates the last (or, for floors, the first) silently won:
     * {2: 1, 2: 900} gave a 2-node floor of 1 GB/s. */
    struct { const char *text, *want; } cases[] = {
        { "version: 1\ninstances:\n  p5.48xlarge:\n    efa: 4\n    efa: 32\n",
          "x:5: p5.48xlarge: field 'efa' given twice" },
        { "version: 1\ninstances:\n  p5.48xlarge:\n    floors: {2: 1, 2: 900}\n",
          "x:4: p5.48xlarge: floor for 2 nodes given twice" },
        { "version: 1\ninstances:\n  a.b: {efa: 1}\n  ml.a.b: {efa: 2}\n",
          "x:4: instance type 'a.b' given twice" },
        { "version: 1\ninstances: {}\nversion: 1\n", "x:3: key 'version' given twice" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pf_catalog c2 = { 0 };
        char err[PF_ERRLEN];
        cr_assert_eq(pf_catalog_parse(&c2, "x", cases[i].text, strlen(cases[i].text), err),
                     PF_ERR_CONFIG, "case %zu", i);
        cr_assert_str_eq(err, cases[i].want, "case %zu", i);
        pf_catalog_free(&c2);
    }
}

Test(catalog, print_round_trips)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct pf_catalog again = { 0 };
    char err[PF_ERRLEN];
    pf_catalog_print(&cat, f);
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
    char near[64];

    cr_assert(pf_catalog_suggest(&cat, "p5.48xlrge", near, sizeof(near)));
    cr_assert_str_eq(near, "p5.48xlarge");
    cr_assert(pf_catalog_suggest(&cat, "p5e.48xlarge ", near, sizeof(near)));
    cr_assert_str_eq(near, "p5e.48xlarge");
    cr_assert(pf_catalog_suggest(&cat, "ml.p4d.24xlarg", near, sizeof(near)));
    cr_assert_str_eq(near, "ml.p4d.24xlarge");
    cr_assert_not(pf_catalog_suggest(&cat, "p5.48xlarge", near, sizeof(near)),
                  "a catalog type needs no guess");
    cr_assert_not(pf_catalog_suggest(&cat, "m5.large", near, sizeof(near)));
    cr_assert_not(pf_catalog_suggest(&cat, "p5.4xl", near, sizeof(near)),
                  "five slips away is no near miss");
    cr_assert_not(pf_catalog_suggest(&cat, "", near, sizeof(near)));
}
