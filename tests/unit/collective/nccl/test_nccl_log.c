/* NCCL INFO log parsing (collective/nccl/nccl_log.c) on lines as NCCL 2.18-2.28
 * and aws-ofi-nccl print them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collective/nccl/nccl_log.h"

#define P "ip-10-1-2-3:4321:4321 [0] NCCL INFO "
#define PT "ip-10-1-2-3:4321:4399 [1] NCCL INFO "

/* A p5 node with aws-ofi-nccl: plugin loaded, EFA with GDR, NVLink. */
static const char efa_log[] =
    P "Bootstrap: Using ens32:10.1.2.3<0>\n"
    P "cudaDriverVersion 12080\n"
    P "NCCL version 2.23.4+cuda12.6\n"
    PT "NET/Plugin: Plugin name set by env to libnccl-net.so\n"
    PT "NET/Plugin: Loaded net plugin Libfabric (v9)\n"
    PT "NET/OFI Initializing aws-ofi-nccl 1.13.2\n"
    PT "NET/OFI Selected provider is efa, fabric is efa (found 32 nics)\n"
    PT "Successfully loaded external plugin libnccl-net.so\n"
    PT "Using network Libfabric\n"
    PT "Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA\n"
    PT "Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Libfabric/0/GDRDMA\n"
    PT "Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
    PT "Channel 02/0 : 1[1] -> 0[0] via P2P/direct pointer\n";

/* No plugin: NCCL's internal socket transport between two nodes. */
static const char socket_log[] =
    P "NCCL version 2.28.9+cuda13.0\n"
    P "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n"
    P "NET/Socket : Using [0]eth0:10.1.2.3<0>\n"
    P "Using network Socket\n"
    PT "Channel 00/1 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
    PT "Channel 01/1 : 1[0] -> 0[0] [receive] via NET/Socket/1\n"
    PT "Channel 00/0 : 0[0] -> 2[1] via SHM/direct/direct\n";

Test(nccl_log, efa_with_gdr)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(efa_log, &f);
    cr_assert_str_eq(f.version, "2.23.4+cuda12.6");
    cr_assert(f.plugin_loaded);
    cr_assert_not(f.plugin_missing);
    cr_assert_str_eq(f.plugin, "Libfabric");
    cr_assert_str_eq(f.network, "Libfabric");
    cr_assert_eq(f.channels, 4);
    cr_assert_eq(f.net_channels, 2);
    cr_assert_eq(f.gdr_channels, 2);
    cr_assert_eq(f.socket_channels, 0);
    cr_assert_eq(f.p2p_channels, 2);
    cr_assert_str_eq(f.transports,
                     "NET/Libfabric/GDRDMA,P2P/CUMEM/read,P2P/direct pointer");
}

Test(nccl_log, socket_fallback_without_plugin)
{
    struct pf_nccl_facts f;
    struct pf_fabric_facts c;

    pf_nccl_log_parse(socket_log, &f);
    cr_assert_str_eq(f.version, "2.28.9+cuda13.0");
    cr_assert_not(f.plugin_loaded);
    cr_assert(f.plugin_missing);
    cr_assert_str_eq(f.network, "Socket");
    cr_assert_eq(f.socket_channels, 2);
    cr_assert_eq(f.shm_channels, 1);
    cr_assert_eq(f.gdr_channels, 0);
    cr_assert_str_eq(f.transports, "NET/Socket,SHM/direct/direct");

    memset(&c, 0, sizeof(c));
    pf_nccl_facts_apply(&f, &c);
    cr_assert(c.inter_node_socket);
    cr_assert_not(c.net_plugin_loaded);
    cr_assert_not(c.net_gdr);
    cr_assert_str_eq(c.transport, "NET/Socket,SHM/direct/direct");
    cr_assert_str_eq(c.nccl_network, "Socket");
}

Test(nccl_log, net_listed_first_whatever_the_order_seen)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(P "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
                      P "Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0(1)/GDRDMA\n"
                      P "Channel 01/0 : 1[1] -> 2[0] [send] via NET/IB/1/GDRDMA/Shared\n",
                      &f);
    cr_assert_str_eq(f.transports, "NET/IB/GDRDMA,P2P/CUMEM/read");
    cr_assert_eq(f.gdr_channels, 2);
}

Test(nccl_log, network_name_with_a_space)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(P "NET/Plugin: Loaded net plugin AWS Libfabric (v10)\n"
                      P "Using network AWS Libfabric\n"
                      P "Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/3/GDRDMA\n",
                      &f);
    cr_assert_str_eq(f.plugin, "AWS Libfabric");
    cr_assert_str_eq(f.network, "AWS Libfabric");
    cr_assert_str_eq(f.transports, "NET/AWS Libfabric/GDRDMA");
    cr_assert_eq(f.socket_channels, 0);
}

Test(nccl_log, plugin_found_after_a_miss_counts_as_loaded)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(P "NET/Plugin: Could not find: libnccl-net-foo.so\n"
                      P "NET/Plugin: Loaded net plugin Libfabric (v10)\n", &f);
    cr_assert(f.plugin_loaded);
    cr_assert_not(f.plugin_missing);
}

Test(nccl_log, efa_without_gdr)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(P "Channel 00/0 : 0[0] -> 1[0] [send] via NET/Libfabric/0\n",
                      &f);
    cr_assert_eq(f.net_channels, 1);
    cr_assert_eq(f.gdr_channels, 0);
    cr_assert_eq(f.socket_channels, 0);
    cr_assert_str_eq(f.transports, "NET/Libfabric");
}

Test(nccl_log, noise_and_empty_text_give_nothing)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse("", &f);
    cr_assert_eq(f.channels, 0);
    cr_assert_str_eq(f.transports, "");
    pf_nccl_log_parse(P "comm 0x55 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE\n"
                      "garbage without a newline at the end via NET/Socket/0", &f);
    cr_assert_eq(f.channels, 0);
    cr_assert_str_eq(f.network, "");
}

Test(nccl_log, crlf_lines_and_trailing_blanks)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(P "Using network IB  \r\n"
                      P "Channel 00/0 : 0[0] -> 1[0] via NET/IB/0/GDRDMA \r\n", &f);
    cr_assert_str_eq(f.network, "IB");
    cr_assert_str_eq(f.transports, "NET/IB/GDRDMA");
}

Test(nccl_log, many_transports_keep_within_the_field)
{
    struct pf_nccl_facts f;
    char text[8192] = "";

    for (int i = 0; i < 40; i++) {
        char line[160];
        snprintf(line, sizeof(line),
                 P "Channel %02d/0 : 0[0] -> 1[1] via P2P/KIND%02d/read\n", i, i);
        strcat(text, line);
    }
    pf_nccl_log_parse(text, &f);
    cr_assert_eq(f.channels, 40);
    cr_assert_lt(strlen(f.transports), sizeof(f.transports));
    cr_assert(strncmp(f.transports, "P2P/KIND00/read,P2P/KIND01/read", 31) == 0);
}

Test(nccl_log, debug_file_expansion_matches_nccl)
{
    char out[256], err[PF_ERRLEN];

    cr_assert_eq(pf_nccl_log_expand("/var/log/nccl.%h.%p.log",
                                    "ip-10-0-0-1.ec2.internal", 77, out,
                                    sizeof(out), err), PF_OK);
    cr_assert_str_eq(out, "/var/log/nccl.ip-10-0-0-1.77.log");
    cr_assert_eq(pf_nccl_log_expand("/x/100%%-%q", "h", 1, out, sizeof(out),
                                    err), PF_OK);
    cr_assert_str_eq(out, "/x/100%-%q");
    cr_assert_eq(pf_nccl_log_expand("/a/very/long/%h", "h", 1, out, 8, err),
                 PF_ERR_USAGE);
}

Test(nccl_log, arm_sets_a_private_file_and_disarm_restores)
{
    struct pf_nccl_log l;
    char err[PF_ERRLEN], path[PF_PATH_MAX];

    unsetenv("NCCL_DEBUG_FILE");
    setenv("NCCL_DEBUG", "warn", 1);
    setenv("NCCL_DEBUG_SUBSYS", "ALL", 1);
    setenv("TMPDIR", "/tmp", 1);
    cr_assert_eq(pf_nccl_log_arm(&l, err), PF_OK, "%s", err);
    cr_assert_not(l.users_file);
    cr_assert_str_eq(getenv("NCCL_DEBUG_FILE"), l.path);
    cr_assert_str_eq(getenv("NCCL_DEBUG"), "INFO");
    cr_assert_str_eq(getenv("NCCL_DEBUG_SUBSYS"), "ALL");
    cr_assert(strncmp(l.path, "/tmp/efa-preflight-nccl.", 24) == 0, "%s", l.path);
    snprintf(path, sizeof(path), "%s", l.path);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(socket_log, f);
    fclose(f);

    struct pf_nccl_facts facts;
    cr_assert_eq(pf_nccl_log_read(&l, &facts, err), PF_OK, "%s", err);
    cr_assert_eq(facts.socket_channels, 2);
    pf_nccl_log_disarm(&l);
    cr_assert_neq(access(path, F_OK), 0);
    cr_assert_null(getenv("NCCL_DEBUG_FILE"));
    cr_assert_str_eq(getenv("NCCL_DEBUG"), "warn");
    cr_assert_str_eq(getenv("NCCL_DEBUG_SUBSYS"), "ALL");
}

Test(nccl_log, missing_log_is_not_found)
{
    struct pf_nccl_log l;
    struct pf_nccl_facts f;
    char err[PF_ERRLEN];

    setenv("NCCL_DEBUG_FILE", "/nonexistent/dir/nccl.%p", 1);
    cr_assert_eq(pf_nccl_log_arm(&l, err), PF_OK);
    cr_assert(l.users_file);
    cr_assert_eq(pf_nccl_log_read(&l, &f, err), PF_ERR_NOTFOUND);
    cr_assert_eq(f.channels, 0);
    pf_nccl_log_disarm(&l);
}

/* Every line FACTS.md lists, as written there. */
Test(nccl_log, facts_md_lines)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(P "NCCL version 2.21.5+cuda12.4\n"
                      P "Successfully loaded external network plugin /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so\n"
                      P "NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)\n"
                      P "Using network IB\n"
                      P "Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA\n"
                      P "Channel 01/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\n"
                      P "Channel 02/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
                      P "Channel 03/0 : 1[1] -> 2[2] via P2P/direct pointer\n"
                      P "Channel 04/0 : 2[2] -> 3[3] via SHM/direct/direct\n",
                      &f);
    cr_assert_str_eq(f.version, "2.21.5+cuda12.4");
    cr_assert(f.plugin_loaded);
    cr_assert_str_eq(f.network, "IB");
    cr_assert_eq(f.channels, 5);
    cr_assert_eq(f.net_channels, 2);
    cr_assert_eq(f.socket_channels, 1);
    cr_assert_eq(f.gdr_channels, 1);
    cr_assert_eq(f.p2p_channels, 2);
    cr_assert_eq(f.shm_channels, 1);
    cr_assert_str_eq(f.transports,
                     "NET/Libfabric/GDRDMA,NET/Socket,P2P/CUMEM/read,"
                     "P2P/direct pointer,SHM/direct/direct");
}

/* NCCL 2.28.9 without a plugin, with the transport it reported on 2x H200
 * (bench/results/gpu_h200x2.md). */
Test(nccl_log, nccl_2_28_lines_seen_on_h200)
{
    struct pf_nccl_facts f;

    pf_nccl_log_parse(P "NCCL version 2.28.9+cuda13.0\n"
                      P "NET/Plugin: Could not find: libnccl-net.so.\n"
                      P "Using network Socket\n"
                      PT "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
                      PT "Channel 01/0 : 1[1] -> 0[0] via P2P/CUMEM\n", &f);
    cr_assert_str_eq(f.version, "2.28.9+cuda13.0");
    cr_assert(f.plugin_missing);
    cr_assert_not(f.plugin_loaded);
    cr_assert_str_eq(f.transports, "P2P/CUMEM");
    cr_assert_eq(f.socket_channels, 0);
}
