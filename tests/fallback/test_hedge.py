"""The hedge on the virtual twin: a job waiting for plan B because plan A is stocked out goes back to plan A when
plan A can take it first; the breaker survives a job that only reuses a node already up and closes on the first
new node; a stocked-out flavor's quota is capped to its nodes up while the backoff runs, and put back after."""

from __future__ import annotations

import json

from flexq.fallback.model import ANN_KEPT, ANN_MOVE, ANN_MOVED, ANN_QUOTA, SCALE_DOWN_DISABLED
from tests.fallback.conftest import stockout_profile, submit
from tests.fallback.test_scenarios import _controller, _events, _flavor, _workload

JOB = "rayjob-tpu-v6e-dws-{}"


def _twin(make_twin, end: str | None, dws_wait: str, **fallback):
    """Two on-demand slices of quota and pool; on-demand stocked out from 15 minutes from now until ``end``."""
    twin = make_twin(None, on_demand_slices=2, fallback=fallback or True)
    twin.core.project.create(stockout_profile(end, start="15m", dws_wait=dws_wait, origin=twin.now()))
    return twin


def _quota(twin, flavor: str = "on-demand") -> str:
    cq = twin.get("clusterqueue", "cluster-queue")
    for rg in cq["spec"]["resourceGroups"]:
        for f in rg["flavors"]:
            if f["name"] == flavor:
                return next(str(r["nominalQuota"]) for r in f["resources"] if r["name"] == "google.com/tpu")
    raise AssertionError(flavor)


def _state(twin, job: int) -> str | None:
    rj = twin.get("rayjob", JOB.format(job), "default")
    return rj.get("status", {}).get("jobDeploymentStatus")


def _step(twin, job: int, minutes: int, checks=()) -> None:
    """Advance minute by minute, checking that no job ever holds quota twice."""
    for _ in range(minutes):
        twin.advance(60)
        held: dict[str, int] = {}
        for wl in twin.list("workload", "default"):
            conds = {c["type"]: c["status"] for c in wl.get("status", {}).get("conditions", [])}
            if conds.get("QuotaReserved") == "True" and conds.get("Finished") != "True":
                owner = wl["metadata"]["ownerReferences"][0]["name"]
                held[owner] = held.get(owner, 0) + 1
        assert all(n == 1 for n in held.values()), f"a job holds quota twice: {held}"
        for check in checks:
            check()


def test_a_moved_job_goes_back_to_an_idle_plan_a_slice_before_dws_grants(make_twin):
    """Two on-demand slices of quota, one slice up (job 1) when the stock-out begins. Job 2 is admitted on
    on-demand, cannot get nodes, and is moved to DWS (which grants after 2 h). Meanwhile the flavor's quota is
    capped to the slice up, so job 3 goes straight to DWS without a move. When job 1 ends, its slice is idle:
    job 2 (the oldest waiting) goes back to on-demand and runs there at once; the breaker stays (a node that
    was already up proves nothing); the quota cap follows the nodes."""
    twin = _twin(make_twin, None, "2h")
    submit(twin, 1, 30 * 60)
    _step(twin, 1, 14)
    assert _state(twin, 1) == "Running"
    assert _flavor(_workload(twin, JOB.format(1))) == "on-demand"
    _step(twin, 2, 6)  # the stock-out has begun at 15 minutes
    submit(twin, 2, 20 * 60)
    for _ in range(8):
        _step(twin, 2, 1)
        job2 = twin.get("rayjob", JOB.format(2), "default")
        if "moved to dws" in (job2["metadata"].get("annotations") or {}).get(ANN_MOVED, ""):
            break
    assert "moved to dws" in job2["metadata"]["annotations"].get(ANN_MOVED, ""), job2["metadata"]
    assert _flavor(_workload(twin, JOB.format(2))) == "dws"
    assert _quota(twin) == "16"  # capped to the one slice up (the admin's 32 kept in the annotation)
    cq = twin.get("clusterqueue", "cluster-queue")
    assert str(json.loads(cq["metadata"]["annotations"][ANN_QUOTA])["on-demand"]["google.com/tpu"]) == "32"
    submit(twin, 3, 10 * 60)
    _step(twin, 3, 1)
    assert _flavor(_workload(twin, JOB.format(3))) == "dws"  # straight to plan B: steered at admission
    assert not [r for r, _ in _events(twin, JOB.format(3)) if r in ("FallbackEvicting", "FallbackMoved")]
    _step(twin, 3, 26)  # job 1 ends at about 32 minutes: its slice goes to job 2 (the oldest waiting)
    job2 = twin.get("rayjob", JOB.format(2), "default")
    assert "moved back to on-demand" in job2["metadata"]["annotations"][ANN_MOVED]
    assert json.loads(job2["metadata"]["annotations"][ANN_MOVE])["step"] == "returned"
    reasons = [r for r, _ in _events(twin, JOB.format(2))]
    assert "FallbackReturning" in reasons and "FallbackReturned" in reasons
    assert _flavor(_workload(twin, JOB.format(2))) == "on-demand"
    assert _state(twin, 2) in ("Running", "Complete")
    assert _flavor(_workload(twin, JOB.format(3))) == "dws"  # one idle slice, one job sent back
    # reusing a node that was up proves nothing: the breaker is still there
    assert "recover" not in [a.verb for a in _controller(twin).actions]
    assert "on-demand" in twin.get("configmap", "flexq-fallback", "kueue-system")["data"]
    _step(twin, 3, 30)
    assert _state(twin, 2) == "Complete"  # long before DWS's 2 h
    assert _flavor(_workload(twin, JOB.format(3))) == "on-demand"  # then job 3 takes the slice job 2 left


def test_the_breaker_closes_on_the_first_new_node_and_the_quota_is_put_back(make_twin):
    """Stocked out from 15 to 40 minutes. Job 2, moved to DWS (2 h away), is sent back once the backoff
    ends; it is the probe: while the flavor is still out it is moved again, and once the stock-out is over its
    scale-up succeeds, the breaker closes on that new node, and the admin's quota is put back (with probes taken
    from the jobs waiting on plan B: probe_from_plan_b)."""
    twin = _twin(make_twin, "40m", "2h", probe_from_plan_b=True)
    submit(twin, 1, 2 * 3600)
    _step(twin, 1, 20)
    submit(twin, 2, 10 * 60)
    # moved to DWS; sent back as the probe when the backoff ends; the probe fails and it is moved again once it
    # has lost what DWS has shown it costs (the 5 minutes it waited there: a censored wait the policy remembers)
    for _ in range(25):
        _step(twin, 2, 1)
        if "probe-failed" in [a.verb for a in _controller(twin).actions] and (
            _flavor(_workload(twin, JOB.format(2))) == "dws"
        ):
            break
    assert _flavor(_workload(twin, JOB.format(2))) == "dws"
    assert _quota(twin) == "16"
    for _ in range(60):
        _step(twin, 2, 1)
        if "recover" in [a.verb for a in _controller(twin).actions]:
            break
    verbs = [a.verb for a in _controller(twin).actions]
    assert "recover" in verbs, verbs
    recover = next(a for a in _controller(twin).actions if a.verb == "recover")
    assert "node" in recover.message and "created" in recover.message
    assert "probe" in verbs and verbs.index("probe") < verbs.index("recover")
    _step(twin, 2, 5)
    assert _quota(twin) == "32"
    assert ANN_QUOTA not in (twin.get("clusterqueue", "cluster-queue")["metadata"].get("annotations") or {})
    assert twin.get("configmap", "flexq-fallback", "kueue-system").get("data") in ({}, None)
    assert _flavor(_workload(twin, JOB.format(2))) == "on-demand"
    _step(twin, 2, 15)
    assert _state(twin, 2) == "Complete"


def test_a_job_that_started_on_plan_b_is_never_sent_back(make_twin):
    """DWS grants job 2 after 5 minutes, while job 1 still holds the only on-demand slice up. When job 1
    ends, job 2 is running on DWS nodes: it is not sent back (nor is any job whose pods have started)."""
    twin = _twin(make_twin, None, "5m")
    submit(twin, 1, 40 * 60)
    _step(twin, 1, 20)
    submit(twin, 2, 30 * 60)

    def never_returned() -> None:
        ann = twin.get("rayjob", JOB.format(2), "default")["metadata"].get("annotations") or {}
        if _state(twin, 2) in ("Running", "Complete"):
            assert json.loads(ann.get(ANN_MOVE, "{}")).get("step") not in ("returning", "returned"), ann

    _step(twin, 2, 15, [never_returned])
    assert _state(twin, 2) == "Running"
    assert _flavor(_workload(twin, JOB.format(2))) == "dws"
    _step(twin, 2, 20, [never_returned])  # job 1 ends at about 42 minutes; job 2 stays where it runs
    assert _flavor(_workload(twin, JOB.format(2))) == "dws"
    # (a return before its DWS grant, as the probe of on-demand when the backoff ends, is allowed: nothing of it
    # had started; never_returned checked at every step that nothing went back once running)


def test_without_a_stockout_nothing_is_hedged_or_capped(make_twin):
    """One slice of quota, two jobs: the second waits on DWS as in the tutorial, and when the first ends
    nothing sends it back (no stock-out, no breaker): the policy changes nothing."""
    twin = make_twin(None)
    submit(twin, 1, 15 * 60)
    submit(twin, 2, 10 * 60)
    _step(twin, 2, 30)
    assert _flavor(_workload(twin, JOB.format(2))) == "dws"
    assert not _controller(twin).actions
    assert _quota(twin) == "16"
    assert ANN_MOVE not in (twin.get("rayjob", JOB.format(2), "default")["metadata"].get("annotations") or {})


def _on_demand_nodes(twin) -> list[dict]:
    return [
        n
        for n in twin.list("node")
        if n["metadata"]["labels"].get("cloud.google.com/gke-nodepool") == "on-demand-pool"
    ]


def test_a_stocked_out_flavors_idle_nodes_are_kept_for_a_while_then_released(make_twin):
    """During the stock-out, the slice job 2 leaves cannot be replaced: it is kept from the cluster autoscaler's
    scale-down (its own annotation) for keep_idle_seconds (set to 20 minutes) after it empties, then released, and the
    autoscaler removes it 10 minutes later. Without the fallback it would go 10 minutes after emptying."""
    twin = _twin(make_twin, None, "2h")
    _controller(twin).policy.cfg.keep_idle_seconds = 1200.0  # opt-in (off by default)
    submit(twin, 1, 21 * 60)
    _step(twin, 1, 16)
    submit(twin, 2, 10 * 60)  # stuck, moved; then sent back to job 1's slice when job 1 ends
    _step(twin, 2, 22)
    assert (
        "moved back to on-demand"
        in (twin.get("rayjob", JOB.format(2), "default")["metadata"]["annotations"][ANN_MOVED])
    )
    assert _state(twin, 2) == "Complete"
    nodes = _on_demand_nodes(twin)
    assert len(nodes) == 4
    assert all(n["metadata"]["annotations"].get(SCALE_DOWN_DISABLED) == "true" for n in nodes)
    assert all(n["metadata"]["annotations"].get(ANN_KEPT) not in (None, "", "released") for n in nodes)
    _step(twin, 2, 15)  # idle for 15 minutes or so, but kept
    assert len(_on_demand_nodes(twin)) == 4
    _step(twin, 2, 20)  # released after 20 idle minutes, removed 10 minutes later
    assert not _on_demand_nodes(twin)
    verbs = [a.verb for a in _controller(twin).actions]
    assert "keep" in verbs and "release" in verbs
