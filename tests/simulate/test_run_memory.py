"""A finished run's twin is freed before the next run builds its own (issue 47 acceptance 3).

A closed twin is garbage in reference cycles (controllers and their manager, watch callbacks, the loop's timers)
that reference counting never frees; with the collector tuned for a large heap (``flexq.loop.tune_gc``) nothing
freed it before the next run (the what-if runs after the variants', ``-j 1``'s runs one after another) had built a
twin as large beside it: Kueue's large-scale file held two twins at once. Here the collector is off, so only
the simulator's own teardown between runs (``teardown.discard``, ``teardown.free_closed``) can free them: every
twin the preflight and the runs built must be gone when the next one is built, and all of them at the end — by
reference counting alone: a discarded twin needs no full collection (one cost 0.12 s a tutorial-week run).
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
import yaml

import flexq.simulate as simulate_pkg
from flexq.simulate import engine, teardown
from flexq.simulate.jobs import JobSpec
from flexq.simulate.records import JobRecord

GENERATOR = {
    "cohorts": [
        {
            "className": "cohort",
            "count": 1,
            "queuesSets": [
                {
                    "className": "cq",
                    "count": 2,
                    "nominalQuota": 2,
                    "borrowingLimit": 2,
                    "reclaimWithinCohort": "Any",
                    "withinClusterQueue": "LowerPriority",
                    "workloadsSets": [
                        {
                            "count": 6,
                            "creationIntervalMs": 100,
                            "workloads": [
                                {"className": "small", "runtimeMs": 500, "priority": 50, "request": 1}
                            ],
                        }
                    ],
                }
            ],
        }
    ]
}


def test_each_runs_twin_is_freed_before_the_next_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "generator.yaml"
    path.write_text(yaml.safe_dump(GENERATOR))
    twins: list[weakref.ref[Any]] = []
    alive_at_build: list[int] = []
    init = engine.Sim.__init__

    def built(self: engine.Sim, *args: Any, **kwargs: Any) -> None:
        alive_at_build.append(sum(1 for t in twins if t() is not None))
        init(self, *args, **kwargs)
        twins.append(weakref.ref(self.twin))

    monkeypatch.setattr(engine.Sim, "__init__", built)
    collections: list[int] = []
    collect = gc.collect
    monkeypatch.setattr(teardown.gc, "collect", lambda *a: collections.append(1) or collect(*a))
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        result = simulate_pkg.simulate(path, workers=1, replicas=2, plots=False, whatif=False)
    finally:
        if was:
            gc.enable()
    assert len(result.runs) == 2 and all(len(r.jobs) == 12 for r in result.runs)
    assert len(twins) == 3  # the preflight's, then one per replica
    assert alive_at_build == [0, 0, 0], f"twins still held when the next was built: {alive_at_build}"
    assert [t() for t in twins] == [None, None, None]
    assert collections == [1], "a discarded twin was left to the collector"  # ours, before the run


def test_a_job_record_holds_only_what_was_written() -> None:
    """One JobRecord per job of the traffic (60,000 in Kueue's large-scale file): the containers most jobs
    never fill are not made (eleven empty ones took 1.8 KB a record), and a set emptied again is dropped."""
    spec = JobSpec(index=0, submit=0.0, kind="Workload", name="w", namespace="ns", queue="q")
    rec = JobRecord(spec, 0.0)

    def containers() -> int:
        return sum(1 for f in JobRecord.__slots__ if isinstance(getattr(rec, f), set | dict | list))

    assert containers() == 1  # waits, which every job fills
    assert not rec.holding and not rec.blocked and not rec.pr_failed and rec.after_preemption == ()
    rec.owned_set("holding").add("w")
    rec.owned_counter("pr_failed")["Failed"] += 1
    assert rec.holding == {"w"} and rec.pr_failed == {"Failed": 1} and containers() == 3
    rec.discard("holding", "w")
    rec.discard("blocked", "p")
    assert not rec.holding and containers() == 2
    assert not hasattr(spec, "__dict__")  # a JobSpec too: slots
