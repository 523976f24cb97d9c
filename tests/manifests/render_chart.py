#!/usr/bin/env python3
"""Render a Helm chart's templates without helm, for the CI checks.

Implements only the Go-template subset the efa-preflight chart uses, and
fails loudly on anything else, so a template that would render differently
under helm cannot slip through:

  actions     {{ pipeline }}  {{- ... -}} (whitespace trim)  {{/* comment */}}
  control     if / else / end, with / else / end, range (over lists and maps,
              with "$v :=" or "$k, $v :=" declarations), define (in *.tpl)
  operands    .  .a.b  $  $.a.b  $var  $var.a  "string"  123  true false
  functions   include  toYaml  nindent  indent  quote  default  upper
              eq  ne  not
  pipelines   a | f x   (the left value becomes f's last argument)

Printing a missing value is an error (helm would print nothing), which
catches misspelled value names.

Usage: render_chart.py CHART_DIR [-f VALUES.yaml ...] [--name N]
                       [--namespace NS] [--notes | --print-values]
Writes the rendered manifests (NOTES.txt with --notes, the merged values
with --print-values) to stdout; exit 2 on a template error.
"""
import argparse
import json
import os
import re
import sys

import yaml


class TemplateError(Exception):
    pass


# ---------------------------------------------------------------- lexing

ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)


def lex(src, name):
    """Split into ("text", s) and ("action", s, line) tokens, applying the
    {{- and -}} whitespace trims."""
    tokens = []
    pos = 0
    trim_next = False
    for m in ACTION.finditer(src):
        text = src[pos:m.start()]
        if trim_next:
            text = text.lstrip(" \t\r\n")
        if m.group(1):
            text = text.rstrip(" \t\r\n")
        if text:
            tokens.append(("text", text))
        body = m.group(2).strip()
        line = src.count("\n", 0, m.start()) + 1
        if not (body.startswith("/*") and body.endswith("*/")):
            tokens.append(("action", body, "%s:%d" % (name, line)))
        trim_next = bool(m.group(3))
        pos = m.end()
    text = src[pos:]
    if trim_next:
        text = text.lstrip(" \t\r\n")
    if text:
        tokens.append(("text", text))
    return tokens


# --------------------------------------------------------------- parsing

def parse(tokens, defines):
    """Build a tree: lists of ("text", s) | ("out", pipe, where) |
    ("if"|"with", pipe, body, else_body, where) |
    ("range", vars, pipe, body, else_body, where)."""
    root = []
    stack = [(None, root)]   # (open node, list being filled)
    for tok in tokens:
        if tok[0] == "text":
            stack[-1][1].append(tok)
            continue
        body, where = tok[1], tok[2]
        word = body.split(None, 1)[0] if body else ""
        rest = body[len(word):].strip()
        if word in ("if", "with"):
            node = [word, rest, [], None, where]
            stack[-1][1].append(node)
            stack.append((node, node[2]))
        elif word == "range":
            decl, pipe = [], rest
            m = re.match(r"^(\$\w+)\s*(?:,\s*(\$\w+)\s*)?:=\s*(.*)$", rest, re.S)
            if m:
                decl = [v for v in (m.group(1), m.group(2)) if v]
                pipe = m.group(3)
            node = ["range", decl, pipe, [], None, where]
            stack[-1][1].append(node)
            stack.append((node, node[3]))
        elif word == "define":
            m = re.match(r'^"([^"]+)"$', rest)
            if not m or len(stack) != 1:
                raise TemplateError("%s: bad define" % where)
            node = ["define", m.group(1), [], where]
            stack.append((node, node[2]))
        elif word == "else":
            node = stack[-1][0]
            if node is None or rest:
                raise TemplateError("%s: unsupported else" % where)
            else_body = []
            if node[0] == "range":
                node[4] = else_body
            else:
                node[3] = else_body
            stack[-1] = (node, else_body)
        elif word == "end":
            if len(stack) == 1:
                raise TemplateError("%s: end without a block" % where)
            node = stack.pop()[0]
            if node[0] == "define":
                defines[node[1]] = node[2]
        elif word in ("template", "block", "break", "continue"):
            raise TemplateError("%s: '%s' is outside the supported subset"
                                % (where, word))
        else:
            stack[-1][1].append(["out", body, where])
    if len(stack) != 1:
        raise TemplateError("%s: block opened here is never closed"
                            % stack[-1][0][-1])
    return root


# ------------------------------------------------------------ evaluation

def truthy(v):
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return True


def go_str(v, where):
    if v is None:
        raise TemplateError("%s: prints a missing value" % where)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, (dict, list)):
        raise TemplateError("%s: prints a map or list (use toYaml)" % where)
    return str(v)


def to_yaml(v):
    if v is None:
        return "null"
    out = yaml.safe_dump(v, default_flow_style=False, sort_keys=True)
    if out.endswith("\n...\n"):
        out = out[:-5]
    return out.rstrip("\n")


def indent(n, s):
    pad = " " * n
    return pad + s.replace("\n", "\n" + pad)


class Renderer:
    def __init__(self, defines):
        self.defines = defines

    # Operands and pipelines.
    def split_words(self, s, where):
        words, i = [], 0
        while i < len(s):
            c = s[i]
            if c.isspace():
                i += 1
            elif c == '"':
                j = i + 1
                while j < len(s) and s[j] != '"':
                    j += 2 if s[j] == "\\" else 1
                if j >= len(s):
                    raise TemplateError("%s: unterminated string" % where)
                words.append(s[i:j + 1])
                i = j + 1
            elif c == "|":
                words.append("|")
                i += 1
            elif c in "()`":
                raise TemplateError("%s: '%s' is outside the supported subset"
                                    % (where, c))
            else:
                j = i
                while j < len(s) and not s[j].isspace() and s[j] != "|":
                    j += 1
                words.append(s[i:j])
                i = j
        return words

    def operand(self, w, dot, scope, where):
        if w.startswith('"'):
            return json.loads(w)
        if re.fullmatch(r"-?\d+", w):
            return int(w)
        if w in ("true", "false"):
            return w == "true"
        if w == "nil":
            return None
        if w == ".":
            return dot
        if w.startswith("."):
            return self.fields(dot, w[1:].split("."), where)
        if w.startswith("$"):
            name, _, path = w.partition(".")
            if name not in scope:
                raise TemplateError("%s: undefined variable %s" % (where, name))
            base = scope[name]
            return self.fields(base, path.split("."), where) if path else base
        raise TemplateError("%s: unknown function or operand '%s'" % (where, w))

    @staticmethod
    def fields(v, names, where):
        for i, n in enumerate(names):
            if v is None:
                raise TemplateError("%s: nil pointer evaluating .%s"
                                    % (where, ".".join(names[:i + 1])))
            if not isinstance(v, dict):
                raise TemplateError("%s: .%s of a non-map" % (where, n))
            v = v.get(n)
        return v

    FUNCS = {"include", "toYaml", "nindent", "indent", "quote", "default",
             "upper", "eq", "ne", "not"}

    def call(self, fn, args, where):
        def want(n):
            if len(args) != n:
                raise TemplateError("%s: %s takes %d arguments, got %d"
                                    % (where, fn, n, len(args)))
        if fn == "include":
            want(2)
            if args[0] not in self.defines:
                raise TemplateError("%s: no template named %r" % (where, args[0]))
            return self.render(self.defines[args[0]], args[1], {"$": args[1]})
        if fn == "toYaml":
            want(1)
            return to_yaml(args[0])
        if fn == "nindent":
            want(2)
            return "\n" + indent(args[0], go_str(args[1], where))
        if fn == "indent":
            want(2)
            return indent(args[0], go_str(args[1], where))
        if fn == "quote":
            want(1)
            return json.dumps(go_str(args[0], where))
        if fn == "default":
            want(2)
            return args[1] if truthy(args[1]) else args[0]
        if fn == "upper":
            want(1)
            return go_str(args[0], where).upper()
        if fn in ("eq", "ne"):
            want(2)
            return (args[0] == args[1]) == (fn == "eq")
        if fn == "not":
            want(1)
            return not truthy(args[0])
        raise TemplateError("%s: unknown function %s" % (where, fn))

    def pipeline(self, text, dot, scope, where):
        value, have_value = None, False
        cmds, cur = [], []
        for w in self.split_words(text, where):
            if w == "|":
                cmds.append(cur)
                cur = []
            else:
                cur.append(w)
        cmds.append(cur)
        for words in cmds:
            if not words:
                raise TemplateError("%s: empty command in pipeline" % where)
            if words[0] in self.FUNCS:
                args = [self.operand(w, dot, scope, where) for w in words[1:]]
                if have_value:
                    args.append(value)
                value = self.call(words[0], args, where)
            elif re.fullmatch(r"[A-Za-z_]\w*", words[0]) and \
                    words[0] not in ("true", "false", "nil"):
                raise TemplateError("%s: unknown function %s" % (where, words[0]))
            else:
                if len(words) != 1 or have_value:
                    raise TemplateError("%s: cannot apply arguments to %s"
                                        % (where, words[0]))
                value = self.operand(words[0], dot, scope, where)
            have_value = True
        return value

    # Tree walking.
    def render(self, nodes, dot, scope):
        out = []
        for node in nodes:
            kind = node[0]
            if kind == "text":
                out.append(node[1])
            elif kind == "out":
                out.append(go_str(self.pipeline(node[1], dot, scope, node[2]),
                                  node[2]))
            elif kind in ("if", "with"):
                v = self.pipeline(node[1], dot, scope, node[4])
                if truthy(v):
                    out.append(self.render(node[2], v if kind == "with" else dot,
                                           scope))
                elif node[3] is not None:
                    out.append(self.render(node[3], dot, scope))
            elif kind == "range":
                decl, where = node[1], node[5]
                v = self.pipeline(node[2], dot, scope, where)
                if isinstance(v, dict):
                    items = [(k, v[k]) for k in sorted(v)]
                elif isinstance(v, list):
                    items = list(enumerate(v))
                elif v is None:
                    items = []
                else:
                    raise TemplateError("%s: range over a scalar" % where)
                if not items and node[4] is not None:
                    out.append(self.render(node[4], dot, scope))
                for k, item in items:
                    inner = dict(scope)
                    if len(decl) == 1:
                        inner[decl[0]] = item
                    elif len(decl) == 2:
                        inner[decl[0]], inner[decl[1]] = k, item
                    out.append(self.render(node[3], item, inner))
        return "".join(out)


# ----------------------------------------------------------------- chart

def merge(base, over):
    """Deep-merge like helm -f: maps merge, anything else replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base.get(k), v) if k in base else v
        return out
    return over


def load_values(chart_dir, value_files=()):
    with open(os.path.join(chart_dir, "values.yaml")) as f:
        values = yaml.safe_load(f) or {}
    for vf in value_files:
        with open(vf) as f:
            values = merge(values, yaml.safe_load(f) or {})
    return values


def render_chart(chart_dir, value_files=(), name=None, namespace="default",
                 notes=False):
    with open(os.path.join(chart_dir, "Chart.yaml")) as f:
        chart = yaml.safe_load(f)
    values = load_values(chart_dir, value_files)
    ctx = {
        "Values": values,
        "Release": {"Name": name or chart["name"], "Namespace": namespace,
                    "Service": "Helm"},
        "Chart": {"Name": chart["name"], "Version": chart["version"],
                  "AppVersion": chart.get("appVersion", "")},
    }
    tdir = os.path.join(chart_dir, "templates")
    defines, trees = {}, []
    for fn in sorted(os.listdir(tdir)):
        with open(os.path.join(tdir, fn)) as f:
            tree = parse(lex(f.read(), "templates/" + fn), defines)
        if fn.startswith("_"):
            if any(n[0] != "text" or n[1].strip() for n in tree):
                raise TemplateError("templates/%s: only defines belong in a "
                                    "partial" % fn)
            continue
        if (fn == "NOTES.txt") == notes and (notes or fn.endswith(".yaml")):
            trees.append((fn, tree))
    r = Renderer(defines)
    out = []
    for fn, tree in trees:
        text = r.render(tree, ctx, {"$": ctx})
        if notes:
            out.append(text)
        elif text.strip():
            out.append("---\n# Source: %s/templates/%s\n%s\n"
                       % (chart["name"], fn, text.strip("\n")))
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chart")
    ap.add_argument("-f", "--values", action="append", default=[])
    ap.add_argument("--name")
    ap.add_argument("--namespace", default="default")
    ap.add_argument("--notes", action="store_true")
    ap.add_argument("--print-values", action="store_true",
                    help="print the merged values instead of rendering")
    a = ap.parse_args()
    try:
        if a.print_values:
            sys.stdout.write(yaml.safe_dump(load_values(a.chart, a.values),
                                            sort_keys=True))
        else:
            sys.stdout.write(render_chart(a.chart, a.values, a.name,
                                          a.namespace, a.notes))
    except (TemplateError, OSError, yaml.YAMLError) as e:
        print("render_chart: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
