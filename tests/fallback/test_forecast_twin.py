"""The fallback deciding by forecast, on the virtual twin: a move is made when the forward run says it helps (and
said with its figures), refused when it does not (the job stays as Kueue put it, and the pass says why)."""

from __future__ import annotations

from tests.fallback.conftest import stockout_profile, submit
from tests.fallback.test_rent_or_buy import _step_until
from tests.fallback.test_scenarios import _controller, _events, _flavor, _workload

JOB = "rayjob-tpu-v6e-dws-{}"
FORECAST = {"decide_by": "forecast", "provisioning_wait_prior_seconds": 1200}


def test_a_long_stockout_moves_the_job_by_forecast_and_says_why(make_twin):
    """On-demand stocked out for good, DWS grants in 5 minutes: the forecast sees the job wait for the stock-out
    if it stays and start after DWS's wait if moved — moved, with the forecast's figures in the pass's
    explanation, and the job runs to its end on DWS. (The rules' rent-or-buy wait of the 20-minute prior is not
    waited out: the forecast decides.)"""
    twin = make_twin(stockout_profile(None, dws_wait="5m"), fallback=FORECAST)
    submit(twin, 1, 600)
    key = f"default/{_workload(twin, JOB.format(1))['metadata']['name']}"
    moved_at = _step_until(
        twin, lambda: "moved to dws" in str(twin.get("rayjob", JOB.format(1), "default")["metadata"]), 40
    )
    assert 0 <= moved_at < 15, moved_at
    policy = _controller(twin).policy
    verdict = policy.judge.last[key]
    assert verdict.make and verdict.start_move < verdict.start_stay, verdict.describe()
    assert verdict.replicas == policy.cfg.forecast_replicas and policy.judge.runs >= 2 * verdict.replicas
    events = dict(_events(twin, JOB.format(1)))
    assert "FallbackEvicting" in events and "valued cost" in events.get("FallbackForecast", ""), events
    done = _step_until(
        twin,
        lambda: (
            twin.get("rayjob", JOB.format(1), "default").get("status", {}).get("jobDeploymentStatus")
            == "Complete"
        ),
        60,
    )
    assert done >= 0 and _flavor(_workload(twin, JOB.format(1))) == "dws"


def test_a_move_the_forecast_refuses_is_not_made_and_the_pass_says_so(make_twin):
    """The same week, but the user asks a move to save at least ten runs of the job on plan A: no move is worth
    that, so the job stays where Kueue put it, every refusal is an action of the pass, and ``explain()`` gives
    the forecast's figures; a refused move is judged again only after ``forecast_recheck_seconds``."""
    twin = make_twin(
        stockout_profile(None, dws_wait="5m"),
        fallback={**FORECAST, "forecast_margin": 10.0, "forecast_recheck_seconds": 600},
    )
    submit(twin, 1, 600)
    twin.advance(25 * 60)  # (the tutorial's waitForPodsReady evicts it at 30 minutes)
    wl = _workload(twin, JOB.format(1))
    assert _flavor(wl) == "on-demand" and "moved" not in str(twin.get("rayjob", JOB.format(1), "default"))
    ctl = _controller(twin)
    refusals = [a for a in ctl.actions if a.verb == "refuse"]
    # judged about every 10 minutes (the recheck), not at every pass
    assert 2 <= len(refusals) <= 3, [a.message for a in refusals]
    assert "does not help the job enough" in refusals[0].message
    lines = "\n".join(ctl.policy.explain())
    assert "forecast (" in lines and "if moved" in lines, lines
