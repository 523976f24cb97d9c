#!/bin/bash
# The README is the front door and docs/ the rest, by reader:
#  - every relative link of README.md, docs/**/*.md and the chart's README
#    leads to a file of the repository, and every #fragment to a heading of
#    that page (GitHub's slugs: lower case, punctuation dropped, spaces to
#    '-', a repeated heading gets -1, -2...);
#  - every page under docs/ is listed in docs/README.md, the index;
#  - a docs page a source file, chart, script or test names (docs/....md)
#    exists, so help texts, remedies and comments follow a page that moves;
#  - README.md is at most 15 KB with `helm install` and the gate snippet
#    (initContainers:) in its first 60 lines, and no file under docs/ is
#    over 40 KB.
# It runs on a doctored copy first, so it can fail.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

check() {
python3 - "$1" <<'EOF'
import os, re, sys
root = sys.argv[1]
README_MAX, DOC_MAX, HELM_LINE = 15 * 1024, 40 * 1024, 60

def slugs(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out

def links(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)

pages = [os.path.join(root, "README.md"),
         os.path.join(root, "charts/efa-preflight/README.md")]
docs = os.path.join(root, "docs")
for dp, _, fs in os.walk(docs):
    pages += [os.path.join(dp, f) for f in sorted(fs) if f.endswith(".md")]
bad = []
cache = {}
for page in pages:
    if not os.path.exists(page):
        continue
    for target in links(page):
        if re.match(r"[a-z][a-z+.-]*:", target):
            continue                      # http:, https:, mailto:
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        rel = os.path.relpath(page, root)
        if not os.path.exists(dest):
            bad.append("%s links to %s, which does not exist" % (rel, target))
        elif frag and dest.endswith(".md"):
            if dest not in cache:
                cache[dest] = slugs(dest)
            if frag not in cache[dest]:
                bad.append("%s links to %s: %s has no heading #%s"
                           % (rel, target, os.path.relpath(dest, root), frag))

# The index lists every page.
index = os.path.join(docs, "README.md")
listed = {os.path.normpath(os.path.join(docs, t.partition("#")[0]))
          for t in links(index)} if os.path.exists(index) else set()
for dp, _, fs in os.walk(docs):
    for f in fs:
        p = os.path.join(dp, f)
        if f.endswith(".md") and p != index and p not in listed:
            bad.append("docs/README.md does not list %s" % os.path.relpath(p, root))

# A docs page named anywhere in the sources, charts, manifests, scripts or
# tests (a help text, a remedy, a comment) exists.
for top in ("agent", "charts", "k8s", "scripts", "tests", "mk", "bench", ".ci", "Makefile", "Dockerfile"):
    base = os.path.join(root, top)
    files = [base] if os.path.isfile(base) else []
    for dp, ds, fs in os.walk(base):
        ds[:] = [x for x in ds if x != "node_modules"]   # npm's, not ours
        files += [os.path.join(dp, f) for f in fs]
    for f in files:
        if os.path.basename(f) == "test_docs_links.sh":
            continue                  # its doctored pages
        try:
            text = open(f, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for m in re.finditer(r"(?<![\w/.-])docs/[\w/.-]*\w\.(?:md|json)", text):
            if not os.path.exists(os.path.join(root, m.group(0))):
                bad.append("%s names %s, which does not exist"
                           % (os.path.relpath(f, root), m.group(0)))

# Sizes and the first screen.
readme = os.path.join(root, "README.md")
size = os.path.getsize(readme)
if size > README_MAX:
    bad.append("README.md is %d bytes, more than %d" % (size, README_MAX))
head = open(readme, encoding="utf-8").read().split("\n")[:HELM_LINE]
if not any(l.startswith("helm install") for l in head):
    bad.append("README.md has no 'helm install' in its first %d lines" % HELM_LINE)
if not any(l.strip() == "initContainers:" for l in head):
    bad.append("README.md has no gate snippet (initContainers:) in its first %d lines" % HELM_LINE)
for dp, _, fs in os.walk(docs):
    for f in fs:
        p = os.path.join(dp, f)
        if os.path.getsize(p) > DOC_MAX:
            bad.append("%s is %d bytes, more than %d"
                       % (os.path.relpath(p, root), os.path.getsize(p), DOC_MAX))
for b in bad:
    print("FAIL: " + b)
print("%d pages, %d links checked" % (len(pages), sum(len(links(p)) for p in pages if os.path.exists(p))))
sys.exit(1 if bad else 0)
EOF
}

# 1. A doctored copy: a dead link, a missing anchor, a page not in the
#    index, a page too large and a README without helm install.
mkdir -p "$tmp/r/docs/operate" "$tmp/r/charts/efa-preflight"
cat >"$tmp/r/README.md" <<'EOF'
# t
[ok](docs/README.md) [ok too](docs/operate/a.md#the-b-section) [dead](docs/nothere.md)
EOF
cat >"$tmp/r/docs/README.md" <<'EOF'
# index
[a](operate/a.md)
EOF
printf '# A\n## The `b` section!\n## Twice\n## Twice\n[self](#twice-1) [gone](#no-such-heading)\n' \
    >"$tmp/r/docs/operate/a.md"
head -c 41000 /dev/zero | tr '\0' 'x' >"$tmp/r/docs/operate/big.md"
mkdir -p "$tmp/r/agent"
echo '/* the reasons: docs/diagnosis.md; the index: docs/README.md */' >"$tmp/r/agent/x.c"
out=$(check "$tmp/r")
[ $? -ne 0 ] || fail "the doctored copy passed: $out"
for want in "links to docs/nothere.md, which does not exist" \
            "links to #no-such-heading" \
            "docs/README.md does not list docs/operate/big.md" \
            "docs/operate/big.md is 41000 bytes" \
            "no 'helm install' in its first 60 lines" \
            "no gate snippet (initContainers:) in its first 60 lines" \
            "agent/x.c names docs/diagnosis.md, which does not exist"; do
    grep -qF "$want" <<<"$out" || fail "the doctored copy did not report '$want': $out"
done
grep -q 'twice-1\|the-b-section\|docs/README.md, which' <<<"$out" && fail "a good anchor or page was reported: $out"
echo "ok   a dead link or anchor, a source naming a page that is gone, an unlisted or too large page, no helm install: caught"

# 2. The repository.
out=$(check "$root") || { echo "$out"; fail "the docs have dead links or break the size rules"; }
echo "ok   $(tail -n 1 <<<"$out"); README $(wc -c <"$root/README.md") bytes, helm install and the gate in its first 60 lines"
