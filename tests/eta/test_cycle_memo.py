"""A forward run's replayed cycles decide what Kueue's cycle decides (``flexq.forecast.replay.CycleMemo``).

Jobs behind the tutorial's one-slice DWS pool retry for hours in every forward run: every second one is reserved,
its request fails at once and it is evicted, and the next head is tried twice against the same workloads holding
quota. The memo answers such a cycle again without running it. Here the same replicas run with and without it,
on the retrying queue and on a queue with priorities (whose preemptions are not kept), and every job's row is the
same. (On ``bench/eta_cost.py``'s deep queue 85 % of the cycles are replayed, and 2,408 replicas of family
scenarios were byte-identical to the engine before the memo.)
"""

from __future__ import annotations

import random

import pytest

from flexq.eta import EtaConfig
from flexq.forecast import fast, replay
from flexq.forecast.fit import fit
from flexq.forecast.jobs import StateView
from flexq.forecast.world import build_world
from tests.eta.helpers import waiting_state


def _world(jobs: int, priorities: bool):
    classes = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": n},
            "value": v,
        }
        for n, v in (("high", 1000), ("low", 100))
    ]
    state = waiting_state(
        seed=7,
        jobs=jobs,
        settle=120,
        declared=False,
        extra=classes if priorities else None,
        labels=(lambda i: {"kueue.x-k8s.io/priority-class": "high" if i % 3 == 0 else "low"})
        if priorities
        else None,
    )
    cfg = EtaConfig(horizon=12 * 3600.0)
    view = StateView.of(state)
    return build_world(state, fit(state, cfg, view), cfg.horizon, view)


def _rows(world, seed: str, memo: bool, monkeypatch) -> tuple[list, int, int]:
    counts = {}
    orig_plan, orig_key = replay.CycleMemo.plan, replay.CycleMemo.key

    def counting(self, *a, **k):
        out = orig_plan(self, *a, **k)
        counts["hits"], counts["misses"] = self.hits, self.misses
        return out

    monkeypatch.setattr(replay.CycleMemo, "plan", counting)
    if not memo:
        monkeypatch.setattr(replay.CycleMemo, "key", lambda self, *a, **k: None)
    rows = sorted(fast.run(world, random.Random(seed)), key=lambda r: r["key"])
    monkeypatch.setattr(replay.CycleMemo, "plan", orig_plan)
    monkeypatch.setattr(replay.CycleMemo, "key", orig_key)
    return rows, counts.get("hits", 0), counts.get("misses", 0)


@pytest.mark.parametrize(("priorities", "warmup"), [(False, None), (False, 0), (True, 0)])
def test_replayed_cycles_decide_as_the_cycles_themselves(priorities: bool, warmup, monkeypatch) -> None:
    """``warmup`` 0: the memo asks from a run's first cycle (by default only after ``WARMUP_CYCLES``, from the
    workloads holding quota then)."""
    if warmup is not None:
        monkeypatch.setattr(replay, "WARMUP_CYCLES", warmup)
    world = _world(60, priorities)
    replayed = 0
    for r in range(10):
        seed = f"memo:{r}"
        with_memo, hits, misses = _rows(world, seed, True, monkeypatch)
        without, none, _ = _rows(world, seed, False, monkeypatch)
        assert with_memo == without
        assert none == 0
        replayed += hits
    assert replayed > 0
