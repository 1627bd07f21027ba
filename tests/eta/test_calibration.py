"""The interval's online correction (``flexq.eta.calibration``, adaptive conformal inference): on a stream whose
forward runs are wrong — every wait 3x, or a tenth of, what the model draws — the level follows the misses until the interval
covers its stated 80 % again, where a fixed 10-90 % interval keeps missing; predictions are resolved from starts,
from an interval's upper end passing, from the horizon passing; the state survives a round trip to disk."""

from __future__ import annotations

import math
import random

import pytest

from flexq.eta.calibration import Calibration, Prediction

HORIZON = 86400.0


def _quantile(q: float, mean: float) -> float:
    """The exponential's quantile (what the forward runs of a model with this mean wait would give)."""
    return -mean * math.log(max(1e-12, 1.0 - q))


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("wrong", [3.0, 0.1])
def test_the_correction_brings_a_wrong_model_back_to_its_stated_coverage(seed: int, wrong: float) -> None:
    rng = random.Random(seed)
    cal, fixed_hits, hits = Calibration(), [], []
    model_mean, now = 1800.0, 0.0
    for i in range(600):
        lo_q, hi_q = cal.quantiles("default/q class=train")
        low, high = _quantile(lo_q, model_mean), _quantile(hi_q, model_mean)
        cal.record([Prediction(f"ns/w{i}", "default/q class=train", now, low, high, HORIZON)])
        wait = rng.expovariate(1.0 / (model_mean * wrong))
        assert cal.resolve(now + wait, {f"ns/w{i}": now + wait}) == 1
        hits.append(low <= wait <= high)
        fixed_hits.append(_quantile(0.1, model_mean) <= wait <= _quantile(0.9, model_mean))
        now += 60.0
    last = hits[len(hits) // 2 :]
    assert 0.7 <= sum(last) / len(last) <= 0.9, sum(last) / len(last)
    assert sum(fixed_hits) / len(fixed_hits) < 0.7  # uncorrected, the wrong model's interval misses
    assert cal.seen["default/q class=train"] == 600
    assert "600 observed start(s) of its class" in cal.describe("default/q class=train")


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("wrong", [3.0, 0.3])
def test_the_median_follows_the_starts_until_half_come_before_it(seed: int, wrong: float) -> None:
    """Forward runs whose waits are ``wrong`` times the cluster's: the uncorrected median is late (or early) for
    most starts; corrected, half of the last starts come before it and its mean absolute error (what a median
    minimises) is smaller."""
    rng = random.Random(seed)
    cal, klass, model_mean, now = Calibration(), "default/q class=train", 1800.0, 0.0
    before, err, err_fixed = [], [], []
    for i in range(800):
        lo_q, hi_q = cal.quantiles(klass)
        med = _quantile(cal.point(klass), model_mean)
        p = Prediction.of(
            f"ns/w{i}", klass, now, _quantile(lo_q, model_mean), med, _quantile(hi_q, model_mean), HORIZON
        )
        cal.record([p])
        wait = rng.expovariate(1.0 / (model_mean / wrong))
        assert cal.resolve(now + wait, {f"ns/w{i}": now + wait}) == 1
        if i >= 400:
            before.append(wait <= med)
            err.append(abs(wait - med))
            err_fixed.append(abs(wait - _quantile(0.5, model_mean)))
        now += 60.0
    assert 0.4 <= sum(before) / len(before) <= 0.6, sum(before) / len(before)
    assert sum(err) < 0.9 * sum(err_fixed), (sum(err), sum(err_fixed))
    assert cal.mid_seen[klass] == 800
    assert "median corrected from 800 observed start(s)" in cal.describe(klass)
    assert (cal.point(klass) < 0.5) == (wrong > 1.0)


def test_a_median_is_judged_when_its_prediction_resolves() -> None:
    cal = Calibration()
    cal.record(
        [
            Prediction.of("ns/early", "c", 0.0, 100.0, 300.0, 500.0, HORIZON),  # starts at 200: before
            Prediction.of("ns/after", "c", 0.0, 100.0, 300.0, 500.0, HORIZON),  # starts at 400: after
            Prediction.of("ns/never", "c", 0.0, 100.0, 300.0, 500.0, HORIZON),  # upper end passes: after
            Prediction.of("ns/beyond", "c", 0.0, None, None, None, HORIZON),  # no median: not judged
        ]
    )
    assert cal.pending["ns/beyond"].low == HORIZON  # no low end: "not within the horizon"
    cal.resolve(HORIZON + 1.0, {"ns/early": 200.0, "ns/after": 400.0, "ns/never": None, "ns/beyond": None})
    assert cal.seen["c"] == 4 and cal.mid_seen["c"] == 3 and cal.mid_before["c"] == 1
    assert cal.point("c") == pytest.approx(0.5 + 0.05 * (2 * 0.5 - 0.5))


def test_predictions_are_resolved_by_starts_by_their_upper_end_and_by_the_horizon() -> None:
    cal = Calibration()
    cal.record(
        [
            Prediction("ns/inside", "c", 0.0, 100.0, 500.0, HORIZON),
            Prediction("ns/late", "c", 0.0, 100.0, 500.0, HORIZON),
            Prediction("ns/never", "c", 0.0, HORIZON, None, HORIZON),
            Prediction("ns/deleted", "c", 0.0, 10.0, 20.0, HORIZON),
            Prediction("ns/waiting", "c", 0.0, 100.0, 5000.0, HORIZON),
        ]
    )
    # a second prediction of a job with one open is not kept (one observation per wait)
    cal.record([Prediction("ns/inside", "c", 50.0, 0.0, 1.0, HORIZON)])
    assert cal.pending["ns/inside"].at == 0.0
    done = cal.resolve(600.0, {"ns/inside": 300.0, "ns/late": None, "ns/waiting": None}, {"ns/deleted"})
    assert done == 2  # inside (covered) and late (its upper end passed at 500 s: a miss known already)
    assert set(cal.pending) == {"ns/never", "ns/waiting"}
    assert cal.seen["c"] == 2 and cal.covered["c"] == 1
    assert cal.resolve(HORIZON + 1.0, {}) == 2  # never: covered; waiting: its upper end passed
    assert cal.seen["c"] == 4 and cal.covered["c"] == 2
    assert cal.level("c") == pytest.approx(0.2 + 0.05 * (4 * 0.2 - 2))  # two misses, two hits


def test_the_state_survives_a_round_trip_to_disk(tmp_path) -> None:
    cal = Calibration()
    cal.record([Prediction.of("ns/a", "c", 10.0, 1.0, 1.5, 2.0, HORIZON)])
    cal.update("c", True, True)
    path = tmp_path / "deep" / "cal.json"
    cal.save(path)
    back = Calibration.load(path)
    assert back.to_dict() == cal.to_dict()
    assert Calibration.load(tmp_path / "missing.json").to_dict() == Calibration().to_dict()
    (tmp_path / "bad.json").write_text("{not json")
    assert Calibration.load(tmp_path / "bad.json").seen == {}


def test_the_scheduling_cycle_is_measured_from_bursts_of_admissions() -> None:
    from flexq.clock import format_time
    from flexq.forecast.fit import _cycle_seconds
    from flexq.forecast.state import ClusterState

    def wl(i: int, at: float, cq: str = "cq") -> dict:
        return {
            "metadata": {"name": f"w{i}", "namespace": "ns"},
            "status": {
                "admission": {"clusterQueue": cq},
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "lastTransitionTime": format_time(at)}
                ],
            },
        }

    burst = [wl(i, 1000.0 + 2.0 * i) for i in range(8)]  # a deep queue: one admission every 2 s
    spread = [wl(100 + i, 5000.0 + 600.0 * i) for i in range(8)]  # arrivals admitted at once, far apart
    assert _cycle_seconds(ClusterState(now=9000.0, workloads=burst + spread)) == (2.0, 7)
    assert _cycle_seconds(ClusterState(now=9000.0, workloads=spread)) == (0.0, 0)


def test_a_start_is_judged_at_the_apis_resolution_of_whole_seconds() -> None:
    """A PodsReady time is recorded truncated to the second: recorded at 10 s, the job started in [10 s, 11 s), so
    an interval from 10.4 s may hold it; one from 11 s cannot. The high end needs no such care: the start is at
    least what is recorded."""
    p = Prediction.of("ns/wl", "", 0.0, 10.4, 12.0, 20.0, 86400.0)
    assert not p.miss(10.0)
    assert Prediction.of("ns/wl", "", 0.0, 11.0, 12.0, 20.0, 86400.0).miss(10.0)
    assert not p.miss(20.0) and p.miss(21.0)
