"""How the fallback judges a move by forecast (``flexq.fallback.forecast``): the verdict's rule over forward-run
outlooks, the value of waiting a class states, and the configuration's refusals. The outlooks are written here
(the forward run itself is ``tests/forecast``'s and the twin tests' subject), so each rule is checked alone."""

from __future__ import annotations

from typing import Any

import pytest

from flexq.fallback.forecast import ANN_HOUR_OF_WAITING, Candidate, ForecastJudge
from flexq.fallback.model import FallbackConfig
from flexq.fallback.view import WorkloadView
from flexq.forecast.moves import Comparison, Outlook

H = 3600.0
PRICES = {"on-demand": 1.0, "dws": 0.5}


def _w(name: str, priority: int, cls: str = "") -> WorkloadView:
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"priority": priority, **({"priorityClassName": cls} if cls else {})},
    }
    return WorkloadView(obj, f"default/{name}", "cq", ("RayJob", "default", name))


def _outlook(priority: int, starts: list[float | None], plan: str) -> Outlook:
    o = Outlook(priority=priority, starts=list(starts))
    o.plans = [plan if s is not None else "" for s in starts]
    return o


def _cmp(base: dict[str, Outlook], moved: dict[str, Outlook], run: float = H) -> Comparison:
    c = Comparison(
        horizon=12 * H, replicas=len(next(iter(base.values())).starts), baseline=base, candidates={}
    )
    c.candidates["move:default/j:dws"] = moved
    c.run_seconds = {"default/j": run}
    return c


def _cand(w: WorkloadView, kind: str = "move", job: dict | None = None) -> Candidate:
    target = "dws" if kind == "move" else "on-demand"
    c = Candidate(kind, w, job or {"metadata": {}}, "on-demand", target, ["worker"])
    return c


def _judge(**cfg: Any) -> ForecastJudge:
    return ForecastJudge(FallbackConfig(decide_by="forecast", **cfg))


def test_a_move_that_helps_the_job_and_delays_no_one_above_is_made() -> None:
    j = _w("j", 100)
    base = {"default/j": _outlook(100, [3 * H, 2 * H, 4 * H], "worker=on-demand")}
    moved = {"default/j": _outlook(100, [0.5 * H, 0.4 * H, 0.6 * H], "worker=dws")}
    v = _judge()._verdict(_cand(j), _cmp(base, moved), PRICES)
    assert v.make, v.describe()
    assert v.start_move == pytest.approx(0.5 * H) and v.start_stay == pytest.approx(3 * H)
    # valued in hours of the job on plan A: waiting at 1 an hour, its run at the flavor's relative price
    assert v.valued_stay == pytest.approx(3.0 + 1.0) and v.valued_move == pytest.approx(0.5 + 0.5)
    assert "if moved" in v.describe() and "3 replicas" in v.describe()


def test_a_move_that_delays_a_job_of_higher_or_equal_priority_is_refused_and_names_it() -> None:
    j = _w("j", 100)
    for other_priority in (100, 1000):
        base = {
            "default/j": _outlook(100, [3 * H] * 3, "worker=on-demand"),
            "default/other": _outlook(other_priority, [600.0] * 3, "worker=dws"),
        }
        moved = {
            "default/j": _outlook(100, [600.0] * 3, "worker=dws"),
            "default/other": _outlook(other_priority, [2 * H] * 3, "worker=dws"),
        }
        v = _judge()._verdict(_cand(j), _cmp(base, moved), PRICES)
        assert not v.make and v.delayed and v.delayed[0][0] == "default/other", v.describe()
        assert "default/other" in v.why


def test_a_lower_priority_job_delayed_does_not_stop_a_move_and_the_tolerance_holds() -> None:
    j = _w("j", 1000)
    base = {
        "default/j": _outlook(1000, [3 * H] * 2, "worker=on-demand"),
        "default/low": _outlook(100, [600.0] * 2, "worker=dws"),
        "default/peer": _outlook(1000, [600.0] * 2, "worker=dws"),
    }
    moved = {
        "default/j": _outlook(1000, [600.0] * 2, "worker=dws"),
        "default/low": _outlook(100, [5 * H] * 2, "worker=dws"),
        "default/peer": _outlook(1000, [630.0] * 2, "worker=dws"),  # 30 s later: within the 60 s tolerance
    }
    assert _judge()._verdict(_cand(j), _cmp(base, moved), PRICES).make
    strict = _judge(forecast_tolerance_seconds=10.0)._verdict(_cand(j), _cmp(base, moved), PRICES)
    assert not strict.make and strict.delayed[0][0] == "default/peer"


def test_a_gain_the_paired_replicas_do_not_agree_on_is_not_bet_on() -> None:
    """The replicas are paired (common random numbers): a move is made only when its mean gain stands out of
    their spread (one standard error), not on the luck of a few draws."""
    j = _w("j", 100)
    base = {"default/j": _outlook(100, [4 * H, 0.1 * H, 0.1 * H], "worker=on-demand")}
    moved = {"default/j": _outlook(100, [0.2 * H, 0.9 * H, 0.9 * H], "worker=dws")}
    v = _judge()._verdict(_cand(j), _cmp(base, moved), PRICES)
    assert v.start_move < v.start_stay and not v.make and "not surely" in v.why, v.describe()
    steady = {"default/j": _outlook(100, [1.2 * H, 1.0 * H, 1.1 * H], "worker=on-demand")}
    assert _judge()._verdict(_cand(j), _cmp(steady, moved), PRICES).make


def test_a_job_not_started_within_the_horizon_counts_at_the_horizon() -> None:
    j = _w("j", 100)
    base = {"default/j": _outlook(100, [None, None], "")}
    moved = {"default/j": _outlook(100, [H, None], "worker=dws")}
    v = _judge()._verdict(_cand(j), _cmp(base, moved), PRICES)
    assert v.start_stay == pytest.approx(12 * H) and v.start_move == pytest.approx(6.5 * H)
    assert v.started_move == pytest.approx(0.5) and "50% within the horizon" in v.describe()
    assert v.make


def test_the_value_of_waiting_a_class_states_decides_a_dearer_return() -> None:
    """Back to plan A (twice DWS's price) 20 minutes sooner on a 4-hour job: worth it when an hour of waiting is
    worth an hour of the job on plan A (the default), not when the class says it is worth almost nothing."""
    run = 4 * H
    base = {"default/j": _outlook(100, [0.5 * H] * 2, "worker=dws")}
    back = {"default/j": _outlook(100, [600.0] * 2, "worker=on-demand")}

    def verdict(judge: ForecastJudge, w: WorkloadView, job: dict | None = None) -> Any:
        c = _cand(w, "return", job)
        cmp = _cmp(base, back, run)
        cmp.candidates = {c.name: back}
        return judge._verdict(c, cmp, PRICES)

    cheap = verdict(_judge(wait_values={"batch": 0.01}), _w("j", 100, "batch"))
    assert not cheap.make and cheap.value == pytest.approx(0.01), cheap.describe()
    urgent = verdict(_judge(wait_values={"batch": 0.01, "urgent": 50.0}), _w("j", 100, "urgent"))
    assert urgent.make and urgent.value == pytest.approx(50.0)
    # a job's own annotation says it for that job; a value that is not a positive finite number is ignored
    job = {"metadata": {"annotations": {ANN_HOUR_OF_WAITING: "50"}}}
    assert verdict(_judge(wait_values={"batch": 0.01}), _w("j", 100, "batch"), job).make
    for bad in ("nan", "-1", "inf", "1e400", "lots"):
        job = {"metadata": {"annotations": {ANN_HOUR_OF_WAITING: bad}}}
        assert verdict(_judge(), _w("j", 100), job).value == pytest.approx(1.0), bad


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("decide_by", "magic", "decide_by: must be one of rules, forecast"),
        ("forecast_replicas", 0, "forecast_replicas: must be an integer from 1 to 64"),
        ("forecast_replicas", 2.5, "forecast_replicas: must be an integer"),
        ("forecast_horizon_seconds", 10.0, "forecast_horizon_seconds: must be a number from 60"),
        ("forecast_tolerance_seconds", float("nan"), "forecast_tolerance_seconds: must be a number"),
        ("wait_values", {"urgent": 0}, "wait_values['urgent']: must be a number above 0"),
        ("wait_values", {"urgent": True}, "wait_values['urgent']: must be a number above 0"),
    ],
)
def test_a_bad_forecast_setting_is_refused_naming_the_field(field: str, value: Any, words: str) -> None:
    with pytest.raises(ValueError, match=None) as err:
        FallbackConfig(**{field: value})
    assert words in str(err.value)


def test_a_job_that_ends_between_two_passes_is_history_finished_when_it_was_last_missed() -> None:
    """The forecast's history of run times: a Workload seen admitted and then gone is finished at the pass that
    missed it (every pass observes; not the next pass that happens to run a forecast)."""
    from types import SimpleNamespace

    judge = _judge()
    w = _w("done", 100)
    w.obj["status"] = {"conditions": [{"type": "Admitted", "status": "True"}]}
    view = SimpleNamespace(workloads=[w], now=1000.0, job=lambda _w: {"metadata": {"name": "done"}})
    judge.observe(view)  # type: ignore[arg-type]
    assert not judge.history
    judge.observe(SimpleNamespace(workloads=[], now=1060.0, job=lambda _w: None))  # type: ignore[arg-type]
    ((wl, job),) = judge.history.values()
    finished = next(c for c in wl["status"]["conditions"] if c["type"] == "Finished")
    assert finished["lastTransitionTime"] == "1970-01-01T00:17:40Z" and job == {"metadata": {"name": "done"}}
    assert "Finished" not in str(w.obj)  # the live object is not touched
