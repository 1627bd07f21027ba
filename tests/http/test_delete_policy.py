"""Deleting through the API without a propagation policy uses the kind's default, as the registry strategies
say: a batch/v1 Job orphans its pods (the Python client's ``delete_namespaced_job`` without a body leaves
them), while ``kubectl delete`` (which sends ``Background``) takes them along; other kinds default to
Background."""

from __future__ import annotations

import json
import time

from tests.http.conftest import Served


def _job(name: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}
            }
        },
    }


def _pods_of(served: Served, job: str) -> list[dict]:
    r = served.http("GET", f"/api/v1/namespaces/default/pods?labelSelector=job-name%3D{job}")
    return r.json()["items"]


def _wait_pods(served: Served, job: str) -> list[dict]:
    for _ in range(100):
        pods = _pods_of(served, job)
        if pods:
            return pods
        time.sleep(0.1)
    raise AssertionError(f"no pod for job {job}")


def test_a_job_deleted_without_a_policy_orphans_its_pods(served: Served) -> None:
    body = _job("orphaning")
    assert served.http("POST", "/apis/batch/v1/namespaces/default/jobs", json=body).status_code == 201
    pod = _wait_pods(served, "orphaning")[0]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    r = served.http("DELETE", "/apis/batch/v1/namespaces/default/jobs/orphaning")
    assert r.status_code == 200
    assert served.http("GET", "/apis/batch/v1/namespaces/default/jobs/orphaning").status_code == 404
    left = _pods_of(served, "orphaning")
    assert [p["metadata"]["name"] for p in left] == [pod["metadata"]["name"]]
    assert not left[0]["metadata"].get("ownerReferences")


def test_kubectl_delete_job_takes_its_pods(served: Served) -> None:
    body = _job("cascading")
    served.kubectl("create", "-f", "-", input=json.dumps(body))
    _wait_pods(served, "cascading")
    served.kubectl("delete", "job", "cascading", "--wait=true")
    for _ in range(50):
        if not _pods_of(served, "cascading"):
            break
        time.sleep(0.1)
    assert _pods_of(served, "cascading") == []
