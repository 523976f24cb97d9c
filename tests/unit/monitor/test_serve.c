/* --listen's syntax. */
#include <criterion/criterion.h>
#include <string.h>

#include "monitor/monitor.h"

Test(serve, listen_takes_host_port_v6_and_any)
{
    char host[64], err[PF_ERRLEN];
    int port;

    cr_assert_eq(pf_mon_listen_parse("127.0.0.1:9464", host, sizeof(host),
                                     &port, err), PF_OK);
    cr_assert_str_eq(host, "127.0.0.1");
    cr_assert_eq(port, 9464);
    cr_assert_eq(pf_mon_listen_parse(":9464", host, sizeof(host), &port, err),
                 PF_OK);
    cr_assert_str_eq(host, "");
    cr_assert_eq(pf_mon_listen_parse("[::1]:0", host, sizeof(host), &port,
                                     err), PF_OK);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 0);
}

Test(serve, bad_listen_values_name_what_is_wrong)
{
    char host[64], err[PF_ERRLEN];
    int port;

    cr_assert_eq(pf_mon_listen_parse("9464", host, sizeof(host), &port, err),
                 PF_ERR_USAGE);
    cr_assert(strstr(err, "expected host:port"), "%s", err);
    cr_assert_eq(pf_mon_listen_parse("a:70000", host, sizeof(host), &port,
                                     err), PF_ERR_USAGE);
    cr_assert(strstr(err, "'70000' is not a port"), "%s", err);
    cr_assert_eq(pf_mon_listen_parse("a:", host, sizeof(host), &port, err),
                 PF_ERR_USAGE);
}
