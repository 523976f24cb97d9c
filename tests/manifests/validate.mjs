// Validate Kubernetes manifests and Helm values against real schemas.
//
//   node validate.mjs manifests FILE...        every YAML document of FILEs
//   node validate.mjs values VALUES SCHEMA     VALUES against a JSON schema
//
// Manifests: each document is checked with the kubernetes-models validator
// of its apiVersion/kind (schemas generated from the Kubernetes OpenAPI
// spec). Those validators ignore unknown fields, so the validator also
// watches which fields the schema reads: a field no schema reads is
// reported as unknown, as `kubectl apply --validate=strict` would. JobSet is
// a CRD with no model here: its own fields are checked with
// jobset-v1alpha2.schema.json and each replicatedJobs[].template with the
// batch/v1 JobTemplateSpec validator. The Prometheus Operator's and
// cert-manager's CRDs (ServiceMonitor, PrometheusRule, Certificate, Issuer,
// ClusterIssuer) by the @kubernetes-models packages generated from them.
// Exit 0 when everything is valid, 1 otherwise; every error is printed as
// FILE: KIND/NAME PATH: message.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Ajv from "ajv";
import { parseAllDocuments } from "yaml";

const here = dirname(fileURLToPath(import.meta.url));

// apiVersion group -> the kubernetes-models schema name prefix.
const GROUPS = {
  "": "Core",
  apps: "Apps",
  batch: "Batch",
  "rbac.authorization.k8s.io": "Rbac",
  policy: "Policy",
  "scheduling.k8s.io": "Scheduling",
  "networking.k8s.io": "Networking",
  "admissionregistration.k8s.io": "Admissionregistration",
};

async function modelValidator(schemaName) {
  try {
    const mod = await import(`kubernetes-models/_schemas/${schemaName}`);
    return mod.validate;
  } catch {
    return null;
  }
}

// CRD apiVersion -> [package, schema name prefix]; those packages export
// no _schemas/, so they are imported by file.
const CRDS = {
  "monitoring.coreos.com/v1": [
    "@kubernetes-models/prometheus-operator",
    "ComGithubPrometheusOperatorPrometheusOperatorPkgApisMonitoringV1",
  ],
  "cert-manager.io/v1": [
    "@kubernetes-models/cert-manager",
    "ComGithubCertManagerCertManagerPkgApisCertmanagerV1",
  ],
};

async function crdValidator(apiVersion, kind) {
  const [pkg, prefix] = CRDS[apiVersion];
  const file = join(here, "node_modules", pkg, "_schemas", `${prefix}${kind}.js`);
  try {
    return (await import(pathToFileURL(file).href)).validate;
  } catch {
    return null;
  }
}

async function validatorFor(apiVersion, kind) {
  if (apiVersion in CRDS) return crdValidator(apiVersion, kind);
  const [group, version] = apiVersion.includes("/")
    ? apiVersion.split("/")
    : ["", apiVersion];
  if (!(group in GROUPS)) return null;
  const v = version.charAt(0).toUpperCase() + version.slice(1);
  return modelValidator(`IoK8sApi${GROUPS[group]}${v}${kind}`);
}

// Wrap v in proxies that record which keys a validator reads. Objects whose
// keys the validator enumerates are maps (labels, resources) and accept any
// key.
function track(v, path, seen) {
  if (v === null || typeof v !== "object") return v;
  const st = { read: new Set(), enumerated: false, path, obj: v };
  seen.push(st);
  const copy = Array.isArray(v)
    ? v.map((x, i) => track(x, `${path}/${i}`, seen))
    : Object.fromEntries(
        Object.entries(v).map(([k, x]) => [k, track(x, `${path}/${k}`, seen)]),
      );
  return new Proxy(copy, {
    get(t, k, r) {
      if (typeof k === "string") st.read.add(k);
      return Reflect.get(t, k, r);
    },
    has(t, k) {
      if (typeof k === "string") st.read.add(k);
      return Reflect.has(t, k);
    },
    ownKeys(t) {
      st.enumerated = true;
      return Reflect.ownKeys(t);
    },
    getOwnPropertyDescriptor(t, k) {
      if (typeof k === "string") st.read.add(k);
      return Reflect.getOwnPropertyDescriptor(t, k);
    },
  });
}

function strictValidate(validate, obj, basePath) {
  const seen = [];
  const ok = validate(track(obj, basePath, seen));
  const errors = ok
    ? []
    : (validate.errors || []).map(
        (e) =>
          `${basePath}${e.instancePath || ""}: ${e.message || e.keyword}` +
          (e.params && Object.keys(e.params).length
            ? ` ${JSON.stringify(e.params)}`
            : ""),
      );
  const unknown = [];
  for (const st of seen) {
    if (Array.isArray(st.obj) || st.enumerated) continue;
    for (const k of Object.keys(st.obj)) {
      if (!st.read.has(k)) unknown.push(`${st.path}/${k}`);
    }
  }
  // Report an unknown field once, not again for everything under it.
  for (const u of unknown) {
    if (!unknown.some((o) => u.startsWith(`${o}/`)))
      errors.push(`${u}: unknown field`);
  }
  return errors;
}

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });

function ajvErrors(validate, basePath) {
  return (validate.errors || []).map(
    (e) =>
      `${basePath}${e.instancePath}: ${e.message}` +
      (e.params && e.params.additionalProperty
        ? ` '${e.params.additionalProperty}'`
        : "") +
      (e.params && e.params.propertyName ? ` '${e.params.propertyName}'` : ""),
  );
}

let jobsetTop = null;
async function validateJobSet(doc) {
  if (!jobsetTop) {
    const schema = JSON.parse(
      readFileSync(join(here, "jobset-v1alpha2.schema.json"), "utf8"),
    );
    jobsetTop = ajv.compile(schema);
  }
  const errors = jobsetTop(doc) ? [] : ajvErrors(jobsetTop, "");
  const meta = await modelValidator("IoK8sApimachineryPkgApisMetaV1ObjectMeta");
  if (meta && doc.metadata) errors.push(...strictValidate(meta, doc.metadata, "/metadata"));
  const jts = await modelValidator("IoK8sApiBatchV1JobTemplateSpec");
  const rjs = (doc.spec && doc.spec.replicatedJobs) || [];
  rjs.forEach((rj, i) => {
    if (rj && rj.template)
      errors.push(
        ...strictValidate(jts, rj.template, `/spec/replicatedJobs/${i}/template`),
      );
  });
  return errors;
}

async function validateManifests(files) {
  let bad = 0;
  let count = 0;
  for (const file of files) {
    const docs = parseAllDocuments(readFileSync(file, "utf8"));
    for (const d of docs) {
      if (d.errors.length) {
        console.log(`${file}: YAML: ${d.errors[0].message}`);
        bad++;
        continue;
      }
      const obj = d.toJS();
      if (obj === null || obj === undefined) continue;
      count++;
      const id = `${obj.kind}/${obj.metadata && obj.metadata.name}`;
      let errors;
      if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
        errors = ["/: apiVersion and kind are required strings"];
      } else if (obj.apiVersion === "jobset.x-k8s.io/v1alpha2" && obj.kind === "JobSet") {
        errors = await validateJobSet(obj);
      } else {
        const validate = await validatorFor(obj.apiVersion, obj.kind);
        errors = validate
          ? strictValidate(validate, obj, "")
          : [`/: no schema for ${obj.apiVersion} ${obj.kind}`];
      }
      if (errors.length) {
        bad++;
        for (const e of errors) console.log(`${file}: ${id} ${e}`);
      } else {
        console.log(`ok ${file}: ${id}`);
      }
    }
  }
  console.log(`${count} documents, ${bad} invalid`);
  return bad === 0 && count > 0;
}

function validateValues(valuesFile, schemaFile) {
  const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
  const docs = parseAllDocuments(readFileSync(valuesFile, "utf8"));
  if (docs.length !== 1 || docs[0].errors.length) {
    console.log(`${valuesFile}: not one YAML document`);
    return false;
  }
  const validate = ajv.compile(schema);
  if (validate(docs[0].toJS() ?? {})) {
    console.log(`ok ${valuesFile} against ${schemaFile}`);
    return true;
  }
  for (const e of ajvErrors(validate, "")) console.log(`${valuesFile}: ${e}`);
  return false;
}

const [cmd, ...args] = process.argv.slice(2);
let ok;
if (cmd === "manifests" && args.length > 0) {
  ok = await validateManifests(args);
} else if (cmd === "values" && args.length === 2) {
  ok = validateValues(args[0], args[1]);
} else {
  console.error("usage: validate.mjs manifests FILE... | values VALUES SCHEMA");
  process.exit(2);
}
process.exit(ok ? 0 : 1);
