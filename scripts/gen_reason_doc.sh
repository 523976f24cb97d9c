#!/bin/bash
# Regenerate the reason table in docs/reference/reasons.md from the agent's
# one table (`efa-preflight reasons --markdown`), between the reasons:begin
# and reasons:end markers. tests/integration/test_diagnosis_doc.sh checks
# it, and that each reason has its section on its class's page of
# docs/operate/diagnosis/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PF_BIN:-$root/build/efa-preflight}
doc="$root/docs/reference/reasons.md"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$bin" reasons --markdown >"$tmp"
python3 - "$doc" "$tmp" <<'PY'
import re, sys
doc, gen = sys.argv[1], open(sys.argv[2]).read()
s = open(doc).read()
pat = re.compile(r'(<!-- reasons:begin[^\n]*\n).*?(<!-- reasons:end)', re.S)
if not pat.search(s):
    sys.exit("docs/reference/reasons.md has no reasons:begin/end markers")
s = pat.sub(lambda m: m.group(1) + gen + m.group(2), s)
open(doc, 'w').write(s)
PY
