/* The Lease lock's pure decisions and names (k8s/lease.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "k8s/lease.h"

Test(k8s_coord, lease_taken_only_when_free_ours_or_unchanged_for_its_duration)
{
    cr_assert(pf_lease_takeable("", "me_1", 1000, 15, 1000));
    cr_assert(pf_lease_takeable("me_1", "me_1", 1000, 15, 1000));
    cr_assert_not(pf_lease_takeable("you_2", "me_1", 1000, 15, 15999));
    cr_assert(pf_lease_takeable("you_2", "me_1", 1000, 15, 16000));
}

/* A dead holder's record claiming an hour is honoured PF_LEASE_HONOUR_MAX_S
 * at most; a live agent renews within 15 s, well inside it. */
Test(k8s_coord, lease_with_an_absurd_duration_is_honoured_a_bounded_time)
{
    int64_t bound = PF_LEASE_HONOUR_MAX_S * 1000;

    cr_assert_geq(PF_LEASE_HONOUR_MAX_S, 15);
    cr_assert_not(pf_lease_takeable("you_2", "me_1", 1000, 3600,
                                    1000 + bound - 1));
    cr_assert(pf_lease_takeable("you_2", "me_1", 1000, 3600, 1000 + bound));
    /* a short duration stays its own */
    cr_assert(pf_lease_takeable("you_2", "me_1", 1000, 5, 6000));
}

Test(k8s_coord, lease_names_are_dns_subdomains)
{
    char name[PF_K8S_NAME_MAX + 1];
    char longer[300];

    pf_lease_name("efa-preflight-p5", "p5.48xlarge", "us-east-1a", name,
                  sizeof(name));
    cr_assert_str_eq(name, "efa-preflight-p5-p5.48xlarge-us-east-1a");
    pf_lease_name("Rel", "ml.P5_48XL", "", name, sizeof(name));
    cr_assert_str_eq(name, "rel-ml.p5-48xl-none");
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    pf_lease_name(longer, "t", "z", name, sizeof(name));
    cr_assert_leq(strlen(name), 253);
    cr_assert(strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") ==
              strlen(name), "%s", name);
}
