"""What a twin declares of itself (``flexq.forecast.declared``): its CapacityProfile's laws and its jobs' run
times, read by the forecast where a real cluster would give it only the stated priors."""

from __future__ import annotations

import random

import pytest

from flexq import Twin
from flexq.api.capacity_profile import Delay, live_default_profile
from flexq.eta import EtaConfig, estimate, state_from_twin
from flexq.forecast.declared import Declared
from flexq.gke.capacity import draw_left


def _job(kind: str, **annotations: str) -> dict:
    return {"kind": kind, "metadata": {"name": "j", "annotations": annotations}}


@pytest.mark.parametrize(
    ("kind", "executor", "annotations", "seconds"),
    [
        ("RayJob", "simulated", {}, 60.0),  # the simulated executor's default for the submitter
        ("RayJob", "ray", {}, None),  # runs for real: not known
        ("RayJob", "ray", {"twin.flexq.dev/run-seconds": "180"}, 180.0),  # simulated on any executor
        ("RayJob", "ray", {"twin.flexq.dev/simulated": "true"}, 60.0),
        ("Job", "ray", {}, 60.0),  # batch pods are simulated on every executor
        ("Job", "simulated", {"twin.flexq.dev/run-seconds": "3m"}, 60.0),  # read as the executor reads it
        ("Job", "simulated", {"twin.flexq.dev/run-seconds": "-5"}, 0.0),
    ],
)
def test_a_jobs_run_time_on_the_twin_is_what_its_executor_gives_it(
    kind, executor, annotations, seconds
) -> None:
    d = Declared(live_default_profile(), executor)
    assert d.run_seconds(_job(kind, **annotations)) == seconds


def test_a_declared_law_is_drawn_beyond_the_age_a_request_has() -> None:
    rng = random.Random(1)
    fixed = Delay.model_validate({"fixed": "20s"})
    assert draw_left(fixed, 0.0, rng) == 20.0
    assert draw_left(fixed, 15.0, rng) == 5.0
    assert draw_left(fixed, 25.0, rng) == 0.0  # overdue: granted once there is room
    uniform = Delay.model_validate({"uniform": {"min": "10s", "max": "30s"}})
    left = [draw_left(uniform, 20.0, rng) for _ in range(200)]
    assert all(0.0 < x <= 10.0 for x in left)
    exp = Delay.model_validate({"exponential": {"mean": "10s"}})  # memoryless: as much left whatever the age
    old = sorted(draw_left(exp, 300.0, rng) for _ in range(2000))
    assert 5.5 < old[1000] < 8.5  # the median of an exponential of mean 10 s is 6.9 s
    d = Declared(live_default_profile())
    assert d.dws_left("ct6e-standard-4t", 5.0, rng) == 15.0
    assert d.provision_range("ct6e-standard-4t") == (5.0, 5.0)


def test_the_twins_declaration_is_the_forecasts_prior_and_says_so() -> None:
    from tests.eta.helpers import rayjob, tutorial_cluster

    twin = Twin(clock="virtual", seed=3)
    try:
        tutorial_cluster(twin)
        for i in (1, 2, 3):
            twin.create(rayjob(i, run=300))
            twin.advance(5)
        cfg = EtaConfig(replicas=4, workers=1, horizon=86400.0)
        fc = estimate(state_from_twin(twin), cfg)
        assert any("DWS wait: the twin's CapacityProfile" in line for line in fc.model), fc.model
        reasons = [r for j in fc.jobs.values() for r in j.reasoning if r.startswith("its run time")]
        assert reasons and all("twin.flexq.dev/run-seconds" in r for r in reasons), reasons
        real = estimate(state_from_twin(twin, declared=False), cfg)
        assert not any("the twin's" in line for line in real.model), real.model
        assert state_from_twin(twin, declared=False).twin is None
    finally:
        twin.close()


@pytest.mark.parametrize("declared", [True, False])
def test_a_request_whose_nodes_are_being_made_starts_on_them(declared: bool) -> None:
    """The instant falls while DWS's grant of job 2 is being made: its pool's nodes exist, not Ready yet, and its
    ProvisioningRequest is not Provisioned. Those nodes are its own: it starts on them within seconds (it waited
    for them to scale down, 5-10 minutes, read as any pool's idle nodes: the live tutorial's job 2 was forecast
    9 minutes away and started 6 s later)."""
    from flexq.forecast.jobs import started_at
    from tests.eta.helpers import rayjob, tutorial_cluster

    twin = Twin(clock="virtual", seed=1)
    try:
        tutorial_cluster(twin, profile=False)  # the live twin's cloud: nodes in 5 s, DWS grants in 20 s
        for i in (1, 2):
            twin.create(rayjob(i, run=60))
            twin.advance(1)

        def making() -> int:
            return sum(
                1
                for n in twin.list("Node")
                if "dws" in n["metadata"]["labels"].get("cloud.google.com/gke-nodepool", "")
                and not any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
            )

        for _ in range(120):
            if making():
                break
            twin.advance(1)
        assert making() == 4
        fc = estimate(state_from_twin(twin, declared=declared), EtaConfig(replicas=19, workers=1))
        (j2,) = [j for j in fc.jobs.values() if "dws-2" in j.workload]
        assert j2.median is not None and j2.high is not None and j2.median < 30, j2.reasoning
        twin.advance(300)
        (wl,) = [w for w in twin.list("Workload", "default") if "dws-2" in w["metadata"]["name"]]
        start = started_at(wl)
        assert start is not None
        assert j2.low is not None and j2.low - 5 <= start - fc.now <= j2.high, (start - fc.now, j2)
    finally:
        twin.close()


def test_a_curves_tail_resting_on_too_few_is_not_read() -> None:
    """Twenty waits seen, one of them 5 h; a request 4 h old: the curve would grant it at 5 h (the one wait that
    lasted longer) in half the draws, the rest in the 1/(n+1) tail beyond it. Read only while 3 last so long, it
    is the exponential tail of their mean."""
    from flexq.stats import sample_beyond

    seen = [600.0] * 19 + [5 * 3600.0]
    rng = random.Random(2)
    whole = [sample_beyond(seen, [], 4 * 3600.0, rng, 1800.0) for _ in range(2000)]
    assert sum(1 for x in whole if x == 5 * 3600.0) / len(whole) > 0.4
    rng = random.Random(2)
    rule = [sample_beyond(seen, [], 4 * 3600.0, rng, 1800.0, 3) for _ in range(2000)]
    assert sum(1 for x in rule if x == 5 * 3600.0) == 0
    assert 0.6 * 1800 < sorted(rule)[1000] - 4 * 3600.0 < 0.8 * 1800  # the exponential's median, ln 2 x mean
    # where at least 3 lasted so long the curve is read as before
    rng = random.Random(2)
    assert sorted(sample_beyond(seen, [], 60.0, rng, 1800.0, 3) for _ in range(2000))[1000] == 600.0
