/* Host-engine floors by the NICs its ring striped over (catalog field
 * host_floors): parsing, overrides, the one floor rule, the verdict. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "collective/collective.h"
#include "collective/straggler.h"
#include "collective/sweep.h"
#include "config/catalog.h"
#include "config/config.h"
#include "judge/floor.h"
#include "judge/judge.h"
#include "verdict/verdict.h"

static struct pf_catalog cat;

static void load(void)
{
    char err[PF_ERRLEN];
    cr_assert_eq(pf_catalog_load(&cat, "", err), PF_OK, "%s", err);
}

static void unload(void) { pf_catalog_free(&cat); }

TestSuite(host_floors, .init = load, .fini = unload);

static double host_gbps(const struct pf_instance *it, int nics)
{
    const struct pf_floor *f = pf_instance_host_floor(it, nics);
    return f ? f->busbw_gbps : 0;
}

static double rule_gbps(const struct pf_config *cfg,
                        const struct pf_instance *it, const char *fallback,
                        int nnodes, int nics, char *src, size_t len)
{
    struct pf_floor_rule rule;

    pf_floor_for(cfg, it, PF_ENGINE_HOST, fallback, nnodes, nics, &rule);
    snprintf(src, len, "%s", rule.src);
    return rule.gbps;
}

Test(host_floors, trn1_floor_grows_with_the_nics_used)
{
    const struct pf_instance *t = pf_catalog_find(&cat, "trn1.32xlarge");

    cr_assert_not_null(t);
    cr_assert_float_eq(host_gbps(t, 1), 2, 1e-9);
    cr_assert_float_eq(host_gbps(t, 4), 2, 1e-9);
    cr_assert_float_eq(host_gbps(t, 8), 6, 1e-9);
    cr_assert_float_eq(host_gbps(t, 0), 0, 1e-9);
    cr_assert_float_eq(host_gbps(NULL, 8), 0, 1e-9);
    /* estimates, judged from 16 MiB, which the default sweep reaches */
    cr_assert_not(pf_instance_host_floor(t, 8)->verified);
    cr_assert_eq(pf_instance_host_floor(t, 8)->from_bytes, 16u << 20);
    /* GPU types have none: NCCL's floors are by node count */
    cr_assert_eq(pf_catalog_find(&cat, "p5.48xlarge")->nhost_floors, 0);
}

Test(host_floors, the_one_rule_uses_them_for_the_host_engine_across_nodes)
{
    const struct pf_instance *t = pf_catalog_find(&cat, "trn1.32xlarge");
    struct pf_config cfg;
    char src[192];

    pf_config_defaults(&cfg);
    cr_assert_float_eq(rule_gbps(&cfg, t, NULL, 2, 8, src, sizeof(src)), 6,
                       1e-9);
    cr_assert_str_eq(src, "catalog host floor for trn1.32xlarge over 8 "
                     "NIC(s), estimated");
    cr_assert_float_eq(rule_gbps(&cfg, t, NULL, 2, 1, src, sizeof(src)), 2,
                       1e-9);
    /* one node crosses no NIC; tcp says nothing about EFA */
    cr_assert_float_eq(rule_gbps(&cfg, t, NULL, 1, 8, src, sizeof(src)), 0,
                       1e-9);
    cr_assert_float_eq(rule_gbps(&cfg, t, "tcp", 2, 8, src, sizeof(src)), 0,
                       1e-9);
    cfg.min_busbw_gbps = 9;
    cr_assert_float_eq(rule_gbps(&cfg, t, NULL, 2, 8, src, sizeof(src)), 9,
                       1e-9);
}

Test(host_floors, override_is_backward_compatible_and_strict)
{
    char err[PF_ERRLEN];
    const char *keep = "version: 1\ninstances:\n  trn1.32xlarge:\n    efa: 8\n";
    const char *set = "version: 1\ninstances:\n  trn1.32xlarge:\n"
                      "    host_floors:\n      8: {busbw_gbps: 9.5, "
                      "from_bytes: 4M}\n";
    const char *bad[][2] = {
        { "version: 1\ninstances:\n  a.b:\n    host_floors: {eight: 1}\n",
          "x:4: a.b: 'host_floors key (NIC count)' must be an integer in range" },
        { "version: 1\ninstances:\n  a.b:\n    host_floors: {65: 1}\n",
          "x:4: a.b: 'host_floors key (NIC count)' must be an integer in range" },
        { "version: 1\ninstances:\n  a.b:\n    host_floors: {2: fast}\n",
          "x:4: a.b: floor 'fast' is not a bandwidth in GB/s" },
        { "version: 1\ninstances:\n  a.b:\n    host_floors: [1, 2]\n",
          "x:4: a.b: 'host_floors' must be a mapping of NIC count: floor" },
        { "version: 1\ninstances:\n  a.b:\n    host_floors: {2: 1, 2: 3}\n",
          "x:4: a.b: host floor for 2 NICs given twice" },
    };
    const struct pf_instance *t;

    /* an override file of before this field keeps the embedded floors */
    cr_assert_eq(pf_catalog_parse(&cat, "o.yaml", keep, strlen(keep), err),
                 PF_OK, "%s", err);
    t = pf_catalog_find(&cat, "trn1.32xlarge");
    cr_assert_eq(t->nhost_floors, 2);
    cr_assert_eq(pf_catalog_parse(&cat, "o.yaml", set, strlen(set), err),
                 PF_OK, "%s", err);
    t = pf_catalog_find(&cat, "trn1.32xlarge");
    cr_assert_eq(t->nhost_floors, 1);         /* replaced as a whole */
    cr_assert_float_eq(host_gbps(t, 8), 9.5, 1e-9);
    cr_assert_eq(pf_instance_host_floor(t, 8)->from_bytes, 4u << 20);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(pf_catalog_parse(&cat, "x", bad[i][0], strlen(bad[i][0]),
                                      err), PF_ERR_CONFIG);
        cr_assert_str_eq(err, bad[i][1]);
    }
}

Test(host_floors, printed_catalog_parses_back_the_same)
{
    char *text = NULL, err[PF_ERRLEN];
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    struct pf_catalog again = { 0 };

    pf_catalog_print(&cat, out);
    fclose(out);
    cr_assert(strstr(text, "    host_floors:\n      1: {busbw_gbps: 2, "
                     "from_bytes: 16777216, verified: false"), "%s", text);
    cr_assert_eq(pf_catalog_parse(&again, "printed", text, len, err), PF_OK,
                 "%s", err);
    cr_assert_float_eq(host_gbps(pf_catalog_find(&again, "trn1.32xlarge"), 8),
                       6, 1e-9);
    pf_catalog_free(&again);
    free(text);
}

Test(host_floors, a_trn1_host_ring_below_its_8_nic_floor_fails)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;
    const struct pf_check *b = NULL;

    pf_config_defaults(&run->cfg);
    run->instance = pf_catalog_find(&cat, "trn1.32xlarge");
    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "host");
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "efa");
    c->nnodes = c->nranks = 2;
    c->nics.nrails = 8;
    c->nrows = 1;
    /* busbw 5 GB/s at 1 GB: above the 1-NIC floor, below the 8-NIC one */
    pf_sweep_fill_row(&c->rows[0], 1000000000ull, 2, 1.0 / 5, 1.0 / 5, 0, 0);
    pf_sweep_summarize(c);
    pf_test_judged(run);
    cr_assert_float_eq(c->judgement.floor.gbps, 6, 1e-9);
    pf_verdict_fabric(run);
    for (int i = 0; i < run->verdict.n; i++)
        if (!strcmp(run->verdict.checks[i].name, "busbw"))
            b = &run->verdict.checks[i];
    cr_assert_not_null(b);
    cr_assert_eq(b->reason, PF_R_BandwidthBelowThreshold, "%s", b->message);
    cr_assert(strstr(b->message, "below the floor 6.00 GB/s from 16 MiB "
                     "(catalog host floor for trn1.32xlarge over 8 NIC(s), "
                     "estimated)"), "%s", b->message);
    c->nics.nrails = 1;
    run->verdict.n = 0;
    pf_test_judged(run);
    pf_verdict_fabric(run);
    cr_assert_eq(run->verdict.checks[run->verdict.n - 1].status, PF_PASS);
    free(run);
}
