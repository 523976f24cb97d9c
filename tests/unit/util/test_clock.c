/* Wall-clock time as RFC 3339, both ways: what the agent writes on a Node
 * reads back to the same second, in the API server's spellings too. */
#include <criterion/criterion.h>
#include <time.h>

#include "util/clock.h"

Test(clock, rfc3339_reads_back_what_it_wrote)
{
    char s[32];
    time_t before = time(NULL);

    pf_rfc3339(s, -3600);
    cr_assert_geq(pf_rfc3339_seconds(s), (int64_t)before - 3600);
    cr_assert_leq(pf_rfc3339_seconds(s), (int64_t)time(NULL) - 3600);
}

Test(clock, rfc3339_is_utc_and_takes_a_fraction)
{
    cr_assert_eq(pf_rfc3339_seconds("2026-01-01T00:00:00Z"), 1767225600);
    cr_assert_eq(pf_rfc3339_seconds("2026-01-01T00:00:01.250Z"), 1767225601);
}

Test(clock, rfc3339_refuses_what_is_not_utc_rfc3339)
{
    cr_assert_eq(pf_rfc3339_seconds(NULL), -1);
    cr_assert_eq(pf_rfc3339_seconds(""), -1);
    cr_assert_eq(pf_rfc3339_seconds("2026-01-01 00:00:00Z"), -1);
    cr_assert_eq(pf_rfc3339_seconds("2026-01-01T00:00:00"), -1);
    cr_assert_eq(pf_rfc3339_seconds("2026-01-01T00:00:00+01:00"), -1);
    cr_assert_eq(pf_rfc3339_seconds("2026-01-01T00:00:00Zjunk"), -1);
    cr_assert_eq(pf_rfc3339_seconds("20260101T000000Z"), -1);
}
