#!/usr/bin/env python3
"""The webhook part of a chart render (webhook.enabled), checked for what
the API server and a platform team rely on:

  check_webhook.py RENDER [--cert-manager [--issuer=KIND/NAME]]

- the MutatingWebhookConfiguration: Pod CREATE only, failurePolicy Ignore,
  timeoutSeconds <= 5, sideEffects None, admissionReviewVersions [v1], a
  reinvocationPolicy, a namespaceSelector that requires the opt-in label
  and excludes the release namespace, an objectSelector that drops pods
  labelled <prefix>inject=false, the Service on /mutate;
- certificates, nothing random rendered (no Secret, no caBundle): the
  certificate Jobs' (a pre-install/pre-upgrade hook making the Secret the
  Deployment mounts for the Service's DNS names, a post-install/upgrade
  hook patching this MutatingWebhookConfiguration's caBundle, with RBAC for
  just that) or cert-manager's (inject-ca-from naming a Certificate for
  that name, writing the Secret the Deployment mounts, from a rendered
  Issuer or the issuerRef given);
- the Deployment: >= 2 replicas, a PodDisruptionBudget selecting its pods,
  a priorityClassName, readiness and liveness on /healthz over HTTPS, no
  service-account token, the Service's target port, every EFA_PREFLIGHT_*
  an agent option, the TLS files where the Secret is mounted;
- RBAC: each listed job service account bound to the node-writing
  ClusterRole, and named by the node policy when there is one.
Prints one line per failure and exits 1 on any."""
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_manifests import agent_options  # noqa: E402

errs = []


def fail(msg):
    errs.append(msg)


def one(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    if len(found) != 1:
        fail("%d %s objects, want 1" % (len(found), kind))
        return {}
    return found[0]


def main():
    render = sys.argv[1]
    cert_manager = "--cert-manager" in sys.argv[2:]
    issuer_ref = None
    for a in sys.argv[2:]:
        if a.startswith("--issuer="):     # --issuer=KIND/NAME: the issuerRef given
            kind, name = a[len("--issuer="):].split("/", 1)
            issuer_ref = {"name": name, "kind": kind, "group": "cert-manager.io"}
    docs = [d for d in yaml.safe_load_all(open(render)) if d]
    mwc = one(docs, "MutatingWebhookConfiguration")
    dep = one(docs, "Deployment")
    svc = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == dep.get("metadata", {}).get("name")]
    if not mwc or not dep or len(svc) != 1:
        fail("no webhook Service named as the Deployment")
        return
    svc = svc[0]
    ns = dep["metadata"]["namespace"]
    hooks = mwc.get("webhooks", [])
    if len(hooks) != 1:
        fail("%d webhooks, want 1" % len(hooks))
        return
    h = hooks[0]
    if h.get("failurePolicy") != "Ignore":
        fail("failurePolicy %r, want Ignore (an outage must not block pod creation)" % h.get("failurePolicy"))
    if not 1 <= h.get("timeoutSeconds", 10) <= 5:
        fail("timeoutSeconds %r, want 1..5" % h.get("timeoutSeconds"))
    if h.get("sideEffects") != "None":
        fail("sideEffects %r, want None" % h.get("sideEffects"))
    if h.get("admissionReviewVersions") != ["v1"]:
        fail("admissionReviewVersions %r, want [v1]" % h.get("admissionReviewVersions"))
    if h.get("reinvocationPolicy") not in ("Never", "IfNeeded"):
        fail("no reinvocationPolicy")
    rules = h.get("rules", [])
    if rules != [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                  "resources": ["pods"], "scope": "Namespaced"}]:
        fail("rules %r, want Pod CREATE only" % rules)
    exprs = h.get("namespaceSelector", {}).get("matchExpressions", [])
    optin = [e for e in exprs if e.get("key", "").endswith("/inject") and e.get("operator") == "In"]
    if not optin:
        fail("namespaceSelector does not require the opt-in label: %r" % exprs)
    prefix = optin[0]["key"][:-len("inject")] if optin else "efa-preflight.io/"
    if {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [ns]} not in exprs:
        fail("namespaceSelector does not exclude the release namespace %s" % ns)
    oexprs = h.get("objectSelector", {}).get("matchExpressions", [])
    if {"key": prefix + "inject", "operator": "NotIn", "values": ["false"]} not in oexprs:
        fail("objectSelector does not drop pods labelled %sinject=false" % prefix)
    s = h.get("clientConfig", {}).get("service", {})
    if (s.get("name"), s.get("namespace"), s.get("path"), s.get("port")) != \
            (svc["metadata"]["name"], ns, "/mutate", 443):
        fail("clientConfig.service %r does not reach the Service on /mutate:443" % s)
    if svc["spec"]["ports"][0].get("port") != 443:
        fail("Service port %r, want 443" % svc["spec"]["ports"][0].get("port"))
    dns = "%s.%s.svc" % (svc["metadata"]["name"], ns)

    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    vol = [v for v in spec.get("volumes", []) if "secret" in v]
    secret_name = vol[0]["secret"]["secretName"] if vol else None
    if not secret_name:
        fail("the Deployment mounts no Secret with the certificate")
    if "caBundle" in h.get("clientConfig", {}):
        fail("caBundle rendered: cainjector or the certificate Job writes it (a rendered one changes every render)")
    if any(d["kind"] == "Secret" for d in docs):
        fail("a Secret rendered: its key would be in the chart's output")
    if cert_manager:
        ann = mwc["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from", "")
        certs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Certificate"}
        cn = ann.split("/", 1)[1] if "/" in ann else ""
        if not ann.startswith(ns + "/") or cn not in certs:
            fail("inject-ca-from %r names no Certificate of the release" % ann)
        else:
            cert = certs[cn]["spec"]
            if dns not in cert.get("dnsNames", []):
                fail("Certificate %s is not for %s" % (cn, dns))
            if cert.get("secretName") != secret_name:
                fail("Certificate writes %s, the Deployment mounts %s" % (cert.get("secretName"), secret_name))
            ref = cert.get("issuerRef", {})
            rendered = {d["metadata"]["name"] for d in docs if d["kind"] == ref.get("kind", "Issuer")}
            if issuer_ref:
                if ref != issuer_ref:
                    fail("Certificate %s's issuerRef %r, want the one given %r" % (cn, ref, issuer_ref))
                if any(d["kind"] == "Issuer" for d in docs):
                    fail("an Issuer rendered although issuerRef names one")
            elif ref.get("name") not in rendered:
                fail("Certificate %s's issuer %s is not rendered" % (cn, ref.get("name")))
    else:
        jobs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Job"}
        create = [j for j in jobs.values() if "create" in j["spec"]["template"]["spec"]["containers"][0].get("args", [])[:1]]
        patch = [j for j in jobs.values() if "patch" in j["spec"]["template"]["spec"]["containers"][0].get("args", [])[:1]]
        if len(create) != 1 or len(patch) != 1:
            fail("%d certificate create Jobs and %d patch Jobs, want 1 and 1" % (len(create), len(patch)))
            return
        def args(j):
            return dict(a[2:].split("=", 1) for a in j["spec"]["template"]["spec"]["containers"][0]["args"][1:])
        def hook(j):
            return set(j["metadata"].get("annotations", {}).get("helm.sh/hook", "").split(","))
        ca, pa = args(create[0]), args(patch[0])
        if hook(create[0]) != {"pre-install", "pre-upgrade"}:
            fail("the create Job runs at %s, want pre-install,pre-upgrade (before the Deployment)" % sorted(hook(create[0])))
        if hook(patch[0]) != {"post-install", "post-upgrade"}:
            fail("the patch Job runs at %s, want post-install,post-upgrade (after the configuration)" % sorted(hook(patch[0])))
        if ca.get("secret-name") != secret_name or pa.get("secret-name") != secret_name:
            fail("the certificate Jobs write %s and read %s, the Deployment mounts %s"
                 % (ca.get("secret-name"), pa.get("secret-name"), secret_name))
        if ca.get("namespace") != ns or pa.get("namespace") != ns:
            fail("the certificate Jobs work in %s/%s, not the release namespace %s" % (ca.get("namespace"), pa.get("namespace"), ns))
        if dns not in ca.get("host", "").split(","):
            fail("the certificate is not for %s: --host=%s" % (dns, ca.get("host")))
        if pa.get("webhook-name") != mwc["metadata"]["name"] or pa.get("patch-mutating") != "true":
            fail("the patch Job patches %r (mutating %r), not %s" % (pa.get("webhook-name"), pa.get("patch-mutating"),
                                                                     mwc["metadata"]["name"]))
        items = {i["key"]: i["path"] for i in vol[0]["secret"].get("items", [])} if vol else {}
        if items != {"cert": "tls.crt", "key": "tls.key"}:
            fail("the Deployment mounts %r of the Job's Secret, want cert as tls.crt and key as tls.key" % items)
        sa = create[0]["spec"]["template"]["spec"].get("serviceAccountName")
        rules = [r for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == sa for r in d["rules"]]
        if rules != [{"apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations"],
                      "resourceNames": [mwc["metadata"]["name"]], "verbs": ["get", "update", "patch"]}]:
            fail("the certificate Jobs' ClusterRole %s is not exactly get/update/patch of %s: %r"
                 % (sa, mwc["metadata"]["name"], rules))

    if dep["spec"].get("replicas", 1) < 2:
        fail("Deployment replicas %r, want >= 2" % dep["spec"].get("replicas"))
    pdbs = [d for d in docs if d["kind"] == "PodDisruptionBudget"
            and d["spec"]["selector"]["matchLabels"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()]
    if len(pdbs) != 1:
        fail("%d PodDisruptionBudgets select the webhook's pods, want 1" % len(pdbs))
    if not spec.get("priorityClassName"):
        fail("no priorityClassName on the webhook's pods")
    if spec.get("automountServiceAccountToken") is not False:
        fail("the webhook's pods mount a service-account token they do not need")
    for probe in ("readinessProbe", "livenessProbe"):
        g = c.get(probe, {}).get("httpGet", {})
        if (g.get("path"), g.get("scheme")) != ("/healthz", "HTTPS"):
            fail("%s %r, want httpGet /healthz over HTTPS" % (probe, g))
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    if svc["spec"]["ports"][0].get("targetPort") not in ports:
        fail("Service targetPort %r is no container port" % svc["spec"]["ports"][0].get("targetPort"))
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    opts = agent_options(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    for k in env:
        if k.startswith("EFA_PREFLIGHT_") and k[14:].lower() not in opts:
            fail("%s is not an agent option" % k)
    if str(env.get("EFA_PREFLIGHT_WEBHOOK_PORT")) != str(list(ports.values())[0] if ports else None):
        fail("webhook_port %r is not the container port %r" % (env.get("EFA_PREFLIGHT_WEBHOOK_PORT"), ports))
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    tls_dir = mounts.get(vol[0]["name"]) if vol else None
    for k, f in (("EFA_PREFLIGHT_TLS_CERT_FILE", "tls.crt"), ("EFA_PREFLIGHT_TLS_KEY_FILE", "tls.key")):
        if env.get(k) != "%s/%s" % (tls_dir, f):
            fail("%s %r is not %s in the mounted Secret (%s)" % (k, env.get(k), f, tls_dir))
    if not re.search(r"(:[^/]+-agent|@sha256:[0-9a-f]{64})$", env.get("EFA_PREFLIGHT_AGENT_IMAGE") or ""):
        fail("agent_image %r is not the -agent image" % env.get("EFA_PREFLIGHT_AGENT_IMAGE"))

    crole = [d for d in docs if d["kind"] == "ClusterRole"
             and "helm.sh/hook" not in d["metadata"].get("annotations", {})][0]["metadata"]["name"]
    bound = {(s["namespace"], s["name"]) for d in docs if d["kind"] == "ClusterRoleBinding"
             and d["roleRef"]["name"] == crole for s in d["subjects"]}
    vap = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    gate_sas = set()
    for d in docs:
        if d["kind"] == "ClusterRoleBinding" and d["metadata"].get("labels", {}).get(
                "app.kubernetes.io/component") == "webhook-rbac":
            gate_sas |= {(s["namespace"], s["name"]) for s in d["subjects"]}
    if not gate_sas <= bound:
        fail("job service accounts %s not bound to %s" % (sorted(gate_sas - bound), crole))
    for ns_, name in gate_sas:
        roles = [d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["namespace"] == ns_
                 and {"kind": "ServiceAccount", "name": name, "namespace": ns_} in d["subjects"]]
        if not roles:
            fail("job service account %s/%s cannot read its pods (no RoleBinding)" % (ns_, name))
        if vap:
            cond = vap[0]["spec"]["matchConditions"][0]["expression"]
            if "system:serviceaccount:%s:%s" % (ns_, name) not in cond:
                fail("node policy does not name %s/%s" % (ns_, name))


main()
for e in errs:
    print("FAIL " + e)
if not errs:
    print("webhook render: configuration, certificates, Deployment and RBAC as required")
sys.exit(1 if errs else 0)
