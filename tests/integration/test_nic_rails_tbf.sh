#!/bin/bash
# The host engine over two NICs per rank (lib_nic_netns.sh: two veth pairs
# per namespace, one endpoint per address with --fabric-addrs, tcp
# provider), ports 36170-36179:
#   - 4 ranks, nothing slowed: every rank passes, both rails alike;
#   - 4 ranks, a token bucket (tbf, 20 Mbit/s: far under half of a healthy
#     rail, even under ASan on a busy machine) on rank 2's second NIC:
#     rank 2 fails EFANICSlow naming that NIC (10.254.71.12), its first NIC
#     unnamed; ranks 0, 1, 3 warn SlowPeer naming rank 2's rail 1 (exit 4);
#   - 2 ranks, the same on rank 1: both ends share each link, so both fail
#     EFANICSlow on rail 1 without claiming whose NIC it is.
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib_nic_netns.sh"
pfb_need_root
command -v tc >/dev/null || { echo "skip: tc (iproute2) is not installed"; exit 77; }
check() { pfb_json "$1" "[c['$2'] for c in r['checks'] if c['name'] == 'nic_speed'][0]"; }
TBF="tbf rate 20mbit burst 32kb latency 400ms"

start_all() {   # start_all N PORT
    local n=$1 port=$2 r peers
    peers=$(pfb_peers "$n" "$port")
    for ((r = 0; r < n; r++)); do
        pfb_start $r run --bootstrap static --peers "$peers" --rank $r \
            --fabric-provider tcp --fabric-addrs "$(nic_addrs $r)" --no-imds \
            --log-level info --timeout 90 -b 1M -e 4M -n 2 -w 1
    done
    pfb_ring_wait "$n"
}

nic_setup 4 || fail "cannot build 4 namespaces with 2 NICs each"
start_all 4 36170
for r in 0 1 2 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 0 ] || fail "unshaped: rank $r exited $rc: $(check $r message)"
    [ "$(check $r status)" = pass ] || fail "unshaped: rank $r nic_speed $(check $r status)"
    [ "$(pfb_json $r '[x["nic"] for x in r["collective"]["nics"]["rails"]]')" = \
      "['$(pfb_addr $r)', '$(nic_addr_b $r)']" ] || fail "rank $r rails: $(pfb_json $r 'r["collective"]["nics"]["rails"]')"
    [ "$(pfb_json $r 'r["collective"]["wrong_total"]')" = 0 ] || fail "rank $r: wrong elements"
done
echo "ok   4 ranks x 2 NICs, nothing slowed: pass; rank 0: $(check 0 message)"

if ! out=$(ip netns exec "$(pfb_ns 2)" tc qdisc add dev "${PFB_PREFIX}p2b" root $TBF 2>&1); then
    echo "skip: this kernel cannot slow a link with tbf: $out"
    exit 77
fi
start_all 4 36171
[ "$RC_2" -eq 1 ] || fail "rank 2 (tbf on its second NIC) exited $RC_2, want 1: $(check 2 message)"
[ "$(check 2 reason)" = EFANICSlow ] || fail "rank 2 reason $(check 2 reason): $(check 2 message)"
grep -q "^NIC 10.254.71.12 (rail 1) of this node (rank 2) is slow" <<<"$(check 2 message)" ||
    fail "rank 2 message: $(check 2 message)"
grep -q "10.254.70.12 (rail 0)" <<<"$(check 2 message)" && fail "rank 2 names its healthy NIC"
[ "$(pfb_json 2 'r["verdict"]["reason"]')" = EFANICSlow ] ||
    fail "rank 2 headline $(pfb_json 2 'r["verdict"]["reason"]')"
echo "ok   tbf on rank 2's second NIC: exit 1 EFANICSlow: $(check 2 message)"
for r in 0 1 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "rank $r exited $rc, want 4 (a peer's NIC is slow): $(check $r message)"
    [ "$(check $r reason)" = SlowPeer ] || fail "rank $r reason $(check $r reason)"
    grep -q "^rank 2's NIC on rail 1 is slow, not this node's" <<<"$(check $r message)" ||
        fail "rank $r message: $(check $r message)"
    [ "$(pfb_json $r 'r["collective"]["nics"]["rails"][1]["suspect_rank"]')" = 2 ] ||
        fail "rank $r rails[1].suspect_rank is not 2"
done
echo "ok   ranks 0, 1, 3: exit 4, SlowPeer naming rank 2's rail 1"

nic_setup 2 || fail "cannot build 2 namespaces with 2 NICs each"
ip netns exec "$(pfb_ns 1)" tc qdisc add dev "${PFB_PREFIX}p1b" root $TBF ||
    fail "tbf on rank 1"
start_all 2 36172
for r in 0 1; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 1 ] || fail "2 ranks: rank $r exited $rc, want 1: $(check $r message)"
    [ "$(check $r reason)" = EFANICSlow ] || fail "2 ranks: rank $r reason $(check $r reason)"
    grep -q "^rail 1 (NIC $(nic_addr_b $r) here) is slow in the ring" <<<"$(check $r message)" ||
        fail "2 ranks: rank $r message: $(check $r message)"
    grep -q "not localised per rail: 2 ranks share one link" <<<"$(check $r message)" ||
        fail "2 ranks: rank $r does not say why: $(check $r message)"
done
echo "ok   2 ranks: both fail EFANICSlow on rail 1, whose NIC unknown: $(check 0 message)"
