#!/bin/bash
# The NCCL engine end to end (efa-preflight local) on the host-memory double
# of CUDA and NCCL (tests/fakes/gpu, built by `make test-helpers`): one process
# driving 2 "GPUs". Checks control flow and verdicts only, never numbers:
# a clean run, wrong data, NET/Socket channels, an init that never ends, an
# async error mid-sweep, NCCL missing; and `local` without --ranks: one
# rank per GPU (1 GPU, 4 GPUs across processes), 2 host ranks without GPUs.
# Ports: free ones on loopback (--port 0).
. "$(dirname "$0")/lib_test.sh"
build=${BUILD:-build}
double=$root/$build/double/libgpu-double.so
check() { # name -> (status, reason) of that check
    json "$tmp/r.json" "[(c['status'], c['reason']) for c in r['checks'] if c['name'] == '$1']"
}

[ -r "$double" ] || fail "test double missing: $double (make test-helpers)"
export EFA_PREFLIGHT_CUDART=$double EFA_PREFLIGHT_NCCL=$double
export PF_DOUBLE_TRACE=$tmp/trace
unset NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS CUDA_VISIBLE_DEVICES
common=(local --ranks 1 --no-imds --expect-efa 0 --timeout 30 -b 8 -e 64
        -n 2 -w 1 --report "$tmp/r.json")

run() { # env assignments... -- extra flags...
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    rm -f "$tmp/r.json" "$tmp/trace"
    start=$(date +%s)
    env "${envs[@]}" timeout -k 5 60 "$bin" "${common[@]}" "$@" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    took=$(( $(date +%s) - start ))
}

# 1. clean: 2 ranks in one process, every element right, P2P, exit 0
run X=1 --
[ $rc -eq 0 ] || fail "clean run exited $rc"
got=$(json "$tmp/r.json" '(r["collective"]["engine"], r["collective"]["nranks"], r["collective"]["wrong_total"], r["collective"]["transport"], r["collective"]["nccl_network"], len(r["collective"]["rows"]))')
[ "$got" = "('nccl', 2, 0, 'P2P/CUMEM/read', 'Socket', 4)" ] ||
    fail "clean run (engine, nranks, wrong, transport, network, rows) = $got"
[ "$(check nccl_transport)" = "[('pass', None)]" ] || fail "nccl_transport: $(check nccl_transport)"
echo "ok   clean: nccl engine, 2 ranks, 0 wrong, P2P/CUMEM/read, exit 0"

# 2. GPU 1 (rank 1's) result wrong in its first 3 elements: the sweep
#    stops at the first size with wrong data, 8 B = 2 elements, so 2 wrong
#    out of place and 2 in place
run PF_DOUBLE_CORRUPT=1:3 --
[ $rc -eq 1 ] || fail "wrong data exited $rc, want 1"
got=$(json "$tmp/r.json" '(r["collective"]["wrong_total"], [x["out_of_place"]["wrong"] for x in r["collective"]["rows"]], [x["in_place"]["wrong"] for x in r["collective"]["rows"]])')
[ "$got" = "(4, [2], [2])" ] || fail "wrong counts = $got"
[ "$(check data)" = "[('fail', 'DataCorruption')]" ] || fail "data: $(check data)"
echo "ok   wrong data: DataCorruption, 4 wrong elements counted exactly at 8 B where the sweep stopped, exit 1"

# 3. channels via NET/Socket: SocketFallback
run PF_DOUBLE_TRANSPORT=NET/Socket/0 --
[ $rc -eq 1 ] || fail "socket run exited $rc, want 1"
[ "$(check nccl_transport)" = "[('fail', 'SocketFallback')]" ] ||
    fail "nccl_transport: $(check nccl_transport)"
[ "$(json "$tmp/r.json" 'r["collective"]["inter_node_socket"]')" = "True" ] ||
    fail "inter_node_socket not set"
echo "ok   NET/Socket channels: SocketFallback, exit 1"

# 4. init never completes: aborted at the deadline, the run stays bounded
run PF_DOUBLE_FAULT=init_hang -- --timeout 6
[ $rc -ne 0 ] || fail "init hang exited 0"
[ $took -le 15 ] || fail "init hang took ${took}s with --timeout 6"
got=$(json "$tmp/r.json" '(r["collective"]["error"]["reason"], "NCCL communicator init" in r["collective"]["error"]["message"])')
[ "$got" = "('PeerTimeout', True)" ] || fail "init hang error = $got"
[ "$(grep -c '^abort rank' "$tmp/trace")" = 2 ] || fail "abort not called on both ranks"
echo "ok   init that never completes: ncclCommAbort x2, PeerTimeout after ${took}s"

# 5. async error after 10 all_reduces per rank: aborted, error named
run PF_DOUBLE_FAULT=async_error PF_DOUBLE_FAULT_AT=10 --
[ $rc -ne 0 ] || fail "async error exited 0"
got=$(json "$tmp/r.json" '(r["collective"]["error"]["code"], "remote process exited" in r["collective"]["error"]["message"])')
[ "$got" = "('engine', True)" ] || fail "async error = $got"
[ "$(grep -c '^abort rank' "$tmp/trace")" = 4 ] || fail "abort not called on 2 ranks x 2 comms"
echo "ok   async error mid-sweep: ncclCommAbort, error reported"

# 6. NCCL missing with --engine nccl: a clear message, no crash
run EFA_PREFLIGHT_NCCL=$tmp/no-such-libnccl.so.2 -- --engine nccl
[ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "missing NCCL exited $rc"
got=$(json "$tmp/r.json" '"NCCL not found" in r["collective"]["error"]["message"]')
[ "$got" = "True" ] || fail "missing NCCL message: $(json "$tmp/r.json" 'r["collective"]["error"]')"
echo "ok   NCCL missing: 'NCCL not found' reported, exit $rc"

# 7. NCCL 2.17: refused by version
run PF_DOUBLE_NCCL_VERSION=21703 -- --engine nccl
[ $rc -ne 0 ] || fail "NCCL 2.17 exited 0"
got=$(json "$tmp/r.json" '"NCCL 2.17.3" in r["collective"]["error"]["message"] and ">= 2.18.0" in r["collective"]["error"]["message"]')
[ "$got" = "True" ] || fail "old NCCL message: $(json "$tmp/r.json" 'r["collective"]["error"]')"
echo "ok   NCCL 2.17.3: refused with the version named"

# `local` fits the host: without --ranks, one rank per GPU the NCCL engine
# drives, else 2 host-engine ranks.
fit() { # env assignments... -- extra flags...
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    rm -f "$tmp/trace"
    pf_agent 60 env "${envs[@]}" "$bin" local --no-imds --expect-efa 0 \
        --timeout 30 -b 8 -e 64 -n 2 -w 1 --port 0 --log-level info "$@"
}

# 8. a 1-GPU host (g5.8xlarge): one rank, busbw NotApplicable, pass
fit PF_DOUBLE_GPUS=1 --
[ $rc -eq 0 ] || fail "local on 1 GPU exited $rc"
got=$(json "$tmp/r.json" '(r["collective"]["engine"], r["collective"]["nranks"], r["collective"]["wrong_total"])')
[ "$got" = "('nccl', 1, 0)" ] || fail "local on 1 GPU (engine, nranks, wrong) = $got"
[ "$(check busbw)" = "[('skip', 'NotApplicable')]" ] || fail "busbw: $(check busbw)"
grep -q "local: 1 rank(s): one per GPU" "$tmp/err" || fail "no 'one per GPU' line"
echo "ok   1 GPU, no --ranks: one rank, busbw NotApplicable, exit 0"

# 9. 4 GPUs: 4 rank processes, one GPU each, their all_reduces meeting
#    across processes
fit PF_DOUBLE_GPUS=4 --
[ $rc -eq 0 ] || fail "local on 4 GPUs exited $rc"
got=$(json "$tmp/r.json" '(r["collective"]["engine"], r["collective"]["nranks"], r["collective"]["wrong_total"])')
[ "$got" = "('nccl', 4, 0)" ] || fail "local on 4 GPUs (engine, nranks, wrong) = $got"
for r in 0 1 2 3; do
    grep -q "\[rank $r\] info: NCCL engine: 4 ranks over 4 processes, ranks $r-$r here" "$tmp/err" ||
        fail "rank $r does not drive GPU rank $r alone"
done
grep -q '^meet /pf-double-' "$tmp/trace" || fail "the ranks did not meet across processes"
echo "ok   4 GPUs, no --ranks: 4 processes of one GPU each, 0 wrong, exit 0"

# 10. no GPU: 2 host-engine ranks, as `make run` starts them
fit PF_DOUBLE_GPUS=0 -- --fabric-provider tcp
[ $rc -eq 0 ] || fail "local without GPUs exited $rc"
got=$(json "$tmp/r.json" '(r["collective"]["engine"], r["collective"]["nranks"], r["collective"]["wrong_total"])')
[ "$got" = "('host', 2, 0)" ] || fail "local without GPUs (engine, nranks, wrong) = $got"
echo "ok   no GPU, no --ranks: 2 host-engine ranks, exit 0"
