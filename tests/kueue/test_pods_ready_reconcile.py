"""Kueue's ``TestReconcileRequeue`` (pkg/controller/core/workload_controller_requeue_test.go, v0.19.2): the
waitForPodsReady cases, ported by name. Each builds the Workload as upstream's test does (admitted, its
conditions' transition times in the past), stores it in a virtual twin whose ``kueue-manager-config`` holds
the case's ``waitForPodsReadyConfig``, and lets the twin's workload controller reconcile it."""

from __future__ import annotations

from typing import Any

import pytest

from flexq import Twin
from flexq.clock import format_time

ADMISSION = {
    "clusterQueue": "q1",
    "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}, "count": 1}
    ],
}


def _config(
    timeout: str, recovery: str | None = None, base: int = 10, cap: int = 3600, limit: int = 100
) -> str:
    rec = f"\n      recoveryTimeout: {recovery}" if recovery else ""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: kueue-manager-config, namespace: kueue-system}}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    waitForPodsReady:
      timeout: {timeout}{rec}
      requeuingStrategy: {{backoffLimitCount: {limit}, backoffBaseSeconds: {base}, backoffMaxSeconds: {cap}}}
"""


def _twin(config: str | None) -> Twin:
    t = Twin(clock="virtual")
    if config:
        t.apply(config)
    t.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}})
    return t


def _workload(
    t: Twin,
    conditions: list[tuple[str, str, float, str, str]],
    *,
    admitted: bool = True,
    requeue: dict[str, Any] | None = None,
    active: bool = True,
) -> None:
    now = t.now()
    status: dict[str, Any] = {
        "conditions": [
            {"type": c, "status": s, "lastTransitionTime": format_time(now + dt), "reason": r, "message": m}
            for c, s, dt, r, m in conditions
        ]
    }
    if admitted:
        status["admission"] = ADMISSION
    if requeue is not None:
        status["requeueState"] = requeue
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "default", "generation": 1},
        "spec": {
            "active": active,
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                            ]
                        }
                    },
                }
            ],
        },
        "status": status,
    }
    t.store.create(wl, keep_status=True)


ADMITTED = [
    ("QuotaReserved", "True", 0, "QuotaReserved", "Quota reserved in ClusterQueue q1"),
    ("Admitted", "True", -300, "ByTest", "Admitted by ClusterQueue q1"),
]


def _get(t: Twin) -> dict[str, Any]:
    return t.get("workload", "wl", "default")


def _cond(wl: dict, typ: str) -> dict:
    return next((c for c in wl["status"].get("conditions", []) if c["type"] == typ), {})


def test_increment_re_queue_count() -> None:
    t = _twin(_config("3s"))
    now = t.now()
    _workload(t, ADMITTED, requeue={"count": 3})
    t.advance(0.5)
    wl = _get(t)
    ev = _cond(wl, "Evicted")
    assert (ev["status"], ev["reason"], ev["message"]) == (
        "True",
        "PodsReadyTimeout",
        "Exceeded the PodsReady timeout default/wl",
    )
    assert wl["status"]["requeueState"] == {"count": 4, "requeueAt": format_time(now + 80)}  # 10 s · 2^(4−1)
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 1}
    ]
    events = [e for e in t.list("Event", "default") if e["involvedObject"]["name"] == "wl"]
    assert any(
        e["reason"] == "EvictedDueToPodsReadyTimeout"
        and e["message"] == "Exceeded the PodsReady timeout default/wl"
        for e in events
    )


def test_wait_time_should_be_limited_to_backoff_max_seconds() -> None:
    t = _twin(_config("3s", cap=7200))
    now = t.now()
    _workload(t, ADMITTED, requeue={"count": 10, "requeueAt": format_time(now - 1)})
    t.advance(0.5)
    wl = _get(t)
    assert _cond(wl, "Evicted")["reason"] == "PodsReadyTimeout"
    # 10 s · 2^(11−1) = 10240 s > 7200 s
    assert wl["status"]["requeueState"] == {"count": 11, "requeueAt": format_time(now + 7200)}


def test_recovery_time_should_be_limited_to_recovery_timeout() -> None:
    t = _twin(_config("5m", recovery="3s", cap=7200))
    _workload(
        t,
        [
            *ADMITTED,
            (
                "PodsReady",
                "False",
                -180,
                "WaitForRecovery",
                "At least one pod has failed, waiting for recovery",
            ),
        ],
    )
    t.advance(0.5)
    wl = _get(t)
    assert _cond(wl, "Evicted")["reason"] == "PodsReadyTimeout"
    assert wl["status"]["requeueState"]["count"] == 1
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForRecovery", "count": 1}
    ]


def test_should_set_the_workload_requeued_condition_to_true_on_re_activated() -> None:
    t = _twin(None)
    _workload(t, [("Requeued", "False", 0, "Deactivated", "The workload is deactivated")], admitted=False)
    t.advance(0.5)
    rq = _cond(_get(t), "Requeued")
    assert (rq["status"], rq["reason"], rq["message"]) == (
        "True",
        "Reactivated",
        "The workload was reactivated",
    )


def test_should_keep_the_workload_requeued_condition_until_the_wait_for_pods_ready_backoff_expires() -> None:
    t = _twin(None)
    now = t.now()
    _workload(
        t,
        [("Requeued", "False", 0, "PodsReadyTimeout", "Exceeded the PodsReady timeout ns")],
        admitted=False,
        requeue={"count": 1, "requeueAt": format_time(now + 60)},
    )
    t.advance(59)
    assert _cond(_get(t), "Requeued")["status"] == "False"
    t.advance(2)
    rq = _cond(_get(t), "Requeued")
    assert (rq["status"], rq["reason"]) == ("True", "BackoffFinished")


def test_should_set_the_workload_requeued_condition_when_the_wait_for_pods_ready_backoff_expires() -> None:
    t = _twin(None)
    _workload(
        t, [("Requeued", "False", 0, "PodsReadyTimeout", "Exceeded the PodsReady timeout ns")], admitted=False
    )
    t.advance(0.5)
    rq = _cond(_get(t), "Requeued")
    assert (rq["status"], rq["reason"], rq["message"]) == (
        "True",
        "BackoffFinished",
        "The workload backoff was finished",
    )


@pytest.mark.parametrize("limit", [3])
def test_deactivation_at_backoff_limit_count(limit: int) -> None:
    """``triggerDeactivation``: count + 1 > backoffLimitCount ⇒ DeactivationTarget, then spec.active=false."""
    t = _twin(_config("3s", limit=limit))
    _workload(t, ADMITTED, requeue={"count": limit})
    t.advance(0.5)
    wl = _get(t)
    assert wl["spec"]["active"] is False
    ev = _cond(wl, "Evicted")
    assert (ev["reason"], ev["message"]) == (
        "DeactivatedDueToRequeuingLimitExceeded",
        "The workload is deactivated due to exceeding the maximum number of re-queuing retries",
    )
