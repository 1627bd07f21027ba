"""The tutorial's whole story on the virtual clock, across every domain: GKE pools, Kueue, the autoscaler,
DWS queued provisioning, the kube scheduler and kubelet, KubeRay — job 1 on plan A, job 2 falls back to plan B."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.cli import tutorial as T

PROJECT = "demo-project"


def _flavors(wl: dict) -> dict[str, set[str]]:
    adm = (wl.get("status") or {}).get("admission") or {}
    return {a["name"]: set(a["flavors"].values()) for a in adm.get("podSetAssignments", [])}


def _cond(obj: dict, typ: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == typ), {})


@pytest.fixture(params=[("0.19.2", "v1beta1"), ("0.20.7", "v1beta2")], ids=["kueue-0.19.2", "kueue-0.20.7"])
def tutorial_twin(request: pytest.FixtureRequest) -> Twin:
    """The tutorial's manifests as published on Kueue 0.19.2; its v1beta2 set (flexq convert's) on 0.20.7."""
    kueue, api = request.param
    twin = Twin(clock="virtual", kueue=kueue)
    path, body = T.create_cluster_request(PROJECT)
    twin.gke("POST", path, body)
    twin.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        twin.gke("POST", path, body)
        twin.run_until_idle(600)
    twin.apply(T.queue_yaml(api=api))
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    yield twin
    twin.close()


def _submit(twin: Twin, job_id: int, run_seconds: int = 600) -> None:
    doc = T.rayjob_yaml(job_id).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
    )
    twin.apply(doc)
    twin.advance(2)  # the tutorial's `sleep 2` between submissions


def test_job1_gets_plan_a_job2_falls_back_to_dws_and_both_complete(tutorial_twin: Twin) -> None:
    twin = tutorial_twin
    _submit(twin, 1)
    _submit(twin, 2)
    twin.advance(60)
    wls = {w["metadata"]["name"]: w for w in twin.list("workload", "default")}
    assert len(wls) == 2
    wl1 = next(w for n, w in wls.items() if "dws-1-" in n)
    wl2 = next(w for n, w in wls.items() if "dws-2-" in n)
    assert _flavors(wl1) == {
        "head": {"default-cpu"},
        "submitter": {"default-cpu"},
        "tpu-group": {"on-demand"},
    }
    assert _flavors(wl2)["tpu-group"] == {"dws"}
    assert "admissionChecks" not in (wl1.get("status") or {}) or not wl1["status"]["admissionChecks"]
    prs = twin.list("provisioningrequest", "default")
    assert [p["metadata"]["name"] for p in prs] == [f"{wl2['metadata']['name']}-dws-prov-1"]
    pr = prs[0]
    assert pr["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert len(pr["spec"]["podSets"]) == 1 and pr["spec"]["podSets"][0]["count"] == 4
    # both train; the plan-B pods consume the ProvisioningRequest
    twin.advance(300)
    dws_pods = [
        p
        for p in twin.list("pod", "default")
        if (p["spec"].get("nodeSelector") or {}).get("cloud.google.com/gke-nodepool") == "dws-pool"
    ]
    assert len(dws_pods) == 4
    assert all(
        p["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"]
        == pr["metadata"]["name"]
        for p in dws_pods
    )
    nodes = {n["metadata"]["name"]: n for n in twin.list("node")}
    assert {
        nodes[p["spec"]["nodeName"]]["metadata"]["labels"]["cloud.google.com/gke-nodepool"] for p in dws_pods
    } == {"dws-pool"}
    twin.advance(600)
    for job in ("rayjob-tpu-v6e-dws-1", "rayjob-tpu-v6e-dws-2"):
        st = twin.get("rayjob", job, "default")["status"]
        assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Complete", "SUCCEEDED")
    for wl in twin.list("workload", "default"):
        assert _cond(wl, "Finished").get("reason") == "Succeeded"
    # idle TPU nodes go away ten minutes later; the default pool stays
    twin.advance(900)
    pools = {n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] for n in twin.list("node")}
    assert pools == {"default-pool"}


def test_billing_reads_cost_per_pool_and_flavor(tutorial_twin: Twin) -> None:
    twin = tutorial_twin
    _submit(twin, 1, run_seconds=3600)
    _submit(twin, 2, run_seconds=3600)
    twin.advance(2 * 3600)
    bill = twin.billing()
    assert bill["total"] > 0
    assert bill["pools"]["on-demand-pool"] > 0 and bill["pools"]["dws-pool"] > 0
    assert set(bill["flavors"]) >= {"on-demand", "dws"}
    # flex-start is cheaper than on-demand for the same slice and (roughly) the same time
    assert bill["pools"]["dws-pool"] < bill["pools"]["on-demand-pool"]
