#!/bin/bash
# Kubernetes mode where the pod cannot read DMI (product_name absent): the
# instance type comes from the Node's node.kubernetes.io/instance-type
# label (HyperPod's ml. prefix stripped), before IMDS; where DMI names a
# type, DMI wins. A one-pod JobSet; real side: the chart's RBAC
# (initcontainer), a token bound to the pod.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
kube_jobset 0:127.0.0.1
kube_call PATCH /api/v1/nodes/node-0 --ctype application/merge-patch+json \
    --data '{"metadata":{"labels":{"node.kubernetes.io/instance-type":"ml.p5en.48xlarge"}}}' >/dev/null ||
    kube_die "cannot label node-0 ml.p5en.48xlarge"
mkdir -p "$T/nodmi" "$T/dmi/sys/devices/virtual/dmi/id"
echo p4d.24xlarge >"$T/dmi/sys/devices/virtual/dmi/id/product_name"

agent() {   # agent TAG SYSFS_ROOT
    "$PF_BIN" run --api-server "$KUBE_API" \
        --token-file "$T/token-0" --ca-file "$KUBE_CA" \
        --pod-name train-workers-0-0-p0 --namespace ml --node-name node-0 \
        --port "$KUBE_RDV_PORT" --fabric-provider tcp --engine host \
        --sysfs-root "$2" --dev-root "$2" --timeout 20 -e 64K --no-imds \
        --report "$T/out/$1.json" >"$T/out/$1.stdout" 2>"$T/out/$1.stderr"
}
source_of() {
    python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["node"]; print(n["instance_type"], n["instance_source"])' "$1"
}

agent nodmi "$T/nodmi"
rc=$?
[ $rc -le 1 ] || { tail -n 20 "$T/out/nodmi.stderr"; kube_die "run without DMI exited $rc"; }
got=$(source_of "$T/out/nodmi.json")
[ "$got" = "p5en.48xlarge label" ] ||
    { tail -n 20 "$T/out/nodmi.stderr"; kube_die "without DMI the type is '$got', want 'p5en.48xlarge label'"; }
grep -q "p5en.48xlarge (from label)" "$T/out/nodmi.stdout" ||
    kube_die "the table does not say the type came from the label: $(grep instance_type "$T/out/nodmi.stdout")"
echo "ok   no DMI: p5en.48xlarge from the Node's label (ml. stripped), IMDS not needed"

agent dmi "$T/dmi"
rc=$?
[ $rc -le 1 ] || { tail -n 20 "$T/out/dmi.stderr"; kube_die "run with DMI exited $rc"; }
got=$(source_of "$T/out/dmi.json")
[ "$got" = "p4d.24xlarge dmi" ] || kube_die "with DMI the type is '$got', want 'p4d.24xlarge dmi'"
echo "ok   DMI product_name present: it wins over the label"
kube_no_token_in "$T/out"
echo "PASS"
