#!/bin/bash
# GPU health on a real GPU machine: what NVML gives the probe, field by
# field, and what the probe costs. Runs, with the driver's own NVML:
#   n   efa-preflight node --fabric-provider tcp (no EFA needed), REPEAT
#       times, and REPEAT times with NVML hidden (EFA_PREFLIGHT_NVML
#       pointing nowhere): the probe's added wall time and peak RSS are the
#       difference of the medians
#   p   node --instance-type p5e.48xlarge --expect-gpus N: the same fields
#       held against the catalog's H200 expectations (18 NVLink links,
#       PCIe Gen5 x16, driver >= 550); on a VM that is not a p5e this says
#       what the catalog would judge, not that the machine is one
#   l   local --ranks 1 (one process driving every GPU, -e 1G): the NVLink
#       and PCIe counters read before and after the all_reduce
#   d   the default `local` (one rank per GPU): the exit code
# then writes a Markdown report (stdout and OUT/gpu_health.md; copy it to
# bench/results/gpu_health.md): every field per GPU (value or "not
# supported"), the NVLink counters around the all_reduce, each GPU check's
# verdict, the probe's time and RSS.
#
# usage: bench/gpu_health.sh [out-dir]
#   on the GPU machine, with the agent and the libraries it needs there in
#   carry/ (see bench/results/gpu_h200x2.md):
#   export LD_LIBRARY_PATH=$PWD/carry:$LD_LIBRARY_PATH
#   PF_BIN=$PWD/carry/efa-preflight bash bench/gpu_health.sh $OUT
# env:   PF_BIN (carry/efa-preflight), REPEAT (5), MAX_BYTES (1G);
#        EFA_PREFLIGHT_NCCL / EFA_PREFLIGHT_CUDART default to the machine's
#        torch wheels, as bench/gpu_one.sh does.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bin=${PF_BIN:-$root/carry/efa-preflight}
out=${1:-${OUT:-/tmp/pf-gpu-health}}
repeat=${REPEAT:-5}
max=${MAX_BYTES:-1G}
mkdir -p "$out"
[ -x "$bin" ] || { echo "no agent at $bin (set PF_BIN)"; exit 2; }
# The agent is built on the project machine (Debian 12): carry what this
# host lacks (libyaml-0.so.2, libcjson.so.1, libmicrohttpd.so.12) beside it.
if ldd "$bin" | grep -q 'not found'; then
    ldd "$bin" | grep 'not found'
    echo "copy these next to $bin and add its folder to LD_LIBRARY_PATH"; exit 2
fi
export NCCL_NVLS_ENABLE=0
sp=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null)
[ -z "${EFA_PREFLIGHT_NCCL:-}" ] && [ -f "$sp/nccl/lib/libnccl.so.2" ] &&
    export EFA_PREFLIGHT_NCCL=$sp/nccl/lib/libnccl.so.2
if [ -z "${EFA_PREFLIGHT_CUDART:-}" ]; then
    for f in "$sp"/cu13/lib/libcudart.so.13 "$sp"/cuda_runtime/lib/libcudart.so.*; do
        [ -f "$f" ] && { export EFA_PREFLIGHT_CUDART=$f; break; }
    done
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
{
    nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//'
    nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 |
        sed 's/^/driver /'
    echo "agent $("$bin" version 2>&1 | head -1); NCCL ${EFA_PREFLIGHT_NCCL:-system}; cudart ${EFA_PREFLIGHT_CUDART:-system}"
    nvidia-smi topo -m 2>/dev/null | head -4
} >"$out/machine.txt"
cat "$out/machine.txt"

# timed NAME ARGS...: run the agent under /usr/bin/time; OUT/NAME.{json,out,err,time}
timed() {
    local name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$out/$name.time" "$bin" "$@" --no-imds \
        --report "$out/$name.json" >"$out/$name.out" 2>"$out/$name.err"
    echo "$? $(tail -n 1 "$out/$name.time")" >"$out/$name.rc"
}

for i in $(seq 1 "$repeat"); do
    timed "n$i" node --fabric-provider tcp
    EFA_PREFLIGHT_NVML=/nonexistent/libnvidia-ml.so.1 timed "x$i" node --fabric-provider tcp
done
timed p node --fabric-provider tcp --instance-type p5e.48xlarge --expect-gpus "$ngpu"
timed l local --ranks 1 --fabric-provider tcp -b 8 -e "$max"
timed d local --fabric-provider tcp

python3 - "$out" "$repeat" "$max" <<'PY' | tee "$out/gpu_health.md"
import json, os, statistics, sys
out, repeat, maxb = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def load(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))
    except Exception as e:
        return {"_error": str(e)}

def rc(name):
    try:
        code, wall, rss = open(os.path.join(out, name + ".rc")).read().split()
        return int(code), float(wall), int(rss)
    except Exception:
        return None, None, None

print("# GPU health: every NVML field on this machine\n")
print("```\n" + open(os.path.join(out, "machine.txt")).read().rstrip() + "\n```\n")

n = load("n1")
gh = (n.get("node") or {}).get("gpu_health") or {}
print("NVML: loaded %s (%s), driver %s, CUDA driver %s, %s GPU(s); XID events "
      "armed: %s %s; kernel log: %s; optional entry points missing: %s\n" % (
      gh.get("nvml_loaded"), gh.get("nvml_path") or gh.get("nvml_error"),
      gh.get("driver_version"), gh.get("cuda_driver_version"), gh.get("count"),
      gh.get("events_armed"), gh.get("events_note") or "",
      gh.get("kernel_log_note"), gh.get("nvml_missing") or "none"))

def val(d, key, field):
    if d["fields"].get(field) != "read":
        return d["fields"].get(field, "?")
    v = d.get(key)
    return "-" if v is None else str(v)

devs = gh.get("devices") or []
if devs:
    print("## Fields per GPU (`node`)\n")
    print("| field | " + " | ".join("GPU %d" % d["index"] for d in devs) + " |")
    print("|---|" + "---|" * len(devs))
    rows = [
        ("bus id", lambda d: d.get("bus_id") or "-"),
        ("serial", lambda d: d.get("serial") or d["fields"]["serial"]),
        ("uuid", lambda d: d.get("uuid") or d["fields"]["uuid"]),
        ("name", lambda d: d.get("name") or "-"),
        ("lost", lambda d: str(d.get("lost"))),
        ("ECC enabled", lambda d: val(d, "ecc_enabled", "ecc_mode")),
        ("ECC volatile uncorrected", lambda d: val(d, "ecc_volatile_uncorrected", "ecc_volatile")),
        ("ECC aggregate uncorrected", lambda d: val(d, "ecc_aggregate_uncorrected", "ecc_aggregate")),
        ("retired pages SBE/DBE", lambda d: "%s/%s" % (val(d, "retired_pages_sbe", "retired_pages"), val(d, "retired_pages_dbe", "retired_pages"))),
        ("retired pages pending", lambda d: val(d, "retired_pending", "retired_pending")),
        ("remapped rows corr/unc", lambda d: "%s/%s" % (val(d, "remapped_rows_correctable", "remapped_rows"), val(d, "remapped_rows_uncorrectable", "remapped_rows"))),
        ("remap pending/failure", lambda d: "%s/%s" % (val(d, "remap_pending", "remapped_rows"), val(d, "remap_failure", "remapped_rows"))),
        ("NVLink links active/answered", lambda d: "%s/%s" % (d["nvlink"]["active"], d["nvlink"]["links"]) if d["fields"]["nvlink_state"] == "read" else d["fields"]["nvlink_state"]),
        ("NVLink error counters", lambda d: d["fields"]["nvlink_errors"]),
        ("PCIe gen/width (idle)", lambda d: "Gen%s x%s" % (d["pcie"]["gen"], d["pcie"]["width"]) if d["fields"]["pcie_link"] == "read" else d["fields"]["pcie_link"]),
        ("PCIe max gen/width", lambda d: "Gen%s x%s" % (d["pcie"]["max_gen"], d["pcie"]["max_width"]) if d["fields"]["pcie_max"] == "read" else d["fields"]["pcie_max"]),
        ("PCIe replays", lambda d: str(d["pcie"]["replay_after"]) if d["fields"]["pcie_replay"] == "read" else d["fields"]["pcie_replay"]),
        ("clock event reasons", lambda d: hex(int(d["clock_events_before"])) if d["fields"]["clock_events"] == "read" else d["fields"]["clock_events"]),
        ("persistence mode", lambda d: val(d, "persistence", "persistence")),
        ("MIG mode", lambda d: val(d, "mig", "mig")),
        ("XID events", lambda d: d["fields"]["xid_events"]),
        ("XIDs since boot", lambda d: ", ".join("%d x%d" % (x["xid"], x["count"]) for x in d["xid_since_boot"]) or "none"),
        ("first NVML error", lambda d: d.get("error") or "-"),
    ]
    for label, f in rows:
        try:
            cells = [f(d) for d in devs]
        except Exception as e:
            cells = ["(%s)" % e] * len(devs)
        print("| %s | %s |" % (label, " | ".join(str(c) for c in cells)))
    print()

l = load("l")
lg = (l.get("node") or {}).get("gpu_health") or {}
print("## Around the all_reduce (`local --ranks 1 -e %s`)\n" % maxb)
code, wall, rss = rc("l")
coll = l.get("collective") or {}
print("exit %s, %s ranks, peak busbw %s GB/s, counters window %s (%.2f s)\n" % (
      code, coll.get("nranks"), coll.get("peak_busbw_gbps"), lg.get("window"),
      lg.get("window_s") or 0))
ldevs = lg.get("devices") or []
if ldevs:
    print("| GPU | NVLink replay | recovery | CRC flit | CRC data | PCIe replays | PCIe after the run | clock reasons before -> after | XIDs during the run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in ldevs:
        nv = d["nvlink"]
        if "errors_before" in nv:
            b, a = nv["errors_before"], nv["errors_after"]
            cnt = ["%d -> %d" % (b[k], a[k]) for k in ("replay", "recovery", "crc_flit", "crc_data")]
        else:
            cnt = [d["fields"]["nvlink_errors"]] * 4
        p = d["pcie"]
        rep = "%s -> %s" % (p["replay_before"], p["replay_after"]) if d["fields"]["pcie_replay"] == "read" else d["fields"]["pcie_replay"]
        run = "Gen%s x%s" % (p["gen_after_run"], p["width_after_run"]) if p.get("gen_after_run") else "not read"
        clk = "%s -> %s" % (hex(int(d["clock_events_before"])), hex(int(d["clock_events_after"]))) if d["fields"]["clock_events"] == "read" else d["fields"]["clock_events"]
        xr = ", ".join("%d x%d" % (x["xid"], x["count"]) for x in d["xid_run"]) or "none"
        print("| %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (d["index"], *cnt, rep, run, clk, xr))
    print()

def checks(r):
    return [c for c in r.get("checks", []) if c.get("condition") == "GPUHealthy"]

for name, title in (("n1", "`node` (type as detected)"),
                    ("p", "`node --instance-type p5e.48xlarge` (the catalog's H200 expectations)"),
                    ("l", "`local --ranks 1`")):
    r = load(name)
    code, wall, rss = rc(name)
    print("## GPU checks: %s\n" % title)
    print("exit %s, verdict %s (%s), GPUHealthy %s\n" % (
          code, (r.get("verdict") or {}).get("reason"), (r.get("verdict") or {}).get("class"),
          ((r.get("verdict") or {}).get("conditions") or {}).get("GPUHealthy")))
    print("| check | status | reason | message |")
    print("|---|---|---|---|")
    for c in checks(r):
        print("| %s | %s | %s | %s |" % (c["name"], c["status"], c.get("reason") or "",
              c["message"].replace("|", "\\|")))
    print()

def med(prefix):
    walls, rsss, reads = [], [], []
    for i in range(1, repeat + 1):
        code, wall, rss = rc("%s%d" % (prefix, i))
        if wall is None:
            continue
        walls.append(wall); rsss.append(rss)
        r = load("%s%d" % (prefix, i))
        ms = ((r.get("node") or {}).get("gpu_health") or {}).get("read_ms")
        if ms is not None:
            reads.append(ms)
    return (statistics.median(walls) if walls else float("nan"),
            statistics.median(rsss) if rsss else float("nan"),
            statistics.median(reads) if reads else float("nan"))

w1, r1, ms1 = med("n")
w0, r0, ms0 = med("x")
print("## Cost of the probe (`node`, median of %d runs each)\n" % repeat)
print("| run | wall s | peak RSS MiB | NVML reads (read_ms) |")
print("|---|---:|---:|---:|")
print("| NVML read (%s GPUs) | %.3f | %.1f | %.1f ms |" % (gh.get("count"), w1, r1 / 1024, ms1))
print("| NVML hidden | %.3f | %.1f | - |" % (w0, r0 / 1024))
print("| added by the probe | %+.3f | %+.1f | budget: 1 s on 8 GPUs |" % (w1 - w0, (r1 - r0) / 1024))
code, wall, rss = rc("d")
print("\nDefault `local` (one rank per GPU): exit %s, %.2f s, peak RSS %.0f MiB." % (
      code, wall or 0, (rss or 0) / 1024))
PY
