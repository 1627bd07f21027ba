"""The scheduling cycle, in Kueue's numbered steps (``pkg/scheduler/scheduler.go``), and its writes.

Owns: one cycle — 1. pop one head per active ClusterQueue; 2. snapshot the cache; 3.–5. decide, with
``flexq.kueue.cycle.plan`` (the pure part: nominate, order, process each entry against the same snapshot);
then write what was decided, in the entries' order (issue preemptions, migrate, admit); 6. requeue the rest
and write ``QuotaReserved=False`` with the reason and message. Also the settling of cohort trees whose last
cycle changed nothing. Writes: Workload ``status.admission`` and the QuotaReserved / Admitted conditions of
the admitted, ``status.resourceRequests`` and QuotaReserved=False of the rest, the Evicted / Preempted
conditions of preemption victims, old slices' ``Finished=WorkloadSliceReplaced``, and Events.

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

from flexq.api.jsoncopy import clone
from flexq.errors import Conflict, NotFound
from flexq.kueue.cache import KueueCache
from flexq.kueue.cycle import (
    PRESERVE_SCAN_PROGRESS,
    SLICE_REPLACEMENT_FOR,
    Entry,
    entry_order_key,
    last_assignment_outdated,
    mark_preemption_outcome,
    plan,
    to_reserve,
)
from flexq.kueue.flavorassigner import AssignmentState
from flexq.kueue.preemption import Target, cq_path, preemption_message
from flexq.kueue.resources import format_requests
from flexq.kueue.snapshot import Snapshot
from flexq.kueue.workload import (
    OBSERVABILITY_GATE,
    WorkloadInfo,
    admission_checks_for,
    has_quota_reservation,
    parse_ts,
    set_quota_reservation,
    sync_admitted_condition,
    ts,
    unadmitted_reason,
    unset_quota_reservation,
)
from flexq.runtime.controller import EventRecorder
from flexq.semantics.conditions import find_condition, is_true, set_status_condition
from flexq.store import status_copy

__all__ = ["Scheduler", "evict"]

# the decision part lives in flexq.kueue.cycle; these names stay importable from here
__all__ += [
    "Entry",
    "entry_order_key",
    "last_assignment_outdated",
    "mark_preemption_outcome",
    "to_reserve",
    "SLICE_REPLACEMENT_FOR",
]


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
    set_status_condition(fresh, "Evicted", True, full, message, now)
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


class Scheduler:
    """Runs scheduling cycles over ``KueueCache`` and writes the outcome to the store."""

    def __init__(self, cache: KueueCache, store, recorder: EventRecorder) -> None:
        self.cache, self.store, self.events = cache, store, recorder
        self.cycle_no = 0
        self.had_heads = False  # whether the last cycle popped a head (only such a cycle takes time)
        self.admitted = 0
        self._issued = 0
        cache.queues.on_wake = self._woken

    # 0. one cycle ---------------------------------------------------------------------------------
    def cycle(self, now: float) -> bool:
        """Run one cycle; True when another should follow right away."""
        self.cycle_no += 1
        self.had_heads = False
        queues = self.cache.queues
        # what each cohort tree's scheduling reads, before the heads are popped (see ``_settle``)
        start = self._tree_keys(self.cycle_no)
        queues.begin_shape()  # a cycle that changes no queue's sizes made no progress
        # 1. Get the heads from the queues, one per active ClusterQueue.
        heads = queues.heads()
        if not heads:
            queues.shape_changed()  # ends the watch (a cycle without heads pops nothing)
            return False
        # upstream's Heads blocks until there is one: a cycle without heads takes no time
        self.had_heads = True
        # 2. Take a snapshot of the cache (of the heads' cohort trees: the others are copied if ever asked for).
        snap = self.cache.snapshot(h.cluster_queue for h in heads)
        # 3.-5. Decide (flavors, preemption targets, order, what each entry does) against the snapshot.
        decided = plan(
            heads,
            snap,
            self.cache.config,
            now,
            cycle=self.cycle_no,
            reserving=self.cache.reserving,
            namespace_labels=self.cache.namespace_labels,
            trees=self.cache.trees,
        )
        entries, inadmissible = decided.entries, decided.inadmissible
        # 5. ... and write what was decided, in the entries' order.
        progress = False
        self._issued = 0  # evictions written this cycle (already-evicted targets do not count)
        for e in entries:
            self._write(e, snap, now)
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
        snap.release()
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

    # 5. the writes of what ``plan`` decided ---------------------------------------------------------------
    def _write(self, e: Entry, snap: Snapshot, now: float) -> None:
        if e.action == "preempt":
            n, failed = self._issue_preemptions(e, e.victims, snap, now)
            mark_preemption_outcome(e, n, failed)
        elif e.action == "migrate":
            assert e.migrate_from is not None
            self._issue_migration(e, e.migrate_from, now)
        elif e.action == "admit":
            self._admit(e, now, e.old_slice)

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
                set_status_condition(obj, "Preempted", True, reason, msg, now)

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
            sync_admitted_condition(wl, now, self.cache.config.gate(OBSERVABILITY_GATE))
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
        set_status_condition(wl, "Finished", True, "WorkloadSliceReplaced", msg, now)
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
        observability = self.cache.config.gate(OBSERVABILITY_GATE)
        # v0.19.2 (gate off): every requeue says Pending, the wait for all pods ready Waiting
        legacy = "Waiting" if e.reason == "WaitingForPodsReady" else "Pending"
        reason = unadmitted_reason(e.reason or "Pending", legacy, observability)
        changed = unset_quota_reservation(wl, reason, e.msg, now, observability)
        if e.status == "preemptionGated":
            changed = (
                set_status_condition(wl, "BlockedOnPreemptionGates", True, "PreemptionGated", e.msg, now)
                or changed
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
