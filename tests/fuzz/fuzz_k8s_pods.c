/* libFuzzer target: a pod list as the API server returns it (PodList
 * JSON), through the discovery pieces the k8s bootstrap runs on it: parse
 * each item, collect the set, derive the selector from the first pod and
 * assign ranks. Invariants: a complete assignment gives every rank a
 * distinct pod with a podIP and finds the own pod; an incomplete one says
 * what is missing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discover/k8s.h"
#include "util/json.h"

/* Worlds up to this size get the full assignment: keeps one input quick. */
#define FUZZ_WORLD_LIMIT 4096

static void assign(const struct pf_k8s_podset *set, int world,
                   int parallelism, const char *own)
{
    struct pf_peers peers;
    char missing[PF_ERRLEN];
    bool fatal = false, done;

    memset(&peers, 0, sizeof(peers));
    done = pf_k8s_assign(set, world, parallelism, own, "job-", 29500, &peers,
                         missing, sizeof(missing), &fatal);
    if (strnlen(missing, sizeof(missing)) == sizeof(missing))
        __builtin_trap();
    if (!done) {
        if (peers.list)
            __builtin_trap();
        return;
    }
    if (!peers.list || peers.world != world || peers.rank < 0 ||
        peers.rank >= world || strcmp(peers.list[peers.rank].pod, own))
        __builtin_trap();
    for (int r = 0; r < world; r++) {
        if (peers.list[r].rank != r || !peers.list[r].host[0])
            __builtin_trap();
        for (int q = 0; q < r; q++)
            if (!strcmp(peers.list[q].pod, peers.list[r].pod))
                __builtin_trap();
    }
    free(peers.list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_k8s_podset set = { 0, 0, NULL };
    char err[PF_ERRLEN], sel[1024], own[PF_NAME_MAX] = "";
    const cJSON *item, *first;
    int live = 0;
    cJSON *list = cJSON_ParseWithLength((const char *)data, size);

    if (!list)
        return 0;
    cJSON_ArrayForEach(item, pf_json_at(list, "items")) {
        struct pf_k8s_pod p;
        pf_k8s_pod_parse(item, &p);
        if (strnlen(p.name, sizeof(p.name)) == sizeof(p.name) ||
            strnlen(p.ip, sizeof(p.ip)) == sizeof(p.ip) ||
            strnlen(p.phase, sizeof(p.phase)) == sizeof(p.phase))
            __builtin_trap();
        if (pf_k8s_podset_put(&set, &p, err) != PF_OK)
            break;
    }
    first = cJSON_GetArrayItem(pf_json_at(list, "items"), 0);
    if (first) {
        if (pf_k8s_selector(first, NULL, sel, sizeof(sel), err) == PF_OK &&
            !sel[0])
            __builtin_trap();
        if (pf_json_str(first, "metadata.name"))
            snprintf(own, sizeof(own), "%s",
                     pf_json_str(first, "metadata.name"));
    }
    for (int i = 0; i < set.n; i++)
        live += pf_k8s_pod_counts(&set.items[i]);
    if (live > 0 && live <= FUZZ_WORLD_LIMIT) {
        assign(&set, live, 0, own);
        assign(&set, live, 2, own);
    }
    assign(&set, live + 1, 0, own);
    if (set.n > 0)
        pf_k8s_podset_remove(&set, set.items[0].name);
    pf_k8s_podset_free(&set);
    cJSON_Delete(list);
    return 0;
}
