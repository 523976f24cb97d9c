/* The one mapping of errors to reasons (reasons.h): which reason an error
 * gives the verdict in the stage it was met, and which class ends a
 * command that has no verdict. Every place that turns a pf_err into a
 * reason or an exit code asks here; none keeps a switch of its own. */
#include "reasons.h"

#include <stddef.h>

/* What an error means where it was met: the row of (stage, error), else
 * the stage's default. The one place an error becomes a reason. */
static const struct {
    enum pf_stage where;
    pf_err err;
    enum pf_reason reason;
} err_rows[] = {
    /* Discovery: the API, and the peers it waits for. Bad input has no
     * reason: the run stops with exit 2 and writes nothing. */
    { PF_STAGE_DISCOVER, PF_ERR_TIMEOUT, PF_R_PeerTimeout },
    { PF_STAGE_DISCOVER, PF_ERR_REJECTED, PF_R_PeerRejected },
    { PF_STAGE_DISCOVER, PF_ERR_FORBIDDEN, PF_R_Forbidden },
    { PF_STAGE_DISCOVER, PF_ERR_UNAUTHORIZED, PF_R_Unauthorized },
    { PF_STAGE_DISCOVER, PF_ERR_API, PF_R_APIUnavailable },
    { PF_STAGE_DISCOVER, PF_ERR_PROTOCOL, PF_R_APIUnavailable },
    { PF_STAGE_DISCOVER, PF_ERR_USAGE, PF_R_None },
    { PF_STAGE_DISCOVER, PF_ERR_CONFIG, PF_R_None },
    /* The ranks meeting: its only usage error is rank 0's listening
     * socket (the port taken, or an address not this node's). */
    { PF_STAGE_TRANSPORT, PF_ERR_TIMEOUT, PF_R_PeerTimeout },
    { PF_STAGE_TRANSPORT, PF_ERR_REJECTED, PF_R_PeerRejected },
    { PF_STAGE_TRANSPORT, PF_ERR_LOST, PF_R_PeerLost },
    { PF_STAGE_TRANSPORT, PF_ERR_PROTOCOL, PF_R_PeerProtocolError },
    { PF_STAGE_TRANSPORT, PF_ERR_USAGE, PF_R_RendezvousPortInUse },
    /* The engine: a missing library or provider is the node's. */
    { PF_STAGE_COLLECTIVE, PF_ERR_TIMEOUT, PF_R_PeerTimeout },
    { PF_STAGE_COLLECTIVE, PF_ERR_LOST, PF_R_PeerLost },
    { PF_STAGE_COLLECTIVE, PF_ERR_REJECTED, PF_R_PeerRejected },
    { PF_STAGE_COLLECTIVE, PF_ERR_UNSUPPORTED, PF_R_FabricUnavailable },
    { PF_STAGE_COLLECTIVE, PF_ERR_NOTFOUND, PF_R_FabricUnavailable },
    /* The Node write: a request the API server calls invalid is ours. */
    { PF_STAGE_PUBLISH, PF_ERR_FORBIDDEN, PF_R_Forbidden },
    { PF_STAGE_PUBLISH, PF_ERR_UNAUTHORIZED, PF_R_Unauthorized },
    { PF_STAGE_PUBLISH, PF_ERR_USAGE, PF_R_PublishRefused },
    { PF_STAGE_PUBLISH, PF_ERR_CONFIG, PF_R_PublishRefused },
};

static const enum pf_reason stage_default[] = {
    [PF_STAGE_DISCOVER] = PF_R_CollectiveFailed,
    [PF_STAGE_TRANSPORT] = PF_R_RendezvousFailed,
    [PF_STAGE_COLLECTIVE] = PF_R_CollectiveFailed,
    [PF_STAGE_PUBLISH] = PF_R_PublishFailed,
};

enum pf_reason pf_reason_for_err(pf_err e, enum pf_stage where)
{
    if (e == PF_OK)
        return PF_R_None;
    for (size_t i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++)
        if (err_rows[i].where == where && err_rows[i].err == e)
            return err_rows[i].reason;
    if ((int)where < 0 ||
        (size_t)where >= sizeof(stage_default) / sizeof(stage_default[0]))
        return PF_R_CollectiveFailed;
    return stage_default[where];
}

enum pf_reason_class pf_err_class(pf_err e)
{
    if (e == PF_OK)
        return PF_CLASS_OK;
    return e == PF_ERR_USAGE || e == PF_ERR_CONFIG ? PF_CLASS_USAGE
                                                   : PF_CLASS_INFRA;
}
