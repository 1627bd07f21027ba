"""The one-slice rule of a multi-host TPU replica's hosts (``semantics.nodefit``), as the twin's scheduler binds
and flexq's fallback plans: pure functions over NodeInfo."""

from __future__ import annotations

from flexq.semantics.nodefit import (
    NodeInfo,
    hosts_per_slice,
    off_slice,
    place_pods,
    replica_of,
    slice_key,
)

TOPOLOGY = "cloud.google.com/gke-tpu-topology"
POOL = "cloud.google.com/gke-nodepool"


def tpu(name: str, slice_id: str, topology: str = "4x4", pool: str = "p") -> NodeInfo:
    return NodeInfo(
        name=name,
        labels={POOL: pool, TOPOLOGY: topology},
        taints=(),
        allocatable={"cpu": 180_000, "memory": 720 << 30, "google.com/tpu": 4, "pods": 110},
        slice=slice_id,
    )


def host(replica: str | None = "r") -> dict:
    labels = {"ray.io/worker-group-replica-name": replica} if replica else {}
    return {
        "metadata": {"name": "w", "labels": labels},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"google.com/tpu": "4", "cpu": "1"}}}]
        },
    }


def test_hosts_and_slice_keys() -> None:
    assert hosts_per_slice(tpu("a", "s")) == 4
    assert hosts_per_slice(tpu("a", "s", topology="2x2")) == 1
    assert slice_key(tpu("a", "s")) == ("p", "s")
    assert slice_key(tpu("a", "s", topology="2x2")) is None  # single-host: no slice to share
    assert slice_key(tpu("a", "")) is None
    assert replica_of(host(), {"google.com/tpu": 4}) == "r"
    assert replica_of(host(), {"cpu": 1}) is None
    assert replica_of(host(None), {"google.com/tpu": 4}) is None


def test_off_slice_first_host_needs_a_whole_free_slice_then_siblings_follow() -> None:
    # slice a: 3 free hosts; slice b: 4 free; a single-host node is never ruled out for a first host
    nodes = [tpu(f"a{i}", "a") for i in range(3)] + [tpu(f"b{i}", "b") for i in range(4)]
    nodes.append(tpu("single", "x", topology="2x2"))
    assert off_slice(nodes, set()) == {"a0", "a1", "a2"}
    assert off_slice(nodes, {("p", "a")}) == {"b0", "b1", "b2", "b3", "single"}


def test_place_pods_keeps_each_replica_on_one_slice_or_places_nothing() -> None:
    nodes = [tpu(f"a{i}", "a") for i in range(4)] + [tpu(f"b{i}", "b") for i in range(4)]
    used: dict[str, dict[str, int]] = {n.name: {} for n in nodes}
    counts = {n.name: 0 for n in nodes}
    # two hosts of each slice busy: four free nodes, but no slice can take a 4-host replica
    for name in ("a0", "a1", "b0", "b1"):
        used[name] = {"google.com/tpu": 4}
        counts[name] = 1
    before = ({k: dict(v) for k, v in used.items()}, dict(counts))
    assert place_pods(host(), 4, nodes, used, counts) is None
    assert (used, counts) == before  # a failed plan takes no room
    # one slice frees: a 4-host replica goes there, and a second one finds no room
    used["b0"], used["b1"], counts["b0"], counts["b1"] = {}, {}, 0, 0
    assert place_pods(host(), 4, nodes, used, counts) == ["b0", "b1", "b2", "b3"]
    assert place_pods(host(), 4, nodes, used, counts) is None
    # a pod counted one at a time (another workload's pods still to come) takes any free host
    assert place_pods(host(), 1, nodes, used, counts) == ["a2"]
