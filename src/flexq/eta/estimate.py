"""The ETA: every waiting job's start, as a distribution over forward runs of the cluster's own twin.

Owns ``estimate(state, cfg)`` -> ``Forecast``, ``JobEta`` (one waiting Workload: the median start and its 80 %
interval, the share of runs in which it started within the horizon, the plan it started on, what it waited for,
``cannot`` when no flavor can ever take it, and the reasoning) and ``naive_eta`` (the estimate a person would make
from the queue: position x the mean run time of the jobs ahead, spread over the slots the quota gives; the
benchmark's baseline).

``estimate`` fits the model (``flexq.forecast.fit.fit``), builds one study per replica (``flexq.eta.scenario``:
run times, stock-out ends and the twin's own draws differ per replica) and runs each with ``flexq simulate``'s
engine (``run_one``: a whole virtual twin), in processes when there are several cores. A job's start in a run
is its ``PodsReady``, counted from the instant of the state; a job that did not start within the horizon counts
as later than any that did, so a median past the horizon says "not within <horizon>".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.quantity import parse_quantity
from flexq.clock import WallClock, format_duration
from flexq.eta.calibration import Calibration, Prediction
from flexq.eta.replicas import run_replicas, workers_of
from flexq.eta.scenario import Scenario, build_study
from flexq.forecast.config import EtaConfig
from flexq.forecast.fit import fit
from flexq.forecast.jobs import JobEntry, StateView, class_key, cluster_queue_of, entries, queue_positions
from flexq.forecast.model import FittedCapacity
from flexq.forecast.state import ClusterState
from flexq.forecast.world import build_world
from flexq.loop.procpool import process_pool
from flexq.simulate.engine import run_one

__all__ = ["Forecast", "JobEta", "estimate", "naive_eta", "WAITS_FOR", "fmt_eta"]

INF = math.inf
# what a job's wait went to in the forward runs (flexq.simulate.recorder.WAIT_BUCKETS), in words
WAITS_FOR = {
    "quota": "quota",
    "dws": "DWS (queued provisioning)",
    "scaleUp": "nodes being created",
    "stockout": "a stock-out",
    "poolMax": "room in its node pool",
    "pods": "its pods to start",
    "evicted": "readmission after an eviction",
    "deactivated": "someone to reactivate it",
}


@dataclass
class JobEta:
    """The ETA of one waiting Workload (seconds from the state's instant; None: not within the horizon)."""

    namespace: str
    workload: str
    job: str  # Kind/name
    queue: str
    state: str
    role: str  # reserved or pending (or deactivated)
    position: int  # pending workloads of its ClusterQueue ahead of it
    median: float | None = None
    low: float | None = None  # 10th percentile
    high: float | None = None  # 90th percentile (None: beyond the horizon)
    started: float = 0.0  # share of runs in which it started within the horizon
    plan: str = ""  # flavors per pod set it started on most often
    waits_for: str = ""  # what its wait went to most (words)
    now: str = ""  # the coded reason it waits now (flexq.api.reasons)
    cannot: str = ""  # why nothing can ever run it, when that is so
    run_source: str = ""  # where its run time comes from
    klass: str = ""  # its class for the interval's online correction (LocalQueue and class)
    mid_class: str = ""  # its class for the median's correction (its class and what its wait goes to most)
    interval: str = ""  # how its interval is drawn (corrected online or not), in words
    reasoning: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.workload}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Forecast:
    """Every waiting job's ETA at ``now`` (epoch seconds), with the model it came from."""

    now: float
    horizon: float
    replicas: int
    jobs: dict[str, JobEta] = field(default_factory=dict)  # workload key -> ETA
    model: list[str] = field(default_factory=list)  # the fitted model, in words
    notes: list[str] = field(default_factory=list)
    stockouts: list[dict[str, Any]] = field(default_factory=list)  # the ongoing ones: {"pool", "since"}
    running: list[str] = field(default_factory=list)  # workload keys running at ``now``
    seconds: float = 0.0  # wall time the estimate took
    engine: str = "fast"  # the forward runs: fast (flexq.forecast.fast) or twin (whole virtual twins)

    def predictions(self) -> list[Prediction]:
        """What the online correction of the interval records of this forecast: one per job with a time."""
        return [
            Prediction.of(j.key, j.klass, self.now, j.low, j.median, j.high, self.horizon, j.mid_class)
            for j in self.jobs.values()
            if not j.cannot and j.klass
        ]

    def find(self, name: str, namespace: str | None = None) -> JobEta | None:
        """By workload or job name (``Kind/name`` or ``name``), in ``namespace`` when given."""
        for j in self.jobs.values():
            if namespace is not None and j.namespace != namespace:
                continue
            if name in (j.workload, j.job, j.job.partition("/")[2]):
                return j
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "horizon": self.horizon,
            "replicas": self.replicas,
            "jobs": {k: v.as_dict() for k, v in self.jobs.items()},
            "model": self.model,
            "notes": self.notes,
            "running": self.running,
            "seconds": self.seconds,
            "engine": self.engine,
            "stockouts": self.stockouts,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Forecast:
        f = cls(now=d["now"], horizon=d["horizon"], replicas=d["replicas"])
        f.jobs = {k: JobEta(**v) for k, v in (d.get("jobs") or {}).items()}
        f.model, f.notes = list(d.get("model") or []), list(d.get("notes") or [])
        f.running, f.seconds = list(d.get("running") or []), float(d.get("seconds") or 0.0)
        f.engine = str(d.get("engine") or "fast")
        f.stockouts = [dict(x) for x in d.get("stockouts") or []]
        return f


QUEUE_MISSING = ": nothing admits it until that queue is created"


def fmt_eta(j: JobEta, horizon: float) -> str:
    """``in 1h05m (40m-2h10m)``, ``not within 7d``, ``never: ...`` — the ETA in a few words."""
    if j.cannot:
        if j.role == "deactivated":
            return "never (deactivated)"
        if j.cannot.endswith(QUEUE_MISSING):
            return "never (no such queue)"
        return "never (no flavor fits)"
    if j.median is None:
        return f"not within {format_duration(horizon)}"
    lo = format_duration(j.low or 0.0)
    hi = format_duration(j.high) if j.high is not None else f">{format_duration(horizon)}"
    return f"in {format_duration(j.median)} ({lo}-{hi})"


def _q(values: list[float], q: float) -> float:
    """The start read at level ``q`` of the forward runs (a run that never started counts as +inf), as a prediction
    of one more draw: the runs and the job's real start are exchangeable when the model is right, so the k-th
    smallest of n runs lies above the real start with probability k / (n + 1). The level is read at rank
    q * (n + 1), interpolated between neighbours, with "now" below the first and "never" beyond the last: an 80 %
    interval from 19 runs is their 2nd to 18th start; from 9, their first and last; from fewer, open above
    (8 runs cannot bound 80 %: their whole range holds a ninth draw 7 times in 9). The usual sample quantile
    reads (n - 1) * q + 1, which for 8 runs covers about 62 %, 32 runs 75 %."""
    xs = sorted(values)
    pos = q * (len(xs) + 1)
    k = math.floor(pos)
    if k >= len(xs) + 1:
        return INF
    lo = 0.0 if k <= 0 else xs[k - 1]
    hi = INF if k >= len(xs) else xs[k]
    frac = max(0.0, pos - k)
    if hi == INF:
        return INF if frac > 0 or lo == INF else lo
    return lo + (hi - lo) * frac


def _one(sc: Scenario, replica: int) -> dict[str, dict[str, Any]]:
    """One forward run in a whole virtual twin: workload key -> its row (start counted from the instant)."""
    res = run_one(sc.study, "eta", replica)
    out = {}
    for r in res.jobs:
        key = sc.workload_of.get(r.get("job", ""))
        if key is None:
            continue
        row = {k: r.get(k) for k in ("flavors", "cause_kind")} | {
            k: v for k, v in r.items() if k.startswith("wait_") and k != "wait_censored"
        }
        row["started"] = None if r.get("started") is None else max(0.0, float(r["started"]) - sc.warmup)
        out[key] = row
    return out


def _run_twin(scenarios: list[Scenario], workers: int) -> list[dict[str, dict[str, Any]]]:
    if workers <= 1 or len(scenarios) <= 1:
        return [_one(sc, i) for i, sc in enumerate(scenarios)]
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["flexq.simulate.engine"])
    with process_pool(workers, ctx) as pool:
        futs = [pool.submit(_one, sc, i) for i, sc in enumerate(scenarios)]
        return [f.result() for f in futs]


def estimate(
    state: ClusterState,
    cfg: EtaConfig | None = None,
    *,
    runner: Callable[[list[Scenario], int], list[dict[str, dict[str, Any]]]] | None = None,
    budget: float | None = None,
    calibration: Calibration | None = None,
) -> Forecast:
    """Every waiting job's ETA (see the module docstring). ``budget``: wall seconds the fast forward runs may
    take (fewer replicas when it runs out; never fewer than ``MIN_REPLICAS``). ``calibration``: the interval's
    online correction (``flexq.eta.calibration``; None: the forward runs' 10 %-90 % quantiles)."""
    t0 = WallClock().now()
    cfg = cfg or EtaConfig()
    if calibration is not None and not state.stockout_history and calibration.memory.history():
        # the stock-outs seen while watching this cluster, beyond the hour of Events the API keeps
        state = replace(state, stockout_history=calibration.memory.history())
    if calibration is not None and state.stockout_watched_since is None:
        state = replace(state, stockout_watched_since=calibration.memory.first_look)
    view = StateView.of(state)  # the state read once, passed to the model and the forward runs
    model = fit(state, cfg, view)
    es = view.entries
    fc = Forecast(now=state.now, horizon=cfg.horizon, replicas=cfg.replicas)
    fc.model, fc.notes = model.describe(), list(state.notes) + view.notes
    fc.stockouts = [{"pool": s.pool, "since": s.since} for s in model.stockouts]
    fc.running = [e.key for e in es if e.role == "running"]
    waiting = [e for e in es if e.role in ("reserved", "pending", "deactivated")]
    positions = queue_positions(es, view.cluster_queue_of)  # once per estimate, not once per job
    if not any(e.role != "deactivated" and not e.queue_missing and not e.cannot for e in waiting):
        for e in waiting:  # none that a forward run could place: each says why, at no cost
            fc.jobs[e.key] = _job_eta(e, positions, model, [], cfg, calibration)
        fc.seconds = WallClock().now() - t0
        return fc
    if cfg.engine == "twin":
        scenarios = [build_study(state, model, cfg, r, es) for r in range(cfg.replicas)]
        results = (runner or _run_twin)(scenarios, min(workers_of(cfg), cfg.replicas))
        fc.engine = "twin"
    else:
        world = build_world(state, model, cfg.horizon, view)
        fc.notes += world.notes
        deadline = None if budget is None else t0 + budget
        results = run_replicas(world, cfg, deadline)
        fc.replicas = len(results)
    for e in waiting:
        fc.jobs[e.key] = _job_eta(e, positions, model, results, cfg, calibration)
    fc.seconds = WallClock().now() - t0
    return fc


def _interval_words(cal: Calibration, corrected: bool, j: JobEta) -> str:
    if not corrected:
        return (
            "80 % interval: the forward runs' 10 %-90 % quantiles, median their 50 % (not corrected online)"
        )
    return cal.describe(j.klass, j.mid_class)


def _job_eta(
    e: JobEntry,
    positions: dict[str, int],
    model: FittedCapacity,
    results: list[dict[str, dict[str, Any]]],
    cfg: EtaConfig,
    calibration: Calibration | None = None,
) -> JobEta:
    kind, name = e.job_ref
    queue, klass = class_key(e, e.job, cfg.class_label)
    j = JobEta(
        namespace=e.namespace,
        workload=e.name,
        job=f"{kind}/{name}",
        queue=e.queue,
        state=e.state,
        role=e.role,
        position=positions.get(e.key, 0) if e.role == "pending" else 0,
        now=f"{e.reason.code}: {e.reason.detail}" if e.reason else "",
        run_source=model.run_source(e),
        klass=f"{queue} {klass}",
    )
    cal = calibration or Calibration()
    q_lo, q_hi = cal.quantiles(j.klass)
    j.interval = _interval_words(cal, calibration is not None, j)
    reasons = j.reasoning
    reasons.append(
        f"now: {e.state}"
        + (f", {j.now}" if j.now else "")
        + (
            f"; {j.position} pending job(s) ahead of it in its ClusterQueue"
            if e.role == "pending" and not e.queue_missing
            else ""
        )
    )
    if e.role == "deactivated":
        j.cannot = "deactivated: it does not start unless someone reactivates it (spec.active: true)"
        reasons.append(j.cannot)
        return j
    if e.queue_missing:
        j.cannot = f"{e.queue_missing}{QUEUE_MISSING}"
        reasons.append(j.cannot)
        return j
    if e.cannot:
        j.cannot = e.cannot
        reasons.append(f"Kueue says no flavor of its ClusterQueue can ever take it: {e.cannot}")
        return j
    starts: list[float] = []
    plans: Counter[str] = Counter()
    waits: dict[str, float] = dict.fromkeys(WAITS_FOR, 0.0)
    causes: Counter[str] = Counter()
    for rows in results:
        row = rows.get(e.key)
        if row is None:
            continue
        if row.get("started") is not None:
            starts.append(float(row["started"]))
            plans[row.get("flavors") or ""] += 1
        else:
            starts.append(INF)
            if row.get("cause_kind"):
                causes[row["cause_kind"]] += 1
        for b in WAITS_FOR:
            waits[b] += float(row.get(f"wait_{b}") or 0.0)
    if not starts:
        return j
    j.started = sum(1 for s in starts if s != INF) / len(starts)
    top = [b for b, v in sorted(waits.items(), key=lambda kv: -kv[1]) if v > 0]
    j.mid_class = f"{j.klass} waiting for {top[0] if top else 'nothing'}"
    j.interval = _interval_words(cal, calibration is not None, j)
    # the median at its class's corrected level; "not within the horizon" when fewer than half the runs start it
    med = _q(starts, cal.point(j.mid_class)) if j.started >= 0.5 else INF
    lo, hi = _q(starts, q_lo), _q(starts, q_hi)
    j.median = None if med == INF or med > cfg.horizon else med
    j.low = None if lo == INF else lo
    j.high = None if hi == INF or hi > cfg.horizon else hi
    if plans:
        j.plan = plans.most_common(1)[0][0]
    if top:
        b = top[0]
        j.waits_for = WAITS_FOR[b]
        if b == "quota" and j.position:
            j.waits_for = f"quota: {j.position} job(s) ahead of it"
        elif b == "quota":
            j.waits_for = "quota: running jobs to finish"
    n = len(starts)
    reasons.append(f"its run time: {j.run_source}")
    if j.median is not None:
        reasons.append(
            f"in {n} forward runs of this cluster it started in {round(j.started * n)}: median {format_duration(j.median)}"
            f" from now, 80 % between {format_duration(j.low or 0.0)} and "
            + (format_duration(j.high) if j.high is not None else f"beyond {format_duration(cfg.horizon)}")
            + (f", on {j.plan}" if j.plan else "")
        )
    else:
        reasons.append(
            f"in {n} forward runs it started within {format_duration(cfg.horizon)} in {round(j.started * n)}"
            + (f" (what stopped it: {', '.join(causes)})" if causes else "")
        )
    if j.waits_for:
        reasons.append(f"its wait goes mostly to {j.waits_for}")
    reasons.append(j.interval)
    return j


# -- the naive estimate --------------------------------------------------------------------------------------------
def _tpu_of(wl: dict) -> float:
    total = 0.0
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
            q = ((c.get("resources") or {}).get("requests") or {}).get("google.com/tpu")
            if q is not None:
                total += float(parse_quantity(str(q))) * int(ps.get("count", 1))
    return total


def naive_eta(state: ClusterState, model: FittedCapacity | None = None) -> dict[str, float]:
    """Workload key -> seconds: (the jobs ahead in its ClusterQueue, running or pending) x their mean run time,
    spread over the slots of its ClusterQueue (the TPU quota of its flavors, capped by their node pools' size,
    over the job's TPUs). Mean run times from the finished jobs of the cluster, else the prior."""
    model = model or fit(state)
    done = [t for c in model.classes.values() for t in c.done]
    mean_run = sum(done) / len(done) if done else model.cfg.prior_run_seconds
    es = entries(state)
    pools = {p["name"]: p for p in state.node_pools}
    chips_per_node = {}
    for p in state.node_pools:
        if catalog.is_known_machine_type(p["machineType"]):
            chips_per_node[p["name"]] = catalog.machine_type(p["machineType"]).chips
    flavor_pool = {
        (f.get("metadata") or {}).get("name", ""): ((f.get("spec") or {}).get("nodeLabels") or {}).get(
            catalog.LABEL_NODEPOOL, ""
        )
        for f in state.flavors
    }
    capacity: dict[str, float] = {}
    for cq in state.clusterqueues:
        total = 0.0
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            for fl in rg.get("flavors") or []:
                for r in fl.get("resources") or []:
                    if r.get("name") != "google.com/tpu":
                        continue
                    quota = float(parse_quantity(str(r.get("nominalQuota", 0))))
                    pool = pools.get(flavor_pool.get(fl.get("name", ""), ""))
                    if pool is not None:
                        top = (pool.get("autoscaling") or {}).get("max", pool.get("nodes", 0))
                        quota = min(quota, top * chips_per_node.get(pool["name"], 0))
                    total += quota
        capacity[(cq.get("metadata") or {}).get("name", "")] = total
    cq_of = cluster_queue_of(state)
    positions = queue_positions(es, cq_of)
    started: Counter[str | None] = Counter(
        cq_of.get(f"{x.namespace}/{x.queue}") for x in es if x.role != "pending"
    )
    out = {}
    for e in es:
        if e.role not in ("pending", "reserved"):
            continue
        cq_name = cq_of.get(f"{e.namespace}/{e.queue}", "")
        need = max(1.0, _tpu_of(e.workload))
        slots = max(1.0, capacity.get(cq_name, 0.0) / need)
        ahead = positions.get(e.key, 0) if e.role == "pending" else 0
        running = started[cq_name] - (
            1 if e.role != "pending" and cq_of.get(f"{e.namespace}/{e.queue}") == cq_name else 0
        )
        busy = max(0.0, ahead + running - slots + 1)  # jobs that must end before a slot is its
        out[e.key] = busy * mean_run / slots
    return out
