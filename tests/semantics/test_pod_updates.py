"""Which updates of a pod matter to the kube-scheduler and to the kubelet (``semantics.pods``): upstream's
``isPodUpdated`` (pkg/scheduler/backend/queue/scheduling_queue.go) and ``podsDifferSemantically``
(pkg/kubelet/config/config.go). A field they compare that changes must count as an update: a test per field,
so that a rule that drops one fails here."""

from __future__ import annotations

import copy

import pytest

from flexq.semantics.pods import pod_updated_for_scheduling, pods_differ_semantically


def _pod() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "7",
            "generation": 1,
            "labels": {"app": "a"},
            "annotations": {"x": "1"},
            "finalizers": ["f"],
            "managedFields": [{"manager": "m"}],
        },
        "spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": []},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def _with(path: str, value) -> tuple[dict, dict]:
    old = _pod()
    new = copy.deepcopy(old)
    *head, last = path.split(".")
    d = new
    for k in head:
        d = d.setdefault(k, {})
    d[last] = value
    return old, new


# (path, value, isPodUpdated, podsDifferSemantically)
CASES = [
    ("spec.nodeName", "n1", True, True),
    ("spec.tolerations", [{"key": "k", "operator": "Exists"}], True, True),
    ("metadata.labels", {"app": "b"}, True, True),
    ("metadata.annotations", {"x": "2"}, True, True),
    ("metadata.deletionTimestamp", "2027-01-01T00:00:00Z", True, True),
    ("metadata.deletionGracePeriodSeconds", 30, True, True),
    ("metadata.ownerReferences", [{"kind": "Job", "name": "j", "uid": "j1"}], True, False),
    ("status.resourceClaimStatuses", [{"name": "c"}], True, False),
    ("status.phase", "Running", False, False),
    ("status.conditions", [{"type": "PodScheduled", "status": "False", "reason": "Other"}], False, False),
    ("status.nominatedNodeName", "n2", False, False),
    ("metadata.resourceVersion", "8", False, False),
    ("metadata.generation", 2, False, False),
    ("metadata.managedFields", [], False, False),
    ("metadata.finalizers", [], False, False),
]


@pytest.mark.parametrize(("path", "value", "scheduler", "kubelet"), CASES)
def test_which_changes_are_updates(path: str, value, scheduler: bool, kubelet: bool) -> None:
    old, new = _with(path, value)
    assert pod_updated_for_scheduling(old, new) is scheduler, path
    assert pods_differ_semantically(old, new) is kubelet, path


def test_equal_versions_are_no_update() -> None:
    assert not pod_updated_for_scheduling(_pod(), _pod())
    assert not pods_differ_semantically(_pod(), _pod())
    old, new = _pod(), _pod()
    new["metadata"]["labels"] = None  # nil and empty labels or annotations are the same to the kubelet
    old["metadata"]["labels"] = {}
    assert not pods_differ_semantically(old, new)
