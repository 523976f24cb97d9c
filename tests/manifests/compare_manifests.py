#!/usr/bin/env python3
"""Check that the Helm chart, the plain k8s/ manifests and the examples agree.

  compare_manifests.py ROOT RENDERED.yaml

ROOT is the repository; RENDERED.yaml is the chart rendered with its default
values, release name and namespace "efa-preflight". Checks:
  1. every k8s/ object (but the Namespace, which helm --create-namespace
     makes) equals the chart's object of the same kind/namespace/name, field
     by field: names, labels, RBAC rules, env, resources, everything;
  2. the chart's other DaemonSets differ from the p5 one only in name, pool
     label, instance types and resources;
  3. RBAC rules are exactly docs/reference/rbac.md's table; the job-namespace Role
     equals the DaemonSet's Role but for the coordinator's Leases (release
     namespace only); the taint budget's Role (release namespace) grants
     get/update on its one ConfigMap and create, and every agent service
     account is bound to it;
  4. the DaemonSet selects <prefix>status=pending with the prefix the agent
     is given, tolerates the agent's <prefix>unhealthy taint and both EFA
     taint keys, labels its pods <prefix>pool, and its peer selector matches
     its own pod labels;
  5. each example (Indexed Job, JobSet; full and copy-in) runs the agent in
     an initContainer with the DaemonSet's downward-API env, bootstrap k8s,
     mode initcontainer, the training container's GPU and EFA counts,
     IPC_LOCK and an in-memory /dev/shm; copy-in copies the binary from the
     agent image into an emptyDir that the next initContainer runs it from,
     inside the training image; the examples tolerate both EFA taint keys;
     and no container but the agent's can reach a service-account token
     that may patch Nodes (pod automountServiceAccountToken false, the token
     projected into the agent's initContainer alone);
  6. every EFA_PREFLIGHT_* variable names an option of agent/config/config.c;
  7. values.schema.json admits only what the agent accepts: a value the
     DaemonSet passes as an agent option stays inside that option's range
     or choices, and agentOptions keys are exactly the agent's options but
     those the chart sets itself (a misspelt key would be an env variable
     the agent never reads).
Prints one line per failed check and exits 1 if any failed.
"""
import glob
import json
import os
import re
import sys

import yaml

from manifest_util import fail, failures, load

RELEASE = "efa-preflight"
DEVICE_RESOURCES = ("nvidia.com/gpu", "vpc.amazonaws.com/efa")
# Taints GPU/EFA node groups carry: eksctl and older guides use
# vpc.amazonaws.com/efa, the EFA device plugin and EKS blueprints
# aws.amazon.com/efa.
NODE_TAINTS = ("nvidia.com/gpu", "vpc.amazonaws.com/efa", "aws.amazon.com/efa")
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IDENTITY_ENV = ("POD_NAME", "POD_NAMESPACE", "NODE_NAME", "POD_IP")
# The agent options whose defaults come from IDENTITY_ENV.
IDENTITY_OPTIONS = ("pod_name", "namespace", "node_name", "pod_ip")
CHART = "charts/efa-preflight"
NODE_RULES = [
    {"apiGroups": [""], "resources": ["nodes"],
     "verbs": ["get", "list", "patch"]},
    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]
NAMESPACE_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
]
# The release namespace also holds the DaemonSet coordinator's Leases.
RELEASE_RULES = NAMESPACE_RULES + [
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "create", "update"]},
]

# The taint budget (--taint-budget, release namespace).
BUDGET = RELEASE + "-taint-budget"
BUDGET_RULES = [
    {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [BUDGET],
     "verbs": ["get", "update"]},
    {"apiGroups": [""], "resources": ["configmaps"],
     "resourceNames": [RELEASE + "-baseline"], "verbs": ["get", "update"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
]


def key(o):
    m = o.get("metadata", {})
    return (o.get("kind"), m.get("namespace", ""), m.get("name"))


def norm(v):
    """Quantities may be written 8 or "8": compare them as strings."""
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return v


def diff(a, b, path=""):
    """Paths where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append("%s/%s: only in chart" % (path, k))
            elif k not in b:
                out.append("%s/%s: only in k8s/" % (path, k))
            else:
                out += diff(a[k], b[k], "%s/%s" % (path, k))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return ["%s: %d items in k8s/, %d in chart" % (path, len(a), len(b))]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, "%s/%d" % (path, i))
        return out
    return [] if a == b else ["%s: %r in k8s/, %r in chart" % (path, a, b)]


# The labels only Helm sets (the chart's standard labels, which kubectl
# apply of k8s/ has no release or chart version for).
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version",
               "app.kubernetes.io/part-of")


def without_helm_labels(o):
    def strip(meta):
        if meta and "labels" in meta:
            for k in HELM_LABELS:
                meta["labels"].pop(k, None)
    strip(o.get("metadata"))
    strip(o.get("spec", {}).get("template", {}).get("metadata") if isinstance(o.get("spec"), dict) else None)
    return o


def pod_spec(o):
    if o["kind"] == "JobSet":
        return o["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return o["spec"]["template"]["spec"]


def env_map(c):
    return {e["name"]: e for e in c.get("env", [])}


def env_value(c, name):
    e = env_map(c).get(name)
    return None if e is None else e.get("value")


def device_counts(c):
    r = c.get("resources", {})
    return {part: {k: str(v) for k, v in r.get(part, {}).items()
                   if k in DEVICE_RESOURCES}
            for part in ("requests", "limits")}


def agent_options(root):
    with open(os.path.join(root, "agent/config/config.c")) as f:
        src = f.read()
    table = src[src.index("options[] = {"):]
    table = table[:table.index("\n};")]
    return set(re.findall(r'^\s*\{\s*"([a-z_]+)",', table, re.M))


def webhook_only_options(root):
    """Options only `efa-preflight webhook` takes (flag set C_WEBHOOK alone):
    the webhook Deployment's, never a validating agent's (agentOptions)."""
    with open(os.path.join(root, "agent/config/config.c")) as f:
        src = f.read()
    table = src[src.index("options[] = {"):]
    table = table[:table.index("\n};")]
    only = set()
    for entry in re.split(r'\n\s*\{\s*(?=")', table)[1:]:
        key = entry[1:entry.index('"', 1)]
        m = re.search(r'(?:NULL|"[^"]*"),\s*(C_[A-Z_]+(?:\s*\|\s*C_[A-Z_]+)*)\s*,', entry)
        if m and m.group(1).strip() == "C_WEBHOOK":
            only.add(key)
    return only


def agent_option_specs(root):
    """{key: (type, min, max, choices)} from config.c's option table."""
    macros = {}
    # The data model: pf.h and the stage headers it gathers (agent/types/).
    for h in [os.path.join(root, "agent/pf.h")] + \
            sorted(glob.glob(os.path.join(root, "agent/types/*.h"))):
        with open(h) as f:
            macros.update(re.findall(r"^#define (PF_\w+) (\d+)\s*$", f.read(), re.M))
    with open(os.path.join(root, "agent/config/config.c")) as f:
        src = f.read()
    table = src[src.index("options[] = {"):]
    table = table[:table.index("\n};")]
    specs = {}
    for m in re.finditer(r'\{\s*"([a-z_]+)",\s*[^,]+,\s*(OPT_\w+),\s*F\(\w+\),'
                         r'\s*([^,]+),\s*([^,]+),\s*(NULL|"[^"]*")', table):
        key, typ, lo, hi, choices = m.groups()

        def num(expr):
            expr = re.sub(r"\bPF_\w+\b", lambda x: macros[x.group(0)], expr)
            expr = re.sub(r"\bINT_MAX\b", "2147483647", expr)
            expr = re.sub(r"(\d)(?:ull|ul|u)\b", r"\1", expr)
            if not re.fullmatch(r"[-0-9.e *()<]+", expr):
                raise ValueError("option %s: cannot read bound %r" % (key, expr))
            return eval(expr)
        specs[key] = (typ, num(lo), num(hi),
                      None if choices == "NULL" else choices.strip('"').split("|"))
    return specs


def check_values_schema(root, options):
    schema_path = os.path.join(root, CHART, "values.schema.json")
    template_path = os.path.join(root, CHART, "templates", "daemonset.yaml")
    if not os.path.exists(schema_path) or not os.path.exists(template_path):
        fail("no %s/values.schema.json or templates/daemonset.yaml" % CHART)
        return
    with open(schema_path) as f:
        schema = json.load(f)
    # The DaemonSet's env lives in daemonset.yaml and the partials it
    # includes (_observability.tpl).
    template = ""
    tdir = os.path.dirname(template_path)
    for name in sorted(os.listdir(tdir)):
        if name == "daemonset.yaml" or name.endswith(".tpl"):
            with open(os.path.join(tdir, name)) as f:
                template += f.read() + "\n"
    specs = agent_option_specs(root)
    if set(specs) != set(options):
        fail("could not read the range of %s in agent/config/config.c"
             % sorted(set(options) - set(specs)))
    props = schema.get("properties", {})
    # Values the template hands to the agent as EFA_PREFLIGHT_<KEY>.
    passed = re.findall(r"name: EFA_PREFLIGHT_(\w+)\s*\n\s*value: \{\{ \$?\.Values\.([\w.]+)",
                        template)
    for env, value in passed:
        key = env.lower()
        if key not in specs:
            continue        # named by check 6
        typ, lo, hi, choices = specs[key]
        p = {"properties": props}
        for part in value.split("."):
            p = p.get("properties", {}).get(part, {})
        where = "values.schema.json %s (the agent's %s)" % (value, key)
        if typ in ("OPT_INT", "OPT_DOUBLE"):
            if "minimum" not in p or "maximum" not in p:
                fail("%s: no minimum/maximum; the agent takes %g..%g" % (where, lo, hi))
            elif p["minimum"] < lo or p["maximum"] > hi:
                fail("%s: %g..%g admits values the agent refuses (exit 2): it takes "
                     "%g..%g" % (where, p["minimum"], p["maximum"], lo, hi))
        elif typ == "OPT_ENUM":
            extra = sorted(set(p.get("enum", [None])) - set(choices))
            if extra:
                fail("%s: %s not among the agent's choices %s" % (where, extra, choices))
        elif typ == "OPT_BOOL" and p.get("type") != "boolean":
            fail("%s: not a boolean" % where)
    set_by_chart = {e.lower() for e in re.findall(r"name: EFA_PREFLIGHT_(\w+)\s*$",
                                                   template, re.M)}
    want = sorted(set(options) - {"config"} - set_by_chart - set(IDENTITY_OPTIONS)
                  - webhook_only_options(root))
    defn = schema.get("definitions", {}).get("agentOptions", {})
    have = defn.get("propertyNames", {}).get("enum")
    if have is None or sorted(have) != want:
        fail("values.schema.json agentOptions keys %s, the agent's options the chart "
             "does not set are %s" % (sorted(have) if have else "unlimited", want))
    item_props = props.get("instanceTypes", {}).get("items", {}).get("properties", {})
    for where, p in (("agentOptions", props.get("agentOptions", {})),
                     ("instanceTypes[].agentOptions", item_props.get("agentOptions", {}))):
        if p.get("$ref") != "#/definitions/agentOptions":
            fail("values.schema.json %s does not use #/definitions/agentOptions" % where)


def check_env_names(where, containers, options):
    for c in containers:
        for e in c.get("env", []):
            n = e["name"]
            if n.startswith("EFA_PREFLIGHT_") and n[14:].lower() not in options:
                fail("%s: container %s: %s is not an agent option "
                     "(agent/config/config.c)" % (where, c["name"], n))


def check_shm(where, spec, c):
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        if m["mountPath"] == "/dev/shm":
            if vols.get(m["name"], {}).get("emptyDir", {}).get("medium") != "Memory":
                fail("%s: %s: /dev/shm is not an in-memory emptyDir"
                     % (where, c["name"]))
            return
    fail("%s: %s: no /dev/shm mount" % (where, c["name"]))


def check_ipc_lock(where, c):
    caps = c.get("securityContext", {}).get("capabilities", {}).get("add", [])
    if "IPC_LOCK" not in caps:
        fail("%s: %s: lacks the IPC_LOCK capability" % (where, c["name"]))


def node_writers(objs):
    """(namespace, name) of every ServiceAccount bound to a role that may
    patch, update or delete Nodes."""
    roles = {}
    for k, o in objs.items():
        if k[0] in ("ClusterRole", "Role"):
            roles[(k[0], k[1], k[2])] = any(
                ("nodes" in r.get("resources", []) or "*" in r.get("resources", []))
                and set(r.get("verbs", [])) & {"patch", "update", "delete", "*"}
                for r in o.get("rules", []))
    out = set()
    for k, o in objs.items():
        if k[0] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = o["roleRef"]
        ns = "" if ref["kind"] == "ClusterRole" else k[1]
        if roles.get((ref["kind"], ns, ref["name"])):
            for sub in o.get("subjects", []):
                if sub.get("kind") == "ServiceAccount":
                    out.add((sub.get("namespace", k[1]), sub["name"]))
    return out


def token_volumes(spec):
    """Names of the pod's volumes that carry a service-account token."""
    out = set()
    for v in spec.get("volumes", []):
        srcs = v.get("projected", {}).get("sources", [])
        if any("serviceAccountToken" in x for x in srcs):
            out.add(v["name"])
    return out


def check_token_reach(where, ns, spec, runner, objs):
    """Only the agent's container may hold a token that can patch Nodes."""
    sa_name = spec.get("serviceAccountName") or "default"
    if (ns, sa_name) not in node_writers(objs):
        return
    sa = objs.get(("ServiceAccount", ns, sa_name), {})
    auto = spec.get("automountServiceAccountToken",
                    sa.get("automountServiceAccountToken", True))
    others = [c for c in spec.get("initContainers", []) + spec["containers"]
              if c is not runner]
    if auto is not False and others:
        fail("%s: service account %s may patch Nodes and its token is mounted "
             "into every container (%s): set automountServiceAccountToken: "
             "false and project the token into the agent's initContainer only"
             % (where, sa_name, ", ".join(c["name"] for c in others)))
    vols = token_volumes(spec)
    for c in others:
        for m in c.get("volumeMounts", []):
            if m["name"] in vols:
                fail("%s: container %s mounts the token volume %s: it could "
                     "patch Nodes with service account %s"
                     % (where, c["name"], m["name"], sa_name))
    if auto is False:
        mounts = {m["mountPath"]: m["name"] for m in runner.get("volumeMounts", [])}
        name = mounts.get(SA_DIR)
        srcs = [v for v in spec.get("volumes", []) if v["name"] == name]
        srcs = srcs[0].get("projected", {}).get("sources", []) if srcs else []
        if name not in vols:
            fail("%s: the agent's initContainer %s has no token at %s: it "
                 "cannot reach the API server" % (where, runner["name"], SA_DIR))
        elif not any(x.get("configMap", {}).get("name") == "kube-root-ca.crt"
                     for x in srcs):
            fail("%s: token volume %s lacks ca.crt (configMap kube-root-ca.crt): "
                 "the agent cannot verify the API server" % (where, name))


def check_example(path, o, ds_init, job_sa, objs=None):
    where = os.path.relpath(path)
    spec = pod_spec(o)
    inits, mains = spec.get("initContainers", []), spec["containers"]
    runners = [c for c in inits if c.get("command", [""])[0].endswith("efa-preflight")
               and c["command"][1:] == ["run"]]
    if len(runners) != 1:
        fail("%s: expected one initContainer running 'efa-preflight run', "
             "found %d" % (where, len(runners)))
        return
    run = runners[0]
    if spec.get("serviceAccountName") != job_sa["metadata"]["name"]:
        fail("%s: serviceAccountName %r is not the job service account %r"
             % (where, spec.get("serviceAccountName"), job_sa["metadata"]["name"]))
    if o["metadata"].get("namespace") != job_sa["metadata"]["namespace"]:
        fail("%s: namespace %r has no efa-preflight job RBAC (30-job-rbac.yaml "
             "is for %r)" % (where, o["metadata"].get("namespace"),
                             job_sa["metadata"]["namespace"]))
    ds_env = env_map(ds_init)
    for name in IDENTITY_ENV:
        if env_map(run).get(name) != ds_env[name]:
            fail("%s: env %s differs from the DaemonSet's" % (where, name))
    for name, want in (("EFA_PREFLIGHT_BOOTSTRAP", "k8s"),
                       ("EFA_PREFLIGHT_MODE", "initcontainer"),
                       ("EFA_PREFLIGHT_PORT", env_value(ds_init, "EFA_PREFLIGHT_PORT"))):
        if env_value(run, name) != want:
            fail("%s: %s is %r, want %r" % (where, name, env_value(run, name), want))
    for m in mains:
        if device_counts(m) != device_counts(run):
            fail("%s: initContainer %s requests %s but container %s %s: an init "
                 "container gets devices only if it requests them"
                 % (where, run["name"], device_counts(run), m["name"],
                    device_counts(m)))
    if not device_counts(run)["limits"]:
        fail("%s: initContainer requests no GPU/EFA devices" % where)
    tolerated = {t.get("key") for t in spec.get("tolerations", [])}
    for t in NODE_TAINTS:
        if t not in tolerated:
            fail("%s: does not tolerate the node taint %s" % (where, t))
    if objs is not None:
        check_token_reach(where, o["metadata"].get("namespace", "default"), spec,
                          run, objs)
    check_ipc_lock(where, run)
    check_shm(where, spec, run)
    report = env_value(run, "EFA_PREFLIGHT_REPORT")
    if report:
        shared = [m["mountPath"] for m in run.get("volumeMounts", [])
                  if report.startswith(m["mountPath"] + "/")]
        if not shared or not all(any(x["mountPath"] == shared[0]
                                     for x in m.get("volumeMounts", []))
                                 for m in mains):
            fail("%s: report %s is not on a volume the training container "
                 "mounts" % (where, report))
    copy_in = run["command"][0] != "efa-preflight"
    if copy_in:
        idx = inits.index(run)
        copiers = [c for c in inits[:idx] if c.get("command", [""])[0] == "cp"]
        if len(copiers) != 1:
            fail("%s: copy-in needs one 'cp' initContainer before %s"
                 % (where, run["name"]))
            return
        cp = copiers[0]
        src, dst = cp["command"][1], cp["command"][2]
        if src != "/usr/local/bin/efa-preflight":
            fail("%s: copies %s, the agent image has /usr/local/bin/efa-preflight"
                 % (where, src))
        if not cp["image"].endswith("-agent"):
            fail("%s: copies from %s, not the agent image" % (where, cp["image"]))
        if dst != run["command"][0]:
            fail("%s: copies to %s but runs %s" % (where, dst, run["command"][0]))
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        dst_dir = os.path.dirname(dst)
        cm = [m for m in cp.get("volumeMounts", []) if m["mountPath"] == dst_dir]
        rm = [m for m in run.get("volumeMounts", []) if m["mountPath"] == dst_dir]
        if not cm or not rm or cm[0]["name"] != rm[0]["name"] \
                or "emptyDir" not in vols.get(cm[0]["name"], {}):
            fail("%s: %s is not one emptyDir mounted by both initContainers"
                 % (where, dst_dir))
        if any(run["image"] != m["image"] for m in mains):
            fail("%s: copy-in runs in %s, not in the training image"
                 % (where, run["image"]))
    elif run["image"] != ds_init["image"]:
        fail("%s: runs %s, the DaemonSet runs %s" % (where, run["image"],
                                                     ds_init["image"]))


def main():
    root, rendered_path = sys.argv[1], sys.argv[2]
    plain = {}
    for p in sorted(glob.glob(os.path.join(root, "k8s", "*.yaml"))):
        for o in load(p):
            plain[key(o)] = o
    chart = {key(o): without_helm_labels(o) for o in load(rendered_path)
             if "helm.sh/hook" not in o.get("metadata", {}).get("annotations", {})}
    options = agent_options(root)

    # 1. k8s/ == chart.
    for k, o in plain.items():
        if k[0] == "Namespace":
            continue
        if k not in chart:
            fail("%s %s/%s is in k8s/ but the chart does not render it" % k)
            continue
        for d in diff(norm(o), norm(chart[k])):
            fail("%s %s/%s differs: %s" % (k + (d,)))

    # 2. The other DaemonSets are the p5 one with other counts.
    ref_key = ("DaemonSet", RELEASE, RELEASE + "-p5-48xlarge")
    if ref_key not in chart:
        fail("the chart renders no %s" % ref_key[2])
        return 1
    ref = chart[ref_key]

    def skeleton(ds):
        ds = norm(ds)
        keys = [x for x in ds["metadata"]["labels"] if x.endswith("/pool")] or ["-"]
        pool = ds["metadata"]["labels"].get(keys[0], "-")
        ds["metadata"]["name"] = "-"
        for labels in (ds["metadata"]["labels"], ds["spec"]["selector"]["matchLabels"],
                       ds["spec"]["template"]["metadata"]["labels"]):
            if keys[0] in labels:
                labels[keys[0]] = "-"
        spec = ds["spec"]["template"]["spec"]
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = []
        agent = spec["containers"][0]
        agent["resources"] = {}
        for e in agent["env"]:
            if e["name"] == "EFA_PREFLIGHT_PEER_SELECTOR":
                e["value"] = e["value"].replace(pool, "-")
        return ds
    for k, o in chart.items():
        if k[0] == "DaemonSet" and k != ref_key:
            for d in diff(skeleton(ref), skeleton(o)):
                fail("DaemonSet %s differs from %s beyond its type: %s"
                     % (k[2], ref_key[2], d))

    # 3. RBAC.
    for kind, ns, name, rules in (
            ("ClusterRole", "", RELEASE, NODE_RULES),
            ("Role", RELEASE, RELEASE, RELEASE_RULES),
            ("Role", "default", RELEASE + "-job", NAMESPACE_RULES),
            ("Role", RELEASE, BUDGET, BUDGET_RULES)):
        for src, objs in (("k8s/", plain), ("chart", chart)):
            o = objs.get((kind, ns, name))
            if o is None:
                fail("%s has no %s %s/%s" % (src, kind, ns, name))
            elif o["rules"] != rules:
                fail("%s %s %s rules %s, docs/reference/rbac.md says %s"
                     % (src, kind, name, o["rules"], rules))
    for src, objs in (("k8s/", plain), ("chart", chart)):
        for k, o in objs.items():
            if k[0] not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            ref_kind = o["roleRef"]["kind"]
            ref_ns = "" if ref_kind == "ClusterRole" else k[1]
            if (ref_kind, ref_ns, o["roleRef"]["name"]) not in objs:
                fail("%s %s %s refers to a missing %s %s"
                     % (src, k[0], k[2], ref_kind, o["roleRef"]["name"]))
            for s in o["subjects"]:
                if ("ServiceAccount", s["namespace"], s["name"]) not in objs:
                    fail("%s %s %s binds a missing ServiceAccount %s/%s"
                         % (src, k[0], k[2], s["namespace"], s["name"]))

    # Every agent account may take the taint budget: a job namespace's too.
    for src, objs in (("k8s/", plain), ("chart", chart)):
        bound = {(s["namespace"], s["name"]) for k, o in objs.items()
                 if k[0] == "RoleBinding" and k[1] == RELEASE
                 and o["roleRef"]["name"] == BUDGET for s in o["subjects"]}
        for k in objs:
            if k[0] == "ServiceAccount" and (k[1], k[2]) not in bound:
                fail("%s ServiceAccount %s/%s is not bound to the taint budget "
                     "Role %s/%s" % (src, k[1], k[2], RELEASE, BUDGET))

    # 4. Labels the agent writes and reads.
    for k, ds in list(plain.items()) + list(chart.items()):
        if k[0] != "DaemonSet":
            continue
        spec = ds["spec"]["template"]["spec"]
        init = spec["containers"][0]
        prefix = env_value(init, "EFA_PREFLIGHT_LABEL_PREFIX")
        if spec.get("nodeSelector", {}).get("%sstatus" % prefix) != "pending":
            fail("DaemonSet %s does not select %sstatus=pending" % (k[2], prefix))
        labels = ds["spec"]["template"]["metadata"]["labels"]
        for term in env_value(init, "EFA_PREFLIGHT_PEER_SELECTOR").split(","):
            lk, _, lv = term.partition("=")
            if labels.get(lk) != lv:
                fail("DaemonSet %s: peer selector term %s does not match its "
                     "pod labels" % (k[2], term))
        if env_value(init, "EFA_PREFLIGHT_MODE") != "daemonset":
            fail("DaemonSet %s: agent mode is not daemonset" % k[2])
        tolerated = {t["key"] for t in spec.get("tolerations", [])}
        for t in NODE_TAINTS + (prefix + "unhealthy",):
            if t not in tolerated:
                fail("DaemonSet %s does not tolerate %s" % (k[2], t))
        for where, lab in (("metadata.labels", ds["metadata"]["labels"]),
                           ("spec.selector.matchLabels", ds["spec"]["selector"]["matchLabels"]),
                           ("pod labels", labels)):
            stray = [x for x in lab if x.endswith("/pool") and x != prefix + "pool"]
            if prefix + "pool" not in lab or stray:
                fail("DaemonSet %s %s: pool label %s, want it under the label "
                     "prefix: %spool" % (k[2], where, stray or "missing", prefix))
        check_token_reach("DaemonSet " + k[2], k[1], spec, init,
                          plain if (k in plain and plain[k] is ds) else chart)
        if spec.get("hostNetwork", False):
            fail("DaemonSet %s uses the host network" % k[2])
        if not device_counts(init)["limits"]:
            fail("DaemonSet %s requests no GPU/EFA devices" % k[2])
        check_ipc_lock("DaemonSet " + k[2], init)
        check_shm("DaemonSet " + k[2], spec, init)
        check_env_names("DaemonSet " + k[2], spec["containers"], options)

    # 5. Examples.
    ds_init = plain[ref_key]["spec"]["template"]["spec"]["containers"][0] \
        if ref_key in plain else ref["spec"]["template"]["spec"]["containers"][0]
    job_sa = plain.get(("ServiceAccount", "default", RELEASE + "-job"))
    if job_sa is None:
        fail("k8s/ has no ServiceAccount default/%s-job" % RELEASE)
        return 1
    seen = {}
    for p in sorted(glob.glob(os.path.join(root, "k8s", "examples", "*.yaml"))):
        for o in load(p):
            check_example(p, o, ds_init, job_sa, plain)
            spec = pod_spec(o)
            check_env_names(p, spec.get("initContainers", []) + spec["containers"],
                            options)
            copy_in = any(c.get("command", [""])[0] == "cp"
                          for c in spec.get("initContainers", []))
            seen[(o["kind"], copy_in)] = p
    for want in (("Job", False), ("Job", True), ("JobSet", False), ("JobSet", True)):
        if want not in seen:
            fail("no %s example with the %s pattern"
                 % (want[0], "copy-in" if want[1] else "full-image"))

    # 7. The chart's values schema against the agent's options.
    check_values_schema(root, options)

    n_checked = len(plain) + len(chart) + len(seen)
    print("%d objects compared, %d failures" % (n_checked, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
