"""GKE custom ComputeClasses on the virtual twin: the tutorial's cluster, its on-demand v6e 4x4 pool bound to a
class as rule 0 and a spot v6e 4x4 pool as rule 1, under (a) on-demand available, (b) on-demand stocked out
for 2 h then available, (c) stocked out the whole run. What the twin should do (GKE's docs, "About custom
ComputeClasses"): fall back to the next rule when the preferred one cannot scale up, skip a stocked-out option
for about 5 minutes (the cluster autoscaler's backoff) then retry from the top, and with
``activeMigration.optimizeRulePriority`` move pods back to the preferred rule once it has capacity."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from flexq import Twin
from flexq.errors import ApiError
from flexq.testing.gke_twin import POOLS, H, fixture, profile

CLASS = "tpu-class"
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
  whenUnsatisfiable: DoNotScaleUp
"""
OD_STOCKOUT = {"match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]}}


def _pool_body(name: str, spot: bool) -> dict[str, Any]:
    req = copy.deepcopy(fixture("create-ondemand-pool"))
    np = req["body"]["nodePool"]
    np["name"] = name
    cfg = np["config"]
    cfg["labels"] = {"cloud.google.com/compute-class": CLASS}
    cfg["taints"] = [{"key": "cloud.google.com/compute-class", "value": CLASS, "effect": "NO_SCHEDULE"}]
    if spot:
        cfg["spot"] = True
        cfg.pop("reservationAffinity", None)
    return req


def class_twin(rule: dict[str, Any] | None = None) -> Twin:
    t = Twin(clock="virtual")
    t.core.project.create(profile({"rules": [rule] if rule else []}))
    req = fixture("create-cluster")
    t.gke("POST", req["path"], req["body"])
    t.advance(30)
    # every event of the run, kept here: the API server's event TTL (1 h) removes them from the cluster
    seen: dict[str, dict[str, Any]] = {}
    t.store.watch(lambda ev: seen.__setitem__(ev.object["metadata"]["name"], ev.object), ["events"])
    EVENTS[id(t)] = seen
    for name, spot in (("on-demand-pool", False), ("spot-pool", True)):
        req = _pool_body(name, spot)
        t.gke("POST", req["path"], req["body"])
        t.advance(30)
    t.apply(CC)
    return t


def class_pod(name: str, run_seconds: float = 3 * H) -> dict[str, Any]:
    """A TPU worker that selects the ComputeClass (no node pool named)."""
    res = {"cpu": "8", "memory": "16Gi", "google.com/tpu": "4"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"twin.flexq.dev/run-seconds": str(run_seconds)},
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {
                "cloud.google.com/compute-class": CLASS,
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4",
            },
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {
                    "name": "worker",
                    "image": "rayproject/ray:2.53.0-py311",
                    "resources": {"requests": dict(res), "limits": dict(res)},
                }
            ],
        },
    }


def _pool_of_pods(t: Twin) -> dict[str, str]:
    nodes = {
        n["metadata"]["name"]: n["metadata"]["labels"]["cloud.google.com/gke-nodepool"]
        for n in t.list("Node")
    }
    return {
        p["metadata"]["name"]: nodes.get(p["spec"].get("nodeName", ""), "") for p in t.list("Pod", "default")
    }


EVENTS: dict[int, dict[str, dict[str, Any]]] = {}


def _events(t: Twin, reason: str) -> list[dict[str, Any]]:
    """Every event with ``reason`` written during the run (expired ones too)."""
    return [
        e
        for e in EVENTS[id(t)].values()
        if e.get("reason") == reason and e["metadata"]["namespace"] == "default"
    ]


def _submit(t: Twin, n: int = 4) -> None:
    for i in range(n):
        t.apply(class_pod(f"w{i}"))


def _submit_job(t: Twin, run_seconds: float = 3 * H) -> None:
    """A batch Job of 4 workers selecting the class (its pods are recreated when evicted)."""
    pod = class_pod("x", run_seconds)
    t.apply(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {
                "parallelism": 4,
                "completions": 4,
                "backoffLimit": 10,
                "template": {
                    "metadata": {"annotations": pod["metadata"]["annotations"]},
                    "spec": pod["spec"],
                },
            },
        }
    )


def _live_pools(t: Twin) -> dict[str, str]:
    nodes = {
        n["metadata"]["name"]: n["metadata"]["labels"]["cloud.google.com/gke-nodepool"]
        for n in t.list("Node")
    }
    return {
        p["metadata"]["name"]: nodes.get(p["spec"].get("nodeName", ""), "")
        for p in t.list("Pod", "default")
        if p["status"].get("phase") in ("Pending", "Running")
    }


def test_pods_selecting_a_class_get_its_toleration() -> None:
    t = class_twin()
    _submit(t, 1)
    tols = t.get("Pod", "w0", "default")["spec"]["tolerations"]
    assert {
        "key": "cloud.google.com/compute-class",
        "operator": "Equal",
        "value": CLASS,
        "effect": "NoSchedule",
    } in tols


def test_a_plan_a_available_first_rule_wins() -> None:
    t = class_twin()
    _submit(t)
    t.advance(120)
    assert set(_pool_of_pods(t).values()) == {"on-demand-pool"}
    assert {p["status"]["phase"] for p in t.list("Pod", "default")} == {"Running"}
    assert not _events(t, "FailedScaleUp")
    t.advance(H)
    bill = t.billing()
    assert bill["pools"]["on-demand-pool"] == pytest.approx(4 * 10.8 * (H + 120 - 35) / H, rel=0.02)
    assert "spot-pool" not in bill["pools"]


def test_b_stockout_two_hours_falls_back_to_spot_then_migrates_back() -> None:
    t = class_twin(OD_STOCKOUT | {"windows": [{"start": "0s", "end": "2h", "available": 0}]})
    t0 = t.now()
    _submit_job(t)
    t.advance(120)
    # on-demand fails and is backed off; the spot rule scales up in the same autoscaler pass
    assert set(_live_pools(t).values()) == {"spot-pool"}
    failed = _events(t, "FailedScaleUp")
    assert failed and "GCE out of resources" in failed[0]["message"]
    # while the stock-out lasts, the top rule is retried after each ~5 minute backoff and fails again
    t.advance(H)
    assert set(_live_pools(t).values()) == {"spot-pool"}
    assert not _events(t, "ActiveMigration")
    # capacity returns at 2 h: within one backoff period the autoscaler creates the on-demand slice,
    # cordons the spot slice and evicts its pods; the Job recreates them on on-demand
    t.advance(2 * H - (t.now() - t0) + 400)
    migrated = _events(t, "ActiveMigration")
    assert (
        migrated
        and "higher-priority node pool on-demand-pool of ComputeClass tpu-class" in migrated[-1]["message"]
    )
    spot_nodes = [
        n for n in t.list("Node") if n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == "spot-pool"
    ]
    assert spot_nodes and all(n["spec"].get("unschedulable") for n in spot_nodes)
    t.advance(120)
    assert set(_live_pools(t).values()) == {"on-demand-pool"}
    t.advance(20 * 60)  # the idle spot slice is removed after scale-down-unneeded-time
    assert [
        n for n in t.list("Node") if n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == "spot-pool"
    ] == []
    bill = t.billing()
    assert bill["provisioningModels"].get("spot", 0) > 0 and bill["provisioningModels"]["on-demand"] > 0


def test_c_stockout_the_whole_run_stays_on_spot() -> None:
    t = class_twin(OD_STOCKOUT | {"available": 0})
    _submit_job(t)
    t.advance(120)
    assert set(_live_pools(t).values()) == {"spot-pool"}
    t.advance(4 * H)
    assert not _events(t, "ActiveMigration")
    job = t.get("Job", "train", "default")
    assert job["status"].get("succeeded") == 4  # 3 h on spot, never moved
    failed = _events(t, "FailedScaleUp")
    assert failed and "GCE out of resources" in failed[0]["message"]
    bill = t.billing()
    assert "on-demand-pool" not in bill["pools"] and bill["pools"]["spot-pool"] > 0


def test_do_not_scale_up_leaves_pods_pending_when_no_rule_is_satisfiable() -> None:
    t = class_twin({"match": {"machineTypes": ["ct6e-*"]}, "available": 0})
    _submit(t)
    t.advance(H)
    assert {p["status"]["phase"] for p in t.list("Pod", "default")} == {"Pending"}
    assert t.list("Node", label_selector="cloud.google.com/compute-class=" + CLASS) == []


def test_every_rule_in_backoff_is_explained() -> None:
    t = class_twin({"match": {"machineTypes": ["ct6e-*"]}, "available": 0})
    _submit(t)
    t.advance(60)
    why = [e["message"] for e in _events(t, "NotTriggerScaleUp")]
    assert "pod didn't trigger scale-up: 2 in backoff after failed scale-up" in why


def test_pools_of_another_class_or_none_are_not_used() -> None:
    t = class_twin()
    t.apply(CC.replace(f"name: {CLASS}", "name: other"))
    pod = class_pod("x")
    pod["spec"]["nodeSelector"]["cloud.google.com/compute-class"] = "other"
    t.apply(pod)
    t.advance(H)
    assert t.get("Pod", "x", "default")["status"]["phase"] == "Pending"


@pytest.mark.parametrize(
    "rule,field,text",
    [
        (
            {"tpu": {"type": "tpu-v6e-slice", "count": 4, "topology": "4x4"}, "flexStart": {"enabled": True}},
            "spec.priorities[0].tpu",
            "flex-start VMs support only single-host TPU slices",
        ),
        (
            {"machineFamily": "ct6e", "spot": True, "flexStart": {"enabled": True}},
            "spec.priorities[0]",
            "flexStart cannot be used with spot",
        ),
        (
            {"flexStart": {"enabled": True}, "maxRunDurationSeconds": 700000},
            "spec.priorities[0].maxRunDurationSeconds",
            "flex-start VMs run for at most 604800 seconds",
        ),
    ],
)
def test_refused_combinations(rule: dict[str, Any], field: str, text: str) -> None:
    t = Twin(clock="virtual")
    with pytest.raises(ApiError) as err:
        t.apply(
            {
                "apiVersion": "cloud.google.com/v1",
                "kind": "ComputeClass",
                "metadata": {"name": "bad"},
                "spec": {"priorities": [rule]},
            }
        )
    assert any(
        c["field"] == field and text in c["message"] for c in err.value.to_status()["details"]["causes"]
    )
    assert t.list("ComputeClass") == []


def test_single_host_flex_start_tpu_rule_is_accepted() -> None:
    t = Twin(clock="virtual")
    t.apply(
        {
            "apiVersion": "cloud.google.com/v1",
            "kind": "ComputeClass",
            "metadata": {"name": "flex"},
            "spec": {
                "priorities": [
                    {
                        "tpu": {"type": "tpu-v6e-slice", "count": 8, "topology": "2x4"},
                        "flexStart": {"enabled": True},
                        "capacityCheckWaitTimeSeconds": 300,
                    }
                ]
            },
        }
    )
    got = t.get("computeclass", "flex")
    assert got["spec"]["whenUnsatisfiable"] == "DoNotScaleUp"
    assert got["spec"]["priorities"][0]["capacityCheckWaitTimeSeconds"] == 300


def test_pool_body_is_bound_by_label_and_taint() -> None:
    t = class_twin()
    pool = t.gke("GET", POOLS + "/spot-pool")
    assert pool["config"]["labels"] == {"cloud.google.com/compute-class": CLASS}
    assert pool["config"]["taints"][0]["key"] == "cloud.google.com/compute-class"


FLEX_CC = """
apiVersion: cloud.google.com/v1
kind: ComputeClass
metadata: {name: flex-class}
spec:
  priorities:
  - tpu: {type: tpu-v6e-slice, count: 8, topology: 2x4}
    flexStart: {enabled: true}
    capacityCheckWaitTimeSeconds: 600
  - tpu: {type: tpu-v6e-slice, count: 8, topology: 2x4}
"""


def _flex_twin(stockout_end: str) -> Twin:
    t = Twin(clock="virtual")
    t.core.project.create(
        profile(
            {
                "rules": [
                    {
                        "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["flex-start"]},
                        "windows": [{"start": "0s", "end": stockout_end, "available": 0}],
                    }
                ]
            }
        )
    )
    req = fixture("create-cluster")
    t.gke("POST", req["path"], req["body"])
    t.advance(30)
    for name, flex in (("flex-pool", True), ("od-pool", False)):
        req = copy.deepcopy(fixture("create-ondemand-pool"))
        np = req["body"]["nodePool"]
        np["name"] = name
        np["config"]["machineType"] = "ct6e-standard-8t"
        np["placementPolicy"] = {"tpuTopology": "2x4"}
        np["config"]["labels"] = {"cloud.google.com/compute-class": "flex-class"}
        np["config"]["taints"] = [
            {"key": "cloud.google.com/compute-class", "value": "flex-class", "effect": "NO_SCHEDULE"}
        ]
        if flex:
            np["config"]["flexStart"] = True
            np["config"].pop("reservationAffinity", None)
        t.gke("POST", req["path"], req["body"])
        t.advance(30)
    t.apply(FLEX_CC)
    pod = class_pod("single", run_seconds=H)
    pod["spec"]["nodeSelector"].update(
        {"cloud.google.com/compute-class": "flex-class", "cloud.google.com/gke-tpu-topology": "2x4"}
    )
    for c in pod["spec"]["containers"]:
        c["resources"] = {"requests": {"google.com/tpu": "8"}, "limits": {"google.com/tpu": "8"}}
    t.apply(pod)
    return t


def test_flex_start_rule_waits_capacity_check_wait_time_then_falls_back() -> None:
    t = _flex_twin("1h")
    t.advance(590)
    assert _pool_of_pods(t)["single"] == ""  # still waiting for flex-start capacity, on-demand not tried
    assert t.get("Pod", "single", "default")["status"]["phase"] == "Pending"
    t.advance(60)
    assert _pool_of_pods(t)["single"] == "od-pool"


def test_flex_start_rule_gets_capacity_within_the_wait() -> None:
    t = _flex_twin("5m")
    t.advance(600)
    assert _pool_of_pods(t)["single"] == "flex-pool"
