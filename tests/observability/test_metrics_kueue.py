"""Kueue metrics the tutorial does not exercise: preemption (``kueue_preempted_workloads_total`` and the victim's
``kueue_evicted_workloads_total{reason="Preempted"}``) and the ClusterQueue resource gauges that
``metrics.enableClusterQueueResources`` turns on, read from the SDK on the virtual clock."""

from __future__ import annotations

import math

from flexq import Twin
from tests.observability.conftest import submit, tutorial_twin, workload_of

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "1"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: team}
"""


PRIORITIES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: low}
value: 0
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
"""


def job(name: str, priority: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": priority},
            "annotations": {"twin.flexq.dev/run-seconds": "3600"},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            }
        },
    }


def wl_of(twin: Twin, job_name: str) -> dict:
    return next(
        w for w in twin.list("workload", "default") if w["metadata"]["name"].startswith(f"job-{job_name}-")
    )


def test_preemption_in_the_cluster_queue() -> None:
    twin = Twin(clock="virtual")
    try:
        twin.apply(QUEUES)
        twin.apply(PRIORITIES)
        twin.apply(job("low", "low"))
        twin.advance(5)
        assert twin.metric("kueue_admitted_workloads_total", {"cluster_queue": "team"}) == 1
        twin.apply(job("high", "high"))
        twin.advance(5)
        assert (
            twin.metric(
                "kueue_preempted_workloads_total",
                {
                    "preempting_cluster_queue": "team",
                    "reason": "InClusterQueue",
                    "replica_role": "standalone",
                },
            )
            == 1
        )
        assert (
            twin.metric(
                "kueue_evicted_workloads_total",
                {"cluster_queue": "team", "reason": "Preempted", "underlying_cause": ""},
            )
            == 1
        )
        assert (
            twin.metric(
                "kueue_local_queue_evicted_workloads_total",
                {"name": "q", "namespace": "default", "reason": "Preempted"},
            )
            == 1
        )
        low = wl_of(twin, "low")
        assert {c["type"]: c["reason"] for c in low["status"]["conditions"]}["Preempted"] == "InClusterQueue"
        high = wl_of(twin, "high")
        assert any(c["type"] == "Admitted" and c["status"] == "True" for c in high["status"]["conditions"])
        assert twin.metric("kueue_admitted_workloads_total", {"cluster_queue": "team"}) == 2
        assert (
            twin.metric("kueue_admitted_workloads_total", {"cluster_queue": "team", "priority_class": "high"})
            == 1
        )
        # the evicted one waits again: pending, unadmitted
        assert twin.metric("kueue_pending_workloads", {"cluster_queue": "team"}) == 1
        assert twin.metric("kueue_admission_attempts_total", {"result": "inadmissible"}) >= 1
    finally:
        twin.close()


def test_cluster_queue_resource_gauges_need_the_option() -> None:
    twin = tutorial_twin()
    try:
        assert twin.metric("kueue_cluster_queue_nominal_quota") is None  # off by default, as in Kueue
        twin.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                "data": {
                    "controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                    "metrics:\n  enableClusterQueueResources: true\n"
                },
            }
        )
        submit(twin, 1)
        twin.advance(30)
        assert workload_of(twin, 1)["status"]["admission"]
        tpu = {
            "cluster_queue": "cluster-queue",
            "flavor": "on-demand",
            "resource": "google.com/tpu",
            "cohort": "",
        }
        assert twin.metric("kueue_cluster_queue_nominal_quota", tpu) == 16
        assert twin.metric("kueue_cluster_queue_resource_reservation", tpu) == 16
        assert twin.metric("kueue_cluster_queue_resource_usage", tpu) == 16
        assert math.isinf(twin.metric("kueue_cluster_queue_borrowing_limit", tpu))
        assert math.isinf(twin.metric("kueue_cluster_queue_lending_limit", tpu))
        cpu = dict(tpu, flavor="default-cpu", resource="cpu")
        assert twin.metric("kueue_cluster_queue_nominal_quota", cpu) == 10
        assert twin.metric("kueue_cluster_queue_resource_usage", cpu) > 0
    finally:
        twin.close()
