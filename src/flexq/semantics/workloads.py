"""What state a Kueue Workload is in, in one word, from its conditions and ``spec.active``.

Owns: ``workload_state`` and ``waited`` (how long it waited for admission), the one reading the CLI
(``flexq status``), the dashboard and the ETA share; and Kueue's order of admission (``admission_order``: higher
``spec.priority`` first, then the earlier queue-order timestamp, ``queue_order_timestamp``, then the UID), the one
the twin's Kueue heap and flexq's fallback both use. The order
is Kueue's own precedence of conditions (``pkg/workload``: a finished workload is finished whatever else it
says; an inactive one is deactivated before it is anything else):

``Succeeded`` / ``Failed`` (Finished, by its reason) · ``Replaced`` (Finished with reason
``WorkloadSliceReplaced``: an elastic job's old slice, replaced by a new Workload — the job itself goes on) ·
``Finished`` (another reason) · ``Deactivated`` (``spec.active: false``) · ``Running`` (Admitted and PodsReady) ·
``Admitted`` · ``QuotaReserved`` · ``Evicted`` · ``Pending``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flexq.clock import parse_time_or_none
from flexq.semantics.conditions import find_condition, is_true

__all__ = [
    "workload_state",
    "waited",
    "FINISHED_STATES",
    "priority",
    "queue_order_timestamp",
    "admission_order",
]

FINISHED_STATES = frozenset({"Succeeded", "Failed", "Replaced", "Finished"})
_BY_REASON = {"Succeeded": "Succeeded", "Failed": "Failed", "WorkloadSliceReplaced": "Replaced"}


def workload_state(wl: Mapping[str, Any]) -> str:
    """See the module docstring."""
    finished = find_condition(wl, "Finished")
    if finished is not None and finished.get("status") == "True":
        return _BY_REASON.get(finished.get("reason", ""), "Finished")
    if (wl.get("spec") or {}).get("active") is False:
        return "Deactivated"
    if is_true(wl, "Admitted"):
        return "Running" if is_true(wl, "PodsReady") else "Admitted"
    if is_true(wl, "QuotaReserved"):
        return "QuotaReserved"
    if is_true(wl, "Evicted"):
        return "Evicted"
    return "Pending"


def waited(wl: Mapping[str, Any], now: float) -> float:
    """Seconds from the Workload's creation to its admission; still waiting: to ``now``. A finished Workload
    whose Admitted condition no longer says True (Kueue releases its quota when it finishes) waited until it
    finished at the latest."""
    created = parse_time_or_none((wl.get("metadata") or {}).get("creationTimestamp"))
    admitted = find_condition(wl, "Admitted")
    end = (
        parse_time_or_none(admitted.get("lastTransitionTime"))
        if is_true(wl, "Admitted") and admitted
        else None
    )
    if end is None and workload_state(wl) in FINISHED_STATES:
        end = parse_time_or_none((find_condition(wl, "Finished") or {}).get("lastTransitionTime"))
    start = created if created is not None else now
    return max(0.0, (end if end is not None else now) - start)


def priority(wl: Mapping[str, Any]) -> int:
    """The Workload's ``spec.priority`` (Kueue copies it from its WorkloadPriorityClass or PriorityClass; 0 when
    unset)."""
    value = (wl.get("spec") or {}).get("priority")
    return int(value) if isinstance(value, int | float) else 0


def queue_order_timestamp(
    wl: Mapping[str, Any], requeuing_timestamp: str = "Eviction", priority_sorting: bool = True
) -> float:
    """Kueue's ``Ordering.GetQueueOrderTimestamp`` (``pkg/workload``): the Evicted condition's time for a workload
    evicted by ``PodsReadyTimeout`` (with ``requeuingStrategy.timestamp: Eviction``, the default) or by an
    ``AdmissionCheck``; with ``PrioritySortingWithinCohort`` off (``priority_sorting``), a workload preempted by
    reclamation while borrowing queues at its preemption time plus 1 ms; otherwise its creation time (0 when a
    time is missing)."""
    ev = find_condition(wl, "Evicted")
    if ev is not None and ev.get("status") == "True":
        reason = ev.get("reason")
        if (reason == "PodsReadyTimeout" and requeuing_timestamp == "Eviction") or reason == "AdmissionCheck":
            return parse_time_or_none(ev.get("lastTransitionTime")) or 0.0
    if not priority_sorting:
        pc = find_condition(wl, "Preempted")
        if (
            pc is not None
            and pc.get("status") == "True"
            and pc.get("reason") == "InCohortReclaimWhileBorrowing"
        ):
            return (parse_time_or_none(pc.get("lastTransitionTime")) or 0.0) + 0.001
    return parse_time_or_none((wl.get("metadata") or {}).get("creationTimestamp")) or 0.0


def admission_order(wl: Mapping[str, Any]) -> tuple[int, float, str]:
    """Kueue's order of admission in a ClusterQueue's heap (``pkg/cache/queue/cluster_queue.go``) and across a
    cohort's heads (``PrioritySortingWithinCohort``, on by default): higher priority first, then the earlier
    queue-order timestamp, then the UID. Sort ascending."""
    md = wl.get("metadata") or {}
    return (-priority(wl), queue_order_timestamp(wl), str(md.get("uid") or md.get("name") or ""))
