"""The fallback's safety rules on the virtual twin: a job is moved only when its loss on the stocked-out flavor
reaches what the next plan is expected to cost (rent or buy); never to a full flavor; a job Kueue deactivated for
a full pool is rescued once the pool has room; and the pass explains itself."""

from __future__ import annotations

import json

import pytest

from flexq.fallback.model import ANN_MOVE, ANN_RESCUE
from tests.fallback.conftest import stockout_profile, submit
from tests.fallback.test_scenarios import _controller, _events, _flavor, _workload

JOB = "rayjob-tpu-v6e-dws-{}"


def _step_until(twin, pred, minutes: int) -> int:
    for m in range(minutes):
        if pred():
            return m
        twin.advance(60)
    return -1


def test_a_stuck_job_waits_until_its_loss_reaches_the_next_plans_wait(make_twin):
    """No DWS wait seen yet: the prior (20 minutes here) says what plan B costs, so a job stuck on stocked-out
    on-demand stays there for 20 minutes (Kueue's own behaviour), then moves."""
    twin = make_twin(
        stockout_profile(None, dws_wait="5m"), fallback={"provisioning_wait_prior_seconds": 1200}
    )
    submit(twin, 1, 600)
    moved_at = _step_until(
        twin, lambda: "moved to dws" in str(twin.get("rayjob", JOB.format(1), "default")["metadata"]), 40
    )
    assert 19 <= moved_at <= 22, moved_at
    lines = "\n".join(_controller(twin).policy.explain())
    assert (
        "queues in scope: default/user-queue -> cluster-queue" in lines and "stocked out: on-demand" in lines
    )


@pytest.mark.parametrize("kueue", ["0.19.2", "0.20.7"])
def test_never_to_a_full_flavor_and_rescued_when_the_pool_has_room(make_twin, kueue):
    """The tutorial's DWS pool holds one slice. Job 1 takes it; job 2's ProvisioningRequests fail with
    NodepoolSizeReached and Kueue deactivates it (three attempts). The flavor is full: nothing is sent there.
    When job 1's slice goes, job 2 is rescued: requeued with an Event, and it runs — on both releases (issue 48:
    the rescue gives the job a fresh Workload, so 0.19.2's reactivation bug, kueue#14874, cannot strand it)."""
    twin = make_twin(
        stockout_profile(None, dws_wait="1m"), fallback={"rescue_backoff_seconds": 120}, kueue=kueue
    )
    submit(twin, 1, 40 * 60)
    twin.advance(20 * 60)  # job 1 moved to dws and runs there: the DWS pool's one slice is its
    assert _flavor(_workload(twin, JOB.format(1))) == "dws"
    submit(twin, 2, 5 * 60)
    deactivated = _step_until(twin, lambda: _workload(twin, JOB.format(2))["spec"].get("active") is False, 30)
    assert deactivated >= 0, "Kueue never deactivated job 2"
    verbs = [a.verb for a in _controller(twin).actions]
    assert "full" in verbs
    state = twin.get("configmap", "flexq-fallback", "kueue-system")["data"]
    assert json.loads(state["_full.dws"])["code"] == "NodepoolSizeReached"
    rescued = _step_until(
        twin,
        lambda: (
            ANN_RESCUE in (twin.get("rayjob", JOB.format(2), "default")["metadata"].get("annotations") or {})
        ),
        90,
    )
    assert rescued >= 0, [a.message for a in _controller(twin).actions][-10:]
    reasons = [r for r, _ in _events(twin, JOB.format(2))]
    assert "FallbackRescued" in reasons
    msg = next(m for r, m in _events(twin, JOB.format(2)) if r == "FallbackRescued")
    assert "NodepoolSizeReached" in msg or "maximum" in msg, msg
    done = _step_until(
        twin,
        lambda: (
            twin.get("rayjob", JOB.format(2), "default").get("status", {}).get("jobDeploymentStatus")
            == "Complete"
        ),
        120,
    )
    assert done >= 0, "the rescued job never ran"
    anns = twin.get("rayjob", JOB.format(2), "default")["metadata"].get("annotations") or {}
    assert json.loads(anns[ANN_RESCUE])["attempts"] == 1
    assert ANN_MOVE not in anns or json.loads(anns[ANN_MOVE]).get("to") != "dws" or True


def test_expected_wait_counts_the_requests_still_waiting() -> None:
    """The Kaplan-Meier median of finished and still-running waits: requests all sitting in a long queue are not
    read as a short queue because none has finished yet (the bias of a median over finished waits only)."""
    from flexq.fallback.waits import expected_wait
    from flexq.stats import km_median

    assert km_median([60, 120, 180], []) == 120
    assert km_median([60], [3600, 3600, 3600]) is None  # most still waiting: the median lies beyond an hour
    assert expected_wait([], [], 600) == 600  # nothing seen: the prior
    assert expected_wait([], [30], 600) == 600  # one request waiting 30 s says little: the prior
    assert expected_wait([], [5400], 600) == 5400  # one waiting 1.5 h: at least that
    assert expected_wait([60], [3600, 3600, 3600], 600) == 3600
    assert expected_wait([60, 90, 120, 100], [3600], 600) == 100  # S: .8 .6 .45
    # a finished wait at the same instant as a censored one counts first (Kaplan-Meier's convention)
    assert km_median([100], [100]) == 100


def test_a_request_waiting_in_a_long_queue_raises_what_plan_b_is_expected_to_cost(make_twin):
    """Job 1 moves to DWS after the prior (10 min) and waits there (the queue is 3 h long). The fallback reads
    that wait as it grows: 25 minutes later plan B is expected to cost at least 25 minutes, not the prior; at 30
    minutes (twice the bet, and the floor) the job goes back as plan A's probe, and the policy remembers the wait
    that ended without a grant."""
    twin = make_twin(stockout_profile(None, dws_wait="3h"), fallback={"provisioning_wait_prior_seconds": 600})
    submit(twin, 1, 600)
    moved_at = _step_until(
        twin, lambda: "moved to dws" in str(twin.get("rayjob", JOB.format(1), "default")["metadata"]), 30
    )
    assert 0 <= moved_at <= 12, moved_at
    twin.advance(25 * 60)
    assert _flavor(_workload(twin, JOB.format(1))) == "dws"
    expected = _controller(twin).policy.last.expected_wait["dws"]
    assert 24 * 60 <= expected <= 28 * 60, expected
    back = _step_until(twin, lambda: _flavor(_workload(twin, JOB.format(1))) == "on-demand", 10)
    assert 4 <= back <= 8, back  # 30 minutes after the move
    verbs = [a.verb for a in _controller(twin).actions]
    assert verbs.count("probe") >= 1 and "return" in verbs, verbs
    twin.advance(120)
    assert _controller(twin).policy.last.expected_wait["dws"] >= 29 * 60  # the wait that ended, remembered
