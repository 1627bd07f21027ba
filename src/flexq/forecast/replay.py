"""A forward run's scheduling cycles that Kueue would answer again the same way: their answer is replayed.

Owns ``CycleMemo``: ``kueue.cycle.plan`` for one head, answered again when nothing it reads has changed since it
was asked. A deep queue retrying behind a full DWS pool repeats itself: every second one job is reserved, its
request fails at once and it is evicted, and the next head is tried twice against the same workloads holding quota
(bench/eta_cost.py: 27,000 cycles per replica, 85 % of them answered again). Kueue runs each of those cycles, and
so does the forecast: the memo changes what a cycle costs, never what it decides. It starts after a run's first
``WARMUP_CYCLES`` (a short run's cycles cost less than their keys), keeps at most ``MAX_ANSWERS``, and turns itself
off in a run that does not repeat itself (``PROBE_CYCLES``, ``MIN_HIT_SHARE``).

What a one-head cycle reads, and so the key (``key``):
- the head: its workload (key, ClusterQueue, priority; its queue-order timestamp where the ClusterQueue's
  preemption policy compares it, ``LowerOrNewerEqualPriority``), whether a check of it is in ``Retry`` or
  ``Rejected``, whether it holds quota, and the flavor-scan progress the cycle would resume (none when
  ``last_assignment_outdated``: the cycle's own rule);
- the workloads holding quota (``hold``: each one's key, ClusterQueue, count and flavors per pod set, priority,
  queue-order timestamp, true conditions and whether its pods are ready): they make every ClusterQueue's usage and
  every preemption search. The quotas, flavors, configuration and namespaces are the run's own, fixed.
An answer is kept only when it holds no preemption (``admit`` or nothing, no target) or the head was
inadmissible; a replayed answer carries the scan progress the cycle would have left, dated to this cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flexq.kueue.config import KueueConfig
from flexq.kueue.cycle import (
    PRESERVE_SCAN_PROGRESS,
    Entry,
    Plan,
    last_assignment_outdated,
    plan,
    pods_ready,
)
from flexq.kueue.flavorassigner import Assignment, AssignmentState
from flexq.kueue.preemption import compares_queue_order
from flexq.kueue.snapshot import Snapshot
from flexq.kueue.workload import WorkloadInfo, has_rejected_checks, has_retry_checks

__all__ = ["CycleMemo"]

# a run's table is dropped whole past this many answers (about 4 KB each: 5,000 hold a deep queue's rotation,
# bench/eta_cost.py keeps about 4,000 per replica; a run that never repeats itself, 1,000 jobs draining over a day,
# would otherwise keep 20,000, 86 MB, for nothing)
MAX_ANSWERS = 5_000
# a short run never asks (its cycles cost less than keeping their answers): the memo starts after this many cycles
WARMUP_CYCLES = 200
# a run whose cycles do not repeat stops asking (a key costs the holders' set): once this many were asked, fewer
# than one in ``MIN_HIT_SHARE`` answered again turns the memo off for the run
PROBE_CYCLES = 1_000
MIN_HIT_SHARE = 4


@dataclass(frozen=True)
class _Answer:
    """What a one-head cycle decided, as the forward run reads it."""

    inadmissible: bool
    action: str = ""
    status: str = ""
    msg: str = ""
    reason: str = ""
    requeue_reason: str = ""
    assignment: Assignment | None = None  # an admission's (read-only: ``to_api``)
    scan: tuple[tuple[tuple[str, int], ...], ...] | None = None  # the progress left, None: dropped


class CycleMemo:
    """One forward run's answers, by what the cycle read (see the module docstring)."""

    def __init__(self, config: KueueConfig) -> None:
        self.config = config
        self.preserve = config.gate(PRESERVE_SCAN_PROGRESS)
        self.answers: dict[tuple, _Answer] = {}
        self._holders: dict[str, tuple] = {}
        self._holders_key: frozenset | None = frozenset()
        self.hits = self.misses = 0
        self.asked = 0  # cycles asked before the memo started
        self.on: bool | None = None  # None: not started yet (``WARMUP_CYCLES``), False: off for the run

    # the workloads holding quota ----------------------------------------------------------------------------
    def hold(self, info: WorkloadInfo) -> None:
        if self.on:
            self._hold(info)

    def _hold(self, info: WorkloadInfo) -> None:
        obj = info.obj
        conds = tuple(
            sorted(
                c.get("type", "")
                for c in (obj.get("status") or {}).get("conditions") or []
                if c.get("status") == "True"
            )
        )
        adm = (obj.get("status") or {}).get("admission") or {}
        flavors = tuple(
            (ps.get("name", ""), ps.get("count"), tuple(sorted((ps.get("flavors") or {}).items())))
            for ps in adm.get("podSetAssignments") or []
        )
        self._holders[info.key] = (
            info.key,
            info.cluster_queue,
            flavors,
            info.priority,
            info.order_ts,
            conds,
            pods_ready(info),
        )
        self._holders_key = None

    def release(self, key: str) -> None:
        if self.on and self._holders.pop(key, None) is not None:
            self._holders_key = None

    def _holding(self) -> frozenset:
        if self._holders_key is None:
            self._holders_key = frozenset(self._holders.values())
        return self._holders_key

    # a cycle --------------------------------------------------------------------------------------------------
    def plan(
        self,
        heads: list[WorkloadInfo],
        snap: Snapshot,
        now: float,
        *,
        cycle: int,
        reserving: Mapping[str, WorkloadInfo],
        namespace_labels: Callable[[str], Mapping | None],
    ) -> Plan:
        """``kueue.cycle.plan`` of ``heads`` against ``snap``, or the answer it gave to the same question."""
        if self.on is None:
            self.asked += 1
            if self.asked >= WARMUP_CYCLES:  # from now on: the workloads holding quota now, then each change
                self.on = True
                for info in reserving.values():
                    self._hold(info)
        key = self.key(heads, snap, cycle, reserving) if self.on else None
        if key is not None:
            kept = self.answers.get(key)
            if kept is not None:
                self.hits += 1
                return _replay(kept, heads[0], snap, cycle)
        self.misses += 1
        decided = plan(
            heads, snap, self.config, now, cycle=cycle, reserving=reserving, namespace_labels=namespace_labels
        )
        if key is not None:
            answer = _answer(decided, heads[0], snap, cycle)
            if answer is not None:
                if len(self.answers) >= MAX_ANSWERS:
                    self.answers.clear()
                self.answers[key] = answer
            if self.hits + self.misses >= PROBE_CYCLES and self.hits * MIN_HIT_SHARE < self.misses:
                self.on = False  # this run does not repeat itself
                self.answers.clear()
                self._holders.clear()
        return decided

    def key(
        self, heads: list[WorkloadInfo], snap: Snapshot, cycle: int, reserving: Mapping[str, WorkloadInfo]
    ) -> tuple | None:
        if len(heads) != 1:
            return None
        head = heads[0]
        cq = snap.cq(head.cluster_queue)
        last = head.last_assignment
        scan: Any = None
        if last is not None:
            if not isinstance(last, AssignmentState):
                return None
            if cq is not None and not last_assignment_outdated(last, cq.generation, cycle, self.preserve):
                scan = _scan(last)
        wl = head.obj
        return (
            head.key,
            head.cluster_queue,
            head.priority,
            head.order_ts if cq is not None and compares_queue_order(cq) else None,
            has_retry_checks(wl),
            has_rejected_checks(wl),
            head.key in reserving,
            scan,
            self._holding(),
        )


def _scan(state: AssignmentState) -> tuple[tuple[tuple[str, int], ...], ...]:
    return tuple(tuple(sorted(m.items())) for m in state.last_tried_flavor_idx)


def _answer(decided: Plan, head: WorkloadInfo, snap: Snapshot, cycle: int) -> _Answer | None:
    """``decided`` as an answer to keep, or None when it cannot be replayed (a preemption, a target)."""
    if len(decided.entries) + len(decided.inadmissible) != 1:
        return None
    if decided.inadmissible:
        e = decided.inadmissible[0]
        return _Answer(True, status=e.status, msg=e.msg, reason=e.reason, requeue_reason=e.requeue_reason)
    e = decided.entries[0]
    if (
        e.action not in ("", "admit")
        or e.targets
        or e.victims
        or e.replaced is not None
        or e.info is not head
    ):
        return None
    last = head.last_assignment
    scan = None
    if last is not None:
        cq = snap.cq(head.cluster_queue)
        if cq is None or last.scheduling_cycle != cycle or last.cq_generation != cq.generation:
            return None  # progress this cycle did not leave: not replayable
        scan = _scan(last)
    return _Answer(
        False,
        action=e.action,
        status=e.status,
        msg=e.msg,
        reason=e.reason,
        requeue_reason=e.requeue_reason,
        assignment=e.assignment if e.action == "admit" else None,
        scan=scan,
    )


def _replay(kept: _Answer, head: WorkloadInfo, snap: Snapshot, cycle: int) -> Plan:
    cq = snap.cq(head.cluster_queue)
    e = Entry(
        head, cq, status=kept.status, msg=kept.msg, reason=kept.reason, requeue_reason=kept.requeue_reason
    )
    if kept.inadmissible:
        return Plan([], [e])
    e.action, e.assignment = kept.action, kept.assignment
    head.last_assignment = (
        None
        if kept.scan is None
        else AssignmentState([dict(m) for m in kept.scan], cq.generation if cq is not None else 0, cycle)
    )
    return Plan([e], [])
