"""Two GKE clusters in one twin are two Kubernetes clusters: a pod of the same namespace and name in each runs
on its own cluster's nodes, for its own time, and deleting one cluster leaves the other's pods alone."""

from __future__ import annotations

from flexq import Twin
from flexq.cli import tutorial

PROJECT = "two-clusters"


def _cluster(twin: Twin, name: str) -> None:
    path, body = tutorial.create_cluster_request(PROJECT, {"CLUSTER_NAME": name})
    twin.gke("POST", path, body)
    twin.run_until_idle(max_seconds=3600)
    assert twin.gke("GET", f"{path}/{name}")["status"] == "RUNNING"


def _pod(seconds: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": "default",
                         "annotations": {"twin.flexq.dev/run-seconds": str(seconds)}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}


def test_same_pod_name_in_two_clusters_runs_twice_independently() -> None:
    twin = Twin(clock="virtual")
    try:
        _cluster(twin, "alpha")
        _cluster(twin, "beta")
        twin.cluster("alpha").apply(_pod(60))
        twin.cluster("beta").apply(_pod(600))
        twin.advance(120)
        alpha = twin.cluster("alpha").get("Pod", "trainer")
        beta = twin.cluster("beta").get("Pod", "trainer")
        assert alpha["status"]["phase"] == "Succeeded"
        assert beta["status"]["phase"] == "Running"  # its own 600 s, not alpha's 60 s
        assert alpha["spec"]["nodeName"].startswith("gke-alpha-") and beta["spec"]["nodeName"].startswith("gke-beta-")
        assert "for 60s" in twin.cluster("alpha").logs("trainer")
        assert "for 600s" in twin.cluster("beta").logs("trainer") and "600s" not in twin.cluster("alpha").logs("trainer")
        # deleting alpha stops nothing in beta
        path, _ = tutorial.create_cluster_request(PROJECT, {"CLUSTER_NAME": "alpha"})
        twin.gke("DELETE", f"{path}/alpha")
        twin.advance(600)
        assert twin.cluster("beta").get("Pod", "trainer")["status"]["phase"] == "Succeeded"
    finally:
        twin.close()
