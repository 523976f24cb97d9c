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

{{/* Labels shared by every object of the release. */}}
{{- define "efa-preflight.labels" -}}
app.kubernetes.io/name: {{ include "efa-preflight.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The DaemonSet's image: <repository>:<tag>-full, or pinned by digest,
     <repository>@sha256:... (image.digest, or a tag that is a digest: the
     digest of the -full image). The schema already requires the
     repository; this names the fix where a schema is not run. */}}
{{- define "efa-preflight.image" -}}
{{- $repo := required "image.repository is required: the registry and repository you pushed the images to (docs/install/images.md), e.g. --set image.repository=123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight" .Values.image.repository }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion | toString }}
{{- $digest := .Values.image.digest | default "" }}
{{- if and (not $digest) (hasPrefix "sha256:" $tag) }}{{ $digest = $tag }}{{ end }}
{{- if $digest }}
{{- printf "%s@%s" $repo $digest }}
{{- else }}
{{- printf "%s:%s-full" $repo $tag }}
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
