#!/bin/bash
# Deploy files: every YAML parses; k8s/ manifests, the examples and the Helm
# chart rendered many ways (by real Helm: scripts/helm_tools.sh) validate
# against the Kubernetes schemas and the CRDs' (ServiceMonitor,
# PrometheusRule, Certificate, Issuer); `helm lint --strict` passes; the
# chart's values validate against values.schema.json; chart and k8s/ agree
# (names, labels, RBAC, env); and each checker rejects a broken input with
# the exact reason, so none of them passes by accident.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
m=tests/manifests
chart=charts/efa-preflight

command -v node >/dev/null && command -v npm >/dev/null || {
    echo "skip: node and npm are not installed (make deps installs nodejs npm)"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || {
    echo "skip: python3-yaml is not installed (make deps)"; exit 77; }
. tests/integration/lib_helm.sh
helm_find || exit 77
if [ ! -d "$m/node_modules/kubernetes-models" ] || [ ! -d "$m/node_modules/ajv" ] \
        || [ ! -d "$m/node_modules/@kubernetes-models/cert-manager" ]; then
    echo "installing the validators: npm ci in $m"
    (cd "$m" && npm ci --no-audit --no-fund --loglevel=error) || {
        echo "skip: npm ci failed in $m (no access to the npm registry?)"; exit 77; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; failures=$((failures + 1)); }

# expect_fail NAME PATTERN... -- runs the command from $tmp/cmd, wants a
# non-zero exit and every PATTERN (fixed strings) in its output.
expect_fail() {
    local name=$1; shift
    local out rc
    out=$(bash "$tmp/cmd" 2>&1); rc=$?
    if [ $rc -eq 0 ]; then bad "$name: accepted"; echo "$out" | sed 's/^/     /'; return; fi
    for p in "$@"; do
        if ! grep -qF -- "$p" <<<"$out"; then
            bad "$name: output lacks '$p'"; echo "$out" | sed 's/^/     /'; return
        fi
    done
    pass "$name: rejected ($# expected reasons)"
}

# 1. Every YAML file of the repository parses. Chart templates are checked
#    after rendering; fuzz inputs and test fixtures named *malformed* or
#    *invalid* are meant not to parse.
if python3 - <<'EOF'
import subprocess, sys, yaml
files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard",
                        "*.yaml", "*.yml"], capture_output=True, text=True,
                       check=True).stdout.split()
files = [f for f in files if "/templates/" not in f and "node_modules" not in f
         and not f.startswith("tests/fuzz/")
         and not (f.startswith("tests/") and ("malformed" in f or "invalid" in f))]
bad = 0
for f in files:
    try:
        with open(f) as fh:
            list(yaml.safe_load_all(fh))
    except (yaml.YAMLError, OSError) as e:
        print("FAIL %s: %s" % (f, e)); bad += 1
# The examples of docs/install/ (```yaml blocks) parse too.
import glob, re
blocks = 0
for f in sorted(glob.glob("docs/install/*.md")):
    for m in re.finditer(r"```yaml\n(.*?)```", open(f).read(), re.S):
        blocks += 1
        try:
            list(yaml.safe_load_all(m.group(1)))
        except yaml.YAMLError as e:
            print("FAIL %s: a yaml block: %s" % (f, e)); bad += 1
print("%d YAML files and %d docs/install blocks parsed, %d failed" % (len(files), blocks, bad))
sys.exit(1 if bad or len(files) < 15 else 0)
EOF
then pass "every YAML file parses"; else bad "YAML parse"; fi

# 2. Render the chart with `helm template` (values checked against
#    values.schema.json by Helm). Defaults, a HyperPod/override set,
#    initcontainer mode; all with the image repository the chart requires.
repo=123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight
render="$HELM template efa-preflight"
r() { "$HELM" template efa-preflight $chart --namespace efa-preflight \
          --set image.repository=$repo "$@"; }
# values_of OUT [-f FILE...]: values.yaml with the files over it, as Helm
# coalesces them (maps merged, everything else replaced).
values_of() {
    local out=$1; shift
    python3 - "$out" $chart/values.yaml "$@" <<'EOF'
import sys, yaml
def merge(a, b):
    for k, v in b.items():
        a[k] = merge(a[k], v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
    return a
out, files = sys.argv[1], [f for f in sys.argv[2:] if f != "-f"]
v = {}
for f in files:
    v = merge(v, yaml.safe_load(open(f)) or {})
v.setdefault("image", {})["repository"] = "123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight"
yaml.safe_dump(v, open(out, "w"))
EOF
}
r >"$tmp/default.yaml" && pass "chart renders with default values" || bad "chart render (defaults)"
r -f $m/fixtures/values-hyperpod.yaml >"$tmp/hyperpod.yaml" \
    && pass "chart renders with values-hyperpod.yaml" || bad "chart render (hyperpod)"
r -f $m/fixtures/values-initcontainer.yaml >"$tmp/initc.yaml" \
    && pass "chart renders in initcontainer mode" || bad "chart render (initcontainer)"
"$HELM" install efa-preflight $chart --dry-run=client --namespace efa-preflight \
    --set image.repository=$repo >"$tmp/install.txt" && sed -n '/^NOTES:/,$p' "$tmp/install.txt" >"$tmp/notes.txt" \
    && [ -s "$tmp/notes.txt" ] || bad "NOTES.txt render (helm install --dry-run=client)"
values_of "$tmp/hyperpod-values.yaml" -f $m/fixtures/values-hyperpod.yaml
values_of "$tmp/default-values.yaml"

# 3. Values against values.schema.json (ajv).
for v in "$tmp/default-values.yaml" "$tmp/hyperpod-values.yaml"; do
    if node $m/validate.mjs values "$v" $chart/values.schema.json >"$tmp/out" 2>&1; then
        pass "values schema: $(basename "$v")"
    else bad "values schema: $v"; sed 's/^/     /' "$tmp/out"; fi
done
echo "node $m/validate.mjs values $m/fixtures/bad-values.yaml $chart/values.schema.json" >"$tmp/cmd"
expect_fail "values schema on bad-values.yaml" \
    "must NOT have additional properties 'groupsize'" \
    "/mode: must be equal to one of the allowed values" \
    "/labelPrefix: must NOT be valid" \
    "/groupSize: must be >= 1" \
    "/agentOptions: property name must be valid 'min_busbw_gbp'" \
    "/instanceTypes/0: must have required property 'resources'"

# 4. Kubernetes schemas (kubernetes-models + unknown-field check; JobSet's
#    own fields by jobset-v1alpha2.schema.json, its job templates by the
#    batch/v1 schema).
if node $m/validate.mjs manifests k8s/*.yaml k8s/examples/*.yaml \
        "$tmp/default.yaml" "$tmp/hyperpod.yaml" "$tmp/initc.yaml" >"$tmp/out" 2>&1; then
    pass "Kubernetes schemas: $(tail -n 1 "$tmp/out")"
else bad "Kubernetes schemas"; grep -v '^ok ' "$tmp/out" | sed 's/^/     /'; fi
n_default=$(grep -c '^ok .*default.yaml' "$tmp/out")
[ "$n_default" -eq 19 ] && pass "default render has 19 objects" \
    || bad "default render has $n_default objects, want 19 (6 DaemonSets, 7 RBAC, 5 job RBAC, the helm test Pod)"
echo "node $m/validate.mjs manifests $m/fixtures/bad-daemonset.yaml" >"$tmp/cmd"
expect_fail "Kubernetes schemas on bad-daemonset.yaml" \
    "/spec/template/spec/tolerance: unknown field" \
    '/spec/template/spec/hostNetwork: type {"type":"boolean"}' \
    '/spec/template/spec/containers/0: required {"missingProperty":"name"}'
sed 's/maxRestarts: 0/maxRestart: 0/' k8s/examples/jobset-full.yaml >"$tmp/jobset-typo.yaml"
sed -i 's/restartPolicy: Never/restartPolicy: Nevr/; s/^\(\s*\)parallelism: 2/\1parallelism: two/' "$tmp/jobset-typo.yaml"
echo "node $m/validate.mjs manifests $tmp/jobset-typo.yaml" >"$tmp/cmd"
expect_fail "JobSet checks on a mistyped JobSet" \
    "/spec/failurePolicy: must NOT have additional properties 'maxRestart'" \
    "/spec/replicatedJobs/0/template/spec/parallelism: type" \
    "/spec/replicatedJobs/0/template/spec/template/spec/restartPolicy: enum"

# 5. Chart vs k8s/ vs examples.
if python3 $m/compare_manifests.py . "$tmp/default.yaml" >"$tmp/out" 2>&1; then
    pass "chart == k8s/: $(tail -n 1 "$tmp/out")"
else bad "chart vs k8s/"; sed 's/^/     /' "$tmp/out"; fi
# The comparison must catch drift: a dropped verb, a changed env value, an
# init container with fewer GPUs than the training container, a copy-in
# path mismatch, an unknown agent option.
mkdir -p "$tmp/root/agent/config"
cp -r k8s "$tmp/root/"
cp agent/config/config.c "$tmp/root/agent/config/"
sed -i 's/verbs: \[get, list, patch\]/verbs: [get, patch]/' "$tmp/root/k8s/10-rbac.yaml"
sed -i '/name: EFA_PREFLIGHT_GROUP_SIZE/{n;s/"2"/"3"/}' "$tmp/root/k8s/20-daemonset.yaml"
python3 - "$tmp/root/k8s/examples" <<'EOF'
import sys
d = sys.argv[1]
p = d + "/indexed-job-full.yaml"
s = open(p).read()
i = s.index("initContainers:")
j = s.index("nvidia.com/gpu: 8", i)
s = s[:j] + "nvidia.com/gpu: 4" + s[j + len("nvidia.com/gpu: 8"):]
s = s.replace("name: EFA_PREFLIGHT_TIMEOUT", "name: EFA_PREFLIGHT_TIMEOUT_S", 1)
open(p, "w").write(s)
p = d + "/jobset-copy-in.yaml"
s = open(p).read().replace("- /preflight/efa-preflight\n", "- /preflight/efa-preflight-copy\n", 1)
open(p, "w").write(s)
EOF
echo "python3 $m/compare_manifests.py $tmp/root $tmp/default.yaml" >"$tmp/cmd"
expect_fail "comparison on drifted copies of k8s/" \
    "ClusterRole /efa-preflight differs: /rules/0/verbs: 2 items in k8s/, 3 in chart" \
    "k8s/ ClusterRole efa-preflight rules" \
    "DaemonSet efa-preflight/efa-preflight-p5-48xlarge differs: /spec/template/spec/containers/0/env/7/value: '3' in k8s/, '2' in chart" \
    "indexed-job-full.yaml: initContainer efa-preflight requests {'requests': {'nvidia.com/gpu': '4'" \
    "EFA_PREFLIGHT_TIMEOUT_S is not an agent option" \
    "jobset-copy-in.yaml: copies to /preflight/efa-preflight-copy but runs /preflight/efa-preflight"

# The values schema must admit only what the agent accepts: a groupSize
# below the agent's 1 (every pod would exit 2), agentOptions keys
# the agent does not know (env it never reads).
mkdir -p "$tmp/root2/agent/config"
cp -r k8s charts "$tmp/root2/"
cp -r agent/pf.h agent/types "$tmp/root2/agent/"
cp agent/config/config.c "$tmp/root2/agent/config/"
python3 - "$tmp/root2/$chart/values.schema.json" <<'EOF2'
import json, sys
p = sys.argv[1]
s = json.load(open(p))
s["properties"]["groupSize"]["minimum"] = 0
s["definitions"]["agentOptions"]["propertyNames"] = {"pattern": "^[a-z][a-z0-9_]*$"}
json.dump(s, open(p, "w"), indent=2)
EOF2
echo "python3 $m/compare_manifests.py $tmp/root2 $tmp/default.yaml" >"$tmp/cmd"
expect_fail "comparison on a values schema wider than the agent" \
    "values.schema.json groupSize (the agent's group_size): 0..2.14748e+09 admits values the agent refuses (exit 2): it takes 1..2.14748e+09" \
    "values.schema.json agentOptions keys unlimited, the agent's options the chart does not set are ['api_server',"

# 6. What the overrides must change, exactly.
if python3 - "$tmp/hyperpod.yaml" "$tmp/initc.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ds = [d for d in docs if d["kind"] == "DaemonSet"]
errs = []
def want(what, got, exp):
    if got != exp: errs.append("%s: %r, want %r" % (what, got, exp))
want("DaemonSets", [d["metadata"]["name"] for d in ds], ["efa-preflight-ml-p5-48xlarge"])
spec = ds[0]["spec"]["template"]["spec"]
want("nodeSelector", spec["nodeSelector"], {"preflight.example.com/status": "pending",
     "sagemaker.amazonaws.com/node-health-status": "Schedulable"})
env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
for k, v in {"EFA_PREFLIGHT_LABEL_PREFIX": "preflight.example.com/",
             "EFA_PREFLIGHT_TAINT_ON_FAILURE": "true", "EFA_PREFLIGHT_GROUP_SIZE": "4",
             "EFA_PREFLIGHT_MIN_BUSBW_GBPS": "300", "EFA_PREFLIGHT_MAX_BYTES": "1G",
             "EFA_PREFLIGHT_EXPECT_EFA": "32"}.items():
    want(k, env.get(k), v)
want("FI_EFA_USE_HUGE_PAGE with hugepages requested", env.get("FI_EFA_USE_HUGE_PAGE"), None)
want("hugepages limit", spec["containers"][0]["resources"]["limits"].get("hugepages-2Mi"), "5120Mi")
want("toleration of the agent's taint", spec["tolerations"][0]["key"], "preflight.example.com/unhealthy")
sys.path.insert(0, "tests/manifests")
from compare_manifests import agent_options
opts = agent_options(".")
for k in env:
    if k.startswith("EFA_PREFLIGHT_") and k[14:].lower() not in opts:
        errs.append("%s is not an agent option" % k)
crbs = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding")
want("ClusterRoleBindings", crbs, ["efa-preflight", "efa-preflight-job-research", "efa-preflight-job-training"])
sas = sorted((d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "ServiceAccount")
want("ServiceAccounts", sas, [("efa-preflight", "efa-preflight"), ("research", "efa-preflight-job"),
                              ("training", "efa-preflight-job")])
ic = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
want("initcontainer mode kinds", sorted(d["kind"] for d in ic),
     sorted(["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
             "Role", "RoleBinding",                  # the taint budget
             "ServiceAccount", "Role", "RoleBinding", "ClusterRoleBinding",
             "RoleBinding",                          # the job's taint budget
             "Pod"]))                                # helm test
for e in errs: print("FAIL " + e)
sys.exit(1 if errs else 0)
EOF
then pass "overrides change exactly what they should"; else bad "override render"; fi

# 7. NOTES.txt tells how to read the results.
for want in "kubectl get nodes -L efa-preflight.io/status,efa-preflight.io/efa-count,efa-preflight.io/busbw-gbps" \
            "kubectl label node NODE efa-preflight.io/status=pending --overwrite" \
            "EFADevicesReady|EFAFabricReady"; do
    grep -qF -- "$want" "$tmp/notes.txt" || bad "NOTES.txt lacks: $want"
done
pass "NOTES.txt names the kubectl commands"

# 8. Helm's own checks: `helm lint --strict` passes on every values file
#    and a misspelt value fails (the schema knows every key), the chart's
#    kubeVersion and values.schema.json are enforced, and the chart renders
#    at every Kubernetes minor it supports, the API guards choosing what an
#    older cluster has.
for f in "" $m/fixtures/values-*.yaml; do
    if "$HELM" lint --strict $chart --namespace efa-preflight --set image.repository=$repo \
            ${f:+-f "$f"} >"$tmp/out" 2>&1; then
        pass "helm lint --strict ${f:-(defaults)}"
    else bad "helm lint --strict ${f:-(defaults)}"; sed 's/^/     /' "$tmp/out"; fi
done
echo "$render $chart --set image.repository=$repo --set labelPrefx=x --set webhook.replica=3" >"$tmp/cmd"
expect_fail "a misspelt value (the schema knows every key)" \
    "- at '': additional properties 'labelPrefx' not allowed" \
    "- at '/webhook': additional properties 'replica' not allowed"
echo "$render $chart --kube-version 1.26.5 --set image.repository=$repo" >"$tmp/cmd"
expect_fail "a cluster older than the chart's kubeVersion" \
    "chart requires kubeVersion: >=1.27.0-0 which is incompatible with Kubernetes v1.26.5"
echo "$render $chart --set groupSize=0 --set image.repository=$repo" >"$tmp/cmd"
expect_fail "Helm checks values.schema.json" \
    "values don't meet the specifications of the schema(s) in the following chart(s):" \
    "- at '/groupSize': minimum: got 0, want 1"

# 9. What a real EKS cluster needs. Each check also runs on a copy broken
#    the way the manifests used to be, and must name the fault.
# 9a. The image repository is required: no default, a registry host in it.
echo "$render $chart" >"$tmp/cmd"
expect_fail "chart without image.repository" \
    "- at '/image/repository': minLength: got 0, want 1"
echo "$render $chart --set image.repository=efa-preflight" >"$tmp/cmd"
expect_fail "chart with a repository that has no registry" \
'- at '"'"'/image/repository'"'"': '"'"'efa-preflight'"'"' does not match pattern' 
echo "$render $chart --skip-schema-validation" >"$tmp/cmd"
expect_fail "chart without image.repository, schema skipped" \
    "image.repository is required: the registry and repository you pushed the images to"
echo "node $m/validate.mjs values $chart/values.yaml $chart/values.schema.json" >"$tmp/cmd"
expect_fail "values.yaml alone (no repository)" "/image/repository: must NOT have fewer than 1 characters"

# 9b. The pool label lives under labelPrefix: another prefix leaves no
#     efa-preflight.io/ key in the render.
if python3 - "$tmp/hyperpod.yaml" <<'EOF2'
import sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
spec = ds["spec"]["template"]["spec"]
env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
errs = []
for where, labels in (("labels", ds["metadata"]["labels"]),
                      ("selector", ds["spec"]["selector"]["matchLabels"]),
                      ("pod labels", ds["spec"]["template"]["metadata"]["labels"])):
    if labels.get("preflight.example.com/pool") != "ml-p5-48xlarge":
        errs.append("%s: %s" % (where, labels))
if "preflight.example.com/pool=ml-p5-48xlarge" not in env["EFA_PREFLIGHT_PEER_SELECTOR"]:
    errs.append("peer selector " + env["EFA_PREFLIGHT_PEER_SELECTOR"])
if "efa-preflight.io/" in open(sys.argv[1]).read():
    errs.append("efa-preflight.io/ still in the render")
for e in errs: print("FAIL " + e)
sys.exit(1 if errs else 0)
EOF2
then pass "pool label under labelPrefix (preflight.example.com/pool)"; else bad "pool label under labelPrefix"; fi

# 9c. NetworkPolicy option: off by default (15 objects above); on, it
#     admits every DaemonSet's and every example job's peers, and with
#     egress their peers and the API server; the policies are valid.
r --set networkPolicy.enabled=true >"$tmp/np.yaml" \
    && r --set networkPolicy.enabled=true --set networkPolicy.egress=true >"$tmp/np-egress.yaml" \
    || bad "chart render (networkPolicy)"
n_np=$(grep -c '^kind: NetworkPolicy' "$tmp/np.yaml")
[ "$n_np" -eq 2 ] && pass "networkPolicy.enabled renders 2 NetworkPolicies (DaemonSet, job namespace)" \
    || bad "networkPolicy.enabled renders $n_np NetworkPolicies, want 2"
for f in np np-egress; do
    if node $m/validate.mjs manifests "$tmp/$f.yaml" >"$tmp/out" 2>&1 \
            && grep -q '^ok .*NetworkPolicy/efa-preflight-job' "$tmp/out" \
            && python3 $m/check_deploy.py netpol "$tmp/$f.yaml" k8s/examples/*.yaml >"$tmp/out" 2>&1; then
        pass "NetworkPolicy ($f): valid; admits the peers of 6 DaemonSets and 4 example jobs"
    else bad "NetworkPolicy ($f)"; sed 's/^/     /' "$tmp/out"; fi
done
echo "python3 $m/check_deploy.py netpol $tmp/default.yaml k8s/examples/indexed-job-full.yaml" >"$tmp/cmd"
expect_fail "NetworkPolicy check on a render without policies" \
    "networkPolicy.enabled rendered no NetworkPolicy"
sed 's/        - protocol: TCP/        - protocol: UDP/; /^    - Egress/{n;}' "$tmp/np-egress.yaml" \
    | python3 -c 'import sys; s=sys.stdin.read(); i=s.index("    - to:"); print(s[:i] + s[s.index("    - ports:", i):])' >"$tmp/np-bad.yaml"
echo "python3 $m/check_deploy.py netpol $tmp/np-bad.yaml" >"$tmp/cmd"
expect_fail "NetworkPolicy check on an egress policy without the peers" \
    "NetworkPolicy efa-preflight restricts egress but not to its peers on every port"

# 9d. Least privilege: no container but the agent's reaches a token that
#     can patch Nodes (checked on k8s/ by compare_manifests above); a
#     training container given the token, or a pod that mounts it
#     everywhere, is caught.
rm -rf "$tmp/root3"; mkdir -p "$tmp/root3/agent/config"
cp -r k8s charts "$tmp/root3/"
cp -r agent/pf.h agent/types "$tmp/root3/agent/"
cp agent/config/config.c "$tmp/root3/agent/config/"
sed -i '/automountServiceAccountToken: false/d' "$tmp/root3/k8s/examples/indexed-job-full.yaml" \
    "$tmp/root3/k8s/30-job-rbac.yaml"
python3 - "$tmp/root3/k8s/examples/jobset-full.yaml" <<'EOF2'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("- name: train")
j = s.index("mountPath: /preflight\n", i) + len("mountPath: /preflight\n")
ind = " " * 20
s = s[:j] + ind + "- name: efa-preflight-token\n" + ind + "  mountPath: /var/run/secrets/kubernetes.io/serviceaccount\n" + s[j:]
open(p, "w").write(s)
EOF2
sed -i '/- key: aws.amazon.com\/efa/,+2d' "$tmp/root3/k8s/examples/jobset-copy-in.yaml"
sed -i 's/efa-preflight.io\/pool/pool/' "$tmp/root3/k8s/20-daemonset.yaml"
echo "python3 $m/compare_manifests.py $tmp/root3 $tmp/default.yaml" >"$tmp/cmd"
expect_fail "token and taint checks on broken copies of k8s/" \
    "indexed-job-full.yaml: service account efa-preflight-job may patch Nodes and its token is mounted into every container (train)" \
    "jobset-full.yaml: container train mounts the token volume efa-preflight-token: it could patch Nodes" \
    "jobset-copy-in.yaml: does not tolerate the node taint aws.amazon.com/efa" \
    "DaemonSet efa-preflight-p5-48xlarge metadata.labels: pool label missing, want it under the label prefix: efa-preflight.io/pool"

# 9e. Node join: the shipped node group and NodePool configs let the
#     device plugins (as installed by default) and the pre-flight pod run.
if python3 $m/check_deploy.py nodejoin . >"$tmp/out" 2>&1; then
    pass "node-join configs: $(ls k8s/node-join | tr '\n' ' ')"
else bad "node-join configs"; sed 's/^/     /' "$tmp/out"; fi
rm -rf "$tmp/root4"; mkdir -p "$tmp/root4"; cp -r k8s "$tmp/root4/"
python3 - "$tmp/root4/k8s/node-join" <<'EOF2'
import sys
d = sys.argv[1]
p = d + "/eksctl-managed-nodegroup.yaml"     # what the README used to advise
s = open(p).read().replace("      efa-preflight.io/status: pending\n",
    "      efa-preflight.io/status: pending\n    taints:\n      - key: efa-preflight.io/unhealthy\n        value: \"true\"\n        effect: NoSchedule\n")
open(p, "w").write(s)
p = d + "/karpenter-nodepool.yaml"
s = open(p).read().replace("        - key: karpenter.sh/capacity-type",
    "        - key: efa-preflight.io/status\n          operator: In\n          values: [pass, warn]\n        - key: karpenter.sh/capacity-type")
open(p, "w").write(s)
EOF2
echo "python3 $m/check_deploy.py nodejoin $tmp/root4" >"$tmp/cmd"
expect_fail "node-join check on the old advice (join tainted unhealthy) and a verdict in a NodePool" \
    "eksctl-managed-nodegroup.yaml: node group p5-efa joins nodes with taint efa-preflight.io/unhealthy=true:NoSchedule, which nvidia-device-plugin as installed by default does not tolerate" \
    "which aws-efa-k8s-device-plugin as installed by default does not tolerate" \
    "karpenter-nodepool.yaml: NodePool p5-efa: requirement efa-preflight.io/status In ['pass', 'warn'] lets Karpenter label new nodes with a verdict"

# 9f. No deploy file names a FACTS file the repository does not have.
if python3 $m/check_deploy.py facts . >"$tmp/out" 2>&1; then pass "no reference to a missing FACTS file"
else bad "FACTS references"; sed 's/^/     /' "$tmp/out"; fi
rm -rf "$tmp/root5"; mkdir -p "$tmp/root5"; cp -r k8s charts "$tmp/root5/"; cp README.md "$tmp/root5/"
sed -i '1s/^/# What the agent may do (FACTS.md, "RBAC")\n/' "$tmp/root5/k8s/10-rbac.yaml"
echo "python3 $m/check_deploy.py facts $tmp/root5" >"$tmp/cmd"
expect_fail "FACTS check on the old k8s/10-rbac.yaml" "k8s/10-rbac.yaml:1 names FACTS"

# 10. What a platform team expects of a chart (values-platform.yaml):
#     priority class, seccomp and a restricted container securityContext on
#     every DaemonSet (default render too), names, service account,
#     annotations, affinity merged with the instance types, update
#     strategy, the image by digest; the PrometheusRule passes `promtool
#     check rules`; the ServiceMonitor scrapes the Pushgateway with
#     honorLabels; the schema refuses a bad digest and a service account
#     neither made nor named.
r -f $m/fixtures/values-platform.yaml >"$tmp/platform.yaml" && pass "chart renders with values-platform.yaml" \
    || bad "chart render (platform)"
if python3 - "$tmp/default.yaml" "$tmp/platform.yaml" <<'EOF2'
import sys, yaml
errs = []
def want(what, got, exp):
    if got != exp: errs.append("%s: %r, want %r" % (what, got, exp))
digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
for path, platform in ((sys.argv[1], False), (sys.argv[2], True)):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    dss = [d for d in docs if d["kind"] == "DaemonSet"]
    want("%s DaemonSets" % path, len(dss), 6)
    for ds in dss:
        name = ds["metadata"]["name"]
        spec = ds["spec"]["template"]["spec"]
        c = spec["containers"][0]
        want(name + " pod seccompProfile", spec.get("securityContext", {}).get("seccompProfile"),
             {"type": "RuntimeDefault"})
        want(name + " container securityContext", c.get("securityContext"),
             {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
              "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]}})
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        for d in ("/tmp", "/dev/shm"):
            if d not in mounts: errs.append("%s: %s not mounted (read-only root)" % (name, d))
        types = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for t in types:
            keys = [e["key"] for e in t["matchExpressions"]]
            if "node.kubernetes.io/instance-type" not in keys:
                errs.append("%s: a nodeSelectorTerm without the instance types: %s" % (name, t))
        if not platform:
            want(name + " priorityClassName", spec.get("priorityClassName"), None)
            want(name + " image", c["image"].endswith(":0.1.0-full"), True)
            continue
        want(name + " name", name.startswith("preflight-"), True)
        want(name + " priorityClassName", spec.get("priorityClassName"), "system-node-critical")
        want(name + " serviceAccountName", spec["serviceAccountName"], "platform-preflight")
        want(name + " podAnnotations", ds["spec"]["template"]["metadata"].get("annotations"),
             {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"})
        want(name + " updateStrategy", ds["spec"].get("updateStrategy"),
             {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}})
        want(name + " image", c["image"],
             "123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight@" + digest)
        want(name + " terms", [[e["key"] for e in t["matchExpressions"]] for t in types],
             [["topology.kubernetes.io/zone", "node.kubernetes.io/instance-type"]])
        aff = ds["spec"]["template"]["spec"]["affinity"]
        want(name + " podAntiAffinity kept", aff["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"], 50)
    if platform:
        sas = [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "ServiceAccount"]
        want("ServiceAccounts with create: false", sas, [("default", "preflight-job")])
        for d in docs:
            if d["kind"] in ("ClusterRoleBinding", "RoleBinding") and d["metadata"]["name"] == "preflight":
                want(d["kind"] + " subject", d["subjects"][0]["name"], "platform-preflight")
        pr = [d for d in docs if d["kind"] == "PrometheusRule"]
        sm = [d for d in docs if d["kind"] == "ServiceMonitor"]
        want("PrometheusRules", len(pr), 1)
        want("ServiceMonitors", len(sm), 1)
        if pr:
            want("PrometheusRule labels", pr[0]["metadata"]["labels"].get("release"), "kube-prometheus-stack")
            yaml.safe_dump({"groups": pr[0]["spec"]["groups"]}, open(sys.argv[2] + ".rules.yaml", "w"))
            rules = [r["alert"] for g in pr[0]["spec"]["groups"] for r in g["rules"]]
            want("alerts", rules, ["EFAPreflightFailed", "EFAPreflightStale"])
            for g in pr[0]["spec"]["groups"]:
                for r in g["rules"]:
                    if "$labels.node" not in r["annotations"]["summary"]:
                        errs.append("alert %s does not name the node label" % r["alert"])
        if sm:
            ep = sm[0]["spec"]["endpoints"][0]
            want("ServiceMonitor honorLabels", ep.get("honorLabels"), True)
            want("ServiceMonitor keeps efa_preflight_*", ep["metricRelabelings"][0]["regex"], "efa_preflight_.*")
            want("ServiceMonitor selector", sm[0]["spec"]["selector"]["matchLabels"],
                 {"app.kubernetes.io/name": "prometheus-pushgateway"})
    else:
        for k in ("PrometheusRule", "ServiceMonitor"):
            if any(d["kind"] == k for d in docs): errs.append("default render has a " + k)
for e in errs: print("FAIL " + e)
sys.exit(1 if errs else 0)
EOF2
then pass "platform values: priority class, seccomp, restricted container, names, service account, annotations, affinity, update strategy, digest"
else bad "platform values render"; fi
# Every object, the Prometheus Operator's included (their rules also by
# promtool below).
if node $m/validate.mjs manifests "$tmp/platform.yaml" >"$tmp/out" 2>&1 \
        && grep -q '^ok .*PrometheusRule/' "$tmp/out" && grep -q '^ok .*ServiceMonitor/' "$tmp/out"; then
    pass "platform render: Kubernetes schemas ($(tail -n 1 "$tmp/out"))"
else bad "platform render schemas"; grep -v '^ok ' "$tmp/out" | sed 's/^/     /'; fi
if command -v promtool >/dev/null; then
    if promtool check rules "$tmp/platform.yaml.rules.yaml" >"$tmp/out" 2>&1; then
        pass "promtool check rules accepts the chart's PrometheusRule ($(grep -o 'SUCCESS: [0-9]* rules found' "$tmp/out"))"
    else bad "promtool check rules"; sed 's/^/     /' "$tmp/out"; fi
    sed 's/== 1$/== = 1/' "$tmp/platform.yaml.rules.yaml" >"$tmp/bad-rules.yaml"
    echo "promtool check rules $tmp/bad-rules.yaml" >"$tmp/cmd"
    expect_fail "promtool on a broken copy of the rules" "FAILED"
else
    echo "note promtool is not installed (make deps): the rules were not linted"
fi
digest=sha256:$(printf 'x' | sha256sum | cut -d' ' -f1)
r --set image.tag=$digest >"$tmp/tagdigest.yaml" && grep -q "image: $repo@$digest\$" "$tmp/tagdigest.yaml" \
    && ! grep -q -- "$digest-full" "$tmp/tagdigest.yaml" \
    && pass "image.tag=sha256:... renders <repository>@sha256:..." || bad "a digest tag: $(grep 'image:' "$tmp/tagdigest.yaml" | head -n 1)"
echo "$render $chart --set image.repository=$repo --set image.digest=sha256:1234" >"$tmp/cmd"
expect_fail "schema on a short digest" "- at '/image/digest': 'sha256:1234' does not match pattern"
echo "$render $chart --set image.repository=$repo --set serviceAccount.create=false" >"$tmp/cmd"
expect_fail "schema on serviceAccount.create=false without a name" "- at '/serviceAccount/name': minLength: got 0, want 1"
echo "$render $chart --set image.repository=$repo --set priorityClassName=System_Critical" >"$tmp/cmd"
expect_fail "schema on a bad priorityClassName" "- at '/priorityClassName': 'System_Critical' does not match pattern"

# 12. The admission webhook (webhook.enabled, docs/install/webhook.md):
#     off by default; on, with the chart's own certificate or cert-manager's,
#     every object valid, and tests/manifests/check_webhook.py's rules hold
#     (failurePolicy Ignore, timeout <= 5, opt-in namespaces, the release
#     namespace and opted-out pods left out, caBundle verifying the served
#     certificate, 2 replicas + PDB + probes, RBAC for the job's own service
#     accounts, the node policy naming them); the generated certificate is
#     kept across an upgrade (lookup finds the Secret) and fresh otherwise;
#     the checker and the schema reject broken inputs with the reason.
grep -q 'MutatingWebhookConfiguration' "$tmp/default.yaml" && bad "webhook rendered although webhook.enabled is false" \
    || pass "webhook off by default"
wh=$m/fixtures/values-webhook.yaml
r -f $wh >"$tmp/wh.yaml" && r -f $wh --set webhook.certManager.enabled=true >"$tmp/wh-cm.yaml" \
    || bad "chart render (webhook)"
if node $m/validate.mjs manifests "$tmp/wh.yaml" "$tmp/wh-cm.yaml" >"$tmp/out" 2>&1 \
        && grep -q '^ok .*MutatingWebhookConfiguration/' "$tmp/out" \
        && grep -q '^ok .*wh-cm.yaml: Certificate/' "$tmp/out" && grep -q '^ok .*wh-cm.yaml: Issuer/' "$tmp/out" \
        && grep -q '^ok .*ValidatingAdmissionPolicy/' "$tmp/out"; then
    pass "webhook render: Kubernetes schemas ($(tail -n 1 "$tmp/out"))"
else bad "webhook render: Kubernetes schemas"; grep -v '^ok ' "$tmp/out" | sed 's/^/     /'; fi
for f in wh wh-cm; do
    flag=; [ $f = wh-cm ] && flag=--cert-manager
    if python3 $m/check_webhook.py "$tmp/$f.yaml" $flag >"$tmp/out" 2>&1; then pass "$f: $(tail -n 1 "$tmp/out")"
    else bad "$f: webhook checks"; sed 's/^/     /' "$tmp/out"; fi
done
r -f $wh >"$tmp/wh-again.yaml" || bad "webhook re-render"
python3 - "$tmp/wh.yaml" "$tmp/wh-bad.yaml" <<'EOF2'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "MutatingWebhookConfiguration":
        h = d["webhooks"][0]
        h["failurePolicy"], h["timeoutSeconds"] = "Fail", 10
        for e in h["namespaceSelector"]["matchExpressions"]:
            if e["key"] == "kubernetes.io/metadata.name":
                e["values"] = ["kube-system"]
        h["clientConfig"]["caBundle"] = "Zm9v"
    if d["kind"] == "Deployment":
        d["spec"]["replicas"] = 1
    if d["kind"] == "Job" and d["spec"]["template"]["spec"]["containers"][0]["args"][0] == "create":
        c = d["spec"]["template"]["spec"]["containers"][0]
        c["args"] = [a.replace("--secret-name=efa-preflight-webhook-tls", "--secret-name=other") for a in c["args"]]
        d["metadata"]["annotations"]["helm.sh/hook"] = "post-install"
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
EOF2
echo "python3 $m/check_webhook.py $tmp/wh-bad.yaml" >"$tmp/cmd"
expect_fail "webhook checks on a broken render" \
    "failurePolicy 'Fail', want Ignore" "timeoutSeconds 10, want 1..5" \
    "namespaceSelector does not exclude the release namespace efa-preflight" \
    "Deployment replicas 1, want >= 2" "caBundle rendered" \
    "the create Job runs at ['post-install'], want pre-install,pre-upgrade" \
    "the certificate Jobs write other and read efa-preflight-webhook-tls, the Deployment mounts efa-preflight-webhook-tls"
sed 's/sideEffects: None/sideEffect: None/' "$tmp/wh.yaml" >"$tmp/wh-typo.yaml"
echo "node $m/validate.mjs manifests $tmp/wh-typo.yaml" >"$tmp/cmd"
expect_fail "Kubernetes schemas on a mistyped MutatingWebhookConfiguration" "/webhooks/0/sideEffect: unknown field"
echo "$render $chart --set image.repository=$repo --set webhook.timeoutSeconds=31 --set webhook.failurePolicy=Sometimes" >"$tmp/cmd"
expect_fail "values schema on webhook values" "- at '/webhook/timeoutSeconds': maximum: got 31, want 30" \
    "- at '/webhook/failurePolicy': value must be one of 'Ignore', 'Fail'"
# 10b. The monitor (values-monitor.yaml): one DaemonSet on the chart's
#      instance types that requests no GPU or EFA device, runs `monitor`
#      with options the agent knows, serves its port, tolerates every
#      taint, has a priority class; a headless Service and a ServiceMonitor
#      scrape it; the ClusterRole may list pods; the PrometheusRule gains
#      the NIC and valid-until alerts and passes `promtool check rules`.
r -f $m/fixtures/values-monitor.yaml >"$tmp/monitor.yaml" && pass "chart renders with values-monitor.yaml" \
    || bad "chart render (monitor)"
if python3 - "$tmp/monitor.yaml" <<'EOF2'
import sys, yaml
sys.path.insert(0, "tests/manifests")
from compare_manifests import agent_options
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
errs = []
def want(what, got, exp):
    if got != exp: errs.append("%s: %r, want %r" % (what, got, exp))
mon = [d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("-monitor")]
want("monitor DaemonSets", len(mon), 1)
if mon:
    spec = mon[0]["spec"]["template"]["spec"]
    c = spec["containers"][0]
    want("command", c["command"], ["efa-preflight", "monitor"])
    for kind in ("requests", "limits"):
        res = c["resources"].get(kind, {})
        for k in res:
            if k in ("nvidia.com/gpu", "vpc.amazonaws.com/efa") or k.startswith("hugepages"):
                errs.append("the monitor requests %s %s" % (kind, k))
    want("priorityClassName", spec.get("priorityClassName"), "system-node-critical")
    want("tolerations", spec.get("tolerations"), [{"operator": "Exists"}])
    want("port", c["ports"], [{"name": "metrics", "containerPort": 9464, "protocol": "TCP"}])
    env = {e["name"]: e.get("value") for e in c["env"]}
    want("listen", env.get("EFA_PREFLIGHT_LISTEN"), ":9464")
    want("interval", env.get("EFA_PREFLIGHT_INTERVAL"), "15")
    want("thresholds", env.get("EFA_PREFLIGHT_MONITOR_THRESHOLDS"), "rx_drops=500,cmds_err=0")
    opts = agent_options(".")
    for k in env:
        if k.startswith("EFA_PREFLIGHT_") and k[14:].lower() not in opts:
            errs.append("%s is not an agent option" % k)
    types = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]
    want("instance types key", types["key"], "node.kubernetes.io/instance-type")
    if "p5.48xlarge" not in types["values"]:
        errs.append("the monitor does not run on p5.48xlarge: %s" % types["values"])
    want("liveness", c["livenessProbe"]["httpGet"]["path"], "/healthz")
    want("non-root", spec["securityContext"].get("runAsNonRoot"), True)
svc = [d for d in docs if d["kind"] == "Service"]
want("Services", [s["spec"]["ports"][0]["name"] for s in svc], ["metrics"])
sms = [d for d in docs if d["kind"] == "ServiceMonitor"]
want("ServiceMonitors", len(sms), 1)
if sms and svc:
    want("ServiceMonitor selects the Service", sms[0]["spec"]["selector"]["matchLabels"].items()
         <= svc[0]["metadata"]["labels"].items(), True)
    want("ServiceMonitor port", sms[0]["spec"]["endpoints"][0]["port"], "metrics")
cr = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "efa-preflight"][0]
if not any(r["resources"] == ["pods"] and r["verbs"] == ["list"] for r in cr["rules"]):
    errs.append("the ClusterRole cannot list pods")
pr = [d for d in docs if d["kind"] == "PrometheusRule"]
want("PrometheusRules", len(pr), 1)
if pr:
    rules = [r["alert"] for g in pr[0]["spec"]["groups"] for r in g["rules"]]
    want("alerts", rules, ["EFAPreflightFailed", "EFAPreflightStale", "EFANICUnhealthy",
                           "EFAValidationExpired"])
    yaml.safe_dump({"groups": pr[0]["spec"]["groups"]}, open(sys.argv[1] + ".rules.yaml", "w"))

for e in errs: print("FAIL " + e)
sys.exit(1 if errs else 0)
EOF2
then pass "monitor values: one DaemonSet without devices, its Service and ServiceMonitor, pods list, four alerts"
else bad "monitor values render"; fi
if node $m/validate.mjs manifests "$tmp/monitor.yaml" >"$tmp/out" 2>&1 \
        && [ "$(grep -c '^ok .*ServiceMonitor/' "$tmp/out")" -eq 1 ]; then
    pass "monitor render: Kubernetes schemas ($(tail -n 1 "$tmp/out"))"
else bad "monitor render schemas"; grep -v '^ok ' "$tmp/out" | sed 's/^/     /'; fi
if command -v promtool >/dev/null; then
    if promtool check rules "$tmp/monitor.yaml.rules.yaml" >"$tmp/out" 2>&1; then
        pass "promtool check rules accepts the monitor's alerts ($(grep -o 'SUCCESS: [0-9]* rules found' "$tmp/out"))"
    else bad "promtool check rules (monitor)"; sed 's/^/     /' "$tmp/out"; fi
fi
echo "$render $chart --set image.repository=$repo --set monitor.enabled=true --set monitor.thresholds=rx-drops=1" >"$tmp/cmd"
expect_fail "schema on a bad monitor.thresholds" "- at '/monitor/thresholds': 'rx-drops=1' does not match pattern"

# 11. The packaged chart (make chart-package: helm package + helm repo
#     index): efa-preflight/ inside, the index holding its digest, the same
#     bytes twice, and it renders what the directory renders.
pkg=$tmp/repo
"$HELM" package $chart -d "$pkg" >"$tmp/out" 2>&1 && "$HELM" repo index "$pkg" >>"$tmp/out" 2>&1 \
    || { bad "helm package"; cat "$tmp/out"; }
version=$(sed -n 's/^version: //p' $chart/Chart.yaml)
tgz=$pkg/efa-preflight-$version.tgz
if [ -f "$tgz" ] && tar tzf "$tgz" | grep -qx 'efa-preflight/Chart.yaml' \
        && ! tar tzf "$tgz" | grep -qv '^efa-preflight/' \
        && grep -q "digest: $(sha256sum "$tgz" | cut -d' ' -f1)" "$pkg/index.yaml" \
        && grep -q "^ *- efa-preflight-$version.tgz\$" "$pkg/index.yaml"; then
    pass "package: efa-preflight-$version.tgz under efa-preflight/, index.yaml with its digest"
else bad "package layout"; tar tzf "$tgz" | head; cat "$pkg/index.yaml"; fi
"$HELM" package $chart -d "$tmp/repo2" >/dev/null 2>&1
cmp -s "$tgz" "$tmp/repo2/efa-preflight-$version.tgz" && pass "package is reproducible (same bytes twice)" \
    || bad "two packages of the same chart differ"
r >"$tmp/dir.yaml"
"$HELM" template efa-preflight "$tgz" --namespace efa-preflight --set image.repository=$repo >"$tmp/tgz.yaml" \
    && cmp -s "$tmp/dir.yaml" "$tmp/tgz.yaml" \
    && pass "the .tgz renders what the directory renders" \
    || bad "render from the package differs: $(diff "$tmp/dir.yaml" "$tmp/tgz.yaml" | head -5)"

# 13. The knobs a platform team sets (values-knobs.yaml, and the same
#     by --set as a user types them): global accepted, commonLabels and
#     commonAnnotations on every object, Helm's standard labels on every
#     object, podLabels, extraEnv, extra volumes, security contexts,
#     placement of every component, the webhook's selectors and policy, an
#     existing ClusterIssuer, alerts turned off, tuned and added (each with
#     a runbook and a `for`), every image by digest; every object valid
#     (CRDs included) and the rules through promtool.
kn=$m/fixtures/values-knobs.yaml
r -f $kn >"$tmp/knobs.yaml" && pass "chart renders with values-knobs.yaml" || bad "chart render (knobs)"
r --set global.imageRegistry=x --set 'extraEnv[0].name=NCCL_DEBUG' --set 'extraEnv[0].value=INFO' \
    --set commonLabels.team=ml --set image.digest=sha256:$(printf '1%.0s' $(seq 64)) \
    --set monitor.enabled=true --set image.webhookDigest=sha256:$(printf '3%.0s' $(seq 64)) \
    --set image.agentDigest=sha256:$(printf '2%.0s' $(seq 64)) >"$tmp/set.yaml" \
    && pass "--set global.imageRegistry, extraEnv[0], commonLabels and digests render" || bad "chart render (--set knobs)"
r -f $m/fixtures/values-webhook.yaml -f $m/fixtures/values-monitor.yaml --set prometheusRule.enabled=true \
    --set serviceMonitor.enabled=true --set grafanaDashboard.enabled=true --set networkPolicy.enabled=true \
    --set commonLabels.team=ml --set commonAnnotations.owner=ml >"$tmp/everything.yaml" \
    && r -f $m/fixtures/values-webhook.yaml --set webhook.certManager.enabled=true --set commonLabels.team=ml \
        --set commonAnnotations.owner=ml >>"$tmp/everything.yaml" \
    || bad "chart render (everything on)"
if python3 - "$tmp/knobs.yaml" "$tmp/set.yaml" "$tmp/everything.yaml" <<'EOF2'
import sys, yaml
errs = []
def want(what, got, exp):
    if got != exp: errs.append("%s: %r, want %r" % (what, got, exp))
def pods(d):
    t = d.get("spec", {}).get("template") or (d.get("spec", {}).get("jobTemplate", {}).get("spec", {}).get("template"))
    return t
kn = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
std = ("helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
       "app.kubernetes.io/managed-by", "app.kubernetes.io/component")
for path in (sys.argv[1], sys.argv[3]):
    for d in yaml.safe_load_all(open(path)):
        if not d: continue
        labels = d["metadata"].get("labels", {})
        missing = [k for k in std if k not in labels]
        if missing: errs.append("%s %s lacks the labels %s" % (d["kind"], d["metadata"]["name"], missing))
        if labels.get("team") not in ("ml-platform", "ml"):
            errs.append("%s %s lacks commonLabels" % (d["kind"], d["metadata"]["name"]))
        if d["metadata"].get("annotations", {}).get("owner") not in ("ml-platform@example.com", "ml"):
            errs.append("%s %s lacks commonAnnotations" % (d["kind"], d["metadata"]["name"]))
        t = pods(d) if d["kind"] != "Pod" else d
        if t:
            pl = t["metadata"]["labels"]
            for k in std:
                if k not in pl: errs.append("%s %s: pod template lacks %s" % (d["kind"], d["metadata"]["name"], k))
            sel = d["spec"].get("selector", {}).get("matchLabels", {})
            if not sel.items() <= pl.items():
                errs.append("%s %s: selector %s does not match its pods" % (d["kind"], d["metadata"]["name"], sel))
            for k in ("helm.sh/chart", "app.kubernetes.io/version"):
                if k in sel: errs.append("%s %s: selector holds %s (changes on upgrade)" % (d["kind"], d["metadata"]["name"], k))
by = {(d["kind"], d["metadata"]["name"]): d for d in kn}
ds = by[("DaemonSet", "efa-preflight-p5-48xlarge")]["spec"]["template"]
c = ds["spec"]["containers"][0]
env = [(e["name"], e.get("value")) for e in c["env"]]
want("DaemonSet extraEnv last", env[-2:], [("NCCL_DEBUG", "INFO"), ("FI_EFA_FORK_SAFE", "1")])
want("DaemonSet podLabels", ds["metadata"]["labels"].get("cost-center"), "42")
want("DaemonSet extra mount", c["volumeMounts"][-1], {"name": "nccl-topo", "mountPath": "/etc/nccl", "readOnly": True})
want("DaemonSet extra volume", ds["spec"]["volumes"][-1], {"name": "nccl-topo", "configMap": {"name": "nccl-topology"}})
want("DaemonSet capabilities", c["securityContext"]["capabilities"]["add"], ["IPC_LOCK", "SYS_RESOURCE"])
wh = by[("Deployment", "efa-preflight-webhook")]["spec"]["template"]
want("webhook nodeSelector", wh["spec"].get("nodeSelector"), {"node-role.example.com/system": "true"})
want("webhook tolerations", wh["spec"].get("tolerations"), [{"key": "CriticalAddonsOnly", "operator": "Exists"}])
want("webhook podLabels", wh["metadata"]["labels"].get("sidecar.istio.io/inject"), "false")
want("webhook extraEnv", wh["spec"]["containers"][0]["env"][-1], {"name": "TZ", "value": "UTC"})
mwc = by[("MutatingWebhookConfiguration", "efa-preflight")]["webhooks"][0]
want("failurePolicy", mwc["failurePolicy"], "Fail")
want("timeoutSeconds", mwc["timeoutSeconds"], 3)
want("namespaceSelector", mwc["namespaceSelector"], {"matchLabels": {"ml.example.com/efa-gate": "on"},
     "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["efa-preflight"]}]})
want("objectSelector", mwc["objectSelector"]["matchExpressions"],
     [{"key": "ml.example.com/skip-gate", "operator": "DoesNotExist"},
      {"key": "efa-preflight.io/inject", "operator": "NotIn", "values": ["false"]}])
cert = by[("Certificate", "efa-preflight-webhook")]["spec"]
want("issuerRef", cert["issuerRef"], {"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"})
want("Issuers with an issuerRef given", [k for k in by if k[0] == "Issuer"], [])
mon = by[("DaemonSet", "efa-preflight-monitor")]["spec"]["template"]
terms = mon["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
want("monitor affinity keeps the instance types", [[e["key"] for e in t["matchExpressions"]] for t in terms],
     [["topology.kubernetes.io/zone", "node.kubernetes.io/instance-type"]])
want("monitor nodeSelector", mon["spec"].get("nodeSelector"), {"node-role.example.com/gpu": "true"})
want("monitor podAnnotations", mon["metadata"]["annotations"].get("prometheus.io/scrape"), "true")
pr = by[("PrometheusRule", "efa-preflight")]["spec"]["groups"][0]["rules"]
want("alerts", [x["alert"] for x in pr], ["EFAPreflightFailed", "EFANICUnhealthy", "EFAValidationExpired", "EFAPreflightManyFailed"])
for x in pr:
    if not x.get("for"): errs.append("alert %s has no for" % x["alert"])
    if not x["annotations"].get("runbook_url", "").startswith("https://"): errs.append("alert %s has no runbook_url" % x["alert"])
want("EFAPreflightFailed tuned", (pr[0]["for"], pr[0]["labels"]["severity"]), ("15m", "critical"))
want("runbook", pr[0]["annotations"]["runbook_url"].split("#")[1], "efapreflightfailed")
test = by[("Pod", "efa-preflight-test-images")]
want("helm test hook", test["metadata"]["annotations"].get("helm.sh/hook"), "test")
want("helm test placement", test["spec"].get("nodeSelector"), {"node-role.example.com/system": "true"})
imgs = {c["name"]: c["image"] for c in test["spec"]["containers"]}
want("helm test images", sorted(imgs), ["agent", "full", "webhook"])
env = {e["name"]: e.get("value") for e in wh["spec"]["containers"][0]["env"]}
want("helm test runs the injected image", imgs.get("agent"), env.get("EFA_PREFLIGHT_AGENT_IMAGE"))
want("webhook DRA claims", env.get("EFA_PREFLIGHT_DRA_CLAIMS"), "efa-*,h100-x8")
for path in (sys.argv[1], sys.argv[2]):
    text = open(path).read()
    for d in yaml.safe_load_all(text):
        if not d: continue
        t = pods(d) if d["kind"] != "Pod" else d
        for c in ((t or {}).get("spec", {}).get("containers", []) + (t or {}).get("spec", {}).get("initContainers", [])):
            if "@sha256:" not in c["image"]:
                errs.append("%s: %s %s runs %s, not by digest" % (path, d["kind"], d["metadata"]["name"], c["image"]))
    if "-agent\"" in text or ":0.1.0-" in text:
        errs.append("%s: a tag-only chart image: %s" % (path, [l for l in text.splitlines() if ":0.1.0-" in l or "-agent\"" in l][:2]))
setd = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
sds = [d for d in setd if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("p5-48xlarge")][0]
want("--set extraEnv[0]", sds["spec"]["template"]["spec"]["containers"][0]["env"][-1], {"name": "NCCL_DEBUG", "value": "INFO"})
want("--set commonLabels.team", sds["metadata"]["labels"].get("team"), "ml")
for e in errs: print("FAIL " + e)
sys.exit(1 if errs else 0)
EOF2
then pass "knobs: standard and common labels/annotations on every object, env, volumes, security, placement, selectors, issuer, alerts, digests"
else bad "knobs"; fi
if node $m/validate.mjs manifests "$tmp/knobs.yaml" "$tmp/set.yaml" "$tmp/everything.yaml" >"$tmp/out" 2>&1; then
    pass "knobs renders: every object valid, CRDs included ($(tail -n 1 "$tmp/out"))"
else bad "knobs renders: schemas"; grep -v '^ok ' "$tmp/out" | sed 's/^/     /'; fi
# The webhook checks hold but for what the knobs chose against the
# defaults' policy: failurePolicy Fail, a namespaceSelector of their own.
python3 $m/check_webhook.py "$tmp/knobs.yaml" --cert-manager --issuer=ClusterIssuer/corp-ca >"$tmp/out" 2>&1
if [ "$(grep -c '^FAIL' "$tmp/out")" -eq 2 ] && grep -q "^FAIL failurePolicy 'Fail', want Ignore" "$tmp/out" \
        && grep -q "^FAIL namespaceSelector does not require the opt-in label" "$tmp/out"; then
    pass "knobs webhook: certificate from the ClusterIssuer given, Deployment and RBAC as required"
else bad "knobs webhook checks"; sed 's/^/     /' "$tmp/out"; fi
if command -v promtool >/dev/null; then
    python3 -c 'import sys, yaml
pr = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "PrometheusRule"][0]
yaml.safe_dump({"groups": pr["spec"]["groups"]}, open(sys.argv[2], "w"))' "$tmp/knobs.yaml" "$tmp/knobs-rules.yaml"
    promtool check rules "$tmp/knobs-rules.yaml" >"$tmp/out" 2>&1 && pass "promtool check rules: the tuned and added alerts" \
        || { bad "promtool (knobs)"; sed 's/^/     /' "$tmp/out"; }
fi

# 13b. Pinned means pinned: one digest given, a chart image without its
#      own fails the render naming the value; a whole image given without
#      a digest too. Typos and Helm's own labels are refused by the schema.
echo "$render $chart --set image.repository=$repo --set image.digest=sha256:$(printf '1%.0s' $(seq 64)) --set webhook.enabled=true" >"$tmp/cmd"
expect_fail "a digest for the DaemonSets, none for the injected image" \
    "images are pinned by digest (image.digest, agentDigest or webhookDigest is set): set image.agentDigest too, the digest of $repo:0.1.0-agent"
echo "$render $chart --set image.repository=$repo -f $kn --set webhook.image=$repo:custom" >"$tmp/cmd"
expect_fail "a pinned release with webhook.image by tag" 'webhook.image "'"$repo"':custom" has none'
echo "$render $chart --set image.repository=$repo --set image.digest=sha256:$(printf '1%.0s' $(seq 64)) --set webhook.enabled=true --set image.agentDigest=sha256:$(printf '2%.0s' $(seq 64)) --set image.webhookDigest=sha256:$(printf '3%.0s' $(seq 64)) --set webhook.certGen.image.digest=" >"$tmp/cmd"
expect_fail "a pinned release with the certificate Job's image by tag" "images are pinned by digest: set webhook.certGen.image.digest too"
echo "$render $chart --set image.repository=$repo --set webhook.podLabel.a=b --set 'podLabels.app\.kubernetes\.io/name=x' --set 'extraEnv[0].valu=x' --set prometheusRule.rules.EFAPreflightFaild.enabled=false" >"$tmp/cmd"
expect_fail "the schema on misspelt knobs and a standard label overridden" \
    "- at '/webhook': additional properties 'podLabel' not allowed" \
    "invalid propertyName 'app.kubernetes.io/name'" \
    "- at '/extraEnv/0': additional properties 'valu' not allowed" \
    "- at '/prometheusRule/rules': additional properties 'EFAPreflightFaild' not allowed"

# 14. Kubernetes versions and GitOps: the chart renders at every minor
#     it supports with the webhook and the monitor on, valid each time; the
#     node policy (ValidatingAdmissionPolicy v1) renders from 1.30 and is
#     refused, naming why, below; and two renders are the same bytes
#     (no generated CA or key: Argo CD and Flux see no drift).
for kv in 1.28.0 1.30.0 1.32.0 1.35.0; do
    np=true; case $kv in 1.28.*) np=false ;; esac
    if r --kube-version $kv -f $m/fixtures/values-webhook.yaml -f $m/fixtures/values-monitor.yaml \
            --set webhook.nodePolicy.enabled=$np >"$tmp/kv.yaml" 2>"$tmp/out" \
            && node $m/validate.mjs manifests "$tmp/kv.yaml" >"$tmp/out" 2>&1 \
            && { [ $np = false ] || grep -q '^ok .*ValidatingAdmissionPolicy/' "$tmp/out"; }; then
        pass "Kubernetes $kv: renders and validates (node policy: $np)"
    else bad "Kubernetes $kv"; grep -v '^ok ' "$tmp/out" | sed 's/^/     /'; fi
done
echo "$render $chart --set image.repository=$repo --kube-version 1.28.0 -f $m/fixtures/values-webhook.yaml" >"$tmp/cmd"
expect_fail "the node policy on Kubernetes 1.28" "webhook.nodePolicy.enabled needs Kubernetes >= 1.30" "this cluster is v1.28.0"
for v in "" "--set webhook.certManager.enabled=true"; do
    # shellcheck disable=SC2086
    r -f $m/fixtures/values-webhook.yaml -f $m/fixtures/values-monitor.yaml $v >"$tmp/r1.yaml"
    # shellcheck disable=SC2086
    r -f $m/fixtures/values-webhook.yaml -f $m/fixtures/values-monitor.yaml $v >"$tmp/r2.yaml"
    if [ -s "$tmp/r1.yaml" ] && cmp -s "$tmp/r1.yaml" "$tmp/r2.yaml"; then
        pass "two renders are identical (webhook ${v:-with the certificate Job})"
    else bad "two renders differ (${v:-certificate Job}): $(diff "$tmp/r1.yaml" "$tmp/r2.yaml" | head -4)"; fi
done

echo "manifests: $failures failed checks"
[ $failures -eq 0 ]
