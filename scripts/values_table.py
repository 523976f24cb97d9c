#!/usr/bin/env python3
"""The chart's values table, docs/reference/values.md, from
charts/efa-preflight/values.yaml (keys, defaults, the comments above each
key) and values.schema.json (types, allowed values).

  scripts/values_table.py            print the page
  scripts/values_table.py --write    write docs/reference/values.md
  scripts/values_table.py --check    exit 1 when the page is not current

Every key of the schema must be in values.yaml with a comment somewhere on
its path (a key nobody explains is an error), and every key of values.yaml
in the schema: the table documents every value there is."""
import json
import os
import re
import sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CHART = os.path.join(ROOT, "charts", "efa-preflight")
PAGE = os.path.join(ROOT, "docs", "reference", "values.md")

KEY = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_.-]*):(?:\s+(.*?))?\s*$")


def comments(text):
    """{dotted path: comment} from values.yaml: the comment lines right
    above a key (same indentation), and the one after its value."""
    out, stack, pending = {}, [], []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            pending.append(s.lstrip("#").strip())
            continue
        if not s:
            pending = []
            continue
        m = KEY.match(line)
        if not m or s.startswith("-"):
            pending = []
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3) or ""
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key))
        path = ".".join(k for _, k in stack)
        note = " ".join(p for p in pending if p)
        m2 = re.match(r'^("[^"]*"|\'[^\']*\'|[^#]*?)\s*(?:#\s*(.*))?$', rest)
        if m2 and m2.group(2):
            note = (note + " " + m2.group(2).strip()).strip()
        if note:
            out[path] = note
        pending = []
    return out


def resolve(schema, node):
    while "$ref" in node:
        node = schema["definitions"][node["$ref"].split("/")[-1]]
    if "allOf" in node and len(node) <= 2:
        merged = {}
        for part in node["allOf"]:
            merged.update(resolve(schema, part))
        merged.update({k: v for k, v in node.items() if k != "allOf"})
        return merged
    return node


def type_of(schema, node):
    node = resolve(schema, node)
    if "enum" in node:
        return " \\| ".join("`%s`" % v for v in node["enum"])
    t = node.get("type", "any")
    return " \\| ".join(t) if isinstance(t, list) else t


def fmt(v):
    s = json.dumps(v, separators=(", ", ": "))
    if len(s) > 60:
        if isinstance(v, list):
            return "%d entries (values.yaml)" % len(v)
        return "see values.yaml"
    return "`%s`" % s.replace("|", "\\|")


seen = set()


def rows(schema, node, values, notes, path, errs):
    """Table rows under path: an object the schema lists properties of is
    descended into (maps of user keys, lists and scalars are leaves)."""
    node = resolve(schema, node)
    props = node.get("properties")
    if node.get("type") == "object" and props and isinstance(values, dict) and values:
        out = []
        for k in values:
            if k not in props:
                errs.append("%s%s is in values.yaml but not in values.schema.json" % (path, k))
        for k in props:
            p = path + k
            if k not in values:
                if k in node.get("required", []):
                    errs.append("%s is required by the schema but not in values.yaml" % p)
                continue
            out += rows(schema, props[k], values[k], notes, p + ".", errs)
        for k in node.get("required", []):
            if k not in props:
                errs.append("%s%s is required but not described" % (path, k))
        return out
    key = path.rstrip(".")
    parts = key.split(".")
    note = ""
    for i in range(len(parts), 0, -1):         # the nearest comment on the path
        note = notes.get(".".join(parts[:i]), "")
        if note:
            if i < len(parts):      # explained with its parent, once
                parent = ".".join(parts[:i])
                note = "See `%s` above." % parent if parent in seen else note
                seen.add(parent)
            break
    if not note:
        errs.append("%s has no comment in values.yaml" % key)
    note = note.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    return [(key, type_of(schema, node), fmt(values), note)]


def page():
    text = open(os.path.join(CHART, "values.yaml")).read()
    values = yaml.safe_load(text)
    schema = json.load(open(os.path.join(CHART, "values.schema.json")))
    errs = []
    table = rows(schema, schema, values, comments(text), "", errs)
    if errs:
        for e in errs:
            print("values_table: " + e, file=sys.stderr)
        sys.exit(2)
    lines = [
        "# Chart values",
        "",
        "Every value of the `efa-preflight` chart (`charts/efa-preflight`), its",
        "type and default. Generated by `scripts/values_table.py --write` from",
        "`values.yaml` (the comments above each key) and `values.schema.json`,",
        "which Helm checks every install against: a misspelt key is refused.",
        "`tests/integration/test_values_table.sh` fails when this page is stale.",
        "Installing with these: [docs/install/helm.md](../install/helm.md).",
        "",
        "| Key | Type | Default | Description |",
        "|---|---|---|---|",
    ]
    lines += ["| `%s` | %s | %s | %s |" % r for r in table]
    return "\n".join(lines) + "\n"


def main():
    out = page()
    if "--write" in sys.argv[1:]:
        os.makedirs(os.path.dirname(PAGE), exist_ok=True)
        open(PAGE, "w").write(out)
    elif "--check" in sys.argv[1:]:
        have = open(PAGE).read() if os.path.exists(PAGE) else ""
        if have != out:
            print("docs/reference/values.md is stale: run scripts/values_table.py --write")
            return 1
        print("docs/reference/values.md is current (%d values)" % out.count("\n| `"))
    else:
        sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
