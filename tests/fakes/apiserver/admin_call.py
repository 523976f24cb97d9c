#!/usr/bin/env python3
"""Tiny HTTP(S) client for the k8s tests (so they need no curl binary).

admin_call.py METHOD URL [--data JSON] [--cacert FILE] [--token-file FILE]
              [--ctype TYPE] [--status]
Prints the body (or, with --status, the HTTP status; 000 when no answer).
Exits 1 on a transport error or a status >= 400 unless --status is given.
"""
import argparse
import ssl
import sys
import urllib.error
import urllib.request

ap = argparse.ArgumentParser()
ap.add_argument('method')
ap.add_argument('url')
ap.add_argument('--data')
ap.add_argument('--cacert')
ap.add_argument('--token-file', help='a bearer token to send')
ap.add_argument('--ctype', default='application/json', help='Content-Type')
ap.add_argument('--status', action='store_true')
ap.add_argument('--timeout', type=float, default=5)
a = ap.parse_args()

ctx = ssl.create_default_context(cafile=a.cacert) if a.cacert else None
headers = {'Content-Type': a.ctype}
if a.token_file:
    with open(a.token_file) as f:
        headers['Authorization'] = 'Bearer ' + f.read().strip()
req = urllib.request.Request(a.url, method=a.method,
                             data=a.data.encode() if a.data is not None else None,
                             headers=headers)
try:
    with urllib.request.urlopen(req, timeout=a.timeout, context=ctx) as r:
        code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
except (urllib.error.URLError, OSError) as e:
    if a.status:
        print("000")
        sys.exit(0)
    sys.stderr.write("admin_call.py: %s %s: %s\n" % (a.method, a.url, e))
    sys.exit(1)
if a.status:
    print(code)
    sys.exit(0)
sys.stdout.write(body.decode())
sys.exit(1 if code >= 400 else 0)
