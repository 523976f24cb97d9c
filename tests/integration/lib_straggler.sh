# Straggler tests over a slowed link (test_straggler_netem.sh,
# test_straggler_tbf.sh): 4 ranks in namespaces named pfsg-* in
# 10.254.60.0/24 (lib_netns.sh with our own names), a qdisc on rank 2's
# interface so that everything rank 2 sends is slow, then: rank 2 alone
# fails with StragglerNode, ranks 0, 1, 3 warn SlowPeer naming it and exit
# 4 (a peer failed, this node did not: the gang still does not start). Source it, then: sg_slow_link_case PORT FLOOR "QDISC ARGS" SWEEP_ARGS...
. "$(dirname "${BASH_SOURCE[0]}")/lib_netns.sh"
pfb_test pfsg- 10.254.60
command -v tc >/dev/null || { echo "skip: tc (iproute2) is not installed"; exit 77; }

sg_check() { pfb_check "$1" busbw "$2"; }

sg_slow_link_case() {
    local port=$1 floor=$2 qdisc=$3 r rc
    shift 3
    pfb_setup 4 || fail "cannot build 4 namespaces"
    # shellcheck disable=SC2086 # the qdisc words are meant to split
    pfb_qdisc 2 $qdisc
    pfb_ring_start 4 "$port" --fabric-provider tcp --no-imds --log-level info \
        --timeout 90 --min-busbw-gbps "$floor" "$@"
    pfb_ring_wait 4
    [ "$RC_2" -eq 1 ] || fail "rank 2 ($qdisc) exited $RC_2, want 1: $(sg_check 2 message)"
    [ "$(sg_check 2 reason)" = StragglerNode ] ||
        fail "rank 2 reason $(sg_check 2 reason): $(sg_check 2 message)"
    grep -q "pairwise: rank 2's links are both slow" <<<"$(sg_check 2 message)" ||
        fail "rank 2 message: $(sg_check 2 message)"
    echo "ok   rank 2 behind '$qdisc': exit 1 StragglerNode: $(sg_check 2 message)"
    for r in 0 1 3; do
        eval "rc=\$RC_$r"
        [ "$rc" -eq 4 ] || fail "rank $r exited $rc, want 4 (a peer failed)"
        [ "$(sg_check $r reason)" = SlowPeer ] || fail "rank $r reason $(sg_check $r reason)"
        [ "$(pfb_json $r 'r["collective"]["slow_rank"]')" = 2 ] || fail "rank $r slow_rank not 2"
    done
    echo "ok   ranks 0, 1, 3: exit 4, SlowPeer naming rank 2; links" \
        "$(pfb_json 0 '" ".join("%d-%d:%.3f" % (l["a"], l["b"], l["gbps"]) for l in r["collective"]["straggler"]["links"])') GB/s"
}
