"""The fallback policy: one pass over one view of the cluster.

``FallbackPolicy.run_once`` reads the cluster once (``view.ClusterView``, as Kueue's scheduler reads its
snapshot) and then, from that one view:

1. **evidence** (``evidence``): stock-outs trip per-flavor breakers (the cluster autoscaler's backoff: 5 minutes,
   doubling to 30), a failed probe backs a flavor off longer, the first new node of a flavor closes its breaker;
   node pools at their maximum size make their flavors *full*;
2. **moves** (``moves``): jobs stuck on a stocked-out flavor go to the next flavor that can take them now — never
   to a full or stocked-out one: when every plan is blocked a job stays where it loses nothing;
3. **hedge-backs** (``moves.returns``): jobs waiting on plan B because of the stock-out go back to plan A the
   moment it can take them first; and promotions: jobs Kueue put on plan B for the earlier flavors' quota in use go
   to a reservation flavor the moment its quota frees;
4. **rescue** (``rescue``): jobs Kueue deactivated for a passing lack of capacity are queued again once the
   capacity is back (bounded);
5. **steering** (``steering``): new jobs are kept off a stocked-out flavor, its quota capped to its nodes up,
   its idle nodes kept for a while.

Breakers and full flavors live in a ConfigMap (``kueue-system/flexq-fallback``), so a restarted policy remembers
them. Every action is an Event on the job naming its evidence; ``fallback.flexq.dev/moved`` says, in one line,
what happened (``flexq status`` shows it). With ``dry_run`` nothing is written: the pass returns what it would do,
and ``explain()`` says what it saw and why each job is or is not moved. Without a stock-out, a full pool or a
deactivated job, the policy writes nothing at all.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from flexq.api.gke_models import specific_reservation
from flexq.clock import format_duration
from flexq.errors import Conflict, NotFound
from flexq.fallback.api import ClusterAPI
from flexq.fallback.contention import ClassHistory
from flexq.fallback.context import PassContext
from flexq.fallback.costs import CostLedger
from flexq.fallback.decide import decide
from flexq.fallback.evidence import gather, recoveries, update_breakers, update_fulls
from flexq.fallback.forecast import ForecastJudge
from flexq.fallback.model import (
    Action,
    Breaker,
    FallbackConfig,
    Full,
)
from flexq.fallback.moves import moves, returns
from flexq.fallback.priorities import PreemptionMemory, PriorityMemory
from flexq.fallback.rescue import rescue
from flexq.fallback.steering import caps, keep_nodes, steer
from flexq.fallback.view import ClusterView
from flexq.fallback.waits import StockoutMemory, WaitMemory
from flexq.fallback.writes import Writer

__all__ = ["FallbackPolicy"]

log = logging.getLogger("flexq.fallback")
_FULL = "_full."  # state keys of full flavors (breakers are keyed by the flavor's name, which never starts with _)


class FallbackPolicy:
    """Stock-out-aware fallback over one cluster (see the module docstring)."""

    def __init__(self, api: ClusterAPI, config: FallbackConfig | None = None) -> None:
        self.api = api
        self.cfg = config or FallbackConfig()
        self.breakers: dict[str, Breaker] = {}
        self.fulls: dict[str, Full] = {}
        self.writer = Writer(api, self.cfg)
        self.last: PassContext | None = None  # the last pass (what it saw and did), for explain()
        self._loaded = False
        self._wakeups: list[float] = []
        self.waits = WaitMemory()  # each provisioning-checked flavor's waits, pass after pass
        self.priorities = PriorityMemory()  # the priorities arriving in each cohort lately
        self.preemptions = PreemptionMemory()  # the jobs Kueue preempted, until they start again
        self.stockouts = StockoutMemory()  # how long each flavor's stock-outs lasted
        self.costs = CostLedger()  # what the fallback's moves added to each priority class's bill
        self.history = ClassHistory()  # the classes' arrivals and runs (flexq.fallback.contention)
        # decide_by "forecast": judges each move by the forward run with and without it (flexq.fallback.forecast)
        self.judge = ForecastJudge(self.cfg) if self.cfg.decide_by == "forecast" else None

    # -- state -------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._loaded and self.cfg.dry_run:
            return
        data = self.api.load_state(self.cfg.state_namespace, self.cfg.state_name)
        self.breakers, self.fulls = {}, {}
        for key, text in data.items():
            try:
                if key.startswith(_FULL):
                    self.fulls[key[len(_FULL) :]] = Full(**json.loads(text))
                else:
                    self.breakers[key] = Breaker(**json.loads(text))
            except (TypeError, ValueError):
                log.warning("ignoring an unreadable fallback state entry %s", key)
        self._loaded = True

    def _state(self) -> dict[str, str]:
        # (``vars``, not ``asdict``: their fields are plain values, and this runs twice a pass)
        out = {f: json.dumps(vars(b), sort_keys=True) for f, b in sorted(self.breakers.items())}
        out.update({_FULL + f: json.dumps(vars(x), sort_keys=True) for f, x in sorted(self.fulls.items())})
        return out

    def _save(self) -> None:
        if self.cfg.dry_run:
            return
        try:
            self.api.save_state(self.cfg.state_namespace, self.cfg.state_name, self._state())
        except (Conflict, NotFound) as exc:
            log.warning("could not save the fallback state: %s", exc)

    # -- one pass ----------------------------------------------------------------------------------------------
    def run_once(self) -> list[Action]:
        """One pass over the cluster; returns what it did (or, dry, would do)."""
        self._load()
        view = ClusterView(self.api, self.cfg)
        if not view.in_scope:
            self.last = None
            return []
        before = self._state()
        ev = gather(view, self.breakers, self.cfg)
        ctx = PassContext(view, self.cfg, ev, self.breakers, self.fulls, self.writer)
        # what a flavor is expected to cost in waiting (``waits``); for a flavor behind a provisioning check (DWS)
        # that none has been seen of yet, the configured prior
        flavors = {f for cq in view.cqs for f in _provisioning_flavors_of(view, cq)}
        ctx.expected_wait = self.waits.update(view, flavors, self.cfg.provisioning_wait_prior_seconds)
        ctx.recent_priorities = self.priorities.update(view, self.cfg.priority_memory_seconds)
        ctx.preempted_jobs = self.preemptions.update(view)
        self.history.update(view)
        ctx.history = self.history
        if self.cfg.hedge_cost_budget is not None:  # the ledger reads every running pod: only when it is used
            self.costs.update(view, flavors)
        ctx.costs = self.costs
        ctx.judge = self.judge
        if self.cfg.promote and self.cfg.hedge and any(w.reserved and not w.admitted for w in view.workloads):
            # (only while a job waits for its admission checks: the GKE API is read for nothing otherwise)
            ctx.promotable = _promotable(view, self.api, self.cfg)
        if self.judge is not None:
            # every pass: a job's end is seen when it happens, not at the next forecast
            self.judge.observe(view)
        update_breakers(view, ev, self.breakers, self.cfg, ctx.actions, ctx.wakeups)
        update_fulls(view, ev, self.fulls, self.cfg, ctx.actions, ctx.wakeups)
        if self.breakers:
            for flavor, b, back in recoveries(view, self.breakers, ctx.actions):
                self.stockouts.record(flavor, back - b.since)
                w = next((x for x in view.workloads if b.probe and x.ident == b.probe), None)
                if w is not None:
                    self.writer.emit(
                        view.job(w),
                        "Normal",
                        "FallbackRecovered",
                        f"{flavor} has capacity again after {format_duration(view.now - b.since)}: new jobs use it again",
                    )
        ctx.stockout_left = {
            f: left
            for f, b in self.breakers.items()
            if (left := self.stockouts.left(f, view.now - b.since)) is not None
        }
        if self.cfg.cap_quota:
            caps(ctx)  # first: a cap lifted at the end of a backoff is quota a return may use in this pass
        moves(ctx)
        if self.cfg.hedge:
            returns(ctx)
        decide(ctx, flavors, self.stockouts.ended)
        rescue(ctx)
        steer(ctx)
        keep_nodes(ctx)
        if self._state() != before:
            self._save()
        self.last = ctx
        # each step said when something it deferred comes due (controller-runtime's RequeueAfter)
        self._wakeups = sorted(t for t in ctx.wakeups if t > ctx.now)
        return ctx.actions

    def next_wakeup(self, now: float) -> float | None:
        """The next time a pass has something to do though nothing changed (the in-twin controller and the
        ``flexq fallback`` loop wake then)."""
        due = [t for t in self._wakeups if t > now] + [
            b.until for b in self.breakers.values() if b.until > now
        ]
        return min(due) if due else None

    # -- what it saw -------------------------------------------------------------------------------------------
    def explain(self, job: str | None = None) -> list[str]:
        """What the last pass saw and why: the queues in scope, breakers, full flavors, and each in-scope job's
        place and the decision about it (for ``flexq fallback --once --dry-run``); ``job`` (a job's or a
        Workload's name, or namespace/name): only that job's line (``flexq fallback --explain JOB``)."""
        ctx = self.last
        lines: list[str] = []
        if ctx is None:
            lines.append(
                "no LocalQueue in scope: label one fallback.flexq.dev/enabled=true (or run with --all-queues)"
            )
            return lines
        view = ctx.view
        lines.append(
            "queues in scope: "
            + ", ".join(f"{ns}/{lq} -> {cq}" for (ns, lq), cq in sorted(view.queues.items()))
        )
        if not self.breakers:
            lines.append("stocked-out flavors: none")
        for f, b in sorted(self.breakers.items()):
            state = (
                f"backing off until {format_duration(b.until - view.now)} from now"
                if b.open(view.now)
                else "backoff over"
            )
            lines.append(
                f"stocked out: {f} ({b.code} since {format_duration(view.now - b.since)} ago, {b.failures} failure(s); "
                f"{state}{'; probe ' + b.probe if b.probe else ''})"
            )
        unknown = [f for f in self.cfg.promote_flavors if f not in view.flavors]
        if unknown:
            lines.append(f"promote flavors that are no ResourceFlavor (ignored): {', '.join(unknown)}")
        for f, x in sorted(self.fulls.items()):
            if not x.full:
                continue
            lines.append(
                f"full: {f} (its node pool refused to grow {format_duration(view.now - x.since)} ago at {x.nodes} nodes"
                f"{f' of {x.limit}' if x.limit else ''}; nothing is sent there until a node goes)"
            )
        shown = 0
        for w in view.workloads:
            if not w.current or (job and not _names(w, job)):
                continue
            shown += 1
            where = ", ".join(f"{ps}={'+'.join(sorted(fs))}" for ps, fs in sorted(w.assigned.items())) or "-"
            state = (
                "deactivated"
                if not w.active
                else "admitted"
                if w.admitted
                else "quota reserved"
                if w.reserved
                else "pending"
            )
            lines.append(f"  {w.key} [{state}; {where}]: {ctx.notes.get(w.key) or _default_note(ctx, w)}")
        if job and not shown:
            lines.append(f"  {job}: no job of that name waits or runs in a queue in scope")
        return lines


def _names(w: Any, job: str) -> bool:
    """Whether ``job`` (name or namespace/name, of the job or of its Workload) names the workload's job."""
    ns, _, name = job.rpartition("/")
    names = {w.name} | ({w.job[2]} if w.job is not None else set())
    return name in names and (not ns or ns == w.namespace)


def _promotable(view: ClusterView, api: ClusterAPI, cfg: FallbackConfig) -> set[str]:
    """The flavors a job waiting on plan B is promoted to when their quota frees: those named in
    ``promote_flavors``, and those whose node pool (the flavor's ``cloud.google.com/gke-nodepool`` label) consumes a
    specific reservation, as the GKE API lists the pools (where the fallback can read it: the twin)."""
    out = {f for f in cfg.promote_flavors if f in view.flavors}
    by_pool: dict[str, set[str]] = {}
    for f in view.flavors:
        if view.pool_of(f):
            by_pool.setdefault(view.pool_of(f), set()).add(f)
    if by_pool:
        for pool in api.node_pools():
            if pool.get("name") in by_pool and specific_reservation(pool.get("config")) is not None:
                out |= by_pool[pool["name"]]
    return out


def _provisioning_flavors_of(view: ClusterView, cq_name: str) -> list[str]:
    cq = view.cqs.get(cq_name) or {}
    strategy = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    return [
        f
        for r in strategy
        if view.check_classes.get(r.get("name", "")) is not None
        for f in r.get("onFlavors") or []
    ]


def _default_note(ctx: PassContext, w: Any) -> str:
    stuck = ctx.evidence.stuck.get(w.key)
    if stuck:
        return f"pods refused capacity on {', '.join(sorted(stuck))}"
    if not ctx.breakers:
        return "nothing to do (no stock-out)"
    return "not on a stocked-out flavor"
