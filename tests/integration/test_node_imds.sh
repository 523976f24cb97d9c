#!/bin/bash
# IMDSv2 instance-type lookup against a fake metadata server on loopback:
#   - DMI unreadable -> token PUT (with the TTL header), GET with the token,
#     type taken from IMDS (ml. stripped), token never printed;
#   - DMI says a non-AWS vendor -> IMDS never contacted;
#   - a server that never answers -> given up within the 1 s budget.
# Fake servers on 127.0.0.1 only, on ports the kernel picks (port 0), so
# two copies of the suite on one machine do not collide.
. "$(dirname "$0")/lib_test.sh"
pf_fixtures
fails=0
TOKEN=tok-5ecret-d0-not-print

# fake_imds MODE LOG: MODE ok = IMDSv2, hang = accept and never reply;
# sets PORT to the port it listens on
fake_imds() {
    local portfile=$tmp/port.$1
    python3 - "$portfile" "$1" "$2" "$TOKEN" <<'PY' &
import http.server, os, sys, time
portfile, mode, log, token = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def note(self, what):
        with open(log, "a") as f: f.write(what + "\n")
    def reply(self, code, body):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())
    def do_PUT(self):
        self.note("PUT %s ttl=%s" % (self.path, self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")))
        if mode == "hang":
            time.sleep(5); return
        if self.path != "/latest/api/token" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(400, "bad")
        self.reply(200, token)
    def do_GET(self):
        ok = self.headers.get("X-aws-ec2-metadata-token") == token
        self.note("GET %s token=%s" % (self.path, "ok" if ok else "missing"))
        if not ok:
            return self.reply(401, "")
        if self.path == "/latest/meta-data/instance-type":
            return self.reply(200, "ml.p5.48xlarge")
        self.reply(404, "")
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f: f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
PY
    pids+=($!)
    for _ in $(seq 50); do
        if [ -s "$portfile" ]; then
            PORT=$(cat "$portfile")
            python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 0.2)" 2>/dev/null && return 0
        fi
        sleep 0.1
    done
    echo "fake IMDS ($1) did not start"; exit 1
}

# a p5 tree without DMI: IMDS is the only source left
mkdir -p "$tmp/nodmi"
cp -a "$FX/p5.48xlarge/." "$tmp/nodmi/"
rm -rf "$tmp/nodmi/sys/devices/virtual/dmi"

fake_imds ok "$tmp/imds.log"
OK_PORT=$PORT
"$PF_BIN" node --sysfs-root "$tmp/nodmi" --dev-root "$tmp/nodmi" \
    --imds-endpoint http://127.0.0.1:$OK_PORT --log-level debug --json \
    >"$tmp/out.json" 2>"$tmp/err.txt"
if [ "$(pf_field "$tmp/out.json" node.instance_type)" = p5.48xlarge ] &&
   [ "$(pf_field "$tmp/out.json" node.instance_source)" = imds ] &&
   grep -q '^PUT /latest/api/token ttl=[0-9]' "$tmp/imds.log" &&
   grep -q '^GET /latest/meta-data/instance-type token=ok' "$tmp/imds.log"; then
    echo "ok   type from IMDSv2 (token PUT, then GET with the token)"
else
    echo "FAIL IMDS lookup"; cat "$tmp/imds.log" "$tmp/err.txt"; fails=$((fails + 1))
fi
if grep -q "$TOKEN" "$tmp/out.json" "$tmp/err.txt"; then
    echo "FAIL the IMDS token appears in the output"; fails=$((fails + 1))
else
    echo "ok   token not printed (debug log included)"
fi

# non-AWS DMI vendor: the server must see nothing
: >"$tmp/imds.log"
"$PF_BIN" node --sysfs-root "$FX/plain" --dev-root "$FX/plain" \
    --imds-endpoint http://127.0.0.1:$OK_PORT --json >"$tmp/out.json" 2>/dev/null
if [ ! -s "$tmp/imds.log" ] && [ "$(pf_field "$tmp/out.json" node.instance_source)" = none ]; then
    echo "ok   non-AWS DMI vendor: IMDS not contacted"
else
    echo "FAIL IMDS contacted on a non-AWS machine"; cat "$tmp/imds.log"; fails=$((fails + 1))
fi

# --no-imds: nothing sent either
"$PF_BIN" node --sysfs-root "$tmp/nodmi" --dev-root "$tmp/nodmi" --no-imds \
    --imds-endpoint http://127.0.0.1:$OK_PORT --json >"$tmp/out.json" 2>/dev/null
if [ ! -s "$tmp/imds.log" ] && [ "$(pf_field "$tmp/out.json" node.instance_source)" = none ]; then
    echo "ok   --no-imds: IMDS not contacted"
else
    echo "FAIL --no-imds still contacted IMDS"; fails=$((fails + 1))
fi

# a server that accepts and never answers: bounded by the 1 s budget
fake_imds hang "$tmp/hang.log"
HANG_PORT=$PORT
start=$(date +%s%N)
"$PF_BIN" node --sysfs-root "$tmp/nodmi" --dev-root "$tmp/nodmi" \
    --imds-endpoint http://127.0.0.1:$HANG_PORT --json >"$tmp/out.json" 2>/dev/null
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ $ms -lt 2500 ] && [ "$(pf_field "$tmp/out.json" node.instance_source)" = none ] &&
   grep -q "IMDS PUT http://127.0.0.1:$HANG_PORT/latest/api/token" <(pf_field "$tmp/out.json" node.instance_note); then
    echo "ok   hanging IMDS given up after ${ms} ms"
else
    echo "FAIL hanging IMDS: ${ms} ms"; cat "$tmp/out.json"; fails=$((fails + 1))
fi

[ $fails = 0 ] || exit 1
echo "IMDS probe behaves"
