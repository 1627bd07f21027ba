"""How a job goes back to an earlier flavor (a hedge-back, a probe back, a promotion), shared by the moves and
the promotions: whether the flavor's room is kept for jobs of higher priority (``kept_for_higher``), whether the
job waits on plan B with nothing started (``waiting_on_plan_b``), and the two steps of the return — deactivated
(``start_return``), then, once Kueue has evicted it, its restriction lifted and its Workload deleted so Kueue admits
a new one scanning the flavors in order again (``finish_return``). A job sent back is given
``RETURN_SETTLE_SECONDS`` to be re-admitted before the next one goes to that flavor."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flexq.clock import format_duration
from flexq.fallback.context import PassContext
from flexq.fallback.model import ANN_MOVE, ANN_MOVED
from flexq.fallback.priorities import ahead, higher_seen
from flexq.fallback.records import suspended
from flexq.fallback.view import WorkloadView
from flexq.semantics.conditions import is_true
from flexq.semantics.pods import is_terminal

__all__ = ["RETURN_SETTLE_SECONDS", "kept_for_higher", "waiting_on_plan_b", "start_return", "finish_return"]

RETURN_SETTLE_SECONDS = 60.0  # a job sent back is given this long to be re-admitted before the next one goes


def kept_for_higher(ctx: PassContext, w: WorkloadView, flavor: str, move: Mapping[str, Any]) -> bool:
    """Whether ``flavor``'s room is kept from ``w`` for higher-priority jobs (``priorities``): one waits for it
    now, or one arrived in its cohort lately and plan A's room is what the next arrival gets. Also (``costs``):
    whether its class has spent its budget of hedges back — the fallback's moves have made its running jobs
    ``hedge_cost_budget`` dearer than without them already."""
    budget = ctx.cfg.hedge_cost_budget
    if budget is not None and not ctx.costs.affordable(w.priority, budget):
        ctx.note(
            w,
            f"not sent back to {flavor}: {ctx.costs.describe(w.priority)}, the most the fallback spends "
            f"({budget:.0%}) to make a class wait less; it stays on plan B, as without the "
            "fallback",
        )
        return True
    blockers = ahead(ctx, w, flavor)
    if blockers:
        x, how = blockers[0]
        ctx.note(
            w,
            f"{flavor} could take it back, but {x.key} (priority {x.priority} > {w.priority}) is {how}: Kueue "
            f"admits it first, so this job is not sent back ahead of it",
        )
        return True
    # a job the fallback moved or steered off the flavor held (or would have held) its quota there before those
    # arrivals: without the fallback it would be there, waiting for the flavor to come back, so going back takes
    # nothing from them. Only a job Kueue itself put on plan B (``hedged``) keeps plan B for their sake.
    # (decided by forecast, the arrivals the cluster has seen are in the forward run: no memory is needed)
    seen = higher_seen(ctx, w) if move.get("hedged") and not ctx.by_forecast else None
    if seen is not None:
        ctx.note(
            w,
            f"not sent back to {flavor}: a job of priority {seen[0]} (> {w.priority}) arrived in its cohort "
            f"{format_duration(ctx.now - seen[1])} ago, and {flavor}'s room is what the next one gets at once; "
            f"it stays on plan B, as without the fallback",
        )
        return True
    return False


def waiting_on_plan_b(ctx: PassContext, w: WorkloadView, job: Mapping[str, Any], flavor: str) -> bool:
    """Quota reserved on another flavor, not admitted yet (its provisioning request not granted), the job
    suspended and without pods: nothing has started, nothing is lost but the place in plan B's queue."""
    if not w.reserved or not w.active:
        return False
    if w.admitted or is_true(w.obj, "PodsReady") or not suspended(job):
        return False
    if any(flavor in fs for fs in w.assigned.values()):
        return False
    if any(c.get("state") == "Ready" for c in w.checks()):
        return False
    return not any(not is_terminal(p) for p in w.pods)


def start_return(
    ctx: PassContext, w: WorkloadView, job: Mapping[str, Any], move: dict[str, Any], why: str
) -> None:
    flavor, target = move.get("from", ""), move.get("to", "")
    ctx.act("return", w.key, f"{why}: deactivating {w.name} to move it back")
    ctx.wakeups.append(ctx.now + RETURN_SETTLE_SECONDS)  # the return settles (or not) within this
    back = {
        **move,
        "step": "returning",
        "at": ctx.now,
        "workload": w.name,
        "workloadUID": w.uid,
        "returns": int(move.get("returns") or 0) + 1,
    }
    if ctx.writer.deactivate(job, w, back):
        ctx.writer.emit(
            job,
            "Normal",
            "FallbackReturning",
            f"{why} while {target} has not provisioned yet: moving the job {'' if move.get('promoted') else 'back '}to {flavor}",
        )


def finish_return(ctx: PassContext, w: WorkloadView, job: Mapping[str, Any], move: dict[str, Any]) -> None:
    """Deactivated to go back: once Kueue has evicted it, lift the restriction and delete the Workload (Kueue makes a
    new one from the job and scans the flavors in order again)."""
    if w.reserved or not suspended(job):
        return
    flavor, target = move.get("from", ""), move.get("to", "")
    msg = f"{flavor} can take it before {target} provisioned → moved {'' if move.get('hedged') else 'back '}to {flavor}"
    ctx.act("returned", w.key, msg)
    ctx.wakeups.append(ctx.now + RETURN_SETTLE_SECONDS)
    ok = ctx.writer.unrestrict(
        job,
        ctx.view.flavors,
        [flavor],
        {ANN_MOVE: json.dumps({**move, "step": "returned", "at": ctx.now}, sort_keys=True), ANN_MOVED: msg},
    )
    if ok:
        ctx.writer.counts["return"] += 1
        ctx.writer.delete_workload(w)
        ctx.writer.emit(job, "Normal", "FallbackReturned", msg)
