#!/bin/bash
# Bytes from outside are sanitised before they reach a log line, the table
# or the JSON report. Rank 1 of a static 2-rank run lives in its own UTS
# namespace whose hostname carries ESC, a newline with a forged "FAKE: pass"
# line, and invalid UTF-8; it sends that name to rank 0 in its HELLO.
# Neither rank's stdout, stderr or report may hold an ESC or another
# control byte, a line starting "FAKE: pass", or invalid UTF-8; both reports
# parse as JSON; the name shows up sanitised ("evil?[2J?FAKE: pass??").
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/build/efa-preflight}
tmp=$(mktemp -d)
trap 'kill $p0 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v unshare >/dev/null || { echo "skip: unshare is not installed"; exit 77; }
unshare -u true 2>/dev/null || { echo "skip: cannot create a UTS namespace here (needs root)"; exit 77; }

cat > "$tmp/forge.py" <<'PY'
import os, socket, sys
socket.sethostname(b"evil\x1b[2J\nFAKE: pass\xff\xfe")
os.execv(sys.argv[1], sys.argv[1:])
PY
. "$(dirname "$0")/lib_port.sh"
# A port the kernel picked; should another process take it first, rank 0
# says RendezvousPortInUse (exit 2) and the pair runs again on another.
for try in 1 2 3; do
    port=$(pf_free_port)
    peers=127.0.0.1:$port,127.0.0.1:$port
    common=(--bootstrap static --peers "$peers" --fabric-provider tcp --engine host --no-imds
            -b 64K -e 64K -n 1 -w 0 --timeout 30 -vv)
    "$bin" run "${common[@]}" --rank 0 --report "$tmp/r0.json" >"$tmp/r0.out" 2>"$tmp/r0.err" &
    p0=$!
    unshare -u python3 "$tmp/forge.py" "$bin" run "${common[@]}" --rank 1 \
        --report "$tmp/r1.json" >"$tmp/r1.out" 2>"$tmp/r1.err"
    rc1=$?
    wait $p0
    rc0=$?
    [ $rc0 -eq 2 ] && grep -q RendezvousPortInUse "$tmp/r0.out" && continue
    break
done
[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] || { tail -n 5 "$tmp"/r*.err; fail "exit $rc0/$rc1, want 0/0"; }

python3 - "$tmp" <<'PY' || exit 1
import json, re, sys
d = sys.argv[1]
bad = 0
for f in ("r0.out", "r0.err", "r0.json", "r1.out", "r1.err", "r1.json"):
    raw = open("%s/%s" % (d, f), "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print("FAIL: %s is not valid UTF-8: %s" % (f, e)); bad += 1; continue
    ctl = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    if ctl:
        print("FAIL: %s holds control characters %r" % (f, sorted(set(ctl)))); bad += 1
    if re.search(r"^FAKE: pass", text, re.M):
        print("FAIL: %s has a forged 'FAKE: pass' line" % f); bad += 1
    if f.endswith(".json"):
        json.loads(text)
seen = open(d + "/r0.err", encoding="utf-8").read()
if "rank 1 (evil?[2J?FAKE: pass??, 127.0.0.1)" not in seen:
    print("FAIL: rank 0 never named the peer (sanitised) in its log"); bad += 1
r1 = json.load(open(d + "/r1.json"))
if r1["node"]["hostname"] != "evil?[2J?FAKE: pass??":
    print("FAIL: rank 1's report hostname is %r" % r1["node"]["hostname"]); bad += 1
if "on evil?[2J?FAKE: pass??:" not in open(d + "/r1.out", encoding="utf-8").read():
    print("FAIL: rank 1's table header does not carry the sanitised name"); bad += 1
sys.exit(1 if bad else 0)
PY
echo "forged hostname (ESC, newline, invalid UTF-8) sent in a HELLO: rank 0's log names it 'evil?[2J?FAKE: pass??'; no control byte, forged line or invalid UTF-8 in 6 outputs; both reports are JSON"
echo "PASS"
