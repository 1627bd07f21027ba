"""Issue 48, item 2: ``WorkloadPriorityClassDefaulting`` (kueue#13719; alpha and off in 0.19.2, beta and on in 0.20).

Kueue's job webhooks (``ApplyDefaultWorkloadPriorityClass`` in ``pkg/controller/jobframework/defaults.go``) give a
job created without ``kueue.x-k8s.io/priority-class`` the WorkloadPriorityClass named ``default`` when that class
exists, unless its controller is another job Kueue manages; the Workload then carries the class and its value.
"""

from __future__ import annotations

import pytest

from flexq import Twin

LABEL = "kueue.x-k8s.io/priority-class"


def _job(name: str, labels: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue", **(labels or {})}},
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


def _wpc(name: str, value: int) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def _rayjob(name: str) -> dict:
    worker = {
        "containers": [{"name": "w", "image": "rayproject/ray", "resources": {"requests": {"cpu": "1"}}}]
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": worker}},
                "workerGroupSpecs": [
                    {
                        "groupName": "g",
                        "replicas": 1,
                        "minReplicas": 1,
                        "maxReplicas": 1,
                        "rayStartParams": {},
                        "template": {"spec": worker},
                    }
                ],
            },
        },
    }


@pytest.fixture
def twin_0_20() -> Twin:
    t = Twin(clock="virtual", kueue="0.20.7")
    yield t
    t.close()


def test_a_job_without_a_class_gets_the_default_class_on_0_20_7(twin_0_20: Twin) -> None:
    t = twin_0_20
    t.apply(_wpc("default", 100))
    t.apply(_wpc("urgent", 1000))
    t.apply(_job("plain"))
    t.apply(_job("chosen", {LABEL: "urgent"}))
    t.apply(_rayjob("ray"))
    assert t.get("job", "plain", "default")["metadata"]["labels"][LABEL] == "default"
    assert t.get("job", "chosen", "default")["metadata"]["labels"][LABEL] == "urgent"
    assert t.get("rayjob", "ray", "default")["metadata"]["labels"][LABEL] == "default"
    t.advance(2)
    by_owner = {w["metadata"]["ownerReferences"][0]["name"]: w["spec"] for w in t.list("workload", "default")}
    for owner, want in (("plain", ("default", 100)), ("chosen", ("urgent", 1000)), ("ray", ("default", 100))):
        spec = by_owner[owner]
        ref = spec["priorityClassRef"]
        assert (ref["kind"], ref["name"], spec["priority"]) == ("WorkloadPriorityClass", *want), spec
    # the RayCluster the RayJob makes is owned by a job Kueue manages: not defaulted by its own webhook
    for rc in t.list("raycluster", "default"):
        assert LABEL not in (rc["metadata"].get("labels") or {})


def test_no_default_class_no_label(twin_0_20: Twin) -> None:
    twin_0_20.apply(_job("plain"))
    assert LABEL not in twin_0_20.get("job", "plain", "default")["metadata"]["labels"]


def test_the_gate_turned_off_in_kueues_configuration(twin_0_20: Twin) -> None:
    t = twin_0_20
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {
                "controller_manager_config.yaml": (
                    "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                    "featureGates:\n  WorkloadPriorityClassDefaulting: false\n"
                )
            },
        }
    )
    t.apply(_wpc("default", 100))
    t.apply(_job("plain"))
    assert LABEL not in t.get("job", "plain", "default")["metadata"]["labels"]


def test_off_on_0_19_2_unless_enabled() -> None:
    t = Twin(clock="virtual", kueue="0.19.2")
    try:
        t.apply(_wpc("default", 100))
        t.apply(_job("plain"))
        assert LABEL not in t.get("job", "plain", "default")["metadata"]["labels"]
        t.advance(2)
        [wl] = t.list("workload", "default")
        assert not wl["spec"].get("priorityClassRef") and not wl["spec"].get("priority")
    finally:
        t.close()
