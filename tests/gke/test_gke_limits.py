"""GKE sizes beyond GKE's limits are refused as GKE refuses them (400 INVALID_ARGUMENT), and nothing is built:
1,000 nodes per node pool per zone (initial size, setSize, per-zone autoscaling maximum), int64 fields, the
cluster's IP ranges (IP_SPACE_EXHAUSTED), a negative maxSurge."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flexq import Twin
from flexq.errors import CloudError

P = "/v1/projects/p/locations/us-central1/clusters"


def _refused(twin: Twin, method: str, path: str, body: dict, text: str) -> None:
    before = twin.store.resource_version
    with pytest.raises(CloudError) as exc:
        twin.gke(method, path, body)
    assert exc.value.code == 400 and exc.value.status == "INVALID_ARGUMENT", exc.value.message
    assert text in exc.value.message, exc.value.message
    assert twin.store.resource_version == before


def _pool(name: str, **extra: object) -> dict:
    return {"name": name, "config": {"machineType": "e2-standard-4"}, **extra}


@pytest.fixture
def twin() -> Iterator[Twin]:
    t = Twin(clock="virtual")
    yield t
    t.close()


@pytest.fixture
def cluster(twin: Twin) -> Twin:
    twin.gke("POST", P, {"cluster": {"name": "c1", "nodePools": [_pool("default-pool", initialNodeCount=1)]}})
    twin.advance(600)
    return twin


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (1e30, "out of range"),
        (5000, "exceeds the limit of 1000 nodes per node pool per zone"),
        (1.5, "not an integer"),
    ],
)
def test_cluster_initial_node_count_beyond_the_limits(twin: Twin, count: float, text: str) -> None:
    _refused(twin, "POST", P, {"cluster": {"name": "c1", "initialNodeCount": count}}, text)
    assert twin.gke("GET", P).get("clusters", []) == []


def test_pool_of_a_hundred_thousand_nodes_is_refused(cluster: Twin) -> None:
    _refused(
        cluster,
        "POST",
        f"{P}/c1/nodePools",
        {"nodePool": _pool("big", initialNodeCount=100000)},
        "node_pool.initial_node_count (100000) exceeds the limit of 1000",
    )
    _refused(
        cluster,
        "POST",
        f"{P}/c1/nodePools",
        {"nodePool": _pool("auto", autoscaling={"enabled": True, "minNodeCount": 0, "maxNodeCount": 1001})},
        "max_node_count (1001) exceeds",
    )


def test_set_size_beyond_the_limit_builds_nothing(cluster: Twin) -> None:
    path = f"{P}/c1/nodePools/default-pool:setSize"
    _refused(cluster, "POST", path, {"nodeCount": 1000000000}, "node_count (1000000000) exceeds the limit")
    cluster.advance(600)
    assert len(cluster.list("Node")) == 1


def test_ip_ranges_bound_the_cluster(twin: Twin) -> None:
    """Each node takes a /24 of the Pod range (GKE's default for 110 pods per node): a /21 holds 8 nodes (the
    default /14 holds 1,024)."""
    twin.gke(
        "POST",
        P,
        {
            "cluster": {
                "name": "c1",
                "clusterIpv4Cidr": "10.80.0.0/21",
                "nodePools": [_pool("default-pool", initialNodeCount=3)],
            }
        },
    )
    twin.advance(600)
    twin.gke("POST", f"{P}/c1/nodePools", {"nodePool": _pool("a", initialNodeCount=4)})
    twin.advance(600)
    _refused(
        twin,
        "POST",
        f"{P}/c1/nodePools",
        {"nodePool": _pool("b", initialNodeCount=2)},
        "IP_SPACE_EXHAUSTED: the cluster cannot hold 9 nodes (2 requested, 7 in its other node pools): the "
        "Pod range 10.80.0.0/21 with a /24 per node holds 8 nodes",
    )
    _refused(twin, "POST", f"{P}/c1/nodePools/default-pool:setSize", {"nodeCount": 5}, "IP_SPACE_EXHAUSTED")
    twin.gke("POST", f"{P}/c1/nodePools/default-pool:setSize", {"nodeCount": 4})
    twin.advance(600)
    assert len(twin.list("Node")) == 8
    _refused(
        twin,
        "POST",
        P,
        {"cluster": {"name": "c2", "clusterIpv4Cidr": "nonsense", "initialNodeCount": 1}},
        "cluster_ipv4_cidr",
    )


def test_negative_max_surge_is_refused(cluster: Twin) -> None:
    _refused(
        cluster,
        "POST",
        f"{P}/c1/nodePools",
        {"nodePool": _pool("s", initialNodeCount=1, upgradeSettings={"maxSurge": -1})},
        "max_surge must be non-negative",
    )
