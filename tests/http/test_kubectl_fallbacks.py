"""Real kubectl against a live twin: the fallback mechanisms' manifests (GKE ComputeClass, Kueue's
waitForPodsReady in kueue-manager-config) apply, read back and describe with upstream's fields, and a manifest
GKE refuses is refused with the reason."""

from __future__ import annotations

import json
import time

from tests.http.conftest import Served

CC = """
apiVersion: cloud.google.com/v1
kind: ComputeClass
metadata:
  name: tpu-class
spec:
  priorities:
  - nodepools: [on-demand-pool]
  - tpu: {type: tpu-v6e-slice, count: 4, topology: 4x4}
    spot: true
  - tpu: {type: tpu-v6e-slice, count: 8, topology: 2x4}
    flexStart: {enabled: true}
    maxRunDurationSeconds: 86400
    capacityCheckWaitTimeSeconds: 300
  activeMigration:
    optimizeRulePriority: true
  whenUnsatisfiable: DoNotScaleUp
"""

BAD_CC = """
apiVersion: cloud.google.com/v1
kind: ComputeClass
metadata:
  name: flex-multihost
spec:
  priorities:
  - tpu: {type: tpu-v6e-slice, count: 4, topology: 4x4}
    flexStart: {enabled: true}
"""

QUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: rf-pr}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-pr}
spec:
  namespaceSelector: {}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: rf-pr, resources: [{name: cpu, nominalQuota: 4}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-pr, namespace: default}
spec: {clusterQueue: cq-pr}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    waitForPodsReady:
      timeout: 3s
      requeuingStrategy: {timestamp: Eviction, backoffBaseSeconds: 60, backoffMaxSeconds: 3600}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: never-ready, namespace: default, labels: {kueue.x-k8s.io/queue-name: lq-pr}}
spec:
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {cloud.google.com/gke-nodepool: no-such-pool}
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""


def test_compute_class_apply_get_describe(served: Served) -> None:
    r = served.kubectl("apply", "-f", "-", input=CC)
    assert "computeclass.cloud.google.com/tpu-class created" in r.stdout
    assert "computeclasses" in served.kubectl("api-resources", "--api-group=cloud.google.com").stdout
    got = json.loads(served.kubectl("get", "computeclass", "tpu-class", "-o", "json").stdout)
    assert got["spec"]["priorities"][1] == {
        "tpu": {"type": "tpu-v6e-slice", "count": 4, "topology": "4x4"},
        "spot": True,
    }
    assert got["spec"]["activeMigration"]["optimizeRulePriority"] is True
    assert got["spec"]["priorities"][2]["capacityCheckWaitTimeSeconds"] == 300
    table = served.kubectl("get", "computeclasses").stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE"] and table[1].split()[0] == "tpu-class"  # as GKE prints it
    desc = served.kubectl("describe", "computeclass", "tpu-class").stdout
    for text in (
        "Priorities:",
        "Nodepools:",
        "on-demand-pool",
        "Optimize Rule Priority:  true",
        "When Unsatisfiable:",
        "DoNotScaleUp",
        "Flex Start:",
    ):
        assert text in desc, (text, desc)
    assert "unchanged" in served.kubectl("apply", "-f", "-", input=CC).stdout


def test_compute_class_refused_with_the_reason(served: Served) -> None:
    r = served.kubectl("apply", "-f", "-", input=BAD_CC, check=False)
    assert r.returncode != 0
    assert 'The ComputeClass "flex-multihost" is invalid' in r.stderr
    assert (
        "spec.priorities[0].tpu" in r.stderr
        and "flex-start VMs support only single-host TPU slices" in r.stderr
    )
    assert served.kubectl("get", "computeclass", "flex-multihost", check=False).returncode != 0


def test_wait_for_pods_ready_eviction_through_kubectl(served: Served) -> None:
    served.kubectl("apply", "-f", "-", input=QUEUE)
    served.kubectl("apply", "-f", "-", input=JOB)
    deadline = time.monotonic() + 120  # generous: each kubectl call takes seconds on a loaded CI machine
    wl: dict = {}
    while time.monotonic() < deadline:
        items = json.loads(served.kubectl("get", "workloads", "-n", "default", "-o", "json").stdout)["items"]
        wl = next((w for w in items if w["metadata"]["name"].startswith("job-never-ready-")), {})
        conds = {c["type"]: c for c in (wl.get("status") or {}).get("conditions", [])}
        # the Job framework writes Requeued (with the quota's release) after the eviction, once the job stopped
        if (
            conds.get("Evicted", {}).get("reason") == "PodsReadyTimeout"
            and conds.get("Requeued", {}).get("reason") == "PodsReadyTimeout"
        ):
            break
        time.sleep(0.5)
    conds = {c["type"]: c for c in wl["status"]["conditions"]}
    assert conds["Evicted"]["message"] == f"Exceeded the PodsReady timeout default/{wl['metadata']['name']}"
    assert conds["Requeued"]["status"] == "False" and conds["Requeued"]["reason"] == "PodsReadyTimeout"
    assert wl["status"]["requeueState"]["count"] == 1
    desc = served.kubectl("describe", "workload", "-n", "default", wl["metadata"]["name"]).stdout
    for text in (
        "PodsReadyTimeout",
        "Requeue State:",
        "Underlying Cause:  WaitForStart",
        "EvictedDueToPodsReadyTimeout",
    ):
        assert text in desc, (text, desc)
    served.kubectl("delete", "job", "never-ready", "-n", "default")
