#!/bin/bash
# Inside one node: every rank runs here, so the node is the one that fails,
# and its message names the rank at fault.
# 1-3: the NCCL engine on the GPU double, one process driving 8 "GPUs"
#   (bus ids 0000:18:00.0 + index): a GPU whose memory corrupts what it
#   receives (PF_DOUBLE_CORRUPT_GPU=5), a GPU sending wrong data
#   (--debug-corrupt-rank 2), a slow GPU below a floor (--debug-slow-rank 6)
#   -> DataCorruption / NodeBandwidthBelowThreshold naming the GPU index
#   and bus id, the report's collective.inside naming it too; with no fault
#   the run passes and nobody is named.
# 4-5: `local --ranks 4` on the host engine over tcp: rank 2 corrupting
#   -> DataCorruption naming rank 2 and its NIC (the loopback address every
#   local rank binds); rank 2 slow below a floor -> StragglerNode naming it;
#   both in the table on stdout and in the report's collective.inside.
# 6-7: the same with `--ranks 3`, where no rank has two good links to
#   confirm against: the good link 0-1 clears both its ends, so rank 2, in
#   both bad pairs, is the one named.
# 8: `--ranks 2`: one link, nobody inside can be singled out, and the
#   message says so.
# 9: `local --ranks 3` on the NCCL engine (the double, one GPU a process),
#   GPU 2 corrupting -> named by GPU index and bus id.
# Ports: free ones on loopback (--port 0).
. "$(dirname "$0")/lib_test.sh"
build=${BUILD:-build}
double=$root/$build/double/libgpu-double.so
report() { json "$tmp/r.json" "$1"; }
check() { pf_check_said "$1"; }   # name -> "status reason message"

[ -r "$double" ] || fail "test double missing: $double (make test-helpers)"
unset NCCL_DEBUG NCCL_DEBUG_FILE NCCL_DEBUG_SUBSYS CUDA_VISIBLE_DEVICES

gpus() { # env assignments... -- extra flags...
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    pf_agent 60 env EFA_PREFLIGHT_CUDART="$double" EFA_PREFLIGHT_NCCL="$double" \
        PF_DOUBLE_GPUS=8 PF_DOUBLE_TRACE="$tmp/trace" "${envs[@]}" \
        "$bin" local --ranks 1 --no-imds --expect-efa 0 \
        --timeout 30 -b 8 -e 64K -n 2 -w 1 "$@"
}

# 0. no fault: pass, every rank described, nobody named
gpus X=1 --
[ $rc -eq 0 ] || fail "clean 8-GPU run exited $rc"
got=$(report '(r["collective"]["nranks"], r["collective"]["inside"]["ranks"][3], r["collective"]["inside"]["culprits"], r["collective"]["inside"]["method"])')
[ "$got" = "(8, {'rank': 3, 'process': 0, 'gpu': 3, 'bus_id': '0000:1b:00.0', 'nic': None}, [], None)" ] ||
    fail "clean run: (nranks, inside.ranks[3], culprits, method) = $got"
echo "ok   clean: 8 GPUs in one process described by index and bus id, nobody named, exit 0"

# 1. GPU 5 corrupts what lands in its memory
gpus PF_DOUBLE_CORRUPT_GPU=5:3 --
[ $rc -eq 1 ] || fail "corrupting GPU 5: exit $rc, want 1"
got=$(check data)
[[ "$got" == "fail DataCorruption this node corrupts data at rank 5 (GPU 5, bus 0000:1d:00.0): "* ]] ||
    fail "corrupting GPU 5: data check is: $got"
got=$(report '(r["collective"]["inside"]["method"], r["collective"]["inside"]["kind"], r["collective"]["inside"]["culprits"], [(l["a"], l["b"]) for l in r["collective"]["inside"]["links"] if l["wrong"] > 0])')
[ "$got" = "('gpu-pairs', 'data', [5], [(4, 5), (5, 6)])" ] ||
    fail "corrupting GPU 5: inside (method, kind, culprits, wrong links) = $got"
echo "ok   GPU 5 corrupting its results: DataCorruption names rank 5 (GPU 5, bus 0000:1d:00.0), links 4-5 and 5-6 wrong"

# 2. GPU 2 sends wrong data (every result of the ring is wrong)
gpus X=1 -- --debug-corrupt-rank 2
[ $rc -eq 1 ] || fail "GPU 2 sending wrong data: exit $rc, want 1"
got=$(check data)
[[ "$got" == "fail DataCorruption this node corrupts data at rank 2 (GPU 2, bus 0000:1a:00.0): "* ]] ||
    fail "GPU 2 sending wrong data: data check is: $got"
echo "ok   GPU 2 sending wrong data: DataCorruption names rank 2 (GPU 2, bus 0000:1a:00.0)"

# 3. GPU 6 slow, the ring below a floor
gpus X=1 -- --min-busbw-gbps 100000 --debug-slow-rank 6 --debug-slow-ms 30
[ $rc -eq 1 ] || fail "slow GPU 6: exit $rc, want 1"
got=$(check busbw)
[[ "$got" == "fail NodeBandwidthBelowThreshold this node is slow at rank 6 (GPU 6, bus 0000:1e:00.0): "* ]] ||
    fail "slow GPU 6: busbw check is: $got"
echo "ok   slow GPU 6 below the floor: NodeBandwidthBelowThreshold names rank 6 (GPU 6, bus 0000:1e:00.0)"

inside() { # what the report's collective.inside says: (method, kind, culprits)
    report '(r["collective"]["inside"]["method"], r["collective"]["inside"]["kind"], r["collective"]["inside"]["culprits"])'
}
table() { # the table's line of a check on stdout
    grep -E "^[A-Z]+ +$1 " "$tmp/out"
}

ranks=4
host() { # extra flags...
    pf_agent 90 "$bin" local --ranks "$ranks" --fabric-provider tcp --no-imds \
        --expect-efa 0 --timeout 60 -b 64K -e 1M -n 5 -w 2 "$@"
}

# 4. host engine, rank 2 corrupting
host --debug-corrupt-rank 2
[ $rc -eq 1 ] || fail "host rank 2 corrupting: exit $rc, want 1"
got=$(check data)
[[ "$got" == "fail DataCorruption this node corrupts data at rank 2 (NIC 127.0.0.1): "* ]] ||
    fail "host rank 2 corrupting: data check is: $got"
got=$(report '[(x["rank"], x["process"], x["gpu"], x["nic"]) for x in r["collective"]["inside"]["ranks"]][2]')
[ "$got" = "(2, 2, None, '127.0.0.1')" ] || fail "host rank 2: inside.ranks[2] = $got"
[ "$(inside)" = "('pairwise', 'data', [2])" ] || fail "host rank 2 corrupting: inside = $(inside)"
[[ "$(table data)" == *"corrupts data at rank 2 (NIC 127.0.0.1)"* ]] ||
    fail "host rank 2 corrupting: the table says: $(table data)"
echo "ok   local --ranks 4, rank 2 corrupting: DataCorruption names rank 2 (NIC 127.0.0.1), in the table and inside.culprits"

# 5. host engine, rank 2 slow below a floor
# 100 ms per step and exchange: its links are 10x slower than the others even
# on a loaded machine (20 ms was not always, with every rank on 2 busy cores).
host --debug-slow-rank 2 --debug-slow-ms 100 --min-busbw-gbps 1000 -b 1M -n 2 -w 1
[ $rc -eq 1 ] || fail "host rank 2 slow: exit $rc, want 1"
got=$(check busbw)
[[ "$got" == "fail StragglerNode this node ("*"NIC 127.0.0.1) runs the straggler, rank 2 "* ]] ||
    fail "host rank 2 slow: busbw check is: $got"
[ "$(inside)" = "('pairwise', 'slow', [2])" ] || fail "host rank 2 slow: inside = $(inside)"
echo "ok   local --ranks 4, rank 2 slow: StragglerNode names rank 2 and its NIC, inside.culprits [2]"

# 6. three ranks, rank 2 corrupting
ranks=3
host --debug-corrupt-rank 2
[ $rc -eq 1 ] || fail "3 ranks, rank 2 corrupting: exit $rc, want 1"
got=$(check data)
[[ "$got" == "fail DataCorruption this node corrupts data at rank 2 (NIC 127.0.0.1): pairwise inside this node: rank 2's links both carry wrong data (1-2 "*", 2-0 "*" wrong), while every other link was good"* ]] ||
    fail "3 ranks, rank 2 corrupting: data check is: $got"
[ "$(inside)" = "('pairwise', 'data', [2])" ] || fail "3 ranks, rank 2 corrupting: inside = $(inside)"
[[ "$(table data)" == *"corrupts data at rank 2 (NIC 127.0.0.1)"* ]] ||
    fail "3 ranks, rank 2 corrupting: the table says: $(table data)"
echo "ok   local --ranks 3, rank 2 corrupting: in both bad pairs, absent from the good one: named in the message, the table and inside.culprits"

# 7. three ranks, rank 2 slow below a floor
host --debug-slow-rank 2 --debug-slow-ms 100 --min-busbw-gbps 1000 -b 1M -n 2 -w 1
[ $rc -eq 1 ] || fail "3 ranks, rank 2 slow: exit $rc, want 1"
got=$(check busbw)
[[ "$got" == "fail StragglerNode this node ("*"NIC 127.0.0.1) runs the straggler, rank 2 "*"rank 2's links are both slow"* ]] ||
    fail "3 ranks, rank 2 slow: busbw check is: $got"
[ "$(inside)" = "('pairwise', 'slow', [2])" ] || fail "3 ranks, rank 2 slow: inside = $(inside)"
echo "ok   local --ranks 3, rank 2 slow: StragglerNode names rank 2, inside.culprits [2]"

# 8. two ranks: one link, nobody inside can be singled out
ranks=2
host --debug-corrupt-rank 1 -n 2 -w 1
[ $rc -eq 1 ] || fail "2 ranks, rank 1 corrupting: exit $rc, want 1"
got=$(check data)
[[ "$got" == "fail DataCorruption this node (every rank of the run) corrupts data: "*"2 ranks share one link: a pairwise test cannot tell which end is at fault"* ]] ||
    fail "2 ranks, rank 1 corrupting: data check is: $got"
[ "$(inside)" = "(None, None, [])" ] || fail "2 ranks: inside = $(inside)"
echo "ok   local --ranks 2, rank 1 corrupting: the node fails, and the message says one link cannot tell which end"

# 9. the NCCL engine on the GPU double, 3 processes of one GPU each on this
#    node, GPU 2 corrupting what it receives (PF_DOUBLE_CORRUPT=2:4 follows
#    the GPU into the pairwise test's 2-rank communicators)
pf_agent 90 env EFA_PREFLIGHT_CUDART="$double" EFA_PREFLIGHT_NCCL="$double" \
    PF_DOUBLE_GPUS=3 PF_DOUBLE_CORRUPT=2:4 \
    "$bin" local --ranks 3 --no-imds --expect-efa 0 \
    --timeout 60 -b 8 -e 64K -n 2 -w 1
[ $rc -eq 1 ] || fail "3 NCCL processes, GPU 2 corrupting: exit $rc, want 1"
got=$(check data)
[[ "$got" == "fail DataCorruption this node corrupts data at rank 2 (GPU 2, bus 0000:1a:00.0): pairwise inside this node: "* ]] ||
    fail "3 NCCL processes, GPU 2 corrupting: data check is: $got"
[ "$(inside)" = "('pairwise', 'data', [2])" ] || fail "3 NCCL processes: inside = $(inside)"
echo "ok   local --ranks 3 on the NCCL engine, GPU 2 corrupting: named by index and bus id, inside.culprits [2]"
