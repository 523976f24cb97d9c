/* The webhook's options: its own (port, TLS files, agent image, body bound),
 * the gate's taken from the shared table, and the usage errors that name
 * what is missing. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/config.h"

static pf_err load(struct pf_config *c, char **argv, int argc, char **envp, char *err)
{
    bool help;
    pf_err e = pf_config_load(c, PF_CMD_WEBHOOK, argc, argv, envp, &help, err);
    return e;
}

Test(config_webhook, flags_and_env_reach_the_options)
{
    struct pf_config c;
    char err[PF_ERRLEN] = "";
    char *argv[] = { "webhook", "--webhook-port", "0", "--tls-cert-file", "/tls/tls.crt",
                     "--tls-key-file", "/tls/tls.key", "--webhook-max-body", "1M",
                     "--timeout", "900", "--taint-on-failure" };
    char *envp[] = { "EFA_PREFLIGHT_AGENT_IMAGE=r/efa-preflight:0.1.0-agent",
                     "EFA_PREFLIGHT_WEBHOOK_THREADS=4", NULL };
    cr_assert_eq(load(&c, argv, 12, envp, err), PF_OK, "%s", err);
    cr_assert_eq(c.webhook_port, 0);
    cr_assert_str_eq(c.tls_cert_file, "/tls/tls.crt");
    cr_assert_str_eq(c.agent_image, "r/efa-preflight:0.1.0-agent");
    cr_assert_eq(c.webhook_max_body, 1u << 20);
    cr_assert_eq(c.webhook_threads, 4);
    cr_assert_eq(c.timeout_s, 900);
    cr_assert(c.taint_on_failure);
    pf_config_free(&c);
}

Test(config_webhook, defaults)
{
    struct pf_config c;
    pf_config_defaults(&c);
    cr_assert_eq(c.webhook_port, 8443);
    cr_assert_eq(c.webhook_max_body, 512u * 1024);
    cr_assert_eq(c.webhook_threads, 2);
}

Test(config_webhook, missing_tls_or_image_is_a_usage_error_naming_it)
{
    struct pf_config c;
    char err[PF_ERRLEN] = "";
    char *no_tls[] = { "webhook", "--agent-image", "a:1" };
    cr_assert_eq(load(&c, no_tls, 3, NULL, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "tls_cert_file") && strstr(err, "tls_key_file"), "%s", err);
    pf_config_free(&c);
    char *no_image[] = { "webhook", "--tls-cert-file", "c", "--tls-key-file", "k" };
    cr_assert_eq(load(&c, no_image, 5, NULL, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "agent_image"), "%s", err);
    pf_config_free(&c);
    char *bad_port[] = { "webhook", "--webhook-port", "70000" };
    cr_assert_eq(load(&c, bad_port, 3, NULL, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "webhook-port") || strstr(err, "webhook_port"), "%s", err);
    pf_config_free(&c);
    /* a webhook flag is not a flag of `run` */
    bool help;
    char *run_flag[] = { "run", "--agent-image", "a:1" };
    cr_assert_eq(pf_config_load(&c, PF_CMD_RUN, 3, run_flag, NULL, &help, err), PF_ERR_USAGE);
    pf_config_free(&c);
}
