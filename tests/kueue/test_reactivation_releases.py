"""Issue 48, item 1: a DWS job whose ProvisioningRequest retries ran out, reactivated.

Kueue deactivates the workload (``Evicted`` and ``Requeued=False`` with reason ``DeactivatedDueToAdmissionCheck``).
A user sets ``spec.active: true`` again with ``kubectl patch`` over HTTPS:

- on Kueue 0.20.7 the workload controller clears ``Requeued=False`` for any ``DeactivatedDueTo<Cause>`` reason
  (kueue#14874, the follow-up of the bug kueue#14309's review found): ``Requeued=True`` ``Reactivated``, the
  workload queues again, reserves quota and gets a new ProvisioningRequest;
- on Kueue 0.19.2 the switch matched only the bare ``Deactivated`` reason (``pkg/controller/core/
  workload_controller.go`` at v0.19.2): the workload stays ``Requeued=False`` and is never admitted again, and
  ``flexq status`` must not promise otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from flexq import Twin
from flexq.api.reasons import REASONS, explain
from flexq.cli import tutorial as T
from flexq.http.server import Server
from flexq.http.tls import ensure_credentials

PROJECT = "demo-project"

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def _cond(obj: dict, typ: str) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == typ), {})


def _workload(t: Twin, job_id: int) -> dict:
    [wl] = [
        w for w in t.list("workload", "default") if f"rayjob-tpu-v6e-dws-{job_id}-" in w["metadata"]["name"]
    ]
    return wl


def _submit(t: Twin, job_id: int, run_seconds: int) -> None:
    t.apply(
        T.rayjob_yaml(job_id).replace(
            'kueue.x-k8s.io/elastic-job: "true"',
            f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
        )
    )
    t.advance(2)


def _fail(t: Twin, name: str) -> None:
    pr = t.get("provisioningrequest", name, "default")
    conds = [c for c in (pr.get("status") or {}).get("conditions", []) if c["type"] != "Failed"]
    conds.append(
        {
            "type": "Failed",
            "status": "True",
            "reason": "NodepoolSizeReached",
            "message": "Max nodepool size reached",
            "lastTransitionTime": "2027-01-01T00:00:00Z",
        }
    )
    t.patch("provisioningrequest", name, {"status": {"conditions": conds}}, "default", subresource="status")


def _deactivated_dws_job(kueue: str) -> tuple[Twin, str]:
    """The tutorial on ``kueue``: job 1 holds on-demand, job 2 waits on DWS and every request fails until
    Kueue deactivates it (the default retry strategy: 3 retries)."""
    t = Twin(clock="virtual", kueue=kueue)
    t.gke("POST", *T.create_cluster_request(PROJECT))
    t.run_until_idle(600)
    for dws in (False, True):
        t.gke("POST", *T.create_node_pool_request(PROJECT, dws=dws))
        t.run_until_idle(600)
    t.apply(T.queue_yaml(api="v1beta2"))
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    _submit(t, 1, run_seconds=100_000)
    _submit(t, 2, run_seconds=600)
    name = _workload(t, 2)["metadata"]["name"]
    for attempt in range(1, 5):
        pr = f"{name}-dws-prov-{attempt}"
        for _ in range(60):
            if t.try_get("provisioningrequest", pr, "default") is not None:
                break
            t.advance(10)
        _fail(t, pr)
        t.advance(5)
    wl = _workload(t, 2)
    assert wl["spec"]["active"] is False
    assert _cond(wl, "Evicted")["reason"] == "DeactivatedDueToAdmissionCheck"
    # the job stops, the quota is released: Requeued=False carries the eviction's reason
    for _ in range(30):
        if _cond(_workload(t, 2), "Requeued"):
            break
        t.advance(5)
    rq = _cond(_workload(t, 2), "Requeued")
    assert (rq["status"], rq["reason"]) == ("False", "DeactivatedDueToAdmissionCheck"), rq
    return t, name


def _kubectl_patch_active(t: Twin, home: Path, name: str) -> None:
    # the twin runs on the virtual clock: its TLS certificates are made on the wall clock first (kubectl checks
    # their validity against the real time), then the server keeps them
    ensure_credentials(home, time.time())
    server = Server(t.core, home).start()
    try:
        kubeconfig = server.write_files()["kubeconfig"]
        r = subprocess.run(
            [
                "kubectl",
                "patch",
                "workload",
                name,
                "--type=merge",
                "-p",
                json.dumps({"spec": {"active": True}}),
            ],
            env=dict(os.environ, KUBECONFIG=kubeconfig),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == f"workload.kueue.x-k8s.io/{name} patched"
    finally:
        server.stop()


def test_reactivated_after_dws_retries_ran_out_queues_again_on_0_20_7(tmp_path: Path) -> None:
    t, name = _deactivated_dws_job("0.20.7")
    try:
        _kubectl_patch_active(t, tmp_path, name)
        t.advance(5)
        wl = _workload(t, 2)
        rq = _cond(wl, "Requeued")
        assert (rq["status"], rq["reason"]) == ("True", "Reactivated"), rq
        # queued again: it reserves DWS quota (job 1 still holds on-demand) behind a fresh ProvisioningRequest
        assert _cond(wl, "QuotaReserved")["status"] == "True", _cond(wl, "QuotaReserved")
        flavors = {
            a["name"]: set(a["flavors"].values()) for a in wl["status"]["admission"]["podSetAssignments"]
        }
        assert flavors["tpu-group"] == {"dws"}
        # DWS grants it in time and the job runs to the end
        for _ in range(96):
            st = t.get("rayjob", "rayjob-tpu-v6e-dws-2", "default").get("status") or {}
            if st.get("jobDeploymentStatus") == "Complete":
                break
            t.advance(300)
        assert st.get("jobStatus") == "SUCCEEDED", st
    finally:
        t.close()


def test_reactivated_after_dws_retries_ran_out_stays_requeued_false_on_0_19_2(tmp_path: Path) -> None:
    t, name = _deactivated_dws_job("0.19.2")
    try:
        _kubectl_patch_active(t, tmp_path, name)
        t.advance(3600)
        wl = _workload(t, 2)
        assert wl["spec"]["active"] is True
        rq = _cond(wl, "Requeued")
        assert (rq["status"], rq["reason"]) == ("False", "DeactivatedDueToAdmissionCheck"), rq
        assert not (wl.get("status") or {}).get("admission")
        # what flexq status and the dashboard say of it: stuck, and what to do
        why = explain(wl, [], [], t.now())
        assert why is not None and why.code == "ReactivatedNotRequeued", why
        assert "kueue#14874" in REASONS[why.code].summary
    finally:
        t.close()
