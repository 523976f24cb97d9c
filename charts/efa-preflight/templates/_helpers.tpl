{{/* The chart's name (nameOverride) and the objects' base name
     (fullnameOverride, else the release name when it already holds the
     chart's name, else <release>-<name>), as `helm create` makes them. */}}
{{- define "efa-preflight.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "efa-preflight.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "efa-preflight.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The agent's service account: made by the chart (serviceAccount.create)
     or one that exists already (serviceAccount.name). */}}
{{- define "efa-preflight.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "efa-preflight.fullname" .) }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false: the existing service account the agent runs as" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The labels a selector matches: fixed for the release's life (a
     Deployment's or DaemonSet's selector cannot change on upgrade). */}}
{{- define "efa-preflight.selectorLabels" -}}
app.kubernetes.io/name: {{ include "efa-preflight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object of the release: Helm's standard ones
     (https://helm.sh/docs/chart_best_practices/labels/) and commonLabels.
     Each object adds its app.kubernetes.io/component. */}}
{{- define "efa-preflight.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "efa-preflight.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: efa-preflight
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* metadata.annotations of an object: commonAnnotations and the object's
     own (extra, which win); nothing when both are empty.
     (dict "root" $ "extra" MAP) */}}
{{- define "efa-preflight.annotations" -}}
{{- $a := merge (deepCopy (.extra | default dict)) (deepCopy (.root.Values.commonAnnotations | default dict)) }}
{{- with $a }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The pod template's labels and annotations of a component: the
     object's labels, podLabels, and podAnnotations (with commonAnnotations).
     (dict "root" $ "component" NAME "pod" VALUES "labels" MAP) */}}
{{- define "efa-preflight.podMetadata" -}}
labels:
  {{- include "efa-preflight.labels" .root | nindent 2 }}
  app.kubernetes.io/component: {{ .component }}
  {{- with .labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with .pod.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- include "efa-preflight.annotations" (dict "root" .root "extra" .pod.podAnnotations) }}
{{- end }}

{{/* The chart's images, from image.repository: <repository>:<tag>-<flavor>
     (full: the pre-flight DaemonSets; agent: what the webhook injects into
     training pods; webhook: the webhook and the monitor), or pinned,
     <repository>@sha256:..., by image.digest / agentDigest / webhookDigest
     (a tag that is itself a digest pins the full image). Once any digest
     is given, every image the release runs must be pinned: a tag-only one
     fails the render, naming the value to set. (dict "root" $ "flavor" F) */}}
{{- define "efa-preflight.pinned" -}}
{{- $i := .Values.image }}
{{- if or $i.digest $i.agentDigest $i.webhookDigest (hasPrefix "sha256:" ($i.tag | toString)) }}true{{ end }}
{{- end }}

{{- define "efa-preflight.imageRef" -}}
{{- $root := .root }}
{{- $i := $root.Values.image }}
{{- $repo := required "image.repository is required: the registry and repository you pushed the images to (docs/install/images.md), e.g. --set image.repository=123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight" $i.repository }}
{{- $tag := $i.tag | default $root.Chart.AppVersion | toString }}
{{- $key := get (dict "full" "digest" "agent" "agentDigest" "webhook" "webhookDigest") .flavor }}
{{- $digest := get $i $key | default "" }}
{{- if and (eq .flavor "full") (not $digest) (hasPrefix "sha256:" $tag) }}{{ $digest = $tag }}{{ end }}
{{- if $digest }}
{{- printf "%s@%s" $repo $digest }}
{{- else if include "efa-preflight.pinned" $root }}
{{- fail (printf "images are pinned by digest (image.digest, agentDigest or webhookDigest is set): set image.%s too, the digest of %s:%s-%s" $key $repo $tag .flavor) }}
{{- else }}
{{- printf "%s:%s-%s" $repo $tag .flavor }}
{{- end }}
{{- end }}

{{/* The DaemonSets' image (kept by name for the templates that use it). */}}
{{- define "efa-preflight.image" -}}
{{- include "efa-preflight.imageRef" (dict "root" . "flavor" "full") }}
{{- end }}

{{/* An image given whole (webhook.image, monitor.image): when the chart's
     images are pinned, it must be too. (dict "root" $ "ref" S "what" NAME) */}}
{{- define "efa-preflight.givenImage" -}}
{{- if and (include "efa-preflight.pinned" .root) (not (contains "@sha256:" .ref)) }}
{{- fail (printf "images are pinned by digest: %s %q has none; give it as <repository>@sha256:..." .what .ref) }}
{{- end }}
{{- .ref }}
{{- end }}

{{/* An image not built by the project ({repository, tag, digest}), e.g.
     the certificate Job's: by digest when one is given; when the chart's
     images are pinned, one must be. (dict "root" $ "image" V "what" NAME) */}}
{{- define "efa-preflight.externalImage" -}}
{{- $i := .image }}
{{- if $i.digest }}
{{- printf "%s@%s" $i.repository $i.digest }}
{{- else if include "efa-preflight.pinned" .root }}
{{- fail (printf "images are pinned by digest: set %s.digest too" .what) }}
{{- else }}
{{- printf "%s:%s" $i.repository $i.tag }}
{{- end }}
{{- end }}

{{/* Where a component's pods run: priorityClassName, imagePullSecrets,
     nodeSelector, affinity, tolerations of its values (pod), the chart's
     imagePullSecrets and priorityClassName by default.
     (dict "root" $ "pod" VALUES) */}}
{{- define "efa-preflight.placement" -}}
{{- with (.pod.priorityClassName | default .root.Values.priorityClassName) }}
priorityClassName: {{ . }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .pod.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .pod.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .pod.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The node-validating container's environment: identity from the
     downward API, then the agent's options (flag --x-y = env
     EFA_PREFLIGHT_X_Y = YAML key x_y). */}}
{{- define "efa-preflight.identityEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- end }}

{{/* The pod's affinity: the user's (values.affinity) with this DaemonSet's
     instance types required in every nodeSelectorTerm of it (terms are
     ORed, a term's expressions ANDed), so an affinity given never lets a
     pod onto another type. */}}
{{- define "efa-preflight.affinity" -}}
{{- $aff := deepCopy (.affinity | default dict) }}
{{- $types := dict "key" "node.kubernetes.io/instance-type" "operator" "In" "values" .instanceTypes }}
{{- $na := get $aff "nodeAffinity" | default dict }}
{{- $req := get $na "requiredDuringSchedulingIgnoredDuringExecution" | default dict }}
{{- $terms := list }}
{{- range (get $req "nodeSelectorTerms" | default (list dict)) }}
{{- $exprs := append (get . "matchExpressions" | default list) $types }}
{{- $terms = append $terms (merge (dict "matchExpressions" $exprs) (omit . "matchExpressions")) }}
{{- end }}
{{- $_ := set $req "nodeSelectorTerms" $terms }}
{{- $_ := set $na "requiredDuringSchedulingIgnoredDuringExecution" $req }}
{{- $_ := set $aff "nodeAffinity" $na }}
{{- toYaml $aff }}
{{- end }}
