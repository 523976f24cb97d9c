#!/usr/bin/env python3
"""A fake Kubernetes API server for efa-preflight's tests (standard library only).

Serves HTTPS with a certificate the test generates, checks bearer tokens, and
implements the handful of resources the agent uses with real semantics:

  pods    GET one, list (labelSelector, limit/continue paging; every namespace
          with fieldSelector spec.nodeName=), watch stream
          (resourceVersion, allowWatchBookmarks, timeoutSeconds)
  nodes   GET one / list (labelSelector, limit/continue paging); PATCH with merge-patch (RFC 7386) or
          strategic-merge-patch (conditions merged by type, taints replaced);
          nodes/{name}/status; optimistic concurrency on metadata.resourceVersion
  events  POST (validated: a Node's Event only in "default", 422 elsewhere), list
  jobs    GET one (batch/v1)
  leases  coordination.k8s.io/v1: GET one, POST (409 AlreadyExists), PUT
          (resourceVersion required, 409 on a stale one, create when absent
          whatever resourceVersion it carries, as Store.Update does for a
          strategy that allows create on update), DELETE; spec validated
  configmaps  GET one, POST (409 AlreadyExists), PUT (409 on a stale
          resourceVersion, unconditional without one, 404 when absent: the
          ConfigMap strategy does not create on update), DELETE; name and
          data keys validated (422)

Label keys/values are validated (422 with a Status body). Faults are rules
(JSON list) that match a method + path regex and inject latency, an HTTP
status (429 + Retry-After, 500, 409, 410 ...), an ERROR event in a watch, a
connection reset, or ("reply_lost") a request carried out whose answer is
replaced by a reset, as when a proxy drops the reply to a POST that landed,
or ("reply_latency_ms") a request carried out at once whose answer is held
back (two readers of one version then write on it: a real race). Rules come from --faults FILE or POST /faults on the admin
port, which also serves GET /state (objects, answered requests and, as
"arrivals", every request when it came in), GET /log, POST /objects, POST /tokens,
DELETE /objects. Every change is also written to --dump FILE (JSON).
The request log records, per request, the response body bytes sent (a watch:
every event line) and "who": a short hash of the bearer token, as an audit
log names the user, so a test can count one agent's requests and bytes.

Tokens (--tokens FILE, JSON {"token": "admin" | "read" | "none"}): unknown or
missing token -> 401, "none" -> 403 everywhere, "read" -> 403 on writes.
"""
import argparse
import base64
import copy
import hashlib
import json
import os
import re
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LABEL_NAME = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')
DNS_SUB = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
RFC3339 = re.compile(r'^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$')


def now_rfc3339():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason,
            "code": code}


def label_key_error(k):
    if not isinstance(k, str):
        return "label key must be a string"
    if '/' in k:
        prefix, name = k.split('/', 1)
        if not prefix or len(prefix) > 253 or not DNS_SUB.match(prefix):
            return "prefix part of %r must be a DNS subdomain" % k
    else:
        name = k
    if not name or len(name) > 63 or not LABEL_NAME.match(name):
        return "name part of %r must be <= 63 alphanumerics, '-', '_' or '.'" % k
    return None


def label_value_error(k, v):
    if not isinstance(v, str):
        return "label %r: value must be a string" % k
    if v == '':
        return None
    if len(v) > 63 or not LABEL_NAME.match(v):
        return ("label %r: invalid value %r: a valid label must be an empty "
                "string or consist of alphanumeric characters, '-', '_' or "
                "'.', and must start and end with an alphanumeric character"
                % (k, v))
    return None


def merge_patch(target, patch, merge_keys=None, path=()):
    """RFC 7386. With merge_keys, a strategic merge patch: the lists at the
    paths it names merged by their key (an item {"$patch": "delete"}
    removes), its $setElementOrder and $retainKeys directives passed over."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if merge_keys is not None and (k.startswith('$setElementOrder')
                                       or k == '$retainKeys'):
            continue
        key_path = path + (k,)
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and key_path in (merge_keys or {}):
            out[k] = merge_list(out.get(k) or [], v, merge_keys[key_path],
                                key_path)
        else:
            out[k] = merge_patch(out.get(k), v, merge_keys, key_path)
    return out


def merge_list(cur, items, mk, key_path):
    """A strategic merge of a list whose items are keyed by mk."""
    cur = [copy.deepcopy(x) for x in cur]
    for item in items:
        if not isinstance(item, dict) or mk not in item:
            raise ValueError("%s: list item without merge key %r"
                             % ('.'.join(key_path), mk))
        idx = next((i for i, x in enumerate(cur) if x.get(mk) == item[mk]),
                   None)
        if item.get('$patch') == 'delete':
            if idx is not None:
                cur.pop(idx)
            continue
        if idx is None:
            cur.append(copy.deepcopy(item))
        else:
            cur[idx] = merge_patch(cur[idx], item)
    return cur


# Lists merged by a key under strategic merge (as the Node types declare);
# every other list is replaced.
SMP_MERGE_KEYS = {("status", "conditions"): "type",
                  ("status", "addresses"): "type"}


def strategic_patch(target, patch):
    return merge_patch(target, patch, SMP_MERGE_KEYS)


def parse_selector(sel):
    """Equality-based selectors: k=v, k==v, k!=v, k, !k."""
    reqs = []
    if not sel:
        return reqs
    for part in sel.split(','):
        part = part.strip()
        if not part:
            continue
        if '!=' in part:
            k, v = part.split('!=', 1)
            reqs.append(('ne', k.strip(), v.strip()))
        elif '==' in part:
            k, v = part.split('==', 1)
            reqs.append(('eq', k.strip(), v.strip()))
        elif '=' in part:
            k, v = part.split('=', 1)
            reqs.append(('eq', k.strip(), v.strip()))
        elif part.startswith('!'):
            reqs.append(('absent', part[1:].strip(), None))
        else:
            reqs.append(('exists', part, None))
    for _, k, _ in reqs:
        if label_key_error(k):
            raise ValueError("invalid label selector %r" % sel)
    return reqs


def selector_matches(reqs, obj):
    labels = obj.get('metadata', {}).get('labels') or {}
    for op, k, v in reqs:
        if op == 'eq' and labels.get(k) != v:
            return False
        if op == 'ne' and labels.get(k) == v:
            return False
        if op == 'exists' and k not in labels:
            return False
        if op == 'absent' and k in labels:
            return False
    return True


class Store:
    """All objects plus an event log for watches; one lock guards it all."""

    def __init__(self, dump_path):
        self.lock = threading.Condition()
        self.rv = 100
        self.pods = {}      # (ns, name) -> obj
        self.nodes = {}     # name -> obj
        self.jobs = {}      # (ns, name) -> obj
        self.leases = {}    # (ns, name) -> obj
        self.configmaps = {}  # (ns, name) -> obj
        self.events = []    # list of obj
        self.log = []       # (rv, type, obj) for pod watches
        self.log_floor = self.rv
        self.tokens = {}
        self.faults = []
        self.requests = []
        self.arrivals = []  # every API request as it comes in, before any
        # injected latency: lets a test act while one is in flight
        self.dump_path = dump_path
        self.uid = 0

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def new_uid(self):
        self.uid += 1
        return "00000000-0000-4000-8000-%012d" % self.uid

    def stamp(self, obj):
        md = obj.setdefault('metadata', {})
        md['resourceVersion'] = self.next_rv()
        md.setdefault('uid', self.new_uid())
        md.setdefault('creationTimestamp', now_rfc3339())
        return obj

    def put(self, obj):
        kind = obj.get('kind')
        md = obj.get('metadata', {})
        name, ns = md.get('name'), md.get('namespace', 'default')
        if kind == 'Pod':
            md['namespace'] = ns
            typ = 'MODIFIED' if (ns, name) in self.pods else 'ADDED'
            self.pods[(ns, name)] = self.stamp(obj)
            self.log.append((self.rv, typ, copy.deepcopy(obj)))
        elif kind == 'Node':
            self.nodes[name] = self.stamp(obj)
        elif kind == 'Job':
            md['namespace'] = ns
            self.jobs[(ns, name)] = self.stamp(obj)
        elif kind == 'Lease':
            md['namespace'] = ns
            self.leases[(ns, name)] = self.stamp(obj)
        elif kind == 'ConfigMap':
            md['namespace'] = ns
            self.configmaps[(ns, name)] = self.stamp(obj)
        else:
            raise ValueError("unsupported kind %r" % kind)
        self.lock.notify_all()

    def delete(self, kind, ns, name):
        if kind == 'Pod' and (ns, name) in self.pods:
            obj = self.pods.pop((ns, name))
            self.next_rv()
            obj['metadata']['resourceVersion'] = str(self.rv)
            self.log.append((self.rv, 'DELETED', obj))
        elif kind == 'Node':
            self.nodes.pop(name, None)
        elif kind == 'Lease':
            self.leases.pop((ns, name), None)
        elif kind == 'ConfigMap':
            self.configmaps.pop((ns, name), None)
        self.lock.notify_all()

    def snapshot(self):
        return {"resourceVersion": str(self.rv),
                "pods": list(self.pods.values()),
                "nodes": list(self.nodes.values()),
                "jobs": list(self.jobs.values()),
                "leases": list(self.leases.values()),
                "configmaps": list(self.configmaps.values()),
                "events": self.events,
                "requests": self.requests,
                "arrivals": self.arrivals}

    def dump(self):
        if not self.dump_path:
            return
        tmp = self.dump_path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(self.snapshot(), f, indent=1, sort_keys=True)
        os.replace(tmp, self.dump_path)

    def take_fault(self, method, path, query):
        """First live rule matching this request; consumes one use."""
        for r in self.faults:
            if r.get('count', 1) <= 0:
                continue
            if r.get('method') and r['method'] != method:
                continue
            if r.get('path') and not re.search(r['path'], path):
                continue
            if r.get('query') and r['query'] not in query:
                continue
            if r.get('skip', 0) > 0:
                r['skip'] -= 1
                continue
            r['count'] = r.get('count', 1) - 1
            r['hits'] = r.get('hits', 0) + 1
            return dict(r)
        return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'fake-apiserver/1'

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake-apiserver: " + fmt % args + "\n")

    # -------------------------------------------------------------- replies
    def send_json(self, code, obj, extra=None):
        if getattr(self, 'reply_latency', 0):
            time.sleep(self.reply_latency / 1000.0)
            self.reply_latency = 0
        if getattr(self, 'lose_reply', False):
            self.lose_reply = False
            return self.reset_connection()
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.record(code, len(data))

    def fail(self, code, reason, message, extra=None):
        self.send_json(code, status_body(code, reason, message), extra)

    def send_found(self, obj, what):
        """obj, or 404 naming what was not found (e.g. 'pods "x"')."""
        if not obj:
            return self.fail(404, 'NotFound', '%s not found' % what)
        return self.send_json(200, obj)

    def record(self, code, nbytes=0):
        """One line of the request log; a watch adds its events' bytes to
        the returned entry as it sends them."""
        st = self.server.store
        tok = getattr(self, 'token', None)
        who = hashlib.sha256(tok.encode()).hexdigest()[:12] if tok else '-'
        entry = {"method": self.command, "path": self.path, "status": code,
                 "auth": self.auth_class, "who": who, "bytes": nbytes,
                 "t": round(time.time(), 3)}
        with st.lock:
            st.requests.append(entry)
        return entry

    def reset_connection(self):
        # RST instead of FIN: the client sees "connection reset by peer".
        self.record(0)
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack('ii', 1, 0))
        except OSError:
            pass
        try:
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True

    def read_body(self):
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n) if n > 0 else b''

    # ----------------------------------------------------------- dispatch
    def do_GET(self):
        self.handle_api('GET')

    def do_PATCH(self):
        self.handle_api('PATCH')

    def do_POST(self):
        self.handle_api('POST')

    def do_PUT(self):
        self.handle_api('PUT')

    def do_DELETE(self):
        self.handle_api('DELETE')

    def handle_api(self, method):
        self.auth_class = '-'
        self.token = None
        self.lose_reply = False
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, urllib.parse.parse_qs(url.query)
        q = {k: v[0] for k, v in query.items()}
        st = self.server.store
        body = self.read_body()
        with st.lock:
            st.arrivals.append({"method": method, "path": self.path,
                                "t": round(time.time(), 3)})

        auth = self.headers.get('Authorization', '')
        token = auth[7:] if auth.startswith('Bearer ') else None
        self.token = token
        with st.lock:
            role = st.tokens.get(token) if token else None
        self.auth_class = role or ('unknown' if token else 'none')
        if role is None:
            return self.fail(401, 'Unauthorized', 'Unauthorized')
        if role == 'none' or (role == 'read' and method != 'GET'):
            return self.fail(403, 'Forbidden',
                             '%s %s is forbidden for this service account'
                             % (method, path))

        with st.lock:
            fault = st.take_fault(method, path, url.query)
        if fault:
            if fault.get('latency_ms'):
                time.sleep(fault['latency_ms'] / 1000.0)
            if fault.get('reset'):
                return self.reset_connection()
            if fault.get('status'):
                code = fault['status']
                extra = {}
                if 'retry_after' in fault:
                    extra['Retry-After'] = str(fault['retry_after'])
                reason = {409: 'Conflict', 410: 'Expired', 429: 'TooManyRequests',
                          500: 'InternalError', 503: 'ServiceUnavailable'
                          }.get(code, 'Injected')
                return self.fail(code, reason, 'injected fault %d' % code,
                                 extra)
        self.lose_reply = bool(fault and fault.get('reply_lost'))
        self.reply_latency = (fault or {}).get('reply_latency_ms', 0)
        try:
            self.route(method, path, q, body, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def route(self, method, path, q, body, fault):
        parts = [p for p in path.split('/') if p]
        st = self.server.store
        # /api/v1/namespaces/{ns}/pods[/{name}]
        if parts[:3] == ['api', 'v1', 'namespaces'] and len(parts) >= 5:
            ns, res = parts[3], parts[4]
            if res == 'pods' and len(parts) == 5 and method == 'GET':
                if q.get('watch') in ('1', 'true'):
                    return self.watch_pods(ns, q, fault)
                return self.list_pods(ns, q, fault)
            if res == 'pods' and len(parts) == 6 and method == 'GET':
                with st.lock:
                    pod = copy.deepcopy(st.pods.get((ns, parts[5])))
                return self.send_found(pod, 'pods "%s"' % parts[5])
            if res == 'configmaps' and len(parts) in (5, 6):
                return self.configmap_api(method, ns,
                                          parts[5] if len(parts) == 6 else None,
                                          body)
            if res == 'events' and len(parts) == 5:
                if method == 'POST':
                    return self.create_event(ns, body)
                if method == 'GET':
                    with st.lock:
                        items = [e for e in st.events
                                 if e['metadata'].get('namespace') == ns]
                    return self.send_json(200, {"kind": "EventList",
                                                "items": items})
        if parts[:4] == ['apis', 'batch', 'v1', 'namespaces'] and len(parts) == 7 \
                and parts[5] == 'jobs' and method == 'GET':
            with st.lock:
                job = copy.deepcopy(st.jobs.get((parts[4], parts[6])))
            return self.send_found(job, 'jobs.batch "%s"' % parts[6])
        if parts[:4] == ['apis', 'coordination.k8s.io', 'v1', 'namespaces'] \
                and len(parts) in (6, 7) and parts[5] == 'leases':
            return self.lease_api(method, parts[4],
                                  parts[6] if len(parts) == 7 else None, body)
        # /api/v1/pods: every namespace, fieldSelector spec.nodeName=
        if parts == ['api', 'v1', 'pods'] and method == 'GET':
            return self.list_pods(None, q, fault)
        if parts[:3] == ['api', 'v1', 'nodes']:
            if len(parts) == 3 and method == 'GET':
                return self.list_nodes(q, fault)
            if len(parts) in (4, 5):
                name = parts[3]
                sub = parts[4] if len(parts) == 5 else None
                if sub not in (None, 'status'):
                    return self.fail(404, 'NotFound', 'no such subresource')
                if method == 'GET':
                    with st.lock:
                        node = copy.deepcopy(st.nodes.get(name))
                    return self.send_found(node, 'nodes "%s"' % name)
                if method == 'PATCH':
                    return self.patch_node(name, sub, body)
        return self.fail(404, 'NotFound', 'the server could not find the '
                         'requested resource (%s %s)' % (method, path))

    # ---------------------------------------------------------------- pods
    def page(self, items, rv, q, fault=None):
        """limit/continue paging of a list sorted by name, as the API server
        does it: a page of at most `limit` items (a server may return fewer:
        --page-size), metadata.continue while more remain (with
        remainingItemCount), the list's resourceVersion carried by the token.
        None when the request was answered (a bad token: 400)."""
        try:
            limit = int(q.get('limit') or 0)
        except ValueError:
            self.fail(400, 'BadRequest', 'limit must be an integer')
            return None
        # Without a limit the real server returns everything; with one it
        # may return fewer (--page-size makes every page short).
        if limit and self.server.page_size and limit > self.server.page_size:
            limit = self.server.page_size
        cont = q.get('continue')
        if cont:
            try:
                c = json.loads(base64.b64decode(cont))
                start, rv = c['start'], c['rv']
            except (ValueError, KeyError, TypeError):
                self.fail(400, 'BadRequest', 'invalid continue token')
                return None
            items = [p for p in items if p['metadata']['name'] > start]
        meta = {"resourceVersion": rv}
        if limit and len(items) > limit:
            meta['remainingItemCount'] = len(items) - limit
            items = items[:limit]
            meta['continue'] = base64.b64encode(json.dumps(
                {"start": items[-1]['metadata']['name'], "rv": rv}).encode()
            ).decode()
        if fault and 'continue_token' in fault:
            # A broken server or proxy: this page ends with a fixed token.
            meta['continue'] = fault['continue_token']
        return items, meta

    def send_list(self, table, kind, q, fault, keep=lambda key, obj: True):
        """The objects of a store table that match the labelSelector and
        keep(key, obj), sorted by name and paged, as a KIND."""
        st = self.server.store
        try:
            reqs = parse_selector(q.get('labelSelector', ''))
        except ValueError as e:
            return self.fail(400, 'BadRequest', str(e))
        with st.lock:
            items = sorted((copy.deepcopy(o) for key, o in getattr(st, table).items()
                            if selector_matches(reqs, o) and keep(key, o)),
                           key=lambda o: o['metadata']['name'])
            rv = str(st.rv)
        page = self.page(items, rv, q, fault)
        if page is None:
            return
        items, meta = page
        return self.send_json(200, {"kind": kind, "apiVersion": "v1",
                                    "metadata": meta, "items": items})

    def list_pods(self, ns, q, fault=None):
        """ns None lists every namespace. fieldSelector: only
        spec.nodeName=NAME, which is what the monitor asks (400 otherwise,
        as the real server does for fields pods do not index)."""
        node = None
        fsel = q.get('fieldSelector', '')
        if fsel:
            m = re.match(r'^spec\.nodeName=([^,=]*)$', fsel)
            if not m:
                return self.fail(400, 'BadRequest', 'field label not supported: %s'
                                 % fsel)
            node = m.group(1)
        return self.send_list('pods', 'PodList', q, fault, lambda key, p:
                              (ns is None or key[0] == ns) and
                              (node is None or p.get('spec', {}).get('nodeName') == node))

    def watch_pods(self, ns, q, fault):
        st = self.server.store
        try:
            reqs = parse_selector(q.get('labelSelector', ''))
            since = int(q.get('resourceVersion') or 0)
        except ValueError as e:
            return self.fail(400, 'BadRequest', str(e))
        timeout = min(int(q.get('timeoutSeconds') or 30), 120)
        bookmarks = q.get('allowWatchBookmarks') in ('true', '1')
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        entry = self.record(200)

        def chunk(obj):
            data = (json.dumps(obj) + '\n').encode()
            self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
            self.wfile.flush()
            entry["bytes"] += len(data)

        try:
            with st.lock:
                gone = since and since < st.log_floor
            if fault and fault.get('watch_close'):
                pass    # a proxy that ends every stream at once, empty
            elif gone or (fault and fault.get('watch_error')):
                code = fault.get('watch_error', 410) if fault else 410
                chunk({"type": "ERROR", "object": status_body(
                    code, 'Expired', 'too old resource version: %d' % since)})
            else:
                end = time.time() + timeout
                last_bm = time.time()
                sent = since
                while time.time() < end:
                    with st.lock:
                        # A revoked (rotated) token ends its open streams.
                        if self.token not in st.tokens:
                            break
                        evs = [(rv, t, copy.deepcopy(o)) for rv, t, o in st.log
                               if rv > sent and
                               o['metadata'].get('namespace') == ns and
                               selector_matches(reqs, o)]
                        cur = st.rv
                        if not evs:
                            st.lock.wait(timeout=min(0.5, max(0.01, end - time.time())))
                    for rv, t, o in evs:
                        chunk({"type": t, "object": o})
                        sent = rv
                    if not evs:
                        sent = max(sent, cur)
                    if bookmarks and time.time() - last_bm >= 1.0:
                        chunk({"type": "BOOKMARK", "object": {
                            "kind": "Pod", "apiVersion": "v1",
                            "metadata": {"resourceVersion": str(cur)}}})
                        last_bm = time.time()
            self.wfile.write(b'0\r\n\r\n')
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    # --------------------------------------------------------------- nodes
    def list_nodes(self, q, fault=None):
        return self.send_list('nodes', 'NodeList', q, fault)

    def patch_node(self, name, sub, body):
        st = self.server.store
        ctype = (self.headers.get('Content-Type') or '').split(';')[0].strip()
        if ctype not in ('application/merge-patch+json',
                         'application/strategic-merge-patch+json'):
            return self.fail(415, 'UnsupportedMediaType',
                             'the body of the request was in an unknown '
                             'format - accepted media types include: '
                             'application/merge-patch+json, '
                             'application/strategic-merge-patch+json')
        try:
            patch = json.loads(body or b'null')
        except ValueError as e:
            return self.fail(400, 'BadRequest', 'patch is not JSON: %s' % e)
        if not isinstance(patch, dict):
            return self.fail(400, 'BadRequest', 'patch must be a JSON object')
        with st.lock:
            node = st.nodes.get(name)
            if not node:
                return self.fail(404, 'NotFound', 'nodes "%s" not found' % name)
            want_rv = (patch.get('metadata') or {}).get('resourceVersion')
            if want_rv is not None and want_rv != node['metadata']['resourceVersion']:
                return self.fail(409, 'Conflict',
                                 'Operation cannot be fulfilled on nodes "%s": '
                                 'the object has been modified; please apply '
                                 'your changes to the latest version and try '
                                 'again' % name)
            # The status subresource only changes status; the main resource
            # never changes status (as the real API server does).
            if sub == 'status':
                patch = {"status": patch.get('status', {})}
            else:
                patch = {k: v for k, v in patch.items() if k != 'status'}
            try:
                if ctype == 'application/merge-patch+json':
                    new = merge_patch(node, patch)
                else:
                    new = strategic_patch(node, patch)
            except ValueError as e:
                return self.fail(400, 'BadRequest', str(e))
            md = new.setdefault('metadata', {})
            md['name'] = name
            md['uid'] = node['metadata']['uid']
            errs = []
            for k, v in (md.get('labels') or {}).items():
                e = label_key_error(k) or label_value_error(k, v)
                if e:
                    errs.append(e)
            for c in (new.get('status') or {}).get('conditions') or []:
                if not c.get('type') or c.get('status') not in ('True', 'False', 'Unknown'):
                    errs.append('condition %r: type and status True|False|Unknown '
                                'are required' % c.get('type'))
                for tk in ('lastTransitionTime', 'lastHeartbeatTime'):
                    if tk in c and not RFC3339.match(str(c[tk])):
                        errs.append('condition %r: %s %r is not RFC 3339'
                                    % (c.get('type'), tk, c[tk]))
            for t in (new.get('spec') or {}).get('taints') or []:
                if t.get('effect') not in ('NoSchedule', 'PreferNoSchedule', 'NoExecute') \
                        or label_key_error(t.get('key', '')):
                    errs.append('invalid taint %r' % t)
            if errs:
                return self.fail(422, 'Invalid', 'Node "%s" is invalid: %s'
                                 % (name, '; '.join(errs)))
            if new != node:
                st.nodes[name] = new
                md['resourceVersion'] = st.next_rv()
            st.dump()
            out = copy.deepcopy(st.nodes[name])
        return self.send_json(200, out)

    # ------------------------------------------------ leases and configmaps
    def lease_errors(self, lease, ns, name):
        """ValidateLease: a DNS-subdomain name, leaseDurationSeconds > 0 and
        leaseTransitions >= 0 where set, MicroTime timestamps."""
        errs = []
        md = lease.get('metadata') or {}
        if md.get('namespace', ns) != ns:
            errs.append('metadata.namespace: does not match the namespace '
                        'of the request')
        if not name or len(name) > 253 or not DNS_SUB.match(name):
            errs.append('metadata.name: Invalid value: %r: a lowercase RFC '
                        '1123 subdomain must consist of lower case '
                        "alphanumeric characters, '-' or '.'" % name)
        spec = lease.get('spec') or {}
        if not isinstance(spec, dict):
            return errs + ['spec: must be an object']
        d = spec.get('leaseDurationSeconds')
        if d is not None and (not isinstance(d, int) or d <= 0):
            errs.append('spec.leaseDurationSeconds: Invalid value: %r: must '
                        'be greater than 0' % d)
        t = spec.get('leaseTransitions')
        if t is not None and (not isinstance(t, int) or t < 0):
            errs.append('spec.leaseTransitions: Invalid value: %r: must be '
                        'greater than or equal to 0' % t)
        h = spec.get('holderIdentity')
        if h is not None and not isinstance(h, str):
            errs.append('spec.holderIdentity: must be a string')
        for k in ('acquireTime', 'renewTime'):
            if spec.get(k) is not None and not RFC3339.match(str(spec[k])):
                errs.append('spec.%s: %r is not a MicroTime' % (k, spec[k]))
        return errs

    CM_KEY = re.compile(r'^[-._a-zA-Z0-9]+$')

    def configmap_errors(self, cm, ns, name):
        """ValidateConfigMap: a DNS-subdomain name, data keys of
        alphanumerics, '-', '_' or '.', string values, 1 MiB in all."""
        errs = []
        if (cm['metadata'].get('namespace', ns)) != ns:
            errs.append('metadata.namespace: does not match the namespace of '
                        'the request')
        if not name or len(name) > 253 or not DNS_SUB.match(name):
            errs.append('metadata.name: Invalid value: %r' % name)
        data = cm.get('data') or {}
        if not isinstance(data, dict):
            return errs + ['data: must be an object']
        size = 0
        for k, v in data.items():
            if not isinstance(k, str) or len(k) > 253 or not self.CM_KEY.match(k):
                errs.append("data[%r]: Invalid value: a valid config key must "
                            "consist of alphanumeric characters, '-', '_' or "
                            "'.'" % k)
            if not isinstance(v, str):
                errs.append('data[%r]: must be a string' % k)
            else:
                size += len(k) + len(v)
        if size > 1024 * 1024:
            errs.append('data: Too long: must have at most 1048576 bytes')
        return errs

    # The stored kinds with the generic store's GET, POST, PUT and DELETE:
    # table name, kind, apiVersion, resource (for messages), validation,
    # and the strategy's two choices:
    #   create_on_update  a PUT to a missing object creates it, whatever
    #                     resourceVersion it carries (Store.Update takes the
    #                     create branch when the stored version is 0 and
    #                     compares versions only on the update branch);
    #                     else 404
    #   conditional_only  an update must carry a resourceVersion (422),
    #                     else one without any is unconditional
    KINDS = {
        'leases': ('Lease', 'coordination.k8s.io/v1', 'leases.coordination.k8s.io',
                   'lease_errors', True, True),
        'configmaps': ('ConfigMap', 'v1', 'configmaps',
                       'configmap_errors', False, False),
    }

    def lease_api(self, method, ns, name, body):
        return self.stored_api('leases', method, ns, name, body)

    def configmap_api(self, method, ns, name, body):
        """core/v1 ConfigMap: unconditional updates allowed, no create on
        update (pkg/registry/core/configmap/strategy.go)."""
        return self.stored_api('configmaps', method, ns, name, body)

    def stored_api(self, table, method, ns, name, body):
        st = self.server.store
        kind, api_version, resource, check, create_on_update, \
            conditional_only = self.KINDS[table]
        objs = getattr(st, table)
        what = '%s "%s"' % (resource, name)
        if method == 'GET' and name:
            with st.lock:
                obj = copy.deepcopy(objs.get((ns, name)))
            return self.send_found(obj, what)
        if method == 'DELETE' and name:
            with st.lock:
                obj = objs.pop((ns, name), None)
                st.dump()
            if not obj:
                return self.fail(404, 'NotFound', '%s not found' % what)
            return self.send_json(200, status_body(200, '', 'deleted') |
                                  {"status": "Success"})
        if method not in ('POST', 'PUT') or (method == 'POST') != (name is None):
            return self.fail(405, 'MethodNotAllowed', 'the server does not '
                             'allow this method on the requested resource')
        try:
            obj = json.loads(body or b'null')
        except ValueError as e:
            return self.fail(400, 'BadRequest', '%s is not JSON: %s'
                             % (kind.lower(), e))
        if not isinstance(obj, dict) or obj.get('kind', kind) != kind:
            return self.fail(400, 'BadRequest', 'the body is not a %s' % kind)
        md = obj.setdefault('metadata', {})
        if method == 'PUT' and md.get('name', name) != name:
            return self.fail(400, 'BadRequest', 'the name of the object (%s) '
                             'does not match the name on the URL (%s)'
                             % (md.get('name'), name))
        name = md.get('name') or name
        what = '%s "%s"' % (resource, name)
        errs = getattr(self, check)(obj, ns, name)
        invalid = '%s%s "%s" is invalid: ' % (
            kind, '.' + api_version.split('/')[0] if '/' in api_version else '',
            name)
        if errs:
            return self.fail(422, 'Invalid', invalid + '; '.join(errs))
        with st.lock:
            old = objs.get((ns, name))
            rv = md.get('resourceVersion')
            if method == 'POST' and old:
                return self.fail(409, 'AlreadyExists', '%s already exists' % what)
            if method == 'POST' and rv:
                return self.fail(400, 'BadRequest', 'resourceVersion should '
                                 'not be set on objects to be created')
            if method == 'PUT' and not old and not create_on_update:
                return self.fail(404, 'NotFound', '%s not found' % what)
            if old:
                if not rv and conditional_only:
                    return self.fail(422, 'Invalid', invalid +
                                     'metadata.resourceVersion: Invalid '
                                     'value: 0x0: must be specified for an '
                                     'update')
                if rv and rv != old['metadata']['resourceVersion']:
                    return self.fail(409, 'Conflict', 'Operation cannot be '
                                     'fulfilled on %s: the object has been '
                                     'modified; please apply your changes to '
                                     'the latest version and try again' % what)
                md['uid'] = old['metadata']['uid']
                md['creationTimestamp'] = old['metadata']['creationTimestamp']
            else:
                md.pop('uid', None)
            md['name'], md['namespace'] = name, ns
            obj.update({"kind": kind, "apiVersion": api_version})
            objs[(ns, name)] = st.stamp(obj)
            st.dump()
            out = copy.deepcopy(obj)
        return self.send_json(200 if old else 201, out)

    # -------------------------------------------------------------- events
    def create_event(self, ns, body):
        st = self.server.store
        try:
            ev = json.loads(body or b'null')
        except ValueError as e:
            return self.fail(400, 'BadRequest', 'event is not JSON: %s' % e)
        errs = []
        if not isinstance(ev, dict):
            return self.fail(400, 'BadRequest', 'event must be an object')
        md = ev.setdefault('metadata', {})
        md.setdefault('namespace', ns)
        if md['namespace'] != ns:
            errs.append('metadata.namespace does not match the request')
        if not md.get('name') and not md.get('generateName'):
            errs.append('metadata.name: Required value')
        if ev.get('type') not in ('Normal', 'Warning'):
            errs.append('type: Unsupported value: %r' % ev.get('type'))
        io = ev.get('involvedObject') or {}
        if not io.get('kind') or not io.get('name'):
            errs.append('involvedObject: kind and name are required')
        # ValidateEvent (pkg/apis/core/validation/events.go, an Event without
        # eventTime): a cluster-scoped object's Event (a Node's) lives in
        # namespace "" or "default"; a namespaced one's in its object's.
        ion = io.get('namespace') or ''
        if (not ion and ns not in ('', 'default')) or (ion and ion != ns):
            errs.append('involvedObject.namespace: Invalid value: %r: does '
                        'not match event.namespace' % ion)
        if not ev.get('reason') or not re.match(r'^[A-Z][A-Za-z0-9]*$', ev['reason']):
            errs.append('reason: must be CamelCase, got %r' % ev.get('reason'))
        if errs:
            return self.fail(422, 'Invalid', 'Event is invalid: %s' % '; '.join(errs))
        with st.lock:
            if not md.get('name'):
                md['name'] = md['generateName'] + '%05d' % st.rv
            if any(e['metadata']['name'] == md['name'] and
                   e['metadata'].get('namespace') == ns for e in st.events):
                return self.fail(409, 'AlreadyExists',
                                 'events "%s" already exists' % md['name'])
            st.stamp(ev)
            st.events.append(ev)
            st.dump()
            out = copy.deepcopy(ev)
        return self.send_json(201, out)


class AdminHandler(BaseHTTPRequestHandler):
    """Plain HTTP on loopback: the test's control and inspection port."""
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, obj):
        data = json.dumps(obj, indent=1, sort_keys=True).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get('Content-Length') or 0)
        return json.loads(self.rfile.read(n) or b'null') if n else None

    def do_GET(self):
        st = self.server.store
        with st.lock:
            if self.path == '/state':
                return self.reply(200, st.snapshot())
            if self.path == '/faults':
                return self.reply(200, st.faults)
        self.reply(404, {"error": "unknown admin path"})

    def do_POST(self):
        st = self.server.store
        data = self.body()
        with st.lock:
            if self.path == '/faults':
                st.faults = data or []
            elif self.path == '/tokens':
                st.tokens = data or {}
            elif self.path == '/objects':
                for obj in (data if isinstance(data, list) else [data]):
                    st.put(obj)
            elif self.path == '/compact':
                st.log_floor = st.rv + 1
            else:
                return self.reply(404, {"error": "unknown admin path"})
            st.dump()
        self.reply(200, {"ok": True})

    def do_DELETE(self):
        # /objects/{Kind}/{namespace}/{name}
        st = self.server.store
        parts = [p for p in self.path.split('/') if p]
        if len(parts) != 4 or parts[0] != 'objects':
            return self.reply(404, {"error": "use /objects/Kind/ns/name"})
        with st.lock:
            st.delete(parts[1], parts[2], parts[3])
            st.dump()
        self.reply(200, {"ok": True})


class TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, ctx, store, verbose):
        self.ctx, self.store, self.verbose = ctx, store, verbose
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        sock.settimeout(30)
        return sock, addr

    def finish_request(self, request, client_address):
        # The TLS handshake runs in the worker thread, so a client that
        # stalls or fails its handshake never blocks accept().
        try:
            tls = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        self.RequestHandlerClass(tls, client_address, self)


class AdminServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, store):
        self.store = store
        super().__init__(addr, AdminHandler)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--bind', default='127.0.0.1')
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--admin-port', type=int, required=True)
    ap.add_argument('--cert', required=True)
    ap.add_argument('--key', required=True)
    ap.add_argument('--tokens', required=True, help='JSON {token: role}')
    ap.add_argument('--objects', help='JSON list of objects to start with')
    ap.add_argument('--faults', help='JSON list of fault rules')
    ap.add_argument('--dump', help='write the state here after each change')
    ap.add_argument('--page-size', type=int, default=0,
                    help='at most this many items per list page (when a limit is asked)')
    ap.add_argument('--verbose', action='store_true')
    a = ap.parse_args()

    store = Store(a.dump)
    with open(a.tokens) as f:
        store.tokens = json.load(f)
    if a.objects:
        with open(a.objects) as f, store.lock:
            for obj in json.load(f):
                store.put(obj)
    if a.faults:
        with open(a.faults) as f:
            store.faults = json.load(f)
    store.dump()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    api = TLSServer((a.bind, a.port), Handler, ctx, store, a.verbose)
    api.page_size = a.page_size
    admin = AdminServer(('127.0.0.1', a.admin_port), store)
    threading.Thread(target=admin.serve_forever, daemon=True).start()
    # The ports bound, which the kernel chose when asked for 0.
    sys.stderr.write("fake-apiserver: https://%s:%d (admin 127.0.0.1:%d)\n"
                     % (a.bind, api.server_address[1],
                        admin.server_address[1]))
    sys.stderr.flush()
    try:
        api.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
