"""What state a Kueue Workload is in, in one word, from its conditions and ``spec.active``.

Owns: ``workload_state`` and ``waited`` (how long it waited for admission), the one reading the CLI
(``flexq status``), the dashboard and the ETA share. The order
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

__all__ = ["workload_state", "waited", "FINISHED_STATES"]

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
