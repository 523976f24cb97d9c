#!/bin/bash
# Host engine over the tcp provider on loopback (`local`): 2 and 4 ranks
# pass with every element exact over sizes that no rank count divides
# (12 B x 3^k), the report names the engine and the fallback provider, and
# --min-busbw-gbps above what loopback can do fails BandwidthBelowThreshold.
# Ports from the kernel (lib_port.sh).
. "$(dirname "$0")/lib_test.sh"

for n in 2 4; do
    pf_local 0 "local --ranks $n over tcp" --ranks "$n" --fabric-provider tcp --no-imds \
        --port "$(pf_free_port)" --timeout 45 -b 12 -e 4M -f 3 -n 2 -w 1 \
        --report "$tmp/r$n.json"
    got=$(json "$tmp/r$n.json" '(r["verdict"]["exit_code"], r["verdict"]["reason"], r["collective"]["engine"], r["collective"]["provider"], r["collective"]["provider_is_fallback"], r["collective"]["nranks"], r["collective"]["wrong_total"], len(r["collective"]["rows"]), r["collective"]["rows"][-1]["bytes"])')
    [ "$got" = "(0, 'ProviderFallback', 'host', 'tcp;ofi_rxm', True, $n, 0, 12, 2125764)" ] ||
        fail "n=$n report (exit, reason, engine, provider, fallback, nranks, wrong, rows, last) = $got"
    got=$(json "$tmp/r$n.json" 'all(x[m]["busbw_gbps"] > 0 and x[m]["wrong"] == 0 for x in r["collective"]["rows"] for m in ("out_of_place", "in_place"))')
    [ "$got" = "True" ] || fail "n=$n: a row has no bandwidth or wrong elements"
    got=$(json "$tmp/r$n.json" '[(c["status"], c["reason"]) for c in r["checks"] if c["condition"] == "EFAFabricReady"]')
    [ "$got" = "[('warn', 'ProviderFallback'), ('pass', None)]" ] ||
        fail "n=$n fabric checks = $got"
    echo "ok   $n ranks over tcp: 12 sizes exact, host engine, ProviderFallback warn"
done

# A floor no loopback reaches: every rank is on this node, so it is this
# node's: NodeBandwidthBelowThreshold, exit 1.
pf_local 1 "--min-busbw-gbps 10000" --ranks 2 --fabric-provider tcp --no-imds \
    --port "$(pf_free_port)" --timeout 45 -b 64K -e 256K -n 2 -w 1 --min-busbw-gbps 10000 \
    --report "$tmp/floor.json"
got=$(json "$tmp/floor.json" '[(c["name"], c["status"], c["reason"]) for c in r["checks"] if c["status"] == "fail"]')
[ "$got" = "[('busbw', 'fail', 'NodeBandwidthBelowThreshold')]" ] ||
    fail "--min-busbw-gbps 10000 failing checks = $got"
grep -q "below the floor 10000.00 GB/s from the largest size (--min-busbw-gbps)" "$tmp/out" ||
    fail "the table does not state the floor and where it came from"
echo "ok   --min-busbw-gbps 10000: NodeBandwidthBelowThreshold, exit 1"
