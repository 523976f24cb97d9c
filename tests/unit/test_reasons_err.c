/* The one mapping of errors to reasons and classes (agent/reasons_err.c). */
#include <criterion/criterion.h>

#include "reasons.h"

/* The one mapping of errors to reasons: what each stage said before it
 * (one switch each) it says here. */
Test(reasons_err, an_error_becomes_the_reason_of_the_stage_it_was_met_in)
{
    static const struct {
        enum pf_stage where;
        pf_err err;
        enum pf_reason want;
    } m[] = {
        { PF_STAGE_DISCOVER, PF_OK, PF_R_None },
        { PF_STAGE_DISCOVER, PF_ERR_TIMEOUT, PF_R_PeerTimeout },
        { PF_STAGE_DISCOVER, PF_ERR_REJECTED, PF_R_PeerRejected },
        { PF_STAGE_DISCOVER, PF_ERR_FORBIDDEN, PF_R_Forbidden },
        { PF_STAGE_DISCOVER, PF_ERR_UNAUTHORIZED, PF_R_Unauthorized },
        { PF_STAGE_DISCOVER, PF_ERR_API, PF_R_APIUnavailable },
        { PF_STAGE_DISCOVER, PF_ERR_PROTOCOL, PF_R_APIUnavailable },
        { PF_STAGE_DISCOVER, PF_ERR_USAGE, PF_R_None },
        { PF_STAGE_DISCOVER, PF_ERR_CONFIG, PF_R_None },
        { PF_STAGE_DISCOVER, PF_ERR_NOMEM, PF_R_CollectiveFailed },
        { PF_STAGE_DISCOVER, PF_ERR_LOST, PF_R_CollectiveFailed },
        { PF_STAGE_TRANSPORT, PF_OK, PF_R_None },
        { PF_STAGE_TRANSPORT, PF_ERR_TIMEOUT, PF_R_PeerTimeout },
        { PF_STAGE_TRANSPORT, PF_ERR_REJECTED, PF_R_PeerRejected },
        { PF_STAGE_TRANSPORT, PF_ERR_LOST, PF_R_PeerLost },
        { PF_STAGE_TRANSPORT, PF_ERR_PROTOCOL, PF_R_PeerProtocolError },
        { PF_STAGE_TRANSPORT, PF_ERR_USAGE, PF_R_RendezvousPortInUse },
        { PF_STAGE_TRANSPORT, PF_ERR_SYS, PF_R_RendezvousFailed },
        { PF_STAGE_TRANSPORT, PF_ERR_IO, PF_R_RendezvousFailed },
        { PF_STAGE_COLLECTIVE, PF_OK, PF_R_None },
        { PF_STAGE_COLLECTIVE, PF_ERR_TIMEOUT, PF_R_PeerTimeout },
        { PF_STAGE_COLLECTIVE, PF_ERR_LOST, PF_R_PeerLost },
        { PF_STAGE_COLLECTIVE, PF_ERR_REJECTED, PF_R_PeerRejected },
        { PF_STAGE_COLLECTIVE, PF_ERR_UNSUPPORTED, PF_R_FabricUnavailable },
        { PF_STAGE_COLLECTIVE, PF_ERR_NOTFOUND, PF_R_FabricUnavailable },
        { PF_STAGE_COLLECTIVE, PF_ERR_PROTOCOL, PF_R_CollectiveFailed },
        { PF_STAGE_COLLECTIVE, PF_ERR_DATA, PF_R_CollectiveFailed },
        { PF_STAGE_COLLECTIVE, PF_ERR_ENGINE, PF_R_CollectiveFailed },
        { PF_STAGE_PUBLISH, PF_OK, PF_R_None },
        { PF_STAGE_PUBLISH, PF_ERR_FORBIDDEN, PF_R_Forbidden },
        { PF_STAGE_PUBLISH, PF_ERR_UNAUTHORIZED, PF_R_Unauthorized },
        { PF_STAGE_PUBLISH, PF_ERR_USAGE, PF_R_PublishRefused },
        { PF_STAGE_PUBLISH, PF_ERR_CONFIG, PF_R_PublishRefused },
        { PF_STAGE_PUBLISH, PF_ERR_API, PF_R_PublishFailed },
        { PF_STAGE_PUBLISH, PF_ERR_TIMEOUT, PF_R_PublishFailed },
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
        cr_assert_eq(pf_reason_for_err(m[i].err, m[i].where), m[i].want,
                     "stage %d, %s: got %s, want %s", m[i].where,
                     pf_err_name(m[i].err),
                     pf_reason_name(pf_reason_for_err(m[i].err, m[i].where)),
                     pf_reason_name(m[i].want));
}

/* Without a verdict, the exit code is still a class's: bad input is
 * usage (2), anything else infrastructure (3). */
Test(reasons_err, an_error_without_a_verdict_exits_by_its_class)
{
    cr_assert_eq(pf_err_class(PF_OK), PF_CLASS_OK);
    cr_assert_eq(pf_class_exit_code(pf_err_class(PF_OK)), 0);
    cr_assert_eq(pf_class_exit_code(pf_err_class(PF_ERR_USAGE)), 2);
    cr_assert_eq(pf_class_exit_code(pf_err_class(PF_ERR_CONFIG)), 2);
    for (pf_err e = PF_ERR_IO; e <= PF_ERR_ENGINE; e++)
        cr_assert_eq(pf_class_exit_code(pf_err_class(e)), 3, "%s",
                     pf_err_name(e));
}
