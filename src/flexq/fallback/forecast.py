"""The fallback decides by forecast: a move is made only when the forward run says it helps the job and delays no
one of its class or above.

With ``FallbackConfig.decide_by = "forecast"``, every move a pass considers — off a stocked-out plan A to the next
flavor, a hedge back to plan A, a probe back — first passes the constraints that encode facts (Kueue's order: no
job overtakes a higher-priority one waiting for the flavor; a Kueue preemption is never undone and a preempted job
is moved at most once until it starts; the target flavor has the quota), and is then a **candidate**. The pass's
candidates, highest priority first and at most ``forecast_max_candidates``, are judged together by
``flexq.forecast.moves.compare``: the cluster, read through the same API the policy reads, carried forward
``forecast_replicas`` times as it is and as it would be after each move (the job's Workload evicted, its pod
templates restricted or released, a new Workload queued now), on common random numbers, over
``forecast_horizon_seconds``. A candidate is made when

- its **valued cost** falls: the job's expected wait valued at its class's price of an hour of waiting, plus its
  expected bill (its run time at the relative price of the flavor it starts on) — by more than
  ``forecast_margin`` of the job's run on plan A; and
- **no job of a higher or equal priority** is expected to start later (by more than
  ``forecast_tolerance_seconds``) than without it.

The value of an hour of waiting is the user's (``wait_values``: priority class name -> the value, in hours of
the job on its plan A; a ``fallback.flexq.dev/hour-of-waiting`` annotation on the Workload's job says it per job);
by default an hour of waiting is worth an hour of the job on plan A. Each decision is kept with its figures
(``Verdict``) for ``explain()``, ``flexq fallback --explain JOB`` and the job's Event. The forecast replaces the
heuristics that guessed the future (the rent-or-buy wait, the stock-out memory's estimate, the hour of priority
memory, the probe-back timing); the facts stay.

The history the forecast is fitted on is the cluster's own: the live Workloads the policy reads, plus the ones it
saw admitted and then saw go (finished: their run times and arrivals), at most ``HISTORY`` of them.
"""

from __future__ import annotations

import copy
import logging
import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flexq.api.wellknown import KUEUE_CONFIG_NAME, KUEUE_CONFIG_NAMESPACE
from flexq.clock import format_duration, format_time
from flexq.fallback.affinity import flavor_label, restrict, unrestrict
from flexq.fallback.api import ClusterAPI
from flexq.fallback.model import FallbackConfig
from flexq.fallback.view import ClusterView, WorkloadView
from flexq.forecast.config import EtaConfig
from flexq.forecast.fit import fit
from flexq.forecast.jobs import StateView
from flexq.forecast.model import FittedCapacity, Stockout
from flexq.forecast.moves import Comparison, Outlook, compare
from flexq.forecast.state import ClusterState, infer_pools, pools_from_gke, provisioning_model
from flexq.semantics.conditions import is_true
from flexq.stats import exponential_mean

__all__ = ["Candidate", "Verdict", "ForecastJudge", "ANN_HOUR_OF_WAITING", "HISTORY"]

ANN_HOUR_OF_WAITING = "fallback.flexq.dev/hour-of-waiting"
log = logging.getLogger("flexq.fallback")
HISTORY = 400  # finished Workloads kept for the forecast's fit (run times, arrivals): the latest ones
MAX_VALUE = 1000.0  # an hour of waiting is worth at most this many hours of the job on plan A


@dataclass
class Candidate:
    """A move a pass may make: ``kind`` move (off ``source`` to ``target``), return (back to ``source``)."""

    kind: str
    w: WorkloadView
    job: Mapping[str, Any]
    source: str  # the stocked-out flavor (plan A)
    target: str  # where the job goes: the next flavor (move) or plan A (return)
    sets: list[str]
    run: Any = None  # what the pass does when the forecast says yes (a closure over the step's own writer)

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.w.key}:{self.target}"

    @classmethod
    def back(
        cls, w: WorkloadView, job: Mapping[str, Any], flavor: str, sets: list[str], run: Any
    ) -> Candidate:
        """A return (or a promotion) to ``flavor``: the job leaves plan B for it."""
        return cls("return", w, job, flavor, flavor, sets, run=run)


@dataclass
class Verdict:
    """What the forecast said of one candidate (seconds from the pass; costs in hours of the job on plan A)."""

    candidate: str
    job: str
    make: bool
    start_stay: float
    start_move: float
    started_stay: float
    started_move: float
    valued_stay: float
    valued_move: float
    value: float  # what an hour of waiting is worth (hours of the job on plan A)
    delayed: list[tuple[str, int, float]] = field(default_factory=list)  # (job, priority, seconds later)
    replicas: int = 0
    why: str = ""

    def describe(self) -> str:
        def start(s: float, share: float) -> str:
            return f"~{format_duration(s)}" + ("" if share >= 0.999 else f" ({share:.0%} within the horizon)")

        return (
            f"forecast ({self.replicas} replicas): starts in {start(self.start_move, self.started_move)} if moved, "
            f"{start(self.start_stay, self.started_stay)} if not; valued cost {self.valued_move:.2f} vs "
            f"{self.valued_stay:.2f} job-hours on plan A (an hour of waiting = {self.value:g}): {self.why}"
        )


class ForecastJudge:
    """Judges a pass's candidates by forecast (see the module docstring); keeps the finished Workloads it saw."""

    def __init__(self, cfg: FallbackConfig) -> None:
        self.cfg = cfg
        self.live: dict[str, tuple[dict, Mapping[str, Any] | None]] = {}  # uid -> admitted Workload, its job
        self.history: OrderedDict[str, tuple[dict, Mapping[str, Any] | None]] = OrderedDict()
        self.last: dict[str, Verdict] = {}  # job key -> the last verdict about it
        self.refused: dict[str, tuple[float, Verdict]] = {}  # candidate -> when it was refused, and why
        self.runs = 0  # forward runs made, over the judge's life
        self.passes = 0  # passes that ran a forecast

    # -- history -----------------------------------------------------------------------------------------------
    def observe(self, view: ClusterView) -> None:
        """Workloads admitted last pass and gone (or finished) now become history, finished at ``view.now``.
        Called on every pass (``FallbackPolicy.run_once``), so a run time is off by one pass's interval at most."""
        seen: dict[str, tuple[dict, Mapping[str, Any] | None]] = {}
        for w in view.workloads:
            if w.admitted and w.uid:
                seen[w.uid] = (dict(w.obj), view.job(w))
        for uid, (wl, job) in self.live.items():
            if uid in seen:
                continue
            done = copy.deepcopy(wl)
            conds = done.setdefault("status", {}).setdefault("conditions", [])
            if not is_true(done, "Finished"):
                conds.append(
                    {
                        "type": "Finished",
                        "status": "True",
                        "reason": "Seen",
                        "lastTransitionTime": format_time(view.now),
                    }
                )
            self.history[uid] = (done, job)
            while len(self.history) > HISTORY:
                self.history.popitem(last=False)
        self.live = seen

    def state(self, view: ClusterView, limits: Mapping[str, int] | None = None) -> ClusterState:
        """The cluster as the forecast reads it, from the policy's own reads (and its history); ``limits``: node
        pool -> its maximum size as the policy knows it (its full flavors' evidence, the user's pool limits)."""
        api: ClusterAPI = view.api
        st = ClusterState(now=view.now)
        st.clusterqueues = [dict(cq) for cq in view.cqs.values()]
        st.localqueues = list(view.localqueue_objs)  # (read once per pass, by the view)
        st.flavors = list(view.flavor_objs)
        st.admission_checks = api.list("AdmissionCheck")
        st.provisioning_configs = api.list("ProvisioningRequestConfig")
        live = api.list("Workload")
        uids = {(wl.get("metadata") or {}).get("uid") for wl in live}
        st.workloads = live + [wl for uid, (wl, _j) in self.history.items() if uid not in uids]
        jobs: dict[tuple[str, str, str], Mapping[str, Any]] = dict(view.jobs)
        for _wl, job in self.history.values():
            if job is not None:
                md = job.get("metadata") or {}
                jobs.setdefault((str(job.get("kind")), md.get("namespace", ""), md.get("name", "")), job)
        st.rayjobs = [dict(j) for k, j in jobs.items() if k[0] == "RayJob"]
        st.batch_jobs = [dict(j) for k, j in jobs.items() if k[0] == "Job"]
        namespaces = sorted({w.namespace for w in view.workloads})
        st.provisioning_requests = [pr for ns in namespaces for pr in api.list("ProvisioningRequest", ns)]
        st.nodes = [dict(n) for n in view.nodes]
        st.events = [dict(e) for evs in view.capacity_events.values() for e in evs]
        cm = api.get("ConfigMap", KUEUE_CONFIG_NAME, KUEUE_CONFIG_NAMESPACE)
        st.kueue_config = dict(cm) if cm is not None else None
        st.node_pools = pools_from_gke(api.node_pools()) or infer_pools(st)
        known = {**(limits or {}), **self.cfg.pool_limits}  # the user's word first
        for p in st.node_pools:
            if p["name"] in known:
                p.setdefault("autoscaling", {"min": 0})["max"] = int(known[p["name"]])
        return st

    # -- judging -----------------------------------------------------------------------------------------------
    def judge(
        self,
        view: ClusterView,
        candidates: list[Candidate],
        prices: Mapping[str, float],
        stockouts: Mapping[str, tuple[float, str]] | None = None,
        episodes: Mapping[str, list[float]] | None = None,
        limits: Mapping[str, int] | None = None,
        follow: float | None = None,
    ) -> list[Verdict]:
        """The verdict on each candidate (at most ``forecast_max_candidates``, in the order given).
        ``stockouts``: flavor -> (since, code) of the stock-outs the policy's breakers hold (its evidence outlives
        the pods whose refusals showed it); ``episodes``: flavor -> how long its past stock-outs lasted;
        ``limits``: node pool -> its maximum size, as far as the policy knows; ``follow``: how long after now
        the arrivals are followed (at least ``forecast_arrivals_seconds``; the pass gives the moved jobs'
        expected runs: a move holds its room that long, and who arrives meanwhile must not start later)."""
        cands = candidates[: max(0, self.cfg.forecast_max_candidates)]
        if not cands:
            return []
        st = self.state(view, limits)
        log.debug("forecast state: pools %s; limits %s; stock-outs %s", st.node_pools, limits, stockouts)
        sv = StateView.of(st)
        horizon = self.cfg.forecast_horizon_seconds
        seed = int(view.now) & 0x7FFFFFFF
        # the user's prior for a DWS flavor's wait before one is seen is the rules' (``--provisioning-wait-prior``)
        prior = EtaConfig(
            horizon=horizon,
            seed=seed,
            prior_dws_wait_seconds=max(1.0, self.cfg.provisioning_wait_prior_seconds),
            # the exponential priors, not the ETA's wide cold laws: a move is judged on paired replicas, and
            # the figures of docs/fallback.md were measured so (the cold laws for the fallback: not measured yet)
            cold_run=None,
            cold_dws=None,
            min_at_risk=1,  # the whole Kaplan-Meier curves, as those figures were measured (the ETA's rule: not yet)
        )
        model = fit(st, prior, sv)
        _known_stockouts(model, st, view, stockouts or {}, episodes or {})
        overrides = {c.name: {c.w.key: pending_after(c, view)} for c in cands}
        cmp = compare(
            st,
            overrides,
            replicas=self.cfg.forecast_replicas,
            horizon=horizon,
            seed=seed,
            model=model,
            view=sv,
            follow_arrivals=min(horizon, max(self.cfg.forecast_arrivals_seconds, follow or 0.0)),
        )
        self.runs += cmp.runs
        self.passes += 1
        out = [self._verdict(c, cmp, prices) for c in cands]
        for v in out:
            self.last[v.job] = v
        return out

    def value_of_waiting(self, c: Candidate) -> float:
        """Hours of the job on plan A an hour of its waiting is worth (see the module docstring)."""
        ann = ((c.job.get("metadata") or {}).get("annotations") or {}).get(ANN_HOUR_OF_WAITING)
        cls = str((c.w.obj.get("spec") or {}).get("priorityClassName") or "")
        for raw in (ann, self.cfg.wait_values.get(cls) if cls else None):
            if raw is None:
                continue
            try:
                value = float(raw)
            except (TypeError, ValueError):
                continue
            if math.isfinite(value) and 0.0 < value <= MAX_VALUE:
                return value
        return 1.0

    def _verdict(self, c: Candidate, cmp: Comparison, prices: Mapping[str, float]) -> Verdict:
        key, h = c.w.key, cmp.horizon
        stay = cmp.baseline.get(key) or Outlook(priority=c.w.priority)
        moved = cmp.candidates[c.name].get(key) or Outlook(priority=c.w.priority)
        run_h = _run_hours(cmp, key)
        value = self.value_of_waiting(c) * prices.get(c.source, 1.0)
        # per replica, the job's valued cost with and without the move (the replicas are paired: common random
        # numbers); a job not started within the horizon counts as starting at it, priced as where it waits
        costs_stay = _valued(stay, h, value, run_h, prices, c.source)
        costs_move = _valued(moved, h, value, run_h, prices, c.target)
        v_stay = _mean(costs_stay, h / 3600 * value + run_h * prices.get(c.source, 1.0))
        v_move = _mean(costs_move, h / 3600 * value + run_h * prices.get(c.target, 1.0))
        delayed = []
        # a move must delay no job of its priority or above; a rescue (the job is lost otherwise) none above it
        floor = c.w.priority + 1 if c.kind == "rescue" else c.w.priority
        for other, o_stay in cmp.baseline.items():
            if other == key or o_stay.priority < floor:
                continue
            o_move = cmp.candidates[c.name].get(other)
            if o_move is None:
                continue
            late = o_move.mean(h) - o_stay.mean(h)
            if late > self.cfg.forecast_tolerance_seconds:
                delayed.append((other, o_stay.priority, late))
        margin = self.cfg.forecast_margin * run_h * prices.get(c.source, 1.0)
        # the move's gain per replica, and how sure its mean is
        gains = [a - b for a, b in zip(costs_stay, costs_move, strict=False)]
        mean_gain = _mean(gains, 0.0)
        spread = _standard_error(gains)
        if delayed:
            delayed.sort(key=lambda t: (-t[1], -t[2]))
            o, p, late = delayed[0]
            why = f"{o} (priority {p}) would start ~{format_duration(late)} later: not made"
            make = False
        elif c.kind == "rescue":
            why = "it is requeued, and delays no job of a higher priority: made"
            make = True
        elif mean_gain > margin and mean_gain > spread:
            why = "it helps the job and delays no one of its class or above: made"
            make = True
        elif mean_gain > margin:
            why = (
                f"it helps the job on average, but not surely (a gain of {mean_gain:.2f} ± {spread:.2f} over the "
                "paired replicas): not made"
            )
            make = False
        else:
            why = "it does not help the job enough for its price: not made"
            make = False
        return Verdict(
            candidate=c.name,
            job=key,
            make=make,
            start_stay=stay.mean(h),
            start_move=moved.mean(h),
            started_stay=stay.started_share,
            started_move=moved.started_share,
            valued_stay=v_stay,
            valued_move=v_move,
            value=value,
            delayed=delayed,
            replicas=cmp.replicas,
            why=why,
        )


def _known_stockouts(
    model: FittedCapacity,
    st: ClusterState,
    view: ClusterView,
    stockouts: Mapping[str, tuple[float, str]],
    episodes: Mapping[str, list[float]],
) -> None:
    """Add what the policy knows to the fitted model: its breakers' stock-outs (ongoing since their first
    refusal), the episodes it saw end."""
    machine = {p["name"]: p.get("machineType", "") for p in st.node_pools}
    kind = {p["name"]: provisioning_model(p) for p in st.node_pools}
    have = {s.pool for s in model.stockouts}
    ended = [d for f in sorted(episodes) for d in episodes[f]]
    model.stockout_episodes = list(model.stockout_episodes) + ended
    for flavor, (since, code) in sorted(stockouts.items()):
        pool = view.pool_of(flavor)
        if not pool or pool in have or not machine.get(pool):
            continue
        have.add(pool)
        elapsed = max(0.0, view.now - since)
        mean = exponential_mean(ended, [elapsed], model.cfg.prior_stockout_seconds)
        model.stockouts.append(Stockout(pool, machine[pool], since, code or "GCE_STOCKOUT", mean, kind[pool]))


def _valued(
    o: Outlook, horizon: float, value: float, run_h: float, prices: Mapping[str, float], default: str
) -> list[float]:
    """Per replica: the job's wait (at the horizon when it did not start) valued at ``value`` an hour, plus its run
    at the relative price of the plan it started on (``default``: the flavor it waits for)."""
    return [
        (horizon if s is None else min(s, horizon)) / 3600 * value
        + run_h * _plan_price(plan, prices, default)
        for s, plan in zip(o.starts, o.plans, strict=True)
    ]


def _mean(xs: list[float], empty: float) -> float:
    return sum(xs) / len(xs) if xs else empty


def _standard_error(xs: list[float]) -> float:
    if len(xs) < 2:
        return math.inf
    m = sum(xs) / len(xs)
    var = sum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    return math.sqrt(var / len(xs))


def _plan_price(plan: str, prices: Mapping[str, float], default: str) -> float:
    """The relative price of a plan ("ps=flavor,..."): its dearest flavor's ("": the flavor it waits for)."""
    flavors = {x for p in plan.split(",") if "=" in p for x in p.split("=", 1)[1].split("+")}
    return max((prices.get(f, 1.0) for f in flavors), default=prices.get(default, 1.0))


def _run_hours(cmp: Comparison, key: str) -> float:
    seconds = cmp.run_seconds.get(key)
    return seconds / 3600 if seconds else 1.0


def pending_after(c: Candidate, view: ClusterView) -> dict[str, Any]:
    """The Workload Kueue makes from the job after the move: pending from now, its pod sets restricted off the
    stocked-out flavor (a move) or released back to it (a return)."""
    wl = copy.deepcopy(dict(c.w.obj))
    wl.pop("status", None)
    md = wl.setdefault("metadata", {})
    md["creationTimestamp"] = format_time(view.now)
    spec = wl.setdefault("spec", {})
    spec["active"] = True
    label = flavor_label(view.flavors, c.source)
    if label is None:
        return wl
    for ps in spec.get("podSets") or []:
        pod_spec = ps.setdefault("template", {}).setdefault("spec", {})
        if c.kind == "move" and ps.get("name") in c.sets:
            restrict(pod_spec, *label)
        elif c.kind == "return":
            unrestrict(pod_spec, *label)
    return wl
