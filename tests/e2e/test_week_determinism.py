"""A smaller week of ``bench/week_rayjobs.py`` (the whole twin: Kueue, DWS, the autoscaler, spot preemption,
KubeRay on the simulated executor): the same seed gives the same per-job results; another seed does not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import week_rayjobs


def _results(seed: int) -> tuple[dict, dict]:
    twin, submitted, _wall, _cpu = week_rayjobs.run_week(40, seed)
    try:
        return week_rayjobs.week_results(twin, submitted), twin.billing()
    finally:
        twin.close()


@pytest.mark.slow
def test_same_seed_same_per_job_results_and_bill() -> None:
    first, bill = _results(5)
    assert len(first) == 40
    plans = {r[2] for r in first.values()}
    assert "on-demand" in plans and "dws" in plans  # both plans served the week
    assert sum(1 for r in first.values() if r[0] == "Complete") >= 35
    again, bill_again = _results(5)
    assert again == first
    assert bill_again == bill
    other, _ = _results(6)
    assert other != first
