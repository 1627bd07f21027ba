"""waitForPodsReady as the on-demand stock-out detector, with the tutorial's cluster and queue config (Kueue
v0.19 defaults: on, 30 min timeout, backoff 60 s·2^(n−1) ≤ 3600 s, no limit), under (a) plan A available,
(b) plan A stocked out for 2 h then available, (c) stocked out for the whole run. Upstream's documented
behaviour (kueue#2560, kueue.md §5): Kueue admits plan A by quota; the pods stay Pending; after the timeout
the workload is evicted with ``PodsReadyTimeout``, backs off, and the requeued workload scans flavors from
the first one again, so it returns to ``on-demand`` while its quota is free and never reaches ``dws``."""

from __future__ import annotations

from typing import Any

import pytest

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.cli import tutorial as T

PROJECT = "demo-project"
H = 3600.0
OD = {"match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]}}


def _twin(stockout: dict[str, Any] | None, config: str | None = None) -> Twin:
    twin = Twin(clock="virtual")
    prof = tutorial_profile() | {"metadata": {"name": "default"}}
    if stockout is not None:
        prof["spec"] = dict(prof["spec"])
        prof["spec"]["rules"] = [OD | stockout, *prof["spec"].get("rules", [])]
    twin.core.project.create(prof)
    path, body = T.create_cluster_request(PROJECT)
    twin.gke("POST", path, body)
    twin.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        twin.gke("POST", path, body)
        twin.run_until_idle(600)
    twin.apply(T.queue_yaml(api="v1beta2"))
    if config:
        twin.apply(config)
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    return twin


def _submit(twin: Twin, job_id: int = 1, run_seconds: int = 600) -> float:
    doc = T.rayjob_yaml(job_id).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
    )
    twin.apply(doc)
    return twin.now()


def _wl(twin: Twin) -> dict[str, Any]:
    return next(w for w in twin.list("workload", "default") if "dws-1-" in w["metadata"]["name"])


def _cond(obj: dict, typ: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == typ), {})


def _tpu_flavor(wl: dict) -> str:
    adm = (wl.get("status") or {}).get("admission") or {}
    return next(
        (
            set(a["flavors"].values()).pop()
            for a in adm.get("podSetAssignments", [])
            if a["name"] == "tpu-group"
        ),
        "",
    )


def _evictions(wl: dict) -> list[dict]:
    return ((wl.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []


def _reasons(twin: Twin, reason: str) -> list[dict]:
    return [e for e in twin.list("Event", "default") if e.get("reason") == reason]


def test_a_plan_a_available_runs_at_once_without_eviction() -> None:
    twin = _twin(None)
    t0 = _submit(twin)
    twin.advance(300)
    wl = _wl(twin)
    assert _tpu_flavor(wl) == "on-demand"
    assert _cond(wl, "PodsReady")["status"] == "True" and _cond(wl, "PodsReady")["reason"] == "Started"
    assert _evictions(wl) == []
    twin.advance(900)
    assert twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")["status"]["jobStatus"] == "SUCCEEDED"
    assert twin.now() - t0 < 1500


def test_b_stockout_two_hours_evicts_every_30_minutes_and_returns_to_on_demand() -> None:
    twin = _twin({"windows": [{"start": "0s", "end": "2h", "available": 0}]})
    _submit(twin)
    twin.advance(1799)
    wl = _wl(twin)
    assert _tpu_flavor(wl) == "on-demand" and not _cond(wl, "Evicted")
    assert _cond(wl, "PodsReady")["reason"] == "WaitForStart"
    twin.advance(5)
    wl = _wl(twin)
    ev = _cond(wl, "Evicted")
    assert (ev["status"], ev["reason"]) == ("True", "PodsReadyTimeout")
    assert ev["message"].startswith("Exceeded the PodsReady timeout default/rayjob-rayjob-tpu-v6e-dws-1-")
    assert _cond(wl, "Requeued")["reason"] == "PodsReadyTimeout"
    assert wl["status"]["requeueState"]["count"] == 1
    twin.advance(70)  # backoff 60 s, then the scan starts at flavor 0 again: on-demand, not dws
    wl = _wl(twin)
    assert _cond(wl, "Requeued")["reason"] == "BackoffFinished"
    assert _tpu_flavor(wl) == "on-demand" and _cond(wl, "Admitted")["status"] == "True"
    twin.advance(2 * H + 600 - 1874)
    wl = _wl(twin)
    counts = {(e["reason"], e["underlyingCause"]): e["count"] for e in _evictions(wl)}
    assert counts == {("PodsReadyTimeout", "WaitForStart"): 3}  # at ~30, ~61 and ~93 min
    assert _reasons(twin, "EvictedDueToPodsReadyTimeout")
    assert twin.list("provisioningrequest", "default") == []  # plan B was never tried
    twin.advance(H)
    assert _cond(_wl(twin), "PodsReady")["status"] == "True"
    assert twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")["status"]["jobStatus"] == "SUCCEEDED"
    assert "dws-pool" not in twin.billing()["pools"]


def test_c_stockout_whole_run_never_falls_back_and_backs_off_exponentially() -> None:
    twin = _twin({"available": 0})
    _submit(twin)
    twin.advance(8 * H)
    wl = _wl(twin)
    assert _tpu_flavor(wl) in ("on-demand", "")
    count = wl["status"]["requeueState"]["count"]
    # each cycle: 30 min waiting, then backoff 60, 120, 240, ... ≤ 3600 s; timeouts at 1800, 3660, 5580,
    # 7620, 9900, 12660, 16380, 21780, 27180 s: 9 in 8 h
    at, n, times = 0.0, 0, []
    while True:
        at += 1800
        if at > 8 * H:
            break
        n += 1
        times.append(at)
        at += min(60 * 2 ** (n - 1), 3600)
    assert count == n == 9
    assert twin.list("provisioningrequest", "default") == []
    assert twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")["status"].get("jobStatus") in (None, "")


def test_c_with_backoff_limit_count_the_workload_is_deactivated() -> None:
    config = """
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    waitForPodsReady:
      timeout: 10m
      requeuingStrategy: {timestamp: Eviction, backoffBaseSeconds: 60, backoffMaxSeconds: 3600, backoffLimitCount: 2}
    featureGates: {ElasticJobsViaWorkloadSlices: true}
"""
    twin = _twin({"available": 0}, config)
    _submit(twin)
    twin.advance(3 * H)
    wl = _wl(twin)
    assert wl["spec"]["active"] is False
    ev = _cond(wl, "Evicted")
    assert ev["reason"] == "DeactivatedDueToRequeuingLimitExceeded"
    assert (
        ev["message"]
        == "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    )


@pytest.mark.parametrize("unscheduled", ["5m"])
def test_b_unscheduled_timeout_evicts_sooner(unscheduled: str) -> None:
    config = f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: kueue-manager-config, namespace: kueue-system}}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    waitForPodsReady: {{timeout: 30m, unscheduledTimeout: {unscheduled}}}
    featureGates: {{ElasticJobsViaWorkloadSlices: true, WaitForPodsReadyUnscheduledTimeout: true}}
"""
    twin = _twin({"windows": [{"start": "0s", "end": "2h", "available": 0}]}, config)
    _submit(twin)
    twin.advance(200)
    wl = _wl(twin)
    assert _cond(wl, "PodsScheduled")["reason"] == "WaitForScheduling"
    assert _cond(wl, "PodsReady")["reason"] == "WaitForScheduling"
    twin.advance(120)
    wl = _wl(twin)
    assert {(e["reason"], e["underlyingCause"]) for e in _evictions(wl)} == {
        ("PodsReadyTimeout", "WaitForScheduling")
    }
    # timeouts at 300, 660, 1080, 1620, 2400, 3660, 5880 s; the 7th backoff (3600 s) runs past the end of
    # the stock-out at 7200 s: the job waits in backoff until ~9480 s although capacity is back
    twin.advance(2 * H - 320 + 300)
    wl = _wl(twin)
    assert wl["status"]["requeueState"]["count"] == 7 and _cond(wl, "QuotaReserved").get("status") != "True"
    twin.advance(9480 - 7500 + 300)
    wl = _wl(twin)
    assert _tpu_flavor(wl) == "on-demand"  # still the first flavor after every requeue
    assert _cond(wl, "PodsScheduled")["reason"] == "AllRequiredPodsScheduled"
