"""Kueue's order and Kueue's preemption, as every step of the fallback keeps them.

Kueue admits in one order within a ClusterQueue and across the heads of a cohort: **higher priority first, then
the earlier queue-order timestamp** (``semantics.workloads.admission_order``; Kueue's ClusterQueue heap,
``pkg/cache/queue/cluster_queue.go``, and the scheduler's iterator with ``PrioritySortingWithinCohort``, on by
default). A fallback that moves jobs between flavors must not reorder that queue:

- **Kueue's order**: every step takes its candidates higher priority first, then (hedge-backs, rescues) the
  older first: a higher-priority job is moved, sent back, probed with or requeued before a lower-priority one,
  whatever their ages (``by_priority``; the jobs of one priority keep the order the policy always used, so a
  cluster without priorities sees no change).
- **No overtaking** (``ahead``): an action that puts a job on a flavor — a move to the next flavor, a hedge back
  or a probe back to the first one — is not taken while a job of **higher priority in the same ClusterQueue or
  cohort waits for that flavor**: pending in Kueue's queue with that flavor still open to it, or waiting on plan
  B with a ticket back to it. Kueue would give the flavor to that job first; a lower-priority job sent there by
  the fallback would take the quota or the idle nodes it gets.
- **No fight with Kueue's preemption** (``preempted``, ``PreemptionMemory``, ``may_preempt``): a job Kueue
  preempted (its Workload's ``Preempted`` condition) is never sent back to a flavor, hedged or probed with until
  it has started again — Kueue gave its place to another job, and the fallback does not undo that — and it is
  moved on, off a stocked-out flavor, at most once for that preemption (the move record's ``afterPreemption``):
  the job remembers the preemption after the Workload that carried it is deleted (by that move, a rescue, its
  controller); and a pending job that Kueue is preempting for, or could admit on the flavor
  by preempting lower-priority jobs (its ClusterQueue preempts before it tries the next flavor:
  ``whenCanPreempt: Preempt``), is not steered to plan B.

- **Room kept for jobs about to arrive** (``PriorityMemory``): plan A's idle nodes and free quota are what the next
  job to arrive gets at once. A hedge-back or a probe back puts a job there for its whole run, so only a job of the
  highest priority seen in its cohort lately (``priority_memory_seconds``, an hour by default) is sent back; a
  lower-priority job stays on plan B, where Kueue put it, as it would without the fallback. Without priorities
  every job is of the highest priority: nothing changes.
- For a flavor whose node pool has refused to grow (its room is bounded: DWS's pool at its maximum), a job of
  higher priority waiting for its provisioning there also waits for that flavor: a lower-priority job is not
  moved or rescued onto it meanwhile.

``affects`` says, for ``explain()`` and the dry run, which higher-priority jobs an action could affect and why it
was safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from flexq.clock import parse_time_or_none
from flexq.fallback.affinity import restricted_flavors
from flexq.fallback.context import PassContext
from flexq.fallback.records import move_state
from flexq.fallback.view import ClusterView, WorkloadView

__all__ = [
    "PriorityMemory",
    "PreemptionMemory",
    "higher_seen",
    "by_priority",
    "kueue_sorted",
    "ahead",
    "may_preempt",
    "preemption_policy",
    "preempting_for",
    "affects",
    "group_flavors",
]

_PREEMPT_FIRST = (
    "Preempt",
    "MayStopSearch",
)  # whenCanPreempt: stop at a flavor where preemption admits the job
_LOWER = ("LowerPriority", "LowerOrNewerEqualPriority")


def by_priority(workloads: Iterable[WorkloadView]) -> list[WorkloadView]:
    """Higher priority first; within a priority, the order given (a stable sort)."""
    return sorted(workloads, key=lambda w: -w.priority)


def kueue_sorted(workloads: Iterable[WorkloadView]) -> list[WorkloadView]:
    """The workloads in Kueue's order of admission (higher priority, then earlier, then by UID)."""
    return sorted(workloads, key=lambda w: (w.order, w.key))


def group_flavors(ctx: PassContext, cq_name: str) -> set[str]:
    """Every flavor of the ClusterQueue's resource groups."""
    cq = ctx.view.cqs.get(cq_name) or {}
    return {
        str(f.get("name"))
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []
        for f in rg.get("flavors") or []
    }


class PriorityMemory:
    """When each priority was last seen arriving in each cohort (a Workload's job created), pass after pass: the
    history behind "room kept for jobs about to arrive"."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[int, float]] = {}  # cohort -> priority -> latest job creation seen

    def update(self, view: ClusterView, window: float) -> dict[str, dict[int, float]]:
        """Take in the view's workloads; the priorities seen in each cohort within ``window`` seconds."""
        for w in view.workloads:
            created = parse_time_or_none((view.job(w) or w.obj).get("metadata", {}).get("creationTimestamp"))
            if created is None:
                continue
            by = self.seen.setdefault(view.cohort_of(w.cq), {})
            if created > by.get(w.priority, float("-inf")):
                by[w.priority] = created
        for by in self.seen.values():
            for p in [p for p, t in by.items() if view.now - t > window]:
                del by[p]
        return {c: dict(by) for c, by in self.seen.items() if by}


class PreemptionMemory:
    """The jobs Kueue preempted and that have not started since, pass after pass: a preempted Workload's
    ``Preempted`` condition goes with it when it is deleted (a move, a rescue back to plan A, the job's own
    controller), so the job remembers it here until its Workload's pods are ready again."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str, str], float] = {}  # job -> when the fallback first saw it preempted

    def update(self, view: ClusterView) -> dict[tuple[str, str, str], float]:
        """Take in the view's workloads; the jobs preempted and not started since."""
        live: set[tuple[str, str, str]] = set()
        for w in view.workloads:
            if w.job is None:
                continue
            live.add(w.job)
            if w.preempted and not _ready(w):
                self.jobs.setdefault(w.job, view.now)
            elif w.current and _ready(w):
                self.jobs.pop(w.job, None)
        for j in [j for j in self.jobs if j not in live]:
            del self.jobs[j]
        return dict(self.jobs)


def _ready(w: WorkloadView) -> bool:
    c = w.condition("PodsReady")
    return c is not None and c.get("status") == "True"


def higher_seen(ctx: PassContext, w: WorkloadView) -> tuple[int, float] | None:
    """The highest priority above ``w``'s seen arriving in its cohort lately, and when (None: none)."""
    by = ctx.recent_priorities.get(ctx.view.cohort_of(w.cq)) or {}
    higher = [(p, t) for p, t in by.items() if p > w.priority]
    return max(higher) if higher else None


def _bounded(ctx: PassContext, flavor: str) -> bool:
    """The flavor's node pool has refused to grow lately: its room is bounded."""
    return flavor in ctx.fulls


def _waiting_for(ctx: PassContext, x: WorkloadView, flavor: str) -> str | None:
    """How ``x`` waits for ``flavor`` (None: it does not)."""
    if not x.current or not x.active or x.job is None or x.admitted:
        return None
    job = ctx.view.job(x)
    if job is None:
        return None
    if x.reserved and any(flavor in fs for fs in x.assigned.values()):
        if _bounded(ctx, flavor):
            return f"waiting for {flavor}'s provisioning (its pool has been at its maximum)"
        return None
    if not x.reserved:
        if flavor in group_flavors(ctx, x.cq) and flavor not in restricted_flavors(job, ctx.view.flavors):
            return "pending in Kueue's queue"
        return None
    move = move_state(job)
    if (
        move.get("from") == flavor
        and move.get("step") == "moved"
        and not x.preempted
        and not any(flavor in fs for fs in x.assigned.values())
    ):
        return f"waiting on {move.get('to') or 'the next flavor'} with a ticket back"
    return None


def ahead(ctx: PassContext, w: WorkloadView, flavor: str) -> list[tuple[WorkloadView, str]]:
    """The jobs of higher priority than ``w`` in its ClusterQueue's cohort (or the ClusterQueue alone) that wait
    for ``flavor`` now, in Kueue's order, each with how it waits."""
    cohort = ctx.view.cohort_of(w.cq)
    out = []
    for x in kueue_sorted(ctx.view.workloads):
        if x is w or x.priority <= w.priority or ctx.view.cohort_of(x.cq) != cohort:
            continue
        how = _waiting_for(ctx, x, flavor)
        if how is not None:
            out.append((x, how))
    return out


def preempting_for(w: WorkloadView) -> bool:
    """Kueue has issued preemptions for this pending workload and waits for them (``WaitingForPreemptedWorkloads``)."""
    c = w.condition("QuotaReserved")
    return c is not None and c.get("status") == "False" and c.get("reason") == "WaitingForPreemptedWorkloads"


def preemption_policy(ctx: PassContext, cq: str) -> tuple[bool, bool, str] | None:
    """What ClusterQueue ``cq`` preempts, by Kueue's rules: None when it does not stop at a flavor where preemption
    admits a job (``flavorFungibility.whenCanPreempt`` other than ``Preempt``: it tries the next flavor first);
    else (True, whether it preempts lower priorities within itself (``withinClusterQueue``), its
    ``reclaimWithinCohort``)."""
    spec: dict[str, Any] = dict((ctx.view.cqs.get(cq) or {}).get("spec") or {})
    if (spec.get("flavorFungibility") or {}).get("whenCanPreempt") not in _PREEMPT_FIRST:
        return None
    policy = spec.get("preemption") or {}
    return True, policy.get("withinClusterQueue") in _LOWER, policy.get("reclaimWithinCohort") or "Never"


def may_preempt(ctx: PassContext, w: WorkloadView, flavor: str) -> list[WorkloadView]:
    """The lower-priority workloads holding ``flavor`` that Kueue could preempt to admit the pending ``w`` there,
    by its ClusterQueue's preemption policy (``withinClusterQueue``; ``reclaimWithinCohort`` for the cohort's
    other ClusterQueues), when that ClusterQueue stops at a flavor where preemption admits the job
    (``flavorFungibility.whenCanPreempt: Preempt``). Empty: Kueue would not preempt for it there (with the
    default ``TryNextFlavor`` it tries the next flavor first)."""
    rules = preemption_policy(ctx, w.cq)
    if rules is None:
        return []
    _first, within, reclaim = rules
    cohort = ctx.view.cohort_of(w.cq)
    out = []
    for x in ctx.view.workloads:
        if x is w or not x.reserved or not x.active or not any(flavor in fs for fs in x.assigned.values()):
            continue
        if x.cq == w.cq:
            if within and x.priority < w.priority:
                out.append(x)
        elif ctx.view.cohort_of(x.cq) == cohort and (
            reclaim == "Any" or (reclaim in _LOWER and x.priority < w.priority)
        ):
            out.append(x)
    return out


def affects(ctx: PassContext, w: WorkloadView, flavor: str, frees: str | None = None) -> str:
    """For ``explain()``: which higher-priority jobs an action that puts ``w`` on ``flavor`` (and, for a move,
    frees its quota on ``frees``) could affect, and why it is safe (it is taken only when none waits for
    ``flavor``)."""
    cohort = ctx.view.cohort_of(w.cq)
    where = f"cohort {cohort}" if not cohort.startswith("cq:") else f"ClusterQueue {w.cq}"
    higher = [
        x
        for x in ctx.view.workloads
        if x is not w
        and x.current
        and x.active
        and x.priority > w.priority
        and ctx.view.cohort_of(x.cq) == cohort
        and not x.admitted
    ]
    if not higher:
        return f"no job of higher priority than {w.priority} waits in {where}"
    names = ", ".join(f"{x.key} ({x.priority})" for x in kueue_sorted(higher)[:5])
    more = f" and {len(higher) - 5} more" if len(higher) > 5 else ""
    freed = f"; it frees its {frees} quota, which Kueue gives them first" if frees else ""
    return (
        f"higher-priority jobs waiting in {where}: {names}{more}; none waits for {flavor}, so it takes nothing "
        f"Kueue would give them{freed}"
    )
