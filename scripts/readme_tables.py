#!/usr/bin/env python3
"""Print the generated tables of docs/reference/ (markdown).

  readme_tables.py labels [ROOT]        the labels the agent writes, from
                                        agent/publish/node_build.c's table
  readme_tables.py rbac RENDERED.yaml   the RBAC the chart grants, from its
                                        render (default values, release
                                        efa-preflight); each rule's "why"
                                        is its "# why:" comment in
                                        templates/rbac.yaml
  readme_tables.py catalog BINARY       every floor point of the embedded
                                        catalog with its message size and
                                        source (`BINARY catalog --json`)

docs/reference/labels.md, rbac.md and catalog.md hold them between
<!-- NAME-table --> and <!-- end NAME-table --> markers;
tests/integration/test_readme_tables.sh checks they are current.
"""
import os
import re
import sys

import yaml


def c_strings(text):
    """The C string literals of text, adjacent ones joined, in order."""
    out = []
    for lit in re.finditer(r'"((?:[^"\\]|\\.)*)"|(\btrue\b|\bfalse\b)|(\})', text):
        if lit.group(3):
            out.append(None)               # end of an entry
        elif lit.group(2):
            out.append(lit.group(2) == "true")
        else:
            s = lit.group(1).replace('\\"', '"').replace("\\\\", "\\")
            if out and isinstance(out[-1], str) and text[prev_end:lit.start()].strip() == "":
                out[-1] += s
            else:
                out.append(s)
        prev_end = lit.end()
    return out


def labels(root):
    src = open(os.path.join(root, "agent/publish/node_build.c")).read()
    m = re.search(r"\} our_labels\[\] = \{(.*?)\n\};", src, re.S)
    if not m:
        sys.exit("agent/publish/node_build.c: no our_labels[] table")
    rows, cur = [], []
    for tok in c_strings(m.group(1)):
        if tok is None:
            if cur:
                rows.append(cur)
            cur = []
        else:
            cur.append(tok)
    print("| label | value | meaning |")
    print("|---|---|---|")
    for r in rows:
        if len(r) != 4:
            sys.exit("our_labels entry %r: want name, values, meaning, verdict" % r)
        name, values, meaning, _ = r
        print("| `%s` | %s | %s |" % (name, values.replace("|", "\\|"),
                                     meaning.replace("|", "\\|")))


def rules_with_why(doc_text):
    """(rule, why) for each rule of one rendered Role/ClusterRole."""
    obj = yaml.safe_load(doc_text)
    whys, pending = [], None
    for line in doc_text.splitlines():
        m = re.match(r"\s*# why: (.*)", line)
        if m:
            pending = m.group(1).strip()
        elif re.match(r"\s*- apiGroups:", line):
            whys.append(pending)
            pending = None
    rules = obj.get("rules", [])
    if len(whys) != len(rules):
        whys = [None] * len(rules)
    return obj, list(zip(rules, whys))


def rbac(rendered):
    text = open(rendered).read()
    cluster, release, job = [], [], []
    for doc in re.split(r"(?m)^---\s*$", text):
        if not re.search(r"(?m)^kind: (ClusterRole|Role)$", doc):
            continue
        obj, rules = rules_with_why(doc)
        name = obj["metadata"]["name"]
        if obj["kind"] == "ClusterRole":
            cluster = rules
        elif name.endswith("-job"):
            if not job:
                job = rules
        else:
            release += rules

    def resource(r):
        names = " (%s)" % ", ".join("`%s`" % n for n in r["resourceNames"]) \
            if r.get("resourceNames") else ""
        return ", ".join("`%s`" % (res if g == "" else "%s/%s" % (g, res))
                         for g in r["apiGroups"] for res in r["resources"]) + names

    def key(r):
        return (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"]))

    rows = [("ClusterRole", r, w) for r, w in cluster]
    job_keys = {key(r) for r, _ in job}
    rel_keys = {key(r) for r, _ in release}
    for r, w in release:
        scope = ("Role (release and job namespaces)" if key(r) in job_keys
                 else "Role (release namespace only)")
        rows.append((scope, r, w))
    for r, w in job:
        if key(r) not in rel_keys:
            rows.append(("Role (job namespaces only)", r, w))
    print("| scope | resource | verbs | why |")
    print("|---|---|---|---|")
    for scope, r, why in rows:
        if not why:
            sys.exit("rule %s of %s has no '# why:' comment in the chart" % (r, scope))
        print("| %s | %s | %s | %s |" % (scope, resource(r), ", ".join(r["verbs"]),
                                         why.replace("|", "\\|")))


def size(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "largest swept" if n == 0 else "%d B" % n


def catalog(binary):
    import json
    import subprocess
    doc = json.loads(subprocess.run([binary, "catalog", "--json"], check=True,
                                    stdout=subprocess.PIPE).stdout)
    cell = lambda t: str(t).replace("|", "\\|")
    by_size = lambda f: ", ".join("%s: %g" % (size(p["bytes"]), p["busbw_gbps"])
                                  for p in f.get("sizes") or [])
    print("| type | nodes | floor (GB/s) | from | by size (GB/s) | verified | source |")
    print("|---|---:|---:|---|---|---|---|")
    none = []
    for i in doc["instances"]:
        if not i["floors"]:
            none.append(i["name"])
        for f in i["floors"]:
            print("| %s | %d | %g | %s | %s | %s | %s |" % (
                i["name"], f["nodes"], f["busbw_gbps"], size(f["from_bytes"]),
                by_size(f), "yes" if f["verified"] else "no", cell(f["source"] or "")))
    print()
    print("Host engine (`host_floors`, by the NICs its ring striped over, from 2 nodes):")
    print()
    print("| type | NICs | floor (GB/s) | from | verified | source |")
    print("|---|---:|---:|---|---|---|")
    for i in doc["instances"]:
        for f in i["host_floors"]:
            print("| %s | %d | %g | %s | %s | %s |" % (
                i["name"], f["nics"], f["busbw_gbps"], size(f["from_bytes"]),
                "yes" if f["verified"] else "no", cell(f["source"] or "")))
    print()
    print("No NCCL floor: %s." % ", ".join(none))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "labels":
        labels(sys.argv[2] if len(sys.argv) > 2 else ".")
    elif len(sys.argv) == 3 and sys.argv[1] == "rbac":
        rbac(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "catalog":
        catalog(sys.argv[2])
    else:
        sys.exit(__doc__)
