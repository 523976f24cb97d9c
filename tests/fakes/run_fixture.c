/* A run with the built-in catalog and default config (run_fixture.h). */
#include "run_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/catalog.h"
#include "config/config.h"

struct pf_run *pf_test_run_new(const char *type)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    char err[PF_ERRLEN];

    cr_assert_not_null(run);
    cr_assert_eq(pf_catalog_load(&run->catalog, "", err), PF_OK, "%s", err);
    pf_config_defaults(&run->cfg);
    if (type) {
        snprintf(run->node.instance_type, sizeof(run->node.instance_type),
                 "%s", type);
        run->instance = pf_catalog_find(&run->catalog, type);
    }
    return run;
}

const struct pf_check *pf_test_check(const struct pf_run *run,
                                     const char *name)
{
    for (int i = 0; i < run->verdict.n; i++)
        if (!strcmp(run->verdict.checks[i].name, name))
            return &run->verdict.checks[i];
    return NULL;
}

const struct pf_check *pf_test_check_says(const struct pf_run *run,
                                          const char *name,
                                          enum pf_reason reason,
                                          const char *words)
{
    const struct pf_check *c = pf_test_check(run, name);

    cr_assert_not_null(c, "no check %s", name);
    cr_assert_eq(c->reason, reason, "%s: reason %s, want %s (%s)", name,
                 pf_reason_name(c->reason), pf_reason_name(reason),
                 c->message);
    if (words)
        cr_assert(strstr(c->message, words), "%s: '%s' lacks '%s'", name,
                  c->message, words);
    return c;
}

void pf_test_nccl_image(struct pf_node *node, const char *plugin_name)
{
    node->nccl_loaded = true;
    node->nccl_version = 22809;
    snprintf(node->net_plugin_name, sizeof(node->net_plugin_name), "%s",
             plugin_name);
    snprintf(node->net_plugin_path, sizeof(node->net_plugin_path),
             "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so");
    node->net_plugin_api = 10;
    node->net_plugin_error[0] = '\0';
}

void pf_test_run_free(struct pf_run *run)
{
    pf_catalog_free(&run->catalog);
    free(run);
}
