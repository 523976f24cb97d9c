/* pf_boot_open: the rendezvous names every rank in the roster it is given,
 * and leaves discovery's table as discovery left it. Two forked ranks on a
 * loopback port the kernel gives the test. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/bootstrap.h"
#include "util/clock.h"
#include "free_port.h"

/* A rank's discovery table for a world of two: rank 0 at 127.0.0.1:port;
 * rank 1 knows its own node and only rank 0's address. */
static void table(struct pf_peer peers[2], int port)
{
    memset(peers, 0, 2 * sizeof(*peers));
    peers[0] = (struct pf_peer){ .rank = 0, .host = "127.0.0.1", .port = port };
    peers[1] = (struct pf_peer){ .rank = 1, .node = "node-b" };
}

static pf_err open_as(int rank, struct pf_peer list[2], struct pf_roster *ro,
                      const char *hostname, char *err)
{
    struct pf_peers p = { .bootstrap = PF_BOOT_STATIC, .world = 2,
                          .rank = rank, .list = list };
    struct pf_fault fault = { 0 };
    struct pf_boot_args a = {
        .peers = &p, .roster = ro, .secret_file = "", .bind_addr = "127.0.0.1",
        .timeout_s = 20, .deadline = pf_deadline_in(20000),
        .hostname = hostname, .instance_type = "", .fault = &fault,
    };
    struct pf_boot *b = NULL;
    pf_err rc = pf_boot_open(&a, &b, err);

    if (rc == PF_OK) {
        rc = pf_boot_barrier(b, pf_deadline_in(20000), err);
        pf_boot_close(b);
    }
    return rc;
}

Test(bootstrap, the_roster_gets_the_names_and_discoverys_table_stays)
{
    int port = pf_test_free_port();
    struct pf_peer mine[2], roster_list[2];
    struct pf_roster ro = { .bootstrap = PF_BOOT_STATIC, .world = 2,
                            .list = roster_list };
    char err[PF_ERRLEN] = "";
    int status = -1;
    pid_t pid;

    cr_assert_gt(port, 0);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        struct pf_peer t[2], r[2];
        struct pf_roster r0 = { .bootstrap = PF_BOOT_STATIC, .world = 2,
                                .list = r };
        char e[PF_ERRLEN];
        table(t, port);
        memcpy(r, t, sizeof(r));
        _exit(open_as(0, t, &r0, "node-a", e) == PF_OK ? 0 : 1);
    }
    table(mine, port);
    memcpy(roster_list, mine, sizeof(roster_list));
    cr_assert_eq(open_as(1, mine, &ro, "node-b", err), PF_OK, "%s", err);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank 0 failed");

    /* rank 0's name came with the WELCOME, into the roster only */
    cr_assert_str_eq(roster_list[0].node, "node-a");
    cr_assert_str_eq(roster_list[0].host, "127.0.0.1");
    cr_assert_str_eq(roster_list[1].node, "node-b");
    cr_assert_str_eq(mine[0].node, "");
    cr_assert_str_eq(mine[1].host, "");
}
