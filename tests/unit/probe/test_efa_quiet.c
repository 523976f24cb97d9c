/* The monitor's per-interval read (pf_probe_efa_quiet): devices, ports,
 * uverbs presence and the module, without opening a device file or
 * reading the counters. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "nic_fixture.h"
#include "probe/probe.h"

Test(efa_quiet, p5_devices_and_files_seen_none_opened_no_counters)
{
    char root[512];
    struct pf_config cfg;
    struct pf_node *node = calloc(1, sizeof(*node));

    cr_assert(node);
    pf_test_fixture_copy("p5.48xlarge", root, sizeof(root));
    pf_test_cfg_root(&cfg, root);
    pf_probe_efa_quiet(&cfg, node);
    cr_assert_eq(node->efa_count, 32);
    cr_assert_eq(node->efa_ports_active, 32);
    cr_assert_eq(node->uverbs_present, 32);
    cr_assert_eq(node->uverbs_openable, 0, "a device file was opened");
    cr_assert(node->efa_module_loaded);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(node->efa[i].hwc.present, 0, "%s: counters read",
                     node->efa[i].name);
    /* the full probe still opens and reads */
    pf_probe_efa(&cfg, node);
    cr_assert_eq(node->uverbs_openable, 32);
    cr_assert_neq(node->efa[0].hwc.present, 0);
    pf_test_fixture_drop(root);
    free(node);
}
