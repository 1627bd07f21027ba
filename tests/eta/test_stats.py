"""The shared statistics of waits where some are still under way (``flexq.stats``)."""

from __future__ import annotations

import random

import pytest

from flexq.stats import exponential_mean, km_median, km_quantile, quantile, sample_beyond


def test_kaplan_meier_counts_the_waits_still_under_way() -> None:
    # three finished, two still waiting past all of them: the median is not the finished ones' (2)
    assert km_median([1.0, 2.0, 3.0], [10.0, 10.0]) == 3.0
    # most still waiting: the median lies beyond what was seen
    assert km_median([1.0], [5.0, 6.0, 7.0]) is None
    assert km_quantile([1.0, 2.0, 3.0, 4.0], [], 0.25) == 1.0
    assert km_quantile([1.0, 2.0, 3.0, 4.0], [], 0.75) == 3.0


def test_the_exponential_fit_uses_censored_time_and_the_prior() -> None:
    assert exponential_mean([], [], 1800.0) == 1800.0
    # 2 ends over 100 + 300 s done, 600 s still waiting, one prior of 1800 s: (1000 + 1800) / 3
    assert exponential_mean([100.0, 300.0], [600.0], 1800.0) == pytest.approx(2800.0 / 3)


def test_a_draw_beyond_what_has_run_is_longer_than_it() -> None:
    done = [60.0, 120.0, 600.0, 3600.0]
    rng = random.Random(1)
    draws = [sample_beyond(done, [], 700.0, rng, 1000.0) for _ in range(200)]
    assert min(draws) > 700.0
    assert 3600.0 in draws  # the curve's own step past 700 s
    assert any(d > 3600.0 for d in draws)  # and the tail beyond the longest seen
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
