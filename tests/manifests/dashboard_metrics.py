#!/usr/bin/env python3
"""Check a Grafana dashboard's PromQL against the metric names the agent
writes.

Usage: dashboard_metrics.py DASHBOARD.json METRICS.prom

Every query of the dashboard (panel targets' expr, templating queries) is
reduced to the metric names it selects: string literals, label matchers
{...}, range and subquery brackets [...], grouping lists (by, without, on,
ignoring, group_left, group_right), Grafana variables, numbers, keywords
and function calls are removed; each identifier left is a metric name.
Each must be a family of METRICS.prom (its # TYPE lines: what the agent
wrote) with at least one sample there: a family the run declared but gave
no value selects nothing on a dashboard either. No query, variable or
legend may key on the label instance: on the textfile path it is
node-exporter's address, on the Pushgateway path the node; the agent's own
label node is the same on both. Prints one line per query; exit 1 when a
name is unknown or has no sample, when a query selects no metric at all,
when one keys on instance, or when the dashboard has no query.
"""
import json
import re
import sys

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "offset", "and", "or", "unless", "inf", "nan", "atan2"}
GROUPING = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)"


def walk(dash):
    """(where, target) of every panel target, nested panels too, and
    (where, query) of every query variable, as (targets, variables)."""
    targets, variables = [], []

    def panels(ps, where):
        for p in ps:
            title = "%s, panel '%s'" % (where, p.get("title", p.get("id")))
            for t in p.get("targets", []):
                targets.append(("%s target %s" % (title, t.get("refId")), t))
            panels(p.get("panels", []), title)

    panels(dash.get("panels", []), "dashboard")
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query":
            variables.append(("variable $%s" % v["name"], q))
    return targets, variables


def queries(dash):
    """(where, expr) for every PromQL query of the dashboard."""
    targets, variables = walk(dash)
    return ([(where, t["expr"]) for where, t in targets if t.get("expr")] +
            [(where, q) for where, q in variables if q])


def instance_keys(dash):
    """(where, text) of every query, variable and legend that names the
    label instance."""
    targets, variables = walk(dash)
    out = [("%s %s" % (where, field), t[field]) for where, t in targets
           for field in ("expr", "legendFormat")
           if re.search(r"\binstance\b", t.get(field) or "")]
    return out + [(where, q) for where, q in variables
                  if re.search(r"\binstance\b", q or "")]


def metric_names(expr):
    """The metric names a PromQL expression selects (Grafana's label_values
    and query_result wrappers included)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    s = re.sub(r"\$\{[^}]*\}|\$\w+", "", s)
    s = re.sub(r"\{[^{}]*\}", " ", s)
    s = re.sub(r"\[[^\[\]]*\]", " ", s)
    s = re.sub(GROUPING, " ", s)
    # label_values(metric, label): the second argument is a label.
    s = re.sub(r"\blabel_values\s*\(([^,()]*),[^()]*\)", r"(\1)", s)
    names = []
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", s):
        word = m.group(0)
        rest = s[m.end():].lstrip()
        if rest.startswith("("):             # a function
            continue
        if word.lower() in KEYWORDS:
            continue
        if re.fullmatch(r"\d+[smhdwy]", word) or (m.start() > 0 and s[m.start() - 1].isdigit()):
            continue                          # a duration or exponent tail
        names.append(word)
    return names


def main():
    dash = json.load(open(sys.argv[1]))
    prom = open(sys.argv[2]).read()
    written = set(re.findall(r"^# TYPE (\S+) \w+$", prom, re.M))
    sampled = set(re.findall(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", prom, re.M))
    qs = queries(dash)
    bad = 0
    used = set()
    if not qs:
        print("FAIL the dashboard has no PromQL query")
        return 1
    for where, expr in qs:
        names = metric_names(expr)
        used.update(names)
        unknown = [n for n in names if n not in written]
        if not names:
            print("FAIL %s selects no metric: %s" % (where, expr))
            bad += 1
        elif unknown:
            print("FAIL %s uses %s, which the agent does not write: %s"
                  % (where, ", ".join(unknown), expr))
            bad += 1
        elif [n for n in names if n not in sampled]:
            print("FAIL %s uses %s, of which the run wrote no sample: %s"
                  % (where, ", ".join(n for n in names if n not in sampled), expr))
            bad += 1
        else:
            print("ok   %s: %s" % (where, ", ".join(sorted(set(names)))))
    for where, text in instance_keys(dash):
        print("FAIL %s keys on the label instance (node-exporter's address on the "
              "textfile path); use node: %s" % (where, text))
        bad += 1
    print("%d queries, %d metric names used, all among the %d the agent writes, "
          "each with samples" % (len(qs), len(used), len(written)) if not bad else
          "%d queries, %d failed" % (len(qs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
