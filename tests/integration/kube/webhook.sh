#!/bin/bash
# Zero-touch gating against a real kube-apiserver (tests/kube_real): the
# chart's own MutatingWebhookConfiguration (rendered with webhook.enabled,
# webhook.serviceAccounts training/trainer) applied with only clientConfig
# changed (url https://127.0.0.1:PORT/mutate, caBundle our certificate), so
# its rules, namespaceSelector, objectSelector, failurePolicy Ignore,
# timeoutSeconds and reinvocationPolicy are what the API server obeys; the
# chart's RBAC applied. `efa-preflight webhook` runs with the env of the
# chart's Deployment (its listen address, port 0 and TLS files given as
# flags). Every Pod is created through the real admission chain and checked
# as stored (etcd), and the webhook's /metrics says which reviews it saw:
#   - EFA Pod, opted-in namespace: gated (copy + gate initContainers, gate
#     env, projected token mounted in the gate alone, tolerations, resources,
#     annotation); with an initContainer and a toleration of its own: ours
#     go first, no toleration twice
#   - EFA Pod, namespace without the label: ungated, never sent
#   - Pod without EFA, opted-in namespace: ungated (answered no_efa)
#   - EFA Pod labelled inject=false: ungated, never sent (objectSelector);
#     annotated inject=false: ungated (answered opted_out)
#   - EFA Pod in the release's namespace, labelled opted-in: ungated
#     (1.20 has no kubernetes.io/metadata.name label, so the selector sends
#     it and the webhook's own-namespace rule keeps it; >= 1.21 never sends)
#   - reinvocation (IfNeeded): a second webhook (Python, configuration
#     zz-adds-efa, called after ours by name order) adds an EFA request to
#     a Pod: ours answers no_efa, then on the reinvocation gates it; a Pod
#     it touches after ours gated it gets already_gated on the second call
#   - webhook stopped: an EFA Pod is still created at once (Ignore),
#     ungated, and the API server logs "failing open gate.efa-preflight.io"
#     (1.20 has no fail_open_count metric: it came in 1.24)
# The bar of issue 27, "a JobSet of 2 pods requesting EFA, created with no
# efa-preflight YAML in it, runs the gate": two Jobs and their
# JobSet-labelled Pods (generateName, ownerReferences, docs/install/webhook.md's
# "after" Pod: serviceAccountName trainer, 8 GPUs, 32 EFA) created through
# the webhook; then the test plays scheduler and kubelet for each stored
# Pod: a Binding to node-i (Nodes tainted vpc.amazonaws.com/efa, tolerated
# by what was injected), status.podIP = its network namespace's address,
# a TokenRequest bound to that Pod for its own serviceAccountName, and the
# injected gate container run in that namespace: its command
# (/efa-preflight/efa-preflight run) as $PF_BIN run, its env exactly as
# stored with the fieldRefs resolved from the stored Pod, under `env -i`.
# Adapted, and only these:
#   - KUBERNETES_SERVICE_HOST/PORT: the kubelet sets them; here they name
#     the test's API server (10.254.42.1, a kernel-chosen port);
#   - --token-file, --ca-file: the projected volume's token and ca.crt would
#     be at /var/run/secrets/kubernetes.io/serviceaccount; the token is the
#     TokenRequest above (what the kubelet projects), the CA the one
#     kube-root-ca.crt would carry (there is no controller-manager);
#   - --report: the gate writes /efa-preflight/report.json (an emptyDir);
#   - no GPU, no EFA on this host: --engine host --fabric-provider tcp
#     (the Nodes' instance type test.fake has no catalog entry, so no GPU or
#     EFA count is expected), and a small sweep (-b 64K -e 1M -n 3 -w 1) to
#     keep the test short; --no-imds so nothing can go to 169.254.169.254
#     (the Node label names the instance type before IMDS would be asked);
#   - a `timeout 60` around each gate (the stored 600 s stays in its env).
# Both gates exit 0; the Nodes carry status=warn (the best a tcp run can
# get: ProviderFallback is the only reason, EFA itself untested),
# fabric=tested, busbw, EFAFabricReady True; every request the gates made
# was as training/trainer bound to its own Pod, none refused (audit log).
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kr_init 2
T=$KR_TMP
t_all=$(date +%s.%N)
WH_PID=
ZZ_PID=
cleanup_webhook() {
    [ -n "$WH_PID" ] && kill "$WH_PID" 2>/dev/null && wait "$WH_PID" 2>/dev/null
    [ -n "$ZZ_PID" ] && kill "$ZZ_PID" 2>/dev/null && wait "$ZZ_PID" 2>/dev/null
    kr_cleanup
}
trap cleanup_webhook EXIT
command -v curl >/dev/null || kr_skip "curl is not installed"
kr_start
kr_namespace efa-preflight training other
kr_ok PATCH /api/v1/namespaces/training --ctype application/merge-patch+json \
    --data '{"metadata":{"labels":{"efa-preflight.io/inject":"enabled"}}}'
kr_ok POST /api/v1/namespaces/training/serviceaccounts \
    --data '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"trainer","namespace":"training"}}'
cat > "$T/values.yaml" <<'EOF'
webhook:
  enabled: true
  serviceAccounts:
    - {namespace: training, name: trainer}
EOF
kr_rbac_from_chart -f "$T/values.yaml"     # renders $T/chart.yaml too
for i in 0 1; do
    kr_node "node-$i" '{"kubernetes.io/hostname":"node-'$i'","node.kubernetes.io/instance-type":"test.fake","topology.kubernetes.io/zone":"us-east-1a"}' \
        '[{"key":"vpc.amazonaws.com/efa","value":"true","effect":"NoSchedule"},{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]'
done

# ---- the webhook, as the chart's Deployment runs it ----------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=efa-preflight-webhook -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$T/wh.key" -out "$T/wh.crt" 2>/dev/null || kr_die "webhook certificate"
python3 - "$T/chart.yaml" "$T/wh.env" <<'EOF' || kr_die "chart: no webhook Deployment"
import sys, yaml
d = next(o for o in yaml.safe_load_all(open(sys.argv[1]))
         if o and o["kind"] == "Deployment" and o["metadata"]["name"] == "efa-preflight-webhook")
c = d["spec"]["template"]["spec"]["containers"][0]
assert c["command"] == ["efa-preflight", "webhook"], c["command"]
out = []
for e in c["env"]:
    if "value" in e:
        out.append("%s=%s" % (e["name"], e["value"]))
    else:   # POD_NAMESPACE from the downward API: the release namespace
        assert e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace", e
        out.append("%s=efa-preflight" % e["name"])
open(sys.argv[2], "w").write("".join(x + "\0" for x in out))
EOF
mapfile -d '' wh_env < "$T/wh.env"
start_webhook() {
    : > "$T/out/webhook.stdout"
    env -i PATH="$PATH" "${wh_env[@]}" "$PF_BIN" webhook --webhook-addr 127.0.0.1 --webhook-port 0 \
        --tls-cert-file "$T/wh.crt" --tls-key-file "$T/wh.key" \
        > "$T/out/webhook.stdout" 2> "$T/out/webhook.stderr" &
    WH_PID=$!
    WH_PORT=
    local t
    for t in $(seq 1 200); do
        WH_PORT=$(sed -n 's/.*serving https on port \([0-9]*\).*/\1/p' "$T/out/webhook.stdout")
        [ -n "$WH_PORT" ] && return 0
        kill -0 "$WH_PID" 2>/dev/null || break
        sleep 0.05
    done
    cat "$T/out/webhook.stderr"
    kr_die "the webhook never said it was serving (10 s)"
}
start_webhook
echo "webhook (the chart Deployment's env) serving on 127.0.0.1:$WH_PORT"
# The chart's MutatingWebhookConfiguration, clientConfig pointed here.
python3 - "$T/chart.yaml" "$T/mwc.json" "$WH_PORT" "$T/wh.crt" <<'EOF' || kr_die "chart: no MutatingWebhookConfiguration"
import base64, json, sys, yaml
m = next(o for o in yaml.safe_load_all(open(sys.argv[1]))
         if o and o["kind"] == "MutatingWebhookConfiguration")
assert len(m["webhooks"]) == 1, m
w = m["webhooks"][0]
assert w["failurePolicy"] == "Ignore" and w["timeoutSeconds"] == 5 and \
    w["reinvocationPolicy"] == "IfNeeded" and w["sideEffects"] == "None", w
w["clientConfig"] = {"url": "https://127.0.0.1:%s/mutate" % sys.argv[3],
                     "caBundle": base64.b64encode(open(sys.argv[4], "rb").read()).decode()}
json.dump(m, open(sys.argv[2], "w"), indent=1)
EOF
kr_apply "$T/mwc.json" >/dev/null
metric() {   # OUTCOME: the webhook's count of reviews answered so
    curl -sS --max-time 5 --cacert "$T/wh.crt" "https://127.0.0.1:$WH_PORT/metrics" |
        sed -n "s/^efa_preflight_webhook_reviews_total{outcome=\"$1\"} //p"
}

# ---- the Pods ------------------------------------------------------------
python3 - "$T" <<'EOF' || kr_die "writing the pods"
import copy, json, sys
d = sys.argv[1]
train = {"name": "train", "image": "my/train:2",
         "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
         "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}}
def pod(name, ns, containers=None, labels=None, annotations=None, **spec):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "labels": labels or {"app": "train"}},
         "spec": dict({"restartPolicy": "Never", "serviceAccountName": "trainer",
                       "containers": containers or [copy.deepcopy(train)]}, **spec)}
    if annotations:
        p["metadata"]["annotations"] = annotations
    return p
cpu = {"name": "train", "image": "my/train:2", "resources": {"limits": {"cpu": "1"}}}
cases = {
    "efa":        pod("efa", "training"),
    "other-ns":   pod("efa", "other"),
    "no-efa":     pod("cpu", "training", [cpu]),
    "label-out":  pod("efa-label-out", "training", labels={"efa-preflight.io/inject": "false"}),
    "annot-out":  pod("efa-annot-out", "training", annotations={"efa-preflight.io/inject": "false"}),
    "own-ns":     pod("efa", "efa-preflight"),
    "with-init":  pod("efa-init", "training",
                      initContainers=[{"name": "fetch", "image": "fetch:1"}],
                      tolerations=[{"key": "vpc.amazonaws.com/efa", "operator": "Exists",
                                    "effect": "NoSchedule"}]),
    "down":       pod("efa-down", "training"),
}
for k, v in cases.items():
    json.dump(v, open("%s/pod-%s.json" % (d, k), "w"))
EOF
create() {   # CASE: the Pod of that case created; the stored object in stored-CASE.json
    local ns
    ns=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["metadata"]["namespace"])' "$T/pod-$1.json")
    kr_call POST "/api/v1/namespaces/$ns/pods" --data "@$T/pod-$1.json" > "$T/stored-$1.json" ||
        kr_die "creating pod $1"
}
# gated_on_dry_run POD_FILE: a dry-run create of the Pod (sideEffects None:
# the webhooks are called) comes back gated within 10 s.
gated_on_dry_run() {
    local t
    for t in $(seq 1 100); do
        kr_call POST "/api/v1/namespaces/training/pods?dryRun=All" --data "@$1" > "$T/dry.json" 2>/dev/null &&
            grep -q '"efa-preflight.io/gate"' "$T/dry.json" && return 0
        sleep 0.1
    done
    return 1
}
# The API server loads webhook configurations asynchronously: a dry-run
# create until the gate comes back.
gated_on_dry_run "$T/pod-efa.json" ||
    { tail -n 20 "$T/out/apiserver.log"; kr_die "the API server never called the webhook (10 s)"; }
kr_ok PATCH /api/v1/namespaces/efa-preflight --ctype application/merge-patch+json \
    --data '{"metadata":{"labels":{"efa-preflight.io/inject":"enabled"}}}'
own_label=$(kr_call GET /api/v1/namespaces/efa-preflight | python3 -c 'import json, sys
print("yes" if "kubernetes.io/metadata.name" in json.load(sys.stdin)["metadata"].get("labels", {}) else "no")')
declare -A before
for o in injected no_efa already_gated opted_out own_namespace malformed error; do before[$o]=$(metric $o); done
t0=$(date +%s.%N)
for c in efa other-ns no-efa label-out annot-out own-ns with-init; do create "$c"; done
echo "7 pods created through the admission chain in $(kr_elapsed "$t0")s"
declare -A seen
for o in injected no_efa already_gated opted_out own_namespace malformed error; do
    seen[$o]=$(( $(metric $o) - ${before[$o]} ))
done
want_own=$([ "$own_label" = no ] && echo 1 || echo 0)
[ "${seen[injected]}" = 2 ] && [ "${seen[no_efa]}" = 1 ] && [ "${seen[opted_out]}" = 1 ] &&
    [ "${seen[own_namespace]}" = "$want_own" ] && [ "${seen[already_gated]}" = 0 ] &&
    [ "${seen[malformed]}" = 0 ] && [ "${seen[error]}" = 0 ] ||
    kr_die "webhook reviews by outcome: $(for o in "${!seen[@]}"; do printf '%s=%s ' "$o" "${seen[$o]}"; done)(want injected=2 no_efa=1 opted_out=1 own_namespace=$want_own)"
echo "webhook saw: injected 2, no_efa 1, opted_out 1 (annotation), own_namespace $want_own; the other namespace and the inject=false label never sent"

# What a gated Pod holds, as stored. gated(pod, init_after) / ungated(pod).
cat > "$T/gatecheck.py" <<'EOF'
TOK = "/var/run/secrets/kubernetes.io/serviceaccount"
def env_of(c):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}
def gated(p, init_after=()):
    s, name = p["spec"], p["metadata"].get("name") or p["metadata"]["generateName"]
    assert p["metadata"]["annotations"]["efa-preflight.io/gate"] == "injected", name
    ic = s["initContainers"]
    assert [c["name"] for c in ic] == ["efa-preflight-copy", "efa-preflight"] + list(init_after), (name, ic)
    cp, g = ic[0], ic[1]
    assert cp["image"] == "registry.invalid/efa-preflight:0.1.0-agent", cp["image"]
    assert cp["command"][0] == "cp" and cp["securityContext"]["runAsNonRoot"] is True, cp
    assert g["image"] == "my/train:2" and g["command"] == ["/efa-preflight/efa-preflight", "run"], g
    assert "args" not in g, g
    e = env_of(g)
    for k, path in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace"),
                    ("NODE_NAME", "spec.nodeName"), ("POD_IP", "status.podIP")):
        assert e[k]["fieldRef"]["fieldPath"] == path, (k, e[k])
    want = {"EFA_PREFLIGHT_BOOTSTRAP": "k8s", "EFA_PREFLIGHT_MODE": "initcontainer",
            "EFA_PREFLIGHT_PORT": "29600", "EFA_PREFLIGHT_TIMEOUT": "600",
            "EFA_PREFLIGHT_TAINT_ON_FAILURE": "false", "EFA_PREFLIGHT_LABEL_PREFIX": "efa-preflight.io/",
            "EFA_PREFLIGHT_VALID_HOURS": "24",
            "EFA_PREFLIGHT_TAINT_BUDGET": "efa-preflight/efa-preflight-taint-budget",
            "EFA_PREFLIGHT_REPORT": "/efa-preflight/report.json",
            "NCCL_DEBUG": "INFO", "FI_EFA_USE_HUGE_PAGE": "0"}
    for k, v in want.items():
        assert e.get(k) == v, (name, k, e.get(k))
    for side in ("limits", "requests"):
        r = g["resources"][side]
        assert r["vpc.amazonaws.com/efa"] == "32" and r["nvidia.com/gpu"] == "8", g["resources"]
    assert "IPC_LOCK" in g["securityContext"]["capabilities"]["add"], g
    mounts = {m["mountPath"]: m for m in g["volumeMounts"]}
    assert mounts[TOK]["name"] == "efa-preflight-token" and mounts[TOK]["readOnly"], mounts
    assert mounts["/efa-preflight"]["name"] == "efa-preflight" and "/dev/shm" in mounts, mounts
    for c in s["containers"]:   # the token reaches the gate alone
        assert not any(m["name"] == "efa-preflight-token" for m in c.get("volumeMounts", [])), c
    vols = {v["name"]: v for v in s["volumes"]}
    src = vols["efa-preflight-token"]["projected"]["sources"]
    sat = next(x["serviceAccountToken"] for x in src if "serviceAccountToken" in x)
    assert sat["path"] == "token" and sat["expirationSeconds"] == 3600, sat
    assert any(x.get("configMap", {}).get("name") == "kube-root-ca.crt" for x in src), src
    assert vols["efa-preflight"]["emptyDir"] == {}, vols
    assert vols["efa-preflight-shm"]["emptyDir"]["medium"] == "Memory", vols
    keys = [t["key"] for t in s["tolerations"]]
    for k in ("vpc.amazonaws.com/efa", "aws.amazon.com/efa", "nvidia.com/gpu"):
        assert keys.count(k) == 1, (name, keys)
def ungated(p):
    s, name = p["spec"], p["metadata"]["namespace"] + "/" + p["metadata"]["name"]
    assert "efa-preflight.io/gate" not in p["metadata"].get("annotations", {}), name
    assert not any(c["name"].startswith("efa-preflight") for c in s.get("initContainers", [])), name
    assert not any(v["name"].startswith("efa-preflight") for v in s.get("volumes", [])), name
    assert "tolerations" not in s or not any(t["key"] == "aws.amazon.com/efa" for t in s["tolerations"]), name
EOF
python3 - "$T" <<'EOF' || kr_die "stored pods"
import json, sys
d = sys.argv[1]
exec(open(d + "/gatecheck.py").read())
st = lambda c: json.load(open("%s/stored-%s.json" % (d, c)))
gated(st("efa"))
gated(st("with-init"), init_after=["fetch"])
for c in ("other-ns", "no-efa", "label-out", "annot-out", "own-ns"):
    ungated(st(c))
# what the API server kept of the Pod's own parts
p = st("with-init")
assert p["spec"]["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
assert [t["key"] for t in p["spec"]["tolerations"]][0] == "vpc.amazonaws.com/efa"
print("stored: training/efa and training/efa-init gated (copy, gate[, fetch]; env, token in the gate "
      "alone, tolerations once each); other/efa, training/cpu, both opted-out and efa-preflight/efa not")
EOF

# ---- reinvocation: another webhook, called after ours --------------------
# zz-adds-efa (a Python webhook, configurations run in name order) adds
# vpc.amazonaws.com/efa to a Pod labelled zz=add-efa, or an annotation to
# one labelled zz=touch. IfNeeded: ours is called again after it changed
# the Pod, so the added EFA request is gated, and a Pod gated on the first
# call is left as it is on the second.
cat > "$T/zz.py" <<'EOF'
import base64, json, ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        rev = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        req = rev["request"]
        pod = req["object"]
        what = pod["metadata"].get("labels", {}).get("zz")
        ops = []
        if what == "add-efa":
            ops.append({"op": "add", "path": "/spec/containers/0/resources/limits/vpc.amazonaws.com~1efa",
                        "value": "32"})
        elif what == "touch":
            ops.append({"op": "add", "path": "/metadata/annotations/zz~1touched", "value": "yes"})
        with open(sys.argv[2], "a") as f:
            f.write("%s %s gated=%s\n" % (pod["metadata"].get("name"), what,
                    "efa-preflight.io/gate" in pod["metadata"].get("annotations", {})))
        resp = {"uid": req["uid"], "allowed": True}
        if ops:
            resp["patchType"] = "JSONPatch"
            resp["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1] + ".crt", sys.argv[1] + ".key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$T/zz.py" "$T/wh" "$T/out/zz.calls" > "$T/out/zz.port" 2> "$T/out/zz.stderr" &
ZZ_PID=$!
for t in $(seq 1 100); do
    ZZ_PORT=$(cat "$T/out/zz.port")
    [ -n "$ZZ_PORT" ] && break
    kill -0 "$ZZ_PID" 2>/dev/null || break
    sleep 0.05
done
[ -n "$ZZ_PORT" ] || { cat "$T/out/zz.stderr"; kr_die "zz-adds-efa never listened"; }
python3 - "$T/wh.crt" "$ZZ_PORT" "$T/zz-mwc.json" "$T" <<'EOF' || kr_die "zz objects"
import base64, copy, json, sys
ca = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
json.dump({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
           "metadata": {"name": "zz-adds-efa"},
           "webhooks": [{"name": "adds-efa.test.invalid", "admissionReviewVersions": ["v1"],
                         "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 5,
                         "reinvocationPolicy": "Never",
                         "clientConfig": {"url": "https://127.0.0.1:%s/" % sys.argv[2], "caBundle": ca},
                         "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                    "resources": ["pods"], "scope": "Namespaced"}],
                         "objectSelector": {"matchExpressions": [{"key": "zz", "operator": "Exists"}]}}]},
          open(sys.argv[3], "w"))
base = {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "training", "annotations": {"team": "ml"}},
        "spec": {"restartPolicy": "Never", "serviceAccountName": "trainer",
                 "containers": [{"name": "train", "image": "my/train:2",
                                 "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                                 "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}
a = copy.deepcopy(base)
a["metadata"].update(name="efa-added", labels={"zz": "add-efa"})
b = copy.deepcopy(base)
b["metadata"].update(name="efa-touched", labels={"zz": "touch"})
b["spec"]["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"] = "32"
json.dump(a, open(sys.argv[4] + "/pod-efa-added.json", "w"))
json.dump(b, open(sys.argv[4] + "/pod-efa-touched.json", "w"))
EOF
kr_apply "$T/zz-mwc.json" >/dev/null
gated_on_dry_run "$T/pod-efa-added.json" ||
    { cat "$T/dry.json"; kr_die "a Pod given EFA by zz-adds-efa was never gated (10 s)"; }
for o in injected no_efa already_gated; do before[$o]=$(metric $o); done
: > "$T/out/zz.calls"
create efa-added
create efa-touched
for o in injected no_efa already_gated; do seen[$o]=$(( $(metric $o) - ${before[$o]} )); done
[ "${seen[injected]}" = 2 ] && [ "${seen[no_efa]}" = 1 ] && [ "${seen[already_gated]}" = 1 ] ||
    kr_die "reinvocation: injected=${seen[injected]} no_efa=${seen[no_efa]} already_gated=${seen[already_gated]} (want 2 1 1)"
python3 - "$T" <<'EOF' || kr_die "reinvocation: stored pods"
import json, sys
d = sys.argv[1]
exec(open(d + "/gatecheck.py").read())
a = json.load(open(d + "/stored-efa-added.json"))
b = json.load(open(d + "/stored-efa-touched.json"))
gated(a)   # the EFA request zz added reached the gate's resources too
gated(b)
assert b["metadata"]["annotations"]["zz/touched"] == "yes", b["metadata"]["annotations"]
calls = open(d + "/out/zz.calls").read().split("\n")
assert calls[:2] == ["efa-added add-efa gated=False", "efa-touched touch gated=True"], calls
EOF
kill "$ZZ_PID"; wait "$ZZ_PID" 2>/dev/null; ZZ_PID=
kr_ok DELETE /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/zz-adds-efa
echo "reinvocation (IfNeeded): EFA added by a later webhook is gated on our second call (no_efa, then injected); a Pod gated on the first call is left alone on the second (already_gated)"

# ---- a JobSet of 2 pods, no efa-preflight YAML in it ---------------------
python3 - "$T" <<'EOF' || kr_die "jobset objects"
import json, sys
d = sys.argv[1]
train = {"name": "train", "image": "my/train:2",
         "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
         "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}}
spec = {"restartPolicy": "Never", "serviceAccountName": "trainer", "containers": [train]}
labels = lambda i: {"jobset.sigs.k8s.io/jobset-name": "train",
                    "jobset.sigs.k8s.io/jobset-uid": "6f4a3c2e-1b0d-4e5f-8a7b-9c8d7e6f5a4b",
                    "jobset.sigs.k8s.io/replicatedjob-name": "workers",
                    "jobset.sigs.k8s.io/replicatedjob-replicas": "2",
                    "jobset.sigs.k8s.io/job-index": str(i),
                    "batch.kubernetes.io/job-completion-index": "0"}
for i in range(2):
    json.dump({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "train-workers-%d" % i, "namespace": "training", "labels": labels(i)},
               "spec": {"parallelism": 1, "completions": 1,
                        "template": {"metadata": {"labels": labels(i)}, "spec": spec}}},
              open("%s/job-%d.json" % (d, i), "w"))
EOF
for i in 0 1; do
    kr_call POST /apis/batch/v1/namespaces/training/jobs --data "@$T/job-$i.json" > "$T/job-$i.stored.json" ||
        kr_die "creating Job train-workers-$i"
    # The Pod as the Job controller makes it from the template: generateName,
    # the template's labels plus the Job's, an ownerReference.
    python3 - "$T/job-$i.stored.json" "$T/pod-js-$i.json" <<'EOF' || kr_die "jobset pod $i"
import json, sys
j = json.load(open(sys.argv[1]))
t = j["spec"]["template"]
md = {"generateName": j["metadata"]["name"] + "-0-", "namespace": "training",
      "labels": dict(t["metadata"]["labels"]),
      "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": j["metadata"]["name"],
                           "uid": j["metadata"]["uid"], "controller": True,
                           "blockOwnerDeletion": True}]}
md["labels"]["batch.kubernetes.io/job-name"] = j["metadata"]["name"]
spec = t["spec"]
assert "efa-preflight" not in json.dumps(spec) and "initContainers" not in spec
json.dump({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}, open(sys.argv[2], "w"))
EOF
    kr_call POST /api/v1/namespaces/training/pods --data "@$T/pod-js-$i.json" > "$T/stored-js-$i.json" ||
        kr_die "creating JobSet pod $i"
    POD[$i]=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["metadata"]["name"])' "$T/stored-js-$i.json")
done
python3 - "$T" <<'EOF' || kr_die "JobSet pods not gated"
import json, sys
d = sys.argv[1]
exec(open(d + "/gatecheck.py").read())
for i in range(2):
    gated(json.load(open("%s/stored-js-%d.json" % (d, i))))
EOF
echo "JobSet pods ${POD[0]} ${POD[1]} stored gated"

# Scheduler and kubelet: bind, report the pod IP, project the token.
for i in 0 1; do
    kr_ok POST "/api/v1/namespaces/training/pods/${POD[$i]}/binding" \
        --data '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"'"${POD[$i]}"'"},"target":{"apiVersion":"v1","kind":"Node","name":"node-'$i'"}}'
    kr_pod_ip training "${POD[$i]}" "10.254.42.$((11 + i))"
    kr_call GET "/api/v1/namespaces/training/pods/${POD[$i]}" > "$T/running-$i.json" || kr_die "get pod $i"
    sa=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["spec"]["serviceAccountName"])' "$T/running-$i.json")
    [ "$sa" = trainer ] || kr_die "pod $i runs as $sa, want trainer (the job's own account)"
    kr_token training "$sa" "${POD[$i]}" > "$T/token-$i"
    # The gate container's env as stored, fieldRefs resolved from the Pod.
    python3 - "$T/running-$i.json" "$T/gate-$i.env" <<'EOF' || kr_die "gate env of pod $i"
import json, re, sys
p = json.load(open(sys.argv[1]))
g = next(c for c in p["spec"]["initContainers"] if c["name"] == "efa-preflight")
def field(path):
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.*)'\]", path)
    if m:
        return p["metadata"].get(m.group(1), {}).get(m.group(2), "")
    return {"metadata.name": p["metadata"]["name"], "metadata.namespace": p["metadata"]["namespace"],
            "spec.nodeName": p["spec"]["nodeName"], "status.podIP": p["status"]["podIP"],
            "spec.serviceAccountName": p["spec"]["serviceAccountName"]}[path]
out = []
for e in g["env"]:
    if "value" in e:
        v = e["value"]
    else:
        ref = e["valueFrom"]
        assert list(ref) == ["fieldRef"], e   # nothing the test cannot resolve
        v = field(ref["fieldRef"]["fieldPath"])
    out.append("%s=%s" % (e["name"], v))
open(sys.argv[2], "w").write("".join(x + "\0" for x in out))
EOF
done
python3 - "$T" <<'EOF' || kr_die "a stored JobSet pod would not schedule on its tainted node"
import json, sys
d = sys.argv[1]
for i in range(2):
    p = json.load(open("%s/running-%d.json" % (d, i)))
    for taint in ({"key": "vpc.amazonaws.com/efa", "effect": "NoSchedule"},
                  {"key": "nvidia.com/gpu", "effect": "NoSchedule"}):
        assert any(t.get("key") == taint["key"] and t.get("operator") == "Exists" and
                   t.get("effect") in (None, "", taint["effect"]) for t in p["spec"]["tolerations"]), taint
    assert p["spec"]["nodeName"] == "node-%d" % i and p["status"]["podIP"] == "10.254.42.%d" % (11 + i)
EOF

start=$(date +%s.%N)
pids=""
for i in 0 1; do
    mapfile -d '' genv < "$T/gate-$i.env"
    ip netns exec "pfkr-$((i + 1))" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        KUBERNETES_SERVICE_HOST="$KR_HOST_IP" KUBERNETES_SERVICE_PORT="$KR_API_PORT" "${genv[@]}" \
        timeout -k 5 60 "$PF_BIN" run \
        --token-file "$T/token-$i" --ca-file "$KR_CA" --report "$T/out/gate-$i.json" \
        --engine host --fabric-provider tcp -b 64K -e 1M -n 3 -w 1 --no-imds \
        > "$T/out/gate-$i.stdout" 2> "$T/out/gate-$i.stderr" &
    pids="$pids $!"
done
kube_wait_pids 0 "$T/out/gate" "the gate of pod" $pids
echo "both injected gates exit 0 in $(kr_elapsed "$start")s"
kr_state "$T/pass.json"
kr_check "$T/pass.json" '
pods = ["'"${POD[0]}"'", "'"${POD[1]}"'"]
for i in range(2):
    n = "node-%d" % i
    l = labels(n)
    rep = json.load(open("'"$T"'/out/gate-%d.json" % i))
    assert l["efa-preflight.io/status"] == "warn", (n, l)    # tcp stands in for EFA
    assert l["efa-preflight.io/fabric"] == "tested", l
    assert l["efa-preflight.io/busbw-gbps"] == "%.2f" % rep["collective"]["peak_busbw_gbps"], l
    f, dv = cond(n, "EFAFabricReady"), cond(n, "EFADevicesReady")
    assert f and f["status"] == "True" and f["reason"] == "ProviderFallback", f
    assert dv and dv["status"] == "Unknown" and dv["reason"] == "EFANotRequired", dv
    assert cond(n, "Ready")["status"] == "True"
    ev = events(n)
    assert len(ev) == 1 and ev[0]["reason"] == "ProviderFallback", ev
    assert re.search(r"busbw \d+\.\d\d GB/s over 2 nodes", ev[0]["message"]), ev[0]["message"]
    warn = sorted({c["reason"] for c in rep["checks"] if c["status"] in ("warn", "fail", "error")})
    assert warn == ["ProviderFallback"], warn
    assert rep["verdict"]["status"] == "warn" and rep["verdict"]["exit_code"] == 0, rep["verdict"]
a = audit()
users = {x["user"]["username"] for x in a}
assert users == {"system:serviceaccount:training:trainer"}, users
bound = {(x["user"].get("extra") or {}).get("authentication.kubernetes.io/pod-name", [""])[0] for x in a}
assert bound == set(pods), bound
bad = [(x["verb"], x["requestURI"], x["responseStatus"]["code"]) for x in a
       if x["stage"] == "ResponseComplete" and x["responseStatus"]["code"] >= 400
       and not (x["verb"] == "get" and x["responseStatus"]["code"] == 404
                and x["objectRef"].get("resource") == "configmaps")]
assert not bad, bad
print("%d gate requests, all as training/trainer bound to its own pod, none refused" %
      len([x for x in a if x["stage"] == "ResponseComplete"]))
'
echo "node-0, node-1: status=warn (ProviderFallback only), fabric=tested, busbw, EFAFabricReady True, one Event each"

# ---- the webhook stopped: Ignore ---------------------------------------
kill "$WH_PID"; wait "$WH_PID" 2>/dev/null; WH_PID=
t0=$(date +%s.%N)
create down
secs=$(kr_elapsed "$t0")
python3 - "$T" <<'EOF' || kr_die "pod created while the webhook was down"
import json, sys
d = sys.argv[1]
exec(open(d + "/gatecheck.py").read())
ungated(json.load(open(d + "/stored-down.json")))
EOF
# 1.20 counts a failed-open call nowhere (apiserver_admission_webhook_fail_open_count
# came in 1.24; the latency histogram leaves it out): its log says so.
for t in $(seq 1 50); do
    grep -q "failing open gate.efa-preflight.io" "$T/out/apiserver.log" && break
    sleep 0.1
done
grep -q "failing open gate.efa-preflight.io" "$T/out/apiserver.log" ||
    kr_die "the API server never logged the failed-open call to gate.efa-preflight.io"
echo "webhook stopped: training/efa-down created ungated in ${secs}s (Ignore); the API server logged 'failing open gate.efa-preflight.io'"
kr_no_token_in "$T/out"
echo "total $(kr_elapsed "$t_all")s"
echo "PASS"
