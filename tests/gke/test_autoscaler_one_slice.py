"""Issue 48, item 7: the GKE autoscaler's scale-up simulation keeps a multi-host replica's hosts on one slice.

kube-scheduler binds all the hosts of one KubeRay worker replica (``ray.io/worker-group-replica-name``) to one TPU
slice (``semantics.nodefit.off_slice``: a slice is one ICI domain). Free hosts spread over partly used slices are
no room for a replica: the cluster autoscaler's simulation must see that, as its own scheduler framework does
(the replica's pod affinity), and add a slice — else the replica waits until a slice empties by chance.
"""

from __future__ import annotations

import copy

from flexq.testing.gke_twin import POOLS, fixture, nodes, tpu_pod, tutorial_twin

H = 3600.0


def _host(name: str, replica: str | None, run_seconds: float) -> dict:
    pod = tpu_pod(name, "wide-pool", run_seconds=run_seconds)
    if replica is not None:
        pod["metadata"]["labels"] = {"ray.io/worker-group-replica-name": replica}
    return pod


def _slices(t, names: list[str]) -> set[str]:
    out = set()
    for n in names:
        node = t.get("Pod", n, "default")["spec"].get("nodeName")
        assert node, n
        out.add(t.get("Node", node)["metadata"]["annotations"]["gke.twin.flexq.dev/slice"])
    return out


def test_free_hosts_on_two_partly_used_slices_are_no_room_for_a_replica() -> None:
    t = tutorial_twin()
    req = fixture("create-ondemand-pool")
    body = copy.deepcopy(req["body"])
    body["nodePool"]["name"] = "wide-pool"
    body["nodePool"]["autoscaling"]["maxNodeCount"] = 12  # three 4x4 slices
    t.gke("POST", req["path"], body)
    t.advance(30)
    # two replicas fill two slices; then half of each replica's hosts go: 4 free hosts, 2 on each slice
    for r in ("r1", "r2"):
        for i in range(4):
            t.apply(_host(f"{r}-{i}", r, run_seconds=(H / 2 if i >= 2 else 10 * H)))
        t.advance(120)
    assert len(nodes(t, "wide-pool")) == 8
    assert len(_slices(t, ["r1-0", "r1-1", "r1-2", "r1-3"])) == 1
    t.advance(H / 2 + 60)
    assert {t.get("Pod", f"{r}-{i}", "default")["status"]["phase"] for r in ("r1", "r2") for i in (2, 3)} == {
        "Succeeded"
    }
    # a new replica: no slice has four free hosts, so the autoscaler adds a third slice at once
    for i in range(4):
        t.apply(_host(f"r3-{i}", "r3", run_seconds=H))
    t.advance(300)
    assert len(nodes(t, "wide-pool")) == 12, [n["metadata"]["name"] for n in nodes(t, "wide-pool")]
    r3 = [f"r3-{i}" for i in range(4)]
    assert all(t.get("Pod", n, "default")["spec"].get("nodeName") for n in r3)
    assert len(_slices(t, r3)) == 1
    assert t.gke("GET", POOLS.replace("/nodePools", "/nodePools") + "/wide-pool")["status"] == "RUNNING"
