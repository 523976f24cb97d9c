/* Pure pieces of the k8s bootstrap: derive the selector, assign ranks (the
 * pods themselves are parsed by k8s/pod.c). No I/O here, so the unit tests
 * cover every branch. */
#include "k8s.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/json.h"

/* docs/internals/kubernetes.md's order ("Peer discovery"): the most specific grouping
 * label wins. */
static const char *const group_labels[] = {
    PF_K8S_JOBSET_NAME,               /* JobSet, Kubeflow Trainer's TrainJob */
    "batch.kubernetes.io/job-name",
    PF_K8S_PYTORCHJOB_NAME,           /* Kubeflow PyTorchJob (training-operator) */
    PF_K8S_LWS_NAME,                  /* LeaderWorkerSet: one group */
    PF_K8S_VOLCANO_JOB,               /* Volcano Job (its PodGroup's pods) */
    "app.kubernetes.io/instance",
};

int pf_k8s_pod_rank(const struct pf_k8s_pod *p, int parallelism)
{
    if (p->completion_index < 0)
        return -1;
    if (parallelism > 0 && p->job_index >= 0)
        return p->job_index * parallelism + p->completion_index;
    return p->completion_index;
}

static const char *label_of(const cJSON *pod, const char *key)
{
    const cJSON *labels = pf_json_at(pod, "metadata.labels");
    const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key)
                            : NULL;
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

pf_err pf_k8s_selector(const cJSON *own_pod, const char *cfg_selector,
                       char *out, size_t len, char *err)
{
    const char *name = pf_json_str(own_pod, "metadata.name");
    int n = -1;

    if (cfg_selector && *cfg_selector) {
        n = snprintf(out, len, "%s", cfg_selector);
    } else {
        for (size_t i = 0; i < sizeof(group_labels) / sizeof(group_labels[0]);
             i++) {
            const char *v = label_of(own_pod, group_labels[i]);
            const char *rjob, *group;
            if (!v)
                continue;
            rjob = i == 0 ? label_of(own_pod, PF_K8S_JOBSET_RJOB) : NULL;
            /* A LeaderWorkerSet runs many groups: the peers are this
             * group's leader and workers. */
            group = !strcmp(group_labels[i], PF_K8S_LWS_NAME)
                        ? label_of(own_pod, PF_K8S_LWS_GROUP) : NULL;
            /* A JobSet may run several replicated jobs (driver, workers):
             * the peers are this replicated job's pods. */
            if (rjob)
                n = snprintf(out, len, "%s=%s,%s=%s", group_labels[i], v,
                             PF_K8S_JOBSET_RJOB, rjob);
            else if (group)
                n = snprintf(out, len, "%s=%s,%s=%s", group_labels[i], v,
                             PF_K8S_LWS_GROUP, group);
            else
                n = snprintf(out, len, "%s=%s", group_labels[i], v);
            break;
        }
        if (n < 0)
            return pf_fail(err, PF_ERR_USAGE,
                           "cannot derive the peer selector: pod %s has none "
                           "of the labels %s, %s, %s, %s, %s, %s; set "
                           "--peer-selector", name ? name : "?",
                           group_labels[0], group_labels[1], group_labels[2],
                           group_labels[3], group_labels[4], group_labels[5]);
    }
    if (n < 0 || (size_t)n >= len)
        return pf_fail(err, PF_ERR_USAGE, "peer selector is too long");
    return PF_OK;
}

static int by_name(const void *a, const void *b)
{
    const struct pf_k8s_pod *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* Add one entry to a bounded, comma-separated list of what is missing. */
static void append(char *buf, size_t len, int *shown, int *more,
                   const char *text)
{
    size_t used = strlen(buf);

    if (*shown >= 8) {
        (*more)++;
        return;
    }
    if (used < len)
        snprintf(buf + used, len - used, "%s%s", used ? ", " : "", text);
    (*shown)++;
}

static void describe_pending(const struct pf_k8s_pod *p, char *buf, size_t len,
                             int *shown, int *more)
{
    char text[PF_NAME_MAX + 64];

    snprintf(text, sizeof(text), "%s (%s, %s)", p->name, p->phase,
             p->deleting ? "being deleted"
             : !p->ip[0] ? "no podIP" : "finished");
    append(buf, len, shown, more, text);
}

static void finish_missing(char *buf, size_t len, int more)
{
    size_t used = strlen(buf);
    if (more > 0 && used < len)
        snprintf(buf + used, len - used, " and %d more", more);
}

static bool assign_indexed(const struct pf_k8s_podset *s, int world,
                           int parallelism, const char *prefix,
                           const struct pf_k8s_pod **slot, char *missing,
                           size_t mlen)
{
    char text[PF_NAME_MAX + 64];
    int shown = 0, more = 0;
    bool complete = true;

    for (int r = 0; r < world; r++)
        slot[r] = NULL;
    for (int i = 0; i < s->n; i++) {
        const struct pf_k8s_pod *p = &s->items[i];
        int r = pf_k8s_pod_rank(p, parallelism);
        if (r < 0 || r >= world || !pf_k8s_pod_counts(p))
            continue;
        /* Two live pods with one index: take the same one on every rank. */
        if (!slot[r] || strcmp(p->name, slot[r]->name) < 0)
            slot[r] = p;
    }
    for (int r = 0; r < world; r++) {
        const struct pf_k8s_pod *seen = NULL;
        if (slot[r])
            continue;
        complete = false;
        for (int i = 0; i < s->n && !seen; i++)
            if (pf_k8s_pod_rank(&s->items[i], parallelism) == r)
                seen = &s->items[i];
        if (seen) {
            describe_pending(seen, missing, mlen, &shown, &more);
            continue;
        }
        /* Never created: name it by the pattern the controller uses. */
        if (prefix && *prefix && parallelism > 0)
            snprintf(text, sizeof(text), "%s%d-%d-* (rank %d, not created)",
                     prefix, r / parallelism, r % parallelism, r);
        else if (prefix && *prefix)
            snprintf(text, sizeof(text), "%s%d-* (rank %d, not created)",
                     prefix, r, r);
        else
            snprintf(text, sizeof(text), "rank %d (not created)", r);
        append(missing, mlen, &shown, &more, text);
    }
    finish_missing(missing, mlen, more);
    return complete;
}

static bool assign_by_name(const struct pf_k8s_podset *s, int world,
                           const struct pf_k8s_pod **slot, char *missing,
                           size_t mlen)
{
    const struct pf_k8s_pod **live = calloc((size_t)s->n + 1, sizeof(*live));
    int nlive = 0, shown = 0, more = 0;
    bool complete;

    if (!live) {
        snprintf(missing, mlen, "out of memory");
        return false;
    }
    for (int i = 0; i < s->n; i++)
        if (pf_k8s_pod_counts(&s->items[i]))
            live[nlive++] = &s->items[i];
    qsort(live, (size_t)nlive, sizeof(*live), by_name);
    complete = nlive == world;
    if (complete) {
        for (int r = 0; r < world; r++)
            slot[r] = live[r];
    } else if (nlive > world) {
        snprintf(missing, mlen, "%d pods with a podIP match the selector but "
                 "the world size is %d (set --world-size or a narrower "
                 "--peer-selector)", nlive, world);
    } else {
        for (int i = 0; i < s->n; i++)
            if (!pf_k8s_pod_counts(&s->items[i]))
                describe_pending(&s->items[i], missing, mlen, &shown, &more);
        finish_missing(missing, mlen, more);
        if (world - nlive > shown + more) {
            size_t used = strlen(missing);
            snprintf(missing + used, mlen - used, "%s%d pod(s) not created",
                     used ? ", " : "", world - nlive - shown - more);
        }
    }
    free(live);
    return complete;
}

bool pf_k8s_assign(const struct pf_k8s_podset *s, int world, int parallelism,
                   const char *own_pod, const char *name_prefix, int port,
                   struct pf_peers *peers, char *missing, size_t mlen,
                   bool *fatal)
{
    const struct pf_k8s_pod **slot;
    bool indexed = false, complete;

    *fatal = false;
    missing[0] = '\0';
    if (world < 1)
        return false;
    slot = calloc((size_t)world, sizeof(*slot));
    if (!slot) {
        *fatal = true;
        snprintf(missing, mlen, "out of memory");
        return false;
    }
    for (int i = 0; i < s->n; i++)
        if (s->items[i].completion_index >= 0)
            indexed = true;
    complete = indexed ? assign_indexed(s, world, parallelism, name_prefix,
                                        slot, missing, mlen)
                       : assign_by_name(s, world, slot, missing, mlen);
    if (complete) {
        peers->list = calloc((size_t)world, sizeof(*peers->list));
        if (!peers->list) {
            *fatal = true;
            snprintf(missing, mlen, "out of memory");
            free(slot);
            return false;
        }
        peers->world = world;
        peers->rank = -1;
        for (int r = 0; r < world; r++) {
            struct pf_peer *pe = &peers->list[r];
            pe->rank = r;
            pe->port = port;
            snprintf(pe->host, sizeof(pe->host), "%s", slot[r]->ip);
            snprintf(pe->pod, sizeof(pe->pod), "%s", slot[r]->name);
            snprintf(pe->node, sizeof(pe->node), "%s", slot[r]->node);
            if (!strcmp(slot[r]->name, own_pod))
                peers->rank = r;
        }
        if (peers->rank < 0) {
            *fatal = true;
            snprintf(missing, mlen, "own pod %s is not among the %d peers "
                     "the selector found", own_pod, world);
            free(peers->list);
            peers->list = NULL;
            complete = false;
        }
    }
    free(slot);
    return complete;
}

bool pf_k8s_leader_selector(const cJSON *own_pod, const char *selector,
                            int parallelism, char *out, size_t len)
{
    bool jobset = parallelism > 0;
    int n;

    if (!label_of(own_pod, PF_K8S_COMPLETION_INDEX) ||
        (jobset && !label_of(own_pod, PF_K8S_JOBSET_INDEX)))
        return false;
    if (jobset)
        n = snprintf(out, len, "%s,%s=0,%s=0", selector,
                     PF_K8S_COMPLETION_INDEX, PF_K8S_JOBSET_INDEX);
    else
        n = snprintf(out, len, "%s,%s=0", selector, PF_K8S_COMPLETION_INDEX);
    return n > 0 && (size_t)n < len;
}

bool pf_k8s_assign_follower(const struct pf_k8s_podset *s, int world,
                            int parallelism, const struct pf_k8s_pod *own,
                            const char *name_prefix, int port,
                            struct pf_peers *peers, char *missing,
                            size_t mlen, bool *fatal)
{
    const struct pf_k8s_pod *root = NULL, *seen = NULL;
    int me = pf_k8s_pod_rank(own, parallelism);

    *fatal = false;
    missing[0] = '\0';
    if (me < 1 || me >= world) {
        *fatal = true;
        snprintf(missing, mlen, "own pod %s has rank %d, outside the world "
                 "of %d ranks (check --world-size)", own->name, me, world);
        return false;
    }
    for (int i = 0; i < s->n; i++) {
        const struct pf_k8s_pod *p = &s->items[i];
        if (pf_k8s_pod_rank(p, parallelism) != 0)
            continue;
        if (!pf_k8s_pod_counts(p)) {
            seen = p;
            continue;
        }
        /* Two live pods with index 0: take the one every rank takes. */
        if (!root || strcmp(p->name, root->name) < 0)
            root = p;
    }
    if (!root) {
        int shown = 0, more = 0;
        if (seen)
            describe_pending(seen, missing, mlen, &shown, &more);
        else if (name_prefix && *name_prefix && parallelism > 0)
            snprintf(missing, mlen, "%s0-0-* (rank 0, not created)",
                     name_prefix);
        else if (name_prefix && *name_prefix)
            snprintf(missing, mlen, "%s0-* (rank 0, not created)",
                     name_prefix);
        else
            snprintf(missing, mlen, "rank 0 (not created)");
        return false;
    }
    peers->list = calloc((size_t)world, sizeof(*peers->list));
    if (!peers->list) {
        *fatal = true;
        snprintf(missing, mlen, "out of memory");
        return false;
    }
    peers->world = world;
    peers->rank = me;
    for (int r = 0; r < world; r++) {
        peers->list[r].rank = r;
        peers->list[r].port = port;
    }
    snprintf(peers->list[0].host, sizeof(peers->list[0].host), "%s", root->ip);
    snprintf(peers->list[0].pod, sizeof(peers->list[0].pod), "%s", root->name);
    snprintf(peers->list[0].node, sizeof(peers->list[0].node), "%s",
             root->node);
    snprintf(peers->list[me].host, sizeof(peers->list[me].host), "%s",
             own->ip);
    snprintf(peers->list[me].pod, sizeof(peers->list[me].pod), "%s",
             own->name);
    snprintf(peers->list[me].node, sizeof(peers->list[me].node), "%s",
             own->node);
    return true;
}
