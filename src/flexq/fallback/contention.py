"""Contention: what a lower class's job put on bounded capacity costs the classes above it over its whole run.

A move, a rescue or a return that puts a job on a flavor holds that flavor's room for the job's whole run, not
for the pass that makes it. When the job is of a lower priority than others of its cohort, a job of a higher
class that arrives meanwhile finds the room taken, and often cannot take it back: Kueue preempts only for quota
— not for a node pool at its maximum (DWS's pool, a spot pool) — and with its default flavor fungibility
(``whenCanPreempt: TryNextFlavor``) it sends the higher job to the next flavor rather than preempt on this one.
Without the fallback the lower job would have stayed where it was (stuck on the stocked-out flavor, waiting on
plan B, deactivated), leaving that room to the higher job.

So, for such an action (``blocks``), the fallback asks the cluster's own history (``ClassHistory``, kept pass
after pass):

- **how long the job will hold the room**: the runs of its class's jobs seen running to their end (of every
  class while fewer than ``MIN_RUNS`` of its own were seen; ``PRIOR_RUN_SECONDS`` before any) — the whole
  distribution, not a typical run: a long training run is where a higher job most likely arrives;
- **who arrives meanwhile**: the rate at which jobs of a higher priority have arrived in its cohort (their jobs'
  creation, over the last ``RATE_WINDOW_SECONDS`` the policy has watched);
- **how much room is left** once the job holds its share: how many more jobs of its size the flavor's quota
  takes (a ClusterQueue's quota, with its cohort's) and, for a flavor whose node pool was seen at its maximum
  lately (the ``full`` evidence), how many its pool's room takes — a higher job arriving while that room is left
  loses nothing;

and refuses the action when the chance that more higher-priority jobs arrive during the job's run than the room
left takes (a Poisson tail at that rate, averaged over the class's runs) exceeds ``FallbackConfig.contention_limit``. Room bounded only by quota, that every
higher job of the cohort would take back by preemption before trying another flavor
(``whenCanPreempt: Preempt`` with preemption of lower priorities), is not contended. A job of the highest
priority seen in its cohort is never held back by this (there is no one above it): without priorities, nothing
changes. The guard runs in both ways of deciding (rules and forecast), before a move becomes a candidate.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

from flexq.clock import format_duration, parse_time_or_none
from flexq.fallback.affinity import restricted_flavors
from flexq.fallback.context import PassContext
from flexq.fallback.priorities import preemption_policy
from flexq.fallback.view import ClusterView, WorkloadView
from flexq.semantics.conditions import is_true

__all__ = [
    "ClassHistory",
    "blocks",
    "sets_on",
    "landing",
    "MIN_RUNS",
    "PRIOR_RUN_SECONDS",
    "RATE_WINDOW_SECONDS",
]

MIN_RUNS = 3  # runs of a class seen before its own median is used
PRIOR_RUN_SECONDS = 3600.0  # a job's expected run before any run was seen
RATE_WINDOW_SECONDS = 24 * 3600.0  # the arrival rates are over this long (a day: its busy and quiet hours)
KEEP_RUNS = 200  # runs kept per class (the latest)
MAX_ROOM = 8  # room counted in jobs of the job's size, at most (the Poisson tail beyond is negligible)


class ClassHistory:
    """Per cohort and priority, the jobs seen arriving (their creation); per priority, the runs seen end."""

    def __init__(self) -> None:
        self.first: float | None = None  # the first pass
        self.arrivals: dict[str, dict[str, tuple[int, float]]] = {}  # cohort -> job -> (priority, created)
        self.runs: dict[int, deque[float]] = {}  # priority -> run seconds of jobs seen run to their end
        # workload uid -> (priority, when its pods were ready)
        self._running: dict[str, tuple[int, float]] = {}
        self.held: set[str] = set()  # the jobs held back at least once (each is a "hold" action once)
        self._created: dict[str, float | None] = {}  # job -> its creation, read once while it exists

    def update(self, view: ClusterView) -> None:
        now = view.now
        if self.first is None:
            self.first = now
        present: dict[str, WorkloadView] = {}
        known, self._created = self._created, {}
        for w in view.workloads:
            if w.ident in known:  # read once: a pass reads every job, most of them seen before
                created = self._created[w.ident] = known[w.ident]
            else:
                meta = (view.job(w) or w.obj).get("metadata", {})
                created = self._created[w.ident] = parse_time_or_none(meta.get("creationTimestamp"))
            if created is not None and now - created <= RATE_WINDOW_SECONDS:
                by = self.arrivals.setdefault(view.cohort_of(w.cq), {})
                by.setdefault(w.ident, (w.priority, created))
            if not w.uid:
                continue
            present[w.uid] = w
            ready = w.condition("PodsReady")
            if (
                w.uid not in self._running
                and w.admitted
                and is_true(w.obj, "PodsReady")
                and ready is not None
            ):
                since = parse_time_or_none(ready.get("lastTransitionTime")) or now
                self._running[w.uid] = (w.priority, min(since, now))
        for uid in list(self._running):
            x = present.get(uid)
            if x is not None and x.admitted and not is_true(x.obj, "Finished"):
                continue  # still running
            priority, since = self._running.pop(uid)
            if x is None or is_true(x.obj, "Finished"):  # ran to its end (a finished Workload is deleted)
                self.runs.setdefault(priority, deque(maxlen=KEEP_RUNS)).append(max(0.0, now - since))
            # (evicted: not a whole run)
        for by in self.arrivals.values():
            for ident in [j for j, (_p, t) in by.items() if now - t > RATE_WINDOW_SECONDS]:
                del by[ident]
        self.held &= {w.ident for w in view.workloads}  # (a job held for days is said once, not once a day)

    def runs_of(self, priority: int) -> list[float]:
        """The class's runs seen to their end (every class's while fewer than ``MIN_RUNS`` of its own were
        seen; ``PRIOR_RUN_SECONDS`` before any): how long a job of it holds the room it is given."""
        own = list(self.runs.get(priority, ()))
        if len(own) >= MIN_RUNS:
            return own
        every = [r for rs in self.runs.values() for r in rs]
        return every or [PRIOR_RUN_SECONDS]

    def expected_run(self, priority: int) -> float:
        """The mean of ``runs_of``."""
        runs = self.runs_of(priority)
        return sum(runs) / len(runs)

    def highest(self, cohort: str) -> int | None:
        by = self.arrivals.get(cohort) or {}
        return max((p for p, _t in by.values()), default=None)

    def rate_above(self, cohort: str, priority: int, now: float) -> float:
        """Jobs of a higher priority than ``priority`` arriving in ``cohort``, per second, over the window."""
        by = self.arrivals.get(cohort) or {}
        span = min(RATE_WINDOW_SECONDS, max(now - (self.first if self.first is not None else now), 0.0))
        span = max(span, 3600.0)  # (the first hour: a rate over at least an hour)
        n = sum(1 for p, t in by.values() if p > priority and now - RATE_WINDOW_SECONDS <= t <= now)
        return n / span


def _poisson_tail(mean: float, k: int) -> float:
    """P(N > k) for N ~ Poisson(mean)."""
    if mean <= 0:
        return 0.0
    term = math.exp(-mean)
    cdf = term
    for i in range(1, k + 1):
        term *= mean / i
        cdf += term
    return max(0.0, 1.0 - cdf)


def _scaled(needs: list[tuple[int, dict[str, Any]]], times: int) -> list[tuple[int, dict[str, Any]]]:
    return [(count * times, t) for count, t in needs]


def _preempted_back(ctx: PassContext, w: WorkloadView) -> bool:
    """Every ClusterQueue of ``w``'s cohort preempts lower priorities on a flavor before trying the next one:
    a higher job takes quota ``w`` holds back at once."""
    for name in ctx.view.cohort_members(w.cq) or [w.cq]:
        rules = preemption_policy(ctx, name)
        if rules is None:
            return False
        _first, within, reclaim = rules
        if not within or (name != w.cq and reclaim == "Never"):
            return False
    return True


def _room(ctx: PassContext, w: WorkloadView, flavor: str, needs: list[tuple[int, dict[str, Any]]]) -> int:
    """How many more jobs of ``w``'s size ``flavor`` takes once ``w`` holds its share (at most ``MAX_ROOM``): the
    room of its pool, when the pool was seen at its maximum lately (no preemption frees a node for a higher job),
    and of its quota, unless every higher job would take the quota back by preemption."""
    view = ctx.view
    room = MAX_ROOM
    f = ctx.fulls.get(flavor)
    nodes = sum(count for count, _t in needs)
    if f is not None:  # its pool was at its maximum lately: the pool's room, in jobs of this size
        cap = f.limit if f.limit is not None else f.nodes
        left = cap - len(view.nodes_of(flavor)) - nodes
        room = min(room, max(0, left // max(1, nodes)))
    elif _preempted_back(ctx, w):
        return room  # quota only, and taken back by preemption
    k = 0
    while k < room and view.quota_free(w.cq, flavor, _scaled(needs, k + 2)):
        k += 1
    return min(room, k)


def blocks(
    ctx: PassContext, w: WorkloadView, flavor: str, needs: list[tuple[int, dict[str, Any]]], what: str
) -> bool:
    """Whether putting ``w`` on ``flavor`` (``what``: "moved", "requeued", "sent back") is refused for the
    classes above it (see the module docstring); the note says why. ``needs``: its pod sets there."""
    limit = ctx.cfg.contention_limit
    history = ctx.history
    if limit >= 1.0 or history is None or not needs:
        return False
    cohort = ctx.view.cohort_of(w.cq)
    top = history.highest(cohort)
    if top is None or w.priority >= top:
        return False
    rate = history.rate_above(cohort, w.priority, ctx.now)
    if rate <= 0:
        return False
    runs = history.runs_of(w.priority)
    run = sum(runs) / len(runs)
    room = _room(ctx, w, flavor, needs)
    # over the class's runs seen: the chance that more higher jobs arrive during the run than the room left takes
    chance = sum(_poisson_tail(rate * r, room) for r in runs) / len(runs)
    if chance <= limit:
        return False
    why = (
        f"not {what} to {flavor}: it would hold {flavor} for about {format_duration(run)} (its class's runs), "
        f"while jobs of a higher priority arrive in its cohort about every {format_duration(1 / rate)}; with room "
        f"for {room} more there, one would find it taken with a chance of {chance:.0%} (the most allowed: "
        f"{limit:.0%}), and could not take it back: it stays, as without the fallback"
    )
    ctx.note(w, why)
    if w.ident not in history.held:  # one line per job, not one per pass
        history.held.add(w.ident)
        ctx.act("hold", w.key, why)
    return True


def sets_on(ctx: PassContext, w: WorkloadView, flavor: str) -> list[str]:
    """The pod sets of ``w`` that ``flavor`` would hold: those assigned it, else (a Workload whose admission was
    cleared: deactivated, evicted) those that ask for a resource of the flavor's resource group."""
    sets = sorted(p for p, fs in w.assigned.items() if flavor in fs)
    if sets:
        return sets
    cq = ctx.view.cqs.get(w.cq) or {}
    covered: set[str] = set()
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        if any(f.get("name") == flavor for f in rg.get("flavors") or []):
            covered |= set(rg.get("coveredResources") or [])
    asks: dict[str, set[str]] = {}
    for ps in (w.obj.get("spec") or {}).get("podSets") or []:
        containers = (((ps.get("template") or {}).get("spec") or {}).get("containers")) or []
        asks[str(ps.get("name"))] = {
            r for c in containers for r in ((c.get("resources") or {}).get("requests") or {})
        } & covered
    # the pod sets asking for an accelerator (an extended resource: google.com/tpu), if any do: a group that
    # covers CPU too puts the CPU-only pod sets (a Ray head) on its CPU flavor first
    extended = [p for p, rs in asks.items() if any("/" in r for r in rs)]
    return extended or [p for p, rs in asks.items() if rs]


def landing(ctx: PassContext, w: WorkloadView, job: Mapping[str, Any]) -> str | None:
    """Where Kueue would admit ``w``'s job if it were queued again now (a rescue): the first flavor, in its
    ClusterQueue's order, of the resource group its accelerator pod sets ask for, that the job is not restricted
    off, that is not stocked out nor full, and whose quota is free for it (None: none — it would wait in Kueue's
    queue, holding nothing)."""
    view = ctx.view
    cq = view.cqs.get(w.cq) or {}
    off = restricted_flavors(job, view.flavors)
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        names = [str(f.get("name")) for f in rg.get("flavors") or []]
        for f in names:
            sets = sets_on(ctx, w, f)
            if not sets or f in off or ctx.blocked(f):
                continue
            if view.quota_free(w.cq, f, w.pod_set_needs(sets)):
                return f
    return None
