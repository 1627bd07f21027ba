"""**Promotion** (capacity tiers, kueue#15500): a job Kueue itself put on plan B because the earlier flavors' quota
was in use, whose plan-B provisioning has not been granted, goes to the first earlier flavor that is promotable
(``PassContext.promotable``: its node pool consumes a specific reservation, or the user named it) as soon as that
flavor's quota is free for it — a reservation is paid for whether used or not. As a hedge back (``moves.returns``
collects the candidates in Kueue's order and calls ``promote``): one job at a time per flavor, higher priority
first then the oldest, never ahead of a job of higher priority waiting for the flavor; deactivated, then its
Workload deleted so Kueue admits a new one on the flavor (``returning``)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from flexq.fallback.contention import blocks
from flexq.fallback.context import PassContext
from flexq.fallback.forecast import Candidate
from flexq.fallback.priorities import affects
from flexq.fallback.returning import kept_for_higher, start_return
from flexq.fallback.view import WorkloadView
from flexq.semantics.selectors import flavor_matches_affinity

__all__ = ["candidate", "promote"]


def candidate(ctx: PassContext, w: WorkloadView) -> dict[str, Any] | None:
    """For a workload Kueue put on a later flavor of a resource group in which earlier flavors are promotable
    (``PassContext.promotable``: reservations) and admit its pod sets (Kueue's flavor selector: a job kept off a
    flavor by its own node selector or affinity is never sent there): the move record of a promotion to the first
    of them that can take it (``promote`` picks it; None if there is none)."""
    for cur, before, sets in w.later_placements(ctx.view.cqs.get(w.cq) or {}):
        earlier = [f for f in before if f in ctx.promotable and _admits(ctx, w, sets, str(f))]
        if earlier:
            return {
                "from": earlier[0],
                "to": cur,
                "podSets": sets,
                "step": "moved",
                "hedged": True,
                "promoted": True,
                "tiers": earlier,
            }
    return None


def _admits(ctx: PassContext, w: WorkloadView, sets: list[str], flavor: str) -> bool:
    """Kueue's flavor selector lets every one of ``sets`` onto ``flavor`` (its node labels)."""
    labels = ctx.view.flavors.get(flavor)
    if labels is None:
        return False
    return all(
        flavor_matches_affinity((t or {}).get("spec") or {}, labels) for _n, t in w.pod_set_needs(sets)
    )


def promote(
    ctx: PassContext,
    w: WorkloadView,
    job: Mapping[str, Any],
    move: dict[str, Any],
    busy: set[str],
    landing: set[str],
) -> None:
    """A job waiting on plan B goes to the first earlier promotable flavor (a reservation) whose quota is free for it
    now and which is not full — Kueue then admits it there (it scans the flavors in order again). One job at a time
    per flavor (``busy``; ``landing``: a job this pass's moves step sent back there is about to take it); never ahead
    of a job of higher priority waiting for that flavor. The quota counted is the larger of
    the ClusterQueue's status and what the Workloads seen hold (``ClusterView.reserved_by_workloads``): a job
    admitted on the flavor a moment ago (another promotion) is in the status only after Kueue's batch period, and
    a promotion sent to quota already taken would put the job back at the end of plan B's queue."""
    sets = [p for p in move.get("podSets") or [] if p]
    needs = w.pod_set_needs(sets)
    if not needs:
        return
    for flavor in move.get("tiers") or []:
        if flavor in busy or flavor in landing or ctx.full(flavor) or ctx.breakers.get(flavor) is not None:
            continue
        seen = ctx.view.reserved_by_workloads(w.cq, flavor)
        if not ctx.view.quota_free(w.cq, flavor, needs, seen):
            continue
        if kept_for_higher(ctx, w, flavor, move) or blocks(ctx, w, flavor, needs, "promoted"):
            return
        promo = {k: v for k, v in move.items() if k != "tiers"} | {"from": flavor, "at": ctx.now}
        why = f"{flavor}'s quota is free (its node pool takes a reservation)"
        busy.add(flavor)
        if ctx.by_forecast:
            ctx.propose(Candidate.back(w, job, flavor, sets, partial(start_return, ctx, w, job, promo, why)))
            return
        ctx.note(
            w, f"{why}: {'would promote' if ctx.cfg.dry_run else 'promoting'} it ({affects(ctx, w, flavor)})"
        )
        ctx.touched.add(w.job)
        start_return(ctx, w, job, promo, why)
        return
