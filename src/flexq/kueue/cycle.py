"""One scheduling cycle's decisions, against an explicit snapshot: steps 3–5 of Kueue's ``schedule``.

Owns ``plan(heads, snap, config, now, ...)`` — for the heads popped from the queues (one per active
ClusterQueue), what Kueue's scheduler decides before it writes anything (``pkg/scheduler/scheduler.go``):

3. nominate: skip a head already holding quota, mark as inadmissible one with failed checks, of an inactive or
   missing ClusterQueue, or of a namespace the ClusterQueue does not select; else assign flavors (resuming the
   flavor scan while it is still valid) and, when the assignment preempts, find the targets;
4. order the entries: workloads already holding quota first, then non-borrowing, higher priority, earlier
   queue-order timestamp (``entry_order_key``);
5. process each against the same snapshot, in order: NoFit; Preempt without candidates (reserving what
   ``resourcesToReserve`` says); preemption gated; overlapping targets; no longer fits once the earlier
   entries' usage and preemptions are counted; else the entry's **action** — ``preempt`` (its ``victims``; it
   then waits for them: ``WaitingForPreemptedWorkloads``), ``migrate`` (Concurrent Admission: evict the less
   favourable admitted sibling ``migrate_from``) or ``admit`` — with blockAdmission's wait for every admitted
   workload's pods.

It returns the ordered entries and the inadmissible ones; the caller does the writes, in the entries' order
(``flexq.kueue.scheduler.Scheduler``: evictions, the admission, requeue with the reason), or plays them in a
forward run (``flexq.forecast.fast``). Nothing here reads a clock or measures a duration: a cycle's duration belongs
to whoever drives the cycles. The snapshot is changed as Kueue changes its own (usage added per entry), and
the heads' flavor-scan progress (``WorkloadInfo.last_assignment``) is kept or dropped as Kueue keeps it.

Pure: a function of its arguments. Must not import store, runtime, loop, clock or the other domains.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flexq.kueue import variants as ca
from flexq.kueue.flavorassigner import Assignment, AssignmentState, FlavorAssigner, Mode
from flexq.kueue.preemption import Target, get_targets, make_oracle
from flexq.kueue.snapshot import ClusterQueueSnapshot, Snapshot
from flexq.kueue.workload import (
    WorkloadInfo,
    has_quota_reservation,
    has_rejected_checks,
    has_retry_checks,
    is_admitted,
)
from flexq.semantics.conditions import find_condition
from flexq.semantics.selectors import label_selector_matches
from flexq.semantics.workloads import queue_order_timestamp

if TYPE_CHECKING:
    from flexq.kueue.config import KueueConfig

__all__ = [
    "Entry",
    "Plan",
    "plan",
    "entry_order_key",
    "last_assignment_outdated",
    "mark_preemption_outcome",
    "mark_skipped",
    "to_reserve",
    "PRESERVE_SCAN_PROGRESS",
    "SLICE_REPLACEMENT_FOR",
    "resumes_scan",
]

SLICE_REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"
PRESERVE_SCAN_PROGRESS = "FlavorFungibilityPreserveScanProgress"


@dataclass
class Entry:
    """A head being scheduled."""

    info: WorkloadInfo
    cq: ClusterQueueSnapshot | None = None
    assignment: Assignment | None = None
    targets: list[Target] = field(default_factory=list)
    status: str = ""  # "", nominated, skipped, preemptionGated, assumed
    msg: str = ""
    requeue_reason: str = ""
    reason: str = ""  # QuotaReserved=False reason
    replaced: WorkloadInfo | None = None
    # what step 5 decided the caller must write: "admit", "preempt" (``victims``), "migrate" (``migrate_from``)
    action: str = ""
    victims: list[Target] = field(default_factory=list)
    old_slice: Target | None = None
    migrate_from: WorkloadInfo | None = None


@dataclass
class Plan:
    """``plan``'s answer: the nominated entries in processing order, and the inadmissible heads."""

    entries: list[Entry]
    inadmissible: list[Entry]


def mark_preemption_outcome(e: Entry, preempted: int, errors: int) -> None:
    """``markPreemptionOutcome``: the scan progress is dropped (the next cycle tries every flavor); the message
    names the pending preemptions, else the failed ones (requeued at once to retry)."""
    e.info.last_assignment = None
    if preempted:
        e.msg += f". Pending the preemption of {preempted} workload(s)"
        e.requeue_reason = "PendingPreemption"
    elif errors > 0:
        e.msg += f". Preempting {errors} workload(s) failed, will retry."
        e.requeue_reason = "PreemptionFailed"


def resumes_scan(entries: list[Entry]) -> bool:
    """Whether a head of this cycle went back to its heap with flavors left to try (``pending_flavors``): the
    next cycle pops it again and its scan resumes at the next flavor, so that cycle is not this one again even
    when no queue's sizes changed. Kueue's loop goes on while a heap holds a head; the twin's ``Scheduler`` gets
    that next cycle from the head's status write, a forward run that writes nothing asks this."""
    return any(
        e.action != "admit"
        and e.info.last_assignment is not None
        and e.info.last_assignment.pending_flavors()
        for e in entries
    )


def mark_skipped(e: Entry, msg: str, reason: str, preserve_progress: bool) -> None:
    """``markSkipped``: skipped for contention this cycle; the flavor scan progress is kept only with
    ``FlavorFungibilityPreserveScanProgress`` (otherwise every flavor is tried again)."""
    e.status, e.reason, e.msg = "skipped", reason, msg
    if not preserve_progress:
        e.info.last_assignment = None


def last_assignment_outdated(
    last: AssignmentState,
    cq_generation: int,
    cycle: int,
    preserve_progress: bool,
    last_hash: str = "",
    current_hash: str = "",
) -> bool:
    """``lastAssignmentOutdated``: the ClusterQueue's allocatable resources changed since the assignment; with
    ``FlavorFungibilityPreserveScanProgress`` a changed scheduling shape (both hashes known and different)
    always outdates it, and an assignment of this or the preceding cycle never does otherwise. flexq keeps no
    scheduling hash (unknown, ""), so only the cycle and generation rules apply to its own workloads."""
    if preserve_progress:
        if last_hash and current_hash and last_hash != current_hash:
            return True
        if cycle - last.scheduling_cycle <= 1:
            return False
    return cq_generation > last.cq_generation


def entry_order_key(e: Entry, priority_sorting: bool = True, requeuing_timestamp: str = "Eviction") -> tuple:
    """``makeClassicalIterator``'s order as a key: workloads already holding quota first, then lower borrowing,
    higher priority (gate ``PrioritySortingWithinCohort``), earlier queue-order timestamp (which, with the gate
    off, puts a workload preempted by reclamation while borrowing after its preemptor)."""
    info = e.info
    ts = (
        info.order_ts
        if priority_sorting
        else queue_order_timestamp(info.obj, requeuing_timestamp, priority_sorting=False)
    )
    return (
        not has_quota_reservation(info.obj),
        e.assignment.borrowing if e.assignment else 0,
        -info.priority if priority_sorting else 0,
        ts,
    )


def to_reserve(e: Entry) -> dict:
    """``resourcesToReserve`` for a Preempt entry without candidates: nothing for a workload already holding
    quota, the whole usage unless the assignment preempts, else the usage capped by what the ClusterQueue
    has left of its nominal quota (of nominal + borrowing limit when the assignment borrows)."""
    cq, a = e.cq, e.assignment
    assert cq is not None and a is not None
    if has_quota_reservation(e.info.obj):
        return {}
    if a.representative_mode() != Mode.PREEMPT:
        return dict(a.usage)
    out = {}
    for fr, u in a.usage.items():
        q = cq.quota(fr)
        used = cq.usage.get(fr, 0)
        if a.borrowing > 0:
            out[fr] = u if q.borrowing_limit is None else min(u, q.nominal + q.borrowing_limit - used)
        else:
            out[fr] = max(0, min(u, q.nominal - used))
    return out


def pods_ready(info: WorkloadInfo) -> bool:
    """``PodsReady=True`` (blockAdmission waits for it on every workload holding quota)."""
    c = find_condition(info.obj, "PodsReady")
    return c is not None and c.get("status") == "True"


def _tree_of(cq: ClusterQueueSnapshot | None) -> object:
    """The root of a ClusterQueue's cohort tree (the ClusterQueue itself outside any cohort)."""
    if cq is None:
        return None
    return cq.parent.root() if cq.parent is not None else cq


def _no_labels(_ns: str) -> dict | None:
    return {}


class _Cycle:
    """The state of one ``plan`` call."""

    def __init__(
        self,
        snap: Snapshot,
        config: KueueConfig,
        now: float,
        cycle: int,
        reserving: Mapping[str, WorkloadInfo],
        namespace_labels: Callable[[str], Mapping | None],
        trees: Any,
    ) -> None:
        self.snap, self.config, self.now, self.cycle = snap, config, now, cycle
        self.reserving, self.namespace_labels, self.trees = reserving, namespace_labels, trees
        self.preserve = config.gate(PRESERVE_SCAN_PROGRESS)
        self.concurrent = config.gate(ca.GATE)
        self.preempted: set[str] = set()
        self.preempted_infos: dict[str, WorkloadInfo] = {}
        self.block = config.wait_for_pods_ready and config.block_admission
        self.all_ready = self.block and all(pods_ready(i) for i in reserving.values())

    # 3. nominate ------------------------------------------------------------------------------------------
    def nominate(self, heads: list[WorkloadInfo]) -> tuple[list[Entry], list[Entry]]:
        snap = self.snap
        entries, inadmissible = [], []
        for h in heads:
            e = Entry(h, snap.cq(h.cluster_queue))
            wl = h.obj
            if h.key in self.reserving:
                continue
            if has_retry_checks(wl) or has_rejected_checks(wl):
                e.msg, e.reason = "The workload has failed admission checks", "PendingEvaluation"
            elif h.cluster_queue in snap.inactive:
                e.msg, e.reason = f"ClusterQueue {h.cluster_queue} is inactive", "Suspended"
            elif e.cq is None:
                e.msg, e.reason = f"ClusterQueue {h.cluster_queue} not found", "Misconfigured"
            elif not label_selector_matches(
                e.cq.namespace_selector,
                self.namespace_labels(wl["metadata"].get("namespace", "")) or {},
            ):
                e.msg, e.reason = "workload namespace doesn't match ClusterQueue selector", "Misconfigured"
                e.requeue_reason = "NamespaceMismatch"
            else:
                self.assign(e)
                entries.append(e)
                continue
            inadmissible.append(e)
        return entries, inadmissible

    def assign(self, e: Entry) -> None:
        info, cq, snap = e.info, e.cq, self.snap
        assert cq is not None  # nominate() only assigns entries whose ClusterQueue exists
        last = info.last_assignment
        if isinstance(last, AssignmentState) and last_assignment_outdated(
            last, cq.generation, self.cycle, self.preserve
        ):
            info.last_assignment = None
        e.replaced = self.replaced_slice(info)
        memo: dict = {}  # the oracle's searches, for get_targets below on the same snapshot
        fa = FlavorAssigner(
            info,
            cq,
            snap.resource_flavors,
            make_oracle(snap, self.now, memo, self.trees),
            e.replaced,
            self.cycle,
        )
        fa.concurrent_admission = self.concurrent
        a = fa.assign()
        targets: list[Target] = []
        if e.replaced is not None:
            targets.append(Target(e.replaced, "WorkloadSliceReplaced", e.replaced.cluster_queue))
        if a.representative_mode() == Mode.PREEMPT:
            found = get_targets(snap, info, a, self.now, memo, self.trees)
            if found:
                targets += found
            else:
                targets = []
        e.assignment, e.targets = a, targets
        e.msg = a.message()
        info.last_assignment = a.last_state

    def replaced_slice(self, info: WorkloadInfo) -> WorkloadInfo | None:
        ref = ((info.obj["metadata"].get("annotations")) or {}).get(SLICE_REPLACEMENT_FOR)
        if not ref:
            return None
        old = self.reserving.get(ref)
        if old is None or old.cluster_queue != info.cluster_queue:
            return None
        cq = self.snap.cq(old.cluster_queue)
        return cq.workloads.get(ref) if cq else None

    # 5. process -------------------------------------------------------------------------------------------
    def process(self, e: Entry) -> None:
        a, cq, snap = e.assignment, e.cq, self.snap
        assert a is not None and cq is not None  # nominated entries have both
        gate = self.concurrent
        if (
            gate
            and ca.is_variant(e.info.obj)
            and self.admitted_sibling(e, lambda sib, me: me > sib) is not None
        ):
            mark_skipped(
                e, "A more favorable variant is already admitted", "PendingEvaluation", self.preserve
            )
            return
        mode = a.representative_mode()
        victims = [t for t in e.targets if t.reason != "WorkloadSliceReplaced"]
        old_slice = next((t for t in e.targets if t.reason == "WorkloadSliceReplaced"), None)
        if mode == Mode.NO_FIT:
            e.requeue_reason, e.reason = "NoFit", a.no_fit_reason
            return
        if mode == Mode.PREEMPT and not e.targets:
            e.requeue_reason, e.reason = "PreemptionNoCandidates", "WaitingForQuota"
            if cq.preemption["reclaimWithinCohort"] != "Any":
                cq.add_usage(to_reserve(e))
            return
        if mode == Mode.PREEMPT and gate and ca.has_closed_gate(e.info.obj):
            e.status, e.reason = "preemptionGated", "AdmissionGated"
            e.msg, e.requeue_reason = "Workload requires preemption, but it's gated", "PreemptionGated"
            e.info.last_assignment = None
            return
        if any(t.info.key in self.preempted for t in e.targets):
            mark_skipped(
                e,
                "Workload has overlapping preemption targets with another workload",
                "WaitingForQuota",
                self.preserve,
            )
            return
        usage = a.total_requests_for(e.info) if not has_quota_reservation(e.info.obj) else {}
        # fits once this entry's targets and every workload preempted earlier in the cycle are gone
        gone = {t.info.key: t.info for t in e.targets}
        gone.update({k: i for k, i in self.preempted_infos.items() if k not in gone})
        # only workloads of this ClusterQueue's cohort tree can change what fits it (the rest would be
        # removed and put back for nothing: with many cohorts that is most of them)
        tree = _tree_of(cq)
        gone = {k: i for k, i in gone.items() if _tree_of(snap.cq(i.cluster_queue)) is tree}
        for info in gone.values():
            snap.remove_workload(info)
        fits = cq.fits(usage)
        for info in gone.values():
            snap.add_workload(info)
        if not fits:
            mark_skipped(
                e,
                "Workload no longer fits after processing another workload",
                "WaitingForQuota",
                self.preserve,
            )
            return
        self.preempted.update(t.info.key for t in e.targets)
        self.preempted_infos.update({t.info.key: t.info for t in e.targets})
        cq.add_usage(usage)
        if mode == Mode.PREEMPT:
            e.reason = "WaitingForPreemptedWorkloads"
            e.action, e.victims = "preempt", victims
            return
        if self.block and not self.all_ready:
            e.status, e.reason = "skipped", "WaitingForPodsReady"
            e.msg = "waiting for all admitted workloads to be in PodsReady condition"
            return
        if gate and ca.is_variant(e.info.obj):
            sibling = self.admitted_sibling(e, lambda sib, me: sib > me)
            if sibling is not None:
                if not self.migration_allowed(e):
                    e.reason = "PendingEvaluation"
                    return
                e.reason = "WaitingForPreemptedWorkloads"
                e.action, e.migrate_from = "migrate", sibling
                return
        e.status = "nominated"
        e.action, e.old_slice = "admit", old_slice
        # the admitted workload holds quota from now on, without its pods ready (``AssumeWorkload``)
        self.all_ready = self.all_ready and pods_ready(e.info)

    # Concurrent Admission: siblings are the Variants of the same Parent, ranked by the flavor order ----------
    def admitted_sibling(self, e: Entry, better) -> WorkloadInfo | None:
        """``findAdmittedSibling``: an admitted sibling whose flavor index ``better(sibling, mine)`` accepts."""
        uid = ca.parent_uid(e.info.obj)
        cq = e.cq
        if not uid or cq is None or not cq.resource_groups:
            return None
        flavors = list(cq.resource_groups[0].flavors)
        mine = ca.variant_flavor(e.info.obj)
        if mine not in flavors:
            return None
        for other in cq.workloads.values():
            if other.uid == e.info.uid or ca.parent_uid(other.obj) != uid or not is_admitted(other.obj):
                continue
            theirs = ca.variant_flavor(other.obj)
            if theirs in flavors and better(flavors.index(theirs), flavors.index(mine)):
                return other
        return None

    def migration_allowed(self, e: Entry) -> bool:
        """``isMigrationAllowed``: the target flavor is not below ``lastAcceptableFlavorName``."""
        assert e.cq is not None
        last = ca.last_acceptable_flavor({"spec": e.cq.spec})
        if last is None:
            return True
        flavors = list(e.cq.resource_groups[0].flavors)
        mine = ca.variant_flavor(e.info.obj)
        if mine not in flavors:
            return False
        if last in flavors and flavors.index(mine) > flavors.index(last):
            e.msg = "Target flavor is below LastAcceptableFlavorName"
            return False
        return True


def plan(
    heads: list[WorkloadInfo],
    snap: Snapshot,
    config: KueueConfig,
    now: float,
    *,
    cycle: int = 0,
    reserving: Mapping[str, WorkloadInfo] | None = None,
    namespace_labels: Callable[[str], Mapping | None] | None = None,
    trees: Any = None,
) -> Plan:
    """Steps 3–5 of one cycle for ``heads`` against ``snap`` (see the module docstring).

    ``cycle``: the cycle's number (the flavor-scan progress is dated by it); ``reserving``: the workloads
    holding quota, by key (a head among them is skipped; a slice's replaced workload and blockAdmission's
    readiness are read from them); ``namespace_labels``: a namespace's labels for the ClusterQueues'
    namespace selectors (None: every namespace has no labels); ``trees``: the cache's per-tree memo of
    preemption searches (``flexq.kueue.preemption.TreeMemo``), or None."""
    c = _Cycle(snap, config, now, cycle, reserving or {}, namespace_labels or _no_labels, trees)
    entries, inadmissible = c.nominate(heads)
    sorting, requeuing = config.gate("PrioritySortingWithinCohort"), config.requeuing_timestamp
    entries.sort(key=lambda e: entry_order_key(e, sorting, requeuing))
    for e in entries:
        c.process(e)
    return Plan(entries, inadmissible)
