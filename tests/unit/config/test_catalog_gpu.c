/* The catalog's `gpu:` expectations: what each GPU type states, overrides
 * key by key, bad values named by file and line, and the printed catalog
 * reading back the same. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/catalog.h"

static struct pf_catalog cat;

static void load_embedded(void)
{
    char err[PF_ERRLEN];
    cr_assert_eq(pf_catalog_load(&cat, NULL, err), PF_OK, "%s", err);
}

static void unload(void) { pf_catalog_free(&cat); }

TestSuite(catalog_gpu, .init = load_embedded, .fini = unload);

static const struct pf_gpu_expect *gpu_of(const char *type)
{
    const struct pf_instance *it = pf_catalog_find(&cat, type);
    cr_assert_not_null(it, "%s", type);
    return &it->gpu;
}

Test(catalog_gpu, types_state_links_pcie_and_driver)
{
    static const struct {
        const char *type;
        int nvlinks, gen, width;
        const char *min_driver;
        bool verified;
    } want[] = {
        { "p5.48xlarge", 18, 5, 16, "525", true },
        { "p5e.48xlarge", 18, 5, 16, "550", true },
        { "p5en.48xlarge", 18, 5, 16, "550", true },
        { "p4d.24xlarge", 12, 4, 16, "450", true },
        { "p4de.24xlarge", 12, 4, 16, "450", true },
        { "g5.48xlarge", 0, 4, 16, "", false },
        { "p6-b200.48xlarge", 18, 0, 0, "570", false },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct pf_gpu_expect *g = gpu_of(want[i].type);
        cr_assert_eq(g->nvlinks, want[i].nvlinks, "%s", want[i].type);
        cr_assert_eq(g->pcie_gen, want[i].gen, "%s", want[i].type);
        cr_assert_eq(g->pcie_width, want[i].width, "%s", want[i].type);
        cr_assert_str_eq(g->min_driver, want[i].min_driver, "%s", want[i].type);
        cr_assert_eq(g->verified, want[i].verified, "%s", want[i].type);
        cr_assert_not(g->mig_allowed, "%s", want[i].type);
        /* every built-in driver minimum is an estimate: it warns only */
        if (g->min_driver[0])
            cr_assert_not(g->driver_verified, "%s", want[i].type);
        cr_assert(g->source[0], "%s states its source", want[i].type);
    }
    /* CPU and Trainium types state nothing */
    cr_assert_eq(gpu_of("trn1.32xlarge")->nvlinks, -1);
    cr_assert_eq(gpu_of("c5n.18xlarge")->pcie_gen, 0);
}

Test(catalog_gpu, override_changes_the_keys_it_names)
{
    static const char o[] =
        "instances:\n"
        "  p5e.48xlarge:\n"
        "    gpu: {min_driver: \"560.28.03\", min_driver_verified: true}\n"
        "  x9.new:\n"
        "    accelerator_kind: gpu\n"
        "    gpu: {nvlinks: 4}\n";
    char err[PF_ERRLEN];
    const struct pf_gpu_expect *g;

    cr_assert_eq(pf_catalog_parse(&cat, "o.yaml", o, strlen(o), err), PF_OK,
                 "%s", err);
    g = gpu_of("p5e.48xlarge");
    cr_assert_str_eq(g->min_driver, "560.28.03");
    cr_assert(g->driver_verified);
    cr_assert_eq(g->nvlinks, 18, "the keys not named stay");
    cr_assert_eq(g->pcie_gen, 5);
    g = gpu_of("x9.new");
    cr_assert_eq(g->nvlinks, 4);
    cr_assert_eq(g->pcie_gen, 0, "a new type states only what it names");
    cr_assert(g->verified);
}

Test(catalog_gpu, bad_values_are_named_by_line)
{
    static const struct { const char *doc, *want; } bad[] = {
        { "instances:\n  p5.48xlarge:\n    gpu: {nvlinks: many}\n",
          "o.yaml:3: p5.48xlarge: 'nvlinks' must be an integer" },
        { "instances:\n  p5.48xlarge:\n    gpu: {min_driver: \"r550\"}\n",
          "min_driver 'r550' is not a version" },
        { "instances:\n  p5.48xlarge:\n    gpu: {min_cuda: \"12\"}\n",
          "min_cuda '12' is not a CUDA version" },
        { "instances:\n  p5.48xlarge:\n    gpu: {links: 18}\n",
          "unknown gpu field 'links'" },
        { "instances:\n  p5.48xlarge:\n    gpu: 18\n",
          "'gpu' must be a mapping" },
        { "instances:\n  p5.48xlarge:\n    gpu: {pcie_width: 64}\n",
          "'pcie_width' must be an integer in range" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[PF_ERRLEN] = "";
        cr_assert_eq(pf_catalog_parse(&cat, "o.yaml", bad[i].doc,
                                      strlen(bad[i].doc), err),
                     PF_ERR_CONFIG, "%s", bad[i].doc);
        cr_assert(strstr(err, bad[i].want), "'%s' lacks '%s'", err,
                  bad[i].want);
    }
    cr_assert_eq(gpu_of("p5.48xlarge")->nvlinks, 18, "a bad file changes nothing");
}

Test(catalog_gpu, printed_catalog_reads_back_the_same)
{
    struct pf_catalog back = { 0 };
    char *text = NULL, err[PF_ERRLEN];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    cr_assert_not_null(f);
    pf_catalog_print(&cat, f);
    fclose(f);
    cr_assert_eq(pf_catalog_parse(&back, "printed", text, len, err), PF_OK,
                 "%s", err);
    for (int i = 0; i < cat.n; i++) {
        const struct pf_gpu_expect *a = &cat.items[i].gpu;
        const struct pf_gpu_expect *b =
            &pf_catalog_find(&back, cat.items[i].name)->gpu;
        cr_assert_eq(a->nvlinks, b->nvlinks, "%s", cat.items[i].name);
        cr_assert_eq(a->pcie_gen, b->pcie_gen);
        cr_assert_eq(a->pcie_width, b->pcie_width);
        cr_assert_str_eq(a->min_driver, b->min_driver);
        cr_assert_eq(a->driver_verified, b->driver_verified, "%s",
                     cat.items[i].name);
        cr_assert_eq(a->verified, b->verified, "%s", cat.items[i].name);
        cr_assert_str_eq(a->source, b->source);
    }
    pf_catalog_free(&back);
    free(text);
}
