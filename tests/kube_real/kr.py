#!/usr/bin/env python3
"""Admin client for the real kube-apiserver of tests/kube_real (stdlib only).

    kr.py call METHOD PATH [--data JSON|@FILE] [--ctype T] [--ok CODES]
        the reply body on stdout; exit 0 when the status is in --ok
        (default 2xx), else 1 with "HTTP <code>: <message>" on stderr.
        --status prints only the status code and always exits 0.
    kr.py apply FILE...        create every object in YAML/JSON files
                               (multi-document YAML, a JSON list or object)
    kr.py token NS SA [--pod NAME] [--seconds N]
                               a TokenRequest for SA; bound to the pod when
                               --pod is given, as the kubelet binds them
    kr.py state FILE           nodes, pods, leases, events, configmaps (all namespaces)
    kr.py ready SECONDS        wait for /readyz; exit 1 when it never came

The server and credentials come from the environment: KR_API (https://...),
KR_CA, KR_CERT, KR_KEY (the admin client certificate, O=system:masters).
"""
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse

# Where each kind lives: (group/version prefix, plural, namespaced).
KINDS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Event": ("/api/v1", "events", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies", True),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1",
                                 "customresourcedefinitions", False),
    "MutatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1",
                                     "mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1",
                                       "validatingwebhookconfigurations", False),
}


def conn():
    u = urllib.parse.urlsplit(os.environ["KR_API"])
    ctx = ssl.create_default_context(cafile=os.environ["KR_CA"])
    ctx.load_cert_chain(os.environ["KR_CERT"], os.environ["KR_KEY"])
    return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)


def request(method, path, body=None, ctype="application/json"):
    c = conn()
    headers = {"Accept": "application/json"}
    if body is not None:
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        headers["Content-Type"] = ctype
    try:
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        return r.status, data
    finally:
        c.close()


def collection(obj):
    kind = obj.get("kind")
    if kind not in KINDS:
        sys.exit("kr.py: no path known for kind %r" % kind)
    prefix, plural, namespaced = KINDS[kind]
    if namespaced:
        ns = obj.get("metadata", {}).get("namespace") or "default"
        return "%s/namespaces/%s/%s" % (prefix, ns, plural)
    return "%s/%s" % (prefix, plural)


def load_objects(path):
    text = open(path).read()
    if path.endswith(".json"):
        v = json.loads(text)
        return v if isinstance(v, list) else [v]
    import yaml
    return [d for d in yaml.safe_load_all(text) if d]


def cmd_apply(files):
    n = 0
    for f in files:
        for obj in load_objects(f):
            st, data = request("POST", collection(obj), obj)
            if st not in (200, 201):
                sys.exit("kr.py apply: %s %s: HTTP %d: %s" % (
                    obj["kind"], obj["metadata"].get("name"), st, data[:300]))
            n += 1
    print("applied %d objects" % n)


def cmd_token(ns, sa, pod, seconds):
    spec = {"expirationSeconds": seconds}
    if pod:
        st, data = request("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, pod))
        if st != 200:
            sys.exit("kr.py token: pod %s/%s: HTTP %d" % (ns, pod, st))
        uid = json.loads(data)["metadata"]["uid"]
        spec["boundObjectRef"] = {"kind": "Pod", "apiVersion": "v1",
                                  "name": pod, "uid": uid}
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": spec}
    st, data = request("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token"
                       % (ns, sa), body)
    if st != 201:
        sys.exit("kr.py token: HTTP %d: %s" % (st, data[:300]))
    sys.stdout.write(json.loads(data)["status"]["token"])


def list_all(path):
    items, cont = [], ""
    while True:
        p = path + ("?limit=500&continue=" + urllib.parse.quote(cont) if cont else "?limit=500")
        st, data = request("GET", p)
        if st != 200:
            sys.exit("kr.py state: GET %s: HTTP %d" % (path, st))
        v = json.loads(data)
        items += v.get("items", [])
        cont = v.get("metadata", {}).get("continue")
        if not cont:
            return items


def cmd_state(out):
    s = {"nodes": list_all("/api/v1/nodes"),
         "pods": list_all("/api/v1/pods"),
         "events": list_all("/api/v1/events"),
         "configmaps": [x for x in list_all("/api/v1/configmaps")
                        if x["metadata"]["namespace"] not in ("kube-system", "kube-public")],
         "leases": [x for x in list_all("/apis/coordination.k8s.io/v1/leases")
                    if x["metadata"]["namespace"] not in ("kube-system", "kube-node-lease")]}
    json.dump(s, open(out, "w"), indent=1)


def cmd_ready(secs):
    end = time.time() + secs
    last = ""
    while time.time() < end:
        try:
            st, data = request("GET", "/readyz")
            if st == 200:
                return 0
            last = "HTTP %d" % st
        except (OSError, http.client.HTTPException) as e:
            last = str(e)
        time.sleep(0.25)
    print("kr.py ready: /readyz not ready after %d s (%s)" % (secs, last), file=sys.stderr)
    return 1


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "call":
        import argparse
        ap = argparse.ArgumentParser(prog="kr.py call")
        ap.add_argument("method")
        ap.add_argument("path")
        ap.add_argument("--data")
        ap.add_argument("--ctype", default="application/json")
        ap.add_argument("--ok", default="")
        ap.add_argument("--status", action="store_true")
        a = ap.parse_args(args)
        body = a.data
        if body is not None and body.startswith("@"):
            body = open(body[1:]).read()
        st, data = request(a.method, a.path, body, a.ctype)
        if a.status:
            print(st)
            return 0
        sys.stdout.write(data.decode())
        ok = [int(x) for x in a.ok.split(",") if x] or list(range(200, 300))
        if st not in ok:
            try:
                msg = json.loads(data).get("message", "")
            except ValueError:
                msg = data[:200]
            print("HTTP %d: %s %s: %s" % (st, a.method, a.path, msg), file=sys.stderr)
            return 1
        return 0
    if cmd == "apply":
        cmd_apply(args)
        return 0
    if cmd == "token":
        import argparse
        ap = argparse.ArgumentParser(prog="kr.py token")
        ap.add_argument("ns")
        ap.add_argument("sa")
        ap.add_argument("--pod")
        ap.add_argument("--seconds", type=int, default=3600)
        a = ap.parse_args(args)
        cmd_token(a.ns, a.sa, a.pod, a.seconds)
        return 0
    if cmd == "state":
        cmd_state(args[0])
        return 0
    if cmd == "ready":
        return cmd_ready(int(args[0]))
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
