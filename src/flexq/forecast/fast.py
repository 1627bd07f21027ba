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
  gives the back-off and the limit past which the job is deactivated. An accepted request is granted after a
  wait drawn from the cluster's own DWS waits (``Model.draw_dws``, knowing how long a request has waited); a
  grant that finds its pool full looks again after ``GRANT_RETRY_SECONDS``; a request not granted within
  ``DWS_MAX_WAIT_SECONDS`` fails; the nodes are then created (the fitted provisioning time) and the job starts.
- **On-demand and spot** pools: a job admitted on a pool's flavor takes idle nodes of the pool first, else the
  autoscaler creates them (provisioning time), unless the pool is at its maximum (the job waits for room) or
  its machines are stocked out (an ongoing stock-out lasts ``Model.draw_stockout``; the autoscaler's back-off
  after a refusal delays the first try after it ends). Nodes a job leaves stay ``SCALE_DOWN_UNNEEDED_SECONDS``.
  The GKE durations come from ``flexq.gke.timing``, the module the twin's autoscaler reads.
- **Run times** come from ``Model.draw_run`` (the job's annotation, else its class's history, knowing how long
  a running job has run); **jobs that arrive later** (``Model.arrivals``) enter the queue as Kueue would see
  them, so a later job of a higher priority goes ahead.

A run stops as soon as every job that waited at the instant has started or cannot start any more (deactivated),
or at the horizon. Not modelled here (``flexq eta --exact`` runs the whole twin): flexq's fallback, spot
preemptions, elastic jobs' later slices, pods that cannot start for their own reasons.

``World`` is what every replica shares (built once from the state and the model); ``run(world, rng)`` is one
replica and returns one row per waiting job (the shape ``flexq.eta.estimate`` aggregates). Pure: no clock, no
store.
"""

from __future__ import annotations

import copy
import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.kueue_versions import KueueVersion
from flexq.clock import format_time, parse_time_or_none
from flexq.forecast.jobs import Entry, StateView, started_at
from flexq.forecast.model import QUEUED_CLASS, Model
from flexq.forecast.state import ClusterState
from flexq.gke.timing import (
    DWS_MAX_WAIT_SECONDS,
    FAILED_SCALE_UP_BACKOFF_SECONDS,
    GRANT_RETRY_SECONDS,
    SCALE_DOWN_UNNEEDED_SECONDS,
)
from flexq.kueue.checks import RetryStrategy, retry_strategy
from flexq.kueue.config import KueueConfig
from flexq.kueue.cycle import mark_preemption_outcome, plan
from flexq.kueue.flavorassigner import Assignment
from flexq.kueue.pods_ready import requeue_wait
from flexq.kueue.queues import QueueManager
from flexq.kueue.snapshot import Snapshot, build_snapshot
from flexq.kueue.workload import WorkloadInfo, admission_checks_for, backoff_seconds, next_serial

__all__ = ["World", "build_world", "run", "horizon_reached", "namespace_labels"]

# nodes Ready to the pods Ready: up to this long, drawn (the twin's kubelet starts them at once, a real node in
# seconds; a fixed 5 s put every start on nodes already up 5 s late, outside the low end of its interval)
POD_START_SECONDS = 5.0
PR_CREATE_SECONDS = 1.0  # quota reserved to the ProvisioningRequest answered
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
MAX_CYCLES_PER_INSTANT = 100_000  # a guard: Kueue's cycles at one instant end when one changes nothing


def namespace_labels(ns: str) -> dict[str, str]:
    """A namespace's labels as the state does not carry them: the one Kubernetes always sets."""
    return {"kubernetes.io/metadata.name": ns}


@dataclass
class Pool:
    name: str
    machine_type: str
    max_nodes: int
    hosts: int  # nodes per slice
    chips: int  # accelerator chips per node
    queued: bool  # DWS (queued provisioning)
    fixed: bool  # not autoscaled: its nodes are all there is


@dataclass
class Check:
    name: str
    kind: str  # "dws" (queued ProvisioningRequest), "provisioning" (another class), "other" (not modelled)
    managed: tuple[str, ...]  # managedResources (empty: every pod set)
    retry: RetryStrategy


@dataclass
class Job:
    """One job of the run: a Workload that was there at the instant, or one that arrives."""

    key: str
    wl: dict  # the Workload as Kueue would see it now (pending: spec, metadata and conditions)
    cq: str
    rng: random.Random  # its own stream of draws (common random numbers across runs of one state)
    run: float = 0.0  # its run time (drawn once per replica)
    target: bool = False  # it waited at the instant: its start is what the run is for
    role: str = "pending"  # pending, backoff, reserved, running, finished, deactivated
    info: WorkloadInfo | None = None  # while it holds quota
    plan: str = ""
    attempt: int = 0  # ProvisioningRequest attempts so far
    requeues: int = 0  # waitForPodsReady requeues so far (requeueState.count)
    pr_since: float | None = None  # when its current request was accepted
    started: float | None = None
    nodes: dict[str, int] = field(default_factory=dict)  # pool -> nodes it holds (made, or being made)
    nodes_ready: float = 0.0  # when the nodes it holds are (or were) all made
    gen: int = 0  # bumps on each eviction: stale events are dropped
    bucket: str = "quota"
    since: float = 0.0
    waits: dict[str, float] = field(default_factory=dict)
    cause: str = ""
    pr_failures: dict[str, int] = field(default_factory=dict)
    waits_on: str = ""  # an admission check the run does not model, which it needs and has not got


@dataclass
class World:
    """What every replica of one state shares (read-only in a run)."""

    now: float
    model: Model
    cq_objs: list[dict]
    localqueues: list[dict]
    flavors: list[dict]
    flavor_pool: dict[str, str]
    pools: dict[str, Pool]
    checks: dict[str, Check]
    jobs: list[Entry]  # the entries a run starts with (running, reserved, pending)
    pool_nodes: dict[str, int]  # nodes each pool has at the instant
    horizon: float
    config: KueueConfig
    version: KueueVersion
    cycle_seconds: float = 0.0  # virtual seconds between two scheduling cycles (0: as the twin)
    bootstrap: bool = True  # each replica draws from a model refitted on a bootstrap resample of the history
    # a decision tried in the run: job key -> the Workload it has instead, pending from the instant (a fallback
    # move: evicted, its job's pod templates restricted, a new Workload made from the job; ``flexq.forecast.moves``)
    overrides: dict[str, dict] = field(default_factory=dict)
    # jobs arriving within this many seconds of the instant are followed to their start too (a decision's effect
    # on who comes next: ``flexq.forecast.moves``); 0: only the jobs that waited at the instant (the ETA)
    follow_arrivals: float = 0.0
    notes: list[str] = field(default_factory=list)
    # the pending workloads as Kueue's queues read them, made once for every replica (``queued``)
    _queued: dict[str, tuple[dict, WorkloadInfo]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def requeuing(self) -> str:
        return self.config.requeuing_timestamp

    def queued(self, e: Entry, queues: QueueManager) -> tuple[dict, WorkloadInfo]:
        """A pending entry's queued view and its ``WorkloadInfo`` for one replica: parsed (requests, order,
        scheduling hash) once per world, each replica given its own copy of the info (its flavor-scan progress
        and heap tie-breaker are its own; the parsed parts are read-only)."""
        got = self._queued.get(e.key)
        if got is None:
            view = _queued_view(e.workload)
            cq = queues.cluster_queue_for(view) or ""
            info = WorkloadInfo.from_obj(view, cq, queues.requeuing_timestamp, queues.priority_sorting)
            info.scheduling_hash  # noqa: B018 - computed once, shared by the copies
            got = self._queued[e.key] = (view, info)
        view, template = got
        info = copy.copy(template)
        info.last_assignment, info.serial = None, next_serial()
        return view, info


def _pools(state: ClusterState) -> dict[str, Pool]:
    out = {}
    for p in state.node_pools:
        mt_name = p.get("machineType", "")
        try:
            mt = catalog.machine_type(mt_name)
            hosts = catalog.hosts_per_slice(mt, p.get("tpuTopology") or None)
            chips = mt.chips or mt.gpus or 0
        except catalog.CatalogError:
            hosts, chips = 1, 0
        auto = p.get("autoscaling") or {}
        out[p["name"]] = Pool(
            name=p["name"],
            machine_type=mt_name,
            max_nodes=int(auto.get("max", p.get("nodes", 0))) if auto else int(p.get("nodes", 0)),
            hosts=max(1, hosts),
            chips=int(chips),
            queued=bool(p.get("queuedProvisioning")),
            fixed=not auto,
        )
    return out


def _checks(state: ClusterState) -> dict[str, Check]:
    configs = {(p.get("metadata") or {}).get("name", ""): p for p in state.provisioning_configs}
    out = {}
    for ac in state.admission_checks:
        spec = ac.get("spec") or {}
        name = (ac.get("metadata") or {}).get("name", "")
        if spec.get("controllerName") != PROVISIONING_CONTROLLER:
            out[name] = Check(name, "other", (), retry_strategy(None))
            continue
        prc = configs.get((spec.get("parameters") or {}).get("name", ""))
        cfg = (prc or {}).get("spec") or {}
        out[name] = Check(
            name,
            "dws" if cfg.get("provisioningClassName") == QUEUED_CLASS else "provisioning",
            tuple(cfg.get("managedResources") or ()),
            retry_strategy(prc),
        )
    return out


def _queued_view(wl: dict) -> dict:
    """A pending Workload as Kueue's queues read it: metadata, spec, and the status fields that order and hold
    it (conditions, ``requeueState``)."""
    st = wl.get("status") or {}
    out = {k: v for k, v in wl.items() if k != "status"}
    out["status"] = {k: st[k] for k in ("conditions", "requeueState") if k in st}
    if "conditions" in out["status"]:  # Requeued=False holds it until requeueAt; the run's flush releases it
        out["status"]["conditions"] = [c for c in st["conditions"] if c.get("type") != "Requeued"]
    return out


def build_world(
    state: ClusterState,
    model: Model,
    horizon: float,
    view: StateView | None = None,
    cycle_seconds: float = 0.0,
) -> World:
    """Everything the replicas of ``state`` share (``view``: the state's entries, read once by the caller)."""
    view = view or StateView.of(state)
    flavor_pool = {
        (f.get("metadata") or {}).get("name", ""): ((f.get("spec") or {}).get("nodeLabels") or {}).get(
            catalog.LABEL_NODEPOOL, ""
        )
        for f in state.flavors
    }
    pool_nodes: dict[str, int] = {}
    for n in state.nodes:
        pool = ((n.get("metadata") or {}).get("labels") or {}).get(catalog.LABEL_NODEPOOL, "")
        if pool:
            pool_nodes[pool] = pool_nodes.get(pool, 0) + 1
    # (a deactivated job is carried too: it waits for no one unless a decision tried in a run requeues it)
    jobs = [
        e
        for e in view.entries
        if e.role in ("running", "reserved", "pending", "deactivated") and not e.queue_missing
    ]
    world = World(
        now=state.now,
        model=model,
        cq_objs=state.clusterqueues,
        localqueues=state.localqueues,
        flavors=state.flavors,
        flavor_pool=flavor_pool,
        pools=_pools(state),
        checks=_checks(state),
        jobs=jobs,
        pool_nodes=pool_nodes,
        horizon=horizon,
        config=view.config,
        version=view.version,
        cycle_seconds=cycle_seconds if cycle_seconds > 0 else model.cycle_seconds,
    )
    others = sorted(n for n, c in world.checks.items() if c.kind == "other")
    if others:
        world.notes.append(
            f"admission check(s) {', '.join(others)}: their controller is not modelled; a job that needs one "
            "and does not have it Ready waits for it in every forward run"
        )
    return world


# -- one replica -------------------------------------------------------------------------------------------------
class _Run:
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
        self.heap: list[tuple[float, int, str, Job | None, int, int]] = []
        self.seq = 0
        self.jobs: dict[str, Job] = {}
        self.snap: Snapshot = build_snapshot(world.cq_objs, (), world.flavors, ())
        self.reserving: dict[str, WorkloadInfo] = {}
        # each ClusterQueue's allocatable-resource generation: bumped when capacity is freed, as the twin's cache
        # does (a head's flavor-scan progress older than it is dropped: every flavor is tried again)
        self.generations: dict[str, int] = {}
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
        self.idle: dict[str, list[float]] = {p: [] for p in world.pools}  # idle nodes: when each goes
        self.room_waiters: dict[str, list[Job]] = {p: [] for p in world.pools}
        self.stock_end: dict[str, float] = {}  # machine type -> when its ongoing stock-out ends
        self.sched_at: float | None = None
        self.open_targets = 0
        self.arrived = 0
        self.handlers: dict[str, Callable[[Job | None], None]] = {
            "schedule": self._on_schedule,
            "finish": self._on_finish,
            "start": self._on_start,
            "pr-create": self._on_pr_create,
            "pr-grant": self._on_pr_grant,
            "requeue": self._on_requeue,
            "flush": self._on_flush,
            "retry-evict": self._on_retry_evict,
            "pods-ready-timeout": self._on_pods_ready_timeout,
            "scale-down": self._on_scale_down,
        }

    # events ------------------------------------------------------------------------------------------------
    def at(self, when: float, kind: str, job: Job | None = None, arrival: int = -1) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (when, self.seq, kind, job, job.gen if job is not None else 0, arrival))

    def schedule(self, when: float | None = None) -> None:
        when = self.t if when is None else when
        if self.sched_at is None or when < self.sched_at:
            self.sched_at = when
            self.at(when, "schedule")

    def move(self, job: Job, bucket: str) -> None:
        if job.started is None and job.bucket != bucket:
            job.waits[job.bucket] = job.waits.get(job.bucket, 0.0) + (self.t - job.since)
            job.bucket, job.since = bucket, self.t

    # set-up --------------------------------------------------------------------------------------------------
    def setup(self) -> None:
        w, m = self.world, self.model
        for out in m.stockouts:
            self.stock_end[out.machine_type] = max(
                self.stock_end.get(out.machine_type, 0.0), w.now + m.draw_stockout(out, self.rng)
            )
        busy: dict[str, int] = {}
        resume: list[Job] = []
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
                view = _queued_view(override if override is not None else wl) if pending else wl
            job = self._job(e.key, view)
            elapsed = max(0.0, w.now - (started_at(wl) or w.now)) if e.role == "running" else 0.0
            job.run = max(1.0, m.draw_run(e, elapsed, job.rng) - elapsed)
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
                job.nodes = self._node_need(info)
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

    def _job(self, key: str, wl: dict) -> Job:
        job = Job(key=key, wl=wl, cq="", rng=random.Random(f"{self.seed}:job:{key}"))
        self.jobs[key] = job
        return job

    def _hold(self, job: Job, info: WorkloadInfo) -> None:
        """The job holds quota (``info``: with its admission)."""
        job.info, job.cq, job.role = info, info.cluster_queue, "reserved"
        job.wl = info.obj
        job.plan = _plan(info.obj)
        self.snap.add_workload(info)
        self.reserving[job.key] = info

    def _resume_reserved(self, job: Job) -> None:
        """A job holding quota at the instant: its DWS request goes on waiting (knowing how long it has), a check
        the run does not model holds it, its nodes are being made, or a stock-out holds them."""
        st = job.wl.get("status") or {}
        ready = {c.get("name") for c in st.get("admissionChecks") or [] if c.get("state") == "Ready"}
        pending = [c for c in self._checks_of(job) if c.name not in ready]
        dws = [c for c in pending if c.kind == "dws"]
        other = [c for c in pending if c.kind == "other"]
        if other:
            self._wait_on_check(job, other)
            return
        if dws:
            self.move(job, "dws")
            waited = self.model.dws_waited(job.key)
            if waited is None:  # no request accepted yet: it is made now
                self.at(self.t + PR_CREATE_SECONDS, "pr-create", job)
            else:
                job.pr_since = self.t - waited
                self.at(self.t + self.model.draw_dws(waited, job.rng), "pr-grant", job)
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
    def _enqueue(self, job: Job, info: WorkloadInfo | None = None) -> None:
        job.role = "pending"
        self.queues.add_or_update_workload(job.wl, self.t, info)
        job.cq = self.queues.workload_cq.get(job.key, job.cq)

    def _on_schedule(self, _job: Job | None) -> None:
        self.sched_at = None
        cfg = self.world.config
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
            decided = plan(
                heads,
                snap,
                cfg,
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
                            self._evict(victim, "Preempted", 0.0)
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
            changed = self.queues.shape_changed()
            if not (changed or progress):
                return
            if self.world.cycle_seconds > 0:
                self.schedule(self.t + self.world.cycle_seconds)
                return

    def _flush(self, cq: str) -> None:
        """Quota changed in ``cq``: its cohort tree's inadmissible workloads go back to their heaps."""
        self.queues.flush(self.queues.flush_targets([cq]), self.t, namespace_labels)
        self.schedule()

    def _reserve(self, job: Job, assignment: Assignment) -> None:
        wl = copy.copy(job.wl)
        admission = {"clusterQueue": job.cq, "podSetAssignments": assignment.to_api()}
        wl["status"] = {"admission": admission}
        self._hold(job, WorkloadInfo.from_obj(wl, job.cq, self.world.requeuing))
        pending = self._checks_of(job)
        other = [c for c in pending if c.kind == "other"]
        if other:
            self._wait_on_check(job, other)
        elif any(c.kind == "dws" for c in pending):
            self.move(job, "dws")
            self.at(self.t + PR_CREATE_SECONDS, "pr-create", job)
        else:
            self._admitted(job, self.t)

    def _wait_on_check(self, job: Job, checks: list[Check]) -> None:
        job.waits_on = ", ".join(c.name for c in checks)
        self.move(job, "check")

    def _checks_of(self, job: Job) -> list[Check]:
        """The admission checks that apply to the job's quota reservation (Kueue's ``admission_checks_for``)."""
        cq = self.snap.cq(job.cq)
        if cq is None or job.info is None:
            return []
        admission = (job.info.obj.get("status") or {}).get("admission") or {}
        names = admission_checks_for(cq.admission_checks, cq.all_flavors, admission)
        return [self.world.checks[n] for n in sorted(names) if n in self.world.checks]

    def _admitted(self, job: Job, since: float) -> None:
        """Admitted (every check Ready): its pods need nodes, and waitForPodsReady's timer runs."""
        cfg = self.world.config
        if cfg.wait_for_pods_ready and cfg.pods_ready_timeout > 0:
            self.at(max(self.t, since + cfg.pods_ready_timeout), "pods-ready-timeout", job)
        self._nodes_for(job, since)

    def _release(self, job: Job) -> None:
        if job.info is not None:
            self.snap.remove_workload(job.info)
            self.reserving.pop(job.key, None)
            job.info = None
            self.generations[job.cq] = self.generations.get(job.cq, 0) + 1
            self._flush(job.cq)
        for p, n in job.nodes.items():
            if self.t < job.nodes_ready:  # not made yet (a scale-up under way, a stock-out): it ends
                self.size[p] -= n
                self._wake_room(p)
                continue
            for _ in range(n):
                self._idle_node(p)
        job.nodes = {}

    def _idle_node(self, pool: str) -> None:
        when = self.t + SCALE_DOWN_UNNEEDED_SECONDS
        self.idle[pool].append(when)
        self.at(when, "scale-down")
        self._wake_room(pool)

    def _evict(self, job: Job, reason: str, requeue_after: float) -> None:
        """Kueue's eviction (``reason``: Preempted, AdmissionCheck, PodsReadyTimeout): the quota is released and
        the job queues again — at once, or after ``requeue_after`` (``requeueState.requeueAt``) — ordered by
        ``queue_order_timestamp`` of the Evicted condition written now."""
        self._release(job)
        job.gen += 1
        wl = _queued_view(job.wl)
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

    def _on_requeue(self, job: Job | None) -> None:
        assert job is not None
        if job.role == "backoff":
            self._enqueue(job)
            self.schedule()

    def _on_flush(self, job: Job | None) -> None:
        """A pending job's ``requeueAt`` (read from the state) came: the requeuer flushes its queue."""
        assert job is not None
        self.move(job, "quota")
        self._flush(job.cq)

    def _deactivate(self, job: Job, cause: str) -> None:
        self._release(job)
        job.gen += 1
        job.role = "deactivated"
        job.cause = cause
        self.move(job, "deactivated")
        if job.target and job.started is None:
            self.open_targets -= 1

    def _on_pods_ready_timeout(self, job: Job | None) -> None:
        """``waitForPodsReady``: admitted, its pods not ready within the timeout: evicted and requeued after the
        back-off of ``requeuingStrategy``, or deactivated past ``backoffLimitCount``."""
        assert job is not None
        if job.role != "reserved" or job.started is not None:
            return
        cfg = self.world.config
        count = job.requeues + 1
        if cfg.backoff_limit_count is not None and count > cfg.backoff_limit_count:
            self._deactivate(job, "RequeuingLimitExceeded")
            return
        job.requeues = count
        self._evict(job, "PodsReadyTimeout", requeue_wait(cfg, count))

    # nodes ---------------------------------------------------------------------------------------------------
    def _node_need(self, info: WorkloadInfo) -> dict[str, int]:
        """Pool -> nodes the job's accelerator pod sets take (whole slices)."""
        out: dict[str, int] = {}
        for ps in info.total_requests:
            for f in set(ps.flavors.values()):
                pool = self.world.pools.get(self.world.flavor_pool.get(f, ""))
                if pool is None or not pool.chips:
                    continue
                per_pod = max(
                    (q for r, q in ps.requests.items() if r in (catalog.RESOURCE_TPU, catalog.RESOURCE_GPU)),
                    default=0,
                ) / max(1, ps.count)
                if per_pod <= 0:
                    continue
                per_node = max(1, int(pool.chips // per_pod))
                nodes = -(-ps.count // per_node)
                nodes = -(-nodes // pool.hosts) * pool.hosts
                out[pool.name] = out.get(pool.name, 0) + nodes
        return out

    def _take_idle(self, pool: str, n: int) -> int:
        """Idle nodes of ``pool`` a job takes at once (up to ``n``); the rest must be made."""
        idle = sorted(t for t in self.idle[pool] if t > self.t)
        took = min(n, len(idle))
        self.idle[pool] = idle[took:]
        return took

    def _nodes_for(self, job: Job, since: float | None = None) -> None:
        """Admitted (no check left, ``since``: when): its pods need nodes. A job admitted before the instant has
        had its nodes in the making since its admission (the autoscaler asked at once; the nodes it takes at
        the instant may be those), unless a stock-out holds them."""
        assert job.info is not None
        need = self._node_need(job.info)
        job.nodes = {}
        ready = self.t
        for p, n in need.items():
            pool = self.world.pools[p]
            took = self._take_idle(p, n) if not pool.queued else 0
            make = n - took
            if make and self.size[p] + make > pool.max_nodes:
                if took:
                    self.idle[p].extend([self.t + SCALE_DOWN_UNNEEDED_SECONDS] * took)
                self.move(job, "poolMax")
                self.room_waiters[p].append(job)
                return
            job.nodes[p] = n
            if took and since is not None and since < self.t:  # nodes that may still be in the making
                ready = max(ready, since + self._provision(pool.machine_type, took, job.rng))
            if make:
                self.size[p] += make
                end = self.stock_end.get(pool.machine_type, 0.0)
                start = self.t if since is None else min(self.t, since)
                if end > self.t and not pool.queued:
                    self.move(job, "stockout")
                    start = end + job.rng.uniform(0.0, FAILED_SCALE_UP_BACKOFF_SECONDS)
                ready = max(ready, self.t, start + self._provision(pool.machine_type, make, job.rng))
        if ready > self.t and job.bucket != "stockout":
            self.move(job, "scaleUp")
        job.nodes_ready = ready
        self.at(ready + job.rng.uniform(0.0, POD_START_SECONDS), "start", job)

    def _provision(self, machine_type: str, n: int, rng: random.Random) -> float:
        lo, hi = self.model.provision_range(machine_type)
        return max(rng.uniform(lo, hi) for _ in range(max(1, n)))

    def _wake_room(self, pool: str) -> None:
        waiters, self.room_waiters[pool] = self.room_waiters[pool], []
        for job in waiters:
            if job.role == "reserved" and job.info is not None:
                self._nodes_for(job)

    def _on_scale_down(self, _job: Job | None) -> None:
        for p in self.idle:
            gone = [x for x in self.idle[p] if x <= self.t]
            if gone:
                self.idle[p] = [x for x in self.idle[p] if x > self.t]
                self.size[p] -= len(gone)
                self._wake_room(p)

    # DWS -------------------------------------------------------------------------------------------------------
    def _dws_pool(self, job: Job) -> tuple[Pool | None, int]:
        assert job.info is not None
        for p, n in self._node_need(job.info).items():
            if self.world.pools[p].queued:
                return self.world.pools[p], n
        return None, 0

    def _on_pr_create(self, job: Job | None) -> None:
        assert job is not None
        if job.info is None or job.role != "reserved":
            return
        pool, n = self._dws_pool(job)
        job.attempt += 1
        if pool is None:  # no queued pool behind the flavor: the request is answered as GKE would not
            self._pr_failed(job, "NoQueuedNodepoolAvailable")
            return
        if self.size[pool.name] + n > pool.max_nodes:
            self._pr_failed(job, "NodepoolSizeReached")
            return
        job.pr_since = self.t
        self.at(self.t + self.model.draw_dws(0.0, job.rng), "pr-grant", job)

    def _pr_failed(self, job: Job, reason: str) -> None:
        """The check goes to Retry (or Rejected past ``backoffLimitCount``: the job is deactivated). From 0.20.7
        the job is evicted at once and waits out the back-off without quota; before, it keeps its quota through
        the back-off and is evicted when it ends (then queued at once)."""
        job.pr_failures[reason] = job.pr_failures.get(reason, 0) + 1
        chk = next((c for c in self._checks_of(job) if c.kind == "dws"), None)
        rs = chk.retry if chk is not None else retry_strategy(None)
        if job.attempt > rs.limit:
            self._deactivate(job, f"ProvisioningRequest {reason}")
            return
        wait = backoff_seconds(rs.base, rs.cap, job.attempt)
        if self.world.version.retry_evicts_at_once:
            self._evict(job, "AdmissionCheck", wait)
        else:
            self.move(job, "dws")
            self.at(self.t + wait, "retry-evict", job)

    def _on_retry_evict(self, job: Job | None) -> None:
        assert job is not None
        if job.role == "reserved":
            self._evict(job, "AdmissionCheck", 0.0)

    def _on_pr_grant(self, job: Job | None) -> None:
        assert job is not None
        if job.info is None or job.role != "reserved":
            return  # its quota went (released, requeued) since the request: the grant is stale
        pool, n = self._dws_pool(job)
        if pool is None:
            return
        if job.pr_since is not None and self.t - job.pr_since >= DWS_MAX_WAIT_SECONDS:
            self._pr_failed(job, "WaitTimeExceeded")
            return
        if self.size[pool.name] + n > pool.max_nodes:
            self.at(self.t + GRANT_RETRY_SECONDS, "pr-grant", job)
            return
        self.size[pool.name] += n
        job.nodes = {pool.name: n}
        self.move(job, "scaleUp")
        cfg = self.world.config
        job.nodes_ready = self.t + self._provision(pool.machine_type, n, job.rng)
        ready = job.nodes_ready + job.rng.uniform(0.0, POD_START_SECONDS)
        if cfg.wait_for_pods_ready and cfg.pods_ready_timeout > 0:  # admitted now: the timer starts
            self.at(self.t + cfg.pods_ready_timeout, "pods-ready-timeout", job)
        self.at(ready, "start", job)

    # the loop --------------------------------------------------------------------------------------------------
    def _on_finish(self, job: Job | None) -> None:
        assert job is not None
        job.role = "finished"
        self._release(job)

    def _on_start(self, job: Job | None) -> None:
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


def _plan(wl: dict) -> str:
    adm = (wl.get("status") or {}).get("admission") or {}
    return ",".join(
        f"{p.get('name', '')}={'+'.join(sorted(set((p.get('flavors') or {}).values())))}"
        for p in adm.get("podSetAssignments") or []
    )


def run(world: World, rng: random.Random) -> list[dict[str, Any]]:
    """One replica: one row per job that waited at the instant (``key``, ``started`` seconds from the instant
    or None, ``flavors``, ``cause_kind``, ``wait_<bucket>``)."""
    r = _Run(world, rng)
    r.run()
    return r.rows()


def horizon_reached(rows: list[dict[str, Any]]) -> bool:
    return any(r["started"] is None for r in rows)
