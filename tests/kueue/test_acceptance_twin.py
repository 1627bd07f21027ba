"""Issue 3 acceptance, in a virtual Twin with every domain running: the tutorial's queue configuration,
its node pools and two RayJobs run by the simulated executor (``twin.flexq.dev/run-seconds``).

1. job 1's ``tpu-group`` lands on ``on-demand`` (head and submitter on ``default-cpu``) with no request;
   job 2 reserves quota on ``dws``, waits with ``Admitted=False/UnsatisfiedAdmissionChecks`` behind one
   ProvisioningRequest ``<workload>-dws-prov-1`` (pod set ``tpu-group`` × 4, ``queued-provisioning.gke.io``);
   once provisioned it is admitted, its pods consume the request, and both RayJobs complete.
2. failed requests are retried after 60 s, 120 s and 240 s as ``-2``, ``-3``, ``-4``, then the workload is
   deactivated; a retried workload whose on-demand quota freed up meanwhile goes back to ``on-demand``
   and loses its ``dws-prov`` check.
"""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.cli import tutorial as T

PROJECT = "demo-project"


def _cond(obj: dict, typ: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == typ), {})


def _flavors(wl: dict) -> dict[str, set[str]]:
    adm = (wl.get("status") or {}).get("admission") or {}
    return {a["name"]: set(a["flavors"].values()) for a in adm.get("podSetAssignments", [])}


@pytest.fixture
def twin() -> Twin:
    t = Twin(clock="virtual")
    path, body = T.create_cluster_request(PROJECT)
    t.gke("POST", path, body)
    t.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        t.gke("POST", path, body)
        t.run_until_idle(600)
    t.apply(T.queue_yaml(api="v1beta2"))  # Kueue 0.20.7 (the twin's default) serves only v1beta2
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    yield t
    t.close()


def _submit(t: Twin, job_id: int, run_seconds: int = 600) -> dict:
    doc = T.rayjob_yaml(job_id).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
    )
    t.apply(doc)
    t.advance(2)
    return _workload(t, job_id)


def _workload(t: Twin, job_id: int) -> dict:
    wls = [
        w for w in t.list("workload", "default") if f"rayjob-tpu-v6e-dws-{job_id}-" in w["metadata"]["name"]
    ]
    assert len(wls) == 1, [w["metadata"]["name"] for w in wls]
    return wls[0]


def test_acceptance_1_plan_a_then_plan_b_through_dws(twin: Twin) -> None:
    wl1 = _submit(twin, 1)
    wl2 = _submit(twin, 2)
    assert _flavors(wl1) == {
        "head": {"default-cpu"},
        "tpu-group": {"on-demand"},
        "submitter": {"default-cpu"},
    }
    assert _cond(wl1, "Admitted")["status"] == "True"
    assert not (wl1.get("status") or {}).get("admissionChecks")
    assert _flavors(wl2)["tpu-group"] == {"dws"}
    assert _cond(wl2, "QuotaReserved")["status"] == "True"
    assert (_cond(wl2, "Admitted")["status"], _cond(wl2, "Admitted")["reason"]) == (
        "False",
        "UnsatisfiedAdmissionChecks",
    )
    assert [(c["name"], c["state"]) for c in wl2["status"]["admissionChecks"]] == [("dws-prov", "Pending")]
    prs = twin.list("provisioningrequest", "default")
    assert [p["metadata"]["name"] for p in prs] == [f"{wl2['metadata']['name']}-dws-prov-1"]
    assert prs[0]["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    [ps] = prs[0]["spec"]["podSets"]
    assert ps["count"] == 4 and ps["podTemplateRef"]["name"].endswith("-tpu-group")
    # DWS grants the capacity (the tutorial profile: minutes to hours); then job 2 is admitted and runs
    for _ in range(48):
        if _cond(_workload(twin, 2), "Admitted").get("status") == "True":
            break
        twin.advance(300)
    wl2 = _workload(twin, 2)
    assert _cond(wl2, "Admitted")["status"] == "True"
    assert [(c["name"], c["state"]) for c in wl2["status"]["admissionChecks"]] == [("dws-prov", "Ready")]
    twin.advance(120)
    workers = [
        p
        for p in twin.list("pod", "default")
        if (p["spec"].get("nodeSelector") or {}).get("cloud.google.com/gke-nodepool") == "dws-pool"
    ]
    assert len(workers) == 4
    for p in workers:
        assert (
            p["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"]
            == prs[0]["metadata"]["name"]
        )
        assert (
            p["metadata"]["annotations"]["autoscaling.x-k8s.io/provisioning-class-name"]
            == "queued-provisioning.gke.io"
        )
    twin.advance(1800)
    for job in ("rayjob-tpu-v6e-dws-1", "rayjob-tpu-v6e-dws-2"):
        st = twin.get("rayjob", job, "default")["status"]
        assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Complete", "SUCCEEDED")
    for jid in (1, 2):
        assert _cond(_workload(twin, jid), "Finished")["reason"] == "Succeeded"


def _fail(twin: Twin, name: str, message: str = "Max nodepool size reached") -> None:
    pr = twin.get("provisioningrequest", name, "default")
    conds = [c for c in (pr.get("status") or {}).get("conditions", []) if c["type"] != "Failed"]
    conds.append(
        {
            "type": "Failed",
            "status": "True",
            "reason": "NodepoolSizeReached",
            "message": message,
            "lastTransitionTime": "2027-01-01T00:00:00Z",
        }
    )
    twin.patch(
        "provisioningrequest", name, {"status": {"conditions": conds}}, "default", subresource="status"
    )


def test_acceptance_2_retries_with_backoff_then_deactivation(twin: Twin) -> None:
    _submit(twin, 1, run_seconds=100_000)
    wl2 = _submit(twin, 2)
    name = wl2["metadata"]["name"]
    created = {}
    for attempt, backoff in ((1, 60), (2, 120), (3, 240)):
        pr = f"{name}-dws-prov-{attempt}"
        _fail(twin, pr)
        twin.advance(1)
        wl = _workload(twin, 2)
        check = wl["status"]["admissionChecks"][0]
        # kueue#18785: the Retry evicts at once; the workload waits out the backoff without quota
        assert (check["state"], check["requeueAfterSeconds"]) == ("Pending", backoff), check
        assert check["message"] == "Reset to Pending after eviction. Previously: Retry"
        assert _cond(wl, "Evicted")["message"] == (
            'Evicted due to AdmissionCheck in Retry state: "dws-prov" (Retrying after failure: Max nodepool size '
            "reached)"
        )
        twin.advance(backoff - 3)
        assert twin.try_get("provisioningrequest", f"{name}-dws-prov-{attempt + 1}", "default") is None
        twin.advance(4)
        nxt = twin.get("provisioningrequest", f"{name}-dws-prov-{attempt + 1}", "default")
        created[attempt + 1] = nxt["metadata"]["name"]
        wl = _workload(twin, 2)
        assert _flavors(wl)["tpu-group"] == {"dws"}
        assert wl["status"]["admissionChecks"][0]["retryCount"] == attempt
    assert sorted(created) == [2, 3, 4]
    _fail(twin, f"{name}-dws-prov-4")
    twin.advance(5)
    wl = _workload(twin, 2)
    assert wl["spec"]["active"] is False
    assert _cond(wl, "Evicted")["reason"] == "DeactivatedDueToAdmissionCheck"
    assert twin.get("rayjob", "rayjob-tpu-v6e-dws-2", "default")["spec"]["suspend"] is True


def test_acceptance_2_readmitted_on_on_demand_when_it_frees_up(twin: Twin) -> None:
    _submit(twin, 1, run_seconds=30)
    wl2 = _submit(twin, 2)
    assert _flavors(wl2)["tpu-group"] == {"dws"}
    _fail(twin, f"{wl2['metadata']['name']}-dws-prov-1")
    twin.advance(1)
    # job 1 finishes during the backoff, freeing the on-demand quota
    twin.advance(90)
    wl2 = _workload(twin, 2)
    assert _flavors(wl2)["tpu-group"] == {"on-demand"}
    assert not wl2["status"].get("admissionChecks")
    assert _cond(wl2, "Admitted")["status"] == "True"
    assert twin.list("provisioningrequest", "default") == []
