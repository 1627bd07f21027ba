"""The scheduler through the Twin SDK: binding, FailedScheduling, retries when nodes or pods change."""

from __future__ import annotations

from flexq import Twin

from .kube_builders import add_node, condition, events, node, pod, tpu_node

TOLERATE_TPU = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_pod_is_bound_with_scheduled_condition_and_event(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(pod("p"))
    twin.advance(1)
    p = twin.get("Pod", "p")
    assert p["spec"]["nodeName"] == "n1"
    assert condition(p, "PodScheduled")["status"] == "True"
    assert events(twin, "p", "Scheduled")[0]["message"] == "Successfully assigned default/p to n1"


def test_binding_sets_node_name_and_scheduled_condition_in_one_write(twin: Twin) -> None:
    """The API server's pods/binding (``BindingREST.setPodNodeAndMetadata``) sets ``spec.nodeName`` and
    ``PodScheduled=True`` in the same update: no watcher ever sees a bound pod that is not yet scheduled, and
    binding costs one write, not two."""
    seen: list[tuple[str, str | None, str | None]] = []

    def watch(ev) -> None:
        if ev.object["metadata"]["name"] == "w":
            cond = condition(ev.object, "PodScheduled") or {}
            seen.append((ev.type, ev.object["spec"].get("nodeName"), cond.get("status")))

    twin.store.watch(watch, ["Pod"])
    add_node(twin, node("cpu-1"))
    twin.apply(
        pod("w", tpu=4, tolerations=TOLERATE_TPU, node_selector={"cloud.google.com/gke-nodepool": "tpu"})
    )
    twin.advance(5)
    add_node(twin, tpu_node("tpu-a", "tpu"))
    twin.advance(1)
    # created, found unschedulable, bound (the kubelet's status writes follow)
    assert seen[:3] == [("ADDED", None, None), ("MODIFIED", None, "False"), ("MODIFIED", "tpu-a", "True")]
    p = twin.get("Pod", "w")
    cond = condition(p, "PodScheduled")
    assert cond == {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": cond["lastTransitionTime"],
    }


def test_unschedulable_pod_waits_then_binds_when_a_node_arrives(twin: Twin) -> None:
    add_node(twin, node("cpu-1"))
    twin.apply(
        pod("w", tpu=4, tolerations=TOLERATE_TPU, node_selector={"cloud.google.com/gke-nodepool": "tpu-pool"})
    )
    twin.advance(5)
    p = twin.get("Pod", "w")
    cond = condition(p, "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"] == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert p["status"]["phase"] == "Pending" and "nodeName" not in p["spec"]
    ev = events(twin, "w", "FailedScheduling")
    assert ev and ev[0]["type"] == "Warning" and ev[0]["message"] == cond["message"]
    add_node(twin, tpu_node("tpu-a", "tpu-pool"))
    twin.advance(1)
    p = twin.get("Pod", "w")
    assert p["spec"]["nodeName"] == "tpu-a"
    assert condition(p, "PodScheduled")["status"] == "True"


def test_freed_resources_wake_pending_pods_in_priority_order(twin: Twin) -> None:
    add_node(twin, node("n", cpu="2"))
    twin.apply(pod("big", cpu="2", restart="Always"))
    twin.advance(1)
    for name, value in (("low", 1), ("high", 10)):  # a pod's priority comes from its PriorityClass
        twin.apply(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    twin.apply(pod("low", cpu="2", priorityClassName="low"))
    twin.apply(pod("high", cpu="2", priorityClassName="high"))
    twin.advance(1)
    assert condition(twin.get("Pod", "low"), "PodScheduled")["message"].startswith(
        "0/1 nodes are available: 1 Insufficient cpu."
    )
    twin.delete("Pod", "big")
    twin.advance(1)
    assert twin.get("Pod", "high")["spec"].get("nodeName") == "n"
    assert "nodeName" not in twin.get("Pod", "low")["spec"]


def test_scheduling_gates_hold_the_pod(twin: Twin) -> None:
    add_node(twin, node("n"))
    twin.apply(pod("g", schedulingGates=[{"name": "kueue.x-k8s.io/topology"}]))
    twin.advance(1)
    cond = condition(twin.get("Pod", "g"), "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "SchedulingGated")
    twin.patch("Pod", "g", {"spec": {"schedulingGates": None}})
    twin.advance(1)
    assert twin.get("Pod", "g")["spec"]["nodeName"] == "n"


def test_tainted_queued_nodes_need_the_toleration(twin: Twin) -> None:
    add_node(twin, tpu_node("dws-1", "dws-pool", queued=True))
    twin.apply(pod("plain", tpu=4, tolerations=TOLERATE_TPU))
    tolerant = TOLERATE_TPU + [
        {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    twin.apply(
        pod(
            "dws",
            tpu=4,
            tolerations=tolerant,
            annotations={"autoscaling.x-k8s.io/consume-provisioning-request": "pr-1"},
        )
    )
    twin.advance(1)
    assert (
        "untolerated taint {cloud.google.com/gke-queued: true}"
        in condition(twin.get("Pod", "plain"), "PodScheduled")["message"]
    )
    assert twin.get("Pod", "dws")["spec"]["nodeName"] == "dws-1"


def test_node_becoming_ready_retries_pending_pods(twin: Twin) -> None:
    add_node(twin, node("n", ready="False"))
    twin.apply(pod("p"))
    twin.advance(1)
    assert "node.kubernetes.io/not-ready" in condition(twin.get("Pod", "p"), "PodScheduled")["message"]
    twin.patch(
        "Node", "n", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, subresource="status"
    )
    twin.advance(1)
    assert twin.get("Pod", "p")["spec"]["nodeName"] == "n"


def test_four_tpu_workers_fill_a_4x4_slice_one_per_host(twin: Twin) -> None:
    for i in range(4):
        add_node(twin, tpu_node(f"gke-tpu-{i}", "on-demand"))
    for i in range(5):
        twin.apply(
            pod(
                f"worker-{i}",
                tpu=4,
                tolerations=TOLERATE_TPU,
                restart="Always",
                node_selector={"cloud.google.com/gke-tpu-topology": "4x4"},
            )
        )
    twin.advance(1)
    bound = sorted(twin.get("Pod", f"worker-{i}")["spec"].get("nodeName", "-") for i in range(5))
    assert bound == ["-", "gke-tpu-0", "gke-tpu-1", "gke-tpu-2", "gke-tpu-3"]
    assert (
        "4 Insufficient google.com/tpu" in condition(twin.get("Pod", "worker-4"), "PodScheduled")["message"]
    )


def test_a_node_applied_by_hand_registers_and_takes_pods(twin: Twin) -> None:
    twin.apply("""
apiVersion: v1
kind: Node
metadata:
  name: hand-made
  labels: {cloud.google.com/gke-nodepool: tpu-pool}
  annotations: {twin.flexq.dev/capacity: '{"cpu": "16", "google.com/tpu": "4"}'}
""")
    twin.apply(pod("w", tpu=4, node_selector={"cloud.google.com/gke-nodepool": "tpu-pool"}))
    twin.advance(1)
    n = twin.get("Node", "hand-made")
    assert n["status"]["allocatable"]["google.com/tpu"] == "4" and n["status"]["allocatable"]["cpu"] == "16"
    assert condition(n, "Ready")["reason"] == "KubeletReady"
    assert twin.get("Pod", "w")["spec"]["nodeName"] == "hand-made"
    assert twin.get("Pod", "w")["status"]["hostIP"].startswith("10.128.")


def test_a_freed_slice_wakes_every_waiting_worker_not_the_same_one_four_times(twin: Twin) -> None:
    """Four nodes freed at once, four alike workers waiting: each node's hint must wake a different pod (each
    hint used to pick the same first pod, so three workers stayed Unschedulable on free nodes)."""
    for i in range(4):
        add_node(twin, tpu_node(f"gke-tpu-{i}", "on-demand"))

    def worker(name: str) -> dict:
        return pod(
            name,
            tpu=4,
            tolerations=TOLERATE_TPU,
            restart="Always",
            node_selector={"cloud.google.com/gke-tpu-topology": "4x4"},
        )

    for i in range(4):
        twin.apply(worker(f"a-{i}"))
    twin.advance(1)
    for i in range(4):
        twin.apply(worker(f"b-{i}"))
    twin.advance(5)
    assert all("nodeName" not in twin.get("Pod", f"b-{i}")["spec"] for i in range(4))
    for i in range(4):
        twin.delete("Pod", f"a-{i}")
    twin.advance(2)
    bound = sorted(twin.get("Pod", f"b-{i}")["spec"].get("nodeName") or "-" for i in range(4))
    assert bound == [f"gke-tpu-{i}" for i in range(4)]


def _slice_node(name: str, slice_id: str) -> dict:
    obj = tpu_node(name, "dws-pool")
    obj["metadata"]["annotations"] = {"gke.twin.flexq.dev/slice": slice_id}
    return obj


def _host(name: str, replica: str) -> dict:
    obj = pod(
        name,
        tpu=4,
        tolerations=TOLERATE_TPU,
        restart="Always",
        node_selector={"cloud.google.com/gke-tpu-topology": "4x4"},
    )
    obj["metadata"]["labels"] = {"ray.io/worker-group-replica-name": replica}
    return obj


def _slices_of(twin: Twin, names: list[str]) -> set[str]:
    out = set()
    for n in names:
        node_name = twin.get("Pod", n)["spec"].get("nodeName")
        out.add(twin.get("Node", node_name)["metadata"]["annotations"]["gke.twin.flexq.dev/slice"])
    return out


def test_the_hosts_of_a_multi_host_replica_share_one_slice(twin: Twin) -> None:
    """Two 4x4 slices (4 hosts each), a replica's hosts arriving one by one while another replica fills in: every
    replica ends on one slice (a TPU slice is one ICI domain), never two half slices; a replica whose hosts
    cannot all fit on one slice waits, with InterPodAffinity's message, even with four free nodes spread
    over two slices."""
    for s in ("a", "b"):
        for i in range(4):
            add_node(twin, _slice_node(f"gke-dws-{s}-{i}", s))
    twin.apply(_host("r1-0", "r1"))
    twin.advance(1)
    for i in range(4):
        twin.apply(_host(f"r2-{i}", "r2"))
    twin.advance(1)
    for i in range(1, 4):
        twin.apply(_host(f"r1-{i}", "r1"))
    twin.advance(1)
    r1, r2 = [f"r1-{i}" for i in range(4)], [f"r2-{i}" for i in range(4)]
    assert all(twin.get("Pod", n)["spec"].get("nodeName") for n in r1 + r2)
    assert len(_slices_of(twin, r1)) == 1 and len(_slices_of(twin, r2)) == 1
    assert _slices_of(twin, r1) != _slices_of(twin, r2)
    # two hosts of each slice freed: four free nodes, no slice with four
    for n in ("r1-2", "r1-3", "r2-2", "r2-3"):
        twin.delete("Pod", n)
    for i in range(4):
        twin.apply(_host(f"r3-{i}", "r3"))
    twin.advance(5)
    assert all("nodeName" not in twin.get("Pod", f"r3-{i}")["spec"] for i in range(4))
    msg = condition(twin.get("Pod", "r3-0"), "PodScheduled")["message"]
    assert "4 node(s) didn't match pod affinity rules" in msg, msg
    # one slice empties: the waiting replica takes all of it
    for n in ("r1-0", "r1-1"):
        twin.delete("Pod", n)
    twin.advance(2)
    r3 = [f"r3-{i}" for i in range(4)]
    assert all(twin.get("Pod", n)["spec"].get("nodeName") for n in r3)
    assert len(_slices_of(twin, r3)) == 1
