"""The hedge back's budget (``flexq.fallback.costs``): against where each job would have run without the
fallback, and a class's hedges stopped once its running jobs are the budget dearer."""

from __future__ import annotations

from flexq.fallback.costs import CostLedger, _came_from


def test_where_a_job_would_have_run_without_the_fallback() -> None:
    moved = {"from": "on-demand", "to": "dws", "step": "moved"}
    assert _came_from(moved, "dws") == "on-demand"  # moved off a stocked-out plan A: cheaper on plan B
    assert _came_from({**moved, "step": "returned"}, "on-demand") is None  # back where it would have run
    hedged = {**moved, "hedged": True}
    assert _came_from(hedged, "dws") is None  # Kueue put it on plan B itself
    assert _came_from({**hedged, "step": "returned"}, "on-demand") == "dws"  # sent back: dearer
    capped = {**hedged, "capped": True}  # the fallback's quota cap put it on plan B
    assert _came_from(capped, "dws") == "on-demand"
    assert _came_from({**capped, "step": "returned"}, "on-demand") is None
    assert _came_from({**moved, "kept": True}, "dws") is None  # a rescue kept off plan A: lost without it
    assert _came_from({}, "on-demand") is None


def test_a_class_is_sent_back_only_within_its_budget() -> None:
    ledger = CostLedger()
    assert ledger.affordable(1000, 0.03)  # nothing spent, nothing added
    ledger.spend[1000], ledger.extra[1000] = 103.0, 3.0  # 3 % dearer than the 100 it would have spent
    assert ledger.affordable(1000, 0.03)
    ledger.spend[1000], ledger.extra[1000] = 104.0, 4.0
    assert not ledger.affordable(1000, 0.03)
    assert "+4.0% dearer" in ledger.describe(1000)
    assert ledger.affordable(100, 0.03)  # per class
    ledger.spend[100], ledger.extra[100] = 80.0, -20.0  # its moves saved it money: room for hedges
    assert ledger.affordable(100, 0.03)
