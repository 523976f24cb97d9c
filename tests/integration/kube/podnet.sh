# "Pod" networks for the Kubernetes tests (sourced, bash): a bridge
# PREFIX-br with HOST_IP/24 and N network namespaces PREFIX-1..N, each with
# eth0 at .(10+i) of that /24 on the bridge (veth PREFIX-vI), as pods on one
# node's pod network. Used by tests/fakes/apiserver/lib.sh (pfk8s,
# 10.254.40.0/24) and tests/kube_real/lib.sh (pfkr, 10.254.42.0/24).

# podnet_can PREFIX: network namespaces can be made here (root).
podnet_can() {
    ip netns add "$1-probe" 2>/dev/null || return 1
    ip netns del "$1-probe"
}

# podnet_up PREFIX HOST_IP N: what a killed run left is replaced.
podnet_up() {
    local pre=$1 host=$2 n=$3 i
    ip link del "$pre-br" 2>/dev/null
    ip link add "$pre-br" type bridge || return 1
    ip addr add "$host/24" dev "$pre-br"
    ip link set "$pre-br" up
    for i in $(seq 1 "$n"); do
        ip netns del "$pre-$i" 2>/dev/null
        ip netns add "$pre-$i"
        ip link add "$pre-v$i" type veth peer name eth0 netns "$pre-$i"
        ip link set "$pre-v$i" master "$pre-br" up
        ip -n "$pre-$i" addr add "${host%.*}.$((10 + i))/24" dev eth0
        ip -n "$pre-$i" link set eth0 up
        ip -n "$pre-$i" link set lo up
    done
}

# podnet_down PREFIX N: the namespaces' processes, the namespaces, the bridge.
podnet_down() {
    local i
    for i in $(seq 1 "$2"); do
        ip netns pids "$1-$i" 2>/dev/null | xargs -r kill 2>/dev/null
        ip netns del "$1-$i" 2>/dev/null
        ip link del "$1-v$i" 2>/dev/null
    done
    ip link del "$1-br" 2>/dev/null
    return 0
}
