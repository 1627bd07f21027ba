"""Issue 46: a stock-out's age is read from the Workloads' record, not only from the autoscaler's events.

The API server keeps an Event an hour, and waitForPodsReady evicts a job whose pods wait 30 minutes, so a
stock-out that had lasted a day was seen as one begun within the hour — and the forward runs expected it to end
within the hour too (a job held by a whole-day stock-out was predicted to start, and was deactivated). A job's
``PodsReady=False`` keeps the time its pods first waited through its evictions and readmissions, and a job that
never started keeps it too: the model now reads the stock-out as at least as old as the oldest of them (not
older than the pool's last capacity)."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.clock import format_time
from flexq.eta import state_from_twin
from flexq.forecast.fit import fit
from tests.eta.helpers import rayjob, tutorial_cluster

H = 3600.0


def _stocked_out_twin(seed: int, before: float, hours: int, gap: float) -> tuple[Twin, float]:
    """The tutorial's cluster whose on-demand v6e is stocked out from ``before`` seconds after the jobs begin (DWS
    never grants in the span): one job every ``gap`` seconds for ``hours`` hours; returns the twin and when the
    stock-out began."""
    twin = Twin(clock="virtual", seed=seed)
    p = tutorial_profile()
    p["metadata"]["name"] = "default"
    p["spec"]["defaults"]["queueWait"] = {"fixed": "7d"}
    twin.core.project.create(p)
    tutorial_cluster(twin, profile=False)
    prof = twin.core.project.get("CapacityProfile", "default")
    start = twin.now() + before
    rule = prof["spec"]["rules"][0]
    rule["stockoutMessage"] = "ZONE_RESOURCE_POOL_EXHAUSTED"
    rule["windows"] = [{"start": f"{before:.0f}s", "end": "1000h", "available": 0}]
    prof["spec"]["origin"] = format_time(twin.now())
    twin.core.project.update(prof)
    end = twin.now() + hours * H
    i = 0
    while twin.now() < end:
        twin.apply(rayjob(i, run=1200))
        i += 1
        twin.advance(min(gap, end - twin.now()))
    return twin, start


@pytest.mark.parametrize(
    ("seed", "before", "hours", "gap"),
    [(1, 1800.0, 6, 3600.0), (2, 2 * H, 10, 2400.0), (3, 600.0, 4, 5400.0)],
)
def test_a_long_stock_out_is_seen_as_long_as_it_has_lasted(
    seed: int, before: float, hours: int, gap: float
) -> None:
    twin, began = _stocked_out_twin(seed, before, hours, gap)
    state = state_from_twin(twin)
    model = fit(state)
    assert [s.pool for s in model.stockouts] == ["on-demand-pool"], model.describe()
    seen = state.now - model.stockouts[0].since
    lasted = state.now - began
    # at least as old as the oldest job still waiting for it (within a PodsReady timeout and a back-off), and
    # never older than the pool's last capacity
    assert lasted - 2 * H <= seen <= lasted + 60.0, (seen / H, lasted / H, model.describe())
