"""The fast forward run: the cluster carried forward as events, on Kueue's own queues and scheduling cycle.

A forward run in a whole virtual twin (``flexq.eta.scenario``) re-runs every controller — pods, Ray clusters,
the autoscaler, each ProvisioningRequest retry — and costs about a CPU-minute per simulated day with a hundred
jobs waiting. What decides when a waiting job starts is far less: quota, the order Kueue admits in, DWS
grants and the room in their node pools, stock-outs, nodes being created and the run times of the jobs ahead.
This module runs exactly that, as a heap of events, in milliseconds per replica:

- **Admission is the twin's Kueue**, not a copy of it: the pending jobs sit in ``flexq.kueue.queues``'
  ``QueueManager`` (one heap per ClusterQueue in Kueue's order — priority, then the queue-order timestamp of
  ``semantics/workloads.queue_order_timestamp``: creation, or the eviction time for ``PodsReadyTimeout`` with
  ``requeuingStrategy.timestamp: Eviction`` and for ``AdmissionCheck``; StrictFIFO and BestEffortFIFO requeue
  rules, the inadmissible set and its flushes, equivalent workloads parked together), and each cycle pops one
  head per ClusterQueue and asks ``flexq.kueue.cycle.plan`` — the decision part of the twin's own
  ``Scheduler`` — what to do with them against a snapshot of the quota: admit, preempt (the preemptor then
  waits, as a sticky head, for its victims to release their quota), or requeue with Kueue's reason. The
  cycles at one instant go on while one changes something, as the twin's scheduler does; ``World.cycle_seconds``
  (0 by default, as the twin) spaces them in virtual time.
- **The release** (``KueueVersion``, from the state) decides what a failed ProvisioningRequest does: from
  0.20.7 (kueue#18785) the job is evicted at once and waits out the check's back-off without quota; before,
  it keeps its quota through the back-off. The configuration (``KueueConfig`` with the release's gates) gives
  ``waitForPodsReady``: a job admitted whose pods are not ready within the timeout is evicted
  (``PodsReadyTimeout``), requeued after ``requeuingStrategy``'s back-off, deactivated past its limit.
- **Admission checks** are Kueue's (``admission_checks_for``). A ProvisioningRequest check of the
  ``queued-provisioning.gke.io`` class is DWS (below); of another class it is answered at once; a check of any
  other controller is not modelled: a job that needs it and does not have it Ready waits for it (it does not
  start in the run), and says so.
- **DWS**, as GKE's autoscaler does it: a ProvisioningRequest fails ``NodepoolSizeReached`` at creation when its
  pool cannot grow by its slices; the check's ``retryStrategy`` (``flexq.kueue.checks.retry_strategy``)
  gives the back-off and the limit past which the job is deactivated; a check on some flavors only loses its
  count when the job waits without quota past the instant its back-off ends (``CapacityRun.unreserved_attempt``), and a
  request that failed before the instant waits out the back-off the state shows. An accepted request is granted after a
  wait drawn from the cluster's own DWS waits (``FittedCapacity.draw_dws``, knowing how long a request has waited); a
  grant that finds its pool full looks again after ``GRANT_RETRY_SECONDS``; a request not granted within
  ``DWS_MAX_WAIT_SECONDS`` fails; the nodes are then created (the fitted provisioning time) and the job starts.
- **On-demand and spot** pools: a job admitted on a pool's flavor takes idle nodes of the pool first, else the
  autoscaler creates them (provisioning time), unless the pool is at its maximum (the job waits for room) or
  its machines are stocked out (``FittedCapacity.stockout_windows``: the ongoing stock-out lasts ``draw_stockout``,
  and those to come begin at the rate the cluster showed; the autoscaler's back-off after a refusal delays the
  first try after one ends). Nodes a job leaves stay ``SCALE_DOWN_UNNEEDED_SECONDS``.
  The GKE durations come from ``flexq.gke.timing``, the module the twin's autoscaler reads.
- **Run times** come from ``FittedCapacity.draw_run`` (the job's annotation, else its class's history, knowing how long
  a running job has run); **jobs that arrive later** (``FittedCapacity.arrivals``) enter the queue as Kueue would see
  them, so a later job of a higher priority goes ahead.

A run stops as soon as every job that waited at the instant has started or cannot start any more (deactivated),
or at the horizon. Not modelled here (``flexq eta --exact`` runs the whole twin): flexq's fallback, spot
preemptions, elastic jobs' later slices, pods that cannot start for their own reasons.

``World`` is what every replica shares (built once from the state and the model: ``flexq.forecast.world``);
``run(world, rng)`` is one replica and returns one row per waiting job (the shape ``flexq.eta.estimate``
aggregates). This module is the replica's queueing half — Kueue's queues and cycles, admission checks,
evictions and requeues, arrivals, the event loop; its GKE half — nodes, stock-outs and DWS requests — is
``flexq.forecast.capacity``'s. Pure: no clock, no store.
"""

from __future__ import annotations

import copy
import heapq
import random
from collections.abc import Callable
from typing import Any

from flexq.clock import format_time, parse_time_or_none
from flexq.forecast.capacity import CapacityRun
from flexq.forecast.jobs import started_at
from flexq.forecast.replay import CycleMemo
from flexq.forecast.world import Check, World, WorldJob, admitted_plan, namespace_labels, queued_view
from flexq.gke.timing import SCALE_DOWN_UNNEEDED_SECONDS
from flexq.kueue.cycle import mark_preemption_outcome, resumes_scan
from flexq.kueue.flavorassigner import Assignment
from flexq.kueue.pods_ready import requeue_wait
from flexq.kueue.queues import REQUEUE_BATCH_PERIOD, QueueManager
from flexq.kueue.snapshot import Snapshot, build_snapshot
from flexq.kueue.workload import WorkloadInfo, admission_checks_for

__all__ = ["run", "horizon_reached"]

# quota reserved to the ProvisioningRequest answered: at once, as the twin's GKE answers
PR_CREATE_SECONDS = 0.0
MAX_CYCLES_PER_INSTANT = 100_000  # a guard: Kueue's cycles at one instant end when one changes nothing


# -- one replica -------------------------------------------------------------------------------------------------
class _Run(CapacityRun):
    def __init__(self, world: World, rng: random.Random) -> None:
        # common random numbers: each job draws from its own stream, each arrival process from its own, so two
        # runs of one state that differ in one decision (``World.overrides``) see the same cloud and the same
        # traffic, and differ only where the decision changes what happens
        self.seed = rng.getrandbits(64)
        self.world, self.rng = world, random.Random(self.seed)
        self.arrival_rngs: dict[int, random.Random] = {}
        # each replica's own fit: a bootstrap of the history (the parameters' uncertainty, not only the events')
        self.model = world.model.bootstrap(rng) if world.bootstrap else world.model
        self.t = world.now
        self.end = world.now + world.horizon
        # (when, sequence, kind, job, the job's generation then, an arrival's index)
        self.heap: list[tuple[float, int, str, WorldJob | None, int, int]] = []
        self.seq = 0
        self.jobs: dict[str, WorldJob] = {}
        self.snap: Snapshot = build_snapshot(world.cq_objs, (), world.flavors, ())
        self.reserving: dict[str, WorkloadInfo] = {}
        # each ClusterQueue's allocatable-resource generation: bumped when capacity is freed, as the twin's cache
        # does (a head's flavor-scan progress older than it is dropped: every flavor is tried again)
        self.generations: dict[str, int] = {}
        # the requeuer's batches waiting out their period: tree root (else ClusterQueue) -> a ClusterQueue of it
        self.freed: dict[str, str] = {}
        self.cycles = CycleMemo(world.config)  # a cycle asked again what it was asked before answers the same
        self.queues = QueueManager(world.requeuing)
        self.queues.priority_sorting = world.config.gate("PrioritySortingWithinCohort")
        for cq in world.cq_objs:
            q = self.queues.add_or_update_cluster_queue(cq)
            if not any(c.get("type") == "Active" for c in (cq.get("status") or {}).get("conditions") or []):
                q.active = True  # a state without the ClusterQueue's status: taken as active
        for lq in world.localqueues:
            self.queues.add_or_update_local_queue(lq)
        self.cycle = 0
        self.cycle_at = world.now  # the instant of the last cycle
        self.size = {p: world.pool_nodes.get(p, 0) for p in world.pools}  # nodes now (busy, idle, coming)
        self.making = {p: list(ts) for p, ts in world.pool_making.items()}  # nodes being made, unclaimed
        self.idle: dict[str, list[float]] = {p: [] for p in world.pools}  # idle nodes: when each goes
        self.room_waiters: dict[str, list[WorldJob]] = {p: [] for p in world.pools}
        # (machine type, provisioning model) -> its stock-outs (start, end)
        self.stock_windows: dict[tuple[str, str], list[tuple[float, float]]] = {}
        self.sched_at: float | None = None
        self.open_targets = 0
        self.arrived = 0
        self.handlers: dict[str, Callable[[WorldJob | None], None]] = {
            "schedule": self._on_schedule,
            "finish": self._on_finish,
            "start": self._on_start,
            "requeue": self._on_requeue,
            "flush": self._on_flush,
            "freed": self._on_freed,
            "pods-ready-timeout": self._on_pods_ready_timeout,
            **self.capacity_handlers(),
        }

    # events ------------------------------------------------------------------------------------------------
    def at(self, when: float, kind: str, job: WorldJob | None = None, arrival: int = -1) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (when, self.seq, kind, job, job.gen if job is not None else 0, arrival))

    def schedule(self, when: float | None = None) -> None:
        when = self.t if when is None else when
        if self.sched_at is None or when < self.sched_at:
            self.sched_at = when
            self.at(when, "schedule")

    def move(self, job: WorldJob, bucket: str) -> None:
        if job.started is None and job.bucket != bucket:
            job.waits[job.bucket] = job.waits.get(job.bucket, 0.0) + (self.t - job.since)
            job.bucket, job.since = bucket, self.t

    # set-up --------------------------------------------------------------------------------------------------
    def setup(self) -> None:
        w, m = self.world, self.model
        self.stock_windows = m.stockout_windows(w.now, w.horizon, self.rng)
        busy: dict[str, int] = {}
        resume: list[WorldJob] = []
        for e in w.jobs:
            wl = e.workload
            override = w.overrides.get(e.key)
            if e.role == "deactivated" and override is None:
                continue  # nothing requeues it in this run
            # a pending job's queued view and info are parsed once per world (``World.queued``)
            queued = w.queued(e, self.queues) if e.role == "pending" and override is None else None
            pending = e.role == "pending" or override is not None
            if queued is not None:
                view = queued[0]
            else:
                view = queued_view(override if override is not None else wl) if pending else wl
            job = self._job(e.key, view)
            elapsed = max(0.0, w.now - (started_at(wl) or w.now)) if e.role == "running" else 0.0
            job.run = max(1.0, m.draw_run(e, elapsed, job.rng, end_lag=True) - elapsed)
            job.target = e.role != "running"
            job.since = w.now
            if override is not None:
                self._enqueue(job)
                continue
            st = wl.get("status") or {}
            job.requeues = int((st.get("requeueState") or {}).get("count") or 0)
            for chk in st.get("admissionChecks") or []:
                job.attempt = max(job.attempt, int(chk.get("retryCount") or 0))
            if queued is not None:
                self._enqueue(job, queued[1])
                at = parse_time_or_none((st.get("requeueState") or {}).get("requeueAt"))
                if at is not None and at > self.t:
                    self.move(job, "evicted")
                    self.at(at, "flush", job)
                continue
            info = WorkloadInfo.from_obj(wl, requeuing_timestamp=w.requeuing)
            self._hold(job, info)
            if e.role == "running":
                job.role = "running"
                job.started = w.now
                job.nodes = self.node_need(info)
                for p, n in job.nodes.items():
                    busy[p] = busy.get(p, 0) + n
                self.at(w.now + job.run, "finish", job)
            else:
                resume.append(job)
        for p, n in self.size.items():  # nodes no running job holds: idle (they go after the scale-down time)
            held = busy.get(p, 0) + sum(j.nodes.get(p, 0) for j in self.jobs.values() if j.role == "reserved")
            for _ in range(max(0, n - held)):
                when = w.now + self.rng.uniform(0.0, SCALE_DOWN_UNNEEDED_SECONDS)
                self.idle[p].append(when)
                self.at(when, "scale-down")
            self.size[p] = max(n, held)
        # the jobs holding quota after: a job admitted before the instant takes the pool's nodes no running job
        # holds — made for it, or being made (nodes exist from the scale-up on) — before asking for more
        for job in resume:
            self._resume_reserved(job)
        for index, arr in enumerate(m.arrivals):
            if arr.rate > 0:
                self._next_arrival(index)
        self.open_targets = sum(1 for j in self.jobs.values() if j.target and j.started is None)
        self.schedule()

    def _job(self, key: str, wl: dict) -> WorldJob:
        job = WorldJob(key=key, wl=wl, cq="", rng=random.Random(f"{self.seed}:job:{key}"))
        self.jobs[key] = job
        return job

    def _hold(self, job: WorldJob, info: WorkloadInfo) -> None:
        """The job holds quota (``info``: with its admission)."""
        job.info, job.cq, job.role = info, info.cluster_queue, "reserved"
        job.wl = info.obj
        job.plan = admitted_plan(info.obj)
        self.snap.add_workload(info)
        self.reserving[job.key] = info
        self.cycles.hold(info)

    def _resume_reserved(self, job: WorldJob) -> None:
        """A job holding quota at the instant: its DWS request goes on waiting (knowing how long it has), a check
        the run does not model holds it, its nodes are being made, or a stock-out holds them."""
        st = job.wl.get("status") or {}
        ready = {c.get("name") for c in st.get("admissionChecks") or [] if c.get("state") == "Ready"}
        pending = [c for c in self.checks_of(job) if c.name not in ready]
        dws = [c for c in pending if c.kind == "dws"]
        other = [c for c in pending if c.kind == "other"]
        if other:
            self._wait_on_check(job, other)
            return
        if dws:
            failed = next(
                (
                    c
                    for c in st.get("admissionChecks") or []
                    if c.get("name") == dws[0].name and c.get("state") in ("Retry", "Rejected")
                ),
                None,
            )
            if failed is not None:  # its request failed: no grant is coming, the check's back-off runs
                at = parse_time_or_none((st.get("requeueState") or {}).get("requeueAt"))
                self.resume_failed(job, failed, at)
                return
            self.move(job, "dws")
            waited = self.model.dws_waited(job.key)
            if waited is None:  # no request accepted yet: it is made now
                self.at(self.t + PR_CREATE_SECONDS, "pr-create", job)
            else:
                job.pr_since = self.t - waited
                pool, n = self.dws_pool(job) if job.info is not None else (None, 0)
                if pool is not None and self.grant_in_progress(job, pool, n):
                    return
                mt = pool.machine_type if pool is not None else ""
                self.at(self.t + self.model.draw_dws(waited, job.rng, mt), "pr-grant", job)
            return
        admitted = parse_time_or_none(
            next(
                (
                    c.get("lastTransitionTime")
                    for c in st.get("conditions") or []
                    if c.get("type") == "Admitted" and c.get("status") == "True"
                ),
                None,
            )
        )
        self._admitted(job, admitted if admitted is not None else self.t)

    # the queue and Kueue's cycles ------------------------------------------------------------------------------
    def _enqueue(self, job: WorldJob, info: WorkloadInfo | None = None) -> None:
        job.role = "pending"
        if job.attempt:  # its check's retry count outlasts no wait without quota (``unreserved_attempt``)
            job.requeued_at = self.t
        if info is None:
            q = self.queues
            cq = q.cluster_queue_for(job.wl) or ""
            info = WorkloadInfo.from_obj(
                job.wl, cq, q.requeuing_timestamp, q.priority_sorting, like=job.pending
            )
        job.pending = info
        self.queues.add_or_update_workload(job.wl, self.t, info)
        job.cq = self.queues.workload_cq.get(job.key, job.cq)

    def _on_schedule(self, _job: WorldJob | None) -> None:
        self.sched_at = None
        if self.t > self.cycle_at:
            # between two instants the twin's scheduler runs other cycles (every watch event starts one, heads
            # or not): a head's flavor-scan progress from an earlier instant is never from the preceding cycle
            self.cycle += 1
            self.cycle_at = self.t
        for _ in range(MAX_CYCLES_PER_INSTANT):
            self.queues.begin_shape()
            heads = self.queues.heads()
            if not heads:
                self.queues.shape_changed()
                return
            self.cycle += 1
            snap = self.snap.clone_trees(sorted({h.cluster_queue for h in heads}), self.generations)
            decided = self.cycles.plan(
                heads,
                snap,
                self.t,
                cycle=self.cycle,
                reserving=self.reserving,
                namespace_labels=namespace_labels,
            )
            progress = False
            for e in decided.entries:
                job = self.jobs[e.info.key]
                if e.action == "admit":
                    assert e.assignment is not None
                    job.cq = e.info.cluster_queue
                    self.queues.forget_head(e.info)
                    self._reserve(job, e.assignment)
                    progress = True
                    continue
                if e.action == "preempt":
                    issued = 0
                    for t in e.victims:
                        victim = self.jobs.get(t.info.key)
                        if victim is not None and victim.role in ("reserved", "running"):
                            self.evict(victim, "Preempted", 0.0)
                            issued += 1
                    mark_preemption_outcome(e, len(e.victims), 0)
                    progress = progress or issued > 0
                elif e.action == "migrate":
                    e.requeue_reason = "PendingMigration"
                if e.status and not e.requeue_reason:
                    e.requeue_reason = "FailedAfterNomination"
                self.queues.requeue_workload(e.info, e.requeue_reason, self.t)
            for e in decided.inadmissible:
                self.queues.requeue_workload(e.info, e.requeue_reason, self.t)
            snap.release()  # freed by reference counting, as the twin's scheduler's
            changed = self.queues.shape_changed()
            # a head back in its heap with flavors left to try: the next cycle resumes its scan (a head that
            # needs another flavor, a two-slice job on-demand cannot have, no longer holds every job behind it)
            if not (changed or progress or resumes_scan(decided.entries)):
                return
            if self.world.cycle_seconds > 0:
                self.schedule(self.t + self.world.cycle_seconds)
                return

    def _flush(self, cq: str) -> None:
        """Quota changed in ``cq``: its cohort tree's inadmissible workloads go back to their heaps."""
        self.queues.flush(self.queues.flush_targets([cq]), self.t, namespace_labels)
        self.schedule()

    def _freed(self, cq: str) -> None:
        """Quota freed in ``cq``: Kueue's requeuer flushes its cohort tree (keyed by its root, else the ClusterQueue)
        ``REQUEUE_BATCH_PERIOD`` after the batch's first change, as the twin's does: a job that could not fit is
        tried again then, not at the instant it could."""
        key = self.queues.root_of(cq) or cq
        if key not in self.freed:
            self.freed[key] = cq
            self.at(self.t + REQUEUE_BATCH_PERIOD, "freed")

    def _on_freed(self, _job: WorldJob | None) -> None:
        """The oldest batch's period is over (events of one kind come in the order they were set)."""
        key = next(iter(self.freed), None)
        if key is not None:
            cq = self.freed.pop(key)
            self.queues.flush(self.queues.flush_targets([cq]), self.t, namespace_labels)
            self.schedule()

    def _reserve(self, job: WorldJob, assignment: Assignment) -> None:
        wl = copy.copy(job.wl)
        admission = {"clusterQueue": job.cq, "podSetAssignments": assignment.to_api()}
        wl["status"] = {"admission": admission}
        self._hold(job, WorkloadInfo.from_obj(wl, job.cq, self.world.requeuing))
        if job.requeued_at is not None:
            if self.t > job.requeued_at:
                job.attempt = self.unreserved_attempt(job)
            job.requeued_at = None
        pending = self.checks_of(job)
        other = [c for c in pending if c.kind == "other"]
        if other:
            self._wait_on_check(job, other)
        elif any(c.kind == "dws" for c in pending):
            self.move(job, "dws")
            self.at(self.t + PR_CREATE_SECONDS, "pr-create", job)
        else:
            self._admitted(job, self.t)

    def _wait_on_check(self, job: WorldJob, checks: list[Check]) -> None:
        job.waits_on = ", ".join(c.name for c in checks)
        self.move(job, "check")

    def checks_of(self, job: WorldJob) -> list[Check]:
        """The admission checks that apply to the job's quota reservation (Kueue's ``admission_checks_for``)."""
        cq = self.snap.cq(job.cq)
        if cq is None or job.info is None:
            return []
        admission = (job.info.obj.get("status") or {}).get("admission") or {}
        names = admission_checks_for(cq.admission_checks, cq.all_flavors, admission)
        return [self.world.checks[n] for n in sorted(names) if n in self.world.checks]

    def _admitted(self, job: WorldJob, since: float) -> None:
        """Admitted (every check Ready): its pods need nodes, and waitForPodsReady's timer runs."""
        cfg = self.world.config
        if cfg.wait_for_pods_ready and cfg.pods_ready_timeout > 0:
            self.at(max(self.t, since + cfg.pods_ready_timeout), "pods-ready-timeout", job)
        self.nodes_for(job, since)

    def _release(self, job: WorldJob) -> None:
        if job.info is not None:
            self.snap.remove_workload(job.info)
            self.reserving.pop(job.key, None)
            self.cycles.release(job.key)
            job.info = None
            self.generations[job.cq] = self.generations.get(job.cq, 0) + 1
            self._freed(job.cq)
        for p, n in job.nodes.items():
            if self.t < job.nodes_ready:  # not made yet (a scale-up under way, a stock-out): it ends
                self.size[p] -= n
                self.wake_room(p)
                continue
            for _ in range(n):
                self.idle_node(p)
        job.nodes = {}

    def evict(self, job: WorldJob, reason: str, requeue_after: float) -> None:
        """Kueue's eviction (``reason``: Preempted, AdmissionCheck, PodsReadyTimeout): the quota is released and
        the job queues again — at once, or after ``requeue_after`` (``requeueState.requeueAt``) — ordered by
        ``queue_order_timestamp`` of the Evicted condition written now."""
        self._release(job)
        job.gen += 1
        wl = queued_view(job.wl)
        wl["status"] = {
            "conditions": [
                {
                    "type": "Evicted",
                    "status": "True",
                    "reason": reason,
                    "lastTransitionTime": format_time(self.t),
                }
            ]
        }
        job.wl = wl
        self.move(job, "evicted")
        if job.started is not None and not job.target:
            job.started = None  # a running job preempted starts over (its first start is not a target)
        if requeue_after > 0:
            job.role = "backoff"
            self.at(self.t + requeue_after, "requeue", job)
        else:
            self._enqueue(job)
            self.schedule()

    def _on_requeue(self, job: WorldJob | None) -> None:
        assert job is not None
        if job.role == "backoff":
            self._enqueue(job)
            self.schedule()

    def _on_flush(self, job: WorldJob | None) -> None:
        """A pending job's ``requeueAt`` (read from the state) came: the requeuer flushes its queue."""
        assert job is not None
        self.move(job, "quota")
        if job.attempt:  # its back-off ends now: so does the count, unless it gets quota at once
            job.requeued_at = self.t
        self._flush(job.cq)

    def deactivate(self, job: WorldJob, cause: str) -> None:
        self._release(job)
        job.gen += 1
        job.role = "deactivated"
        job.cause = cause
        self.move(job, "deactivated")
        if job.target and job.started is None:
            self.open_targets -= 1

    def _on_pods_ready_timeout(self, job: WorldJob | None) -> None:
        """``waitForPodsReady``: admitted, its pods not ready within the timeout: evicted and requeued after the
        back-off of ``requeuingStrategy``, or deactivated past ``backoffLimitCount``."""
        assert job is not None
        if job.role != "reserved" or job.started is not None:
            return
        cfg = self.world.config
        count = job.requeues + 1
        if cfg.backoff_limit_count is not None and count > cfg.backoff_limit_count:
            self.deactivate(job, "RequeuingLimitExceeded")
            return
        job.requeues = count
        self.evict(job, "PodsReadyTimeout", requeue_wait(cfg, count))

    # the loop --------------------------------------------------------------------------------------------------
    def _on_finish(self, job: WorldJob | None) -> None:
        assert job is not None
        job.role = "finished"
        self._release(job)

    def _on_start(self, job: WorldJob | None) -> None:
        assert job is not None
        if job.started is None:
            self.move(job, "running")
            job.started = self.t
            if job.target:
                self.open_targets -= 1
        job.role = "running"
        self.at(self.t + job.run, "finish", job)

    def run(self) -> None:
        self.setup()
        while self.heap and self.open_targets > 0:
            when, _seq, kind, job, gen, arrival = heapq.heappop(self.heap)
            if when > self.end:
                break
            self.t = when
            if job is not None and gen != job.gen:
                continue  # the job was evicted since: the event is stale
            if kind == "arrive":
                self._arrive(arrival)
            else:
                self.handlers[kind](job)
        self.t = min(self.t, self.end)

    def _next_arrival(self, index: int) -> None:
        arr = self.model.arrivals[index]
        rng = self.arrival_rngs.get(index)
        if rng is None:
            rng = self.arrival_rngs[index] = random.Random(f"{self.seed}:arrival:{index}")
        self.at(self.t + rng.expovariate(arr.rate), "arrive", arrival=index)

    def _arrive(self, index: int) -> None:
        arr = self.model.arrivals[index]
        self.arrived += 1
        # a new Workload like the template: its own metadata, no status; the spec is shared (nothing in a run
        # writes a Workload's spec: Kueue's queues and cycle read it)
        wl = {k: v for k, v in arr.template.items() if k not in ("metadata", "status")}
        md = wl["metadata"] = dict(arr.template.get("metadata") or {})
        md["name"] = f"{md.get('name', 'job')}-eta-{self.arrived}"
        md["uid"] = f"eta-arrival-{self.arrived}"
        md["creationTimestamp"] = format_time(self.t)
        wl["status"] = {}
        job = self._job(f"{md.get('namespace', '')}/{md['name']}", wl)
        job.run = max(1.0, self.model.draw_class_run(arr.klass, self.arrival_rngs[index]))
        job.since = self.t
        if self.t - self.world.now <= self.world.follow_arrivals:
            job.target = True
            self.open_targets += 1
        self._enqueue(job)
        self.schedule()
        self._next_arrival(index)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for job in self.jobs.values():
            if not job.target:
                continue
            self.move(job, job.bucket if job.started is None else "running")
            waits = {f"wait_{b}": round(v, 3) for b, v in job.waits.items() if b != "running"}
            cause = job.cause
            if not cause and job.started is None:
                if job.waits_on:
                    cause = f"admission check {job.waits_on}"
                elif job.pr_failures:
                    cause = "ProvisioningRequest " + "/".join(sorted(job.pr_failures))
            out.append(
                {
                    "key": job.key,
                    "priority": int((job.wl.get("spec") or {}).get("priority") or 0),
                    "started": None if job.started is None else job.started - self.world.now,
                    "flavors": job.plan if job.started is not None else "",
                    "cause_kind": cause,
                    **waits,
                }
            )
        return out


def run(world: World, rng: random.Random) -> list[dict[str, Any]]:
    """One replica: one row per job that waited at the instant (``key``, ``started`` seconds from the instant
    or None, ``flavors``, ``cause_kind``, ``wait_<bucket>``)."""
    r = _Run(world, rng)
    r.run()
    return r.rows()


def horizon_reached(rows: list[dict[str, Any]]) -> bool:
    return any(r["started"] is None for r in rows)
