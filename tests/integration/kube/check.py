#!/usr/bin/env python3
"""check.py STATE_FILE CODE [AUDIT_LOG]: run CODE (Python statements) on a
cluster state (the fake's GET /state or tests/kube_real/kr.py state: s, a
dict of nodes, events ...) with helpers; a failed assert prints
"FAIL: ..." and exits 1. Shared by kube/lib.sh (kube_check),
tests/fakes/apiserver/lib.sh (pfk8s_check) and tests/kube_real/lib.sh
(kr_check).

  node(n) labels(n) cond(n, type) events(n) taints(n)
  node_rows(count)  (i, "node-i", labels) for the first count nodes
  refused()  the agents' requests the server answered with 400 or more,
             as (method or verb, path, code): the fake's request log (those
             with a bearer token), or the real server's audit log (service
             accounts' requests)
  writes(ok=False)  the agents' writes, as (METHOD, path without its
             query), in the order the server answered them (ok: only those
             answered 2xx): the fake's request log (those with a bearer
             token) or the real server's audit log
  gets(path) the times (epoch seconds) the agents' GETs of path (no
             query) came in: the fake's arrivals or the audit log's
             requestReceivedTimestamp
  audit()    the audit log's service-account events (real server only)
"""
import json
import re  # noqa: F401 (for CODE)
import sys

s = json.load(open(sys.argv[1]))
AUDIT = sys.argv[3] if len(sys.argv) > 3 else None


def node(n):
    return next(x for x in s['nodes'] if x['metadata']['name'] == n)


def labels(n):
    return node(n)['metadata'].get('labels', {})


def cond(n, t):
    for c in node(n).get('status', {}).get('conditions', []):
        if c['type'] == t:
            return c
    return None


def events(n):
    return [e for e in s['events'] if e['involvedObject'].get('kind', 'Node') == 'Node'
            and e['involvedObject']['name'] == n]


def taints(n):
    return node(n).get('spec', {}).get('taints', [])


def node_rows(count):
    """(i, "node-i", its labels) for node-0 .. node-(count-1)."""
    return [(i, "node-%d" % i, labels("node-%d" % i)) for i in range(count)]


def audit():
    out = []
    for line in open(AUDIT):
        e = json.loads(line)
        if e['user']['username'].startswith('system:serviceaccount:'):
            out.append(e)
    return out


def refused():
    if AUDIT:
        return [(x['verb'], x['requestURI'], x['responseStatus']['code'])
                for x in audit() if x['stage'] == 'ResponseComplete'
                and x['responseStatus']['code'] >= 400]
    # The fake's: those with a token (the test's own probe goes without).
    return [(r['method'], r['path'], r['status']) for r in s['requests']
            if r['status'] >= 400 and r.get('who', '-') != '-']


VERB_METHOD = {'create': 'POST', 'update': 'PUT', 'patch': 'PATCH',
               'delete': 'DELETE', 'deletecollection': 'DELETE'}


def writes(ok=False):
    if AUDIT:
        return [(VERB_METHOD[x['verb']], x['requestURI'].split('?')[0])
                for x in audit() if x['stage'] == 'ResponseComplete'
                and x['verb'] in VERB_METHOD
                and not (ok and x['responseStatus']['code'] >= 300)]
    return [(r['method'], r['path'].split('?')[0]) for r in s['requests']
            if r['method'] not in ('GET', 'HEAD') and r.get('who', '-') != '-'
            and not (ok and r['status'] >= 300)]


def gets(path):
    if AUDIT:
        import datetime
        return [datetime.datetime.strptime(x['requestReceivedTimestamp'].rstrip('Z').ljust(26, '0')[:26],
                                           '%Y-%m-%dT%H:%M:%S.%f')
                .replace(tzinfo=datetime.timezone.utc).timestamp()
                for x in audit() if x['stage'] == 'ResponseComplete'
                and x['verb'] == 'get' and x['requestURI'].split('?')[0] == path]
    return [a['t'] for a in s['arrivals']
            if a['method'] == 'GET' and a['path'].split('?')[0] == path]


try:
    exec(sys.argv[2])
except AssertionError as e:
    print("FAIL:", e)
    sys.exit(1)
