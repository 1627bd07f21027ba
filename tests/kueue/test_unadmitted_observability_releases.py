"""Issue 48, item 3: ``UnadmittedWorkloadsObservability`` (kueue#13063) is beta but off in 0.19.2 and on in 0.20.

With it off (``UnadmittedWorkloadReasonWithFallback`` at v0.19.2, and upstream's own test helpers
``AdjustConditionsForDisabledObservabilityIn{Scheduler,WorkloadController}``): a workload that waits for quota carries
``QuotaReserved=False`` reason ``Pending`` (event ``Pending``) and no ``Admitted`` condition at all, also while its
DWS check is pending; a missing LocalQueue is ``Inadmissible``; ``Admitted=False`` appears only once a workload that
was admitted loses it. With it on (0.20.7): ``WaitingForQuota``, ``Admitted=False NoReservation`` /
``UnsatisfiedAdmissionChecks``, ``Misconfigured``. What reads these (``flexq status``'s explanation, the metrics)
works on both.
"""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.api.reasons import REASONS, explain
from flexq.cli import tutorial as T
from tests.kueue.kueue_builders import one_queue

PROJECT = "demo-project"

QUEUES = one_queue(cpu="1")


def _job(name: str, queue: str = "lq") -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {"kueue.x-k8s.io/queue-name": queue},
            "annotations": {"twin.flexq.dev/run-seconds": "3600"},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            }
        },
    }


def _cond(obj: dict, typ: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == typ), None)


def _wl(t: Twin, job: str) -> dict:
    [wl] = [w for w in t.list("workload", "default") if w["metadata"]["ownerReferences"][0]["name"] == job]
    return wl


WANT = {
    # release: (waiting for quota, Admitted while waiting, missing LocalQueue)
    "0.19.2": ("Pending", None, "Inadmissible"),
    "0.20.7": ("WaitingForQuota", ("False", "NoReservation"), "Misconfigured"),
}


@pytest.mark.parametrize("kueue", sorted(WANT))
def test_reasons_of_a_workload_that_waits(kueue: str) -> None:
    want_reason, want_admitted, want_missing = WANT[kueue]
    t = Twin(clock="virtual", kueue=kueue)
    try:
        t.apply(QUEUES)
        t.apply(_job("first"))
        t.advance(2)
        t.apply(_job("second"))
        t.apply(_job("lost", queue="no-such-queue"))
        t.advance(5)
        first, second, lost = _wl(t, "first"), _wl(t, "second"), _wl(t, "lost")
        assert _cond(first, "Admitted")["status"] == "True"
        qr = _cond(second, "QuotaReserved")
        assert (qr["status"], qr["reason"]) == ("False", want_reason), qr
        adm = _cond(second, "Admitted")
        assert (adm and (adm["status"], adm["reason"])) == (want_admitted or None), adm
        events = [
            e["reason"]
            for e in t.list("event", "default")
            if e["involvedObject"]["name"] == second["metadata"]["name"] and e["type"] == "Warning"
        ]
        assert events and set(events) == {want_reason}, events
        qr = _cond(lost, "QuotaReserved")
        assert (qr["status"], qr["reason"]) == ("False", want_missing), qr
        assert "LocalQueue no-such-queue doesn't exist" in qr["message"]
        # flexq status's explanation: a coded reason of its own for each, never "not evaluated yet"
        for wl, code in ((second, want_reason), (lost, want_missing)):
            why = explain(wl, [], [], t.now())
            assert why is not None and why.code == code and code in REASONS, why
        # the metrics: kueue_unadmitted_workloads only with the gate on ("only emitted when ... enabled")
        series = [ln for ln in t.metrics().splitlines() if ln.startswith("kueue_unadmitted_workloads{")]
        assert bool(series) == (kueue == "0.20.7"), series
        # evicted after being admitted: Admitted=False on both releases
        t.delete("job", "first", "default")
        t.advance(5)
        assert _cond(_wl(t, "second"), "Admitted")["status"] == "True"
    finally:
        t.close()


@pytest.mark.parametrize("kueue", sorted(WANT))
def test_a_dws_job_waiting_for_its_check(kueue: str) -> None:
    t = Twin(clock="virtual", kueue=kueue)
    try:
        t.gke("POST", *T.create_cluster_request(PROJECT))
        t.run_until_idle(600)
        for dws in (False, True):
            t.gke("POST", *T.create_node_pool_request(PROJECT, dws=dws))
            t.run_until_idle(600)
        t.apply(T.queue_yaml(api="v1beta2"))
        for job_id in (1, 2):
            t.apply(T.rayjob_yaml(job_id))
            t.advance(2)
        [wl] = [w for w in t.list("workload", "default") if "rayjob-tpu-v6e-dws-2-" in w["metadata"]["name"]]
        assert _cond(wl, "QuotaReserved")["status"] == "True"
        adm = _cond(wl, "Admitted")
        if kueue == "0.19.2":
            assert adm is None, adm  # never admitted: no Admitted condition while the check is pending
        else:
            assert (adm["status"], adm["reason"]) == ("False", "UnsatisfiedAdmissionChecks")
        why = explain(wl, t.list("provisioningrequest", "default"), [], t.now())
        # the same reading on both releases: quota reserved, the DWS request not yet provisioned
        assert why is not None and REASONS[why.code].source == "cloud", why
    finally:
        t.close()
