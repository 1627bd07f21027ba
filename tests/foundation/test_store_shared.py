"""Identical subtrees of created objects kept once (``flexq.store.shared``, ``KindInfo.shared``): a Workload's pod
sets. Kueue's large-scale file holds 60,000 Workloads at once with a few pod-set shapes between them; each kept
its own ~1.6 KB copy of the same dicts before."""

from __future__ import annotations

import copy

from flexq.api.kinds import default_registry
from flexq.api.scheme import ADMIT
from flexq.clock import VirtualClock
from flexq.store import Store


def workload(name: str, cpu: str = "1") -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
                            ],
                        }
                    },
                }
            ],
        },
    }


def make() -> Store:
    return Store(default_registry(), VirtualClock(), namespaces=["default"], check_readonly=True)


def test_workloads_of_one_shape_share_their_pod_sets() -> None:
    s = make()
    given = [workload(f"w{i}") for i in range(50)]
    before = copy.deepcopy(given)
    for w in given:
        s.create(w, admission=ADMIT)
    other = s.create(workload("big", cpu="2"), admission=ADMIT)
    stored = [s.peek("Workload", f"w{i}", "default") for i in range(50)]
    pod_sets = {id(w["spec"]["podSets"]) for w in stored}
    assert len(pod_sets) == 1, f"{len(pod_sets)} copies of one pod-set shape kept"
    assert id(other["spec"]["podSets"]) not in pod_sets  # another shape: its own
    assert (
        other["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        == "2"
    )
    assert all(w["spec"]["queueName"] == "q" for w in stored)
    assert given == before  # the callers' objects are not changed
    assert (
        s.get("Workload", "w3", "default")["spec"]["podSets"]
        == s.get("Workload", "w4", "default")["spec"]["podSets"]
    )
    s.verify_readonly()


def test_a_controllers_workloads_share_theirs_too() -> None:
    s = make()
    for i in range(5):
        s.create(workload(f"w{i}"))  # trusted: stored as written
    assert len({id(s.peek("Workload", f"w{i}", "default")["spec"]["podSets"]) for i in range(5)}) == 1
    s.verify_readonly()


def test_a_shared_subtree_changed_by_a_write_is_the_writer_s_own() -> None:
    s = make()
    for i in range(3):
        s.create(workload(f"w{i}"), admission=ADMIT)
    w = s.get("Workload", "w1", "default")
    w["spec"]["podSets"][0]["count"] = 3
    s.update(w, admission=ADMIT)
    assert s.peek("Workload", "w1", "default")["spec"]["podSets"][0]["count"] == 3
    assert s.peek("Workload", "w0", "default")["spec"]["podSets"][0]["count"] == 1
    assert s.peek("Workload", "w2", "default")["spec"]["podSets"][0]["count"] == 1
    s.verify_readonly()


def test_the_kept_shapes_are_bounded() -> None:
    s = make()
    s.shared.size = 8
    for i in range(40):
        s.create(workload(f"w{i}", cpu=str(i + 1)), admission=ADMIT)
    assert len(s.shared.trees) == 8
