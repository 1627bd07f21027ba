"""Issue 48, item 5: why a workload waits, in upstream's order (KEP-10852, "Tiered Reason Precedence").

When several reasons hold, ``QuotaReserved=False`` reports the most severe: a flavor-independent blocker before any
nominated-flavor reason (``Deactivated`` before ``Suspended``, ``Misconfigured`` before quota), and among the pod
sets' nominated-flavor reasons ``ExceedsMaxQuota`` before ``WaitingForQuota``/``WaitingForPreemptedWorkloads``
(the KEP's examples 1 and 2; the order of the queue blockers is ``getQueueBlocker``'s: a stopped LocalQueue is
checked before its ClusterQueue). Kueue 0.20.7 (the gate on).
"""

from __future__ import annotations

from flexq import Twin
from tests.kueue.kueue_builders import one_queue

WPC = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "WorkloadPriorityClass",
    "metadata": {"name": "high"},
    "value": 1000,
}


def _queues(stop: str) -> list[dict]:
    return [
        *one_queue(
            stop_policy=stop, preemption={"withinClusterQueue": "LowerPriority"}, cpu="4", memory="4Gi"
        ),
        WPC,
    ]


def _wl(name: str, pod_sets: list[tuple[str, str, str]], active: bool = True, prio: str = "") -> dict:
    spec: dict = {
        "queueName": "lq",
        "active": active,
        "podSets": [
            {
                "name": ps,
                "count": 1,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": cpu, "memory": mem}},
                            }
                        ]
                    }
                },
            }
            for ps, cpu, mem in pod_sets
        ],
    }
    if prio:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": prio}
        spec["priority"] = 1000
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": spec,
    }


def _qr(t: Twin, name: str) -> tuple[str, str]:
    wl = t.get("workload", name, "default")
    c = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    return c["status"], c["reason"]


def test_example_1_deactivated_before_a_suspended_cluster_queue() -> None:
    t = Twin(clock="virtual", kueue="0.20.7")
    try:
        t.apply(_queues("Hold"))
        t.apply(_wl("off", [("main", "1", "1Gi")], active=False))
        t.apply(_wl("on", [("main", "1", "1Gi")]))
        t.advance(3)
        assert _qr(t, "off") == ("False", "Deactivated")
        assert _qr(t, "on") == ("False", "Suspended")
    finally:
        t.close()


def test_example_2_exceeds_max_quota_before_preemption_of_another_pod_set() -> None:
    t = Twin(clock="virtual", kueue="0.20.7")
    try:
        t.apply(_queues("None"))
        t.apply(_wl("low", [("main", "4", "1Gi")]))
        t.advance(3)
        assert _qr(t, "low") == ("True", "QuotaReserved")
        # pod set a needs the low workload preempted (cpu), pod set b asks more memory than the queue has at all
        t.apply(_wl("two", [("a", "2", "1Gi"), ("b", "1", "8Gi")], prio="high"))
        t.advance(3)
        assert _qr(t, "two") == ("False", "ExceedsMaxQuota")
        assert _qr(t, "low") == ("True", "QuotaReserved")  # nothing preempted for a workload that cannot fit
        # only preemption in the way: WaitingForPreemptedWorkloads (or WaitingForQuota while victims stop)
        t.apply(_wl("one", [("a", "2", "1Gi")], prio="high"))
        t.advance(1)
        status, reason = _qr(t, "one")
        assert (status, reason) in {("False", "WaitingForPreemptedWorkloads"), ("True", "QuotaReserved")}
    finally:
        t.close()
