/* libFuzzer target: a pod watch stream, one JSON event per line (ADDED,
 * MODIFIED, DELETED, BOOKMARK, ERROR), applied as the k8s bootstrap
 * applies it: split into lines, parse each, update the pod set, re-check
 * the assignment after every event. The line splitter and event handler
 * of the client are internal (k8s/client.c's on_watch, k8s/pods.c's on_event), so
 * this drives the same public pieces in the same order. Invariants: the
 * set never holds two pods of one name, and a DELETED pod is gone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discover/k8s.h"
#include "util/json.h"

static int count_named(const struct pf_k8s_podset *s, const char *name)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += !strcmp(s->items[i].name, name);
    return n;
}

static bool apply(struct pf_k8s_podset *set, const cJSON *ev, char *rv,
                  size_t rvlen)
{
    const char *type = pf_json_str(ev, "type");
    const cJSON *obj = pf_json_at(ev, "object");
    const char *v;
    struct pf_k8s_pod p;
    char err[PF_ERRLEN];

    if (!type || !obj)
        return true;
    if (!strcmp(type, "ERROR"))
        return false;
    v = pf_json_str(obj, "metadata.resourceVersion");
    if (v)
        snprintf(rv, rvlen, "%s", v);
    if (!strcmp(type, "BOOKMARK"))
        return true;
    pf_k8s_pod_parse(obj, &p);
    if (!p.name[0])
        return true;
    if (!strcmp(type, "DELETED")) {
        pf_k8s_podset_remove(set, p.name);
        if (count_named(set, p.name) != 0)
            __builtin_trap();
    } else {
        if (pf_k8s_podset_put(set, &p, err) != PF_OK)
            return false;
        if (count_named(set, p.name) != 1)
            __builtin_trap();
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_k8s_podset set = { 0, 0, NULL };
    char rv[64] = "", *text = malloc(size + 1), *start, *nl;
    bool more = true;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (start = text; more && start < text + size; start = nl + 1) {
        cJSON *ev;
        nl = memchr(start, '\n', (size_t)(text + size - start));
        if (!nl)
            break;                    /* a partial line waits for more */
        *nl = '\0';
        ev = cJSON_Parse(start);
        if (ev) {
            struct pf_peers peers;
            char missing[PF_ERRLEN];
            bool fatal;
            more = apply(&set, ev, rv, sizeof(rv));
            cJSON_Delete(ev);
            memset(&peers, 0, sizeof(peers));
            if (set.n > 0 && pf_k8s_assign(&set, 2, 0, set.items[0].name,
                                           "", 29500, &peers, missing,
                                           sizeof(missing), &fatal))
                free(peers.list);
        }
    }
    if (strnlen(rv, sizeof(rv)) == sizeof(rv))
        __builtin_trap();
    pf_k8s_podset_free(&set);
    free(text);
    return 0;
}
