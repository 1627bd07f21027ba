"""docs/fallbacks.md §2 typed as a user would: real gcloud creates the tutorial's cluster and two v6e 4x4 pools
bound to a ComputeClass by ``--node-labels`` and ``--node-taints``, real kubectl applies the class and a Job whose
pods select it; the pods land on the class's first rule."""

from __future__ import annotations

import json

import pytest

from tests.http.conftest import Served, gcloud_runner

pytestmark = pytest.mark.slow

CC = """
apiVersion: cloud.google.com/v1
kind: ComputeClass
metadata: {name: tpu-class}
spec:
  priorities:
  - nodepools: [on-demand-pool]
  - tpu: {type: tpu-v6e-slice, count: 4, topology: 4x4}
    spot: true
  activeMigration: {optimizeRulePriority: true}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: cc-train, namespace: default}
spec:
  parallelism: 4
  completions: 4
  template:
    metadata: {annotations: {twin.flexq.dev/run-seconds: "600"}}
    spec:
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/compute-class: tpu-class
        cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
        cloud.google.com/gke-tpu-topology: 4x4
      tolerations: [{key: google.com/tpu, operator: Exists, effect: NoSchedule}]
      containers:
      - name: worker
        image: rayproject/ray:2.53.0-py311
        resources: {requests: {google.com/tpu: "4"}, limits: {google.com/tpu: "4"}}
"""


def test_compute_class_with_gcloud_and_kubectl(served: Served) -> None:
    run = gcloud_runner(served, "proj-cc", "cc-kubeconfig")
    loc = "--location=us-east5-b"
    run(
        "gcloud",
        "container",
        "clusters",
        "create",
        "tpu-cluster",
        loc,
        "--machine-type=n2-standard-16",
        "--addons=RayOperator",
    )
    bind = [
        "--node-labels=cloud.google.com/compute-class=tpu-class",
        "--node-taints=cloud.google.com/compute-class=tpu-class:NoSchedule",
    ]
    common = [
        "--cluster=tpu-cluster",
        loc,
        "--machine-type=ct6e-standard-4t",
        "--tpu-topology=4x4",
        "--enable-autoscaling",
        "--num-nodes=0",
        "--min-nodes=0",
        "--max-nodes=4",
        *bind,
    ]
    run(
        "gcloud",
        "container",
        "node-pools",
        "create",
        "on-demand-pool",
        *common,
        "--reservation-affinity=none",
    )
    run("gcloud", "container", "node-pools", "create", "spot-pool", *common, "--spot")
    desc = json.loads(
        run(
            "gcloud",
            "container",
            "node-pools",
            "describe",
            "spot-pool",
            "--cluster=tpu-cluster",
            loc,
            "--format=json",
        ).stdout
    )
    assert desc["config"]["labels"] == {"cloud.google.com/compute-class": "tpu-class"}
    assert desc["config"]["taints"] == [
        {"key": "cloud.google.com/compute-class", "value": "tpu-class", "effect": "NO_SCHEDULE"}
    ]
    run("gcloud", "container", "clusters", "get-credentials", "tpu-cluster", loc)

    def k(*args: str, input: str | None = None) -> str:
        if input is not None:
            path = served.home / "cc-manifest.yaml"
            path.write_text(input)
            args = (*args[:-1], str(path))  # "-f -" becomes "-f <file>"
        return run("kubectl", *args).stdout

    assert "computeclass.cloud.google.com/tpu-class created" in k("apply", "-f", "-", input=CC)
    k("apply", "-f", "-", input=JOB)
    k("wait", "--for=jsonpath={.status.ready}=4", "job/cc-train", "--timeout=120s")
    nodes = {n["metadata"]["name"]: n for n in json.loads(k("get", "nodes", "-o", "json"))["items"]}
    pods = json.loads(k("get", "pods", "-l", "job-name=cc-train", "-o", "json"))["items"]
    pools = {
        nodes[p["spec"]["nodeName"]]["metadata"]["labels"]["cloud.google.com/gke-nodepool"] for p in pods
    }
    assert len(pods) == 4 and pools == {"on-demand-pool"}
    node = json.loads(k("get", "nodes", "-l", "cloud.google.com/gke-nodepool=on-demand-pool", "-o", "json"))[
        "items"
    ][0]
    assert node["metadata"]["labels"]["cloud.google.com/compute-class"] == "tpu-class"
    assert {"key": "cloud.google.com/compute-class", "value": "tpu-class", "effect": "NoSchedule"} in node[
        "spec"
    ]["taints"]
    run("gcloud", "container", "clusters", "delete", "tpu-cluster", loc, "--quiet")
