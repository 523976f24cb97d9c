#!/bin/bash
# Files and parsers fail fast on hostile input, with exit 2 and a clear
# message, before anything runs:
#  - YAML nested 40k and 100k deep (libyaml took 7 s and 33 s) as --config
#    and as --catalog: refused in well under a second;
#  - a FIFO as --config, --catalog, --secret-file or --token-file: refused
#    at once ("not a regular file (a FIFO)"), never a blocked read;
#  - a config that is only "---" is empty, as an empty file is;
#  - a CR/LF in --api-server is bad input (exit 2), not an API failure;
#  - a FIFO or a bad entry as --baseline: exit 2 before any peer.
. "$(dirname "$0")/lib_test.sh"
fail() { echo "FAIL: $*"; exit 1; }

# run_fast LIMIT_S WANT_RC PATTERN cmd...: exit WANT_RC within LIMIT_S,
# stderr matching PATTERN; prints the seconds taken.
run_fast() {
    local limit=$1 want=$2 pat=$3 t0 rc secs
    shift 3
    t0=$(date +%s.%N)
    timeout -k 1 10 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && fail "$* blocked (killed after 10 s)"
    [ $rc -eq "$want" ] || { cat "$tmp/err"; fail "$*: exit $rc, want $want"; }
    grep -q -- "$pat" "$tmp/err" || { cat "$tmp/err"; fail "$*: stderr lacks '$pat'"; }
    awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s < l) }' || fail "$*: took ${secs}s (limit ${limit}s)"
    echo "$secs"
}

for depth in 40000 100000; do
    python3 -c "import sys; d=int(sys.argv[1]); open(sys.argv[2],'w').write('port: '+'['*d+']'*d+'\n')" \
        $depth "$tmp/deep.yaml"
    s=$(run_fast 1 2 "deep.yaml:1:70: YAML nested deeper than 64 levels" "$bin" version --config "$tmp/deep.yaml") || { echo "$s"; exit 1; }
    echo "ok   --config nested $depth deep: exit 2 in ${s}s"
    python3 -c "import sys; d=int(sys.argv[1]); open(sys.argv[2],'w').write('instances:\n  x: '+'['*d+']'*d+'\n')" \
        $depth "$tmp/deepcat.yaml"
    s=$(run_fast 1 2 "YAML nested deeper than 64 levels" "$bin" catalog --catalog "$tmp/deepcat.yaml") || { echo "$s"; exit 1; }
    echo "ok   --catalog nested $depth deep: exit 2 in ${s}s"
done

mkfifo "$tmp/fifo"
s=$(run_fast 1 2 "fifo: not a regular file (a FIFO)" "$bin" version --config "$tmp/fifo") || { echo "$s"; exit 1; }
echo "ok   FIFO as --config: exit 2 in ${s}s"
s=$(run_fast 1 2 "fifo: not a regular file (a FIFO)" "$bin" catalog --catalog "$tmp/fifo") || { echo "$s"; exit 1; }
echo "ok   FIFO as --catalog: exit 2 in ${s}s"
. "$(dirname "$0")/lib_port.sh"
port=$(pf_free_port)
s=$(run_fast 3 2 "secret-file.*fifo: not a regular file (a FIFO)" "$bin" run --bootstrap static \
    --peers 127.0.0.1:$port,127.0.0.1:$port --rank 0 --secret-file "$tmp/fifo" \
    --fabric-provider tcp --engine host --no-imds --timeout 20) || { echo "$s"; exit 1; }
echo "ok   FIFO as --secret-file: exit 2 in ${s}s"
s=$(run_fast 3 2 "fifo: not a regular file (a FIFO)" "$bin" run --bootstrap k8s \
    --api-server https://127.0.0.1:9 --token-file "$tmp/fifo" --pod-name p --namespace n \
    --fabric-provider tcp --engine host --no-imds --timeout 20) || { echo "$s"; exit 1; }
echo "ok   FIFO as --token-file: exit 2 in ${s}s"

s=$(run_fast 3 2 "fifo: not a regular file (a FIFO)" "$bin" run --bootstrap static \
    --peers 127.0.0.1:$port,127.0.0.1:$port --rank 0 --baseline "$tmp/fifo" \
    --fabric-provider tcp --engine host --no-imds --timeout 20) || { echo "$s"; exit 1; }
echo "ok   FIFO as --baseline: exit 2 in ${s}s"
printf '{"version":1,"entries":[{"type":"p5.48xlarge","engine":"nccl","kind":"pair","nodes":2,"bytes":1,"values":["fast"],"runs":1}]}' >"$tmp/base.json"
s=$(run_fast 3 2 "base.json: entries\[0\]: field 'values'" "$bin" run --bootstrap static \
    --peers 127.0.0.1:$port,127.0.0.1:$port --rank 0 --baseline "$tmp/base.json" \
    --fabric-provider tcp --engine host --no-imds --timeout 20) || { echo "$s"; exit 1; }
echo "ok   a bad --baseline file: exit 2 naming the entry and field in ${s}s, before any peer"

printf -- '---\n' >"$tmp/dash.yaml"
"$bin" version --config "$tmp/dash.yaml" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "a config of only '---' was refused"; }
: >"$tmp/empty.yaml"
"$bin" version --config "$tmp/empty.yaml" >/dev/null || fail "an empty config was refused"
echo "ok   a config of only '---' is accepted like an empty one"

s=$(run_fast 3 2 "api-server: URL holds a space, control or non-ASCII byte (0x0D" "$bin" run --bootstrap k8s \
    --api-server "$(printf 'https://127.0.0.1:9\r\nX-Injected: 1')" --pod-name p --namespace n \
    --fabric-provider tcp --no-imds --timeout 5) || { echo "$s"; exit 1; }
echo "ok   CR/LF in --api-server: exit 2 in ${s}s"
echo "PASS"
