"""Pure helpers over Kueue Workload objects (v1beta2 JSON dicts), as ``pkg/workload`` does them.

Owns: timestamps (RFC 3339, second precision like ``metav1.Time``), priority, the
reservation/admission/eviction predicates, admission-check state predicates, which checks apply
to a workload (``onFlavors``), ``SyncAdmittedCondition``, quota reservation set/unset and the
exponential backoff Kueue uses for requeues, and ``WorkloadInfo`` — a Workload plus its
pre-computed requests, the unit the queues, the snapshot and the scheduler pass around.

Functions never read a clock: ``now`` (seconds since the epoch) is an argument. They mutate only
the dict they are given when their name says so (``set_*``, ``unset_*``, ``sync_*``).
Conditions are set and read with ``flexq.semantics.conditions`` (the API machinery's ``SetStatusCondition``) and
the queue-order timestamp is ``flexq.semantics.workloads.queue_order_timestamp`` (the one rule the fallback orders
by too): Kueue's code imports them from there. Must not import anything in flexq but ``flexq.api.quantity``,
``flexq.kueue.resources`` and ``flexq.semantics``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from flexq.clock import format_time
from flexq.kueue.resources import PodSetResources, admitted_requests, podset_total_requests
from flexq.semantics.conditions import (
    find_condition,
    is_true,
    set_status_condition,
)
from flexq.semantics.workloads import queue_order_timestamp

__all__ = [
    "WorkloadInfo",
    "admission_checks_for",
    "backoff_seconds",
    "has_all_checks_ready",
    "has_quota_reservation",
    "is_admitted",
    "is_evicted",
    "is_finished",
    "key",
    "parse_ts",
    "priority",
    "set_quota_reservation",
    "sync_admitted_condition",
    "unadmitted_reason",
    "OBSERVABILITY_GATE",
    "ts",
    "unset_quota_reservation",
]

DEFAULT_PRIORITY = 0  # pkg/constants DefaultPriority


def ts(now: float) -> str:
    """RFC 3339 at second precision, as ``metav1.Time`` serialises."""
    return format_time(now)


def parse_ts(value: str | None) -> float:
    """Inverse of ``ts`` (also accepts fractional seconds and offsets); missing → 0."""
    if not value:
        return 0.0
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def key(wl: Mapping) -> str:
    """``<namespace>/<name>`` (Kueue ``workload.Key``)."""
    md = wl["metadata"]
    return f"{md.get('namespace', '')}/{md['name']}"


def priority(wl: Mapping) -> int:
    """``spec.priority`` or Kueue's default 0 (priority boost annotations are not modelled)."""
    p = (wl.get("spec") or {}).get("priority")
    return DEFAULT_PRIORITY if p is None else int(p)


def has_quota_reservation(wl: Mapping) -> bool:
    """QuotaReserved=True."""
    return is_true(wl, "QuotaReserved")


def is_admitted(wl: Mapping) -> bool:
    """Admitted=True."""
    return is_true(wl, "Admitted")


def is_evicted(wl: Mapping) -> bool:
    """Evicted=True (``workloadevict.IsEvicted``)."""
    return is_true(wl, "Evicted")


def is_finished(wl: Mapping) -> bool:
    """Finished=True."""
    return is_true(wl, "Finished")


def is_active(wl: Mapping) -> bool:
    """``spec.active`` (default true)."""
    return (wl.get("spec") or {}).get("active", True) is not False


def check_states(wl: Mapping) -> list[dict]:
    """``status.admissionChecks``."""
    return list((wl.get("status") or {}).get("admissionChecks") or [])


def has_retry_checks(wl: Mapping) -> bool:
    """Any check in Retry."""
    return any(c.get("state") == "Retry" for c in check_states(wl))


def has_rejected_checks(wl: Mapping) -> bool:
    """Any check in Rejected."""
    return any(c.get("state") == "Rejected" for c in check_states(wl))


def has_all_checks_ready(wl: Mapping) -> bool:
    """Every present check is Ready (vacuously true without checks)."""
    return all(c.get("state") == "Ready" for c in check_states(wl))


def admission_flavors(admission: Mapping) -> set[str]:
    """Union of the flavors in ``podSetAssignments``."""
    out: set[str] = set()
    for psa in admission.get("podSetAssignments") or []:
        out.update((psa.get("flavors") or {}).values())
    return out


def admission_checks_for(
    checks: Mapping[str, frozenset[str]], all_flavors: set[str], admission: Mapping | None
) -> set[str]:
    """``AdmissionChecksForWorkload``: which CQ checks apply.

    ``checks`` maps check name → its flavors (``onFlavors``; empty = every CQ flavor, already
    expanded by the caller or left empty). Before a reservation only checks covering every CQ
    flavor apply; after it, those whose flavors meet the admission's flavors.
    """
    out = set()
    if admission:
        used = admission_flavors(admission)
        for name, flv in checks.items():
            if not flv or (flv & used):
                out.add(name)
        return out
    for name, flv in checks.items():
        if not flv or set(flv) >= all_flavors:
            out.add(name)
    return out


def set_quota_reservation(wl: dict, admission: dict, now: float) -> None:
    """``SetQuotaReservation``: admission + QuotaReserved=True; resets active Evicted/Preempted."""
    st = wl.setdefault("status", {})
    st["admission"] = admission
    set_status_condition(
        wl,
        "QuotaReserved",
        True,
        "QuotaReserved",
        f"Quota reserved in ClusterQueue {admission['clusterQueue']}",
        now,
    )
    for ctype in ("Evicted", "Preempted", "BlockedOnPreemptionGates"):
        c = find_condition(wl, ctype)
        if c is not None and c.get("status") == "True":
            set_status_condition(
                wl, ctype, False, "QuotaReserved", "Previously: " + c.get("message", ""), now
            )


OBSERVABILITY_GATE = "UnadmittedWorkloadsObservability"


def unadmitted_reason(granular: str, fallback: str, observability: bool) -> str:
    """``UnadmittedWorkloadReasonWithFallback``: the granular ``QuotaReserved=False``/``Admitted=False`` reason
    with ``UnadmittedWorkloadsObservability`` on (0.20's default), the legacy one with it off (0.19.2's
    default: ``Pending``, ``Waiting``, ``Inadmissible``, ``UnsatisfiedChecks``)."""
    return granular if observability else fallback


def sync_admitted_condition(wl: dict, now: float, observability: bool = True) -> bool:
    """``SyncAdmittedCondition``. With ``UnadmittedWorkloadsObservability`` (``observability``) on, the condition
    is kept in step once QuotaReserved or Admitted exists; off (v0.19.2's default), it is written only when the
    workload's admission changes — a workload never admitted carries no ``Admitted`` condition — and the
    legacy reasons ``NoReservationUnsatisfiedChecks`` and ``UnsatisfiedChecks`` are used."""
    reserved = has_quota_reservation(wl)
    ready = has_all_checks_ready(wl)
    was_admitted = is_admitted(wl)
    if observability:
        if find_condition(wl, "QuotaReserved") is None and find_condition(wl, "Admitted") is None:
            return False
    elif was_admitted == (reserved and ready):
        return False
    status, reason, msg = True, "Admitted", "The workload is admitted"
    if not reserved and not ready and not observability:
        status, reason = False, "NoReservationUnsatisfiedChecks"
        msg = "The workload has no reservation and not all checks ready"
    elif not reserved:
        status, reason, msg = False, "NoReservation", "The workload has no reservation"
    elif not ready:
        status, msg = False, "The workload has not all checks ready"
        reason = unadmitted_reason("UnsatisfiedAdmissionChecks", "UnsatisfiedChecks", observability)
    if was_admitted and not status:
        old = find_condition(wl, "Admitted")
        d = int(now - parse_ts(old.get("lastTransitionTime"))) if old else 0
        st = wl["status"]
        st["accumulatedPastExecutionTimeSeconds"] = st.get("accumulatedPastExecutionTimeSeconds", 0) + d
    return set_status_condition(wl, "Admitted", status, reason, msg, now)


def is_on_hold(wl: dict) -> bool:
    """``IsOnHold``: QuotaReserved=False with reason ``OnHold`` (its job asked to wait: not queued)."""
    c = find_condition(wl, "QuotaReserved")
    return c is not None and c.get("status") == "False" and c.get("reason") == "OnHold"


def unset_quota_reservation(
    wl: dict, reason: str, message: str, now: float, observability: bool = True
) -> bool:
    """``UnsetQuotaReservationWithCondition``: QuotaReserved=False, admission cleared, Admitted synced
    (``observability``: ``UnadmittedWorkloadsObservability``, see ``sync_admitted_condition``)."""
    changed = set_status_condition(wl, "QuotaReserved", False, reason, message, now)
    st = wl.setdefault("status", {})
    if st.get("admission") is not None:
        st.pop("admission")
        changed = True
    if sync_admitted_condition(wl, now, observability):
        changed = True
    return changed


def backoff_seconds(base: float, cap: float, n: int, jitter: float = 0.0) -> float:
    """``wait.Backoff{base, factor 2, cap}.WaitTime(n)``: base·2^(n−1) capped; ``jitter`` ∈ [0, 1e-4)."""
    if n <= 0:
        return 0.0
    d = base
    for _ in range(n - 1):
        nxt = d * 2
        if cap and nxt > cap:
            d = cap
            break
        d = nxt
    return d * (1 + jitter)


next_serial = (
    itertools.count().__next__
)  # ``WorkloadInfo.serial``: a copy of an info takes a new one from here


@dataclass
class WorkloadInfo:
    """A Workload and what the scheduler pre-computes from it (Kueue ``workload.Info``)."""

    obj: dict
    cluster_queue: str = ""
    total_requests: list[PodSetResources] = field(default_factory=list)
    key: str = ""
    priority: int = 0
    order_ts: float = 0.0
    uid: str = ""
    last_assignment: Any = None  # flavorassigner.AssignmentState, kept between cycles
    extra: dict = field(default_factory=dict)
    serial: int = field(default_factory=lambda: next_serial())  # unique, in creation order: breaks heap ties
    _flavor_usage: dict | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_obj(
        cls,
        wl: dict,
        cluster_queue: str = "",
        requeuing_timestamp: str = "Eviction",
        priority_sorting: bool = True,
        like: WorkloadInfo | None = None,
    ) -> WorkloadInfo:
        """Pending workloads use spec requests; workloads holding quota use their admission. ``priority_sorting``:
        the gate ``PrioritySortingWithinCohort``, which the queue-order timestamp depends on. ``like``: an info of
        this workload read pending before; when both are pending and share their spec and metadata (the same
        objects: a forward run queues a job again with the conditions of its eviction), its pod sets' requests
        and scheduling hash are taken, not computed again."""
        st = wl.get("status") or {}
        admission = st.get("admission")
        same = (
            like is not None
            and not admission
            and like.obj.get("spec") is wl.get("spec")
            and like.obj.get("metadata") is wl.get("metadata")
            and not (like.obj.get("status") or {}).get("admission")
        )
        if same:
            assert like is not None
            reqs = like.total_requests
        else:
            reqs = admitted_requests(wl) if admission else podset_total_requests(wl)
        cq = cluster_queue or (admission or {}).get("clusterQueue", "")
        md = wl.get("metadata") or {}
        info = cls(
            obj=wl,
            cluster_queue=cq,
            total_requests=reqs,
            key=key(wl),
            priority=priority(wl),
            order_ts=queue_order_timestamp(wl, requeuing_timestamp, priority_sorting),
            uid=md.get("uid", md.get("name", "")),
        )
        if same and like is not None and "scheduling_hash" in like.__dict__:
            info.__dict__["scheduling_hash"] = like.__dict__["scheduling_hash"]
        return info

    def flavor_usage(self) -> dict[tuple[str, str], int]:
        """Assigned usage per (flavor, resource) (``Info.ResourceUsage().Assigned``); computed once, read-only."""
        out = self._flavor_usage
        if out is None:
            out = {}
            for ps in self.total_requests:
                for res, q in ps.requests.items():
                    flv = ps.flavors.get(res)
                    if flv:
                        out[(flv, res)] = out.get((flv, res), 0) + q
            self._flavor_usage = out
        return out

    @cached_property
    def queue_order(self) -> tuple[int, float, str]:
        """Order in a pending heap: higher priority, then earlier queue-order timestamp, then UID."""
        return (-self.priority, self.order_ts, self.uid)

    @cached_property
    def heap_entry(self) -> tuple:
        """This info's entry in a pending heap: queue order, then ``serial``, then the key (never the info
        itself, so an info does not reference itself)."""
        return (-self.priority, self.order_ts, self.uid, self.serial, self.key)

    @cached_property
    def evicted(self) -> bool:
        """``is_evicted(obj)``, read once (``obj`` is a read-only stored version): preemption orders its
        candidates by it."""
        return is_evicted(self.obj)

    @cached_property
    def quota_reserved_at(self) -> float | None:
        """When QuotaReserved became True, or None while it is not (read once, as ``evicted``)."""
        c = find_condition(self.obj, "QuotaReserved")
        if c is None or c.get("status") != "True":
            return None
        return parse_ts(c.get("lastTransitionTime"))

    @cached_property
    def flavor_resources(self) -> frozenset[tuple[str, str]]:
        """The (flavor, resource) pairs its pod sets are assigned (what ``uses`` asks about)."""
        return frozenset((flv, res) for ps in self.total_requests for res, flv in ps.flavors.items())

    @cached_property
    def preemption_signature(self) -> tuple:
        """What a preemption search reads of a workload holding quota: its queue, usage, priority, queue-order
        timestamp, uid, whether it is evicted and when it reserved quota. Two versions with the same signature
        give every search of their cohort tree the same answer (``preemption.TreeMemo``)."""
        return (
            self.cluster_queue,
            tuple(sorted(self.flavor_usage().items())),
            self.priority,
            self.order_ts,
            self.uid,
            self.evicted,
            self.quota_reserved_at,
        )

    @cached_property
    def namespace(self) -> str:
        """``metadata.namespace``."""
        return (self.obj.get("metadata") or {}).get("namespace", "")

    @cached_property
    def backoff_gate(self) -> tuple[bool, float | None]:
        """(held by Requeued=False, ``requeueState.requeueAt``), read once: ``obj`` is a read-only version."""
        c = find_condition(self.obj, "Requeued")
        at = ((self.obj.get("status") or {}).get("requeueState") or {}).get("requeueAt")
        return c is not None and c.get("status") == "False", parse_ts(at) if at else None

    @cached_property
    def backoff_clear(self) -> bool:
        """No backoff gate at all (eligible for the heap at any time)."""
        held, at = self.backoff_gate
        return not held and at is None

    @cached_property
    def scheduling_hash(self) -> str:
        """``computeSchedulingHash``: workloads of equal shape and priority get equal flavor assignments."""
        shapes = []
        for i, ps in enumerate((self.obj.get("spec") or {}).get("podSets") or []):
            spec = (ps.get("template") or {}).get("spec") or {}
            tr = self.total_requests[i] if i < len(self.total_requests) else None
            shapes.append(
                [
                    ps.get("name"),
                    tr.count if tr else ps.get("count", 1),
                    sorted((tr.requests if tr else {}).items()),
                    spec.get("nodeSelector"),
                    spec.get("affinity"),
                    spec.get("tolerations"),
                    ps.get("minCount"),
                ]
            )
        allowed = ((self.obj.get("metadata") or {}).get("annotations") or {}).get(
            "kueue.x-k8s.io/workload-allowed-resource-flavors"
        )  # ConcurrentAdmission Variants differ by it
        raw = json.dumps(
            [shapes, self.priority] + ([allowed] if allowed is not None else []), sort_keys=True, default=str
        )
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def uses(self, frs: set[tuple[str, str]]) -> bool:
        """``WorkloadUsesResources``: some (flavor, resource) of this workload is in ``frs``."""
        return not self.flavor_resources.isdisjoint(frs)
