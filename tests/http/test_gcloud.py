"""Real gcloud against the served twin with ``client_env``: projects describe, clusters create,
get-credentials (kubectl then reaches the cluster through gke-gcloud-auth-plugin), clusters delete."""

from __future__ import annotations

import pytest

from tests.http.conftest import Served, gcloud_runner

pytestmark = pytest.mark.slow


def test_gcloud_cluster_and_kubectl_through_the_auth_plugin(served: Served) -> None:
    run = gcloud_runner(served, "proj-g", "gcloud-kubeconfig")
    assert "projectId: proj-g" in run("gcloud", "projects", "describe", "proj-g").stdout
    run(
        "gcloud",
        "container",
        "clusters",
        "create",
        "g-cluster",
        "--location=us-east5-b",
        "--machine-type=n2-standard-16",
        "--enable-image-streaming",
        "--addons=RayOperator",
    )
    run("gcloud", "container", "clusters", "get-credentials", "g-cluster", "--location=us-east5-b")
    ctx = run("kubectl", "config", "current-context").stdout.strip()
    assert ctx == "gke_proj-g_us-east5-b_g-cluster"
    out = run("kubectl", "get", "ns").stdout
    assert "kueue-system" in out
    assert "rayjobs" in run("kubectl", "api-resources", "--api-group=ray.io").stdout
    run("gcloud", "container", "clusters", "delete", "g-cluster", "--location=us-east5-b", "--quiet")
    assert "g-cluster" not in run("gcloud", "container", "clusters", "list").stdout
