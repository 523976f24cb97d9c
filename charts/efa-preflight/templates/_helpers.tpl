{{/* Labels shared by every object of the release. */}}
{{- define "efa-preflight.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
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
