"""Two of the fallback's judgements that a priority class's cost and wait hang on (issue 37): a gang only partly
placed on a stocked-out flavor has not started (its placed pods hold nodes and do nothing), and a flavor whose
stock-outs have always ended sooner than the next flavor provisions keeps its jobs (``waits.StockoutMemory``)."""

from __future__ import annotations

import json

from flexq.fallback.model import ANN_MOVE
from flexq.fallback.waits import StockoutMemory
from tests.fallback.conftest import stockout_profile, submit
from tests.fallback.test_scenarios import _controller, _flavor, _workload

JOB = "rayjob-tpu-v6e-dws-{}"


def test_what_is_left_of_a_stock_out_by_the_ones_that_ended() -> None:
    m = StockoutMemory()
    assert m.left("on-demand", 0.0) is None  # none ended yet: nothing says it ends soon
    for minutes in (30, 45, 40):
        m.record("on-demand", minutes * 60.0)
    assert m.left("on-demand", 10 * 60.0) == 30 * 60.0  # of 20, 30 and 35 minutes left, the median
    assert m.left("on-demand", 42 * 60.0) == 3 * 60.0
    assert m.left("on-demand", 50 * 60.0) is None  # already the longest seen
    assert m.left("dws", 0.0) is None
    for _ in range(100):
        m.record("on-demand", 60.0)
    assert len(m.ended["on-demand"]) == 20  # bounded


def _two_slices(twin, job_id: int, run_seconds: int) -> None:
    from flexq.cli import tutorial as T

    doc = (
        T.rayjob_yaml(job_id)
        .replace(
            'kueue.x-k8s.io/elastic-job: "true"',
            f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
        )
        .replace("- replicas: 1\n        minReplicas: 1", "- replicas: 2\n        minReplicas: 2")
    )
    twin.apply(doc)
    twin.advance(2)


def test_a_gang_only_partly_placed_on_a_stocked_out_flavor_is_moved(make_twin) -> None:
    """Two on-demand slices of quota, one slice of nodes up and idle when the stock-out starts: a two-slice job
    is admitted on on-demand, four of its eight TPU pods bind to the idle nodes and the other four are refused
    capacity. Its placed pods do nothing (the Ray cluster waits for all its workers) while their nodes are
    billed; Kueue would evict it at waitForPodsReady's timeout only to admit it there again. It has not started:
    the fallback moves it to DWS, where it runs."""
    twin = make_twin(None, on_demand_slices=2, dws_max_nodes=8)
    submit(twin, 1, 15 * 60)
    twin.advance(20 * 60)
    assert twin.get("rayjob", JOB.format(1), "default")["status"]["jobDeploymentStatus"] == "Complete"
    twin.core.project.create(stockout_profile(None, dws_wait="5m"))  # one slice's nodes up, idle; no more
    _two_slices(twin, 2, 10 * 60)
    placed = []
    for _ in range(180):
        twin.advance(5)
        pods = [
            p
            for p in twin.list("pod", "default")
            if JOB.format(2) in p["metadata"]["name"] and "worker" in p["metadata"]["name"]
        ]
        placed.append(sum(1 for p in pods if (p.get("spec") or {}).get("nodeName")))
        if _flavor(_workload(twin, JOB.format(2))) == "dws":
            break
    assert 4 in placed, placed  # the gang was partly placed on on-demand
    move = json.loads(twin.get("rayjob", JOB.format(2), "default")["metadata"]["annotations"][ANN_MOVE])
    assert move["from"] == "on-demand" and move["to"] == "dws", move
    for _ in range(60):
        if twin.get("rayjob", JOB.format(2), "default")["status"].get("jobDeploymentStatus") == "Complete":
            break
        twin.advance(60)
    assert twin.get("rayjob", JOB.format(2), "default")["status"]["jobDeploymentStatus"] == "Complete"


def _windows_profile(windows: list[tuple[str, str]], dws_wait: str, origin: float) -> dict:
    p = stockout_profile(None, dws_wait=dws_wait, origin=origin)
    p["spec"]["rules"][0]["windows"] = [{"start": s, "end": e, "available": 0} for s, e in windows]
    return p


def test_a_flavor_whose_stock_outs_end_sooner_than_the_next_provisions_keeps_its_jobs(make_twin) -> None:
    """On-demand stocks out for an hour and a half at a time; DWS provisions in 25 minutes (the quota cap is off
    here: this is the moves' rule). In the first stock-out nothing says how long it lasts: a stuck job goes once
    its loss reaches DWS's expected wait (rent or buy; the prior here is 25 minutes). Once that stock-out has
    ended (a job's new node) the policy knows how long one lasts here: two jobs arriving an hour into the second
    have lost 25 minutes when a quarter of an hour is left of it, less than DWS takes: they stay, and run on
    on-demand when it is back (before: moved to DWS at 25 minutes, running 20 minutes later)."""
    twin = make_twin(
        None, fallback={"provisioning_wait_prior_seconds": 1500, "cap_quota": False}, on_demand_slices=2
    )
    twin.core.project.create(_windows_profile([("0s", "90m"), ("4h", "5h30m")], "25m", twin.now()))
    submit(twin, 1, 10 * 60)
    twin.advance(60 * 60)
    first = json.loads(twin.get("rayjob", JOB.format(1), "default")["metadata"]["annotations"][ANN_MOVE])
    assert first["to"] == "dws"  # no history: rent or buy
    twin.advance(35 * 60)
    submit(twin, 4, 10 * 60)  # on-demand is back: a new node of it closes the breaker
    twin.advance(4 * 3600 - 95 * 60 + 60)
    assert _controller(twin).policy.stockouts.ended.get("on-demand"), "the first stock-out's length"
    submit(twin, 5, 10 * 60)  # stuck at once: the second stock-out is seen (it is the probe, and stays)
    twin.advance(59 * 60)  # an hour into it
    submit(twin, 2, 10 * 60)
    submit(twin, 3, 10 * 60)
    twin.advance(28 * 60)
    explained = "\n".join(_controller(twin).policy.explain())
    assert "its stock-outs so far ended about" in explained, explained
    for _ in range(60):
        twin.advance(60)
        if all(
            twin.get("rayjob", JOB.format(j), "default")["status"].get("jobDeploymentStatus") == "Complete"
            for j in (2, 3)
        ):
            break
    for j in (2, 3):
        job = twin.get("rayjob", JOB.format(j), "default")
        assert ANN_MOVE not in (job["metadata"].get("annotations") or {}), (job["metadata"], explained)
        assert job["status"]["jobDeploymentStatus"] == "Complete"
        assert _flavor(_workload(twin, JOB.format(j))) == "on-demand", explained
