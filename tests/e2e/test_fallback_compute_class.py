"""A GKE custom ComputeClass under Kueue, with the tutorial's cluster and queue config: the ``on-demand``
ResourceFlavor selects the class (``cloud.google.com/compute-class: tpu-class``) instead of one node pool, and
the class lists the tutorial's on-demand v6e 4x4 pool first and a spot v6e 4x4 pool second, with active
migration. Under (a) plan A available, (b) on-demand stocked out 2 h then available, (c) stocked out for the
whole run: Kueue still admits by quota on ``on-demand`` (plan B's ``dws`` is never reached), and the
ComputeClass moves the *nodes* — spot during the stock-out, back to on-demand once it returns (GKE's
"fallback compute priorities" and "active migration")."""

from __future__ import annotations

from typing import Any

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.cli import tutorial as T

PROJECT = "demo-project"
H = 3600.0
CLASS = "tpu-class"
OD = {"match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]}}
CC = f"""
apiVersion: cloud.google.com/v1
kind: ComputeClass
metadata: {{name: {CLASS}}}
spec:
  priorities:
  - nodepools: [on-demand-pool]
  - tpu: {{type: tpu-v6e-slice, count: 4, topology: 4x4}}
    spot: true
  activeMigration: {{optimizeRulePriority: true}}
"""


def _bind(body: dict[str, Any], name: str | None = None, spot: bool = False) -> dict[str, Any]:
    pool = body["nodePool"]
    if name:
        pool["name"] = name
    pool["config"]["labels"] = {"cloud.google.com/compute-class": CLASS}
    pool["config"]["taints"] = [
        {"key": "cloud.google.com/compute-class", "value": CLASS, "effect": "NO_SCHEDULE"}
    ]
    if spot:
        pool["config"]["spot"] = True
        pool["config"].pop("reservationAffinity", None)
    return body


def _twin(stockout: dict[str, Any] | None) -> Twin:
    twin = Twin(clock="virtual")
    prof = tutorial_profile() | {"metadata": {"name": "default"}}
    if stockout is not None:
        prof["spec"] = dict(prof["spec"])
        prof["spec"]["rules"] = [OD | stockout, *prof["spec"].get("rules", [])]
    twin.core.project.create(prof)
    path, body = T.create_cluster_request(PROJECT)
    twin.gke("POST", path, body)
    twin.run_until_idle(600)
    path, body = T.create_node_pool_request(PROJECT, dws=False)
    for b in (
        _bind(body),
        _bind(T.create_node_pool_request(PROJECT, dws=False)[1], "spot-pool", spot=True),
        T.create_node_pool_request(PROJECT, dws=True)[1],
    ):
        twin.gke("POST", path, b)
        twin.run_until_idle(600)
    twin.apply(CC)
    twin.apply(T.queue_yaml(api="v1beta2"))
    twin.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "on-demand"},
            "spec": {"nodeLabels": {"cloud.google.com/compute-class": CLASS}},
        }
    )
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    return twin


def _submit(twin: Twin, run_seconds: int = 4 * 3600) -> None:
    doc = T.rayjob_yaml(1).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
    )
    twin.apply(doc)


def _wl(twin: Twin) -> dict[str, Any]:
    return next(w for w in twin.list("workload", "default") if "dws-1-" in w["metadata"]["name"])


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


def _worker_pools(twin: Twin) -> set[str]:
    nodes = {
        n["metadata"]["name"]: n["metadata"]["labels"]["cloud.google.com/gke-nodepool"]
        for n in twin.list("Node")
    }
    return {
        nodes.get(p["spec"].get("nodeName", ""), "")
        for p in twin.list("Pod", "default")
        if "tpu-group" in p["metadata"]["name"] and p["status"].get("phase") in ("Pending", "Running")
    }


def _events(twin: Twin, reason: str) -> list[dict[str, Any]]:
    return [e for e in twin.list("Event", "default") if e.get("reason") == reason]


def _cond(obj: dict, typ: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == typ), {})


def test_a_plan_a_available_on_demand_nodes() -> None:
    twin = _twin(None)
    _submit(twin)
    twin.advance(300)
    wl = _wl(twin)
    assert _tpu_flavor(wl) == "on-demand"
    assert _worker_pools(twin) == {"on-demand-pool"}
    assert _cond(wl, "PodsReady")["status"] == "True"
    assert "spot-pool" not in twin.billing()["pools"]


def test_b_stockout_two_hours_spot_then_migrated_back() -> None:
    twin = _twin({"windows": [{"start": "0s", "end": "2h", "available": 0}]})
    _submit(twin)
    twin.advance(300)
    wl = _wl(twin)
    assert _tpu_flavor(wl) == "on-demand"  # Kueue admits by quota, as without the class
    assert _worker_pools(twin) == {"spot-pool"}  # ... but the class found nodes on its second rule
    assert _cond(wl, "PodsReady")["status"] == "True"  # no PodsReadyTimeout: the job runs within minutes
    assert twin.list("provisioningrequest", "default") == []
    assert any("GCE out of resources" in e["message"] for e in _events(twin, "FailedScaleUp"))
    twin.advance(2 * H)
    assert _events(twin, "ActiveMigration")
    twin.advance(600)
    assert _worker_pools(twin) == {"on-demand-pool"}
    bill = twin.billing()
    assert bill["pools"]["spot-pool"] > 0 and bill["pools"]["on-demand-pool"] > 0
    assert not any(
        e["reason"] == "PodsReadyTimeout"
        for e in (_wl(twin)["status"].get("schedulingStats") or {}).get("evictions", [])
    )


def test_c_stockout_whole_run_stays_on_spot_and_finishes() -> None:
    twin = _twin({"available": 0})
    _submit(twin, run_seconds=3600)
    twin.advance(300)
    assert _worker_pools(twin) == {"spot-pool"}
    twin.advance(2 * H)
    assert twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")["status"]["jobStatus"] == "SUCCEEDED"
    assert not _events(twin, "ActiveMigration")
    assert "on-demand-pool" not in twin.billing()["pools"]
