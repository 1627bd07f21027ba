"""Every reason a workload can wait for in the tutorial's setup, produced by the twin's controllers on the virtual
clock, and its coded explanation as ``flexq status`` rows and the dashboard show it (``flexq.api.reasons``).

Reasons Kueue or GKE define that the tutorial's setup cannot produce — the dws flavor's quota is "infinite"
(no WaitingForQuota / ExceedsMaxQuota), no admission gates, no topology-aware scheduling, blockAdmission off,
no spot pool — are checked on hand-made objects at the end, so that every code in the catalog is explained."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.api.capacity_profile import API_VERSION, KIND
from flexq.api.reasons import REASONS, explain
from flexq.cli import tutorial as T
from flexq.cli.status import StatusSnapshot, workload_rows
from flexq.cli.views import status_text
from tests.observability.conftest import submit, tutorial_twin, workload_of


def rows(twin: Twin) -> dict[str, object]:
    snap = StatusSnapshot(
        workloads=twin.list("workload", "default"),
        provisioning_requests=twin.list("provisioningrequest", "default"),
        nodes=twin.list("node"),
        flavors=twin.list("resourceflavor"),
        events=[
            e
            for e in twin.list("event", "default")
            if e.get("reason") in ("FailedScaleUp", "TriggeredScaleUp", "NotTriggerScaleUp")
        ],
    )
    return {r.job.split("/")[-1]: r for r in workload_rows(snap, twin.now())}


def reason_of(twin: Twin, job: str) -> tuple[str, str]:
    r = rows(twin)[job]
    assert r.reason is not None, f"{job} waits for nothing: {r.state}"
    text = status_text(list(rows(twin).values()), width=240)
    assert r.reason.code in text and REASONS[r.reason.code].action[:30] in text  # the legend explains it
    return r.reason.code, r.reason.detail


def profile(rules: list[dict], **spec: object) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "default"},
        "spec": {"rules": rules, **spec},
    }


def test_plan_a_runs_and_plan_b_waits_in_the_dws_queue(twin: Twin) -> None:
    submit(twin, 1)
    submit(twin, 2)
    twin.advance(3)
    code, detail = reason_of(twin, "rayjob-tpu-v6e-dws-2")
    assert code == "DWSQueued" and "queued for" in detail and "dws-prov-1" in detail
    twin.advance(600)
    assert rows(twin)["rayjob-tpu-v6e-dws-1"].reason is None  # running: waits for nothing
    assert rows(twin)["rayjob-tpu-v6e-dws-2"].reason is None


def test_pending_evaluation_before_kueue_looks(twin: Twin) -> None:
    submit(twin, 1)
    wl = workload_of(twin, 1)
    fresh = {
        "apiVersion": wl["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": "fresh", "namespace": "default"},
        "spec": wl["spec"],
    }
    created = twin.store.create(fresh)  # as the job controller writes it: no conditions yet
    why = explain(created, now=twin.now())
    assert why is not None and why.code == "PendingEvaluation"


def test_misconfigured_queue_name(twin: Twin) -> None:
    doc = T.rayjob_yaml(1).replace(
        "kueue.x-k8s.io/queue-name: user-queue", "kueue.x-k8s.io/queue-name: no-such-queue"
    )
    assert "no-such-queue" in doc
    twin.apply(doc)
    twin.advance(5)
    code, detail = reason_of(twin, "rayjob-tpu-v6e-dws-1")
    assert code == "Misconfigured" and "no-such-queue" in detail


def test_suspended_cluster_queue(twin: Twin) -> None:
    twin.patch("clusterqueue", "cluster-queue", {"spec": {"stopPolicy": "Hold"}})
    submit(twin, 1, wait=5)
    code, detail = reason_of(twin, "rayjob-tpu-v6e-dws-1")
    assert code == "Suspended" and "cluster-queue" in detail


def test_no_matching_flavor(twin: Twin) -> None:
    doc = T.rayjob_yaml(1)
    doc = doc.replace(
        "cloud.google.com/gke-tpu-topology: 4x4",
        "cloud.google.com/gke-tpu-topology: 4x4\n              cloud.google.com/gke-nodepool: nowhere",
    )
    assert "nowhere" in doc
    twin.apply(doc)
    twin.advance(5)
    code, detail = reason_of(twin, "rayjob-tpu-v6e-dws-1")
    assert code == "NoMatchingFlavor", detail


def test_plan_a_stockout_then_pods_ready_timeout() -> None:
    twin = tutorial_twin(
        profile(
            [
                {
                    "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["on-demand"]},
                    "available": 0,
                }
            ]
        )
    )
    try:
        submit(twin, 1)
        twin.advance(60)
        code, detail = reason_of(twin, "rayjob-tpu-v6e-dws-1")
        assert code == "GCE_STOCKOUT" and "GCE out of resources" in detail
        twin.advance(1750)  # waitForPodsReady's 30 minutes from admission: evicted, requeued after a backoff
        code, detail = reason_of(twin, "rayjob-tpu-v6e-dws-1")
        assert code == "PodsReadyTimeout" and "PodsReady timeout" in detail
    finally:
        twin.close()


@pytest.mark.slow  # seven simulated days of two running jobs (about 25 s)
def test_dws_capacity_revoked_at_max_run_duration() -> None:
    twin = tutorial_twin(
        profile(
            [
                {
                    "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["on-demand"]},
                    "available": 0,
                }
            ]
        )
    )
    try:
        submit(twin, 1, run_seconds=30 * 86400)
        submit(twin, 2, run_seconds=30 * 86400)
        twin.advance(600)
        assert rows(twin)["rayjob-tpu-v6e-dws-2"].reason is None  # running on DWS capacity
        twin.advance(7 * 86400 - 3600)  # flex-start VMs run at most 7 days (the pool's max run duration)
        seen = set()
        for _ in range(120):
            twin.advance(60)
            r = rows(twin)["rayjob-tpu-v6e-dws-2"]
            if r.reason is not None:
                seen.add(r.reason.code)
                break
        assert "CapacityRevoked" in seen, seen
    finally:
        twin.close()


def test_dws_request_fails_after_its_wait_limit() -> None:
    twin = tutorial_twin(
        profile(
            [
                {
                    "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["queued"]},
                    "available": 0,
                }
            ]
        )
    )
    try:
        submit(twin, 1, run_seconds=30 * 86400)
        submit(twin, 2)
        twin.advance(3600)
        code, _ = reason_of(twin, "rayjob-tpu-v6e-dws-2")
        assert code == "DWSQueued"
        twin.advance(7 * 86400 - 3 * 3600)  # a queued request waits at most 7 days (ValidUntilSeconds)
        seen = {}
        for _ in range(120):
            twin.advance(120)
            r = rows(twin)["rayjob-tpu-v6e-dws-2"]
            if r.reason is not None:
                seen.setdefault(r.reason.code, r.reason.detail)
            if "ProvisioningFailed" in seen:
                break
        assert "ProvisioningFailed" in seen, seen
        # the check's Retry evicts the workload at once (kueue#18785) and the request is deleted with the
        # eviction: the request's own words travel in the eviction's message
        assert "could not provision queued instances in the allocated time" in seen["ProvisioningFailed"]
    finally:
        twin.close()


# -- codes the tutorial's setup cannot produce, on hand-made objects ---------------------------------------------
def _wl(conditions: list[dict], **status: object) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default", "creationTimestamp": "2027-01-01T00:00:00Z"},
        "spec": {"queueName": "user-queue"},
        "status": {"conditions": conditions, **status},
    }


def _c(t: str, status: str, reason: str, message: str = "m") -> dict:
    return {
        "type": t,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2027-01-01T00:00:00Z",
    }


@pytest.mark.parametrize(
    "code",
    [
        "WaitingForQuota",
        "ExceedsMaxQuota",
        "AdmissionGated",
        "TopologyPlacementFailed",
        "WaitingForPodsReady",
        "WaitingForPreemptedWorkloads",
        "Pending",
    ],
)
def test_kueue_quota_reserved_reasons(code: str) -> None:
    why = explain(_wl([_c("QuotaReserved", "False", code, "the message")]))
    assert why is not None and why.code == code and why.detail == "the message"
    assert why.as_dict()["summary"] and why.as_dict()["action"]


def test_cloud_reasons_on_hand_made_requests() -> None:
    wl = _wl([_c("QuotaReserved", "True", "QuotaReserved"), _c("Admitted", "True", "Admitted")])
    pr = {
        "metadata": {
            "name": "w-dws-prov-1",
            "namespace": "default",
            "ownerReferences": [{"kind": "Workload", "name": "w"}],
        },
        "status": {
            "conditions": [
                _c("Provisioned", "True", "Provisioned"),
                _c("BookingExpired", "True", "BookingExpired", "booking expired"),
            ]
        },
    }
    assert explain(wl, [pr]).code == "BookingExpired"
    preempted = {
        "reason": "Preempted",
        "message": "Node n was deleted: the spot VM was preempted",
        "involvedObject": {"kind": "Pod", "name": "x"},
    }
    assert explain(wl, [], [preempted]).code == "SpotPreempted"
    reserved = _wl([_c("QuotaReserved", "True", "QuotaReserved")])
    fresh = dict(pr, status={"conditions": []})
    assert explain(reserved, [fresh]).code == "ProvisioningRequestPending"
    assert explain(wl, [], [], 0.0, {"on-demand-pool": "ZONE_RESOURCE_POOL_EXHAUSTED: no"}).detail.startswith(
        "node pool on-demand-pool: ZONE_RESOURCE_POOL_EXHAUSTED"
    )


def test_every_code_has_an_explanation_and_an_action() -> None:
    for code, r in REASONS.items():
        assert r.code == code and r.source in ("kueue", "cloud") and r.summary and r.action
