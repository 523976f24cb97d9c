# Ranks with two NICs each, for the host engine's rails (one endpoint per
# NIC): namespaces pfnic-ns<r>, each with two veth pairs, pfnic-p<r>a on
# bridge pfnic-bra (10.254.70.0/24) and pfnic-p<r>b on bridge pfnic-brb
# (10.254.71.0/24). The rendezvous runs on the first. Source it after
# lib_netns.sh's helpers are wanted: nic_setup N, nic_addrs R (the
# --fabric-addrs of rank R), then pfb_start / pfb_wait / pfb_json as in
# lib_netns.sh. Ports 36170-36179.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib_netns.sh"
PFB_PREFIX=pfnic-
PFB_BRIDGE=${PFB_PREFIX}bra
PFB_NET=10.254.70
NIC_NET_B=10.254.71

nic_addr_b() { echo "$NIC_NET_B.$((10 + $1))"; }
nic_addrs() { echo "$(pfb_addr "$1"),$(nic_addr_b "$1")"; }

nic_setup() {
    local n=$1 i ns side br net
    PFB_N=$n
    pfb_lock
    pfb_cleanup
    for side in a b; do
        ip link add "${PFB_PREFIX}br$side" type bridge || return 1
        ip link set "${PFB_PREFIX}br$side" up || return 1
    done
    for ((i = 0; i < n; i++)); do
        ns=$(pfb_ns $i)
        ip netns add "$ns" || return 1
        ip -n "$ns" link set lo up || return 1
        for side in a b; do
            br=${PFB_PREFIX}br$side
            if [ $side = a ]; then net=$(pfb_addr $i); else net=$(nic_addr_b $i); fi
            ip link add "${PFB_PREFIX}v$i$side" type veth peer name "${PFB_PREFIX}p$i$side" || return 1
            ip link set "${PFB_PREFIX}p$i$side" netns "$ns" || return 1
            ip -n "$ns" addr add "$net/24" dev "${PFB_PREFIX}p$i$side" || return 1
            ip -n "$ns" link set "${PFB_PREFIX}p$i$side" up || return 1
            ip link set "${PFB_PREFIX}v$i$side" master "$br" || return 1
            ip link set "${PFB_PREFIX}v$i$side" up || return 1
        done
    done
}
