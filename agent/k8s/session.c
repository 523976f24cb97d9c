/* A session: the target read once, a client opened from it. */
#include "session.h"

#include <stdio.h>
#include <string.h>

#include "client.h"

void pf_k8s_target(const struct pf_kube_given *g, struct pf_k8s_target *t)
{
    memset(t, 0, sizeof(*t));
    pf_kube_identity(g, &t->id);
    t->rc = pf_kube_opts_init(&t->opts, g, t->err);
}

pf_err pf_k8s_open(const struct pf_k8s_target *t, int64_t deadline,
                   const atomic_int *cancel, struct pf_kube **k, char *err)
{
    struct pf_kube_opts o;

    *k = NULL;
    if (t->rc != PF_OK)
        return pf_fail(err, t->rc, "%s", t->err);
    o = t->opts;
    o.deadline = deadline;
    o.cancel = cancel;
    return pf_kube_open(&o, k, err);
}

void pf_k8s_close(struct pf_kube *k)
{
    pf_kube_close(k);
}

void pf_k8s_global_init(void)
{
    pf_kube_global_init();
}
