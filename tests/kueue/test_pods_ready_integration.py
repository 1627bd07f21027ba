"""Kueue's integration specs ``SchedulerWithWaitForPodsReady`` (test/integration/singlecluster/scheduler/
podsready/scheduler_test.go, v0.19.2) ported by name onto the virtual twin: ``blockAdmission: true``,
``backoffBaseSeconds: 1``, a short timeout, ClusterQueues ``prod-cq`` and ``dev-cq`` (5 cpu each, cohort
``all``). The twin has no nodes, so pods never become ready, as in the integration environment."""

from __future__ import annotations

from typing import Any

import pytest

from flexq import Twin

TIMEOUT = 60


def _twin(limit: int | None = None, timestamp: str = "Eviction", kueue: str | None = None) -> Twin:
    t = Twin(clock="virtual", kueue=kueue)
    blc = f", backoffLimitCount: {limit}" if limit is not None else ""
    t.apply(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: kueue-manager-config, namespace: kueue-system}}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    waitForPodsReady:
      blockAdmission: true
      timeout: {TIMEOUT}s
      requeuingStrategy: {{timestamp: {timestamp}, backoffBaseSeconds: 1{blc}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: high}}
value: 100
""")
    for q in ("prod", "dev"):
        t.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": f"{q}-cq"},
                "spec": {
                    "cohortName": "all",
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "5"}]}
                            ],
                        }
                    ],
                },
            }
        )
        t.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": f"{q}-queue", "namespace": "default"},
                "spec": {"clusterQueue": f"{q}-cq"},
            }
        )
    return t


def _job(t: Twin, name: str, queue: str, cpu: str = "2", priority: str | None = None) -> None:
    labels = {"kueue.x-k8s.io/queue-name": queue}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    t.apply(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                        ],
                    }
                }
            },
        }
    )


def _wl(t: Twin, job: str) -> dict[str, Any]:
    return next(w for w in t.list("workload", "default") if w["metadata"]["name"].startswith(f"job-{job}-"))


def _cond(wl: dict, typ: str) -> dict:
    return next((c for c in (wl.get("status") or {}).get("conditions", []) if c["type"] == typ), {})


def _reserved(wl: dict) -> bool:
    return _cond(wl, "QuotaReserved").get("status") == "True"


def test_should_unblock_admission_of_new_workloads_once_the_admitted_workload_is_deleted() -> None:
    t = _twin()
    _job(t, "prod-wl", "prod-queue")
    t.advance(1)
    _job(t, "dev-wl", "dev-queue")
    t.advance(1)
    assert _reserved(_wl(t, "prod-wl"))
    dev = _wl(t, "dev-wl")
    assert not _reserved(dev) and _cond(dev, "QuotaReserved")["reason"] == "WaitingForPodsReady"
    t.delete("job", "prod-wl", "default", propagation="Background")
    t.advance(2)
    assert _reserved(_wl(t, "dev-wl"))


def test_should_unblock_admission_of_new_workloads_in_other_cluster_queues_once_the_admitted_workload_exceeds_timeout() -> (
    None
):
    t = _twin()
    _job(t, "prod-wl", "prod-queue")
    t.advance(1)
    _job(t, "dev-wl", "dev-queue")
    t.advance(TIMEOUT - 5)
    assert not _reserved(_wl(t, "dev-wl"))
    t.advance(10)
    prod = _wl(t, "prod-wl")
    assert _cond(prod, "Evicted")["reason"] == "PodsReadyTimeout"
    assert _reserved(_wl(t, "dev-wl"))


def test_should_requeue_a_workload_which_exceeded_the_timeout_to_reach_pods_ready_true() -> None:
    t = _twin(limit=2)
    _job(t, "prod1", "prod-queue", priority="high")
    _job(t, "prod2", "prod-queue")
    t.advance(1)
    assert _reserved(_wl(t, "prod1")) and not _reserved(_wl(t, "prod2"))
    t.advance(TIMEOUT - 0.5)  # just past the timeout, inside the 1 s backoff
    prod1 = _wl(t, "prod1")
    assert _cond(prod1, "Evicted")["reason"] == "PodsReadyTimeout"
    assert prod1["status"]["requeueState"]["count"] == 1 and prod1["status"]["requeueState"].get("requeueAt")
    assert prod1["status"]["schedulingStats"]["evictions"] == [
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 1}
    ]
    assert _reserved(_wl(t, "prod2"))


@pytest.mark.parametrize("kueue", ["0.19.2", "0.20.7"])
def test_should_re_admit_a_timed_out_workload_and_deactivate_a_workload_exceeded_the_re_queue_count_limit(
    kueue: str,
) -> None:
    """... "After that re-activating a workload": the count starts again from 1."""
    t = _twin(limit=2, kueue=kueue)
    _job(t, "prod", "prod-queue")
    t.advance(1)
    assert _reserved(_wl(t, "prod"))
    for n in (1, 2):
        t.advance(TIMEOUT + 1)
        wl = _wl(t, "prod")
        assert wl["status"]["requeueState"]["count"] == n
        t.advance(2 ** (n - 1) + 1)  # backoff 1 s, 2 s: re-admitted
        assert _reserved(_wl(t, "prod"))
    t.advance(TIMEOUT + 1)
    wl = _wl(t, "prod")
    assert wl["spec"]["active"] is False and not wl["status"].get("requeueState")
    assert _cond(wl, "Evicted")["reason"] == "DeactivatedDueToRequeuingLimitExceeded"
    name = wl["metadata"]["name"]
    if kueue == "0.19.2":
        # v0.19.2: Requeued=False keeps the eviction's reason (DeactivatedDueToRequeuingLimitExceeded) and the
        # workload controller reactivates only reason Deactivated: setting active=true alone leaves the
        # workload out of the queue. Upstream's spec at v0.19.2 patches the condition first ("by test").
        t.patch("workload", name, {"spec": {"active": True}}, "default")
        t.advance(5)
        assert not _reserved(_wl(t, "prod"))
        assert _cond(_wl(t, "prod"), "Requeued")["reason"] == "DeactivatedDueToRequeuingLimitExceeded"
        t.patch("workload", name, {"spec": {"active": False}}, "default")
        t.advance(1)
        conds = [c for c in _wl(t, "prod")["status"]["conditions"] if c["type"] != "Requeued"]
        conds.append(
            {
                "type": "Requeued",
                "status": "False",
                "reason": "Deactivated",
                "message": "by test",
                "lastTransitionTime": "2027-01-01T00:00:00Z",
            }
        )
        t.patch("workload", name, {"status": {"conditions": conds}}, "default", subresource="status")
    # v0.20 (kueue#14874): any DeactivatedDueTo<Cause> reason is cleared on reactivation, active=true suffices
    t.patch("workload", name, {"spec": {"active": True}}, "default")
    t.advance(2)
    wl = _wl(t, "prod")
    assert _reserved(wl) and _cond(wl, "Requeued")["reason"] == "Reactivated"
    t.advance(TIMEOUT + 1)
    assert _wl(t, "prod")["status"]["requeueState"]["count"] == 1


def test_should_move_the_evicted_workload_at_the_end_of_the_queue() -> None:
    t = _twin(limit=2)
    for i in (1, 2, 3):
        _job(t, f"prod{i}", "prod-queue", cpu="5")
        t.advance(1)
    assert _reserved(_wl(t, "prod1"))
    t.advance(TIMEOUT)  # prod1 times out: prod2 is admitted
    assert _reserved(_wl(t, "prod2")) and not _reserved(_wl(t, "prod1"))
    t.advance(TIMEOUT)  # prod2 times out: prod3 (created before prod1's eviction) goes before prod1
    assert _reserved(_wl(t, "prod3"))
    t.advance(TIMEOUT)  # prod3 times out: prod1 again
    assert _reserved(_wl(t, "prod1"))
    assert [_wl(t, f"prod{i}")["status"]["requeueState"]["count"] for i in (1, 2, 3)] == [1, 1, 1]


def test_requeuing_timestamp_set_to_creation_should_prioritize_workloads_submitted_earlier() -> None:
    """With ``timestamp: Creation`` the evicted wl-1 keeps its place ahead of wl-2 and wl-3. (Upstream's spec
    sees wl-2 admitted while wl-1 backs off for 1 s; on the virtual clock the eviction falls on a whole second,
    so wl-1's 1 s backoff and the 1 s inadmissible-requeue batch end together and wl-1, first by creation,
    is re-admitted straight away — the order the spec checks last.)"""
    t = _twin(timestamp="Creation")
    t.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "standalone-cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                    }
                ],
            },
        }
    )
    t.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "standalone-queue", "namespace": "default"},
            "spec": {"clusterQueue": "standalone-cq"},
        }
    )
    for i in (1, 2, 3):
        _job(t, f"wl-{i}", "standalone-queue", cpu="1")
        t.advance(1)
    assert _reserved(_wl(t, "wl-1")) and not _reserved(_wl(t, "wl-2"))
    t.advance(TIMEOUT)
    wl1 = _wl(t, "wl-1")
    assert wl1["status"]["schedulingStats"]["evictions"] == [
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 1}
    ]  # evicted once, re-admitted
    assert _reserved(wl1) and not _reserved(_wl(t, "wl-2")) and not _reserved(_wl(t, "wl-3"))
    assert wl1["status"]["requeueState"] == {"count": 1}  # requeueAt cleared after re-admission
