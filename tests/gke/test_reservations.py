"""A GKE specific reservation as capacity (issue 51, capacity tiers): a node pool with ``reservationAffinity``
SPECIFIC_RESERVATION takes its nodes from the capacity profile's ``reservations``: never stocked out, at most the
reservation's count across the pools that consume it, a scale-up beyond it refused in GKE's words."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from flexq.api.capacity_profile import CapacityProfile
from flexq.api.gke_models import RESERVATION_KEY, specific_reservation
from flexq.api.reasons import classify_capacity
from flexq.errors import CloudError
from flexq.forecast.state import pools_from_gke
from flexq.gke.capacity import CapacityModel, reservation_insufficient_message
from flexq.testing.gke_twin import POOLS, H, events, fixture, nodes, ready, tpu_pod, tutorial_twin

SPECIFIC = {"consumeReservationType": "SPECIFIC_RESERVATION", "key": RESERVATION_KEY, "values": ["res-a"]}
# the on-demand v6e of the zone stocked out for the first two hours; reservation res-a holds one 4x4 slice
SPEC: dict[str, Any] = {
    "rules": [
        {
            "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]},
            "windows": [{"start": "0s", "end": "2h", "available": 0}],
        }
    ],
    "reservations": {"res-a": {"zone": "us-east5-b", "machineType": "ct6e-standard-4t", "count": 4}},
}


def _reserved_pool(name: str, reservation: str = "res-a", max_nodes: int = 8) -> dict[str, Any]:
    """The tutorial's on-demand pool body as gcloud sends it with ``--reservation-affinity=specific
    --reservation=NAME``."""
    req = copy.deepcopy(fixture("create-ondemand-pool"))
    np = req["body"]["nodePool"]
    np["name"] = name
    np["autoscaling"]["maxNodeCount"] = max_nodes
    np["config"]["reservationAffinity"] = {**SPECIFIC, "values": [reservation]}
    return req


def _twin(*pools: dict[str, Any]):
    t = tutorial_twin(SPEC)
    for req in pools:
        t.gke("POST", req["path"], req["body"])
        t.advance(30)
    return t


def test_specific_reservation_is_read_from_what_gcloud_sends() -> None:
    assert specific_reservation({"reservationAffinity": SPECIFIC}) == "res-a"
    assert specific_reservation({"reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}}) is None
    assert specific_reservation({"reservationAffinity": {**SPECIFIC, "key": "other"}}) is None
    assert specific_reservation(None) is None


def test_the_model_holds_a_reservation_to_its_count_zone_and_machine_type() -> None:
    m = CapacityModel({"spec": SPEC}, 0.0)
    assert m.reservation("res-a") == ("us-east5-b", "ct6e-standard-4t", 4)
    assert m.reservation("nope") is None
    assert m.can_obtain_reserved("res-a", "us-east5-b", "ct6e-standard-4t", in_use=0, want=4).ok
    refused = m.can_obtain_reserved("res-a", "us-east5-b", "ct6e-standard-4t", in_use=4, want=4, pool="p")
    assert not refused.ok and refused.retry_at is None
    assert refused.message == reservation_insufficient_message(
        "res-a", "p", "us-east5-b", "ct6e-standard-4t", 4, 4
    )
    assert 'specific reservation "res-a" is insufficient for node pool "p"' in refused.message
    assert not m.can_obtain_reserved("res-a", "us-east5-a", "ct6e-standard-4t", in_use=0, want=4).ok
    assert not m.can_obtain_reserved("res-a", "us-east5-b", "ct5lp-hightpu-4t", in_use=0, want=4).ok
    # the refusal is a configured cap (the pool-max kind), not a stock-out: no stock-out breaker trips on it
    got = classify_capacity(refused.message)
    assert got is not None and got.kind == "pool-max" and not got.cannot_grow


def test_the_profile_refuses_a_reservation_name_gce_would_not_take() -> None:
    with pytest.raises(ValueError, match="invalid reservation name"):
        CapacityProfile.model_validate({"spec": {"reservations": {"Res_A": SPEC["reservations"]["res-a"]}}})
    with pytest.raises(ValueError):
        CapacityProfile.model_validate(
            {"spec": {"reservations": {"res-a": {"zone": "us-east5-b", "machineType": "x", "count": -1}}}}
        )


def test_a_reservation_pool_grows_through_a_stockout_and_stops_at_its_count() -> None:
    t = _twin(_reserved_pool("res-pool"))
    pool = t.gke("GET", POOLS + "/res-pool")
    assert pool["config"]["reservationAffinity"] == SPECIFIC
    for i in range(4):
        t.apply(tpu_pod(f"r{i}", "res-pool", run_seconds=H))
        t.apply(tpu_pod(f"o{i}", "on-demand-pool", run_seconds=H))
    t.advance(5)
    assert len(nodes(t, "res-pool")) == 4  # the reservation's slice, inside the on-demand stock-out
    assert nodes(t, "on-demand-pool") == []  # the zone's on-demand v6e: stocked out
    assert "GCE out of resources" in events(t, "o0", "FailedScaleUp")[0]["message"]
    t.advance(120)
    assert all(ready(n) for n in nodes(t, "res-pool"))
    # a second slice: beyond the reservation's 4 VMs, refused in GKE's words (the pool's max is 8)
    for i in range(4, 8):
        t.apply(tpu_pod(f"r{i}", "res-pool", run_seconds=H))
    t.advance(5)
    assert len(nodes(t, "res-pool")) == 4
    msg = events(t, "r4", "FailedScaleUp")[0]["message"]
    assert 'specific reservation "res-a" is insufficient for node pool "res-pool"' in msg
    refusal = classify_capacity(msg)
    assert refusal is not None and refusal.kind == "pool-max"  # not a stock-out
    # the first slice's jobs end, the scale-down frees the reservation, the second slice is made from it
    t.advance(H + 900)
    assert len(nodes(t, "res-pool")) == 4
    running = {p["metadata"]["name"] for p in t.list("Pod") if p["status"].get("phase") == "Running"}
    assert {f"r{i}" for i in range(4, 8)} <= running


def test_pools_consuming_one_reservation_share_its_count() -> None:
    t = _twin(_reserved_pool("res-pool"), _reserved_pool("res-pool-2"))
    for i in range(4):
        t.apply(tpu_pod(f"a{i}", "res-pool", run_seconds=H))
    t.advance(5)
    for i in range(4):
        t.apply(tpu_pod(f"b{i}", "res-pool-2", run_seconds=H))
    t.advance(5)
    assert len(nodes(t, "res-pool")) == 4 and nodes(t, "res-pool-2") == []
    assert 'node pool "res-pool-2"' in events(t, "b0", "FailedScaleUp")[0]["message"]


def test_an_undeclared_reservation_takes_the_zones_on_demand_capacity_as_before() -> None:
    t = _twin(_reserved_pool("res-pool", reservation="not-declared"))
    for i in range(4):
        t.apply(tpu_pod(f"r{i}", "res-pool", run_seconds=H))
    t.advance(5)
    assert nodes(t, "res-pool") == []  # the on-demand stock-out holds it, as it held any pool before
    assert "GCE out of resources" in events(t, "r0", "FailedScaleUp")[0]["message"]


def test_gke_refuses_a_specific_affinity_without_the_reservation_name() -> None:
    t = tutorial_twin(SPEC)
    req = _reserved_pool("res-pool")
    req["body"]["nodePool"]["config"]["reservationAffinity"] = {
        "consumeReservationType": "SPECIFIC_RESERVATION"
    }
    with pytest.raises(CloudError, match="SPECIFIC_RESERVATION needs key"):
        t.gke("POST", req["path"], req["body"])


def test_the_forecast_reads_a_reservation_pool_as_never_stocked_out() -> None:
    """``pools_from_gke`` carries the reservation; the forward run's nodes of such a pool ignore an ongoing
    stock-out of its machine type (``flexq.forecast.capacity``), as a spot pool's ignore an on-demand one."""
    from flexq.forecast.capacity import CapacityRun
    from flexq.forecast.world import Pool

    t = _twin(_reserved_pool("res-pool"))
    short = {p["name"]: p for p in pools_from_gke(t.gke("GET", POOLS)["nodePools"])}
    assert short["res-pool"]["reservation"] == "res-a"
    assert "reservation" not in short["on-demand-pool"]

    class Run(CapacityRun):
        def __init__(self, pool: Pool) -> None:
            self.world = type("W", (), {"pools": {pool.name: pool}})()
            self.model = type(
                "M",
                (),
                {
                    "provision_range": staticmethod(lambda mt: (60.0, 120.0)),
                    "draw_pod_start": staticmethod(lambda rng: rng.uniform(0.0, 5.0)),
                    "declared": None,
                },
            )()
            self.t = 0.0
            self.size = {pool.name: 0}
            self.idle = {pool.name: []}
            self.room_waiters = {pool.name: []}
            # the machine type is stocked out for five hours
            self.stock_windows = {(pool.machine_type, "on-demand"): [(0.0, 5 * H)]}
            self.moved: list[str] = []
            self.started: list[float] = []

        def move(self, job: Any, bucket: str) -> None:
            self.moved.append(bucket)

        def at(self, when: float, kind: str, job: Any = None, arrival: int = -1) -> None:
            self.started.append(when)

    def start_of(reserved: bool, model: str = "on-demand") -> tuple[float, list[str]]:
        pool = Pool(
            "p", "ct6e-standard-4t", 8, 4, 4, queued=False, fixed=False, reserved=reserved, model=model
        )
        run = Run(pool)
        job = type("J", (), {"info": object(), "rng": random.Random(1), "bucket": "", "nodes": {}})()
        run.node_need = lambda info: {"p": 4}  # type: ignore[method-assign]
        run.nodes_for(job)
        return run.started[-1], run.moved

    on_demand, moved = start_of(False)
    assert on_demand > 5 * H and "stockout" in moved
    reserved, moved = start_of(True)
    assert reserved < 200 and "stockout" not in moved
    # a stock-out is of one provisioning model's capacity (as the CapacityProfile's rule matches it): spot
    # capacity of the machine type is not held by the on-demand stock-out
    spot, moved = start_of(False, "spot")
    assert spot < 200 and "stockout" not in moved
