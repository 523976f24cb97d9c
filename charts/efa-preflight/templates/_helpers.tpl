{{/* Labels shared by every object of the release. */}}
{{- define "efa-preflight.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* <repository>:<tag>, without the -full/-agent suffix. The schema already
     requires the repository; this names the fix where a schema is not run. */}}
{{- define "efa-preflight.image" -}}
{{ required "image.repository is required: the registry and repository you pushed the images to (README, \"Build the images\"), e.g. --set image.repository=123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight" .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
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
