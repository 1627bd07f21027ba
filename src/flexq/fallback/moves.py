"""Moves off a stocked-out flavor, and hedge-backs to it.

**Moves**: a workload admitted on a stocked-out flavor whose pods there have not started and were themselves
refused capacity (the breaker alone moves nothing: the stock-out may be over) is deactivated; once Kueue has
evicted it (quota released, job suspended) the job's pod templates of that flavor get ``<flavor label> NotIn
[<value>]`` and the evicted Workload is deleted, so Kueue makes a new one from the job and admits it on the next
flavor. Only to a flavor that can take it now (``PassContext.next_flavor``: not stocked out, not full, its quota
free): when every plan is blocked the job stays where it loses nothing. Each step is written to the job's
``fallback.flexq.dev/move`` annotation before it is taken, so a pass that dies half-way is finished by the next
one, and a workload is never reactivated (no double admission).

**Hedge back**: a job waiting for plan B because of the stock-out (moved, or put there by Kueue while the flavor
was out) whose plan-B provisioning has not been granted (not admitted, suspended, no pod) goes back to the flavor
the moment the flavor can take it first: its quota is free and its nodes up and idle fit the job as
kube-scheduler would place it, or its breaker has closed. Oldest first, one at a time per flavor. Its wait is the
sooner of the two plans, with pods on one only.

**Promotion** (``promotion``, capacity tiers): a job Kueue itself put on plan B because a reservation's quota was
in use goes to the reservation as soon as its quota frees. The return's two steps, shared by both, are in
``returning``.

**Contention** (``contention``): a job of a lower class than others of its cohort is not moved onto a flavor, nor
sent back to one Kueue had not put it on, while the history says a higher class's job will likely arrive during
its run and find that room taken (and could not take it back).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import partial
from typing import Any

from flexq.clock import format_duration, format_time, parse_time_or_none
from flexq.fallback import promotion
from flexq.fallback.affinity import restricted_flavors
from flexq.fallback.contention import blocks
from flexq.fallback.context import PassContext
from flexq.fallback.forecast import Candidate
from flexq.fallback.model import ANN_MOVE, ANN_MOVED
from flexq.fallback.priorities import affects, ahead, by_priority
from flexq.fallback.records import move_state, saved_quotas, suspended
from flexq.fallback.returning import (
    RETURN_SETTLE_SECONDS,
    finish_return,
    kept_for_higher,
    start_return,
    waiting_on_plan_b,
)
from flexq.fallback.view import WorkloadView

__all__ = ["moves", "returns"]


def _nodes_needed(w: WorkloadView, sets: list[str]) -> int:
    return sum(count for count, _t in w.pod_set_needs(sets))


def moves(ctx: PassContext) -> None:
    view, cfg = ctx.view, ctx.cfg
    for w in by_priority(view.workloads):  # a higher-priority job is moved first
        job = view.job(w)
        if job is None or w.job is None:
            continue
        move = move_state(job)
        step = move.get("step")
        if step in ("deactivating", "returning"):
            # the step belongs to the Workload it names; if that one is gone, to the job's current one
            named = move.get("workloadUID") or ""
            if named == w.uid or (w.current and named not in view.uids_of_job.get(w.job, set())):
                ctx.touched.add(w.job)
                if step == "deactivating":
                    _finish_move(ctx, w, job, move)
                else:
                    finish_return(ctx, w, job, move)
            continue
        if (
            step in ("moved", "returned")
            and move.get("workloadUID") == w.uid
            and not w.active
            and not w.reserved
            and not cfg.dry_run
        ):
            # moved, but the pass that restricted the job died before deleting the evicted Workload
            ctx.writer.delete_workload(w)
            continue
        if not w.current or w.job in ctx.touched or not w.assigned or not w.reserved or not w.active:
            continue
        for _ps, flavors in sorted(w.assigned.items()):
            tripped = sorted(f for f in flavors if f in ctx.breakers and ctx.breakers[f].probe != w.ident)
            if not tripped:
                continue
            flavor = tripped[0]
            refused = flavor in ctx.evidence.stuck.get(w.key, ())
            if view.started(w, flavor, refused) and not cfg.move_started:
                # (nor is it a probe: pods already on nodes say nothing about new capacity)
                ctx.note(w, f"on stocked-out {flavor} but its pods started there: never moved")
                continue
            if probe(ctx, flavor, w):
                ctx.note(w, f"the probe of {flavor}: it stays to see whether {flavor} is back")
                continue
            if flavor not in ctx.evidence.stuck.get(w.key, ()):
                # its own pods have not been refused capacity (yet): it may well get nodes
                ctx.note(w, f"on stocked-out {flavor}, but its own pods were not refused capacity (yet)")
                continue
            if "afterPreemption" in move and move["afterPreemption"] == ctx.preempted_jobs.get(w.job):
                # moved once already since Kueue preempted it: no second move for that preemption
                ctx.note(
                    w,
                    f"on stocked-out {flavor}, but the fallback moved it once since Kueue preempted it: it stays "
                    f"where Kueue puts it (no job moved twice because of one preemption)",
                )
                continue
            sets = sorted(p for p, fs in w.assigned.items() if flavor in fs)
            target = ctx.next_flavor(w, {flavor}, _nodes_needed(w, sets))
            waited = ctx.now - ctx.evidence.stuck_since.get(w.key, ctx.now)
            if target is not None and not ctx.by_forecast and not ctx.worth_moving(target, waited, flavor):
                expected = ctx.expected_wait.get(target, 0.0)
                if waited < expected:
                    ctx.wakeups.append(ctx.now - waited + expected)
                    ctx.note(
                        w,
                        f"stuck on stocked-out {flavor} for {format_duration(waited)}; {target} provisions in about "
                        f"{format_duration(expected)}: it waits here until it has lost that much",
                    )
                else:
                    ctx.wakeups.append(ctx.now + ctx.stockout_left[flavor])
                    ctx.note(
                        w,
                        f"stuck on stocked-out {flavor} for {format_duration(waited)}; its stock-outs so far ended "
                        f"about {format_duration(ctx.stockout_left[flavor])} after this one's age, sooner than "
                        f"{target} provisions (about {format_duration(expected)}): it waits here",
                    )
                continue
            if target is None or not view.quota_free(w.cq, target, w.pod_set_needs(sets)):
                blocked = sorted(f for f in view.flavors if ctx.full(f) or f in ctx.breakers)
                ctx.note(
                    w,
                    f"stuck on stocked-out {flavor}, but no later flavor can take it now "
                    f"(blocked: {', '.join(blocked) or 'no quota'}): it waits where it loses nothing",
                )
                continue
            blockers = ahead(ctx, w, target)
            if blockers:
                x, how = blockers[0]
                ctx.note(
                    w,
                    f"stuck on stocked-out {flavor}, but {x.key} (priority {x.priority} > {w.priority}) is {how} "
                    f"for {target}: Kueue admits it first, so this job is not moved ahead of it",
                )
                continue
            if blocks(ctx, w, target, w.pod_set_needs(sets), "moved"):
                continue  # (a lower class: the room it would hold is what the classes above it need)
            if ctx.by_forecast:
                # the forecast decides (flexq.fallback.decide): the move is made if it helps the job and delays
                # no one of its class or above
                ctx.propose(
                    Candidate(
                        "move",
                        w,
                        job,
                        flavor,
                        target,
                        sets,
                        run=partial(_start_move, ctx, w, job, flavor, target, sets),
                    )
                )
                break
            ctx.note(
                w,
                f"stuck on stocked-out {flavor}: {'would move' if cfg.dry_run else 'moving'} to {target} "
                f"({affects(ctx, w, target, frees=flavor)})",
            )
            ctx.touched.add(w.job)
            _start_move(ctx, w, job, flavor, target, sets)
            break


def probe(ctx: PassContext, flavor: str, w: WorkloadView) -> bool:
    """Once the flavor's backoff has ended, one workload tries it (True: ``w`` is that probe)."""
    b = ctx.breakers[flavor]
    if b.open(ctx.now):
        return False
    if b.probe == w.ident:
        return True
    if b.probe and any(x.ident == b.probe for x in ctx.view.workloads):
        return False
    make_probe(ctx, flavor, w)
    return True


def make_probe(ctx: PassContext, flavor: str, w: WorkloadView) -> None:
    b = ctx.breakers[flavor]
    b.probe = w.ident
    ctx.act("probe", w.key, f"{flavor}'s backoff ended: {w.key} tries it")
    ctx.writer.emit(
        ctx.view.job(w),
        "Normal",
        "FallbackProbe",
        f"{flavor} was stocked out ({b.code}); this job checks whether it is back",
    )


def _start_move(
    ctx: PassContext, w: WorkloadView, job: Mapping[str, Any], flavor: str, target: str, sets: list[str]
) -> None:
    b = ctx.breakers[flavor]
    why = f"{flavor} stocked out ({b.code}) for {format_duration(ctx.now - b.since)}"
    ctx.act("evict", w.key, f"{why}: deactivating {w.name} to move it to {target}")
    prev = move_state(job)
    record = {
        **({"probes": prev["probes"]} if prev.get("probes") else {}),
        # what the job had lost on the stocked-out flavor: how long it may wait on the next before it probes back
        "lost": round(ctx.now - ctx.evidence.stuck_since.get(w.key, ctx.now), 3),
        "expected": round(ctx.expected_wait.get(target, 0.0), 3),  # what the next flavor was expected to cost
        "from": flavor,
        "to": target,
        "podSets": sets,
        "step": "deactivating",
        "code": b.code,
        "since": b.since,
        "at": ctx.now,
        "workload": w.name,
        "workloadUID": w.uid,
    }
    if w.job in ctx.preempted_jobs:
        # Kueue preempted it and it has not started since: this is the one move that preemption allows (none
        # back, none again until it has started)
        record["afterPreemption"] = ctx.preempted_jobs[w.job]
    if ctx.writer.deactivate(job, w, record):
        ctx.writer.emit(
            job,
            "Warning",
            "FallbackEvicting",
            f"{flavor} stocked out: {b.code} since {_clock(b.since)}; deactivating the workload to move it to "
            f"{target}",
        )


def _clock(epoch: float) -> str:
    return format_time(epoch)


def _finish_move(ctx: PassContext, w: WorkloadView, job: Mapping[str, Any], move: dict[str, Any]) -> None:
    """Deactivated: once Kueue has evicted it and suspended the job, restrict the job and delete the Workload."""
    if w.reserved or not suspended(job):
        return  # Kueue has not evicted it yet
    flavor, target = move.get("from", ""), move.get("to", "")
    since = float(move.get("since") or ctx.now)
    msg = f"{flavor} stocked out ({move.get('code', '')} since {_clock(since)}) → moved to {target}"
    ctx.act("move", w.key, msg)
    ok = ctx.writer.restrict(
        job,
        ctx.view.flavors,
        flavor,
        move.get("podSets") or [],
        {ANN_MOVE: json.dumps({**move, "step": "moved", "at": ctx.now}, sort_keys=True), ANN_MOVED: msg},
    )
    if ok:
        ctx.writer.counts["move"] += 1
        ctx.writer.delete_workload(w)
        ctx.writer.emit(job, "Normal", "FallbackMoved", msg)


# -- hedge: back to plan A -----------------------------------------------------------------------------------------
def returns(ctx: PassContext) -> None:
    """See the module docstring."""
    view, cfg = ctx.view, ctx.cfg
    waiting: list[tuple[float, str, WorkloadView, Mapping[str, Any], dict[str, Any]]] = []
    busy: set[str] = set()  # flavors with a return in flight
    # (for promotions, also those of the returns this pass's moves step finished: their jobs' new Workloads are
    # about to take the flavor's quota)
    landing: set[str] = set()
    for w in view.workloads:
        if w.job is None or not w.current:
            continue
        job = view.job(w)
        if job is None:
            continue
        move = move_state(job)
        flavor = move.get("from", "")
        if w.job in ctx.touched:
            if ctx.promotable and move.get("step") == "returning":
                landing.add(flavor)
            continue
        if move.get("step") == "returning" or (
            move.get("step") == "returned"
            and ctx.now - float(move.get("at") or 0.0) < RETURN_SETTLE_SECONDS
            and not any(flavor in fs for fs in w.assigned.values())
        ):
            busy.add(flavor)
            continue
        submitted = parse_time_or_none(job["metadata"].get("creationTimestamp")) or 0.0
        if move.get("step") == "moved" and (
            move.get("hedged") or flavor in restricted_flavors(job, view.flavors)
        ):
            if w.preempted or w.job in ctx.preempted_jobs:
                # Kueue preempted it where the move put it (or on its way back), or before the move: it stays
                # where Kueue puts it
                ctx.note(w, f"Kueue preempted this job: never sent back to {flavor} (no fight with Kueue)")
            elif waiting_on_plan_b(ctx, w, job, flavor):
                waiting.append((submitted, w.key, w, job, move))
            continue
        if (
            cfg.hedge_queued
            and move.get("step") in (None, "returned")
            and not w.preempted
            and w.job not in ctx.preempted_jobs
        ):
            # placed on a later flavor by Kueue itself (the first one's quota in use, or capped) while the first one
            # is stocked out: it waits for plan B because of the stock-out, so it gets a ticket back, like a moved job
            hedge = _hedge_candidate(ctx, w)
            if hedge is not None and waiting_on_plan_b(ctx, w, job, hedge["from"]):
                hedge["at"] = ctx.now
                if hedge["from"] in saved_quotas(view.cqs.get(w.cq)):
                    hedge["capped"] = True  # the fallback's cap put it on plan B, not plan A's quota in use
                if not ctx.writer.annotate(job, {ANN_MOVE: json.dumps(hedge, sort_keys=True)}):
                    continue
                waiting.append((submitted, w.key, w, job, hedge))
                continue
        if ctx.promotable and move.get("step") in (None, "returned") and not w.preempted:
            # placed on plan B by Kueue, an earlier flavor's quota in use: promoted when a reservation's quota frees
            promo = promotion.candidate(ctx, w)
            if (
                promo is not None
                and w.job not in ctx.preempted_jobs
                and waiting_on_plan_b(ctx, w, job, promo["from"])
            ):
                waiting.append((submitted, w.key, w, job, promo))
    # Kueue's order: higher priority first, then the earlier queue-order timestamp (the oldest first)
    waiting.sort(key=lambda t: (-t[2].priority, t[0], t[1]))
    for _at, _key, w, job, move in waiting:
        if move.get("promoted"):
            promotion.promote(ctx, w, job, move, busy, landing)
            continue
        flavor = move["from"]
        if flavor in busy or ctx.full(flavor):
            continue
        sets = [p for p in move.get("podSets") or [] if p]
        needs = w.pod_set_needs(sets)
        if not needs or not view.quota_free(w.cq, flavor, needs):
            continue
        if kept_for_higher(ctx, w, flavor, move) or _contended(ctx, w, flavor, needs, move, "sent back"):
            continue
        b = ctx.breakers.get(flavor)
        if b is None:
            why = f"{flavor} is no longer stocked out"
        elif view.fits_free_nodes(flavor, w, sets, ctx.promises):
            why = f"{flavor} has idle nodes for it"
        else:
            continue
        if ctx.by_forecast:
            busy.add(flavor)
            ctx.propose(Candidate.back(w, job, flavor, sets, partial(start_return, ctx, w, job, move, why)))
            continue
        ctx.note(
            w, f"{why}: {'would send' if cfg.dry_run else 'sending'} it back ({affects(ctx, w, flavor)})"
        )
        busy.add(flavor)
        ctx.touched.add(w.job)
        start_return(ctx, w, job, move, why)
    # the backoff has ended and no job is trying the flavor: the job that has probed least, and of those the one
    # that started waiting for plan B last (it loses least: its place at the back of plan B's queue), tries it
    if not cfg.probe_from_plan_b and not cfg.probe_back:
        return
    # (of equal priority: the one that has probed least, then the one that started waiting last)
    by_probe = sorted(waiting, key=lambda t: (-t[2].priority, int(t[4].get("probes") or 0), -t[0], t[1]))
    for _at, _key, w, job, move in by_probe:
        if move.get("promoted"):
            continue
        flavor = move["from"]
        b = ctx.breakers.get(flavor)
        if flavor in busy or w.job in ctx.touched or b is None or b.open(ctx.now) or ctx.full(flavor):
            continue
        if not cfg.probe_from_plan_b and not ctx.by_forecast:
            # probe back only once the wait on plan B has cost what the job had lost on plan A (doubling)
            due = float(move.get("at") or ctx.now) + _probe_back_after(move)
            if ctx.now < due:
                ctx.wakeups.append(due)
                continue
        if b.probe and any(x.ident == b.probe for x in view.workloads):
            continue
        needs = w.pod_set_needs([p for p in move.get("podSets") or [] if p])
        if not needs or not view.quota_free(w.cq, flavor, needs) or kept_for_higher(ctx, w, flavor, move):
            continue
        if _contended(ctx, w, flavor, needs, move, "sent back as the probe"):
            continue
        busy.add(flavor)
        if ctx.by_forecast:
            sets = [p for p in move.get("podSets") or [] if p]
            ctx.propose(Candidate.back(w, job, flavor, sets, partial(_probe_back, ctx, w, job, move, flavor)))
            continue
        ctx.touched.add(w.job)
        _probe_back(ctx, w, job, move, flavor)


def _contended(
    ctx: PassContext,
    w: WorkloadView,
    flavor: str,
    needs: list[tuple[int, dict[str, Any]]],
    move: Mapping[str, Any],
    what: str,
) -> bool:
    """A job going back to ``flavor`` is held back for the classes above it (``contention``) only if Kueue itself
    put it on plan B (``hedged``): a job the fallback moved off the flavor would have been there, waiting for the
    flavor to come back, without the fallback — its return takes nothing from the jobs arriving since."""
    return bool(move.get("hedged")) and blocks(ctx, w, flavor, needs, what)


def _probe_back(
    ctx: PassContext, w: WorkloadView, job: Mapping[str, Any], move: dict[str, Any], flavor: str
) -> None:
    make_probe(ctx, flavor, w)
    start_return(
        ctx, w, job, {**move, "probes": int(move.get("probes") or 0) + 1}, f"{flavor}'s backoff ended"
    )


PROBE_BACK_MIN_SECONDS = 1800.0  # the cluster autoscaler's longest backoff


def _probe_back_after(move: Mapping[str, Any]) -> float:
    """How long a moved job waits on plan B before it goes back as plan A's probe: until plan B has proved slower
    than the move bet on — twice what it was expected to cost, and at least what the job had lost on plan A and
    30 minutes — doubled per probe (so the probes a long stock-out costs are few: log2 of its length)."""
    base = PROBE_BACK_MIN_SECONDS
    for key, factor in (("lost", 1.0), ("expected", 2.0)):
        v = move.get(key)
        if isinstance(v, int | float) and math.isfinite(v):
            base = max(base, factor * float(v))
    return base * 2 ** min(int(move.get("probes") or 0), 10)


def _hedge_candidate(ctx: PassContext, w: WorkloadView) -> dict[str, Any] | None:
    """For a workload Kueue put on a later flavor of a resource group whose earlier flavor is stocked out: the
    move record of a hedge back to that earlier flavor (None if there is none)."""
    for cur, before, sets in w.later_placements(ctx.view.cqs.get(w.cq) or {}):
        earlier = [f for f in before if f in ctx.breakers and ctx.view.flavors.get(f)]
        if earlier:
            return {"from": earlier[0], "to": cur, "podSets": sets, "step": "moved", "hedged": True}
    return None
