"""kube-scheduler's filters, score and FitError message, as pure functions."""

from __future__ import annotations

import pytest

from flexq.kube import scheduler_filters as s
from flexq.semantics import nodefit
from flexq.semantics.taints import tolerates

from .kube_builders import QUEUED_TAINT, TPU_TAINT, node, pod, tpu_node


def info(obj: dict) -> nodefit.NodeInfo:
    return nodefit.node_info(obj)


def test_requests_default_to_limits_and_take_init_containers_and_overhead() -> None:
    p = pod("p", cpu="500m", memory="1Gi", tpu=4)
    p["spec"]["containers"][0]["resources"]["requests"].pop("google.com/tpu")  # only the limit remains
    p["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "2"}}}]
    p["spec"]["overhead"] = {"memory": "1Mi"}
    assert nodefit.pod_requests(p) == {"cpu": 2000, "memory": 2**30 + 2**20, "google.com/tpu": 4}


@pytest.mark.parametrize(
    ("toleration", "taint", "ok"),
    [
        ({"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}, TPU_TAINT, True),
        ({"key": "google.com/tpu", "operator": "Equal", "value": "present"}, TPU_TAINT, True),
        ({"key": "google.com/tpu", "value": "absent"}, TPU_TAINT, False),
        ({"operator": "Exists"}, QUEUED_TAINT, True),
        ({"key": "google.com/tpu", "operator": "Exists", "effect": "NoExecute"}, TPU_TAINT, False),
        (
            {
                "key": "cloud.google.com/gke-queued",
                "operator": "Equal",
                "value": "true",
                "effect": "NoSchedule",
            },
            QUEUED_TAINT,
            True,
        ),
    ],
    ids=["exists", "equal", "wrong-value", "wildcard", "wrong-effect", "tutorial-dws"],
)
def test_tolerations(toleration: dict, taint: dict, ok: bool) -> None:
    assert tolerates(toleration, taint) is ok


@pytest.mark.parametrize(
    ("op", "values", "label", "ok"),
    [
        ("In", ["a", "b"], "a", True),
        ("In", ["a"], None, False),
        ("NotIn", ["a"], "b", True),
        ("NotIn", ["a"], None, True),
        ("NotIn", ["a"], "a", False),
        ("Exists", [], "x", True),
        ("Exists", [], None, False),
        ("DoesNotExist", [], None, True),
        ("DoesNotExist", [], "x", False),
        ("Gt", ["3"], "4", True),
        ("Gt", ["3"], "3", False),
        ("Lt", ["3"], "2", True),
        ("Lt", ["3"], "x", False),
    ],
)
def test_node_affinity_operators(op: str, values: list[str], label: str | None, ok: bool) -> None:
    labels = {"k": label} if label is not None else {}
    n = info(node("n", labels=labels))
    term = {"matchExpressions": [{"key": "k", "operator": op, "values": values}]}
    p = pod(
        "p",
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        },
    )
    assert nodefit.matches_node_affinity(p, n) is ok


def test_affinity_terms_are_ored_and_match_fields_by_name() -> None:
    n = info(node("n1"))
    terms = [
        {"matchExpressions": [{"key": "missing", "operator": "Exists"}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
    ]
    p = pod(
        "p",
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        },
    )
    assert nodefit.matches_node_affinity(p, n)
    assert not nodefit.matches_node_affinity(
        pod("p", node_selector={"cloud.google.com/gke-nodepool": "other"}), n
    )


def test_fit_error_message_is_kube_schedulers() -> None:
    nodes = [info(node("cpu-1")), info(tpu_node("tpu-1", "pool")), info(tpu_node("tpu-2", "pool"))]
    p = pod(
        "w",
        tpu=8,
        node_selector={"cloud.google.com/gke-tpu-topology": "4x4"},
        tolerations=[{"key": "google.com/tpu", "operator": "Exists"}],
    )
    d = s.schedule(p, nodes, {}, {})
    assert d.node is None
    assert d.message == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 Insufficient google.com/tpu. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )


def test_taint_and_unschedulable_and_not_ready_messages() -> None:
    nodes = [
        info(tpu_node("t", "pool", queued=True)),
        info(node("u", unschedulable=True)),
        info(node("nr", ready="False")),
    ]
    d = s.schedule(pod("p"), nodes, {}, {})
    assert d.message.startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint "
        "{google.com/tpu: present}, 1 node(s) had untolerated taint "
        "{node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable. "
    )
    assert d.message.endswith("3 Preemption is not helpful for scheduling.")
    assert s.schedule(pod("p"), [], {}, {}).message == "no nodes available to schedule pods"


def test_resources_used_by_bound_pods_and_pod_count() -> None:
    n = info(node("n", cpu="2", pods="2"))
    assert s.schedule(pod("p", cpu="2"), [n], {"n": {"cpu": 1000}}, {"n": 1}).message.startswith(
        "0/1 nodes are available: 1 Insufficient cpu."
    )
    assert "1 Too many pods, 1 Insufficient cpu" not in s.schedule(pod("p"), [n], {}, {"n": 2}).message
    assert s.schedule(pod("p"), [n], {}, {"n": 2}).message.startswith(
        "0/1 nodes are available: 1 Too many pods."
    )


def test_choice_is_least_allocated_then_name() -> None:
    nodes = [info(node("b")), info(node("a")), info(node("c"))]
    assert s.schedule(pod("p"), nodes, {}, {}).node == "a"
    assert s.schedule(pod("p"), nodes, {"a": {"cpu": 3000}}, {"a": 1}).node == "b"
