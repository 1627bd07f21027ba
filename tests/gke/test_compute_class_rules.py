"""Which priority rule of a ComputeClass a node pool satisfies, and the autoscaler's backoff (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from flexq.gke.compute_class import backoff_after, class_of_pod, class_of_pool, flex_wait, rule_index


def pool(
    name: str,
    machine: str = "ct6e-standard-4t",
    topology: str | None = "4x4",
    model: str = "on-demand",
    queued: bool = False,
    cls: str | None = "c",
    **cfg: Any,
) -> dict[str, Any]:
    config = {"machineType": machine, **cfg}
    if cls:
        config["labels"] = {"cloud.google.com/compute-class": cls}
    spec: dict[str, Any] = {"name": name, "config": config}
    if topology:
        spec["placementPolicy"] = {"tpuTopology": topology}
    return {"spec": spec, "status": {"provisioningModel": model, "queued": queued, "zone": "us-east5-b"}}


def cc(*rules: dict[str, Any], when: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"priorities": list(rules)}
    if when:
        spec["whenUnsatisfiable"] = when
    return {"metadata": {"name": "c"}, "spec": spec}


TPU = {"type": "tpu-v6e-slice", "count": 4, "topology": "4x4"}


@pytest.mark.parametrize(
    "rules,p,want",
    [
        ([{"nodepools": ["a"]}, {"nodepools": ["b"]}], pool("b"), 1),
        ([{"tpu": TPU, "spot": True}, {"tpu": TPU}], pool("x", model="spot"), 0),
        ([{"tpu": TPU, "spot": True}, {"tpu": TPU}], pool("x"), 1),  # spot unset matches on-demand too
        ([{"tpu": {**TPU, "topology": "2x4"}}], pool("x"), None),
        ([{"tpu": {**TPU, "count": 8}}], pool("x"), None),
        ([{"machineFamily": "ct6e"}], pool("x"), 0),
        ([{"machineFamily": "ct5lp"}], pool("x"), None),
        ([{"machineType": "ct6e-standard-4t", "spot": False}], pool("x", model="spot"), None),
        ([{"tpu": TPU, "flexStart": {"enabled": True}}], pool("x", model="flex-start"), 0),
        ([{"tpu": TPU, "flexStart": {"enabled": True}}], pool("x", model="flex-start", queued=True), None),
        (
            [{"tpu": TPU, "flexStart": {"enabled": True}, "maxRunDurationSeconds": 86400}],
            pool("x", model="flex-start", maxRunDuration="86400s"),
            0,
        ),
        (
            [{"tpu": TPU, "flexStart": {"enabled": True}, "maxRunDurationSeconds": 3600}],
            pool("x", model="flex-start", maxRunDuration="86400s"),
            None,
        ),
        (
            [{"reservations": {"affinity": "Specific"}, "tpu": TPU}],
            pool("x", reservationAffinity={"consumeReservationType": "SPECIFIC_RESERVATION"}),
            0,
        ),
        ([{"reservations": {"affinity": "Specific"}, "tpu": TPU}], pool("x"), None),
        ([{"minCores": 400}], pool("x"), None),
    ],
)
def test_rule_index(rules: list, p: dict, want: int | None) -> None:
    assert rule_index(cc(*rules), p) == want


def test_when_unsatisfiable_scale_up_anyway_keeps_unmatched_pools_last() -> None:
    assert rule_index(cc({"nodepools": ["a"]}), pool("b")) is None
    assert rule_index(cc({"nodepools": ["a"]}, when="ScaleUpAnyway"), pool("b")) == 1


def test_binding() -> None:
    assert class_of_pool(pool("x")) == "c" and class_of_pool(pool("x", cls=None)) is None
    assert class_of_pod({"spec": {"nodeSelector": {"cloud.google.com/compute-class": "c"}}}) == "c"
    assert class_of_pod({"spec": {}}) is None


def test_cluster_autoscaler_backoff_doubles_to_30_minutes() -> None:
    assert [backoff_after(n) for n in range(1, 6)] == [300, 600, 1200, 1800, 1800]


def test_flex_wait() -> None:
    assert flex_wait({"flexStart": {"enabled": True}, "capacityCheckWaitTimeSeconds": 600}) == 600
    assert flex_wait({"flexStart": {"enabled": True}}) == 180
    assert flex_wait({"spot": True}) == 0
