"""Property over a generated family of scenarios (``flexq.testing.fallback_family``: every stock-out pattern with a
tight and an ample DWS pool, drawn loads, job shapes, priorities, spot): with flexq's fallback on, the tutorial's
configuration never loses more jobs, never makes the mean wait to start worse (a job that never started counted
until the end), never costs more per TPU chip-hour that ran to its end, and accounts for every job it was given.
``bench/fallback_robustness.py`` runs the same judgement over 60 scenarios x 2 seeds."""

from __future__ import annotations

import pytest

from flexq.simulate import load_study
from flexq.simulate.engine import OUTCOMES, run_one
from flexq.simulate.results import summarize
from flexq.testing.fallback_family import family, write_study

SCENARIOS = [s.__class__(**{**s.__dict__, "days": 1.0}) for s in family(8, seed=1)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "scenario", SCENARIOS, ids=[f"{s.name}-{s.stockout}-dws{s.dws_slices}" for s in SCENARIOS]
)
def test_the_fallback_is_never_worse_than_the_configuration_it_runs_on(tmp_path, scenario) -> None:
    study = load_study(write_study(scenario, tmp_path))
    runs = {v: run_one(study, v, 0) for v in ("tutorial", "fallback")}
    sums = {v: summarize(r) for v, r in runs.items()}
    submitted = len(study.jobs(study.seed))
    for v, r in runs.items():  # every job accounted for, once
        assert len(r.jobs) == submitted and len({j["job"] for j in r.jobs}) == submitted, v
        assert all(j["outcome"] in OUTCOMES for j in r.jobs), v
        j = sums[v]["jobs"]
        assert j["lost"] + j["succeeded"] + j["failedAsPlanned"] + j["stillRunning"] == j["total"], (v, j)
    t, f = sums["tutorial"], sums["fallback"]
    assert f["jobs"]["lost"] <= t["jobs"]["lost"], (scenario.describe(), t["lostByCause"], f["lostByCause"])
    wt, wf = t["waitToStartCensored"]["mean"], f["waitToStartCensored"]["mean"]
    assert wf <= 1.02 * wt + 1.0, (scenario.describe(), wt, wf)
    per_work = {v: s["costUSD"]["total"] / max(s["goodput"]["finishedHours"], 1e-9) for v, s in sums.items()}
    assert per_work["fallback"] <= 1.05 * per_work["tutorial"], (scenario.describe(), per_work)
