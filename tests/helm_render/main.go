// helm-render: `helm template` for the tests, on Helm's own template engine.
//
//	helm-render CHART [--name N] [--namespace NS] [-f VALUES]... [--set K=V]...
//	            [--set-string K=V]... [--kube-version V] [--strict]
//	            [--skip-schema-validation] [--notes | --print-values]
//	            [--repo DIR [--version V]] [--lookup OBJECTS.yaml]
//	helm-render package CHART_DIR -d DIR
//
// CHART is a chart directory, a packaged chart (.tgz, as `helm package`
// writes it), or with --repo the name of a chart in a chart repository
// directory: its index.yaml names the .tgz, whose sha256 must be the
// index's digest (as `helm install --repo` checks), the newest version
// unless --version says. `package` writes CHART_DIR as DIR/NAME-VERSION.tgz
// (every file under one top directory NAME/, in name order, fixed times,
// so the same chart gives the same bytes) and adds it to DIR/index.yaml
// (created if missing; the same version replaced), as `helm package` and
// `helm repo index` do.
//
// No helm binary is available where the tests run, so this is the part of
// Helm 3 that `helm template` uses, on the same libraries: Go's text/template
// with sprig's functions and Helm's own (include, tpl, required, toYaml,
// fromYaml, toJson, fromJson, lookup), values coalesced as Helm does
// (values.yaml, then each -f, then --set; null removes a key) and validated
// against values.schema.json with gojsonschema, the validator Helm 3 uses.
// The chart's kubeVersion is checked against --kube-version. Output is Helm's:
// "---\n# Source: CHART/templates/FILE" before each YAML document, sorted
// by kind in Helm's install order (releaseutil.InstallOrder). --strict fails on a value that does not
// exist (Helm's --strict lint); without it a missing value prints nothing,
// as in Helm.
//
// Build (Debian: golang-go, golang-github-masterminds-sprig-dev,
// golang-k8s-sigs-yaml-dev, golang-github-xeipuuv-gojsonschema-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o build/helm-render ./tests/helm_render
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/semver"
	"github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

type options struct {
	chart, name, namespace, kubeVersion  string
	repo, version                        string
	files, sets, setStrings              []string
	strict, notes, printValues, noSchema bool
	lookup                               string
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "helm-render: %s\nusage: helm-render CHART [--name N] [--namespace NS] "+
		"[-f VALUES]... [--set K=V]... [--set-string K=V]... [--kube-version V] [--strict] "+
		"[--skip-schema-validation] [--notes | --print-values] [--repo DIR [--version V]] [--lookup OBJECTS]\n"+
		"       helm-render package CHART_DIR -d DIR\n", msg)
	os.Exit(2)
}

func parseArgs(args []string) options {
	o := options{name: "release-name", namespace: "default", kubeVersion: "1.31.0"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() string {
			if i+1 >= len(args) {
				usage(a + " needs a value")
			}
			i++
			return args[i]
		}
		switch a {
		case "--name":
			o.name = val()
		case "--namespace", "-n":
			o.namespace = val()
		case "-f", "--values":
			o.files = append(o.files, val())
		case "--set":
			o.sets = append(o.sets, val())
		case "--set-string":
			o.setStrings = append(o.setStrings, val())
		case "--kube-version":
			o.kubeVersion = val()
		case "--strict":
			o.strict = true
		case "--skip-schema-validation":
			o.noSchema = true
		case "--notes":
			o.notes = true
		case "--print-values":
			o.printValues = true
		case "--repo":
			o.repo = val()
		case "--version":
			o.version = val()
		case "--lookup":
			o.lookup = val()
		default:
			if strings.HasPrefix(a, "-") || o.chart != "" {
				usage("unexpected argument " + a)
			}
			o.chart = a
		}
	}
	if o.chart == "" {
		usage("no chart directory")
	}
	return o
}

// ---------------------------------------------------------------- values

// readObjects: every YAML document of file that is an object.
func readObjects(file string) ([]map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []map[string]interface{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func readYAMLMap(file string) (map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if m == nil {
		m = map[string]interface{}{}
	}
	return m, nil
}

// coalesce merges src (user values) over dst (defaults) as Helm's
// chartutil.CoalesceTables does: maps merge key by key, anything else is
// replaced, and a null removes the key.
func coalesce(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			dst[k] = coalesce(dm, sm)
		} else {
			dst[k] = v
		}
	}
	return dst
}

// splitKey splits a --set key at unescaped dots ("a.b\.c" -> a, b.c).
func splitKey(k string) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] == '\\' && i+1 < len(k) {
			cur.WriteByte(k[i+1])
			i++
		} else if k[i] == '.' {
			parts = append(parts, cur.String())
			cur.Reset()
		} else {
			cur.WriteByte(k[i])
		}
	}
	return append(parts, cur.String())
}

// typed gives a --set value the type Helm's strvals parser gives it:
// true/false, null, integers; everything else is a string. {a,b} is a list.
func typed(v string, asString bool) interface{} {
	if asString {
		return v
	}
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		var list []interface{}
		for _, x := range strings.Split(v[1:len(v)-1], ",") {
			list = append(list, typed(x, false))
		}
		return list
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && (v == "0" || !strings.HasPrefix(v, "0")) {
		return n
	}
	return v
}

func setValue(m map[string]interface{}, kv string, asString bool) error {
	eq := strings.IndexByte(kv, '=')
	if eq <= 0 {
		return fmt.Errorf("--set %q: want KEY=VALUE", kv)
	}
	keys := splitKey(kv[:eq])
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]interface{})
		if !ok {
			sub = map[string]interface{}{}
			m[k] = sub
		}
		m = sub
	}
	m[keys[len(keys)-1]] = typed(kv[eq+1:], asString)
	return nil
}

func loadValues(o options) (map[string]interface{}, error) {
	vals, err := readYAMLMap(filepath.Join(o.chart, "values.yaml"))
	if err != nil {
		return nil, err
	}
	user := map[string]interface{}{}
	for _, f := range o.files {
		m, err := readYAMLMap(f)
		if err != nil {
			return nil, err
		}
		user = coalesce(user, m)
	}
	set := map[string]interface{}{}
	for _, kv := range o.sets {
		if err := setValue(set, kv, false); err != nil {
			return nil, err
		}
	}
	for _, kv := range o.setStrings {
		if err := setValue(set, kv, true); err != nil {
			return nil, err
		}
	}
	// --set keeps its nulls until it is merged, as in Helm.
	user = mergeKeepNull(user, set)
	return coalesce(vals, user), nil
}

func mergeKeepNull(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		sm, sok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			dst[k] = mergeKeepNull(dm, sm)
		} else {
			dst[k] = v
		}
	}
	return dst
}

// validate checks the values against values.schema.json as Helm's
// chartutil.ValidateAgainstSchema does, with its error format.
func validate(chartName, chartDir string, vals map[string]interface{}) error {
	schema, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	doc, err := json.Marshal(vals)
	if err != nil {
		return err
	}
	res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema),
		gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return fmt.Errorf("values.schema.json: %v", err)
	}
	if res.Valid() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n", chartName)
	for _, e := range res.Errors() {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	return errors.New(b.String())
}

// ---------------------------------------------------------------- engine

// Helm's toYaml: sigs.k8s.io/yaml, without the trailing newline.
func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func required(msg string, v interface{}) (interface{}, error) {
	if v == nil {
		return v, errors.New(msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return v, errors.New(msg)
	}
	return v, nil
}

// funcMap is sprig's (less env and expandenv, as Helm removes them) and
// Helm's; include and tpl are bound to the template set in render.
func funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	extra := template.FuncMap{
		"toYaml":   toYAML,
		"fromYaml": fromYAML,
		"toJson":   toJSON,
		"fromJson": fromJSON,
		"required": required,
		"include":  func(string, interface{}) (string, error) { return "", nil },
		"tpl":      func(string, interface{}) (string, error) { return "", nil },
		"lookup": func(string, string, string, string) (map[string]interface{}, error) {
			return map[string]interface{}{}, nil // helm template: no cluster
		},
	}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

type chartMeta struct {
	APIVersion  string   `json:"apiVersion"`
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	AppVersion  string   `json:"appVersion"`
	KubeVersion string   `json:"kubeVersion"`
	Description string   `json:"description"`
	Type        string   `json:"type"`
	Keywords    []string `json:"keywords"`
}

func loadChart(dir string) (chartMeta, map[string]interface{}, error) {
	var c chartMeta
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return c, nil, err
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return c, nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if c.Name == "" || c.Version == "" {
		return c, nil, errors.New("Chart.yaml: name and version are required")
	}
	// .Chart has the Chart.yaml fields under Helm's Go names.
	obj := map[string]interface{}{
		"APIVersion": c.APIVersion, "Name": c.Name, "Version": c.Version,
		"AppVersion": c.AppVersion, "KubeVersion": c.KubeVersion,
		"Description": c.Description, "Type": c.Type, "Keywords": c.Keywords,
	}
	return c, obj, nil
}

func capabilities(v string) (map[string]interface{}, error) {
	sv, err := semver.NewVersion(v)
	if err != nil {
		return nil, fmt.Errorf("--kube-version %q: %v", v, err)
	}
	kv := map[string]interface{}{
		"Version": "v" + sv.String(), "GitVersion": "v" + sv.String(),
		"Major": strconv.FormatUint(sv.Major(), 10), "Minor": strconv.FormatUint(sv.Minor(), 10),
	}
	return map[string]interface{}{"KubeVersion": kv, "APIVersions": []string{}}, nil
}

// Helm's releaseutil.SplitManifests separator and InstallOrder.
var docSep = regexp.MustCompile("(?:^|\\s*\n)---\\s*")

var installOrder = []string{"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota",
	"LimitRange", "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret",
	"SecretList", "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService"}

type manifest struct{ source, kind, body string }

// kindLess: known kinds in install order, then unknown ones by name.
func kindLess(a, b string) bool {
	rank := func(k string) int {
		for i, x := range installOrder {
			if x == k {
				return i
			}
		}
		return len(installOrder)
	}
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return ra < rb
	}
	return ra == len(installOrder) && a < b
}

// chartFiles is a chart's .Files, as Helm's loader fills it: every file but
// Chart.yaml, values.yaml, values.schema.json and what is under templates/
// and charts/ (the chart has no .helmignore), by path from the chart's root.
type chartFiles map[string][]byte

// Get returns the file's content, "" when the chart has no such file (as Helm).
func (f chartFiles) Get(name string) string { return string(f[name]) }

// GetBytes returns the file's content, nil when the chart has no such file.
func (f chartFiles) GetBytes(name string) []byte { return f[name] }

func loadFiles(chart string) (chartFiles, error) {
	f := chartFiles{}
	err := filepath.Walk(chart, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(chart, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			if rel == "templates" || rel == "charts" {
				return filepath.SkipDir
			}
			return nil
		}
		switch rel {
		case "Chart.yaml", "values.yaml", "values.schema.json":
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f[rel] = data
		return nil
	})
	return f, err
}

func render(o options) (string, error) {
	meta, chartObj, err := loadChart(o.chart)
	if err != nil {
		return "", err
	}
	vals, err := loadValues(o)
	if err != nil {
		return "", err
	}
	if !o.noSchema {
		if err := validate(meta.Name, o.chart, vals); err != nil {
			return "", err
		}
	}
	if o.printValues {
		return toYAML(vals) + "\n", nil
	}
	caps, err := capabilities(o.kubeVersion)
	if err != nil {
		return "", err
	}
	if meta.KubeVersion != "" {
		c, err := semver.NewConstraint(meta.KubeVersion)
		if err != nil {
			return "", fmt.Errorf("Chart.yaml kubeVersion %q: %v", meta.KubeVersion, err)
		}
		if !c.Check(semver.MustParse(o.kubeVersion)) {
			return "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes v%s",
				meta.KubeVersion, o.kubeVersion)
		}
	}

	paths, err := filepath.Glob(filepath.Join(o.chart, "templates", "*"))
	if err != nil {
		return "", err
	}
	sort.Strings(paths)
	t := template.New(meta.Name)
	if o.strict {
		t.Option("missingkey=error")
	} else {
		t.Option("missingkey=zero")
	}
	funcs := funcMap()
	// --lookup: the objects a cluster holds, as `helm upgrade` would find
	// them (the same release rendered again); without it, none.
	if o.lookup != "" {
		objs, err := readObjects(o.lookup)
		if err != nil {
			return "", err
		}
		funcs["lookup"] = func(apiVersion, kind, ns, name string) (map[string]interface{}, error) {
			for _, obj := range objs {
				md, _ := obj["metadata"].(map[string]interface{})
				if obj["apiVersion"] == apiVersion && obj["kind"] == kind && md != nil &&
					md["name"] == name && (ns == "" || md["namespace"] == ns) {
					return obj, nil
				}
			}
			return map[string]interface{}{}, nil
		}
	}
	// include and tpl execute templates of this set, as Helm's engine does.
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		c, err := t.Clone()
		if err != nil {
			return "", err
		}
		n, err := c.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %v", text, err)
		}
		var buf bytes.Buffer
		if err := n.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	t.Funcs(funcs)
	var names []string
	for _, p := range paths {
		base := filepath.Base(p)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		name := path.Join(meta.Name, "templates", base)
		if _, err := t.New(name).Parse(string(data)); err != nil {
			return "", err
		}
		names = append(names, name)
	}

	files, err := loadFiles(o.chart)
	if err != nil {
		return "", err
	}
	top := map[string]interface{}{
		"Values": vals,
		"Chart":  chartObj,
		"Release": map[string]interface{}{
			"Name": o.name, "Namespace": o.namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Capabilities": caps,
		"Files":        files,
	}
	var out strings.Builder
	var docs []manifest
	for _, name := range names {
		base := path.Base(name)
		isNotes := base == "NOTES.txt"
		if strings.HasPrefix(base, "_") || isNotes != o.notes {
			continue
		}
		if !isNotes && !strings.HasSuffix(base, ".yaml") && !strings.HasSuffix(base, ".yml") &&
			!strings.HasSuffix(base, ".tpl") {
			continue
		}
		top["Template"] = map[string]interface{}{"Name": name, "BasePath": path.Join(meta.Name, "templates")}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, name, top); err != nil {
			return "", err
		}
		s := strings.ReplaceAll(buf.String(), "<no value>", "")
		if isNotes {
			out.WriteString(s)
			continue
		}
		for _, d := range docSep.Split(s, -1) {
			if strings.TrimSpace(d) == "" {
				continue
			}
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(d), &head); err != nil {
				return "", fmt.Errorf("YAML parse error on %s: %v", name, err)
			}
			docs = append(docs, manifest{name, head.Kind, strings.TrimSpace(d)})
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return kindLess(docs[i].kind, docs[j].kind) })
	for _, d := range docs {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", d.source, d.body)
	}
	return out.String(), nil
}

// ---------------------------------------------------------------- packages

// chartFilesOf lists a chart directory's files (relative, slash-separated,
// sorted), leaving out what Helm's packager leaves out by default: nothing
// here but VCS and editor droppings, as the chart has no .helmignore.
func chartFilesOf(dir string) ([]string, error) {
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		base := filepath.Base(p)
		if info.IsDir() {
			if rel != "." && (base == ".git" || base == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(base, "~") || strings.HasSuffix(base, ".swp") || base == ".DS_Store" {
			return nil
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	return out, err
}

type indexEntry struct {
	APIVersion  string   `json:"apiVersion"`
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	AppVersion  string   `json:"appVersion,omitempty"`
	KubeVersion string   `json:"kubeVersion,omitempty"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	Created     string   `json:"created"`
	Digest      string   `json:"digest"`
	URLs        []string `json:"urls"`
}

type repoIndex struct {
	APIVersion string                  `json:"apiVersion"`
	Entries    map[string][]indexEntry `json:"entries"`
	Generated  string                  `json:"generated"`
}

// packageChart writes dir as out/NAME-VERSION.tgz and indexes it.
func packageChart(dir, out string) (string, error) {
	meta, _, err := loadChart(dir)
	if err != nil {
		return "", err
	}
	files, err := chartFilesOf(dir)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	// Fixed times: the same chart packs to the same bytes, and digest.
	stamp := time.Unix(0, 0).UTC()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		hdr := &tar.Header{Name: meta.Name + "/" + f, Mode: 0644, Size: int64(len(data)),
			ModTime: stamp, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", err
		}
		if _, err := tw.Write(data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0755); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%s.tgz", meta.Name, meta.Version)
	path := filepath.Join(out, name)
	if err := os.WriteFile(path, buf.Bytes(), 0644); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())

	idxPath := filepath.Join(out, "index.yaml")
	idx := repoIndex{APIVersion: "v1", Entries: map[string][]indexEntry{}}
	if data, err := os.ReadFile(idxPath); err == nil {
		if err := yaml.Unmarshal(data, &idx); err != nil {
			return "", fmt.Errorf("%s: %v", idxPath, err)
		}
		if idx.Entries == nil {
			idx.Entries = map[string][]indexEntry{}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	e := indexEntry{APIVersion: meta.APIVersion, Name: meta.Name, Version: meta.Version,
		AppVersion: meta.AppVersion, KubeVersion: meta.KubeVersion,
		Description: meta.Description, Type: meta.Type, Keywords: meta.Keywords,
		Created: now, Digest: hex.EncodeToString(sum[:]), URLs: []string{name}}
	var kept []indexEntry
	for _, x := range idx.Entries[meta.Name] {
		if x.Version != meta.Version {
			kept = append(kept, x)
		}
	}
	kept = append([]indexEntry{e}, kept...)
	sort.SliceStable(kept, func(i, j int) bool {
		vi, ei := semver.NewVersion(kept[i].Version)
		vj, ej := semver.NewVersion(kept[j].Version)
		return ei == nil && ej == nil && vi.GreaterThan(vj)
	})
	idx.Entries[meta.Name] = kept
	idx.Generated = now
	data, err := yaml.Marshal(idx)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(idxPath, data, 0644)
}

// unpackChart extracts a packaged chart into a new directory under tmp and
// returns the chart's directory: every entry under one top directory, no
// path leaving it, regular files only (as Helm's loader insists).
func unpackChart(tgz, tmp string) (string, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("%s: not a gzip archive: %v", tgz, err)
	}
	tr := tar.NewReader(gz)
	top := ""
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %v", tgz, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if hdr.Typeflag != tar.TypeReg {
			return "", fmt.Errorf("%s: %s is not a regular file", tgz, hdr.Name)
		}
		name := path.Clean(hdr.Name)
		parts := strings.SplitN(name, "/", 2)
		if path.IsAbs(name) || strings.HasPrefix(name, "..") || len(parts) != 2 {
			return "", fmt.Errorf("%s: entry %q is not inside the chart's directory", tgz, hdr.Name)
		}
		if top == "" {
			top = parts[0]
		} else if parts[0] != top {
			return "", fmt.Errorf("%s: more than one top directory (%s, %s)", tgz, top, parts[0])
		}
		dst := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0755); err != nil {
			return "", err
		}
		data, err := io.ReadAll(io.LimitReader(tr, 64<<20))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, data, 0644); err != nil {
			return "", err
		}
	}
	if top == "" {
		return "", fmt.Errorf("%s: an empty archive", tgz)
	}
	dir := filepath.Join(tmp, top)
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		return "", fmt.Errorf("%s: no %s/Chart.yaml", tgz, top)
	}
	return dir, nil
}

// fromRepo finds chart (version, else the newest) in a repository
// directory's index.yaml and checks the archive against its digest.
func fromRepo(repo, chart, version string) (string, error) {
	repo = strings.TrimPrefix(repo, "file://")
	data, err := os.ReadFile(filepath.Join(repo, "index.yaml"))
	if err != nil {
		return "", fmt.Errorf("repository %s: %v", repo, err)
	}
	var idx repoIndex
	if err := yaml.Unmarshal(data, &idx); err != nil {
		return "", fmt.Errorf("repository %s: index.yaml: %v", repo, err)
	}
	var pick *indexEntry
	for i, e := range idx.Entries[chart] {
		ev, err := semver.NewVersion(e.Version)
		if err != nil {
			continue
		}
		if version != "" && e.Version != version {
			continue
		}
		if pick == nil || ev.GreaterThan(semver.MustParse(pick.Version)) {
			pick = &idx.Entries[chart][i]
		}
	}
	if pick == nil {
		if version != "" {
			return "", fmt.Errorf("chart %q version %q not found in %s", chart, version, repo)
		}
		return "", fmt.Errorf("chart %q not found in %s", chart, repo)
	}
	if len(pick.URLs) == 0 {
		return "", fmt.Errorf("%s %s: no urls in the index", chart, pick.Version)
	}
	u := pick.URLs[0]
	if strings.Contains(u, "://") && !strings.HasPrefix(u, "file://") {
		return "", fmt.Errorf("%s %s: %s is not in the repository directory", chart, pick.Version, u)
	}
	tgz := strings.TrimPrefix(u, "file://")
	if !filepath.IsAbs(tgz) {
		tgz = filepath.Join(repo, tgz)
	}
	blob, err := os.ReadFile(tgz)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(blob)
	if got := hex.EncodeToString(sum[:]); got != pick.Digest {
		return "", fmt.Errorf("%s: sha256 %s, the index says %s", tgz, got, pick.Digest)
	}
	return tgz, nil
}

// resolveChart turns CHART (a directory, a .tgz, or a name in --repo) into
// a chart directory.
func resolveChart(o *options) (func(), error) {
	done := func() {}
	tgz := ""
	if o.repo != "" {
		t, err := fromRepo(o.repo, o.chart, o.version)
		if err != nil {
			return done, err
		}
		tgz = t
	} else if st, err := os.Stat(o.chart); err == nil && !st.IsDir() {
		tgz = o.chart
	}
	if tgz == "" {
		return done, nil
	}
	tmp, err := os.MkdirTemp("", "helm-render-")
	if err != nil {
		return done, err
	}
	done = func() { os.RemoveAll(tmp) }
	dir, err := unpackChart(tgz, tmp)
	if err != nil {
		return done, err
	}
	o.chart = dir
	return done, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "package" {
		if len(os.Args) != 5 || os.Args[3] != "-d" {
			usage("usage: helm-render package CHART_DIR -d DIR")
		}
		p, err := packageChart(os.Args[2], os.Args[4])
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("Successfully packaged chart and saved it to: %s\n", p)
		return
	}
	o := parseArgs(os.Args[1:])
	cleanup, err := resolveChart(&o)
	if err != nil {
		cleanup()
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
	out, err := render(o)
	cleanup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
	fmt.Print(out)
}
