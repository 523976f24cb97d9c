#!/bin/bash
# `efa-preflight webhook` over real TLS (curl, openssl s_client): the patch
# for a Pod requesting EFA, applied as RFC 6902 says, holds the copy-in and
# gate initContainers, and the patched Pod is left alone the second time;
# Pods without EFA, opted out, or in the release's namespace get no patch;
# a 1 MiB review is refused (413, and a chunked one 411) and garbage is
# answered allowed:true with a warning, the server alive after both; new
# certificate files are served without a restart; SIGTERM stops it.
set -u
for b in openssl curl python3; do
    command -v "$b" >/dev/null || { echo "$b not installed"; exit 77; }
done
t=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$t"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$t/err" ] && sed 's/^/  webhook: /' "$t/err" | tail -20; exit 1; }

mkcert() { # NAME: a self-signed P-256 certificate for 127.0.0.1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
        -subj "/CN=efa-preflight-webhook-$1" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$t/$1.key" -out "$t/$1.crt" 2>/dev/null || fail "openssl req $1"
}
fingerprint() { openssl x509 -noout -fingerprint -sha256 -in "$1" | cut -d= -f2; }
served() { # the fingerprint of the certificate the server presents now
    openssl s_client -connect "127.0.0.1:$port" -servername localhost </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2
}
mkcert a; mkcert b
cp "$t/a.crt" "$t/tls.crt"; cp "$t/a.key" "$t/tls.key"

# Port 0: the kernel picks, the webhook prints it once it listens.
"$PF_BIN" webhook --webhook-addr 127.0.0.1 --webhook-port 0 \
    --tls-cert-file "$t/tls.crt" --tls-key-file "$t/tls.key" \
    --agent-image repo/efa-preflight:agent --namespace efa-preflight --timeout 600 \
    --taint-on-failure --taint-budget ops/efa-budget --valid-hours 12 >"$t/out" 2>"$t/err" &
pid=$!
port=
for _ in $(seq 200); do
    port=$(sed -n 's/.*serving https on port \([0-9]*\).*/\1/p' "$t/out")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "webhook exited at start"
    sleep 0.05
done
[ -n "$port" ] || fail "webhook never said it was serving (10 s)"
echo "ok   serving on port $port (picked by the kernel)"

url="https://127.0.0.1:$port"
ca="$t/a.crt"
review() { # NAMESPACE POD-JSON -> a review file
    python3 - "$1" "$2" >"$t/review.json" <<'EOF'
import json, sys
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {"uid": "uid-" + sys.argv[1], "namespace": sys.argv[1], "operation": "CREATE",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "object": json.loads(sys.argv[2])}}))
EOF
}
post() { # FILE -> response body in $t/resp.json; prints the HTTP status
    curl -sS --max-time 10 --cacert "$ca" -o "$t/resp.json" -w '%{http_code}' \
        -H 'Content-Type: application/json' --data-binary @"$1" "$url/mutate"
}

pod='{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"train-","labels":{"jobset.sigs.k8s.io/jobset-name":"train"}},
 "spec":{"serviceAccountName":"trainer","initContainers":[{"name":"fetch","image":"fetch:1"}],
  "containers":[{"name":"train","image":"my/train:2","env":[{"name":"NCCL_DEBUG","value":"INFO"}],
   "resources":{"limits":{"nvidia.com/gpu":"8","vpc.amazonaws.com/efa":"32"}}}]}}'
review team-a "$pod"
code=$(post "$t/review.json") || fail "curl to the webhook failed"
[ "$code" = 200 ] || fail "EFA pod review answered $code"
# Apply the patch (RFC 6902 add, as the API server does) and check the Pod.
python3 - "$t/review.json" "$t/resp.json" "$t/patched.json" <<'EOF' || fail "patch check"
import base64, json, sys
review, resp = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
r = resp["response"]
assert resp["apiVersion"] == "admission.k8s.io/v1" and resp["kind"] == "AdmissionReview"
assert r["uid"] == "uid-team-a" and r["allowed"] is True and r["patchType"] == "JSONPatch", r
ops = json.loads(base64.b64decode(r["patch"]))
pod = review["request"]["object"]
def unesc(t): return t.replace("~1", "/").replace("~0", "~")
for op in ops:
    assert op["op"] == "add", op
    toks = [unesc(t) for t in op["path"].split("/")[1:]]
    parent = pod
    for k in toks[:-1]:
        parent = parent[int(k)] if isinstance(parent, list) else parent[k]
    last = toks[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), op["value"])
    else:
        assert last not in parent, "add over " + op["path"]
        parent[last] = op["value"]
spec = pod["spec"]
names = [c["name"] for c in spec["initContainers"]]
assert names == ["efa-preflight-copy", "efa-preflight", "fetch"], names
copy, gate = spec["initContainers"][0], spec["initContainers"][1]
assert copy["image"] == "repo/efa-preflight:agent"
assert gate["image"] == "my/train:2" and gate["command"] == ["/efa-preflight/efa-preflight", "run"]
for k in ("limits", "requests"):
    assert gate["resources"][k] == {"vpc.amazonaws.com/efa": "32", "nvidia.com/gpu": "8"}, gate["resources"]
env = {e["name"]: e for e in gate["env"]}
assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
assert env["EFA_PREFLIGHT_TIMEOUT"]["value"] == "600"
assert env["EFA_PREFLIGHT_TAINT_ON_FAILURE"]["value"] == "true"
assert env["EFA_PREFLIGHT_TAINT_BUDGET"]["value"] == "ops/efa-budget"
assert env["EFA_PREFLIGHT_VALID_HOURS"]["value"] == "12"
assert env["NCCL_DEBUG"]["value"] == "INFO"
mounts = {m["mountPath"]: m["name"] for m in gate["volumeMounts"]}
assert mounts["/var/run/secrets/kubernetes.io/serviceaccount"] == "efa-preflight-token"
vols = {v["name"]: v for v in spec["volumes"]}
assert "serviceAccountToken" in vols["efa-preflight-token"]["projected"]["sources"][0]
assert spec["serviceAccountName"] == "trainer", "the job's service account must stay"
assert "volumeMounts" not in spec["containers"][0], "training container touched"
assert {"vpc.amazonaws.com/efa", "nvidia.com/gpu"} <= {t["key"] for t in spec["tolerations"]}
assert pod["metadata"]["annotations"]["efa-preflight.io/gate"] == "injected"
json.dump(pod, open(sys.argv[3], "w"))
print("ok   EFA pod: copy-in, gate in my/train:2 with 8 GPUs and 32 EFA, token in the gate alone, job's service account kept (%d operations)" % len(ops))
EOF

# The patched Pod against the Kubernetes Pod schema (unknown fields too),
# where the manifests test's validators are installed.
if command -v node >/dev/null && [ -d "$PF_ROOT/tests/manifests/node_modules/kubernetes-models" ]; then
    python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); p.setdefault("metadata", {})["name"] = "train-0"; json.dump(p, open(sys.argv[1], "w"))' "$t/patched.json"
    node "$PF_ROOT/tests/manifests/validate.mjs" manifests "$t/patched.json" >"$t/schema.out" 2>&1 ||
        { cat "$t/schema.out"; fail "the patched Pod is not a valid Pod"; }
    echo "ok   the patched Pod is valid against the Kubernetes Pod schema ($(tail -n 1 "$t/schema.out"))"
else
    echo "note: node or the manifests validators missing: the Pod schema check is skipped"
fi

nopatch() { # WHAT: the last answer is allowed, without a patch
    python3 - "$t/resp.json" "$1" <<'EOF' || fail "$1"
import json, sys
r = json.load(open(sys.argv[1]))["response"]
assert r["allowed"] is True and "patch" not in r, r
print("ok   %s: allowed, no patch%s" % (sys.argv[2], ", warning: " + r["warnings"][0] if r.get("warnings") else ""))
EOF
}
review team-a "$(cat "$t/patched.json")"
[ "$(post "$t/review.json")" = 200 ] || fail "second pass"; nopatch "the patched pod again (idempotent)"
review team-a '{"spec":{"containers":[{"name":"c","image":"c:1","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}'
[ "$(post "$t/review.json")" = 200 ] || fail "no-EFA pod"; nopatch "a pod without EFA"
review team-a '{"metadata":{"annotations":{"efa-preflight.io/inject":"false"}},"spec":{"containers":[{"name":"c","image":"c:1","resources":{"limits":{"vpc.amazonaws.com/efa":"1"}}}]}}'
[ "$(post "$t/review.json")" = 200 ] || fail "opted-out pod"; nopatch "an opted-out pod"
review efa-preflight "$pod"
[ "$(post "$t/review.json")" = 200 ] || fail "own-namespace pod"; nopatch "an EFA pod in the release's namespace"

# Garbage: answered, allowed, a warning, no crash.
head -c 4096 /dev/urandom >"$t/garbage"
for f in garbage; do
    [ "$(post "$t/$f")" = 200 ] || fail "garbage not answered 200"
    grep -q '"warnings"' "$t/resp.json" || fail "garbage answered without a warning"
    nopatch "4 KiB of random bytes"
done
printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","kind":{"kind":"Pod"},"operation":"CREATE","object":{"spec":{"containers":"train"}}}}' >"$t/odd"
[ "$(post "$t/odd")" = 200 ] || fail "odd review"
grep -q 'spec.containers is not a list' "$t/resp.json" || fail "odd pod: the warning does not name the field"
nopatch "a Pod whose containers are not a list"

# 1 MiB (over the 512 KiB bound): read, dropped and answered 413; 8 MiB
# (past 8 times the bound): refused unread (the client may see a reset
# instead of the status). A chunked body (its size unknown until read) is
# refused before a byte of it: 411.
head -c $((1 << 20)) /dev/zero | tr '\0' ' ' >"$t/big"
code=$(post "$t/big")
[ "$code" = 413 ] || fail "1 MiB review answered $code, not 413"
# (the answer is sent before the body is read and the connection closed:
# a client still sending may see the reset first, 000)
code=$(curl -sS --max-time 10 --cacert "$ca" -o /dev/null -w '%{http_code}' \
    -H 'Transfer-Encoding: chunked' --data-binary @"$t/big" "$url/mutate" 2>/dev/null)
case $code in 411|000) ;; *) fail "1 MiB chunked review answered $code, not 411" ;; esac
code=$(curl -sS --max-time 10 --cacert "$ca" -o /dev/null -w '%{http_code}' \
    -H 'Transfer-Encoding: chunked' --data-binary '{}' "$url/mutate" 2>/dev/null)
[ "$code" = 411 ] || fail "a small chunked review answered $code, not 411"
echo "ok   1 MiB review: 413 with a length; chunked: 411"
head -c $((8 << 20)) /dev/zero | tr '\0' ' ' >"$t/huge"
for te in "" "Transfer-Encoding: chunked"; do
    code=$(curl -sS --max-time 10 --cacert "$ca" -o /dev/null -w '%{http_code}' ${te:+-H "$te"} \
        --data-binary @"$t/huge" "$url/mutate" 2>/dev/null)
    # 000: no final status, the connection was cut
    case $code in 413|411|000) ;; *) fail "8 MiB review (${te:-with a length}) answered $code" ;; esac
done
echo "ok   8 MiB review: refused (with a length and chunked)"
kill -0 "$pid" 2>/dev/null || fail "webhook died"
[ "$(curl -sS --max-time 5 --cacert "$ca" "$url/healthz")" = ok ] || fail "/healthz after abuse"
echo "ok   alive and healthy after garbage and oversize bodies"

# Rotation: the files replaced (by rename, as a Secret volume does) are
# served within a bounded wait, by the same process.
fa=$(fingerprint "$t/a.crt"); fb=$(fingerprint "$t/b.crt")
[ "$(served)" = "$fa" ] || fail "served certificate is not a.crt"
cp "$t/b.key" "$t/tls.key.new" && mv "$t/tls.key.new" "$t/tls.key"
cp "$t/b.crt" "$t/tls.crt.new" && mv "$t/tls.crt.new" "$t/tls.crt"
got=
for _ in $(seq 100); do
    got=$(served)
    [ "$got" = "$fb" ] && break
    sleep 0.1
done
[ "$got" = "$fb" ] || fail "rotated certificate not served within 10 s (serving $got)"
kill -0 "$pid" 2>/dev/null || fail "webhook restarted or died during rotation"
ca="$t/b.crt"
review team-b "$pod"
[ "$(post "$t/review.json")" = 200 ] || fail "review after rotation, with the new CA"
grep -q '"patch"' "$t/resp.json" || fail "no patch after rotation"
echo "ok   rotation: new certificate (sha256 ${fb:0:17}...) served by pid $pid, no restart"

curl -sS --max-time 5 --cacert "$ca" "$url/metrics" >"$t/metrics" || fail "/metrics"
grep -q '^efa_preflight_webhook_reviews_total{outcome="injected"} 2$' "$t/metrics" || fail "metrics: $(cat "$t/metrics")"
grep -q '^efa_preflight_webhook_reviews_total{outcome="malformed"} 2$' "$t/metrics" || fail "metrics: $(cat "$t/metrics")"
echo "ok   /metrics counts 2 injected, 2 malformed"

kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "still running 5 s after SIGTERM"
wait "$pid"; rc=$?; pid=
[ $rc -eq 0 ] || fail "exit code $rc after SIGTERM"
echo "ok   SIGTERM: exit 0"
