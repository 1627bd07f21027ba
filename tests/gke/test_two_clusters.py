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
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "trainer",
            "namespace": "default",
            "annotations": {"twin.flexq.dev/run-seconds": str(seconds)},
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }


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
        assert alpha["spec"]["nodeName"].startswith("gke-alpha-") and beta["spec"]["nodeName"].startswith(
            "gke-beta-"
        )
        assert "for 60s" in twin.cluster("alpha").logs("trainer")
        assert "for 600s" in twin.cluster("beta").logs("trainer") and "600s" not in twin.cluster(
            "alpha"
        ).logs("trainer")
        # deleting alpha stops nothing in beta
        path, _ = tutorial.create_cluster_request(PROJECT, {"CLUSTER_NAME": "alpha"})
        twin.gke("DELETE", f"{path}/alpha")
        twin.advance(600)
        assert twin.cluster("beta").get("Pod", "trainer")["status"]["phase"] == "Succeeded"
    finally:
        twin.close()


def _configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_a_second_cluster_does_not_replace_the_default_one(tmp_path) -> None:
    """The SDK's default (and the root Kubernetes API) is the first cluster; another one never takes its place,
    also across a restart (where clusters are listed by name); deleting it moves to the oldest left."""
    twin = Twin(clock="virtual", home=tmp_path)
    _cluster(twin, "zeta")
    twin.apply(_configmap("in-zeta"))
    assert twin.runtime.name == "zeta"
    _cluster(twin, "alpha")
    assert twin.runtime.name == "zeta"
    assert twin.get("configmap", "in-zeta", "default")["metadata"]["name"] == "in-zeta"
    _cluster(twin, "beta")
    assert twin.core.root_cluster() == "zeta"
    twin.close()

    again = Twin(clock="virtual", home=tmp_path)
    try:
        assert again.runtime.name == "zeta"
        assert again.get("configmap", "in-zeta", "default")
        path, _ = tutorial.create_cluster_request(PROJECT, {"CLUSTER_NAME": "zeta"})
        again.gke("DELETE", f"{path}/zeta")
        again.run_until_idle(max_seconds=3600)
        assert again.runtime.name == "alpha"  # the oldest one left, not the empty default cluster
    finally:
        again.close()


def test_an_explicit_default_cluster_is_kept() -> None:
    twin = Twin(clock="virtual", default_cluster="beta")
    try:
        _cluster(twin, "alpha")
        assert twin.runtime.name == ""  # beta does not exist yet: the twin's own cluster, not alpha
        _cluster(twin, "beta")
        assert twin.runtime.name == "beta"
        _cluster(twin, "gamma")
        assert twin.runtime.name == "beta"
    finally:
        twin.close()
