{{/* Observability of the pre-flight DaemonSets (values metrics, history):
     the agent's env, and the hostPath mounts for node-exporter's textfile
     collector and the per-node history. Each renders nothing while its
     value is empty, so the DaemonSet stays as it was. */}}
{{- define "efa-preflight.observabilityEnv" -}}
{{- if .Values.metrics.textfileDir }}
- name: EFA_PREFLIGHT_METRICS_TEXTFILE
  value: /var/lib/efa-preflight/textfile/efa_preflight.prom
{{- end }}
{{- if .Values.metrics.pushgateway }}
- name: EFA_PREFLIGHT_PUSHGATEWAY
  value: {{ .Values.metrics.pushgateway | quote }}
{{- end }}
{{- if .Values.history.hostPath }}
- name: EFA_PREFLIGHT_HISTORY_DIR
  value: /var/lib/efa-preflight/history
- name: EFA_PREFLIGHT_HISTORY_KEEP
  value: {{ .Values.history.keep | quote }}
{{- end }}
{{- end }}

{{- define "efa-preflight.observabilityMounts" -}}
{{- if .Values.metrics.textfileDir }}
- name: metrics-textfile
  mountPath: /var/lib/efa-preflight/textfile
{{- end }}
{{- if .Values.history.hostPath }}
- name: history
  mountPath: /var/lib/efa-preflight/history
{{- end }}
{{- end }}

{{- define "efa-preflight.observabilityVolumes" -}}
{{- if .Values.metrics.textfileDir }}
- name: metrics-textfile
  hostPath:
    path: {{ .Values.metrics.textfileDir }}
    type: DirectoryOrCreate
{{- end }}
{{- if .Values.history.hostPath }}
- name: history
  hostPath:
    path: {{ .Values.history.hostPath }}
    type: DirectoryOrCreate
{{- end }}
{{- end }}
