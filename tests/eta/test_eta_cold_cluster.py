"""The ETA on a cluster that has shown almost nothing yet (issue 46, acceptance 0): the tutorial's cluster just
created, its two jobs and four more submitted, the jobs' run time and the cloud's DWS wait unknown to the ETA and
different in every scenario of the family (a minute to hours). Before, a fixed prior (runs of an hour, DWS waits
of 30 minutes) put the starts of the tutorial's one-minute jobs outside their 80 % intervals: 13 % of them covered,
live. Now the cold laws (``flexq.stats.ColdLaw``): wide while nothing is known, pulled towards the first runs and
grants seen. Every prediction is checked against the start the twin then gave the job."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest

from flexq import Twin
from flexq.eta import EtaConfig, estimate, state_from_twin
from flexq.forecast.jobs import started_at
from flexq.stats import ColdLaw
from tests.eta.helpers import rayjob, tutorial_cluster

CFG = EtaConfig(replicas=16, workers=1, horizon=3 * 86400.0)
SCENARIOS = 16
# a start a few seconds outside its interval is inside it: the API's times are whole seconds, and an eviction's
# back-off or a pod's start is known to the second at best (a deterministic requeue came out 1-2 s early)
SLACK = 5.0


def _profile(dws_wait: float) -> dict:
    return {
        "apiVersion": "twin.flexq.dev/v1alpha1",
        "kind": "CapacityProfile",
        "metadata": {"name": "default"},
        "spec": {
            "defaults": {
                "provisionTime": {"uniform": {"min": "20s", "max": "90s"}},
                "queueWait": {"lognormal": {"median": f"{dws_wait:.0f}s", "sigma": 0.5}, "max": "7d"},
            },
            "rules": [
                {
                    "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["on-demand"]},
                    "available": 4,
                }
            ],
        },
    }


def _scenario(
    seed: int,
    cfg: EtaConfig = CFG,
    run: float | None = None,
    dws: float | None = None,
    declared: bool = False,
) -> tuple[int, int]:
    """(predictions, starts inside their 80 % interval) of one scenario: its jobs' run time and its cloud's DWS
    wait drawn (30 s to 4 h, 10 s to 2 h) unless given. The twin is read as a real cluster (its profile and its
    jobs' ``twin.flexq.dev/run-seconds`` unseen) unless ``declared``."""
    rng = random.Random(seed)
    run = run or math.exp(rng.uniform(math.log(30), math.log(4 * 3600)))
    dws = dws or math.exp(rng.uniform(math.log(10), math.log(2 * 3600)))
    twin = Twin(clock="virtual", seed=seed)
    try:
        twin.core.project.create(_profile(dws))
        tutorial_cluster(twin, profile=False)
        for i in range(1, 7):  # the tutorial's two, then four more
            twin.create(rayjob(i, run=run * math.exp(rng.gauss(0, 0.3))))
            twin.advance(2 if i < 3 else 20)
        predicted = []
        for step in (30, run / 2, run):  # just after, and as the first jobs end
            twin.advance(step)
            state = state_from_twin(twin, declared=declared)
            fc = estimate(state, cfg)
            predicted += [(fc.now, j) for j in fc.jobs.values()]
        # run on until every job has started or the last prediction's horizon has passed (a job Kueue
        # deactivated after its DWS retries never starts: then "not within the horizon" was the right answer)
        end = predicted[-1][0] + cfg.horizon if predicted else twin.now()
        while True:
            starts = {w["metadata"]["name"]: started_at(w) for w in twin.list("Workload", "default")}
            if all(s is not None for s in starts.values()) or twin.now() > end:
                break
            twin.advance(1800)
        covered = 0
        for now, j in predicted:
            start = starts.get(j.workload)
            lo = now + (j.low if j.low is not None else cfg.horizon)
            hi = math.inf if j.high is None else now + j.high
            if start is None or start > now + cfg.horizon:
                covered += j.high is None  # predicted not within the horizon
            else:
                covered += lo - SLACK <= start <= hi + SLACK
        return len(predicted), covered
    finally:
        twin.close()


@pytest.mark.slow
def test_on_a_cluster_that_has_shown_almost_nothing_the_80_intervals_cover_the_starts() -> None:
    total = covered = 0
    for seed in range(SCENARIOS):
        n, c = _scenario(1000 + seed)
        total, covered = total + n, covered + c
    assert total >= 150, total
    # measured: 77 % (147 of 191); the fixed priors (runs of an hour, DWS waits of 30 min): 65 % (125). Every
    # scenario and draw is seeded: the figure moves only when the code does
    assert covered / total >= 0.72, f"{covered} of {total} starts inside their 80 % interval"


@pytest.mark.slow
def test_the_tutorials_one_minute_jobs_on_a_new_cluster() -> None:
    """The live tutorial's shape: jobs of a minute, the twin's 20 s DWS wait. The first forecast, made before any
    job has finished, still puts the jobs queued behind job 1 too late (nothing known says a run is a minute, and
    the law must also hold for runs of hours); every later one holds them."""
    total = covered = 0
    for seed in range(6):
        n, c = _scenario(2000 + seed, run=61.0, dws=20.0)
        total, covered = total + n, covered + c
    # measured: 64 % (34 of 53); the fixed priors: 42 % (22 of 53; live on the tutorial: 13-15 %)
    assert covered / total >= 0.55, f"{covered} of {total} starts inside their 80 % interval"


@pytest.mark.slow
def test_on_the_twin_its_own_profile_and_run_times_are_the_forecasts() -> None:
    """The same tutorial-shaped scenarios read with what the twin declares of itself (its CapacityProfile's DWS
    and provisioning laws, each job's ``twin.flexq.dev/run-seconds``): the truth the user configured, where a
    real cluster shows only its history. Measured: 47 of 53 starts inside their 80 % interval (89 %), against
    39 of 53 (74 %) read as a real cluster; the misses are DWS jobs whose request waits out a full pool, a
    minute either side of a narrow interval."""
    total = covered = 0
    for seed in range(6):
        n, c = _scenario(2000 + seed, run=61.0, dws=20.0, declared=True)
        total, covered = total + n, covered + c
    assert covered / total >= 0.85, f"{covered} of {total} starts inside their 80 % interval"


def test_the_cold_law_is_calibrated_where_its_prior_holds() -> None:
    """Durations whose kind's median is drawn from the law's own prior: after 0 to 3 of them seen, the next one
    falls in the predictive 10-90 % interval 80 % of the time (the conjugate update is right), and one minute
    seen pulls a prior of 30 minutes most of the way to a minute."""
    law = ColdLaw(median=1800.0, spread=2.5, within=1.0)
    rng = random.Random(3)
    inside = trials = 0
    for _ in range(4000):
        mu = rng.gauss(math.log(law.median), law.spread)
        seen = [math.exp(rng.gauss(mu, law.within)) for _ in range(rng.randrange(4))]
        nxt = math.exp(rng.gauss(mu, law.within))
        inside += law.quantile(seen, 0.1) <= nxt <= law.quantile(seen, 0.9)
        trials += 1
    assert 0.77 <= inside / trials <= 0.83, inside / trials
    assert law.quantile([], 0.5) == pytest.approx(1800.0)
    assert 60 < law.quantile([60.0], 0.5) < 200


def test_a_draw_beyond_what_has_elapsed_is_past_it_and_follows_the_truncated_law() -> None:
    law = ColdLaw(median=600.0, spread=2.5, within=1.5)
    rng = random.Random(1)
    for elapsed in (0.0, 5.0, 600.0, 86400.0, 1e9):
        draws = [law.sample_beyond([], elapsed, rng) for _ in range(500)]
        assert all(d >= elapsed for d in draws)
    # P(T <= 1200 | T > 600) by the law, against the draws
    mu, sigma = law.predictive([])
    cdf = NormalDist(mu, sigma).cdf
    want = (cdf(math.log(1200)) - cdf(math.log(600))) / (1 - cdf(math.log(600)))
    draws = [law.sample_beyond([], 600.0, rng) for _ in range(20000)]
    got = sum(d <= 1200 for d in draws) / len(draws)
    assert abs(got - want) < 0.015, (got, want)


def test_requests_waiting_for_hours_are_not_taken_for_short_ones() -> None:
    """Two DWS requests waiting 3 h, none granted: the next request's median is hours, not the prior's 10 min;
    requests waiting less than the median so far change nothing."""
    law = ColdLaw(median=600.0, spread=2.5, within=1.5)
    assert law.quantile([], 0.5, [3 * 3600.0, 3 * 3600.0]) > 3 * 3600.0
    assert law.quantile([], 0.5, [5.0, 30.0]) == pytest.approx(law.quantile([], 0.5))
