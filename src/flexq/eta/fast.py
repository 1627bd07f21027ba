"""The fast forward run: the cluster's queues carried forward as events, with Kueue's own flavor assignment.

A forward run in a whole virtual twin (``flexq.eta.scenario``) re-runs every controller — pods, Ray clusters,
the autoscaler, each ProvisioningRequest retry — and costs about a CPU-minute per simulated day with a hundred
jobs waiting. What decides when a waiting job starts is far less: quota, the order Kueue admits in, DWS
grants and the room in their node pools, stock-outs, nodes being created and the run times of the jobs ahead.
This module runs exactly that, as a heap of events, in milliseconds per replica:

- **Admission** is Kueue's: the ClusterQueues as a ``flexq.kueue.snapshot`` holding the quota of every job that
  holds it; the pending jobs tried in Kueue's order (priority, then the queue-order time: creation, or the last
  eviction) with ``flexq.kueue.flavorassigner`` (flavor order, fungibility, borrowing, node labels and taints);
  a job that needs preemption gets its victims from ``flexq.kueue.preemption``; ``StrictFIFO`` ClusterQueues
  stop at their first job that does not fit. The admission checks that apply are Kueue's
  (``admission_checks_for``).
- **DWS** (a ``queued-provisioning.gke.io`` check), as GKE's autoscaler does it: a ProvisioningRequest fails
  ``NodepoolSizeReached`` at creation when its pool cannot grow by its slices; Kueue then evicts the job and
  requeues it after the check's back-off (``backoffBaseSeconds`` doubled per retry, at most
  ``backoffMaxSeconds``), and deactivates it past ``backoffLimitCount``. An accepted request is granted after a
  wait drawn from the cluster's own DWS waits (``Model.draw_dws``: Kaplan-Meier of the finished and censored
  ones, knowing how long a request has already waited); a grant that finds its pool full looks again every
  minute; the nodes are then created (the fitted provisioning time) and the job starts.
- **On-demand and spot** pools: a job admitted on a pool's flavor takes idle nodes of the pool first, else the
  autoscaler creates them (provisioning time), unless the pool is at its maximum (the job waits for room) or
  its machines are stocked out (an ongoing stock-out lasts ``Model.draw_stockout``; the autoscaler's back-off
  after a refusal delays the first try after it ends).
- Nodes a job leaves stay ``SCALE_DOWN_SECONDS`` (the autoscaler's ``scale-down-unneeded-time``): an on-demand
  job can take them; a DWS pool counts them against its maximum until they go.
- **Run times** come from ``Model.draw_run`` (the job's annotation, else its class's history, knowing how long
  a running job has run); **jobs that arrive later** (``Model.arrivals``: each LocalQueue, class and priority
  at the rate the cluster's history shows) enter the queue as Kueue would see them, so a later job of a
  higher priority goes ahead.

A run stops as soon as every job that waited at the instant has started or cannot start any more (deactivated),
or at the horizon. Not modelled here (``flexq eta --exact`` runs the whole twin): flexq's fallback, Kueue's
``waitForPodsReady`` evictions, spot preemptions, elastic jobs' later slices, stock-outs that have not begun,
pods that cannot start for their own reasons.

``World`` is what every replica shares (built once from the state and the model); ``run(world, rng)`` is one
replica and returns one row per waiting job (the shape ``flexq.eta.estimate`` aggregates). Pure: no clock, no
store.
"""

from __future__ import annotations

import copy
import heapq
import math
import random
from dataclasses import dataclass, field
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.quantity import parse_quantity
from flexq.clock import format_time
from flexq.eta.jobs import Entry, entries, started_at
from flexq.eta.model import QUEUED_CLASS, Model
from flexq.eta.state import ClusterState
from flexq.kueue.flavorassigner import FlavorAssigner, Mode
from flexq.kueue.preemption import get_targets, make_oracle
from flexq.kueue.snapshot import Snapshot, build_snapshot
from flexq.kueue.workload import WorkloadInfo, admission_checks_for, backoff_seconds

__all__ = ["World", "build_world", "run", "SCALE_DOWN_SECONDS", "FAILED_SCALE_UP_BACKOFF_SECONDS"]

SCALE_DOWN_SECONDS = 600.0  # the cluster autoscaler's scale-down-unneeded-time (flexq.gke.autoscaler)
FAILED_SCALE_UP_BACKOFF_SECONDS = 300.0  # its back-off after a failed scale-up
GRANT_RETRY_SECONDS = 60.0  # a DWS grant that finds its pool full looks again (flexq.gke.provisioning)
DWS_VALID_SECONDS = 7 * 86400.0  # a queued request not provisioned by then fails WaitTimeExceeded
POD_START_SECONDS = 5.0  # nodes Ready to the pods Ready
PR_CREATE_SECONDS = 1.0  # quota reserved to the ProvisioningRequest answered
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"


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
    queued: bool  # a ProvisioningRequest check of the queued-provisioning class
    managed: tuple[str, ...]  # managedResources (empty: every pod set)
    limit: int  # backoffLimitCount
    base: float
    cap: float


@dataclass
class Job:
    """One job of the run: a Workload that was there at the instant, or one that arrives."""

    key: str
    wl: dict  # the Workload as read (pending) or with its admission (holding quota)
    cq: str
    priority: int
    order: float  # queue-order time
    uid: str
    shape: tuple  # (cq, priority, pod sets' requests): jobs of one shape fit or not alike
    run: float = 0.0  # its run time (drawn once per replica)
    target: bool = False  # it waited at the instant: its start is what the run is for
    role: str = "pending"
    info: WorkloadInfo | None = None  # while it holds quota
    plan: str = ""
    attempt: int = 0  # ProvisioningRequest attempts so far
    pr_since: float | None = None  # when its current request was accepted
    requeue_at: float = 0.0
    started: float | None = None
    nodes: dict[str, int] = field(default_factory=dict)  # pool -> nodes it holds
    gen: int = 0  # bumps on each eviction: stale events are dropped
    bucket: str = "quota"
    since: float = 0.0
    waits: dict[str, float] = field(default_factory=dict)
    cause: str = ""
    pr_failures: dict[str, int] = field(default_factory=dict)
    queued_info: WorkloadInfo | None = None  # its pending WorkloadInfo (spec requests), built once


@dataclass
class World:
    """What every replica of one state shares (read-only in a run)."""

    now: float
    model: Model
    cq_objs: list[dict]
    flavors: list[dict]
    flavor_objs: dict[str, dict]
    flavor_pool: dict[str, str]
    pools: dict[str, Pool]
    checks: dict[str, Check]
    jobs: list[tuple[Entry, dict]]  # (entry, its workload as the run starts it)
    pool_nodes: dict[str, int]  # nodes each pool has at the instant
    lq_cq: dict[str, str]  # namespace/LocalQueue -> ClusterQueue
    horizon: float
    requeuing: str = "Eviction"
    notes: list[str] = field(default_factory=list)


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
    configs = {
        (p.get("metadata") or {}).get("name", ""): p.get("spec") or {} for p in state.provisioning_configs
    }
    out = {}
    for ac in state.admission_checks:
        spec = ac.get("spec") or {}
        name = (ac.get("metadata") or {}).get("name", "")
        if spec.get("controllerName") != PROVISIONING_CONTROLLER:
            out[name] = Check(name, False, (), 0, 0.0, 0.0)
            continue
        cfg = configs.get((spec.get("parameters") or {}).get("name", ""), {})
        rs = cfg.get("retryStrategy") or {}
        limit = rs.get("backoffLimitCount")
        out[name] = Check(
            name,
            cfg.get("provisioningClassName") == QUEUED_CLASS,
            tuple(cfg.get("managedResources") or ()),
            3 if limit is None else int(limit),
            float(rs.get("backoffBaseSeconds") or 60),
            float(rs.get("backoffMaxSeconds") or 1800),
        )
    return out


def _bare(wl: dict) -> dict:
    """A Workload as Kueue queues it: spec and metadata, no admission."""
    out = {k: v for k, v in wl.items() if k != "status"}
    out["status"] = {}
    return out


def build_world(state: ClusterState, model: Model, horizon: float) -> World:
    """Everything the replicas of ``state`` share."""
    from flexq.kueue.config import KueueConfig

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
    try:
        requeuing = KueueConfig.from_configmap(state.kueue_config).requeuing_timestamp
    except Exception:  # an unreadable configuration: Kueue's default
        requeuing = "Eviction"
    jobs = [
        (e, e.workload)
        for e in entries(state)
        if e.role in ("running", "reserved", "pending") and not e.queue_missing
    ]
    lq_cq = {
        f"{(q.get('metadata') or {}).get('namespace', '')}/{(q.get('metadata') or {}).get('name', '')}": (
            q.get("spec") or {}
        ).get("clusterQueue", "")
        for q in state.localqueues
    }
    return World(
        now=state.now,
        model=model,
        cq_objs=state.clusterqueues,
        flavors=state.flavors,
        flavor_objs={(f.get("metadata") or {}).get("name", ""): f for f in state.flavors},
        flavor_pool=flavor_pool,
        pools=_pools(state),
        checks=_checks(state),
        jobs=jobs,
        pool_nodes=pool_nodes,
        lq_cq=lq_cq,
        horizon=horizon,
        requeuing=requeuing,
    )


# -- one replica -------------------------------------------------------------------------------------------------
class _Run:
    def __init__(self, world: World, rng: random.Random) -> None:
        self.w, self.rng = world, rng
        self.t = world.now
        self.end = world.now + world.horizon
        self.heap: list[tuple[float, int, str, Job | None, int]] = []
        self.seq = 0
        self.jobs: dict[str, Job] = {}
        self.pending: list[Job] = []
        self.pending_dirty = False
        self.snap: Snapshot = build_snapshot(world.cq_objs, (), world.flavors, ())
        self.strict = {n for n, q in self.snap.cluster_queues.items() if q.queueing_strategy == "StrictFIFO"}
        self.size = {p: world.pool_nodes.get(p, 0) for p in world.pools}  # nodes now (busy, idle, coming)
        self.idle: dict[str, list[float]] = {p: [] for p in world.pools}  # idle nodes: when each goes
        self.room_waiters: dict[str, list[Job]] = {p: [] for p in world.pools}
        self.stock_end: dict[str, float] = {}  # machine type -> when its ongoing stock-out ends
        self.sched_at: float | None = None
        self.version = 0  # bumps whenever quota is taken or given back
        self.nofit: dict[tuple, int] = {}  # shape -> the version at which it did not fit
        self.open_targets = 0
        self.arrived = 0

    # events ------------------------------------------------------------------------------------------------
    def at(self, when: float, kind: str, job: Job | None = None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (when, self.seq, kind, job, job.gen if job is not None else 0))

    def schedule(self) -> None:
        if self.sched_at != self.t:
            self.sched_at = self.t
            self.at(self.t, "schedule")

    def move(self, job: Job, bucket: str) -> None:
        if job.started is None and job.bucket != bucket:
            job.waits[job.bucket] = job.waits.get(job.bucket, 0.0) + (self.t - job.since)
            job.bucket, job.since = bucket, self.t

    # set-up --------------------------------------------------------------------------------------------------
    def setup(self) -> None:
        w, m = self.w, self.w.model
        for st in m.stockouts:
            self.stock_end[st.machine_type] = max(
                self.stock_end.get(st.machine_type, 0.0), w.now + m.draw_stockout(st, self.rng)
            )
        infos = []
        busy: dict[str, int] = {}
        for e, wl in w.jobs:
            job = self._job(e.key, wl, e.priority, e.order_time, e.uid, e.role)
            elapsed = max(0.0, w.now - (started_at(wl) or w.now)) if e.role == "running" else 0.0
            job.run = max(1.0, m.draw_run(e, elapsed, self.rng) - elapsed)
            job.target = e.role != "running"
            job.since = w.now
            if e.role == "pending":
                job.bucket = "quota"
                self._requeue_state(job, wl)
                self._enqueue(job)
                continue
            info = WorkloadInfo.from_obj(wl, requeuing_timestamp=w.requeuing)
            job.info = info
            job.cq = info.cluster_queue
            job.plan = _plan(wl)
            infos.append(info)
            if e.role == "running":
                job.started = w.now
                job.nodes = self._node_need(info)
                for p, n in job.nodes.items():
                    busy[p] = busy.get(p, 0) + n
                self.at(w.now + job.run, "finish", job)
            else:
                self._resume_reserved(job, e)
        for info in infos:
            self.snap.add_workload(info)
        for p, n in self.size.items():  # nodes no running job holds: idle (they go after the scale-down time)
            held = busy.get(p, 0) + sum(j.nodes.get(p, 0) for j in self.jobs.values() if j.role == "reserved")
            for _ in range(max(0, n - held)):
                self.idle[p].append(w.now + self.rng.uniform(0.0, SCALE_DOWN_SECONDS))
            self.size[p] = max(n, held)
        for p, when in ((p, t) for p, ts in self.idle.items() for t in ts):
            self.at(when, "scale-down", None)
            del p
        for arr in m.arrivals:
            if arr.rate > 0:
                self.at(w.now + self.rng.expovariate(arr.rate), "arrive:" + str(m.arrivals.index(arr)))
        self.open_targets = sum(1 for j in self.jobs.values() if j.target and j.started is None)
        self.schedule()

    def _job(self, key: str, wl: dict, priority: int, order: float, uid: str, role: str) -> Job:
        ns = (wl.get("metadata") or {}).get("namespace", "")
        lq = (wl.get("spec") or {}).get("queueName", "")
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or self.w.lq_cq.get(
            f"{ns}/{lq}", ""
        )
        shape = (cq, priority, _requests_key(wl))
        job = Job(key=key, wl=wl, cq=cq, priority=priority, order=order, uid=uid, shape=shape, role=role)
        self.jobs[key] = job
        return job

    def _requeue_state(self, job: Job, wl: dict) -> None:
        """A pending job in its back-off after a failed check: when it may be admitted again, and how many
        requests it has had."""
        st = wl.get("status") or {}
        at = (st.get("requeueState") or {}).get("requeueAt")
        if at:
            from flexq.clock import parse_time_or_none

            job.requeue_at = parse_time_or_none(at) or 0.0
        for chk in st.get("admissionChecks") or []:
            job.attempt = max(job.attempt, int(chk.get("retryCount") or 0))
        if job.requeue_at > self.t:
            self.move(job, "evicted")
            self.at(job.requeue_at, "requeue", job)

    def _resume_reserved(self, job: Job, e: Entry) -> None:
        """A job holding quota at the instant: its DWS request goes on waiting (knowing how long it has), its
        nodes are being made, or a stock-out holds them."""
        assert job.info is not None
        checks = self._queued_checks(job)
        st = job.wl.get("status") or {}
        ready = {c.get("name") for c in st.get("admissionChecks") or [] if c.get("state") == "Ready"}
        pending_checks = [c for c in checks if c.name not in ready]
        for chk in st.get("admissionChecks") or []:
            job.attempt = max(job.attempt, int(chk.get("retryCount") or 0))
        if pending_checks:
            self.move(job, "dws")
            waited = self.w.model.dws_waited(job.key)
            if waited is None:  # no request accepted yet: it is made now
                self.at(self.t + PR_CREATE_SECONDS, "pr-create", job)
            else:
                job.pr_since = self.t - waited
                grant = self.t + self.w.model.draw_dws(waited, self.rng)
                self.at(grant, "pr-grant", job)
            return
        self._nodes_for(job)

    # queue ---------------------------------------------------------------------------------------------------
    def _enqueue(self, job: Job) -> None:
        job.role = "pending"
        self.pending.append(job)
        self.pending_dirty = True

    def _order(self) -> None:
        if self.pending_dirty:
            self.pending = [j for j in self.pending if j.role == "pending"]
            self.pending.sort(key=_queue_order)
            self.pending_dirty = False

    def _schedule(self) -> None:
        """Kueue's cycles at one instant: every pending job in order, against the quota left. A shape (queue,
        priority, requests) that did not fit is not tried again until quota changes."""
        self._order()
        blocked: set[str] = set()
        admitted = False
        for job in self.pending:
            if job.role != "pending" or job.requeue_at > self.t:
                continue
            if job.cq in blocked or self.nofit.get(job.shape) == self.version:
                if job.cq in self.strict:
                    blocked.add(job.cq)
                continue
            cq = self.snap.cq(job.cq)
            if cq is None:
                continue
            info = job.queued_info
            if info is None:
                info = job.queued_info = WorkloadInfo.from_obj(_bare(job.wl), job.cq, self.w.requeuing)
            info.priority, info.order_ts, info.last_assignment = job.priority, job.order, None
            memo: dict = {}
            a = FlavorAssigner(
                info, cq, self.snap.resource_flavors, make_oracle(self.snap, self.t, memo)
            ).assign()
            mode = a.representative_mode()
            if mode == Mode.PREEMPT:
                targets = get_targets(self.snap, info, a, self.t, memo)
                if not targets:
                    mode = Mode.NO_FIT
                else:
                    for tg in targets:
                        victim = self.jobs.get(tg.info.key)
                        if victim is not None:
                            self._evict(victim, "preempted", requeue_after=0.0)
            if mode not in (Mode.FIT, Mode.PREEMPT):
                self.nofit[job.shape] = self.version
                if job.cq in self.strict:
                    blocked.add(job.cq)
                continue
            self._reserve(job, a)
            admitted = True
        if admitted:
            self.pending = [j for j in self.pending if j.role == "pending"]

    def _reserve(self, job: Job, assignment: Any) -> None:
        wl = copy.copy(job.wl)
        admission = {"clusterQueue": job.cq, "podSetAssignments": assignment.to_api()}
        wl["status"] = {"admission": admission}
        info = WorkloadInfo.from_obj(wl, job.cq, self.w.requeuing)
        job.info, job.role = info, "reserved"
        job.plan = _plan(wl)
        self.snap.add_workload(info)
        self.version += 1
        if self._queued_checks(job):
            self.move(job, "dws")
            self.at(self.t + PR_CREATE_SECONDS, "pr-create", job)
        else:
            self._nodes_for(job)

    def _queued_checks(self, job: Job) -> list[Check]:
        cq = self.snap.cq(job.cq)
        if cq is None or job.info is None:
            return []
        admission = (job.info.obj.get("status") or {}).get("admission") or {}
        names = admission_checks_for(cq.admission_checks, cq.all_flavors, admission)
        return [self.w.checks[n] for n in sorted(names) if n in self.w.checks and self.w.checks[n].queued]

    def _release(self, job: Job) -> None:
        if job.info is not None:
            self.snap.remove_workload(job.info)
            self.version += 1
            job.info = None
        for p, n in job.nodes.items():
            for _ in range(n):
                self._idle_node(p)
        job.nodes = {}
        self.schedule()

    def _idle_node(self, pool: str) -> None:
        when = self.t + SCALE_DOWN_SECONDS
        self.idle[pool].append(when)
        self.at(when, "scale-down", None)
        self._wake_room(pool)

    def _evict(self, job: Job, why: str, requeue_after: float) -> None:
        self._release(job)
        job.gen += 1
        if self.w.requeuing == "Eviction":
            job.order = self.t
        job.requeue_at = self.t + requeue_after
        self.move(job, "evicted")
        if job.started is not None and job.target is False:
            job.started = None  # a running job preempted starts over (its first start is not a target)
        self._enqueue(job)
        if requeue_after > 0:
            self.at(job.requeue_at, "requeue", job)
        del why

    def _deactivate(self, job: Job, cause: str) -> None:
        self._release(job)
        job.gen += 1
        job.role = "deactivated"
        job.cause = cause
        self.move(job, "deactivated")
        if job.target and job.started is None:
            self.open_targets -= 1

    # nodes ---------------------------------------------------------------------------------------------------
    def _node_need(self, info: WorkloadInfo) -> dict[str, int]:
        """Pool -> nodes the job's accelerator pod sets take (whole slices)."""
        out: dict[str, int] = {}
        for ps in info.total_requests:
            flavors = set(ps.flavors.values())
            for f in flavors:
                pool = self.w.pools.get(self.w.flavor_pool.get(f, ""))
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

    def _nodes_for(self, job: Job) -> None:
        """Admitted (no check left): its pods need nodes."""
        assert job.info is not None
        need = self._node_need(job.info)
        job.nodes = {}
        ready = self.t
        for p, n in need.items():
            pool = self.w.pools[p]
            took = self._take_idle(p, n) if not pool.queued else 0
            make = n - took
            if make and self.size[p] + make > pool.max_nodes:
                if took:
                    self.idle[p].extend([self.t + SCALE_DOWN_SECONDS] * took)
                self.move(job, "poolMax")
                self.room_waiters[p].append(job)
                return
            job.nodes[p] = n
            if make:
                self.size[p] += make
                end = self.stock_end.get(pool.machine_type, 0.0)
                start = self.t
                if end > self.t and not pool.queued:
                    self.move(job, "stockout")
                    start = end + self.rng.uniform(0.0, FAILED_SCALE_UP_BACKOFF_SECONDS)
                ready = max(ready, start + self._provision(pool.machine_type, make))
        if ready > self.t and job.bucket not in ("stockout",):
            self.move(job, "scaleUp")
        self.at(ready + POD_START_SECONDS, "start", job)

    def _provision(self, machine_type: str, n: int) -> float:
        lo, hi = self.w.model.provision_range(machine_type)
        return max(self.rng.uniform(lo, hi) for _ in range(max(1, n)))

    def _wake_room(self, pool: str) -> None:
        waiters, self.room_waiters[pool] = self.room_waiters[pool], []
        for job in waiters:
            if job.role == "reserved" and job.info is not None:
                self._nodes_for(job)

    # DWS -------------------------------------------------------------------------------------------------------
    def _dws_pool(self, job: Job) -> tuple[Pool | None, int]:
        assert job.info is not None
        need = self._node_need(job.info)
        for p, n in need.items():
            if self.w.pools[p].queued:
                return self.w.pools[p], n
        return None, 0

    def _pr_create(self, job: Job) -> None:
        pool, n = self._dws_pool(job)
        job.attempt += 1
        if pool is None:  # no queued pool behind the flavor: the request is answered as GKE would not
            self._pr_failed(job, "NoQueuedNodepoolAvailable")
            return
        if self.size[pool.name] + n > pool.max_nodes:
            self._pr_failed(job, "NodepoolSizeReached")
            return
        job.pr_since = self.t
        self.at(self.t + self.w.model.draw_dws(0.0, self.rng), "pr-grant", job)

    def _pr_failed(self, job: Job, reason: str) -> None:
        job.pr_failures[reason] = job.pr_failures.get(reason, 0) + 1
        chk = next(iter(self._queued_checks(job)), None)
        limit, base, cap = (chk.limit, chk.base, chk.cap) if chk else (3, 60.0, 1800.0)
        if job.attempt > limit:
            self._deactivate(job, f"ProvisioningRequest {reason}")
            return
        self._evict(job, "admission check", requeue_after=backoff_seconds(base, cap, job.attempt))

    def _pr_grant(self, job: Job) -> None:
        pool, n = self._dws_pool(job)
        if pool is None:
            return
        if job.pr_since is not None and self.t - job.pr_since >= DWS_VALID_SECONDS:
            self._pr_failed(job, "WaitTimeExceeded")
            return
        if self.size[pool.name] + n > pool.max_nodes:
            self.at(self.t + GRANT_RETRY_SECONDS, "pr-grant", job)
            return
        self.size[pool.name] += n
        job.nodes = {pool.name: n}
        self.move(job, "scaleUp")
        self.at(self.t + self._provision(pool.machine_type, n) + POD_START_SECONDS, "start", job)

    # the loop --------------------------------------------------------------------------------------------------
    def run(self) -> None:
        self.setup()
        while self.heap and self.open_targets > 0:
            when, _seq, kind, job, gen = heapq.heappop(self.heap)
            if when > self.end:
                break
            self.t = when
            if job is not None and gen != job.gen:
                continue  # the job was evicted since: the event is stale
            if kind == "schedule":
                self.sched_at = None
                self._schedule()
            elif kind == "finish":
                assert job is not None
                job.role = "finished"
                self._release(job)
            elif kind == "start":
                assert job is not None
                if job.started is None:
                    self.move(job, "running")
                    job.started = self.t
                    if job.target:
                        self.open_targets -= 1
                job.role = "running"
                self.at(self.t + job.run, "finish", job)
            elif kind == "pr-create":
                assert job is not None
                self._pr_create(job)
            elif kind == "pr-grant":
                assert job is not None
                self._pr_grant(job)
            elif kind == "requeue":
                self.schedule()
            elif kind == "scale-down":
                for p in self.idle:
                    gone = [x for x in self.idle[p] if x <= self.t]
                    if gone:
                        self.idle[p] = [x for x in self.idle[p] if x > self.t]
                        self.size[p] -= len(gone)
                        self._wake_room(p)
                        self.schedule()
            elif kind.startswith("arrive:"):
                self._arrive(int(kind.split(":", 1)[1]))
        self.t = min(self.t, self.end)

    def _arrive(self, index: int) -> None:
        arr = self.w.model.arrivals[index]
        self.arrived += 1
        wl = copy.deepcopy(arr.template)
        md = wl.setdefault("metadata", {})
        md["name"] = f"{md.get('name', 'job')}-eta-{self.arrived}"
        md["uid"] = f"eta-arrival-{self.arrived}"
        md["creationTimestamp"] = format_time(self.t)
        wl["status"] = {}
        job = self._job(
            f"{md.get('namespace', '')}/{md['name']}", wl, arr.priority, self.t, md["uid"], "pending"
        )
        job.run = max(1.0, self.w.model.draw_class_run(arr.klass, self.rng))
        job.since = self.t
        self._enqueue(job)
        self.schedule()
        self.at(self.t + self.rng.expovariate(arr.rate), f"arrive:{index}")

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for job in self.jobs.values():
            if not job.target:
                continue
            self.move(job, job.bucket if job.started is None else "running")
            waits = {f"wait_{b}": round(v, 3) for b, v in job.waits.items() if b != "running"}
            out.append(
                {
                    "key": job.key,
                    "started": None if job.started is None else job.started - self.w.now,
                    "flavors": job.plan if job.started is not None else "",
                    "cause_kind": job.cause
                    or (
                        "ProvisioningRequest " + "/".join(sorted(job.pr_failures))
                        if job.pr_failures and job.started is None
                        else ""
                    ),
                    **waits,
                }
            )
        return out


def _queue_order(j: Job) -> tuple:
    return (-j.priority, j.order, j.uid, j.key)


def _requests_key(wl: dict) -> tuple:
    out = []
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        req: dict[str, float] = {}
        for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
            res = c.get("resources") or {}
            for k, v in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
                req[k] = req.get(k, 0.0) + float(parse_quantity(str(v)))
        sel = ((ps.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
        out.append(
            (
                ps.get("name", ""),
                int(ps.get("count", 1)),
                tuple(sorted(req.items())),
                tuple(sorted(sel.items())),
            )
        )
    return tuple(out)


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


_ = math
