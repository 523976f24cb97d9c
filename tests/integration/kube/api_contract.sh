#!/bin/bash
# What a real kube-apiserver (v1.20.2, tests/kube_real) answers to the
# requests the agent makes, recorded as assertions that the fake API server
# (tests/fakes/apiserver/server.py) is held to as well: both sides run all
# but the two marked (real side only):
#   - it speaks HTTP/2 (ALPN h2) to a client that offers it (real);
#   - an Event about a Node posted outside `default` is refused, 422;
#   - a node list honours limit and hands out a continue token (and
#     remainingItemCount); the token pages on; a garbled one is a 400;
#   - a merge patch with a stale metadata.resourceVersion is a 409
#     Conflict, one with the current one applies; null deletes a label;
#   - PUT to a missing Lease creates it (201), with or without a
#     resourceVersion in the body; a PUT with a stale resourceVersion is a
#     409, even one that would change nothing (with the current one, a
#     PUT that changes nothing is a 200 and keeps the resourceVersion);
#   - a ConfigMap is not created by a PUT (404); a PUT with a stale
#     resourceVersion is a 409, one without any is unconditional (200);
#   - an Event POSTed twice under one name: 409 AlreadyExists;
#   - a token bound to a pod stops working (401) once the pod is deleted
#     (within the server's 10 s cache of successful authentications; real).
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kube_init 0 --set mode=daemonset --set 'jobNamespaces={ml}'
for i in 0 1 2; do kube_node "node-$i" '{"a":"b"}'; done

expect() {   # expect CODE WHAT -- kube_call args: the status must be CODE
    local want=$1 what=$2 got
    shift 3
    got=$(kube_call "$@" --status)
    [ "$got" = "$want" ] || { kube_call "$@" >&2; kube_die "$what: HTTP $got, want $want"; }
    echo "  $what: HTTP $got"
}

# Events about a Node: only in default.
ev() {   # ev NAMESPACE NAME
    printf '{"apiVersion":"v1","kind":"Event","metadata":{"name":"%s","namespace":"%s"},"involvedObject":{"kind":"Node","name":"node-0","uid":"x"},"reason":"Test","message":"m","type":"Normal","source":{"component":"efa-preflight"},"firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z","count":1}' "$2" "$1"
}
expect 422 "a Node Event in namespace ml" -- POST /api/v1/namespaces/ml/events --data "$(ev ml e1)"
kube_call POST /api/v1/namespaces/ml/events --data "$(ev ml e1)" 2>/dev/null | python3 -c '
import json, sys; x = json.load(sys.stdin); print("    message: %s" % x["message"][:200])'
expect 201 "a Node Event in default" -- POST /api/v1/namespaces/default/events --data "$(ev default e1)"
expect 409 "the same Event name again" -- POST /api/v1/namespaces/default/events --data "$(ev default e1)"

# Node list paging.
kube_call GET '/api/v1/nodes?limit=1' > "$T/p1.json" || kube_die "node list limit=1"
python3 - "$T/p1.json" <<'EOF' || kube_die "node list: no paging"
import json, sys
x = json.load(open(sys.argv[1]))
assert len(x["items"]) == 1, len(x["items"])
assert x["metadata"].get("continue"), x["metadata"]
assert x["metadata"].get("remainingItemCount") == 2, x["metadata"]
print("  node list limit=1: 1 item, continue token, remainingItemCount 2")
EOF
c=$(python3 -c 'import json, sys, urllib.parse; print(urllib.parse.quote(json.load(open(sys.argv[1]))["metadata"]["continue"]))' "$T/p1.json")
kube_call GET "/api/v1/nodes?limit=5&continue=$c" > "$T/p2.json" || kube_die "node list continue"
python3 -c '
import json, sys; x = json.load(open(sys.argv[1]))
assert [n["metadata"]["name"] for n in x["items"]] == ["node-1", "node-2"], x["items"]
assert not x["metadata"].get("continue"), x["metadata"]
print("  the continue token (with another limit): the remaining 2 nodes, no further token")' "$T/p2.json" ||
    kube_die "node list: second page"
expect 400 "a garbled continue token" -- GET '/api/v1/nodes?limit=1&continue=bm90LWEtdG9rZW4'

# Merge patches and resourceVersion preconditions.
rv=$(kube_call GET /api/v1/nodes/node-0 | python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
expect 200 "merge patch, current resourceVersion" -- PATCH /api/v1/nodes/node-0 --ctype application/merge-patch+json \
    --data "{\"metadata\":{\"resourceVersion\":\"$rv\",\"labels\":{\"x\":\"1\"}}}"
expect 409 "merge patch, stale resourceVersion" -- PATCH /api/v1/nodes/node-0 --ctype application/merge-patch+json \
    --data "{\"metadata\":{\"resourceVersion\":\"$rv\",\"labels\":{\"x\":\"2\"}}}"
expect 409 "status merge patch, stale resourceVersion" -- PATCH /api/v1/nodes/node-0/status --ctype application/merge-patch+json \
    --data "{\"metadata\":{\"resourceVersion\":\"$rv\"},\"status\":{\"conditions\":[]}}"
expect 200 "merge patch, null label" -- PATCH /api/v1/nodes/node-0 --ctype application/merge-patch+json \
    --data '{"metadata":{"labels":{"x":null}}}'
kube_call GET /api/v1/nodes/node-0 | python3 -c 'import json, sys; assert "x" not in json.load(sys.stdin)["metadata"]["labels"]' ||
    kube_die "null did not delete the label"

# Leases.
L=/apis/coordination.k8s.io/v1/namespaces/efa-preflight/leases
lease() {   # lease NAME HOLDER [RV]
    printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"%s","namespace":"efa-preflight"%s},"spec":{"holderIdentity":"%s","leaseDurationSeconds":5}}' \
        "$1" "${3:+,\"resourceVersion\":\"$3\"}" "$2"
}
expect 404 "GET a missing Lease" -- GET "$L/l1"
expect 201 "PUT to a missing Lease, no resourceVersion" -- PUT "$L/l1" --data "$(lease l1 a)"
lrv=$(kube_call GET "$L/l1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
expect 200 "PUT with the current resourceVersion" -- PUT "$L/l1" --data "$(lease l1 b "$lrv")"
expect 409 "PUT with a stale resourceVersion" -- PUT "$L/l1" --data "$(lease l1 c "$lrv")"
# An update that changes nothing keeps the resourceVersion: a stale one
# with unchanged content is accepted (200), nothing written.
expect 409 "PUT with a stale resourceVersion, nothing changed" -- PUT "$L/l1" --data "$(lease l1 b "$lrv")"
expect 201 "PUT to a missing Lease with a resourceVersion" -- PUT "$L/l2" --data "$(lease l2 a "$lrv")"
expect 409 "POST a Lease that exists" -- POST "$L" --data "$(lease l1 d)"

# ConfigMaps (the taint budget): no create on update.
C=/api/v1/namespaces/efa-preflight/configmaps
cm() { printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"%s},"data":{"k":"%s"}}' "$1" "${3:+,\"resourceVersion\":\"$3\"}" "$2"; }
expect 404 "PUT to a missing ConfigMap" -- PUT "$C/c1" --data "$(cm c1 a)"
expect 201 "POST a ConfigMap" -- POST "$C" --data "$(cm c1 a)"
expect 409 "POST it again" -- POST "$C" --data "$(cm c1 a)"
crv=$(kube_call GET "$C/c1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
expect 200 "PUT with its resourceVersion" -- PUT "$C/c1" --data "$(cm c1 b "$crv")"
expect 409 "PUT with the same, now stale, resourceVersion" -- PUT "$C/c1" --data "$(cm c1 c "$crv")"
expect 200 "PUT without a resourceVersion (unconditional)" -- PUT "$C/c1" --data "$(cm c1 d)"

if kube_real; then
    # HTTP/2
    v=$(curl -s --http2 -o /dev/null -w '%{http_version}' --cacert "$KR_CA" --cert "$KR_CERT" --key "$KR_KEY" "$KR_API/readyz")
    [ "$v" = 2 ] || kr_die "HTTP version $v, want 2"
    echo "  HTTP/2 with a client that offers h2"

    # A token bound to a pod dies with the pod.
    kr_jobset_pods ml 1
    kr_token ml efa-preflight-job train-workers-0-0-p0 > "$T/token"
    with_token() { curl -s -o /dev/null -w '%{http_code}' --cacert "$KR_CA" -H "Authorization: Bearer $(cat "$T/token")" "$KR_API$1"; }
    c=$(with_token /api/v1/namespaces/ml/pods/train-workers-0-0-p0)
    [ "$c" = 200 ] || kr_die "bound token: HTTP $c, want 200"
    c=$(with_token /api/v1/nodes/node-0)
    [ "$c" = 200 ] || kr_die "bound token, node GET: HTTP $c, want 200"
    c=$(with_token /api/v1/namespaces/kube-system/pods)
    [ "$c" = 403 ] || kr_die "bound token, kube-system pods: HTTP $c, want 403"
    kr_ok DELETE "/api/v1/namespaces/ml/pods/train-workers-0-0-p0?gracePeriodSeconds=0"
    # Deleted at once (no kubelet to confirm a graceful delete); the server
    # caches a token's successful authentication for 10 s.
    t0=$(date +%s.%N)
    for t in $(seq 1 100); do
        c=$(with_token /api/v1/nodes/node-0)
        [ "$c" = 401 ] && break
        sleep 0.2
    done
    [ "$c" = 401 ] || kr_die "a token bound to a deleted pod: HTTP $c, want 401"
    echo "  a TokenRequest token bound to a pod: 200 for the chart's grants, 403 outside them, 401 $(kr_elapsed "$t0")s after the pod is deleted"
fi
echo "PASS"
