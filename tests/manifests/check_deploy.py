#!/usr/bin/env python3
"""Checks of how the deploy files meet a real EKS cluster.

  check_deploy.py netpol RENDERED.yaml [EXAMPLE.yaml...]
      RENDERED is the chart rendered with networkPolicy.enabled. Every
      DaemonSet's pods and every example job's pods (with the labels their
      controller adds) are selected by a NetworkPolicy of their namespace
      that admits ingress from their peers on every port (rendezvous and
      NCCL's ephemeral bootstrap/socket ports), and, where the policy
      restricts egress, lets them reach their peers and the API server.
  check_deploy.py nodejoin ROOT
      Every node-join config in ROOT/k8s/node-join (eksctl node groups,
      Karpenter NodePools) lets the pre-flight pod run: each taint a node
      joins with is tolerated by the pre-flight DaemonSet and by the NVIDIA
      and EFA device plugins, as installed by default unless the file names
      device-plugin-tolerations.yaml (then with those tolerations). A pool
      that joins nodes pending or with the agent's taint is one the
      DaemonSet serves; no NodePool labels nodes with a verdict (Karpenter
      would label new nodes `pass` before anything ran).
  check_deploy.py facts ROOT
      No deploy file (README.md, docs/, charts/, k8s/) names a FACTS file the
      repository does not have.
Prints one line per failed check; exit 1 if any.
"""
import glob
import os
import re
import sys

import yaml

from manifest_util import fail, failures, load

# Tolerations of the device plugins as their own manifests and charts ship
# them (NVIDIA k8s-device-plugin chart; aws-efa-k8s-device-plugin).
DEVICE_PLUGINS = {
    "nvidia-device-plugin": [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ],
    "aws-efa-k8s-device-plugin": [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "aws.amazon.com/efa", "operator": "Exists", "effect": "NoSchedule"},
    ],
}
PREFIX = "efa-preflight.io/"
# The pre-flight DaemonSet's tolerations (k8s/20-daemonset.yaml).
VERDICTS = ("pass", "warn", "fail", "error")


def tolerates(tols, taint):
    """Kubernetes' rule (v1.Toleration.ToleratesTaint)."""
    for t in tols:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if not t.get("key"):
            if t.get("operator") == "Exists":
                return True
            continue
        if t["key"] != taint["key"]:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def selects(sel, labels):
    """A LabelSelector (matchLabels, matchExpressions) against labels."""
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values", [])
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def pod_labels(o):
    """The labels a workload's pods carry, with those its controller adds."""
    if o["kind"] == "DaemonSet":
        return dict(o["spec"]["template"]["metadata"].get("labels", {}))
    if o["kind"] == "Job":
        labels = dict(o["spec"]["template"]["metadata"].get("labels", {}))
        labels["batch.kubernetes.io/job-name"] = o["metadata"]["name"]
        return labels
    if o["kind"] == "JobSet":
        rj = o["spec"]["replicatedJobs"][0]
        labels = dict(rj["template"]["spec"]["template"]["metadata"].get("labels", {}))
        labels["jobset.sigs.k8s.io/jobset-name"] = o["metadata"]["name"]
        labels["batch.kubernetes.io/job-name"] = "%s-%s-0" % (o["metadata"]["name"], rj["name"])
        return labels
    return None


def check_netpol(rendered, examples):
    docs = load(rendered)
    pols = [d for d in docs if d["kind"] == "NetworkPolicy"]
    workloads = [(rendered, d) for d in docs if d["kind"] == "DaemonSet"]
    for p in examples:
        workloads += [(p, d) for d in load(p)]
    if not pols:
        fail("%s: networkPolicy.enabled rendered no NetworkPolicy" % rendered)
        return
    for where, w in workloads:
        labels = pod_labels(w)
        if labels is None:
            continue
        ns = w["metadata"].get("namespace", "default")
        name = "%s %s/%s" % (w["kind"], ns, w["metadata"]["name"])
        mine = [p for p in pols if p["metadata"]["namespace"] == ns
                and selects(p["spec"]["podSelector"], labels)]
        if not mine:
            fail("%s (%s): no NetworkPolicy of namespace %s selects its pods %s"
                 % (name, os.path.basename(where), ns, labels))
            continue
        # Ingress from peers, every port.
        if not any(not rule.get("ports") and any(
                "podSelector" in f and "namespaceSelector" not in f
                and selects(f["podSelector"], labels) for f in rule.get("from", []))
                for p in mine for rule in p["spec"].get("ingress", [])):
            fail("%s: no NetworkPolicy admits ingress from its peers on every port "
                 "(rendezvous and NCCL's ephemeral ports)" % name)
        for p in mine:
            if "Egress" not in p["spec"].get("policyTypes", []):
                continue
            rules = p["spec"].get("egress", [])
            if not any(not r.get("ports") and any(
                    "podSelector" in t and selects(t["podSelector"], labels)
                    for t in r.get("to", [])) for r in rules):
                fail("%s: NetworkPolicy %s restricts egress but not to its peers "
                     "on every port" % (name, p["metadata"]["name"]))
            if not any(not r.get("to") and any(x.get("port") in (443, 6443)
                                               for x in r.get("ports", []))
                       for r in rules):
                fail("%s: NetworkPolicy %s restricts egress and lets no traffic "
                     "reach the API server (443/6443)" % (name, p["metadata"]["name"]))


def node_join_taints(o):
    """(kind, taints, labels, requirements) of a node-join config."""
    out = []
    if o.get("kind") == "ClusterConfig":
        for ng in o.get("managedNodeGroups", []) + o.get("nodeGroups", []):
            taints = ng.get("taints", [])
            if isinstance(taints, dict):     # eksctl's older map form
                taints = [{"key": k, "value": v.split(":")[0], "effect": v.split(":")[-1]}
                          for k, v in taints.items()]
            out.append(("node group " + ng["name"], taints, ng.get("labels", {}), []))
    elif o.get("kind") == "NodePool":
        t = o["spec"]["template"]
        spec = t.get("spec", {})
        out.append(("NodePool " + o["metadata"]["name"],
                    spec.get("taints", []) + spec.get("startupTaints", []),
                    t.get("metadata", {}).get("labels", {}), spec.get("requirements", [])))
    return out


def check_nodejoin(root):
    d = os.path.join(root, "k8s", "node-join")
    files = sorted(glob.glob(os.path.join(d, "*.yaml")))
    ds = [o for o in load(os.path.join(root, "k8s", "20-daemonset.yaml")) if o["kind"] == "DaemonSet"]
    ds_tols = ds[0]["spec"]["template"]["spec"]["tolerations"] if ds else []
    extra_path = os.path.join(d, "device-plugin-tolerations.yaml")
    extra = load(extra_path)[0]["tolerations"] if os.path.exists(extra_path) else []
    kinds = set()
    for p in files:
        text = open(p).read()
        with_extra = "device-plugin-tolerations.yaml" in text
        for o in load(p):
            for what, taints, labels, reqs in node_join_taints(o):
                kinds.add(o["kind"])
                where = "%s: %s" % (os.path.relpath(p, root), what)
                for t in taints:
                    for plugin, tols in DEVICE_PLUGINS.items():
                        if not tolerates(tols + (extra if with_extra else []), t):
                            fail("%s joins nodes with taint %s=%s:%s, which %s as "
                                 "installed by default does not tolerate: the node "
                                 "never advertises its devices and the pre-flight pod "
                                 "stays Pending" % (where, t["key"], t.get("value", ""),
                                                    t["effect"], plugin))
                    if not tolerates(ds_tols, t):
                        fail("%s: the pre-flight DaemonSet does not tolerate taint %s"
                             % (where, t["key"]))
                status = labels.get(PREFIX + "status")
                if status in VERDICTS:
                    fail("%s labels new nodes %sstatus=%s before any validation"
                         % (where, PREFIX, status))
                for r in reqs:
                    if r.get("key") == PREFIX + "status" and set(r.get("values", [])) & set(VERDICTS):
                        fail("%s: requirement %sstatus In %s lets Karpenter label new "
                             "nodes with a verdict before any validation"
                             % (where, PREFIX, r["values"]))
                if any(t["key"] == PREFIX + "unhealthy" for t in taints) and status != "pending":
                    fail("%s joins nodes with the agent's taint but not labelled "
                         "%sstatus=pending: nothing would validate them and remove it"
                         % (where, PREFIX))
    for k in ("ClusterConfig", "NodePool"):
        if k not in kinds:
            fail("k8s/node-join has no %s (EKS managed node group / Karpenter) example"
                 % k)


def check_facts(root):
    if glob.glob(os.path.join(root, "**", "FACTS*"), recursive=True):
        return
    paths = [os.path.join(root, "README.md")]
    for sub in ("charts", "k8s", "docs"):
        for dp, _, fs in os.walk(os.path.join(root, sub)):
            paths += [os.path.join(dp, f) for f in fs]
    for p in paths:
        with open(p, errors="replace") as f:
            for n, line in enumerate(f, 1):
                if re.search(r"\bFACTS\b", line):
                    fail("%s:%d names FACTS, a file this repository does not have"
                         % (os.path.relpath(p, root), n))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    cmd = sys.argv[1]
    if cmd == "netpol":
        check_netpol(sys.argv[2], sys.argv[3:])
    elif cmd == "nodejoin":
        check_nodejoin(sys.argv[2])
    elif cmd == "facts":
        check_facts(sys.argv[2])
    else:
        print(__doc__)
        return 2
    print("%s: %d failures" % (cmd, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
