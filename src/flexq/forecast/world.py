"""What every replica of one forward run shares: ``World``, built once from a cluster's state and its fitted model
(``build_world``) — the ClusterQueues, LocalQueues and flavors, each flavor's node pool (``Pool``: its machines,
its size bounds, whether it is DWS's), the admission checks (``Check``: DWS, another ProvisioningRequest class,
or a controller not modelled, with its retry strategy), the jobs the run starts with and the pools' nodes at the
instant, the release and configuration of Kueue — and ``WorldJob``, one job's record in a replica. The replica itself
is ``flexq.forecast.fast``'s. Pure: no clock, no store.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

from flexq.api import gke_catalog as catalog
from flexq.api.kueue_versions import KueueVersion
from flexq.clock import parse_time_or_none
from flexq.forecast.jobs import JobEntry, StateView
from flexq.forecast.model import QUEUED_CLASS, FittedCapacity
from flexq.forecast.state import ClusterState, provisioning_model
from flexq.kueue.checks import RetryStrategy, retry_strategy
from flexq.kueue.config import KueueConfig
from flexq.kueue.queues import QueueManager
from flexq.kueue.workload import WorkloadInfo, next_serial
from flexq.semantics.conditions import find_condition

__all__ = [
    "Pool",
    "Check",
    "WorldJob",
    "World",
    "admitted_plan",
    "build_world",
    "namespace_labels",
    "queued_view",
]

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"


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
    # it consumes a specific reservation (``flexq.gke.capacity.specific_reservation``): never stocked out; the
    # reservation's size is not read (a compute API object): the pool's maximum stands for it
    reserved: bool = False
    model: str = "on-demand"  # its provisioning model (``flexq.forecast.state.provisioning_model``)


@dataclass
class Check:
    name: str
    kind: str  # "dws" (queued ProvisioningRequest), "provisioning" (another class), "other" (not modelled)
    managed: tuple[str, ...]  # managedResources (empty: every pod set)
    retry: RetryStrategy


@dataclass
class WorldJob:
    """One job of the run: a Workload that was there at the instant, or one that arrives."""

    key: str
    wl: dict  # the Workload as Kueue would see it now (pending: spec, metadata and conditions)
    cq: str
    rng: random.Random  # its own stream of draws (common random numbers across runs of one state)
    run: float = 0.0  # its run time (drawn once per replica)
    target: bool = False  # it waited at the instant: its start is what the run is for
    role: str = "pending"  # pending, backoff, reserved, running, finished, deactivated
    info: WorkloadInfo | None = None  # while it holds quota
    pending: WorkloadInfo | None = (
        None  # its last info as a pending workload (``WorkloadInfo.from_obj``'s like)
    )
    plan: str = ""
    attempt: int = 0  # ProvisioningRequest attempts so far
    # queued again with attempts behind it: their count lasts only if it gets quota at this instant
    requeued_at: float | None = None
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
    model: FittedCapacity
    cq_objs: list[dict]
    localqueues: list[dict]
    flavors: list[dict]
    flavor_pool: dict[str, str]
    pools: dict[str, Pool]
    checks: dict[str, Check]
    jobs: list[JobEntry]  # the entries a run starts with (running, reserved, pending)
    pool_nodes: dict[str, int]  # nodes each pool has at the instant
    # pool -> creation times of its nodes not Ready at the instant (being made: in a DWS pool, for a grant)
    pool_making: dict[str, list[float]]
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

    def queued(self, e: JobEntry, queues: QueueManager) -> tuple[dict, WorkloadInfo]:
        """A pending entry's queued view and its ``WorkloadInfo`` for one replica: parsed (requests, order,
        scheduling hash) once per world, each replica given its own copy of the info (its flavor-scan progress
        and heap tie-breaker are its own; the parsed parts are read-only)."""
        got = self._queued.get(e.key)
        if got is None:
            view = queued_view(e.workload)
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
            reserved=bool(p.get("reservation")),
            model=provisioning_model(p),
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


def admitted_plan(wl: dict) -> str:
    """The flavors a Workload holding quota got, per pod set (``head=default-cpu,tpu-group=dws``)."""
    adm = (wl.get("status") or {}).get("admission") or {}
    return ",".join(
        f"{p.get('name', '')}={'+'.join(sorted(set((p.get('flavors') or {}).values())))}"
        for p in adm.get("podSetAssignments") or []
    )


def queued_view(wl: dict) -> dict:
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
    model: FittedCapacity,
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
    pool_making: dict[str, list[float]] = {}
    for n in state.nodes:
        md = n.get("metadata") or {}
        pool = (md.get("labels") or {}).get(catalog.LABEL_NODEPOOL, "")
        if pool:
            pool_nodes[pool] = pool_nodes.get(pool, 0) + 1
            ready = find_condition(n, "Ready")
            if ready is None or ready.get("status") != "True":
                created = parse_time_or_none(md.get("creationTimestamp"))
                pool_making.setdefault(pool, []).append(state.now if created is None else created)
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
        pool_making={p: sorted(ts) for p, ts in pool_making.items()},
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
