#!/bin/bash
# Kubernetes mode where the pod cannot read DMI (product_name absent): the
# instance type comes from the Node's node.kubernetes.io/instance-type
# label (HyperPod's ml. prefix stripped), before IMDS; where DMI names a
# type, DMI wins. A one-pod JobSet against the fake API server.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP

pfk8s_jobset_objects "$T/objects.json" 0:127.0.0.1
python3 - "$T/objects.json" <<'EOF2'
import json, sys
objs = json.load(open(sys.argv[1]))
for o in objs:
    if o["kind"] == "Node":
        o["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "ml.p5en.48xlarge"
json.dump(objs, open(sys.argv[1], "w"))
EOF2
pfk8s_server 127.0.0.1 "$T/objects.json"
mkdir -p "$T/nodmi" "$T/dmi/sys/devices/virtual/dmi/id"
echo p4d.24xlarge >"$T/dmi/sys/devices/virtual/dmi/id/product_name"

agent() {   # agent TAG SYSFS_ROOT
    "$PF_BIN" run --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" \
        --pod-name train-workers-0-0-p0 --namespace ml --node-name node-0 \
        --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
        --sysfs-root "$2" --dev-root "$2" --timeout 20 -e 64K --no-imds \
        --report "$T/out/$1.json" >"$T/out/$1.stdout" 2>"$T/out/$1.stderr"
}
source_of() {
    python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["node"]; print(n["instance_type"], n["instance_source"])' "$1"
}

agent nodmi "$T/nodmi"
rc=$?
[ $rc -le 1 ] || { tail -n 20 "$T/out/nodmi.stderr"; pfk8s_die "run without DMI exited $rc"; }
got=$(source_of "$T/out/nodmi.json")
[ "$got" = "p5en.48xlarge label" ] ||
    { tail -n 20 "$T/out/nodmi.stderr"; pfk8s_die "without DMI the type is '$got', want 'p5en.48xlarge label'"; }
grep -q "p5en.48xlarge (from label)" "$T/out/nodmi.stdout" ||
    pfk8s_die "the table does not say the type came from the label: $(grep instance_type "$T/out/nodmi.stdout")"
echo "ok   no DMI: p5en.48xlarge from the Node's label (ml. stripped), IMDS not needed"

agent dmi "$T/dmi"
rc=$?
[ $rc -le 1 ] || { tail -n 20 "$T/out/dmi.stderr"; pfk8s_die "run with DMI exited $rc"; }
got=$(source_of "$T/out/dmi.json")
[ "$got" = "p4d.24xlarge dmi" ] || pfk8s_die "with DMI the type is '$got', want 'p4d.24xlarge dmi'"
echo "ok   DMI product_name present: it wins over the label"
