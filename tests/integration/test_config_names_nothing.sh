#!/bin/bash
# A configuration value that names nothing on this host is a usage error,
# never a verdict on the node: an unknown libfabric provider, an address
# that does not resolve, an address no interface of this host holds. Each
# exits 2 (ConfigNamesNothing) before anything runs - no table, no report
# file - and, in Kubernetes, before anything is written: the fake API
# server sees no write at all, and no taint although --taint-on-failure is
# on. (Before, each ended status=fail, exit 1, and the taint.)
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
fail() { echo "FAIL: $*"; exit 1; }

expect_names_nothing() {   # expect_names_nothing WHAT ARGS...
    local what=$1 t0 secs rc
    shift
    rm -f "$T/r.json"
    t0=$(date +%s.%N)
    timeout 60 "$PF_BIN" "$@" --report "$T/r.json" >"$T/o.txt" 2>"$T/e.txt"
    rc=$?
    secs=$(pfk8s_elapsed "$t0")
    [ $rc -eq 2 ] || { cat "$T/e.txt" "$T/o.txt"; fail "$*: exit $rc, want 2"; }
    grep -q "^efa-preflight: ConfigNamesNothing: .*$what" "$T/e.txt" ||
        { cat "$T/e.txt"; fail "$*: the message does not name '$what'"; }
    [ -s "$T/o.txt" ] && { cat "$T/o.txt"; fail "$*: the run went on (stdout not empty)"; }
    [ -e "$T/r.json" ] && fail "$*: a report was written"
    awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || fail "$*: took ${secs}s"
    echo "ok   $* -> exit 2 in ${secs}s: $(head -n 1 "$T/e.txt")"
}

pfk8s_init
T=$PFK8S_TMP
tcp=(--fabric-provider tcp --no-imds -b 64K -e 64K -n 2 -w 0 --timeout 20)

expect_names_nothing "fabric_provider 'tpc'" local --ranks 2 "${tcp[@]}" --fabric-provider tpc
expect_names_nothing "fabric_provider 'tpc'" node --no-imds --fabric-provider 'tcp;tpc'
EFA_PREFLIGHT_FABRIC_PROVIDER=tpc expect_names_nothing "fabric_provider 'tpc'" node --no-imds
expect_names_nothing "fabric_addrs entry 1 'no-such-addr.invalid' does not resolve" \
    local --ranks 2 "${tcp[@]}" --fabric-addrs no-such-addr.invalid
expect_names_nothing "fabric_addrs entry 2 '10.254.99.99' is not an address of this host" \
    local --ranks 2 "${tcp[@]}" --fabric-addrs 127.0.0.1,10.254.99.99
expect_names_nothing "bind_addr '10.254.99.98' is not an address of this host" \
    run --bootstrap static --peers 127.0.0.1:1,127.0.0.1:2 --rank 1 "${tcp[@]}" \
    --bind-addr 10.254.99.98

# What names something still runs: a layered provider, a host name and a
# loopback address that lo answers without holding it.
"$PF_BIN" local --ranks 2 "${tcp[@]}" --fabric-provider 'tcp;ofi_rxm' \
    --fabric-addrs localhost,127.0.0.2 --port 0 >"$T/o.txt" 2>"$T/e.txt"
rc=$?
[ $rc -le 1 ] || { cat "$T/e.txt"; fail "tcp;ofi_rxm over localhost,127.0.0.2: exit $rc"; }
grep -q ConfigNamesNothing "$T/e.txt" && fail "a valid configuration was refused"
echo "ok   --fabric-provider 'tcp;ofi_rxm' --fabric-addrs localhost,127.0.0.2 runs (exit $rc)"

# Kubernetes: a JobSet pod whose provider is a typo writes nothing.
pfk8s_jobset_objects "$T/objects.json" 0:127.0.0.1
pfk8s_server 127.0.0.1 "$T/objects.json"
expect_names_nothing "fabric_provider 'tpc'" run \
    --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
    --token-file "$T/token" --ca-file "$T/certs/ca.crt" --no-imds \
    --pod-name train-workers-0-0-p0 --namespace ml --port 0 \
    --fabric-provider tpc --engine host --timeout 10 --taint-on-failure
pfk8s_state "$T/state.json"
pfk8s_check "$T/state.json" '
writes = [(r["method"], r["path"]) for r in s["requests"] if r["method"] != "GET"]
assert not writes, ("written to the cluster", writes)
assert not any(k.startswith("efa-preflight.io/") for k in labels("node-0")), labels("node-0")
assert not any(t["key"].startswith("efa-preflight.io/") for t in node("node-0").get("spec", {}).get("taints", [])), node("node-0")["spec"]
print("no write to the cluster, no label, no taint")
'
echo "PASS: values that name nothing on this host exit 2 before anything is written"
