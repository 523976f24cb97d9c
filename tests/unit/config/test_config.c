/* Config: precedence, types, ranges and the file:line messages. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"

static pf_err load(struct pf_config *cfg, enum pf_command cmd, char **argv,
                   int argc, char **envp, char *err)
{
    bool help;
    return pf_config_load(cfg, cmd, argc, argv, envp, &help, err);
}

static pf_err yaml(struct pf_config *cfg, const char *text, char *err)
{
    pf_config_defaults(cfg);
    return pf_config_load_yaml_buf(cfg, "t.yaml", text, strlen(text), err);
}

Test(config, defaults_are_documented_values)
{
    struct pf_config c;
    pf_config_defaults(&c);
    cr_assert_eq(c.port, 29600);
    cr_assert_str_eq(c.fabric_provider, "efa");
    cr_assert_eq(c.min_bytes, 8);
    cr_assert_eq(c.max_bytes, 0);         /* auto: 64M or the floor's size */
    cr_assert_eq(c.rank, -1);
    cr_assert_eq(c.expect_efa, -1);
    cr_assert_str_eq(c.label_prefix, "efa-preflight.io/");
    cr_assert(c.check);
}

Test(config, yaml_sets_every_type)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    cr_assert_eq(yaml(&c, "port: 1234\nmin_busbw_gbps: 12.5\njson: true\n"
                          "max_bytes: 1G\nengine: host\nfabric_provider: tcp\n"
                          "peers: [a:1, b:2]\n", err), PF_OK, "%s", err);
    cr_assert_eq(c.port, 1234);
    cr_assert_float_eq(c.min_busbw_gbps, 12.5, 1e-9);
    cr_assert(c.json);
    cr_assert_eq(c.max_bytes, 1ull << 30);
    cr_assert_str_eq(pf_engine_name(c.engine), "host");
    cr_assert_str_eq(c.peers, "a:1,b:2");
    pf_config_free(&c);
}

Test(config, unknown_key_names_file_line_and_key)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    cr_assert_eq(yaml(&c, "port: 1\nfabric_provder: tcp\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:2: unknown key 'fabric_provder'");
}

Test(config, wrong_type_names_file_line_and_key)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    cr_assert_eq(yaml(&c, "\n\nport: eighty\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:3: key 'port': 'eighty' is not an integer");
    cr_assert_eq(yaml(&c, "json: [1]\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:1: key 'json': expected a value, got a list");
}

Test(config, out_of_range_is_an_error)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    cr_assert_eq(yaml(&c, "timeout: 0\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:1: key 'timeout': 0 is out of range 1..86400");
    cr_assert_eq(yaml(&c, "engine: gpu\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:1: key 'engine': 'gpu' is not one of auto|nccl|host");
}

/* An enum option's words, in its choices' order, are its values, and the
 * name function gives each word back: the choices in the refusal are
 * exactly the names, joined. */
#define CHECK_ENUM(key, field, name, n)                                       \
    do {                                                                      \
        char text[64], want[PF_ERRLEN] = "";                                  \
        for (int v = 0; v < (n); v++) {                                       \
            snprintf(text, sizeof(text), key ": %s\n", name(v));              \
            cr_assert_eq(yaml(&c, text, err), PF_OK, "%s", err);              \
            cr_assert_eq((int)c.field, v, "%s", text);                        \
            snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",\
                     v ? "|" : "", name(v));                                  \
        }                                                                     \
        cr_assert_str_eq(name(n), "?");                                       \
        cr_assert_eq(yaml(&c, key ": nope\n", err), PF_ERR_CONFIG);           \
        cr_assert(strstr(err, "'nope' is not one of ") &&                     \
                  !strcmp(strstr(err, " of ") + 4, want), "%s", err);         \
    } while (0)

Test(config, enum_options_are_parsed_once_into_their_values)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    CHECK_ENUM("engine", engine, pf_engine_name, 3);
    CHECK_ENUM("bootstrap", bootstrap, pf_bootstrap_name, 5);
    CHECK_ENUM("mode", mode, pf_mode_name, 2);
    CHECK_ENUM("on_failure", on_failure, pf_on_failure_name, 2);
    CHECK_ENUM("on_fail_action", on_fail_action, pf_fail_action_name, 3);
    CHECK_ENUM("log_level", log_level, pf_log_level_name, 4);
    /* The defaults, as --help prints them. */
    pf_config_defaults(&c);
    cr_assert_eq(c.engine, PF_ENGINE_AUTO);
    cr_assert_eq(c.bootstrap, PF_BOOT_AUTO);
    cr_assert_eq(c.mode, PF_MODE_INITCONTAINER);
    cr_assert_eq(c.on_failure, PF_ON_FAILURE_FAIL);
    cr_assert_eq(c.on_fail_action, PF_FAIL_ACTION_NONE);
    cr_assert_eq(c.log_level, PF_LOG_WARN);
}

Test(config, bad_yaml_gives_position)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    cr_assert_eq(yaml(&c, "port: 1\n  bad: [\n", err), PF_ERR_CONFIG);
    cr_assert(strstr(err, "t.yaml:2:") == err, "%s", err);
    cr_assert(strstr(err, "invalid YAML"), "%s", err);
    cr_assert_eq(yaml(&c, "- a\n- b\n", err), PF_ERR_CONFIG);
    cr_assert(strstr(err, "top level must be a mapping"), "%s", err);
    cr_assert_eq(yaml(&c, "port: 1\nport: 2\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:2: key 'port' given twice");
}

Test(config, second_yaml_document_is_an_error)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    /* The second document would otherwise be dropped unread. */
    cr_assert_eq(yaml(&c, "port: 1234\n---\nport: 99999999\nbogus: 1\n", err),
                 PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:2: a second YAML document (after '---'); "
                     "put everything in one");
    cr_assert_eq(yaml(&c, "port: 1234\n---\na: b: c\n", err), PF_ERR_CONFIG);
    cr_assert(strstr(err, "t.yaml:3:") == err, "%s", err);
    cr_assert_eq(yaml(&c, "---\nport: 1234\n...\n", err), PF_OK, "%s", err);
    cr_assert_eq(c.port, 1234);
}

Test(config, non_utf8_names_the_line_of_the_bad_byte)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    cr_assert_eq(yaml(&c, "port: 1\nlog_level: info\nrun_id: ab\xff\xfe\n", err),
                 PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:3:11: invalid YAML: invalid leading UTF-8 "
                     "octet (byte 0xFF)");
}

Test(config, flags_beat_env_beat_file)
{
    struct pf_config c;
    char err[PF_ERRLEN], path[] = "/tmp/pf-config-test-XXXXXX";
    int fd = mkstemp(path);
    const char text[] = "port: 1111\ntimeout: 11\niters: 3\n";
    char cfgarg[64];
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
    close(fd);
    snprintf(cfgarg, sizeof(cfgarg), "--config=%s", path);
    char *argv[] = { "run", cfgarg, "--port", "3333", NULL };
    char *envp[] = { "EFA_PREFLIGHT_PORT=2222", "EFA_PREFLIGHT_TIMEOUT=22", NULL };
    cr_assert_eq(load(&c, PF_CMD_RUN, argv, 4, envp, err), PF_OK, "%s", err);
    unlink(path);
    cr_assert_eq(c.port, 3333);     /* flag */
    cr_assert_eq(c.timeout_s, 22);  /* env over file */
    cr_assert_eq(c.iters, 3);       /* file over default */
}

Test(config, short_flags_and_sizes)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    char *argv[] = { "local", "-b", "1K", "-e", "4MiB", "-f", "4", "-n", "7",
                     "-w", "1", NULL };
    cr_assert_eq(load(&c, PF_CMD_LOCAL, argv, 11, NULL, err), PF_OK, "%s", err);
    cr_assert_eq(c.min_bytes, 1024);
    cr_assert_eq(c.max_bytes, 4u << 20);
    cr_assert_eq(c.step_factor, 4);
    cr_assert_eq(c.iters, 7);
    cr_assert_eq(c.warmup, 1);
    cr_assert_str_eq(pf_bootstrap_name(c.bootstrap), "local");
}

Test(config, flag_errors)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    char *a1[] = { "node", "--ranks", "3", NULL };
    char *a2[] = { "run", "--no-check", "--check=maybe", NULL };
    char *a3[] = { "run", "-b", "2M", "-e", "1M", NULL };
    char *a4[] = { "run", "--label-prefix", "Bad_Prefix/", NULL };
    cr_assert_eq(load(&c, PF_CMD_NODE, a1, 3, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "unknown option '--ranks' for 'node'");
    cr_assert_eq(load(&c, PF_CMD_RUN, a2, 3, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "--check: 'maybe' is not a boolean (true/false)");
    cr_assert_eq(load(&c, PF_CMD_RUN, a3, 5, NULL, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "min_bytes (2097152) is larger than max_bytes"), "%s", err);
    cr_assert_eq(load(&c, PF_CMD_RUN, a4, 3, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "--label-prefix: label prefix 'Bad_Prefix/' must be a "
                     "lowercase DNS subdomain followed by '/'");
    /* The API server refuses these prefixes (422) only after the
     * conditions and the Event are written: refuse them up front. */
    const char *bad[] = { "efa..preflight.io/", "efa-.preflight.io/",
                          "efa.-preflight.io/" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *a5[] = { "run", "--label-prefix", (char *)bad[i], NULL };
        cr_assert_eq(load(&c, PF_CMD_RUN, a5, 3, NULL, err), PF_ERR_USAGE,
                     "%s", bad[i]);
        cr_assert(strstr(err, "must be a lowercase DNS subdomain followed by "
                         "'/'"), "%s", err);
    }
    char *a6[] = { "run", "--label-prefix", "a-b.c-d.io/", NULL };
    cr_assert_eq(load(&c, PF_CMD_RUN, a6, 3, NULL, err), PF_OK, "%s", err);
}

Test(config, missing_and_unwanted_values_are_named)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    /* A short option without its value is not an unknown option, and a
     * value given to a flag that takes none does not "need a value". */
    char *a1[] = { "local", "-n", "3", "-b", NULL };
    char *a2[] = { "local", "--no-check=yes", NULL };
    char *a3[] = { "local", "--port", NULL };
    char *a4[] = { "local", "-x", NULL };
    cr_assert_eq(load(&c, PF_CMD_LOCAL, a1, 4, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "option -b needs a value");
    cr_assert_eq(load(&c, PF_CMD_LOCAL, a2, 2, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "option '--no-check' takes no value");
    cr_assert_eq(load(&c, PF_CMD_LOCAL, a3, 2, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "option '--port' needs a value");
    cr_assert_eq(load(&c, PF_CMD_LOCAL, a4, 2, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "option -x is unknown");
}

Test(config, bad_label_prefix_and_provider_name_their_source)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    char *argv[] = { "run", NULL };
    char *env_lp[] = { "EFA_PREFLIGHT_LABEL_PREFIX=kubernetes.io/", NULL };
    char *env_fp[] = { "EFA_PREFLIGHT_FABRIC_PROVIDER=tcp x", NULL };
    /* Checked where the value is set: the message says which of flag,
     * env and file:line holds the bad value. */
    cr_assert_eq(load(&c, PF_CMD_RUN, argv, 1, env_lp, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "EFA_PREFLIGHT_LABEL_PREFIX: label prefix "
                     "'kubernetes.io/' is reserved for Kubernetes");
    cr_assert_eq(load(&c, PF_CMD_RUN, argv, 1, env_fp, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "EFA_PREFLIGHT_FABRIC_PROVIDER: 'tcp x' is not a "
                     "provider name");
    cr_assert_eq(yaml(&c, "port: 1\nlabel_prefix: Example.com/\n", err),
                 PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:2: key 'label_prefix': label prefix "
                     "'Example.com/' must be a lowercase DNS subdomain "
                     "followed by '/'");
    cr_assert_eq(yaml(&c, "fabric_provider: ''\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:1: key 'fabric_provider': provider name is "
                     "empty");
    cr_assert_eq(yaml(&c, "label_prefix: a-b.c-d.io/\nfabric_provider: tcp\n",
                      err), PF_OK, "%s", err);
    cr_assert_str_eq(c.label_prefix, "a-b.c-d.io/");
}

Test(config, bootstrap_auto_resolves_from_environment)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    char *argv[] = { "run", NULL };
    char *k8s[] = { "KUBERNETES_SERVICE_HOST=10.0.0.1", NULL };
    char *mpi[] = { "OMPI_COMM_WORLD_SIZE=4", NULL };
    cr_assert_eq(load(&c, PF_CMD_RUN, argv, 1, k8s, err), PF_OK);
    cr_assert_str_eq(pf_bootstrap_name(c.bootstrap), "k8s");
    cr_assert_eq(load(&c, PF_CMD_RUN, argv, 1, mpi, err), PF_OK);
    cr_assert_str_eq(pf_bootstrap_name(c.bootstrap), "mpi");
    cr_assert_eq(load(&c, PF_CMD_RUN, argv, 1, NULL, err), PF_OK);
    cr_assert_str_eq(pf_bootstrap_name(c.bootstrap), "static");
}

Test(config, parse_size_units)
{
    uint64_t v;
    char err[PF_ERRLEN];
    cr_assert_eq(pf_parse_size("8", &v, err), PF_OK);
    cr_assert_eq(v, 8);
    cr_assert_eq(pf_parse_size("64M", &v, err), PF_OK);
    cr_assert_eq(v, 64u << 20);
    cr_assert_eq(pf_parse_size("1.5K", &v, err), PF_OK);
    cr_assert_eq(v, 1536);
    cr_assert_eq(pf_parse_size("-1", &v, err), PF_ERR_USAGE);
    cr_assert_eq(pf_parse_size("3X", &v, err), PF_ERR_USAGE);
    cr_assert_eq(pf_parse_size("0.3", &v, err), PF_ERR_USAGE);
}

/* libyaml slows down with the square of the nesting: 40k levels took 7 s.
 * The depth is checked before anything is built, and fails fast with the
 * position of the first level too deep. */
Test(config, deep_yaml_fails_fast_with_its_position)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    size_t depth = 40000, n = 2 * depth + 16;
    char *text = malloc(n);
    struct timespec t0, t1;
    double secs;

    cr_assert_not_null(text);
    memcpy(text, "port: ", 6);
    memset(text + 6, '[', depth);
    memset(text + 6 + depth, ']', depth);
    strcpy(text + 6 + 2 * depth, "\n");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(yaml(&c, text, err), PF_ERR_CONFIG);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert(secs < 0.5, "40k-deep YAML took %.2f s", secs);
    cr_assert_str_eq(err, "t.yaml:1:70: YAML nested deeper than 64 levels");
    free(text);

    /* Block style too; 64 levels still load (and fail on the key). */
    cr_assert_eq(yaml(&c, "a:\n b:\n  c: 1\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:1: unknown key 'a'");
}

/* A config that is only "---" (or a null) is empty, as an empty file is. */
Test(config, document_marker_alone_is_an_empty_config)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    const char *empty[] = { "", "---\n", "---\n...\n", "~\n", "--- null\n",
                            "# only a comment\n---\n" };

    for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
        cr_assert_eq(yaml(&c, empty[i], err), PF_OK, "'%s': %s", empty[i], err);
        cr_assert_eq(c.port, 29600);
    }
    /* A quoted empty string is a value, not nothing. */
    cr_assert_eq(yaml(&c, "--- ''\n", err), PF_ERR_CONFIG);
    cr_assert(strstr(err, "top level must be a mapping"), "%s", err);
}

/* A URL goes into a request line: CR, LF, spaces and control bytes are
 * bad input (exit 2), caught where the option is set. */
Test(config, api_server_with_crlf_is_a_usage_error)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    char *a1[] = { "run", "--api-server", "https://10.0.0.1:443\r\nX-Evil: 1", NULL };
    char *a2[] = { "run", "--api-server", "http://10.0.0.1", NULL };
    char *a3[] = { "run", "--api-server", "https://10.0.0.1:6443", NULL };
    char *env[] = { "EFA_PREFLIGHT_IMDS_ENDPOINT=http://x y", NULL };
    char *a4[] = { "node", NULL };

    cr_assert_eq(load(&c, PF_CMD_RUN, a1, 3, NULL, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "--api-server: URL holds a space, control or "
                     "non-ASCII byte (0x0D at 20)");
    cr_assert_eq(load(&c, PF_CMD_RUN, a2, 3, NULL, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "must start with https://"), "%s", err);
    cr_assert_eq(load(&c, PF_CMD_RUN, a3, 3, NULL, err), PF_OK, "%s", err);
    cr_assert_eq(load(&c, PF_CMD_NODE, a4, 1, env, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "EFA_PREFLIGHT_IMDS_ENDPOINT: URL holds"), "%s", err);
    cr_assert_eq(yaml(&c, "api_server: \"https://a\\nb\"\n", err), PF_ERR_CONFIG);
    cr_assert(strstr(err, "t.yaml:1: key 'api_server': URL holds"), "%s", err);
}

/* A FIFO (or a directory) given as the config file fails at once: it is
 * never opened for a blocking read. */
Test(config, fifo_config_fails_at_once, .timeout = 5)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    char dir[] = "/tmp/pf-fifo-XXXXXX", path[64];

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/cfg.yaml", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    pf_config_defaults(&c);
    cr_assert_eq(pf_config_load_yaml(&c, path, err), PF_ERR_CONFIG);
    cr_assert(strstr(err, "not a regular file (a FIFO)"), "%s", err);
    cr_assert_eq(pf_config_load_yaml(&c, dir, err), PF_ERR_CONFIG);
    cr_assert(strstr(err, "not a regular file (a directory)"), "%s", err);
    unlink(path);
    rmdir(dir);
}

/* max_tainted: a count or a percentage. A count too large for an int was
 * converted before the range was checked (undefined; found by fuzz_config). */
Test(config, max_tainted_count_or_percentage)
{
    const char *good[] = { "0", "5", "1000000", "20%", "0.5%", "100%" };
    const char *bad[] = { "4404446446447", "1e300", "2.5", "-1", "101%",
                          "20 %", "five", "" };
    int count;
    double pct;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        cr_assert_eq(pf_parse_cap(good[i], &count, &pct), PF_OK, "%s", good[i]);
    cr_assert_eq(pf_parse_cap("1000000", &count, &pct), PF_OK);
    cr_assert_eq(count, 1000000);
    cr_assert_eq(pct, -1);
    cr_assert_eq(pf_parse_cap("20%", &count, &pct), PF_OK);
    cr_assert_eq(count, -1);
    cr_assert_float_eq(pct, 20.0, 1e-9);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(pf_parse_cap(bad[i], &count, &pct), PF_ERR_USAGE, "%s", bad[i]);

    struct pf_config c;
    char err[PF_ERRLEN];
    cr_assert_eq(yaml(&c, "max_tainted: 04404446446447\n", err), PF_ERR_CONFIG);
    cr_assert_str_eq(err, "t.yaml:1: key 'max_tainted': '04404446446447' is not "
                     "a node count or a percentage (e.g. 5 or 20%)");
}

/* `local` picks a free rendezvous port (0) unless one is given; run keeps
 * the fixed default its peers expect. */
Test(config, local_defaults_to_a_free_port_unless_given)
{
    struct pf_config c;
    char err[PF_ERRLEN];
    char *local[] = { "local", NULL };
    char *given[] = { "local", "--port", "30400", NULL };
    char *envp[] = { "EFA_PREFLIGHT_PORT=30401", NULL };

    cr_assert_eq(load(&c, PF_CMD_LOCAL, local, 1, NULL, err), PF_OK, "%s", err);
    cr_assert_eq(c.port, 0);
    pf_config_free(&c);
    cr_assert_eq(load(&c, PF_CMD_LOCAL, given, 3, NULL, err), PF_OK, "%s", err);
    cr_assert_eq(c.port, 30400);
    pf_config_free(&c);
    cr_assert_eq(load(&c, PF_CMD_LOCAL, local, 1, envp, err), PF_OK, "%s", err);
    cr_assert_eq(c.port, 30401);
    pf_config_free(&c);
    cr_assert_eq(load(&c, PF_CMD_RUN, local, 1, NULL, err), PF_OK, "%s", err);
    cr_assert_eq(c.port, 29600);
    pf_config_free(&c);
}
