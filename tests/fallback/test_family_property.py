"""Property over a generated family of scenarios (``flexq.testing.fallback_family``: every stock-out pattern with a
tight and an ample DWS pool, drawn loads, job shapes, priorities, spot): with flexq's fallback on, the tutorial's
configuration never loses more jobs, never makes the mean wait to start worse (a job that never started counted
until the end), never costs more per TPU chip-hour that ran to its end, and accounts for every job it was given.
``bench/fallback_robustness.py`` runs the same judgement over 60 scenarios x 2 seeds."""

from __future__ import annotations

import pytest

from flexq.simulate import load_study
from flexq.simulate.engine import run_one
from flexq.simulate.results import summarize
from flexq.simulate.run_result import OUTCOMES
from flexq.testing.fallback_family import family, priority_family, write_study

pytestmark = pytest.mark.spread  # independent scenarios of a minute or more each: any worker takes any

SCENARIOS = [s.__class__(**{**s.__dict__, "days": 1.0}) for s in family(8, seed=1)]
# Known failure (issue 37, measured 2026-12-05 once the twin bound a multi-host replica's hosts to one slice): in
# s03's day the fallback moves a high-priority two-slice job to spot (21.5 -> 3.3 min), so a low-priority
# two-slice training job probes on-demand instead of taking spot and holds two on-demand slices for hours; a
# high-priority two-slice job arriving an hour later finds on-demand's quota taken and waits 163 min on DWS
# instead of 2 min on on-demand: the mean wait 708 -> 930 s. Strict: the day it holds, this fails as XPASS.
KNOWN_WORSE = {"s03": "a probe gives plan A to a low-priority job a later high-priority one would have had"}
SCENARIO_PARAMS = [
    pytest.param(
        s,
        id=f"{s.name}-{s.stockout}-dws{s.dws_slices}",
        marks=[pytest.mark.xfail(reason=KNOWN_WORSE[s.name], strict=True)] if s.name in KNOWN_WORSE else [],
    )
    for s in SCENARIOS
]


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIO_PARAMS)
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


PRIORITY_SCENARIOS = [s.__class__(**{**s.__dict__, "days": 1.0}) for s in priority_family(6, seed=1)]


def _per_class(rows: list[dict]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        c = out.setdefault(r["priority"], {"jobs": 0, "lost": 0, "wait": 0.0, "cost": 0.0, "work": 0.0})
        c["jobs"] += 1
        c["lost"] += int(bool(r["lost"]))
        c["wait"] += r["wait_censored"]
        c["cost"] += r["cost"]
        if r["outcome"] == "Succeeded" or (r["outcome"] == "Failed" and not r["lost"]):
            c["work"] += r["size"] * r["run"] / 3600
    return out


@pytest.mark.slow
@pytest.mark.parametrize("scenario", PRIORITY_SCENARIOS, ids=[s.name for s in PRIORITY_SCENARIOS])
def test_with_priorities_the_fallback_is_never_worse_for_any_class_nor_fights_kueue(
    tmp_path, scenario
) -> None:
    """Priorities as users set them (two or three WorkloadPriorityClasses, preemption within the ClusterQueue and
    across a cohort): for every class, no more jobs lost, censored mean wait at most 1.02x (+1 s), cost per
    finished TPU chip-hour (its jobs' own cost, the billing ledger's attribution) at most 1.05x; and every Kueue
    preemption accounted for: no preempted Workload sent back by the fallback, no job moved twice after one."""
    study = load_study(write_study(scenario, tmp_path))
    runs = {v: run_one(study, v, 0) for v in ("tutorial", "fallback")}
    classes = {v: _per_class(r.jobs) for v, r in runs.items()}
    assert len(classes["tutorial"]) == scenario.classes, classes["tutorial"].keys()
    for c, t in classes["tutorial"].items():
        f = classes["fallback"][c]
        why = (scenario.describe(), c, t, f)
        assert f["lost"] <= t["lost"], why
        assert f["wait"] / f["jobs"] <= 1.02 * t["wait"] / t["jobs"] + 1.0, why
        if t["work"] > 0:
            assert f["work"] > 0 and f["cost"] / f["work"] <= 1.05 * t["cost"] / t["work"], why
    rows = runs["fallback"].jobs
    assert all(r["fallback_undid_preemption"] == 0 for r in rows)
    assert all(r["fallback_after_preemption"] <= 1 for r in rows)


@pytest.mark.slow
def test_a_job_kueue_preempted_is_moved_at_most_once_until_it_starts_again(tmp_path) -> None:
    """p31 (a whole-day stock-out, preempt before DWS, two days), a seed where Kueue preempts low jobs on
    on-demand and the fallback moves some of them off the stocked-out flavor. Such a job got a new Workload
    without the ``Preempted`` condition, and was sent back and moved again (p09: 3 moves after one preemption,
    before). The preemption is remembered by the job (``priorities.PreemptionMemory``) until it starts: one move,
    none back. (p07 seed 1 was run here too; on today's twin the fallback moves none of its preempted
    jobs, so it checked nothing p31 does not, for 20 s of CPU.) The contention guard is off here
    (``contention_limit: 1``): with it, the low jobs Kueue preempts in this week are no longer moved onto the
    room the high class needs (``flexq.fallback.contention``), and the at-most-once rule, which holds
    whatever moves a job, would not be exercised."""
    moved = 0
    for name, seed in (("p31", 0),):
        sc = next(s for s in priority_family(40, seed=1) if s.name == name)
        study = load_study(write_study(sc, tmp_path / name, fallback_settings={"contention_limit": 1.0}))
        rows = run_one(study, "fallback", seed).jobs
        assert sum(int(r["preemptions"]) for r in rows) > 0, name
        moved += sum(1 for r in rows if r["fallback_after_preemption"] == 1)
        assert all(r["fallback_after_preemption"] <= 1 for r in rows), [
            (name, r["job"], r["fallback_after_preemption"])
            for r in rows
            if r["fallback_after_preemption"] > 1
        ]
        assert all(r["fallback_undid_preemption"] == 0 for r in rows), name
    assert moved > 0  # the runs exercise it: preempted jobs the fallback moved
