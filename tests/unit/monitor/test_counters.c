/* Every counter file the driver exposes, read by name: files added by a
 * newer driver are read, files that are not a count (text, negative, a
 * name no metric can carry) are skipped, device-level files are port 0,
 * a second port is read as its own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "monitor/monitor.h"
#include "nic_fixture.h"
#include "probe/probe.h"

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s", root, rel);
    f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

Test(counters, unknown_files_read_junk_skipped_ports_apart)
{
    char root[512], err[PF_ERRLEN], cmd[1024];
    struct pf_config cfg;
    struct pf_node *node = calloc(1, sizeof(*node));
    struct pf_mon_snap s;
    const struct pf_mon_nic *nic;

    cr_assert(node);
    pf_test_fixture_copy("p5en.48xlarge", root, sizeof(root));
    put(root, "rdmap16s27/ports/1/hw_counters/new_driver_counter", "42\n");
    put(root, "rdmap16s27/ports/1/hw_counters/not_a_number", "many\n");
    put(root, "rdmap16s27/ports/1/hw_counters/negative", "-3\n");
    put(root, "rdmap16s27/ports/1/hw_counters/Bad-Name", "1\n");
    put(root, "rdmap16s27/hw_counters/cmds_err", "9\n");
    snprintf(cmd, sizeof(cmd),
             "mkdir -p '%s/sys/class/infiniband/rdmap16s27/ports/2/hw_counters'",
             root);
    cr_assert_eq(system(cmd), 0);
    put(root, "rdmap16s27/ports/2/state", "1: DOWN\n");
    put(root, "rdmap16s27/ports/2/hw_counters/rx_drops", "5\n");
    pf_test_cfg_root(&cfg, root);
    pf_probe_efa_quiet(&cfg, node);
    cr_assert_eq(pf_mon_read(root, node, 16, &s, err), PF_OK, "%s", err);
    cr_assert_eq(s.n, 16);
    cr_assert_eq(s.expected, 16);
    nic = pf_mon_nic_find(&s, "rdmap16s27");
    cr_assert(nic);
    cr_assert_eq(nic->nports, 2);
    cr_assert(!nic->port_active, "port 2 is DOWN");
    cr_assert_str_eq(nic->port_state, "1: DOWN");
    cr_assert_eq(pf_mon_counter_find(nic, "new_driver_counter", 1)->v, 42);
    cr_assert_null(pf_mon_counter_find(nic, "not_a_number", 1));
    cr_assert_null(pf_mon_counter_find(nic, "negative", 1));
    cr_assert_null(pf_mon_counter_find(nic, "Bad-Name", 1));
    cr_assert_eq(pf_mon_counter_find(nic, "cmds_err", 0)->v, 9);
    cr_assert_eq(pf_mon_counter_find(nic, "rx_drops", 2)->v, 5);
    cr_assert_eq(pf_mon_counter_find(nic, "rx_drops", 1)->v, 0);
    /* the sibling is untouched: one port, all ACTIVE */
    nic = pf_mon_nic_find(&s, "rdmap17s27");
    cr_assert(nic && nic->port_active && nic->nports == 1);
    cr_assert_null(pf_mon_nic_find(&s, "rdmap99s27"));
    pf_mon_snap_free(&s);
    pf_test_fixture_drop(root);
    free(node);
}

Test(counters, a_node_without_efa_reads_nothing)
{
    char root[512], err[PF_ERRLEN];
    struct pf_config cfg;
    struct pf_node *node = calloc(1, sizeof(*node));
    struct pf_mon_snap s;

    cr_assert(node);
    pf_test_fixture_copy("plain", root, sizeof(root));
    pf_test_cfg_root(&cfg, root);
    pf_probe_efa_quiet(&cfg, node);
    cr_assert_eq(pf_mon_read(root, node, -1, &s, err), PF_OK, "%s", err);
    cr_assert_eq(s.n, 0);
    cr_assert_null(s.nics);
    pf_mon_snap_free(&s);
    pf_test_fixture_drop(root);
    free(node);
}
