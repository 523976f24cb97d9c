#!/bin/bash
# Kubernetes mode authenticates members with nothing for the user to
# create. A 2-pod JobSet (pod namespaces 1 and 2) and a stranger on the
# same pod network (namespace 3) that talks to rank 0 before the real
# rank 1 starts:
#  1. no --secret-file: HELLOs are signed with a key derived from the
#     JobSet's uid, which only the job's pods read from the API, so a
#     stranger's flawless but unsigned claim of rank 1 is refused, as are
#     guessed and replayed MACs; the real pods pass.
#  2. a stranger that knows the secret (--secret-file on every side) claims
#     rank 1 from its own address: rank 0 binds rank 1 to its pod IP and
#     refuses it, naming the pod; the real pods pass.
# Real side: the chart's RBAC (initcontainer), tokens bound to the pods.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
STRANGER=$PF_ROOT/$BUILD/test-helpers/rdv_stranger
[ -x "$STRANGER" ] || kube_die "$STRANGER is missing: make test-helpers"
kube_init 3 --set mode=initcontainer --set 'jobNamespaces={ml}'
IP0=$(kube_pod_ip 1) IP1=$(kube_pod_ip 2) IPX=$(kube_pod_ip 3)
kube_jobset 0:"$IP0" 1:"$IP1"
head -c 24 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"

agent() {   # agent TAG INDEX ARGS...: one pod's agent, in the background
    local tag=$1 i=$2
    shift 2
    kube_jobset_agent "$i" "$tag-$i" -b 64K -e 256K -n 2 -w 1 --timeout 40 --log-level debug "$@"
}

# scenario TAG STRANGER_ARGS -- AGENT_ARGS
scenario() {
    local tag=$1 sargs=() aargs=() side=0 run_id="" i p0 p1 rc
    shift
    for a in "$@"; do
        if [ "$a" = -- ]; then side=1; continue; fi
        if [ $side -eq 0 ]; then sargs+=("$a"); else aargs+=("$a"); fi
    done
    agent "$tag" 0 "${aargs[@]}"
    p0=$KUBE_AGENT_PID
    for ((i = 0; i < 200; i++)); do
        run_id=$(sed -n 's/.*rank 0 listening on port [0-9]* for 2 ranks (run \([^,]*\),.*/\1/p' \
                 "$T/out/$tag-0.stderr")
        [ -n "$run_id" ] && break
        sleep 0.1
    done
    [ -n "$run_id" ] || { tail "$T/out/$tag-0.stderr"; kube_die "$tag: rank 0 never listened"; }
    ip netns exec "$(kube_netns 3)" "$STRANGER" --wait-s 10 "${sargs[@]}" \
        "$IP0" "$KUBE_RDV_PORT" 2 "$run_id" > "$T/out/$tag-stranger.out" 2>&1
    rc=$?
    cat "$T/out/$tag-stranger.out" | sed 's/^/    stranger: /'
    [ $rc -eq 0 ] || kube_die "$tag: the stranger got in"
    agent "$tag" 1 "${aargs[@]}"
    p1=$KUBE_AGENT_PID
    for p in $p0 $p1; do
        wait "$p"
        rc=$?
        [ $rc -eq 0 ] || { tail -20 "$T/out/$tag-"*.stderr; kube_die "$tag: an agent exited $rc, want 0"; }
    done
}

scenario derived --kinds no-mac,wrong-mac,replayed,valid --from "$IPX" --
grep -q "HELLOs signed with a key from the JobSet's uid" "$T/out/derived-0.stderr" ||
    kube_die "rank 0 did not sign with the JobSet's key"
grep -q "HELLOs signed with a key from the JobSet's uid" "$T/out/derived-1.stderr" ||
    kube_die "rank 1 did not sign with the JobSet's key"
grep -q "^valid refused: PeerRejected: .* sent no HMAC" "$T/out/derived-stranger.out" ||
    kube_die "an unsigned claim of rank 1 was not refused for its missing HMAC"
grep -q "7d2c0b1e" "$T"/out/derived-* && kube_die "the JobSet uid (the key's material) was logged"
echo "ok   no secret file: a key from the JobSet's uid; 4 stranger HELLOs refused, both pods pass"

scenario bound --kinds valid --from "$IPX" --secret-file "$T/secret" -- \
    --secret-file "$T/secret"
grep -q "^valid refused: PeerRejected: .*a peer at $IPX on stranger claims rank 1, which is train-workers-1-0-p1 at $IP1" \
    "$T/out/bound-stranger.out" || kube_die "a signed claim from another address was not refused by address"
echo "ok   a stranger with the secret claiming rank 1 from another address is refused; both pods pass"
kube_no_token_in "$T/out"
echo "PASS"
