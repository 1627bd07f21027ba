"""flexq's fallback on the virtual twin with the tutorial's config: detection, the move, steering, the return."""

from __future__ import annotations

from flexq.fallback.model import ANN_MOVE, ANN_MOVED
from tests.fallback.conftest import H, stockout_profile, submit


def _workload(twin, job: str) -> dict | None:
    wls = [w for w in twin.list("workload", "default") if w["metadata"]["ownerReferences"][0]["name"] == job]
    return max(wls, key=lambda w: w["metadata"]["creationTimestamp"]) if wls else None


def _flavor(wl: dict | None) -> str | None:
    for psa in ((wl or {}).get("status") or {}).get("admission", {}).get("podSetAssignments", []):
        if psa["name"] == "tpu-group":
            return next(iter(psa["flavors"].values()))
    return None


def _events(twin, name: str) -> list[tuple[str, str]]:
    return [
        (e["reason"], e["message"])
        for e in twin.list("Event", "default")
        if e["involvedObject"]["name"] == name and e["reason"].startswith("Fallback")
    ]


def test_stockout_moves_a_waiting_job_to_dws_and_it_finishes(make_twin):
    twin = make_twin(stockout_profile("2h"))
    submit(twin, 1)
    twin.advance(30)
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "on-demand"
    twin.advance(15 * 60)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    moved = job["metadata"]["annotations"].get(ANN_MOVED, "")
    assert "on-demand stocked out" in moved and "moved to dws" in moved, moved
    reasons = [r for r, _ in _events(twin, "rayjob-tpu-v6e-dws-1")]
    assert "FallbackEvicting" in reasons and "FallbackMoved" in reasons
    wl = _workload(twin, "rayjob-tpu-v6e-dws-1")
    assert _flavor(wl) == "dws"
    twin.advance(H)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert job["status"]["jobDeploymentStatus"] == "Complete", job["status"]


def test_without_stockout_nothing_changes(make_twin):
    twin = make_twin(None)
    submit(twin, 1)
    twin.advance(H)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert ANN_MOVE not in (job["metadata"].get("annotations") or {})
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "on-demand"
    assert not _events(twin, "rayjob-tpu-v6e-dws-1")


def _controller(twin):
    return next(c for c in twin.core.current().manager.controllers if c.name == "flexq-fallback")


def test_breaker_backs_off_probes_and_returns_to_plan_a(make_twin):
    """Stocked out for 2 h: jobs move to dws, each expired backoff lets one probe try on-demand (5, 10, 20, 30
    minutes, as the cluster autoscaler backs off), and once on-demand has capacity new jobs use it again."""
    twin = make_twin(stockout_profile("2h"))
    submit(twin, 1, 600)
    twin.advance(20 * 60)
    for i in range(2, 8):
        submit(twin, i, 600)
        twin.advance(25 * 60)
    verbs = [a.verb for a in _controller(twin).actions if a.verb != "quota"]
    assert verbs[:3] == ["trip", "evict", "move"]
    assert verbs.count("probe-failed") >= 2 and "recover" in verbs
    assert "probe-failed" not in verbs[verbs.index("recover") :]
    backoffs = [
        a.message.rsplit("backing off ", 1)[1] for a in _controller(twin).actions if a.verb == "probe-failed"
    ]
    assert backoffs[:3] == ["10m00s", "20m00s", "30m00s"]
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-7")) == "on-demand"  # after the stock-out
    state = twin.get("configmap", "flexq-fallback", "kueue-system").get("data") or {}
    assert not [k for k in state if not k.startswith("_")], (
        state
    )  # no breaker left (spent full records may be)


def test_whole_run_stockout_keeps_new_jobs_off_plan_a(make_twin):
    twin = make_twin(stockout_profile(None))
    submit(twin, 1, 600)
    twin.advance(40 * 60)
    submit(twin, 2, 600)
    twin.advance(40 * 60)
    for job in ("rayjob-tpu-v6e-dws-1", "rayjob-tpu-v6e-dws-2"):
        assert twin.get("rayjob", job, "default")["status"]["jobDeploymentStatus"] == "Complete"
    state = twin.get("configmap", "flexq-fallback", "kueue-system")["data"]
    assert "on-demand" in state


def test_a_job_that_started_is_never_moved(make_twin):
    """The stock-out begins after job 1's TPU pods got nodes: job 1 stays on on-demand; job 2 moves."""
    twin = make_twin(None)
    submit(twin, 1, 3 * 3600)
    twin.advance(10 * 60)
    assert twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")["status"]["jobDeploymentStatus"] == "Running"
    twin.core.project.create(stockout_profile(None))  # the stock-out starts now
    submit(twin, 2, 600)
    twin.advance(30 * 60)
    job1 = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert ANN_MOVE not in (job1["metadata"].get("annotations") or {})
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "on-demand"
    assert job1["status"]["jobDeploymentStatus"] == "Running"
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-2")) == "dws"


def test_the_users_affinity_and_tolerations_are_kept(make_twin):
    twin = make_twin(stockout_profile(None))
    from flexq.cli import tutorial as T

    doc = T.rayjob_yaml(1).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "600"',
    )
    import yaml

    docs = list(yaml.safe_load_all(doc))
    rj = next(d for d in docs if d and d.get("kind") == "RayJob")
    wg = rj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    mine = {"key": "example.com/rack", "operator": "NotIn", "values": ["r13"]}
    wg["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [mine]}]
            }
        }
    }
    tolerations = list(wg.get("tolerations") or [])
    twin.apply(docs)
    twin.advance(20 * 60)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    spec = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    exprs = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchExpressions"]
    assert mine in exprs
    assert {
        "key": "cloud.google.com/gke-nodepool",
        "operator": "NotIn",
        "values": ["on-demand-pool"],
    } in exprs
    assert spec.get("tolerations") == tolerations
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "dws"


def test_queues_not_opted_in_are_left_alone(make_twin):
    twin = make_twin(stockout_profile(None), opt_in=False)
    submit(twin, 1, 600)
    twin.advance(20 * 60)  # (at 30 minutes Kueue's own waitForPodsReady timeout would evict it)
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "on-demand"
    assert not _events(twin, "rayjob-tpu-v6e-dws-1")


def test_dry_run_only_reports(make_twin):
    twin = make_twin(stockout_profile(None), fallback={"dry_run": True})
    submit(twin, 1, 600)
    twin.advance(20 * 60)
    verbs = {a.verb for a in _controller(twin).actions}
    assert {"trip", "evict"} <= verbs
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "on-demand"
    assert not _events(twin, "rayjob-tpu-v6e-dws-1")
    assert twin.core.current().store.try_get("ConfigMap", "flexq-fallback", "kueue-system") is None


def test_a_restart_mid_move_finishes_the_move(make_twin, monkeypatch):
    """The policy dies right after deactivating the workload: a fresh policy (new process, state from the
    ConfigMap and the job's annotation) finishes the move; the old workload is never reactivated."""
    from flexq.fallback import moves
    from flexq.fallback.api import StoreAPI
    from flexq.fallback.policy import FallbackPolicy

    twin = make_twin(stockout_profile(None))
    ctrl = _controller(twin)
    original = moves._finish_move
    monkeypatch.setattr(moves, "_finish_move", lambda *a, **k: None)  # the process dies before finishing
    submit(twin, 1, 600)
    twin.advance(5 * 60)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert '"step": "deactivating"' in job["metadata"]["annotations"][ANN_MOVE]
    old = _workload(twin, "rayjob-tpu-v6e-dws-1")
    assert old["spec"]["active"] is False
    rt = twin.core.current()
    fresh = FallbackPolicy(StoreAPI(rt.store, rt.ctx.recorder("flexq-fallback")))
    ctrl.policy = fresh  # the restarted process
    monkeypatch.setattr(moves, "_finish_move", original)
    twin.advance(20 * 60)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert '"step": "moved"' in job["metadata"]["annotations"][ANN_MOVE]
    names = {w["metadata"]["name"] for w in twin.list("workload", "default")}
    assert (
        old["metadata"]["name"] not in names
        or _workload(twin, "rayjob-tpu-v6e-dws-1")["metadata"]["uid"] != old["metadata"]["uid"]
    )
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "dws"
