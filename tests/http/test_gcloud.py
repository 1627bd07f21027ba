"""Real gcloud against the served twin with ``client_env``: projects describe, clusters create,
get-credentials (kubectl then reaches the cluster through gke-gcloud-auth-plugin), clusters delete."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from flexq.http.server import client_env
from tests.http.conftest import Served

pytestmark = pytest.mark.slow


def test_gcloud_cluster_and_kubectl_through_the_auth_plugin(served: Served) -> None:
    if shutil.which("gcloud") is None or shutil.which("gke-gcloud-auth-plugin") is None:
        pytest.skip("gcloud and gke-gcloud-auth-plugin are not installed")
    env = dict(os.environ, **client_env(served.home), CLOUDSDK_CORE_PROJECT="proj-g",
               CLOUDSDK_CORE_DISABLE_PROMPTS="1")
    env["KUBECONFIG"] = str(served.home / "gcloud-kubeconfig")
    os.makedirs(env["CLOUDSDK_CONFIG"], exist_ok=True)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, f"{' '.join(args)}: {r.stderr}"
        return r

    assert "projectId: proj-g" in run("gcloud", "projects", "describe", "proj-g").stdout
    run("gcloud", "container", "clusters", "create", "g-cluster", "--location=us-east5-b",
        "--machine-type=n2-standard-16", "--enable-image-streaming", "--addons=RayOperator")
    run("gcloud", "container", "clusters", "get-credentials", "g-cluster", "--location=us-east5-b")
    ctx = run("kubectl", "config", "current-context").stdout.strip()
    assert ctx == "gke_proj-g_us-east5-b_g-cluster"
    out = run("kubectl", "get", "ns").stdout
    assert "kueue-system" in out
    assert "rayjobs" in run("kubectl", "api-resources", "--api-group=ray.io").stdout
    run("gcloud", "container", "clusters", "delete", "g-cluster", "--location=us-east5-b", "--quiet")
    assert "g-cluster" not in run("gcloud", "container", "clusters", "list").stdout
