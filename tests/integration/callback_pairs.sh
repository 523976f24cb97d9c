#!/bin/bash
# callback_pairs.sh: the pairs of agent/ .c files that call back into each
# other (A calls a function B defines, and B one A defines), which make a
# reader go back and forth between them. Read from the objects' symbols,
# not the text: each file's defined globals (nm --defined-only) against
# each file's undefined ones (nm -u), so a call through a macro or a
# header's inline function counts and a name in a comment does not.
#
#   tests/integration/callback_pairs.sh        one line per pair, exit 1
#                                               when there is one
# Objects come from $BUILD (default build) where they are newer than
# their source and every header their .d lists; any other file is
# compiled (-c, into a temporary folder), so the answer is the source's
# even without or before a build. agent/mpishim/ is built apart (mpicc)
# and never linked in: it is left out.
#
# Output: "agent/a.c <-> agent/b.c: a.c calls x, y; b.c calls z".
# PF_CALLBACK_EDGES=FILE also writes every call between two files there
# ("caller callee symbol" lines), for a look at longer circles.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2
build=${BUILD:-build}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The object of src: the build's when it is up to date, else a fresh one.
object() {
    local src=$1 o=$build/${1%.c}.o d=$build/${1%.c}.d dep fresh=0
    if [ -f "$o" ] && [ ! "$src" -nt "$o" ]; then
        fresh=1
        # the .d of -MMD -MP: "obj: src hdr ...", then "hdr:" lines
        # shellcheck disable=SC2013 # words: the paths hold no spaces
        [ -f "$d" ] && for dep in $(sed 's/\\$//; s/^[^:]*://' "$d"); do
            [ -e "$dep" ] && [ "$dep" -nt "$o" ] && { fresh=0; break; }
        done
    fi
    [ $fresh = 1 ] && { echo "$o"; return; }
    o=$tmp/obj/${src%.c}.o
    mkdir -p "$(dirname "$o")"
    # shellcheck disable=SC2046 # pkg-config prints several flags
    "$cc" -std=c11 -D_GNU_SOURCE -Iagent $(pkg-config --cflags libcurl libcjson yaml-0.1 2>/dev/null) \
        -c "$src" -o "$o" 2>"$tmp/cc.err" ||
        { echo "callback_pairs: cannot compile $src:" >&2; head -n 5 "$tmp/cc.err" >&2; return 1; }
    echo "$o"
}

# "object source" lines, then one nm of each kind over them all.
n=0
while read -r src; do
    o=$(object "$src") || exit 2
    echo "$o $src"
    n=$((n + 1))
done < <(find agent -name '*.c' ! -path 'agent/mpishim/*' | sort) >"$tmp/objs"
[ "$n" -gt 0 ] || { echo "callback_pairs: no sources under $root/agent" >&2; exit 2; }
cut -d' ' -f1 "$tmp/objs" >"$tmp/objlist"
# nm -A: "obj:value type name" (defined), "obj:   U name" (undefined)
{ xargs nm -A --defined-only -g <"$tmp/objlist" | sed 's/^/D /'
  xargs nm -A -u <"$tmp/objlist" | sed 's/^/U /'; } >"$tmp/nm" ||
    { echo "callback_pairs: nm failed" >&2; exit 2; }
awk 'NR == FNR { src[$1] = $2; next }
     { o = substr($2, 1, index($2, ":") - 1) }
     $1 == "D" && NF == 4 { print "D", src[o], $4 }
     $1 == "U" { print "U", src[o], $NF }' "$tmp/objs" "$tmp/nm" >"$tmp/syms"

# Edges "caller callee symbol", one per call between two files (a symbol
# two alternative files define, like util/httpd.c and httpd_none.c, gives
# an edge to each: more edges, never a missed pair).
awk '$1 == "D" { def[$3] = def[$3] " " $2; next }
     { u[++k] = $2 " " $3 }
     END { for (i = 1; i <= k; i++) {
               split(u[i], a, " "); m = split(def[a[2]], to, " ")
               for (j = 1; j <= m; j++)
                   if (to[j] != a[1]) print a[1], to[j], a[2] } }' "$tmp/syms" |
    sort -u >"$tmp/edges"
[ -n "${PF_CALLBACK_EDGES:-}" ] && cp "$tmp/edges" "$PF_CALLBACK_EDGES"

awk '{ k = $1 " " $2; calls[k] = calls[k] (calls[k] == "" ? "" : ", ") $3 }
     END { for (k in calls) {
               split(k, a, " "); back = a[2] " " a[1]
               if ((back in calls) && a[1] < a[2]) {
                   sa = a[1]; sub(/.*\//, "", sa); sb = a[2]; sub(/.*\//, "", sb)
                   print a[1] " <-> " a[2] ": " sa " calls " calls[k] "; " sb " calls " calls[back] } } }' \
    "$tmp/edges" | sort >"$tmp/pairs"
cat "$tmp/pairs"
[ ! -s "$tmp/pairs" ]
