"""The pure capacity model over a CapacityProfile."""

import random

import pytest
from pydantic import ValidationError

from flexq.api.capacity_profile import (
    CapacityProfile,
    harsh_profile,
    live_default_profile,
    parse_duration,
    parse_time,
    tutorial_profile,
)
from flexq.gke.capacity import CapacityModel

T0 = 1_800_000_000.0
H = 3600.0
D = 86400.0


def model(spec: dict) -> CapacityModel:
    return CapacityModel(
        {
            "apiVersion": "twin.flexq.dev/v1alpha1",
            "kind": "CapacityProfile",
            "metadata": {"name": "t"},
            "spec": spec,
        },
        origin=T0,
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90.0),
        ("90", 90.0),
        ("90s", 90.0),
        ("30m", 1800.0),
        ("2h", 7200.0),
        ("3d", 259200.0),
        ("1h30m", 5400.0),
        ("1w", 604800.0),
        ("0.5h", 1800.0),
    ],
)
def test_durations(text, seconds) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["-1s", "2 hours", "h", "", -5, True])
def test_bad_durations(bad) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_times_absolute_and_relative() -> None:
    assert parse_time("2h", T0) == T0 + 2 * H
    assert parse_time("2027-01-15T08:00:00Z", 0.0) == T0  # 1.8e9 s after the epoch
    assert parse_time("1970-01-01T01:00:00Z", T0) == 3600.0
    with pytest.raises(ValueError):
        parse_time("1970-01-01T01:00:00", T0)  # no zone


def test_profiles_validate_and_refuse_mistakes() -> None:
    for p in (live_default_profile(), tutorial_profile(), harsh_profile()):
        CapacityProfile.model_validate(p)
    with pytest.raises(ValidationError):  # unknown field
        CapacityProfile.model_validate({"spec": {"rules": [{"availble": 3}]}})
    with pytest.raises(ValidationError):  # two delay kinds at once
        CapacityProfile.model_validate({"spec": {"defaults": {"queueWait": {"fixed": "1h", "never": True}}}})
    with pytest.raises(ValidationError):
        CapacityProfile.model_validate({"spec": {"defaults": {"available": "lots"}}})
    with pytest.raises(ValidationError):
        CapacityProfile.model_validate({"spec": {"rules": [{"match": {"provisioningModels": ["reserved"]}}]}})


def test_default_profile_is_unlimited_and_quick() -> None:
    m = CapacityModel(live_default_profile(), origin=T0)
    assert m.can_obtain("us-east5-b", "ct6e-standard-4t", "on-demand", T0, in_use=1000, want=4).ok
    assert m.provision_seconds("us-east5-b", "ct6e-standard-4t", "on-demand", random.Random(1)) == 5
    assert m.queue_grant_time("us-east5-b", "ct6e-standard-4t", T0, random.Random(1)) == T0 + 20


def test_first_matching_rule_wins_per_field() -> None:
    m = model(
        {
            "defaults": {"available": "unlimited", "provisionTime": {"fixed": "1m"}},
            "rules": [
                {
                    "match": {
                        "locations": ["us-east5"],
                        "machineTypes": ["ct6e-*"],
                        "provisioningModels": ["on-demand"],
                    },
                    "available": 4,
                },
                {"match": {"machineTypes": ["ct6e-*"]}, "available": 100, "provisionTime": {"fixed": "3m"}},
            ],
        }
    )
    t = m.terms("us-east5-b", "ct6e-standard-4t", "on-demand")  # region prefix matches the zone
    assert t.available == 4 and t.provision_time.fixed == "3m"  # available from rule 1, time from rule 2
    assert m.terms("us-east5-b", "ct6e-standard-4t", "spot").available == 100
    assert m.terms("europe-west4-a", "n2-standard-16", "on-demand").available is None


def test_slices_are_all_or_nothing() -> None:
    m = model({"rules": [{"available": 6}]})
    assert m.can_obtain("z-a-1", "ct6e-standard-4t", "on-demand", T0, in_use=0, want=4).ok
    no = m.can_obtain("z-a-1", "ct6e-standard-4t", "on-demand", T0, in_use=4, want=4, project="p")
    assert not no.ok and no.retry_at is None
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in no.message and "projects/p/zones/z-a-1" in no.message


def test_stockout_window_then_recovery() -> None:
    m = model(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["on-demand"]},
                    "available": "unlimited",
                    "windows": [{"start": "0s", "end": "2h", "available": 0}],
                }
            ]
        }
    )
    during = m.can_obtain("us-east5-b", "ct6e-standard-4t", "on-demand", T0 + H, in_use=0, want=4)
    assert not during.ok and during.retry_at == T0 + 2 * H
    assert m.can_obtain("us-east5-b", "ct6e-standard-4t", "on-demand", T0 + 2 * H, in_use=0, want=4).ok
    assert m.can_obtain("us-east5-b", "ct6e-standard-4t", "spot", T0 + H, in_use=0, want=4).ok


def test_never_available() -> None:
    m = model({"rules": [{"available": 0, "stockoutMessage": "Nope, not today"}]})
    no = m.can_obtain("us-east5-b", "ct6e-standard-4t", "on-demand", T0, in_use=0, want=1)
    assert not no.ok and no.retry_at is None and no.message == "Nope, not today"


def test_queue_wait_kinds() -> None:
    rng = random.Random(3)
    fixed = model({"rules": [{"queueWait": {"fixed": "3d"}}]})
    assert fixed.queue_grant_time("l", "ct6e-standard-4t", T0 + 10, rng) == T0 + 10 + 3 * D
    sched = model({"rules": [{"queueWait": {"at": ["1h", "1d"]}}]})
    assert sched.queue_grant_time("l", "m", T0 + 2 * H, rng) == T0 + D
    assert sched.queue_grant_time("l", "m", T0 + 2 * D, rng) is None
    never = model({"rules": [{"queueWait": {"never": True}}]})
    assert never.queue_grant_time("l", "m", T0, rng) is None
    # the grant also waits for room: a zero-availability window delays it to the window's end
    blocked = model(
        {"rules": [{"queueWait": {"fixed": "1h"}, "windows": [{"start": 0, "end": "5h", "available": 0}]}]}
    )
    assert blocked.queue_grant_time("l", "m", T0, rng, want=4) == T0 + 5 * H


def test_random_draws_are_seeded_and_clipped() -> None:
    m = model({"rules": [{"queueWait": {"exponential": {"mean": "1d"}, "max": "3d", "min": "1h"}}]})
    a = [m.queue_grant_time("l", "m", T0, random.Random(42)) for _ in range(3)]
    assert a[0] == a[1] == a[2]
    rng = random.Random(9)
    waits = [m.queue_grant_time("l", "m", T0, rng) - T0 for _ in range(2000)]
    assert min(waits) >= H and max(waits) <= 3 * D
    assert 0.7 * D < sum(waits) / len(waits) < 1.1 * D  # mean of a clipped exp(1d)
    u = model({"rules": [{"provisionTime": {"uniform": {"min": "1m", "max": "2m"}}}]})
    draws = [u.provision_seconds("l", "m", "on-demand", rng) for _ in range(200)]
    assert min(draws) >= 60 and max(draws) <= 120


def test_spot_preemption() -> None:
    m = CapacityModel(harsh_profile(), origin=T0)
    rng = random.Random(5)
    times = [m.preemption_time("us-east5-b", "ct6e-standard-4t", "spot", T0, rng) for _ in range(500)]
    assert all(t is not None and t > T0 for t in times)
    assert 1.5 * H < sum(t - T0 for t in times) / 500 < 2.5 * H
    assert m.preemption_time("us-east5-b", "ct6e-standard-4t", "on-demand", T0, rng) is None


def test_harsh_profile_has_no_on_demand_tpus() -> None:
    m = CapacityModel(harsh_profile(), origin=T0)
    assert not m.can_obtain("us-east5-b", "ct6e-standard-4t", "on-demand", T0, in_use=0, want=1).ok
    assert m.can_obtain("us-east5-b", "n2-standard-16", "on-demand", T0, in_use=0, want=1).ok


def test_operation_times() -> None:
    assert CapacityModel(tutorial_profile(), origin=T0).operation_seconds("create_cluster") == 300
    assert CapacityModel(None, origin=T0).operation_seconds("create_node_pool") == 3


def test_a_rule_during_a_span_applies_only_to_requests_made_inside_it() -> None:
    """``match.during``: the ETA's warm-up (nodes at once for the jobs running at its instant), then the fitted
    terms; a request made outside every span falls through to the next rule that sets the field."""
    m = model(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["queued"], "during": [{"start": "0s", "end": "5m"}]},
                    "queueWait": {"fixed": "0s"},
                    "provisionTime": {"fixed": "1s"},
                },
                {"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": "2h"}},
            ],
            "defaults": {"provisionTime": {"fixed": "90s"}},
        }
    )
    rng = random.Random(1)
    assert m.queue_grant_time("us-east5-b", "ct6e-standard-4t", T0 + 60, rng) == T0 + 60
    assert m.queue_grant_time("us-east5-b", "ct6e-standard-4t", T0 + 300, rng) == T0 + 300 + 2 * H
    assert m.provision_seconds("us-east5-b", "ct6e-standard-4t", "queued", rng, T0 + 10) == 1.0
    assert m.provision_seconds("us-east5-b", "ct6e-standard-4t", "queued", rng, T0 + 400) == 90.0
    # without a time, no span can hold the request: the rule is skipped
    assert m.provision_seconds("us-east5-b", "ct6e-standard-4t", "queued", rng) == 90.0
    with pytest.raises(ValidationError):
        model({"rules": [{"match": {"during": [{"start": "soon"}]}, "available": 0}]})


def test_empirical_waits_draw_as_the_eta_draws_them() -> None:
    """``empirical``: the Kaplan-Meier curve of the waits seen, one draw in n + 1 beyond the longest by an
    exponential tail — the law ``flexq eta``'s forward runs draw DWS waits from, so a study written by
    ``flexq simulate --from-cluster`` runs the same one (it was an exponential of their mean: a median of 8 min
    where three waits of 5 min had been seen)."""
    from flexq.forecast.config import EtaConfig
    from flexq.forecast.model import FittedCapacity

    def both(min_at_risk: int) -> tuple[list[float], list[float]]:
        cfg = EtaConfig(min_at_risk=min_at_risk)
        fitted = FittedCapacity(now=T0, cfg=cfg, dws_done=[300.0, 300.0, 300.0], dws_waiting=[60.0])
        fitted.dws_mean = 690.0
        wait = fitted.profile(None)["spec"]["defaults"]["queueWait"]
        assert wait["empirical"]["seen"] == [300.0, 300.0, 300.0] and wait["empirical"]["censored"] == [60.0]
        assert wait["empirical"]["minAtRisk"] == min_at_risk
        m = model({"defaults": {"queueWait": wait}})
        rng = random.Random(5)
        draws = sorted(m.queue_grant_time("l", "m", T0, rng) - T0 for _ in range(4000))
        eta_rng = random.Random(6)
        return draws, sorted(fitted.draw_dws(0.0, eta_rng) for _ in range(4000))

    draws, eta = both(1)  # the whole curve
    assert draws[2000] == 300.0 == eta[2000]  # both medians the waits seen
    beyond = sum(1 for d in draws if d > 300.0) / len(draws)
    assert abs(beyond - 1 / 5) < 0.03, beyond  # 4 observations: one draw in 5 outlasts them all
    assert abs(beyond - sum(1 for d in eta if d > 300.0) / len(eta)) < 0.03
    # the ETA's rule: four observations are too few to read the curve at all, so both draw the exponential tail
    draws, eta = both(10)
    assert abs(draws[2000] - 690.0 * 0.693) < 60 and abs(eta[2000] - 690.0 * 0.693) < 60, (
        draws[2000],
        eta[2000],
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"empirical": {"seen": [], "censored": [], "tailMean": "1m"}},
        {"empirical": {"seen": [-1], "tailMean": "1m"}},
        {"empirical": {"seen": [1], "tailMean": "soon"}},
        {"empirical": {"seen": list(range(10_001)), "tailMean": "1m"}},
        {"empirical": {"seen": [1], "tailMean": "1m"}, "fixed": "1m"},
    ],
)
def test_empirical_delays_refused_with_the_field(bad: dict) -> None:
    with pytest.raises(ValidationError) as err:
        model({"defaults": {"queueWait": bad}})
    assert "queueWait" in str(err.value) or "queue_wait" in str(err.value)


def test_a_request_already_queued_is_granted_beyond_its_age() -> None:
    """A forecast's request that continues one queued ``waited`` seconds: an empirical or log-normal wait is drawn
    beyond that age (what is left of it), as the fast engine draws it; a fixed or uniform one likewise (drawn until
    a draw outlasts the age: a request that has waited 2 of its fixed 5 minutes has 3 left), an exponential one
    afresh (it keeps no memory)."""
    rng = random.Random(11)
    emp = model({"defaults": {"queueWait": {"empirical": {"seen": [60, 300, 300, 900], "tailMean": "10m"}}}})
    left = [emp.queue_grant_time("l", "m", T0, rng, waited=120.0) - T0 for _ in range(3000)]
    assert (
        min(left) >= 0 and abs(sum(1 for x in left if x == 180.0) / len(left) - 0.5) < 0.05
    )  # 300 of 300,300,900
    logn = model({"defaults": {"queueWait": {"lognormal": {"median": "10m", "sigma": 1.0}}}})
    fresh = sorted(logn.queue_grant_time("l", "m", T0, rng) - T0 for _ in range(4000))
    aged = sorted(logn.queue_grant_time("l", "m", T0, rng, waited=1800.0) - T0 for _ in range(4000))
    assert abs(fresh[2000] - 600) < 60 and min(aged) >= 0  # a new request: the law; an aged one: what is left
    # P(T > 60 min | T > 30 min) for log-normal(10 min, 1): 0.269
    assert abs(sum(1 for x in aged if 1800 + x > 3600) / len(aged) - 0.269) < 0.03
    fixed = model({"defaults": {"queueWait": {"fixed": "5m"}}})
    assert fixed.queue_grant_time("l", "m", T0, rng, waited=120.0) == T0 + 180
    assert fixed.queue_grant_time("l", "m", T0, rng, waited=400.0) == T0  # overdue: granted now
    assert fixed.queue_grant_time("l", "m", T0, rng) == T0 + 300  # a new request: the law
