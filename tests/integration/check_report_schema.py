#!/usr/bin/env python3
"""Validate efa-preflight reports against docs/reference/report.schema.json.

  check_report_schema.py REPORT.json...

Strict: the published schema admits keys it does not list (within v1 fields
are only added), this check admits none, so a field the agent writes that
the schema (and docs/reference/report.md) does not describe fails. Prints
one line per error (file: path: message); exit 0 all valid, 1 not, 77 when
python3-jsonschema (scripts/packages.txt) is missing.
"""
import copy
import json
import os
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:
    print("skip: python3-jsonschema is not installed (make deps)")
    sys.exit(77)

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "docs", "reference", "report.schema.json")


def strict(s):
    if isinstance(s, dict):
        if "properties" in s and "additionalProperties" not in s:
            s["additionalProperties"] = False
        for v in s.values():
            strict(v)
    elif isinstance(s, list):
        for v in s:
            strict(v)
    return s


def main():
    schema = json.load(open(SCHEMA))
    Draft202012Validator.check_schema(schema)
    v = Draft202012Validator(strict(copy.deepcopy(schema)))
    bad = 0
    for path in sys.argv[1:]:
        errors = sorted(v.iter_errors(json.load(open(path))),
                        key=lambda e: list(map(str, e.absolute_path)))
        for e in errors:
            print("%s: %s: %s" % (os.path.basename(path),
                                  "/".join(map(str, e.absolute_path)) or "(top)",
                                  e.message[:300]))
        bad += len(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
