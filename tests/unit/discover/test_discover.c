/* Bootstraps: the --peers list, static/local discovery and run ids, and the
 * local launcher's exit codes, crash and deadline handling. */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "discover/discover.h"
#include "launch/launch.h"
#include "util/clock.h"

#include "unit_files.h"

static struct pf_run *new_run(enum pf_bootstrap bootstrap)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    cr_assert(run);
    pf_config_defaults(&run->cfg);
    run->cfg.command = PF_CMD_RUN;
    run->cfg.bootstrap = bootstrap;
    run->cfg.timeout_s = 10;
    return run;
}

static void free_run(struct pf_run *run)
{
    pf_peers_free(&run->peers);
    pf_config_free(&run->cfg);
    free(run);
}

static void set_peers(struct pf_run *run, const char *spec)
{
    free(run->cfg.peers);
    run->cfg.peers = strdup(spec);
    cr_assert(run->cfg.peers);
}

/* pf_discover refuses the run with exactly want. */
static void discover_fails(struct pf_run *run, const char *want)
{
    char err[PF_ERRLEN];

    cr_assert_eq(pf_discover(run, err), PF_ERR_USAGE, "want %s", want);
    cr_assert_str_eq(err, want);
}

/* "10.254.H.L:30100,..." for n ranks (heap). */
static char *peer_spec(int n)
{
    char *spec = malloc((size_t)n * 24 + 1);
    size_t len = 0;

    cr_assert(spec);
    spec[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(spec + len, "%s10.254.%d.%d:30100",
                               i ? "," : "", i / 250, i % 250 + 1);
    return spec;
}

Test(peers, parses_hosts_ports_and_ipv6_in_rank_order)
{
    struct pf_peer *p;
    char err[PF_ERRLEN];
    int n;

    cr_assert_eq(pf_parse_peers("10.254.1.11:30100, node-b.example:30101,"
                                "[fd00::3]:9", &p, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(p[0].host, "10.254.1.11");
    cr_assert_eq(p[0].port, 30100);
    cr_assert_str_eq(p[1].host, "node-b.example");
    cr_assert_eq(p[1].port, 30101);
    cr_assert_eq(p[1].rank, 1);
    cr_assert_str_eq(p[2].host, "fd00::3");
    cr_assert_eq(p[2].port, 9);
    free(p);
}

Test(peers, bad_entries_are_named)
{
    static const struct { const char *spec, *want; } cases[] = {
        { "", "--peers is empty: give host:port of every rank, "
              "comma-separated, in rank order" },
        { "a:1,,b:2", "--peers entry 2 is empty (stray comma?)" },
        { "a:1,b", "--peers entry 2 'b': missing :port" },
        { "a:1,b:0", "--peers entry 2 'b:0': port '0' is not a number in 1..65535" },
        { "a:65536", "--peers entry 1 'a:65536': port '65536' is not a number in "
                     "1..65535" },
        { "a:12x", "--peers entry 1 'a:12x': port '12x' is not a number in "
                   "1..65535" },
        { "a:-5", "--peers entry 1 'a:-5': port '-5' is not a number in 1..65535" },
        { ":30", "--peers entry 1 ':30': empty host" },
        { "a:1,b c:2", "--peers entry 2 'b c:2': host has an invalid character ' '" },
        { "fd00::1:30", "--peers entry 1 'fd00::1:30': IPv6 addresses need "
                        "brackets, e.g. [fd00::1]:29600" },
        { "[fd00::1:30", "--peers entry 1 '[fd00::1:30': missing ']'" },
        { "[fd00::1]30", "--peers entry 1 '[fd00::1]30': missing :port after ']'" },
        { "a:1,", "--peers entry 2 is empty (stray comma?)" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pf_peer *p = (struct pf_peer *)1;
        char err[PF_ERRLEN];
        int n = 7;

        cr_assert_eq(pf_parse_peers(cases[i].spec, &p, &n, err), PF_ERR_USAGE,
                     "case '%s'", cases[i].spec);
        cr_assert_str_eq(err, cases[i].want, "case '%s'", cases[i].spec);
        cr_assert_null(p, "case '%s'", cases[i].spec);
        cr_assert_eq(n, 0, "case '%s'", cases[i].spec);
    }
}

Test(peers, a_list_of_1024_ranks_is_parsed_in_rank_order)
{
    char *spec = peer_spec(1024), err[PF_ERRLEN];
    struct pf_peer *p;
    int n;

    cr_assert_gt(strlen(spec), 4096);  /* the old fixed buffer's size */
    cr_assert_eq(pf_parse_peers(spec, &p, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 1024);
    cr_assert_str_eq(p[0].host, "10.254.0.1");
    cr_assert_str_eq(p[1023].host, "10.254.4.24");
    cr_assert_eq(p[1023].port, 30100);
    cr_assert_eq(p[1023].rank, 1023);
    free(p);
    /* a bad entry far down the list is still named by its position */
    spec[strlen(spec) - 5] = 'x';
    cr_assert_eq(pf_parse_peers(spec, &p, &n, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "--peers entry 1024 '10.254.4.24:x0100': port "
                          "'x0100' is not a number in 1..65535");
    free(spec);
}

Test(static_bootstrap, a_1024_rank_group_from_flag_env_and_yaml_is_validated)
{
    char *spec = peer_spec(1024), err[PF_ERRLEN] = "";
    size_t ylen = strlen(spec) + 1024 * 8 + 64;
    char *yaml = malloc(ylen), *env = malloc(strlen(spec) + 32);
    char *envp[] = { env, NULL }, *noenv[] = { NULL };
    bool help;
    size_t at;

    cr_assert(yaml && env);
    /* YAML: a list, one entry a line */
    at = (size_t)snprintf(yaml, ylen, "bootstrap: static\nrank: 1023\n"
                          "peers:\n");
    for (char *tok = spec, *end; tok; tok = end ? end + 1 : NULL) {
        end = strchr(tok, ',');
        at += (size_t)snprintf(yaml + at, ylen - at, "  - %.*s\n",
                               end ? (int)(end - tok) : (int)strlen(tok), tok);
    }
    sprintf(env, "EFA_PREFLIGHT_PEERS=%s", spec);
    for (int way = 0; way < 3; way++) {
        struct pf_run *run = new_run(PF_BOOT_STATIC);
        char rank[] = "1023";
        char *argv[] = { "run", "--peers", spec, "--rank", rank, NULL };
        char *argv_env[] = { "run", "--rank", rank, NULL };

        if (way == 0)
            cr_assert_eq(pf_config_load(&run->cfg, PF_CMD_RUN, 5, argv, noenv,
                                        &help, err), PF_OK, "%s", err);
        else if (way == 1)
            cr_assert_eq(pf_config_load(&run->cfg, PF_CMD_RUN, 3, argv_env,
                                        envp, &help, err), PF_OK, "%s", err);
        else
            cr_assert_eq(pf_config_load_yaml_buf(&run->cfg, "big.yaml", yaml,
                                                 strlen(yaml), err),
                         PF_OK, "%s", err);
        cr_assert_str_eq(run->cfg.peers, spec, "way %d", way);
        cr_assert_eq(run->cfg.rank, 1023);
        cr_assert_eq(pf_discover(run, err), PF_OK, "way %d: %s", way, err);
        cr_assert_eq(run->peers.world, 1024);
        cr_assert_eq(run->peers.rank, 1023);
        cr_assert_str_eq(run->peers.list[1023].host, "10.254.4.24");
        cr_assert_eq(strncmp(run->peers.run_id, "static-", 7), 0);
        /* --world-size is checked against the list, whatever its length */
        run->cfg.world_size = 1025;
        discover_fails(run, "--world-size 1025 but --peers lists 1024 ranks");
        run->cfg.world_size = 0;
        run->cfg.rank = 1024;
        discover_fails(run, "--rank 1024 is outside 0..1023 (--peers lists "
                            "1024 ranks)");
        free_run(run);
    }
    free(yaml);
    free(env);
    free(spec);
}

Test(static_bootstrap, fills_peers_and_derives_a_stable_run_id)
{
    struct pf_run *a = new_run(PF_BOOT_STATIC), *b = new_run(PF_BOOT_STATIC);
    char err[PF_ERRLEN];

    set_peers(a, "10.0.0.1:30100,10.0.0.2:30100");
    set_peers(b, "10.0.0.1:30100,10.0.0.2:30100");
    a->cfg.rank = 0;
    b->cfg.rank = 1;
    cr_assert_eq(pf_discover(a, err), PF_OK, "%s", err);
    cr_assert_eq(pf_discover(b, err), PF_OK, "%s", err);
    cr_assert_eq(a->peers.world, 2);
    cr_assert_eq(b->peers.rank, 1);
    cr_assert_str_eq(pf_bootstrap_name(a->peers.bootstrap), "static");
    cr_assert_str_eq(a->peers.run_id, b->peers.run_id);
    cr_assert_eq(strncmp(a->peers.run_id, "static-", 7), 0);
    cr_assert_eq(strlen(a->peers.run_id), 7 + 16);
    cr_assert_gt(pf_ms_left(a->peers.deadline_ms), 9000);
    cr_assert_leq(pf_ms_left(a->peers.deadline_ms), 10000);
    /* Another list is another run. */
    set_peers(b, "10.0.0.1:30100,10.0.0.3:30100");
    cr_assert_eq(pf_discover(b, err), PF_OK, "%s", err);
    cr_assert_str_neq(a->peers.run_id, b->peers.run_id);
    snprintf(b->cfg.run_id, sizeof(b->cfg.run_id), "job-17");
    cr_assert_eq(pf_discover(b, err), PF_OK, "%s", err);
    cr_assert_str_eq(b->peers.run_id, "job-17");
    free_run(a);
    free_run(b);
}

Test(static_bootstrap, rank_and_world_size_are_checked)
{
    struct pf_run *run = new_run(PF_BOOT_STATIC);

    set_peers(run, "h1:1,h2:1,h3:1");
    discover_fails(run, "--bootstrap static needs --rank (0..2: this "
                        "process's position in --peers)");
    run->cfg.rank = 3;
    discover_fails(run, "--rank 3 is outside 0..2 (--peers lists 3 ranks)");
    run->cfg.rank = 1;
    run->cfg.world_size = 4;
    discover_fails(run, "--world-size 4 but --peers lists 3 ranks");
    cr_assert_null(run->peers.list);
    free_run(run);
}

Test(local_bootstrap, ranks_on_loopback_with_the_launchers_run_id)
{
    struct pf_run *run = new_run(PF_BOOT_LOCAL);
    char err[PF_ERRLEN], want[64];

    run->cfg.ranks = 3;
    run->cfg.rank = 2;
    run->cfg.port = 30720;
    cr_assert_eq(pf_discover(run, err), PF_OK, "%s", err);
    cr_assert_eq(run->peers.world, 3);
    cr_assert_eq(run->peers.rank, 2);
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(run->peers.list[i].host, "127.0.0.1");
        cr_assert_eq(run->peers.list[i].port, 30720);
    }
    snprintf(want, sizeof(want), "local-%d-", (int)getppid());
    cr_assert_eq(strncmp(run->peers.run_id, want, strlen(want)), 0, "%s",
                 run->peers.run_id);
    cr_assert_gt(strlen(run->peers.run_id), strlen(want));
    run->cfg.rank = -1;
    discover_fails(run, "--bootstrap local: rank -1 is outside 0..2 "
                        "(efa-preflight local sets it)");
    free_run(run);
}

Test(discover, unknown_bootstrap_is_a_usage_error)
{
    /* The config refuses a word it does not know (test_config.c): here
     * a value past the last one. */
    struct pf_run *run = new_run((enum pf_bootstrap)99);

    discover_fails(run, "--bootstrap '?': expected auto, local, "
                        "static, mpi or k8s");
    free_run(run);
}

Test(discover, auto_picks_local_mpi_then_static)
{
    struct pf_run *run = new_run(PF_BOOT_AUTO);
    char err[PF_ERRLEN];

    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_SIZE");
    unsetenv("KUBERNETES_SERVICE_HOST");
    set_peers(run, "h1:1");
    run->cfg.rank = 0;
    cr_assert_eq(pf_discover(run, err), PF_OK, "%s", err);
    cr_assert_str_eq(pf_bootstrap_name(run->peers.bootstrap), "static");
    run->cfg.command = PF_CMD_LOCAL;
    run->cfg.ranks = 1;
    cr_assert_eq(pf_discover(run, err), PF_OK, "%s", err);
    cr_assert_str_eq(pf_bootstrap_name(run->peers.bootstrap), "local");
    free_run(run);
}

Test(discover, mpi_without_the_shim_says_what_to_build)
{
    struct pf_run *run = new_run(PF_BOOT_MPI);
    char err[PF_ERRLEN];

    setenv("EFA_PREFLIGHT_MPI_SHIM", "/nonexistent/libpf-mpi.so", 1);
    cr_assert_eq(pf_discover(run, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "--bootstrap mpi needs the MPI shim"), "%s", err);
    cr_assert(strstr(err, "/nonexistent/libpf-mpi.so"), "%s", err);
    free_run(run);
}

Test(local_launcher, free_port_is_bindable)
{
    char err[PF_ERRLEN];
    int port = 0;

    cr_assert_eq(pf_free_port(&port, err), PF_OK, "%s", err);
    cr_assert_gt(port, 0);
    cr_assert_lt(port, 65536);
}

/* Spawns run->cfg.ranks ranks, each a child running rank_body (which
 * exits with the code the test scripted for it); the launcher's code. */
static int spawned(struct pf_run *run, void (*rank_body)(int))
{
    char err[PF_ERRLEN];
    bool is_child = false;
    int code = -1;
    pf_err rc = pf_local_spawn(run, &is_child, &code, err);

    if (is_child) {
        rank_body(run->cfg.rank);
        _exit(99);
    }
    cr_assert_eq(rc, PF_OK, "%s", err);
    return code;
}

static void exit_rank(int rank) { _exit(rank == 0 ? 1 : 0); }

Test(local_launcher, exit_code_is_rank_0s_and_ranks_get_their_settings)
{
    struct pf_run *run = new_run(PF_BOOT_AUTO);

    run->cfg.ranks = 3;
    run->cfg.port = 0;
    cr_assert_eq(spawned(run, exit_rank), 1);
    cr_assert_gt(run->cfg.port, 0, "a free port was picked for the ranks");
    free_run(run);
}

static void crash_rank(int rank)
{
    if (rank == 2)
        raise(SIGKILL);               /* not SIGSEGV: ASan would catch it */
    _exit(0);
}

Test(local_launcher, crashed_rank_makes_the_run_an_infrastructure_failure)
{
    struct pf_run *run = new_run(PF_BOOT_AUTO);

    run->cfg.ranks = 3;
    run->cfg.port = 30721;
    cr_assert_eq(spawned(run, crash_rank), PF_EXIT_INFRA);
    free_run(run);
}

static void hang_rank(int rank)
{
    if (rank == 1)
        pf_sleep_ms(60000);
    _exit(0);
}

Test(local_launcher, hung_rank_is_stopped_after_timeout_plus_grace, .timeout = 20)
{
    struct pf_run *run = new_run(PF_BOOT_AUTO);
    int64_t t0 = pf_now_ms();

    run->cfg.ranks = 2;
    run->cfg.port = 30722;
    run->cfg.timeout_s = 1;
    cr_assert_eq(spawned(run, hang_rank), PF_EXIT_INFRA);
    cr_assert_geq(pf_now_ms() - t0, 6000);
    cr_assert_lt(pf_now_ms() - t0, 9000);
    free_run(run);
}

/* A parent that ignores SIGCHLD passes that on through exec; the kernel
 * then reaps the ranks itself and waitpid finds no status to report. */
Test(local_launcher, exit_codes_are_read_even_when_sigchld_was_ignored,
     .timeout = 20)
{
    struct pf_run *run = new_run(PF_BOOT_AUTO);
    struct sigaction ign = { .sa_handler = SIG_IGN }, old;
    int64_t t0 = pf_now_ms();
    int code;

    run->cfg.ranks = 2;
    run->cfg.port = 30723;
    run->cfg.timeout_s = 2;
    cr_assert_eq(sigaction(SIGCHLD, &ign, &old), 0);
    code = spawned(run, exit_rank);
    sigaction(SIGCHLD, &old, NULL);
    cr_assert_eq(code, 1, "rank 0 exited 1, the launcher answered %d", code);
    cr_assert_lt(pf_now_ms() - t0, 2000, "the launcher waited for ranks "
                 "that had already exited");
    free_run(run);
}

static void report_rank(int rank)
{
    (void)rank;
    _exit(0);
}

Test(local_launcher, one_rank_runs_in_place_without_fork)
{
    struct pf_run *run = new_run(PF_BOOT_AUTO);
    char err[PF_ERRLEN];
    bool is_child = false;
    int code = -1;

    (void)report_rank;
    run->cfg.ranks = 1;
    cr_assert_eq(pf_local_spawn(run, &is_child, &code, err), PF_OK);
    cr_assert(is_child);
    cr_assert_eq(run->cfg.rank, 0);
    cr_assert_str_eq(pf_bootstrap_name(run->cfg.bootstrap), "local");
    cr_assert_eq(pf_discover(run, err), PF_OK, "%s", err);
    cr_assert_eq(run->peers.world, 1);
    free_run(run);
}

Test(local_launcher, the_host_limit_that_binds_is_named)
{
    static const struct {
        const char *name;
        struct pf_host_room h;
        int want;
        const char *why;              /* NULL: not checked */
    } cases[] = {
        { "memory", { .mem_avail = 16ull << 30 }, 64,
          "memory: 16384 MiB available, about 256 MiB per rank for messages "
          "up to 67108864 bytes (two buffers and the process)" },
        { "nproc", { .mem_avail = 16ull << 30, .nproc = 200 }, 50,
          "RLIMIT_NPROC (ulimit -u) 200: each rank may run up to 4 tasks" },
        { "nofile", { .mem_avail = 16ull << 30, .nproc = 200, .nofile = 160 }, 32,
          "RLIMIT_NOFILE (ulimit -n) 160: rank 0 keeps a connection to every "
          "rank plus 128 spare descriptors" },
        { "too few files", { .mem_avail = 16ull << 30, .nproc = 200, .nofile = 100 },
          0, NULL },
        { "no limit", { 0 }, INT_MAX, "no host limit applies" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[256];

        cr_assert_eq(pf_local_room(&cases[i].h, 64ull << 20, why, sizeof(why)),
                     cases[i].want, "case %s", cases[i].name);
        if (cases[i].why)
            cr_assert_str_eq(why, cases[i].why, "case %s", cases[i].name);
    }
}

/* build/unit_tests -> build/double/libgpu-double.so as CUDA and NCCL */
static void use_gpu_double(const char *gpus)
{
    char lib[PF_PATH_MAX + 32];

    pf_test_use_gpu_double(lib, sizeof(lib));
    setenv("PF_DOUBLE_GPUS", gpus, 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

Test(local_launcher, without_ranks_one_rank_per_gpu_else_two)
{
    struct pf_run *run = new_run(PF_BOOT_LOCAL);
    char err[PF_ERRLEN];
    int n = 0;

    run->cfg.command = PF_CMD_LOCAL;
    run->cfg.ranks = 0;
    use_gpu_double("3");
    cr_assert_eq(pf_local_ranks(run, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 3, "3 GPUs gave %d ranks", n);
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    cr_assert_eq(pf_local_ranks(run, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 1, "one visible GPU gave %d ranks", n);
    unsetenv("CUDA_VISIBLE_DEVICES");
    run->cfg.engine = PF_ENGINE_HOST;
    cr_assert_eq(pf_local_ranks(run, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 2, "--engine host gave %d ranks", n);
    run->cfg.engine = PF_ENGINE_AUTO;
    use_gpu_double("0");
    cr_assert_eq(pf_local_ranks(run, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 2, "no GPU gave %d ranks", n);
    use_gpu_double("3");
    setenv("EFA_PREFLIGHT_NCCL", "/nonexistent/libnccl.so.2", 1);
    cr_assert_eq(pf_local_ranks(run, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 2, "GPUs without NCCL gave %d ranks", n);
    run->cfg.ranks = 5;
    cr_assert_eq(pf_local_ranks(run, &n, err), PF_OK, "%s", err);
    cr_assert_eq(n, 5, "--ranks 5 gave %d", n);
    free_run(run);
}
