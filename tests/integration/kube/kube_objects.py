"""Kubernetes objects the scenarios of both sides share (imported by the
Python of tests/fakes/apiserver/lib.sh and tests/kube_real/lib.sh, with
this folder on PYTHONPATH)."""


def jobset_labels(i, n):
    """The labels of the one pod of Job train-workers-I, job I of n of
    JobSet "train" (replicated job "workers"), as the JobSet and Job
    controllers set them."""
    return {"jobset.sigs.k8s.io/jobset-name": "train",
            "jobset.sigs.k8s.io/jobset-uid": "7d2c0b1e-5a4f-4c3e-9b8a-1f2e3d4c5b6a",
            "jobset.sigs.k8s.io/replicatedjob-name": "workers",
            "jobset.sigs.k8s.io/replicatedjob-replicas": str(n),
            "jobset.sigs.k8s.io/job-index": str(i),
            "batch.kubernetes.io/job-completion-index": "0",
            "batch.kubernetes.io/job-name": "train-workers-%d" % i}
