#!/usr/bin/env python3
"""The reliability table (docs/internals/reliability.md), from the test suite's own results.

Reads what the last runs left behind and prints markdown:
  - $BUILD/test-logs/<test>.rc and .log   integration tests (run.sh writes
                                          "<exit code> <seconds>" per test)
  - $BUILD/test-logs/unit.json            Criterion's --json output
  - build/fuzz/fuzz-results/executions.txt
                                          tests/fuzz/run.sh: "<target> <execs>"
                                          per clean run (all runs are summed)
  - tests/fuzz/regressions/<target>/      kept crash inputs, replayed by run.sh
  - build/asan/test-logs/                 the same suite under ASan + UBSan,
                                          when `make asan` has run
Nothing is run here and nothing is assumed: a test that has not run is
shown as "not run", and the closing line says "not clean" unless every
fault test passed and no sanitizer report appears in any log.

  scripts/reliability_table.py [--build DIR] [--doc docs/internals/reliability.md]

With --doc the table replaces the text between the markers
<!-- reliability-table --> and <!-- end reliability-table --> in that file.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- reliability-table -->"
END = "<!-- end reliability-table -->"

# Integration tests that inject a fault: what is injected and what the test
# asserts survives it. Only tests that exist in tests/integration are shown.
FAULT_TESTS = [
    ("test_peer_lost", "a rank SIGKILLed mid-sweep (3 ranks, 3 network "
     "namespaces)", "survivors stop in < 15 s, exit 1, PeerLost naming the "
     "dead rank"),
    ("test_local", "a rank SIGKILLed under `local`",
     "launcher exit 3 naming the rank and signal, rank 0 reports PeerLost"),
    ("test_peer_timeout", "a rank that never starts; rank 0 that never "
     "starts", "exit 3 within deadline + 2 s, PeerTimeout naming the rank "
     "and its address"),
    ("test_peer_rejected", "mismatched --secret-file; a foreign --run-id",
     "the rank that does not belong exits 3 PeerRejected at once, rank 0 "
     "exits 3 PeerTimeout at its deadline saying why; secret never "
     "printed"),
    ("test_peer_strangers", "a stranger sending every kind of bad HELLO "
     "while 3 and 2 ranks join", "every HELLO refused, the run passes, "
     "refusals logged rate-limited"),
    ("test_peer_flood", "~1000 idle connections a second on rank 0's "
     "rendezvous port while 3 ranks join (10 runs)", "every run passes, "
     "each within 7 s; rank 0 says it dropped the flood's connections"),
    ("test_k8s_stranger", "a stranger on the pod network claiming a rank, "
     "with and without the secret", "refused by the JobSet-derived key, "
     "then by the pod IP; both pods pass"),
    ("test_peer_stopped", "a rank SIGSTOPped mid-sweep (rank 2, then rank 0)",
     "every survivor exits 3 PeerTimeout naming the stopped rank"),
    ("test_corrupt_rank", "one rank's input spoiled (--debug-corrupt-rank)",
     "DataCorruption with the exact #wrong count, exit 1"),
    ("test_nccl_double", "NCCL double: wrong data, NET/Socket channels, an "
     "init that never ends, an async error mid-sweep, NCCL missing or too "
     "old", "the exact verdict each, ncclCommAbort on the deadline"),
    ("test_k8s_faults", "API latency, 429 + Retry-After, 410 on continue "
     "and watch, connection resets, 500s, 409s, 503 on the Event, token "
     "rotation (401), wrong CA, tokens without rights",
     "agents finish or exit 3 with the verb and resource named; no token "
     "in any log or report; nothing written without rights"),
    ("test_k8s_peer_timeout", "a JobSet pod that is never created",
     "exit 3 at the deadline, PeerTimeout naming the pod, status=error "
     "label"),
    ("test_straggler_netns", "a rank slowed on purpose (--debug-slow-rank) "
     "among 4 ranks; a slowed rank SIGKILLed during the re-test",
     "only the slow rank fails (StragglerNode), its peers warn SlowPeer; "
     "PeerLost within 15 s"),
    ("test_straggler_netem", "netem delay 50ms on one rank's link",
     "only that rank fails (StragglerNode)"),
    ("test_straggler_tbf", "a 100 Mbit/s token bucket on one rank's link",
     "only that rank fails (StragglerNode)"),
    ("test_nic_rails_tbf", "a 100 Mbit/s token bucket on one of a rank's "
     "two NICs (host engine, one endpoint per NIC; 4 and 2 ranks)",
     "only that rank fails (EFANICSlow naming the NIC), its peers warn "
     "SlowPeer; with 2 ranks both fail on that rail"),
    ("test_nic_counters", "EFA counters moved between the before and after "
     "reads; errors since boot; an old driver without the Nitro v4 "
     "counters; none at all", "the deltas in report and table; a warning "
     "naming device and counters; absent counters reported, exit 0"),
    ("test_node_fixtures", "broken nodes: 31/32 EFA, efa module missing, "
     "uverbs missing, port down, 15/16 on p5en, no efa provider",
     "the exact exit code and headline reason per tree"),
    ("test_node_imds", "an IMDS that never answers; a non-AWS DMI vendor",
     "given up within the 1 s budget; IMDS not contacted"),
    ("test_mpirun", "the MPI shim missing", "exit 2 naming what to build"),
]

# Unit-test suites whose tests feed the agent bad input.
BAD_INPUT_SUITES = {
    "config": "config files, env and flags",
    "catalog": "catalog overrides",
    "peers": "--peers lists",
    "static_bootstrap": "--peers / --rank combinations",
    "hello": "rendezvous HELLOs",
    "wire": "rendezvous frames",
    "kubeapi": "API responses, names, labels",
    "nccl_log": "NCCL logs",
}

# What each fuzz target feeds the agent.
FUZZ_INPUTS = {
    "fuzz_config": "config YAML",
    "fuzz_catalog": "catalog YAML",
    "fuzz_k8s_pods": "API pod list JSON",
    "fuzz_k8s_watch": "API watch event lines",
    "fuzz_k8s_node": "API Node JSON",
    "fuzz_rdv_hello": "rendezvous HELLO body",
    "fuzz_rdv_wire": "rendezvous frames on a socket",
    "fuzz_rdv_peer": "a lying rank 0 (peer side, end to end)",
    "fuzz_rdv_root": "a lying rank 1 after joining (rank 0 side)",
    "fuzz_nccl_log": "NCCL INFO log",
    "fuzz_peers": "--peers list",
    "fuzz_report": "report and table from hostile strings",
}

SANITIZER = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|"
                       r"runtime error:|==\d+== (Invalid|Conditional|Mismatched)")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def integration_results(logdir):
    """{test name: (exit code, seconds, log text)} for tests that ran."""
    out = {}
    if not os.path.isdir(logdir):
        return out
    for name in sorted(os.listdir(logdir)):
        if not name.endswith(".rc"):
            continue
        test = name[:-3]
        fields = (read(os.path.join(logdir, name)) or "").split()
        if len(fields) < 2:
            continue
        log = read(os.path.join(logdir, test + ".log")) or ""
        out[test] = (int(fields[0]), int(fields[1]), log)
    return out


def cases(log):
    """Scenarios a test reports as passed: its 'ok' lines, at least one."""
    n = sum(1 for line in log.splitlines() if re.match(r"ok\b", line))
    return max(n, 1)


def unit_results(path):
    text = read(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def fuzz_executions(path):
    """Executions per target, summed over every clean run recorded."""
    execs = {}
    for line in (read(path) or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            execs[parts[0]] = execs.get(parts[0], 0) + int(parts[1])
    return execs


def fuzz_targets():
    d = os.path.join(ROOT, "tests", "fuzz")
    return sorted(f[:-2] for f in os.listdir(d)
                  if f.startswith("fuzz_") and f.endswith(".c"))


def regressions(target):
    d = os.path.join(ROOT, "tests", "fuzz", "regressions", target)
    return len(os.listdir(d)) if os.path.isdir(d) else 0


def status_word(rc):
    return {0: "survived", 77: "skipped"}.get(rc, "FAILED (exit %d)" % rc)


def table(build):
    logdir = os.path.join(ROOT, build, "test-logs")
    integ = integration_results(logdir)
    unit = unit_results(os.path.join(logdir, "unit.json"))
    fuzz_dir = os.path.join(ROOT, "build", "fuzz", "fuzz-results")
    execs = fuzz_executions(os.path.join(fuzz_dir, "executions.txt"))
    lines, problems = [], []

    lines.append("Generated by `make reliability` (scripts/reliability_table.py) "
                 "from the last test, fuzz and sanitizer runs.")
    lines.append("")
    lines.append("**Faults injected** (integration tests, each asserting exact "
                 "exit codes and reasons)")
    lines.append("")
    lines.append("| test | fault injected | survived means | scenarios | result |")
    lines.append("|---|---|---|---:|---|")
    faults_run = faults_ok = scenarios = 0
    faults_skipped = []
    for test, fault, means in FAULT_TESTS:
        if not os.path.exists(os.path.join(ROOT, "tests", "integration",
                                           test + ".sh")):
            continue
        if test not in integ:
            lines.append("| %s | %s | %s | - | not run |" % (test, fault, means))
            problems.append("%s not run" % test)
            continue
        rc, secs, log = integ[test]
        n = cases(log) if rc == 0 else 0
        if rc == 77:
            faults_skipped.append("%s (%s)" % (test, log.strip().splitlines()[-1]
                                              if log.strip() else "no reason"))
        else:
            faults_run += 1
        if rc == 0:
            faults_ok += 1
            scenarios += n
        elif rc != 77:
            problems.append("%s exit %d" % (test, rc))
        lines.append("| %s | %s | %s | %s | %s (%d s) |"
                     % (test, fault, means, n if rc == 0 else "-",
                        status_word(rc), secs))
    lines.append("")

    lines.append("**Bad inputs tried**")
    lines.append("")
    lines.append("| source | inputs | count | result |")
    lines.append("|---|---|---:|---|")
    cli = integ.get("test_config_cli")
    if cli:
        bad = sum(1 for line in cli[2].splitlines()
                  if re.match(r"ok: .* -> 2 ", line))
        lines.append("| test_config_cli | bad commands, options, config "
                     "files, env values, catalogs (exit 2, file:line named) "
                     "| %d | %s |" % (bad, "passed" if cli[0] == 0
                                      else status_word(cli[0])))
        if cli[0] != 0:
            problems.append("test_config_cli exit %d" % cli[0])
    if unit:
        for suite in sorted(unit.get("test_suites", []), key=lambda s: s["name"]):
            what = BAD_INPUT_SUITES.get(suite["name"])
            if not what:
                continue
            bad = suite.get("failed", 0) + suite.get("errored", 0)
            lines.append("| unit suite %s | %s | %d tests | %s |"
                         % (suite["name"], what, len(suite.get("tests", [])),
                            "passed" if not bad else "%d FAILED" % bad))
            if bad:
                problems.append("unit suite %s: %d failed" % (suite["name"], bad))
    total_execs = 0
    for t in fuzz_targets():
        kept = regressions(t)
        if t in execs:
            total_execs += execs[t]
            result = "no crash"
        else:
            result = "not run"
            problems.append("%s not fuzzed" % t)
        lines.append("| %s (libFuzzer, ASan+UBSan) | %s; %d kept crash "
                     "input%s replayed | %s executions | %s |"
                     % (t, FUZZ_INPUTS.get(t, "?"), kept,
                        "" if kept == 1 else "s",
                        "{:,}".format(execs[t]) if t in execs else "-", result))
    lines.append("")

    lines.append("**Whole suite**")
    lines.append("")
    if unit:
        lines.append("- unit (Criterion): %d passed, %d failed, %d crashed"
                     % (unit.get("passed", 0), unit.get("failed", 0),
                        unit.get("errored", 0)))
        if unit.get("failed", 0) or unit.get("errored", 0):
            problems.append("unit tests failing")
    else:
        lines.append("- unit (Criterion): no results (run `make reliability`)")
        problems.append("no unit results")
    passed = sum(1 for r in integ.values() if r[0] == 0)
    skipped = sum(1 for r in integ.values() if r[0] == 77)
    failed = [t for t, r in integ.items() if r[0] not in (0, 77)]
    lines.append("- integration: %d passed, %d failed, %d skipped"
                 % (passed, len(failed), skipped))
    asan_dir = os.path.join(ROOT, "build", "asan", "test-logs")
    asan = integration_results(asan_dir)
    asan_unit = unit_results(os.path.join(asan_dir, "unit.json"))
    if asan or asan_unit:
        a_failed = [t for t, r in asan.items() if r[0] not in (0, 77)]
        lines.append("- under ASan + UBSan (`make asan`): integration %d "
                     "passed, %d failed%s"
                     % (sum(1 for r in asan.values() if r[0] == 0),
                        len(a_failed),
                        "; unit %d passed, %d failed" %
                        (asan_unit.get("passed", 0), asan_unit.get("failed", 0))
                        if asan_unit else ""))
        if a_failed:
            problems.append("under ASan: " + ", ".join(a_failed))
    vg = integ.get("test_valgrind_local")
    if vg:
        lines.append("- valgrind (test_valgrind_local, `local` with 3 "
                     "processes and `node` on 4 trees): %s"
                     % ("0 errors, no definite leak" if vg[0] == 0
                        else status_word(vg[0])))
        if vg[0] not in (0, 77):
            problems.append("valgrind test exit %d" % vg[0])
    lines.append("- fuzzing: %s executions over %d targets, summed over "
                 "every clean run in build/fuzz/fuzz-results/executions.txt"
                 % ("{:,}".format(total_execs), len(fuzz_targets())))
    reports = []
    for d, results in ((logdir, integ), (asan_dir, asan)):
        for test, (_, _, log) in results.items():
            if SANITIZER.search(log):
                reports.append(os.path.relpath(os.path.join(d, test + ".log"),
                                               ROOT))
    if reports:
        problems.append("sanitizer/valgrind reports in " + ", ".join(reports))
    if failed:
        problems.append("integration failing: " + ", ".join(failed))
    lines.append("")
    if problems:
        lines.append("**Not clean**: " + "; ".join(problems) + ".")
    else:
        lines.append("**Nothing lost or half-written**: %d of %d fault tests "
                     "survived (%d scenarios), each with its exact exit code "
                     "and reason asserted on every process that survived; no "
                     "sanitizer or valgrind report in any test log; the "
                     "report file is only ever written whole (temp file + "
                     "rename)." % (faults_ok, faults_run, scenarios))
        if faults_skipped:
            lines.append("Skipped on this machine: %s."
                         % "; ".join(faults_skipped))
    return "\n".join(lines) + "\n", not problems


def replace_in(page, text):
    with open(page) as f:
        doc = f.read()
    block = BEGIN + "\n" + text + END
    if BEGIN in doc and END in doc:
        start = doc.index(BEGIN)
        end = doc.index(END) + len(END)
        doc = doc[:start] + block + doc[end:]
    else:
        doc = doc.rstrip("\n") + "\n\n## Reliability\n\n" + block + "\n"
    tmp = page + ".tmp"
    with open(tmp, "w") as f:
        f.write(doc)
    os.replace(tmp, page)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--doc", help="the page whose table markers to fill")
    args = ap.parse_args()
    text, clean = table(args.build)
    sys.stdout.write(text)
    if args.doc:
        replace_in(args.doc, text)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
