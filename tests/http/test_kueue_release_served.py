"""Issue 34, item 2: a twin running Kueue 0.20.7 (the default: what the tutorial's unpinned `helm install` gives
today) serves kueue.x-k8s.io/v1beta2 only (kueue#14558), and every face agrees: discovery (`kubectl
api-versions`, `api-resources`), REST, OpenAPI and the CustomResourceDefinitions (v1beta1 listed, not served).
So the real kubectl, given the tutorial's v1beta1 `dws-tpu-queue.yaml`, fails as against a real API server that
lacks the version, and stores nothing; the same objects through `flexq convert` apply."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.http.conftest import Served, tutorial_queue_yaml

KINDS = ["ResourceFlavor"] * 3 + [
    "ClusterQueue",
    "LocalQueue",
    "AdmissionCheck",
    "ProvisioningRequestConfig",
]
NAMES = ["default-cpu", "on-demand", "dws", "cluster-queue", "user-queue", "dws-prov", "dws-config"]


def test_discovery_lists_v1beta2_only(served_v1beta2_only: Served) -> None:
    versions = served_v1beta2_only.kubectl("api-versions").stdout.split()
    assert "kueue.x-k8s.io/v1beta2" in versions and "kueue.x-k8s.io/v1beta1" not in versions
    resources = served_v1beta2_only.kubectl(
        "api-resources", "--api-group=kueue.x-k8s.io", "-o", "wide"
    ).stdout
    assert "kueue.x-k8s.io/v1beta2" in resources and "v1beta1" not in resources


def test_kubectl_apply_of_the_tutorials_v1beta1_queue_fails_as_a_real_server_makes_it(
    served_v1beta2_only: Served,
) -> None:
    r = served_v1beta2_only.kubectl("apply", "-f", "-", input=tutorial_queue_yaml(), check=False)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.splitlines()
    # kubectl maps each object with the discovery RESTMapper and reports every one it cannot map, then the hint
    for kind, name in zip(KINDS, NAMES, strict=True):
        ns = "default" if kind == "LocalQueue" else ""
        assert (
            f'resource mapping not found for name: "{name}" namespace: "{ns}" from "STDIN": no matches for kind '
            f'"{kind}" in version "kueue.x-k8s.io/v1beta1"'
        ) in lines, r.stderr
    assert lines[-1] == "ensure CRDs are installed first", r.stderr
    # nothing was written: no queue for a job to wait in
    for plural in ("resourceflavors", "clusterqueues", "localqueues", "admissionchecks"):
        got = served_v1beta2_only.kubectl("get", f"{plural}.kueue.x-k8s.io", "-A", "-o", "json").stdout
        assert json.loads(got)["items"] == []


def test_rest_and_openapi_have_no_v1beta1(served_v1beta2_only: Served) -> None:
    gone = served_v1beta2_only.http("GET", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues")
    assert gone.status_code == 404
    assert served_v1beta2_only.http("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues").status_code == 200
    group = served_v1beta2_only.http("GET", "/apis/kueue.x-k8s.io").json()
    assert [v["version"] for v in group["versions"]] == ["v1beta2"]
    index = served_v1beta2_only.http("GET", "/openapi/v3").json()["paths"]
    assert "apis/kueue.x-k8s.io/v1beta2" in index and "apis/kueue.x-k8s.io/v1beta1" not in index
    assert served_v1beta2_only.http("GET", "/openapi/v3/apis/kueue.x-k8s.io/v1beta1").status_code == 404
    v2 = served_v1beta2_only.http("GET", "/openapi/v2").json()
    assert not [p for p in v2["paths"] if "/kueue.x-k8s.io/v1beta1/" in p]


def test_crds_list_v1beta1_as_not_served(served_v1beta2_only: Served) -> None:
    crd = json.loads(
        served_v1beta2_only.kubectl("get", "crd", "clusterqueues.kueue.x-k8s.io", "-o", "json").stdout
    )
    versions = {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}
    assert versions == {"v1beta2": (True, True), "v1beta1": (False, False)}
    assert crd["status"]["storedVersions"] == ["v1beta2"]


def test_the_converted_queue_applies_and_reads_back(served_v1beta2_only: Served) -> None:
    converted = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "convert", "-"],
        input=tutorial_queue_yaml(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = served_v1beta2_only.kubectl("apply", "-f", "-", input=converted.stdout).stdout
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue created" in out
    cq = json.loads(served_v1beta2_only.kubectl("get", "cq", "cluster-queue", "-o", "json").stdout)
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "dws-prov", "onFlavors": ["dws"]}
    ]
