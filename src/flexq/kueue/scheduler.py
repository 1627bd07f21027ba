"""The scheduling cycle, in Kueue's numbered steps (``pkg/scheduler/scheduler.go``).

Owns: one cycle — 1. pop one head per active ClusterQueue; 2. snapshot the cache; 3. nominate
(skip reserved, failed checks, inactive or missing ClusterQueue, namespace mismatch, else flavor
assignment and preemption targets, resuming the flavor scan when still valid); 4. order entries
(non-borrowing first, higher priority, older queue-order timestamp); 5. process each against the
same snapshot (NoFit, Preempt without candidates, overlapping targets, no longer fits, issue
preemptions, admit); 6. requeue the rest and write ``QuotaReserved=False`` with the reason and
message. Writes: Workload ``status.admission`` and the QuotaReserved / Admitted conditions of the
admitted, ``status.resourceRequests`` and QuotaReserved=False of the rest, the Evicted / Preempted
conditions of preemption victims, old slices' ``Finished=WorkloadSliceReplaced``, and Events.

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flexq.api.jsoncopy import clone
from flexq.errors import Conflict, NotFound
from flexq.kueue import concurrent_admission as ca
from flexq.kueue.cache import KueueCache
from flexq.kueue.flavorassigner import Assignment, AssignmentState, FlavorAssigner, Mode
from flexq.kueue.matching import label_selector_matches
from flexq.kueue.preemption import Target, cq_path, get_targets, make_oracle, preemption_message
from flexq.kueue.resources import format_requests
from flexq.kueue.snapshot import ClusterQueueSnapshot, Snapshot
from flexq.kueue.workload import (
    WorkloadInfo,
    admission_checks_for,
    find_condition,
    has_quota_reservation,
    has_rejected_checks,
    has_retry_checks,
    is_admitted,
    is_true,
    parse_ts,
    queue_order_timestamp,
    set_condition,
    set_quota_reservation,
    sync_admitted_condition,
    ts,
    unset_quota_reservation,
)
from flexq.runtime.controller import EventRecorder
from flexq.store import status_copy

__all__ = ["Scheduler", "evict"]

SLICE_REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"


@dataclass
class Entry:
    """A head being scheduled."""

    info: WorkloadInfo
    cq: ClusterQueueSnapshot | None = None
    assignment: Assignment | None = None
    targets: list[Target] = field(default_factory=list)
    status: str = ""  # "", nominated, skipped, assumed
    msg: str = ""
    requeue_reason: str = ""
    reason: str = ""  # QuotaReserved=False reason
    replaced: WorkloadInfo | None = None


def evict(
    store,
    recorder: EventRecorder,
    wl: dict,
    reason: str,
    message: str,
    now: float,
    underlying: str = "",
    prepare=None,
    merge_patch: bool = False,
    metrics=None,
) -> dict | None:
    """``workloadevict.Evict``: Evicted=True, checks reset to Pending, eviction counters, event, and
    ``ReportEvictedWorkloads`` on ``metrics`` (the ClusterQueue that admitted it, the reason and its cause).

    ``resetChecksOnEviction`` builds each reset check without ``retryCount`` unless it was in Retry (then +1),
    but Kueue writes it by server-side apply: a field it leaves out stays when another manager owns it too, and
    a check's controller owns the ``retryCount`` it applied with the whole list (the provisioning controller
    copies every check into its apply). So a count survives a reset from Ready or Rejected, as upstream's
    provisioning integration test expects (``RetryCount: 1``); with the ``WorkloadRequestUseMergePatch`` gate
    (``merge_patch``) the list is replaced and the count goes."""
    cur = store.peek("Workload", wl["metadata"]["name"], wl["metadata"]["namespace"])
    if cur is None:
        return None
    fresh = status_copy(cur)
    if prepare is not None:
        prepare(fresh)
    full = f"{reason}DueTo{underlying}" if reason == "Deactivated" and underlying else reason
    set_condition(fresh, "Evicted", True, full, message, now)
    st = fresh.setdefault("status", {})
    for c in st.get("admissionChecks") or []:
        if c.get("state") == "Pending":
            continue
        prev = c.get("state")
        c["state"] = "Pending"
        c["message"] = "Reset to Pending after eviction. Previously: " + str(prev)
        c["lastTransitionTime"] = ts(now)
        if prev == "Retry":
            c["retryCount"] = int(c.get("retryCount") or 0) + 1
        elif merge_patch:
            c.pop("retryCount", None)
        c.pop("podSetUpdates", None)
    stats = st.setdefault("schedulingStats", {}).setdefault("evictions", [])
    for s in stats:
        if s.get("reason") == reason and s.get("underlyingCause", "") == underlying:
            s["count"] = int(s.get("count", 0)) + 1
            break
    else:
        stats.append({"reason": reason, "underlyingCause": underlying, "count": 1})
    out = clone(store.update_status(fresh))  # the stored version is read-only
    if st.get("admission"):
        recorder.record(out, "Normal", "EvictedDueTo" + full, message)
        if metrics is not None:
            metrics.evicted(out, st["admission"].get("clusterQueue", ""), reason, underlying)
    return out


PRESERVE_SCAN_PROGRESS = "FlavorFungibilityPreserveScanProgress"


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


def _scan_key(head: WorkloadInfo | None, cycle: int, preserve: bool) -> tuple | None:
    """A head's flavor-scan progress as ``_assign`` reads it in cycle ``cycle``."""
    last = head.last_assignment if head is not None else None
    if not isinstance(last, AssignmentState):
        return None if last is None else (repr(last),)
    return (
        tuple(tuple(sorted(m.items())) for m in last.last_tried_flavor_idx),
        last.cq_generation,
        preserve and cycle - last.scheduling_cycle <= 1,
    )


def _tree_of(cq: ClusterQueueSnapshot | None) -> object:
    """The root of a ClusterQueue's cohort tree (the ClusterQueue itself outside any cohort)."""
    if cq is None:
        return None
    return cq.parent.root() if cq.parent is not None else cq


class Scheduler:
    """Runs scheduling cycles over ``KueueCache`` and writes the outcome to the store."""

    def __init__(self, cache: KueueCache, store, recorder: EventRecorder) -> None:
        self.cache, self.store, self.events = cache, store, recorder
        self.cycle_no = 0
        self.admitted = 0
        self._issued = 0
        self._preempted_infos: dict[str, WorkloadInfo] = {}
        cache.queues.on_wake = self._woken

    # 0. one cycle ---------------------------------------------------------------------------------
    def cycle(self, now: float) -> bool:
        """Run one cycle; True when another should follow right away."""
        self.cycle_no += 1
        queues = self.cache.queues
        # what each cohort tree's scheduling reads, before the heads are popped (see ``_settle``)
        start = self._tree_keys(self.cycle_no)
        queues.begin_shape()  # a cycle that changes no queue's sizes made no progress
        # 1. Get the heads from the queues, one per active ClusterQueue.
        heads = queues.heads()
        if not heads:
            queues.shape_changed()  # ends the watch (a cycle without heads pops nothing)
            return False
        # 2. Take a snapshot of the cache (of the heads' cohort trees: the others are copied if ever asked for).
        snap = self.cache.snapshot(h.cluster_queue for h in heads)
        # 3. Calculate requirements (flavors, borrowing, preemption targets).
        entries, inadmissible = self.nominate(heads, snap, now)
        # 4. Order: non-borrowing first, then priority, then queue-order timestamp.
        sorting, requeuing = (
            self.cache.config.gate("PrioritySortingWithinCohort"),
            self.cache.config.requeuing_timestamp,
        )
        entries.sort(key=lambda e: entry_order_key(e, sorting, requeuing))
        # 5. Admit entries against the same snapshot.
        preempted: set[str] = set()
        progress = False
        self._issued = 0  # evictions written this cycle (already-evicted targets do not count)
        self._preempted_infos = {}
        for e in entries:
            self.process(e, snap, preempted, now)
        # 6. Requeue the heads that were not admitted.
        for e in entries:
            if e.status == "assumed":
                progress = True
            else:
                self.requeue_and_update(e, now)
        for e in inadmissible:
            self.requeue_and_update(e, now)
        if self.cache.metrics is not None:  # metrics.AdmissionAttempt, at the end of a cycle that had heads
            self.cache.metrics.admission_attempt(
                any(e.status == "assumed" for e in entries), self.cache.now() - now
            )
        if self._issued:
            progress = True
        changed = queues.shape_changed()
        self._settle(start)
        return changed or progress

    # settled cohort trees -----------------------------------------------------------------------------
    def _tree_keys(self, cycle: int) -> dict[str, tuple] | None:
        """Per cohort tree with a queue ``heads`` would pop: what its part of a cycle reads — the cache's inputs
        of the tree (its quota structure and workloads holding quota, the rest of the cluster that scheduling
        reads), and per ready queue its head and the head's flavor-scan progress as cycle ``cycle`` sees it."""
        if self.cache.config.wait_for_pods_ready and self.cache.config.block_admission:
            return None  # admission then waits on every workload's pods: the trees are not independent
        preserve = self.cache.config.gate(PRESERVE_SCAN_PROGRESS)
        grouped: dict[str, list[tuple]] = {}
        for q in self.cache.queues.ready_queues():
            tree = self.cache.tree_root(q.name)
            if tree is None:
                return None
            head = q.peek()
            grouped.setdefault(tree, []).append(
                (q.name, None if head is None else head.serial, _scan_key(head, cycle, preserve))
            )
        keys = {}
        for tree, entries in grouped.items():
            inputs = self.cache.tree_inputs(tree)
            if inputs is None:
                return None
            keys[tree] = (inputs, tuple(entries))
        return keys

    def _settle(self, start: dict[str, tuple] | None) -> None:
        """Set aside the cohort trees this cycle left as they were.

        A tree's part of a cycle is a function of what ``_tree_keys`` keys it by. When the cycle leaves that key as
        it found it (its heads, not admitted, went back to their queues as they were; nothing it reads changed),
        the next cycle over the same key would do the same again, with no write: each head popped, scheduled to
        the same answer and put back. So the tree's queues are kept out of ``heads`` until something it reads
        changes (``QueueManager.wake``: a change of a workload holding quota in it, of a queue's content, of the
        quota structure, of what the scheduler reads beside the trees). A cycle then costs the trees that can move
        — most cycles are caused by one tree's events — not every tree with a head waiting for capacity. What
        the cycles it skipped would have left behind is kept: the heads' scan progress is dated to the last cycle
        (``_woken``)."""
        if not start:
            return
        after = self._tree_keys(self.cycle_no + 1)
        if after is None:
            return
        for tree, key in start.items():
            if after.get(tree) == key:
                self.cache.queues.settle(tree, [name for name, _, _ in key[1]])

    def _woken(self, queues: list) -> None:
        """A settled tree's queues go back to ``heads``: each head was, in every cycle it sat out, popped and
        scheduled to the same answer, which dated its flavor-scan progress to that cycle."""
        for q in queues:
            head = q.peek()
            last = head.last_assignment if head is not None else None
            if isinstance(last, AssignmentState):
                last.scheduling_cycle = self.cycle_no

    # 3. nominate ------------------------------------------------------------------------------------
    def nominate(
        self, heads: list[WorkloadInfo], snap: Snapshot, now: float
    ) -> tuple[list[Entry], list[Entry]]:
        entries, inadmissible = [], []
        for h in heads:
            e = Entry(h, snap.cq(h.cluster_queue))
            wl = h.obj
            if h.key in self.cache.reserving:
                continue
            if has_retry_checks(wl) or has_rejected_checks(wl):
                e.msg, e.reason = "The workload has failed admission checks", "PendingEvaluation"
            elif h.cluster_queue in snap.inactive:
                e.msg, e.reason = f"ClusterQueue {h.cluster_queue} is inactive", "Suspended"
            elif e.cq is None:
                e.msg, e.reason = f"ClusterQueue {h.cluster_queue} not found", "Misconfigured"
            elif not label_selector_matches(
                e.cq.namespace_selector,
                self.cache.namespace_labels(wl["metadata"].get("namespace", "")) or {},
            ):
                e.msg, e.reason = "workload namespace doesn't match ClusterQueue selector", "Misconfigured"
                e.requeue_reason = "NamespaceMismatch"
            else:
                self._assign(e, snap, now)
                entries.append(e)
                continue
            inadmissible.append(e)
        return entries, inadmissible

    def _assign(self, e: Entry, snap: Snapshot, now: float) -> None:
        info, cq = e.info, e.cq
        assert cq is not None  # nominate() only assigns entries whose ClusterQueue exists
        last = info.last_assignment
        if isinstance(last, AssignmentState) and last_assignment_outdated(
            last, cq.generation, self.cycle_no, self.cache.config.gate(PRESERVE_SCAN_PROGRESS)
        ):
            info.last_assignment = None
        e.replaced = self._replaced_slice(info, snap)
        memo: dict = {}  # the oracle's searches, for get_targets below on the same snapshot
        fa = FlavorAssigner(
            info,
            cq,
            snap.resource_flavors,
            make_oracle(snap, now, memo, self.cache.trees),
            e.replaced,
            self.cycle_no,
        )
        fa.concurrent_admission = self.cache.config.gate(ca.GATE)
        a = fa.assign()
        targets: list[Target] = []
        if e.replaced is not None:
            targets.append(Target(e.replaced, "WorkloadSliceReplaced", e.replaced.cluster_queue))
        if a.representative_mode() == Mode.PREEMPT:
            found = get_targets(snap, info, a, now, memo, self.cache.trees)
            if found:
                targets += found
            else:
                targets = []
        e.assignment, e.targets = a, targets
        e.msg = a.message()
        info.last_assignment = a.last_state

    def _replaced_slice(self, info: WorkloadInfo, snap: Snapshot) -> WorkloadInfo | None:
        ref = ((info.obj["metadata"].get("annotations")) or {}).get(SLICE_REPLACEMENT_FOR)
        if not ref:
            return None
        old = self.cache.reserving.get(ref)
        if old is None or old.cluster_queue != info.cluster_queue:
            return None
        cq = snap.cq(old.cluster_queue)
        return cq.workloads.get(ref) if cq else None

    # 5. process ---------------------------------------------------------------------------------------
    def process(self, e: Entry, snap: Snapshot, preempted: set[str], now: float) -> None:
        a, cq = e.assignment, e.cq
        assert a is not None and cq is not None  # nominated entries have both
        gate = self.cache.config.gate(ca.GATE)
        if (
            gate
            and ca.is_variant(e.info.obj)
            and self._admitted_sibling(e, lambda sib, me: me > sib) is not None
        ):
            self._mark_skipped(e, "A more favorable variant is already admitted", "PendingEvaluation")
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
                cq.add_usage(self._to_reserve(e))
            return
        if mode == Mode.PREEMPT and gate and ca.has_closed_gate(e.info.obj):
            e.status, e.reason = "preemptionGated", "AdmissionGated"
            e.msg, e.requeue_reason = "Workload requires preemption, but it's gated", "PreemptionGated"
            e.info.last_assignment = None
            return
        if any(t.info.key in preempted for t in e.targets):
            self._mark_skipped(
                e, "Workload has overlapping preemption targets with another workload", "WaitingForQuota"
            )
            return
        usage = a.total_requests_for(e.info) if not has_quota_reservation(e.info.obj) else {}
        # fits once this entry's targets and every workload preempted earlier in the cycle are gone
        gone = {t.info.key: t.info for t in e.targets}
        gone.update({k: i for k, i in self._preempted_infos.items() if k not in gone})
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
            self._mark_skipped(
                e, "Workload no longer fits after processing another workload", "WaitingForQuota"
            )
            return
        preempted.update(t.info.key for t in e.targets)
        self._preempted_infos.update({t.info.key: t.info for t in e.targets})
        cq.add_usage(usage)
        if mode == Mode.PREEMPT:
            e.reason = "WaitingForPreemptedWorkloads"
            n, failed = self._issue_preemptions(e, victims, snap, now)
            mark_preemption_outcome(e, n, failed)
            return
        if (
            self.cache.config.wait_for_pods_ready
            and self.cache.config.block_admission
            and not self._all_ready()
        ):
            e.status, e.reason = "skipped", "WaitingForPodsReady"
            e.msg = "waiting for all admitted workloads to be in PodsReady condition"
            return
        if gate and ca.is_variant(e.info.obj):
            sibling = self._admitted_sibling(e, lambda sib, me: sib > me)
            if sibling is not None:
                if not self._migration_allowed(e):
                    e.reason = "PendingEvaluation"
                    return
                e.reason = "WaitingForPreemptedWorkloads"
                self._issue_migration(e, sibling, now)
                return
        e.status = "nominated"
        self._admit(e, now, old_slice)

    # Concurrent Admission: siblings are the Variants of the same Parent, ranked by the flavor order ----------
    def _mark_skipped(self, e: Entry, msg: str, reason: str) -> None:
        """``markSkipped``: skipped for contention this cycle; the flavor scan progress is kept only with
        ``FlavorFungibilityPreserveScanProgress`` (otherwise every flavor is tried again)."""
        e.status, e.reason, e.msg = "skipped", reason, msg
        if not self.cache.config.gate(PRESERVE_SCAN_PROGRESS):
            e.info.last_assignment = None

    def _admitted_sibling(self, e: Entry, better) -> WorkloadInfo | None:
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

    def _migration_allowed(self, e: Entry) -> bool:
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

    def _issue_migration(self, e: Entry, victim: WorkloadInfo, now: float) -> None:
        """``issueMigration``: evict the less favorable admitted sibling (``FlavorMigration``).

        The victim keeps its quota (and so stays admitted in the snapshot) until the Parent's eviction is
        finished (``VariantController``), and the entry is requeued at once (``PendingMigration``), so Kueue's
        scheduler meets the same migration cycle after cycle meanwhile, a few milliseconds apart (its
        ``SlowDown`` back-off), and writes the same eviction again each time (another ``FlavorMigration``
        count, another event: how many depends on how long the eviction takes). The twin writes it once: a
        victim already evicted is left as ``IssuePreemptions`` leaves an already-evicted target, and the
        cycle is not progress, so the scheduler waits for the quota to be released instead of repeating the
        cycle at one virtual instant (issue 26: this spun ``Twin.advance`` for ever)."""
        msg = (
            f"Evicted to accommodate a workload (UID: {e.info.obj['metadata'].get('uid', '')}) due to migration "
            "to more favorable resource flavor"
        )
        md = victim.obj["metadata"]
        cur = self.store.peek("Workload", md["name"], md["namespace"])
        if cur is not None and not is_true(cur, "Evicted"):
            try:
                if (
                    evict(
                        self.store, self.events, cur, "FlavorMigration", msg, now, metrics=self.cache.metrics
                    )
                    is not None
                ):
                    self._issued += 1
            except (Conflict, NotFound):
                pass
        e.info.last_assignment = None
        e.requeue_reason = "PendingMigration"
        e.msg += ". Pending the migration of 1 workload(s)"

    def _to_reserve(self, e: Entry) -> dict:
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

    def _all_ready(self) -> bool:
        for info in self.cache.reserving.values():
            c = find_condition(info.obj, "PodsReady")
            if c is None or c.get("status") != "True":
                return False
        return True

    def _issue_preemptions(
        self, e: Entry, victims: list[Target], snap: Snapshot, now: float
    ) -> tuple[int, int]:
        """``IssuePreemptions``: (preempted, failed); a target already evicted counts as preempted."""
        assert e.cq is not None
        n = failed = 0
        for t in victims:
            wl = t.info.obj
            ev = find_condition(wl, "Evicted")
            if ev is not None and ev.get("status") == "True":
                n += 1
                continue
            target_cq = snap.cq(t.cluster_queue)
            msg = preemption_message(
                e.info,
                t.reason,
                cq_path(e.cq),
                cq_path(target_cq) if target_cq is not None else t.cluster_queue,
            )

            def prep(obj: dict, reason=t.reason, msg=msg) -> None:
                set_condition(obj, "Preempted", True, reason, msg, now)

            try:
                out = evict(
                    self.store,
                    self.events,
                    wl,
                    "Preempted",
                    msg,
                    now,
                    prepare=prep,
                    merge_patch=self.cache.config.gate("WorkloadRequestUseMergePatch"),
                    metrics=self.cache.metrics,
                )
            except (Conflict, NotFound):
                failed += 1
                continue
            if out is None:  # gone from the store: upstream's Evict fails with NotFound
                failed += 1
                continue
            self._issued += 1
            if self.cache.metrics is not None:
                self.cache.metrics.preemption(e.info.cluster_queue, t.reason)
            priorities = (
                f"preemptor effective priority: {e.info.priority} (base: {e.info.priority}, boost: 0); "
                f"preemptee effective priority: {t.info.priority} (base: {t.info.priority}, boost: 0)"
            )
            self.events.record(out, "Normal", "Preempted", f"{msg}; {priorities}")
            vm = wl["metadata"]
            self.events.record(
                e.info.obj,
                "Normal",
                "PreemptedWorkload",  # on the preemptor, as IssuePreemptions
                f"Preempted workload {vm['namespace']}/{vm['name']} (UID: {vm.get('uid', '')}) in "
                f"ClusterQueue {t.info.cluster_queue}; {priorities}",
            )
            n += 1
        return n, failed

    def _admit(self, e: Entry, now: float, old_slice: Target | None) -> None:
        cur = self.store.peek("Workload", e.info.obj["metadata"]["name"], e.info.obj["metadata"]["namespace"])
        if cur is None:
            return
        assert e.assignment is not None and e.cq is not None
        wl = status_copy(cur)
        admission = {"clusterQueue": e.info.cluster_queue, "podSetAssignments": e.assignment.to_api()}
        set_quota_reservation(wl, admission, now)
        checks = admission_checks_for(e.cq.admission_checks, e.cq.all_flavors, admission)
        present = {c["name"] for c in (wl.get("status") or {}).get("admissionChecks") or []}
        if checks <= present:
            sync_admitted_condition(wl, now)
        try:
            out = self.store.update_status(wl, take=True)  # only read below
        except (Conflict, NotFound):
            e.status, e.msg = "", "Failed to admit workload: conflict"
            e.requeue_reason = "FailedAfterNomination"
            return
        e.status = "assumed"
        self.admitted += 1
        self.cache.queues.forget_head(e.info)
        created = parse_ts(wl["metadata"].get("creationTimestamp"))
        rq = find_condition(wl, "Requeued")
        queued = parse_ts(rq["lastTransitionTime"]) if rq else created
        msg = f"Quota reserved in ClusterQueue {e.info.cluster_queue}, wait time since queued was {max(0, now - queued):.0f}s"
        considered = e.assignment.considered_flavors()
        if considered:
            msg += f"; Flavors considered: {considered}"
        self.events.record(out, "Normal", "QuotaReserved", msg)
        if is_true(out, "Admitted"):
            self.events.record(
                out,
                "Normal",
                "Admitted",
                f"Admitted by ClusterQueue {e.info.cluster_queue}, wait time since reservation was 0s",
            )
        if old_slice is not None:
            self._finish_replaced(old_slice, out, now)

    def _finish_replaced(self, old: Target, new: dict, now: float) -> None:
        wl = self.store.try_get(
            "Workload", old.info.obj["metadata"]["name"], old.info.obj["metadata"]["namespace"]
        )
        if wl is None or find_condition(wl, "Finished"):
            return
        md = new["metadata"]
        msg = (
            f"Replaced to accommodate a workload (UID: {md.get('uid')}, JobUID: "
            f"{(md.get('labels') or {}).get('kueue.x-k8s.io/job-uid', '')}) due to workload slice aggregation"
        )
        set_condition(wl, "Finished", True, "WorkloadSliceReplaced", msg, now)
        out = self.store.update_status(wl)
        self.events.record(out, "Normal", "WorkloadSliceReplaced", msg)

    # 6. requeue ---------------------------------------------------------------------------------------
    def requeue_and_update(self, e: Entry, now: float) -> None:
        if e.status and not e.requeue_reason:
            e.requeue_reason = "FailedAfterNomination"
        self.cache.queues.requeue_workload(e.info, e.requeue_reason, now)
        if e.status not in ("", "skipped", "preemptionGated"):
            return
        cur = self.store.peek("Workload", e.info.obj["metadata"]["name"], e.info.obj["metadata"]["namespace"])
        if cur is None or has_quota_reservation(cur):
            return
        wl = status_copy(cur)
        reason = e.reason or "Pending"
        changed = unset_quota_reservation(wl, reason, e.msg, now)
        if e.status == "preemptionGated":
            changed = (
                set_condition(wl, "BlockedOnPreemptionGates", True, "PreemptionGated", e.msg, now) or changed
            )
        # PodSetRequest `resources,omitempty`: a pod set without requests has no `resources`
        reqs = [
            {"name": p.name, **({"resources": format_requests(p.requests)} if p.requests else {})}
            for p in e.info.total_requests
        ]
        st = wl.setdefault("status", {})
        if st.get("resourceRequests") != reqs:
            st["resourceRequests"] = reqs
            changed = True
        if changed:
            try:
                out = self.store.update_status(wl, take=True)  # only read below
            except (Conflict, NotFound):
                return
            self.events.record(out, "Warning", reason, e.msg)
