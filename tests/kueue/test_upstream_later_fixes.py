"""Upstream fixes after Kueue v0.19.2 that change behaviour the twin models (issue 26, item 5), as the twin's default
release (0.20.7) has them; ``tests/kueue/test_kueue_releases.py`` runs each on both releases (issue 34).
``docs/upstream-versions.md`` lists what each domain follows and what differs between the releases.

- kueue#18785 (v0.20.7): "AdmissionChecks: Fixed retry backoff delaying eviction and unnecessarily retaining quota".
  In v0.19.2 the workload controller waits for ``requeueState.requeueAt`` before anything else, so a check in
  ``Retry`` with ``requeueAfterSeconds`` kept the workload's quota for the whole back-off before evicting it.
- v0.20.7: "Adding a flavor no longer creates Variants for finished Parent workloads" (Concurrent Admission).
"""

from __future__ import annotations

from typing import Any

from flexq import Twin
from flexq.kueue.workload import ts
from flexq.semantics.conditions import find_condition, is_true

GATE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    featureGates:
      ConcurrentAdmission: true
"""


def _queue(
    t: Twin, flavors: list[tuple[str, str]], checks: list[str] | None = None, policy: bool = False
) -> None:
    for f, _ in flavors:
        t.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]} for f, q in flavors
                ],
            }
        ],
    }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    if policy:
        spec["concurrentAdmissionPolicy"] = {"migration": {"mode": "TryPreferredFlavors"}}
    t.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": spec,
        }
    )
    t.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        }
    )


def _job_workload(t: Twin) -> dict:
    return next(
        w for w in t.list("Workload", "default") if w["metadata"]["ownerReferences"][0]["name"] == "j"
    )


def test_a_checks_retry_backoff_no_longer_delays_the_eviction_or_holds_the_quota():
    """kueue#18785: a check goes to Retry with a 60 s back-off; the workload is evicted at once (its job stopped,
    the quota released) and only comes back after the back-off."""
    t = Twin(clock="virtual")
    t.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": "ac"},
            "spec": {"controllerName": "example.com/ac"},
        }
    )
    active = [
        {
            "type": "Active",
            "status": "True",
            "reason": "ByTest",
            "message": "by test",
            "lastTransitionTime": ts(t.now()),
        }
    ]
    t.patch("AdmissionCheck", "ac", {"status": {"conditions": active}}, subresource="status")
    _queue(t, [("default", "4")], checks=["ac"])
    t.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {
                "template": {
                    "metadata": {"annotations": {"twin.flexq.dev/run-seconds": "3600"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                    },
                }
            },
        }
    )
    t.advance(2)
    wl = _job_workload(t)
    assert is_true(wl, "QuotaReserved") and wl["status"]["admissionChecks"][0]["state"] == "Pending"
    retry = [
        {
            "name": "ac",
            "state": "Retry",
            "message": "try again",
            "lastTransitionTime": ts(t.now()),
            "requeueAfterSeconds": 60,
        }
    ]
    t.patch(
        "Workload",
        wl["metadata"]["name"],
        {"status": {"admissionChecks": retry}},
        "default",
        subresource="status",
    )
    retried_at = t.now()
    t.advance(1)
    wl = _job_workload(t)
    evicted = find_condition(wl, "Evicted")
    assert evicted is not None and (evicted["status"], evicted["reason"]) == ("True", "AdmissionCheck")
    assert not is_true(wl, "QuotaReserved")  # the quota went with the eviction, not 60 s later
    assert wl["status"]["requeueState"]["requeueAt"] == ts(retried_at + 60)
    assert t.get("Job", "j", "default")["spec"]["suspend"] is True
    t.advance(50)
    assert not is_true(_job_workload(t), "QuotaReserved")  # waiting out the back-off without quota
    t.advance(15)
    wl = _job_workload(t)
    assert find_condition(wl, "Requeued")["reason"] == "BackoffFinished"
    assert is_true(wl, "QuotaReserved")  # admitted again after the back-off


def test_adding_a_flavor_creates_no_variant_for_a_finished_parent():
    """v0.20.7 (Concurrent Admission): a Parent that finished gets no Variant for a flavor added afterwards."""
    t = Twin(clock="virtual")
    t.apply(GATE)
    _queue(t, [("reservation", "5")], policy=True)
    t.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "parent-wl",
                "namespace": "default",
                "labels": {"kueue.x-k8s.io/concurrent-admission-parent": "true"},
            },
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                                ]
                            }
                        },
                    }
                ],
            },
        }
    )
    t.advance(5)
    assert is_true(t.get("Workload", "parent-wl", "default"), "Admitted")
    finished = [
        {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "done",
            "lastTransitionTime": ts(t.now()),
        }
    ]
    parent = t.get("Workload", "parent-wl", "default")
    t.patch(
        "Workload",
        "parent-wl",
        {"status": {"conditions": parent["status"]["conditions"] + finished}},
        "default",
        subresource="status",
    )
    t.advance(5)
    cq = t.get("ClusterQueue", "cq")
    cq["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "5"}]}
    )
    t.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "spot"}})
    t.apply(cq)
    t.advance(5)
    flavors = sorted(
        (w["metadata"].get("annotations") or {}).get("kueue.x-k8s.io/workload-allowed-resource-flavors", "")
        for w in t.list("Workload", "default")
        if w["metadata"]["name"] != "parent-wl"
    )
    assert flavors == ["reservation"]
