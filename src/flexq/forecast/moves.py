"""A decision judged by forecast: the cluster carried forward with and without it, on common random numbers.

A fallback move (to plan B, back to plan A, a rescue) is a bet on how long a stock-out lasts and who arrives
next. ``compare`` answers it with the forward run every ETA uses (``flexq.forecast.fast``: Kueue's own queues and
scheduling cycle): the same state run ``replicas`` times as it is (the *baseline*) and, for each candidate, as it
would be after the decision — the job's Workload replaced by the one the decision leaves pending
(``World.overrides``). Replica ``r`` of every variant draws from the same seed and every job and arrival process
from its own stream, so the variants see the same cloud, the same run times and the same arrivals, and differ
only where the decision changes what happens: a job the move does not touch starts at the same instant in both
unless the move really takes (or frees) something it needed.

Each variant's figures are per job (``Outlook``): the mean start, censored at the horizon (a job not started
within it counts as starting at the horizon: a forecast that cannot see a start never promises it), the share of
replicas in which it started, and the plan it started on in each (what the bill depends on). Pure: no store, no clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from flexq.forecast import fast
from flexq.forecast.config import EtaConfig
from flexq.forecast.fit import fit
from flexq.forecast.jobs import StateView
from flexq.forecast.model import FittedCapacity
from flexq.forecast.state import ClusterState
from flexq.forecast.world import World, build_world

__all__ = ["Outlook", "Comparison", "compare"]


@dataclass
class Outlook:
    """One job's start over the replicas of one variant (seconds from the instant)."""

    priority: int
    starts: list[float | None] = field(default_factory=list)  # per replica (None: not within the horizon)
    plans: list[str] = field(
        default_factory=list
    )  # per replica, the plan it started on ("ps=flavor,..."; "": none)

    def mean(self, horizon: float) -> float:
        """The mean start, a start beyond the horizon counted at the horizon."""
        if not self.starts:
            return horizon
        return sum(horizon if s is None else min(s, horizon) for s in self.starts) / len(self.starts)

    @property
    def started_share(self) -> float:
        return sum(1 for s in self.starts if s is not None) / len(self.starts) if self.starts else 0.0


@dataclass
class Comparison:
    """The baseline and each candidate's outlooks, job key -> ``Outlook``."""

    horizon: float
    replicas: int
    baseline: dict[str, Outlook]
    candidates: dict[str, dict[str, Outlook]]
    notes: list[str] = field(default_factory=list)
    runs: int = 0  # forward runs made (baseline and candidates)
    run_seconds: dict[str, float] = field(
        default_factory=dict
    )  # job key -> its median run time (the model's)


def _collect(world: World, seeds: list[str]) -> dict[str, Outlook]:
    out: dict[str, Outlook] = {}
    for seed in seeds:
        for row in fast.run(world, random.Random(seed)):
            o = out.get(row["key"])
            if o is None:
                o = out[row["key"]] = Outlook(priority=int(row.get("priority") or 0))
            o.starts.append(row["started"])
            o.plans.append((row.get("flavors") or "") if row["started"] is not None else "")
    return out


def compare(
    state: ClusterState,
    candidates: dict[str, dict[str, dict[str, Any]]],
    *,
    replicas: int = 8,
    horizon: float = 12 * 3600.0,
    seed: int = 1,
    model: FittedCapacity | None = None,
    view: StateView | None = None,
    follow_arrivals: float = 0.0,
) -> Comparison:
    """``candidates``: name -> {job key: the Workload the decision leaves pending}. The baseline and every
    candidate over the same ``replicas`` seeds (see the module docstring). ``follow_arrivals``: the jobs the
    model expects to arrive within this many seconds are followed to their start too (keyed alike in every
    variant: the arrivals are common random numbers too), so a decision that takes room from who comes next
    shows."""
    view = view or StateView.of(state)
    model = model or fit(state, EtaConfig(horizon=horizon, seed=seed), view)
    world = replace(build_world(state, model, horizon, view), follow_arrivals=follow_arrivals)
    seeds = [f"flexq-forecast:{seed}:{r}" for r in range(max(1, replicas))]
    cmp = Comparison(horizon=horizon, replicas=len(seeds), baseline=_collect(world, seeds), candidates={})
    cmp.notes = list(world.notes)
    cmp.runs = len(seeds)
    known = {e.key for e in world.jobs}
    moved = {k for overrides in candidates.values() for k in overrides}
    cmp.run_seconds = {e.key: model.median_run(e) for e in world.jobs if e.key in moved}
    for name, overrides in candidates.items():
        missing = sorted(k for k in overrides if k not in known)
        if missing:
            raise KeyError(f"candidate {name}: no live Workload {', '.join(missing)} in the state")
        cmp.candidates[name] = _collect(replace(world, overrides=dict(overrides)), seeds)
        cmp.runs += len(seeds)
    return cmp
