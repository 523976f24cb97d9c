# The chart tests' helm: $PF_HELM, else the one scripts/helm_tools.sh
# installed from its pinned npm package (scripts/deps.sh runs it).
#   . tests/integration/lib_helm.sh; helm_find || exit 77
# helm_find sets HELM (and KUBECTL when the tools have it), or says why not.
helm_find() {
    local root dir
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ -n "${PF_HELM:-}" ]; then
        HELM=$PF_HELM
    elif dir=$("$root/scripts/helm_tools.sh" --dir 2>/dev/null); then
        HELM=$dir/bin/helm
        KUBECTL=$dir/bin/kubectl
    else
        echo "skip: no helm (scripts/deps.sh installs it: scripts/helm_tools.sh; or set PF_HELM)"
        return 1
    fi
    "$HELM" version --short >/dev/null 2>&1 || { echo "skip: $HELM does not run"; return 1; }
}
