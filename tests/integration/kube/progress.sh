#!/bin/bash
# k8s discovery says who it waits for while the pod watch is quiet: a
# 2-pod JobSet whose 2nd pod was never created; the agent that exists, at
# the default log level with --progress-interval 2 and --timeout 9, prints
# progress lines naming the missing pod while no watch event arrives, then
# exits 3 (PeerTimeout) as before. Then rank 1 of a JobSet whose rank 0
# was never created: it watches rank 0's pod alone, and says so.
# Fake API server (tests/fakes/apiserver).
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP

pfk8s_jobset_objects "$T/objects.json" 0:127.0.0.1 1:x
pfk8s_server 127.0.0.1 "$T/objects.json"

waiter() {   # waiter TAG POD TIMEOUT: the agent of POD waits in vain (exit 3)
    local rc
    "$PF_BIN" run --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" \
        --pod-name "$2" --namespace ml --port "$PFK8S_RDV_PORT" \
        --fabric-provider tcp --engine host --timeout "$3" --no-imds \
        --progress-interval 2 --no-publish >"$T/out/$1.stdout" 2>"$T/out/$1.stderr"
    rc=$?
    [ $rc -eq 3 ] || { cat "$T/out/$1.stderr"; pfk8s_die "$1: agent exit $rc, want 3"; }
}

waiter a train-workers-0-0-p0 9
n=$(grep -c 'progress: waiting for pods: 1 of 2 peer pods have a podIP, missing train-workers-1-0-\* (rank 1, not created); [0-9]* s left' "$T/out/a.stderr")
[ "$n" -ge 3 ] || { cat "$T/out/a.stderr"; pfk8s_die "$n progress lines naming the missing pod in 9 s, want >= 3"; }
grep -q $'\r' "$T/out/a.stderr" && pfk8s_die "a carriage return on a stderr that is no terminal"
echo "ok   $n progress lines naming train-workers-1-0-* while the watch was quiet, e.g.:"
grep -m1 'progress:' "$T/out/a.stderr" | sed 's/^/     /'

# Rank 1 (a follower) while rank 0 was never created.
kill "$PFK8S_SERVER_PID" 2>/dev/null; wait "$PFK8S_SERVER_PID" 2>/dev/null
pfk8s_jobset_objects "$T/objects2.json" 0:x 1:127.0.0.1
pfk8s_server 127.0.0.1 "$T/objects2.json"
waiter b train-workers-1-0-p1 7   # the follower
n=$(grep -c 'progress: waiting for rank 0: its pod has no podIP yet, missing train-workers-0-0-' "$T/out/b.stderr")
[ "$n" -ge 2 ] || { cat "$T/out/b.stderr"; pfk8s_die "$n follower progress lines naming rank 0's pod, want >= 2"; }
grep -q 'peer pods have a podIP' "$T/out/b.stderr" && pfk8s_die "a follower counted the group's pods"
echo "ok   rank 1 (follower): $n lines naming rank 0's missing pod, e.g.:"
grep -m1 'progress:' "$T/out/b.stderr" | sed 's/^/     /'
