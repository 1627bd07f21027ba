"""Rescue: a job Kueue gave up on for a passing lack of capacity is queued again when the capacity is back.

Kueue deactivates a Workload whose provisioning admission check was Rejected — for DWS, after
``retryStrategy.backoffLimitCount`` failed ProvisioningRequests — and nobody reactivates it: the job never runs
(kueue#5129: users delete the Workload by hand). When the check failed for a transient capacity reason (the
node pool at its maximum size, ``NodepoolSizeReached``; capacity not found; a stock-out; GCE quota; the booking
expired), the fallback requeues the job once the capacity is back: the flavor the check runs on is neither full
(its pool has had a node go away) nor stocked out. A job the fallback had moved off a stocked-out flavor goes
back to that flavor as soon as it is back instead (its restriction lifted), without the backoff. It deletes the deactivated Workload (the job stays
suspended; Kueue's job framework makes a new Workload from it, with fresh admission checks), after writing the
rescue on the job (``fallback.flexq.dev/rescue``) and with an Event naming the evidence. Bounded: at most
``max_rescues`` per job, ``rescue_backoff_seconds`` (doubling) after each deactivation, one job per flavor per
pass, in Kueue's order (higher priority first, then the oldest deactivation); only jobs of LocalQueues in scope.
A job of a lower class than others of its cohort is not requeued while, where Kueue would admit it now, it would
likely hold room a higher class's job arriving during its run needs (``contention``): without the fallback it
would not run at all, so holding it back loses nothing the configuration had.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from flexq.api.reasons import classify_capacity
from flexq.clock import parse_time_or_none
from flexq.fallback.affinity import restricted_flavors
from flexq.fallback.contention import blocks, landing, sets_on
from flexq.fallback.context import PassContext
from flexq.fallback.forecast import Candidate
from flexq.fallback.model import ANN_MOVE, ANN_MOVED, ANN_RESCUE
from flexq.fallback.priorities import ahead
from flexq.fallback.records import move_state
from flexq.fallback.view import WorkloadView

__all__ = ["rescue", "rescue_state", "transient_reason", "RESCUE_DEFER_MAX_SECONDS"]

# deciding by forecast, a rescue waits while it would delay a job of a higher priority — at most this long past
# its due time: a job otherwise lost is then requeued whatever the forecast says (no job is lost to a forecast)
RESCUE_DEFER_MAX_SECONDS = 2 * 3600.0

_BOOKING = ("booking expired", "booking for the provisioning request has expired", "bookingexpired")


def rescue_state(job: Mapping[str, Any] | None) -> dict[str, Any]:
    text = ((job or {}).get("metadata", {}).get("annotations") or {}).get(ANN_RESCUE)
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def transient_reason(message: str) -> str | None:
    """The transient capacity reason in Kueue's deactivation message (None: not one to retry)."""
    refusal = classify_capacity(message)
    if refusal is not None and refusal.kind in ("pool-max", "stockout", "quota"):
        return refusal.code
    low = message.lower()
    if any(b in low for b in _BOOKING):
        return "BookingExpired"
    return None


def _deactivation(w: WorkloadView) -> tuple[float, str] | None:
    """When and why Kueue deactivated the workload for its admission checks (None: not that)."""
    if w.active:
        return None
    c = w.condition("Evicted")
    if c is None or c.get("status") != "True" or not str(c.get("reason", "")).startswith("Deactivated"):
        return None
    if "AdmissionCheck" not in str(c.get("reason", "")) and "Admission check" not in (c.get("message") or ""):
        return None
    return parse_time_or_none(c.get("lastTransitionTime")) or 0.0, c.get("message") or ""


def _check_flavors(ctx: PassContext, w: WorkloadView) -> list[str]:
    cq = ctx.view.cqs.get(w.cq) or {}
    strategy = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    out: list[str] = []
    for r in strategy:
        if ctx.view.check_classes.get(r.get("name", "")) is not None:
            out += [f for f in r.get("onFlavors") or [] if f not in out]
    return out


def _back_to_plan_a(
    ctx: PassContext, w: WorkloadView, job: Mapping[str, Any], reason: str, message: str, attempts: int
) -> bool:
    """A job the fallback moved off a stocked-out flavor that the next flavor then refused (Kueue deactivated it:
    DWS's pool at its maximum) goes back to the flavor it was moved from as soon as that flavor is back (its
    breaker closed, not full): the restriction lifted and the Workload deleted, Kueue queues it again in its own
    order — without waiting for the next flavor's room, nor for the rescue's backoff. True: done (or in hand)."""
    move = move_state(job)
    back = str(move.get("from") or "")
    if move.get("step") != "moved" or not back or back not in restricted_flavors(job, ctx.view.flavors):
        return False
    if back in ctx.breakers or ctx.full(back) or back in ctx.returning:
        return False
    ctx.returning.add(back)
    ctx.touched.add(w.job)
    why = f"{back} is back"
    ctx.act(
        "rescue",
        w.key,
        f"Kueue deactivated it ({reason}) on {move.get('to', '')}; {why}: requeued for {back}",
    )
    record = {"attempts": attempts + 1, "at": ctx.now, "reason": reason, "workload": w.name}
    msg = f"{move.get('to', '')} refused it ({reason}) and {why} → moved back to {back}"
    if ctx.writer.unrestrict(
        job,
        ctx.view.flavors,
        [back],
        {
            ANN_RESCUE: json.dumps(record, sort_keys=True),
            ANN_MOVE: json.dumps({**move, "step": "returned", "at": ctx.now}, sort_keys=True),
            ANN_MOVED: msg,
        },
    ):
        ctx.writer.counts["rescue"] += 1
        ctx.writer.delete_workload(w)
        ctx.writer.emit(
            job,
            "Normal",
            "FallbackRescued",
            f"Kueue deactivated the workload ({message[:300]}); {why}: requeued for {back}",
        )
    return True


def rescue(ctx: PassContext) -> None:
    """See the module docstring."""
    cfg = ctx.cfg
    # a deactivated workload may come due at any step of its back-off ladder: a pass then (the passes' times
    # are part of the policy's behaviour: it sees a job stuck from the first pass that looks)
    for w in ctx.view.workloads:
        if not w.active:
            c = w.condition("Evicted")
            t = parse_time_or_none(c.get("lastTransitionTime") if c else None)
            if t is not None:
                ctx.wakeups.extend(t + cfg.rescue_backoff_seconds * 2**n for n in range(cfg.max_rescues))
    if not cfg.rescue:
        return
    found: list[tuple[float, WorkloadView, Mapping[str, Any], str, str]] = []
    for w in ctx.view.workloads:
        if w.job is None or not w.current or w.job in ctx.touched:
            continue
        d = _deactivation(w)
        if d is None:
            continue
        job = ctx.view.job(w)
        if job is None or move_state(job).get("step") in ("deactivating", "returning"):
            continue  # the fallback's own move, not Kueue's verdict
        reason = transient_reason(d[1])
        if reason is None:
            continue
        found.append((d[0], w, job, reason, d[1]))
    busy: set[str] = set()
    ctx.returning = set()  # flavors a job goes back to in this pass (one per flavor)
    # Kueue's order: higher priority first, then the earliest deactivation
    for when, w, job, reason, message in sorted(found, key=lambda t: (-t[1].priority, t[0], t[1].key)):
        state = rescue_state(job)
        attempts = int(state.get("attempts") or 0)
        if attempts >= cfg.max_rescues:
            if not state.get("gaveUp"):
                ctx.act("give-up", w.key, f"rescued {attempts} times already; left deactivated")
                ctx.writer.annotate(job, {ANN_RESCUE: json.dumps({**state, "gaveUp": True}, sort_keys=True)})
                ctx.writer.emit(
                    job,
                    "Warning",
                    "FallbackGaveUp",
                    f"Kueue deactivated the workload again ({message[:300]}); rescued {attempts} times already, "
                    "left deactivated",
                )
            continue
        if _back_to_plan_a(ctx, w, job, reason, message, attempts):
            continue
        if ctx.now - when < cfg.rescue_backoff_seconds * 2**attempts:
            continue
        flavors = _check_flavors(ctx, w) or sorted({f for fs in w.assigned.values() for f in fs})
        blocked = [f for f in flavors if ctx.blocked(f)]
        if flavors and len(blocked) == len(flavors):
            continue  # the capacity is not back yet
        first = next(((f, a) for f in flavors for a in ahead(ctx, w, f)), None)
        if first is not None:
            ctx.note(
                w,
                f"deactivated by Kueue ({reason}); not requeued yet: {first[1][0].key} (priority "
                f"{first[1][0].priority} > {w.priority}) is {first[1][1]}",
            )
            continue
        key = ",".join(flavors)
        if key in busy:
            continue
        # (Kueue admits the requeued job on the first flavor with room for it, not necessarily the check's)
        into = landing(ctx, w, job)
        if into is not None and blocks(ctx, w, into, w.pod_set_needs(sets_on(ctx, w, into)), "requeued"):
            continue
        busy.add(key)
        free = [f for f in flavors if f not in blocked]
        why = (
            f"{', '.join(free)} can take it again ({'room in its node pool' if reason == 'NodepoolSizeReached' else 'capacity back'})"
            if free
            else "its capacity is back"
        )
        due = when + cfg.rescue_backoff_seconds * 2**attempts
        if ctx.by_forecast and ctx.now - due < RESCUE_DEFER_MAX_SECONDS:
            # the forecast says when: not while it would make a job of a higher priority start later (a job
            # otherwise lost is requeued all the same once RESCUE_DEFER_MAX_SECONDS have passed)
            ctx.propose(
                Candidate(
                    "rescue",
                    w,
                    job,
                    flavors[0] if flavors else "",
                    free[0] if free else (flavors[0] if flavors else ""),
                    [],
                    run=partial(_requeue, ctx, w, job, reason, message, attempts, why),
                )
            )
            continue
        ctx.touched.add(w.job)
        _requeue(ctx, w, job, reason, message, attempts, why)


def _requeue(
    ctx: PassContext,
    w: WorkloadView,
    job: Mapping[str, Any],
    reason: str,
    message: str,
    attempts: int,
    why: str,
) -> None:
    """Requeue a job Kueue deactivated: the rescue written on the job, its deactivated Workload deleted (Kueue
    makes a new one from the job), an Event."""
    cfg = ctx.cfg
    ctx.act(
        "rescue",
        w.key,
        f"Kueue deactivated it ({reason}); {why}: requeued ({attempts + 1}/{cfg.max_rescues})",
    )
    record = {"attempts": attempts + 1, "at": ctx.now, "reason": reason, "workload": w.name}
    if not ctx.writer.annotate(job, {ANN_RESCUE: json.dumps(record, sort_keys=True)}):
        return
    ctx.writer.counts["rescue"] += 1
    ctx.writer.delete_workload(w)
    ctx.writer.emit(
        job,
        "Normal",
        "FallbackRescued",
        f"Kueue deactivated the workload ({message[:300]}); {why}: requeued, rescue {attempts + 1} of "
        f"{cfg.max_rescues}",
    )
