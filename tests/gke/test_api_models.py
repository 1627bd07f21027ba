"""GKE request bodies as google-cloud-container's REST transport sends them: enums may come as numbers."""

from __future__ import annotations

import enum

import pytest
from google.cloud.container_v1.types import cluster_service as cs

from flexq.api.gke_models import NodePool


@pytest.mark.parametrize(
    ("field", "proto"),
    [
        (("config", "reservationAffinity", "consumeReservationType"), cs.ReservationAffinity.Type),
        (("placementPolicy", "type"), cs.NodePool.PlacementPolicy.Type),
        (("autoscaling", "locationPolicy"), cs.NodePoolAutoscaling.LocationPolicy),
        (("upgradeSettings", "strategy"), cs.NodePoolUpdateStrategy),
    ],
)
def test_numeric_enums_become_the_proto_names(field: tuple[str, ...], proto: type[enum.IntEnum]) -> None:
    for member in proto:
        body: dict = {"name": "p"}
        cur = body
        for part in field[:-1]:
            cur = cur.setdefault(part, {})
        cur[field[-1]] = member.value
        dumped = NodePool.model_validate(body).model_dump(by_alias=True, exclude_none=True)
        for part in field:
            dumped = dumped[part]
        assert dumped == member.name


def test_taint_effect_numbers() -> None:
    pool = NodePool.model_validate(
        {"name": "p", "config": {"taints": [{"key": "k", "value": "v", "effect": 1}]}}
    )
    assert pool.model_dump(by_alias=True, exclude_none=True)["config"]["taints"][0]["effect"] == "NO_SCHEDULE"
