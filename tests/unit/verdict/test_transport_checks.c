/* Transport checks (verdict/transport_checks.c): SocketFallback,
 * NetPluginMissing, GDRDisabled from run->coll as nccl_log fills it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "verdict/verdict.h"

static struct pf_run run;
static struct pf_instance p5;

static void setup(void)
{
    memset(&run, 0, sizeof(run));
    memset(&p5, 0, sizeof(p5));
    snprintf(p5.name, sizeof(p5.name), "p5.48xlarge");
    snprintf(p5.accel_kind, sizeof(p5.accel_kind), "gpu");
    p5.efa_count = 32;
    p5.gdr_required = true;
    snprintf(run.coll.engine, sizeof(run.coll.engine), "nccl");
    run.coll.engine_kind = PF_ENGINE_NCCL;
}

static const struct pf_check *find(const char *name)
{
    for (int i = 0; i < run.verdict.n; i++)
        if (!strcmp(run.verdict.checks[i].name, name))
            return &run.verdict.checks[i];
    return NULL;
}

static void coll(const char *transport, const char *network, bool plugin,
                 bool gdr, bool sock)
{
    struct pf_fabric_facts *f = &run.coll.fabric;

    snprintf(f->transport, sizeof(f->transport), "%s", transport);
    snprintf(f->nccl_network, sizeof(f->nccl_network), "%s", network);
    f->net_plugin_loaded = plugin;
    f->net_gdr = gdr;
    f->inter_node_socket = sock;
}

TestSuite(nccl_verdict, .init = setup);

Test(nccl_verdict, healthy_efa_passes_all_three)
{
    run.instance = &p5;
    coll("NET/Libfabric/GDRDMA,P2P/CUMEM/read", "Libfabric", true, true, false);
    pf_verdict_transport(&run);
    cr_assert_eq(run.verdict.n, 3);
    cr_assert_eq(find("nccl_transport")->status, PF_PASS);
    cr_assert_eq(find("nccl_net_plugin")->status, PF_PASS);
    cr_assert_eq(find("nccl_gdr")->status, PF_PASS);
    cr_assert_str_eq(find("nccl_transport")->condition, "EFAFabricReady");
}

Test(nccl_verdict, socket_channels_fail_as_socket_fallback)
{
    coll("NET/Socket,SHM/direct/direct", "Socket", false, false, true);
    pf_verdict_transport(&run);
    const struct pf_check *c = find("nccl_transport");
    cr_assert_eq(c->status, PF_FAIL);
    cr_assert_eq(c->reason, PF_R_SocketFallback);
    cr_assert(strstr(c->message, "NET/Socket,SHM/direct/direct"), "%s",
              c->message);
    /* no EFA expected on an unknown host: the plugin check is skipped */
    cr_assert_eq(find("nccl_net_plugin")->status, PF_SKIP);
    cr_assert_eq(find("nccl_gdr")->status, PF_SKIP);
    cr_assert_eq(pf_verdict_condition(&run.verdict, "EFAFabricReady"), PF_FAIL);
}

Test(nccl_verdict, missing_plugin_on_an_efa_type_fails)
{
    run.instance = &p5;
    coll("P2P/CUMEM/read", "Socket", false, false, false);
    pf_verdict_transport(&run);
    const struct pf_check *c = find("nccl_net_plugin");
    cr_assert_eq(c->status, PF_FAIL);
    cr_assert_eq(c->reason, PF_R_NetPluginMissing);
    cr_assert(strstr(c->message, "p5.48xlarge has 32 EFA interfaces"), "%s",
              c->message);
    cr_assert_eq(find("nccl_transport")->status, PF_PASS);
}

Test(nccl_verdict, efa_devices_seen_make_the_plugin_expected)
{
    run.node.efa_count = 4;
    coll("P2P/CUMEM/read", "IB", false, false, false);
    pf_verdict_transport(&run);
    cr_assert_eq(find("nccl_net_plugin")->reason, PF_R_NetPluginMissing);
}

Test(nccl_verdict, net_without_gdr_fails_where_required)
{
    run.instance = &p5;
    coll("NET/Libfabric,P2P/CUMEM/read", "Libfabric", true, false, false);
    pf_verdict_transport(&run);
    const struct pf_check *c = find("nccl_gdr");
    cr_assert_eq(c->status, PF_FAIL);
    cr_assert_eq(c->reason, PF_R_GDRDisabled);
}

Test(nccl_verdict, net_without_gdr_passes_where_not_required)
{
    p5.gdr_required = false;
    snprintf(p5.name, sizeof(p5.name), "g5.48xlarge");
    run.instance = &p5;
    coll("NET/Libfabric", "Libfabric", true, false, false);
    pf_verdict_transport(&run);
    cr_assert_eq(find("nccl_gdr")->status, PF_PASS);
}

Test(nccl_verdict, socket_alone_is_not_a_gdr_question)
{
    run.instance = &p5;
    coll("NET/Socket", "Socket", false, false, true);
    pf_verdict_transport(&run);
    cr_assert_eq(find("nccl_gdr")->status, PF_SKIP);
    cr_assert_eq(find("nccl_transport")->reason, PF_R_SocketFallback);
    cr_assert_eq(find("nccl_net_plugin")->reason, PF_R_NetPluginMissing);
}

Test(nccl_verdict, unknown_log_skips_instead_of_guessing)
{
    run.instance = &p5;
    coll("", "", false, false, false);
    pf_verdict_transport(&run);
    cr_assert_eq(find("nccl_transport")->status, PF_SKIP);
    cr_assert_eq(find("nccl_net_plugin")->status, PF_SKIP);
    cr_assert_eq(find("nccl_gdr")->status, PF_SKIP);
}

Test(nccl_verdict, host_engine_adds_nothing)
{
    snprintf(run.coll.engine, sizeof(run.coll.engine), "host");
    run.coll.engine_kind = PF_ENGINE_HOST;
    coll("NET/Socket", "Socket", false, false, true);
    pf_verdict_transport(&run);
    cr_assert_eq(run.verdict.n, 0);
}
