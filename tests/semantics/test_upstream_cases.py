"""The Kubernetes rules in ``flexq.semantics``, checked against upstream's own test cases.

Each table row is named after its upstream case:
- ``k8s.io/api/core/v1/toleration_test.go`` TestTolerationToleratesTaint;
- ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go`` TestNodeSelectorMatch,
  TestNodeSelectorRequirementsAsSelector and TestPodMatchesNodeSelectorAndAffinityTerms;
- ``k8s.io/apimachinery/pkg/apis/meta/v1/helpers`` LabelSelectorAsSelector (nil, empty, operators);
- ``k8s.io/component-helpers/resource`` PodRequests (containers, init containers, sidecars, overhead).
Then the inputs on which flexq's three former copies disagreed give upstream's answer through every domain.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from flexq.gke import fit
from flexq.semantics import nodefit
from flexq.semantics.resources import pod_request_values, pod_requests
from flexq.semantics.selectors import (
    label_selector_matches,
    node_selector_matches,
    pod_matches_node,
    requirement_matches,
)
from flexq.semantics.taints import tolerates, untolerated_taint

NS = "NoSchedule"

TOLERATION_CASES = [
    (
        "toleration and taint have the same key and effect, and operator is Exists, and taint has no value",
        {"key": "foo", "operator": "Exists", "effect": NS},
        {"key": "foo", "effect": NS},
        True,
    ),
    (
        "toleration and taint have the same key and effect, and operator is Exists, and taint has some value",
        {"key": "foo", "operator": "Exists", "effect": NS},
        {"key": "foo", "value": "bar", "effect": NS},
        True,
    ),
    (
        "toleration and taint have the same effect, toleration has empty key and operator is Exists",
        {"key": "", "operator": "Exists", "effect": NS},
        {"key": "foo", "value": "bar", "effect": NS},
        True,
    ),
    (
        "toleration and taint have the same key, effect and value, and operator is Equal",
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": NS},
        {"key": "foo", "value": "bar", "effect": NS},
        True,
    ),
    (
        "toleration and taint have the same key and effect, but different values, and operator is Equal",
        {"key": "foo", "operator": "Equal", "value": "value1", "effect": NS},
        {"key": "foo", "value": "value2", "effect": NS},
        False,
    ),
    (
        "toleration and taint have the same key and value, but different effects, and operator is Equal",
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": NS},
        {"key": "foo", "value": "bar", "effect": "NoExecute"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "toleration", "taint", "want"), TOLERATION_CASES, ids=[c[0] for c in TOLERATION_CASES]
)
def test_toleration_tolerates_taint(name, toleration, taint, want):
    assert tolerates(toleration, taint) is want


def _req(key, op, *values):
    r = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def _affinity(*terms):
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


NAME = "metadata.name"
POD_CASES = [
    ("no selector", {}, {}, "", True),
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "", False),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", True),
    ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", True),
    ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, "", False),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        _affinity({"matchExpressions": [_req("foo", "In", "bar", "value2")]}),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        _affinity({"matchExpressions": [_req("kernel-version", "Gt", "0204")]}),
        {"kernel-version": "0206"},
        "",
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        _affinity({"matchExpressions": [_req("mem-type", "NotIn", "DDR", "DDR2")]}),
        {"mem-type": "DDR3"},
        "",
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        _affinity({"matchExpressions": [_req("GPU", "Exists")]}),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        _affinity({"matchExpressions": [_req("foo", "In", "value1", "value2")]}),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": None}
                }
            }
        },
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels",
        _affinity(),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects",
        _affinity({"matchExpressions": []}),
        {"foo": "bar"},
        "",
        False,
    ),
    ("Pod with no Affinity will schedule onto a node", {}, {"foo": "bar"}, "", True),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}},
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        _affinity({"matchExpressions": [_req("GPU", "Exists"), _req("GPU", "NotIn", "AMD", "INTER")]}),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        _affinity({"matchExpressions": [_req("GPU", "Exists"), _req("GPU", "In", "AMD", "INTER")]}),
        {"GPU": "NVIDIA-GRID-K1"},
        "",
        False,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels",
        _affinity(
            {"matchExpressions": [_req("foo", "In", "bar", "value2")]},
            {"matchExpressions": [_req("diffkey", "In", "wrong", "value2")]},
        ),
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector both are satisfied, will schedule onto the node",
        {"nodeSelector": {"foo": "bar"}, **_affinity({"matchExpressions": [_req("foo", "Exists")]})},
        {"foo": "bar"},
        "",
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied",
        {"nodeSelector": {"foo": "bar"}, **_affinity({"matchExpressions": [_req("foo", "Exists")]})},
        {"foo": "barrrrrr"},
        "",
        False,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        _affinity({"matchExpressions": [_req("foo", "NotIn", "invalid value: ___@#$%^")]}),
        {"foo": "bar"},
        "",
        False,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        _affinity({"matchFields": [_req(NAME, "In", "node_1")]}),
        {},
        "node_1",
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        _affinity({"matchFields": [_req(NAME, "In", "node_1")]}),
        {},
        "node_2",
        False,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        _affinity(
            {"matchFields": [_req(NAME, "In", "node_1")]}, {"matchExpressions": [_req("foo", "In", "bar")]}
        ),
        {"foo": "bar"},
        "node_2",
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        _affinity(
            {"matchFields": [_req(NAME, "In", "node_1")], "matchExpressions": [_req("foo", "In", "bar")]}
        ),
        {"foo": "bar"},
        "node_2",
        False,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        _affinity(
            {"matchFields": [_req(NAME, "In", "node_1")], "matchExpressions": [_req("foo", "In", "bar")]}
        ),
        {"foo": "bar"},
        "node_1",
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        _affinity(
            {"matchFields": [_req(NAME, "In", "node_1")]},
            {"matchExpressions": [_req("foo", "In", "not-match-to-bar")]},
        ),
        {"foo": "bar"},
        "node_2",
        False,
    ),
]


@pytest.mark.parametrize(("name", "spec", "labels", "node", "want"), POD_CASES, ids=[c[0] for c in POD_CASES])
def test_pod_matches_node_selector_and_affinity_terms(name, spec, labels, node, want):
    assert pod_matches_node(spec, labels, node) is want
    info = nodefit.NodeInfo(name=node, labels=labels, taints=(), allocatable={})
    assert nodefit.matches_node_affinity({"spec": spec}, info) is want


SELECTOR_CASES = [
    # TestNodeSelectorMatch
    (
        "invalid field selector and label selector",
        {
            "nodeSelectorTerms": [
                {"matchFields": [_req(NAME, "In", "host_1", "host_2")]},
                {
                    "matchExpressions": [_req("label_1", "In", "label_1_val")],
                    "matchFields": [_req(NAME, "In", "host_1")],
                },
                {"matchExpressions": [_req("invalid key", "In", "label_value")]},
            ]
        },
        {},
        "host_1",
        False,
    ),
    (
        "node matches field selector, but not labels",
        {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [_req("label_1", "In", "label_1_val")],
                    "matchFields": [_req(NAME, "In", "host_1")],
                }
            ]
        },
        {},
        "host_1",
        False,
    ),
    (
        "node matches field selector and label selector",
        {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [_req("label_1", "In", "label_1_val")],
                    "matchFields": [_req(NAME, "In", "host_1")],
                }
            ]
        },
        {"label_1": "label_1_val"},
        "host_1",
        True,
    ),
    (
        "second term matches",
        {
            "nodeSelectorTerms": [
                {"matchExpressions": [_req("label_1", "In", "label_1_val")]},
                {"matchFields": [_req(NAME, "In", "host_1")]},
            ]
        },
        {},
        "host_1",
        True,
    ),
    # TestNodeSelectorRequirementsAsSelector: requirements that do not parse select nothing
    (
        "values set must be empty for exists and does not exist",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("foo", "Exists", "bar", "baz")]}]},
        {"foo": "x"},
        "",
        False,
    ),
    (
        "foo>1",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("foo", "Gt", "1")]}]},
        {"foo": "2"},
        "",
        True,
    ),
    (
        "bar<7",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("bar", "Lt", "7")]}]},
        {"bar": "7"},
        "",
        False,
    ),
    (
        "Gt needs exactly one value",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("foo", "Gt", "1", "5")]}]},
        {"foo": "3"},
        "",
        False,
    ),
    (
        "Gt needs an integer value",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("foo", "Gt", "x")]}]},
        {"foo": "3"},
        "",
        False,
    ),
    (
        "Lt on a label that is not an integer",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("foo", "Lt", "9")]}]},
        {"foo": "v1"},
        "",
        False,
    ),
    (
        "In needs values",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("foo", "In")]}]},
        {"foo": ""},
        "",
        False,
    ),
    (
        "unknown operator",
        {"nodeSelectorTerms": [{"matchExpressions": [_req("foo", "Equals", "x")]}]},
        {"foo": "x"},
        "",
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "selector", "labels", "node", "want"), SELECTOR_CASES, ids=[c[0] for c in SELECTOR_CASES]
)
def test_node_selector_match(name, selector, labels, node, want):
    assert node_selector_matches(selector, labels, node) is want


LABEL_SELECTOR_CASES = [
    ("nil selects nothing", None, {"a": "b"}, False),
    ("empty selects everything", {}, {"a": "b"}, True),
    ("matchLabels", {"matchLabels": {"a": "b"}}, {"a": "b", "c": "d"}, True),
    ("matchLabels mismatch", {"matchLabels": {"a": "b"}}, {"a": "c"}, False),
    ("In", {"matchExpressions": [_req("a", "In", "b", "c")]}, {"a": "c"}, True),
    ("NotIn absent key", {"matchExpressions": [_req("a", "NotIn", "b")]}, {}, True),
    ("Exists", {"matchExpressions": [_req("a", "Exists")]}, {"a": ""}, True),
    ("DoesNotExist", {"matchExpressions": [_req("a", "DoesNotExist")]}, {"a": ""}, False),
    ("Gt is not a label selector operator", {"matchExpressions": [_req("a", "Gt", "1")]}, {"a": "5"}, False),
    ("In with no values is an error", {"matchExpressions": [_req("a", "In")]}, {"a": "x"}, False),
]


@pytest.mark.parametrize(
    ("name", "selector", "labels", "want"), LABEL_SELECTOR_CASES, ids=[c[0] for c in LABEL_SELECTOR_CASES]
)
def test_label_selector_as_selector(name, selector, labels, want):
    assert label_selector_matches(selector, labels) is want


def _c(requests=None, limits=None, **extra):
    return {
        "name": "c",
        "resources": {k: v for k, v in (("requests", requests), ("limits", limits)) if v},
        **extra,
    }


REQUEST_CASES = [
    (
        "two containers summed",
        {"containers": [_c({"cpu": "1"}), _c({"cpu": "2", "memory": "1Gi"})]},
        {"cpu": Fraction(3), "memory": Fraction(2**30)},
    ),
    (
        "limits default missing requests",
        {"containers": [_c(limits={"cpu": "2", "google.com/tpu": "4"})]},
        {"cpu": Fraction(2), "google.com/tpu": Fraction(4)},
    ),
    (
        "init container larger than the sum",
        {"containers": [_c({"cpu": "1"})], "initContainers": [_c({"cpu": "3"})]},
        {"cpu": Fraction(3)},
    ),
    (
        "init container smaller than the sum",
        {"containers": [_c({"cpu": "4"})], "initContainers": [_c({"cpu": "3"})]},
        {"cpu": Fraction(4)},
    ),
    (
        "restartable init container adds to the sum",
        {"containers": [_c({"cpu": "1"})], "initContainers": [_c({"cpu": "2"}, restartPolicy="Always")]},
        {"cpu": Fraction(3)},
    ),
    (
        "restartable init container before a regular one raises its peak",
        {
            "containers": [_c({"cpu": "1"})],
            "initContainers": [_c({"cpu": "2"}, restartPolicy="Always"), _c({"cpu": "5"})],
        },
        {"cpu": Fraction(7)},
    ),
    (
        "pod overhead on top",
        {"containers": [_c({"cpu": "1"})], "overhead": {"cpu": "250m"}},
        {"cpu": Fraction(5, 4)},
    ),
]


@pytest.mark.parametrize(("name", "spec", "want"), REQUEST_CASES, ids=[c[0] for c in REQUEST_CASES])
def test_pod_requests(name, spec, want):
    assert pod_requests(spec) == want
    ints = pod_request_values(spec)
    assert ints.get("cpu") == int(want["cpu"] * 1000)
    # the domains count the same requests
    assert nodefit.pod_requests({"spec": spec})["cpu"] == int(want["cpu"] * 1000)
    assert fit.pod_requests({"spec": spec})["cpu"] == int(want["cpu"] * 1000)


def test_former_disagreements_give_upstream_answers_everywhere():
    """``tolerates({'operator':'Equal','value':'x'}, {'key':'k','value':'x'})`` is True upstream (an empty key
    matches every key; Equal compares values); a ``Gt`` requirement with two values does not parse, so it
    matches nothing."""
    toleration, taint = {"operator": "Equal", "value": "x"}, {"key": "k", "value": "x", "effect": NS}
    assert tolerates(toleration, taint)  # the one rule (Kueue's flavor matching reads it too)
    pod = {"spec": {"tolerations": [toleration]}}
    node = nodefit.NodeInfo(name="n", labels={}, taints=(taint,), allocatable={})
    assert nodefit.untolerated_taint(pod, node) is None
    assert fit.tolerates_all(pod, [taint]) is None
    assert untolerated_taint([taint], [toleration]) is None

    gt = {"key": "gen", "operator": "Gt", "values": ["1", "9"]}
    spec = _affinity({"matchExpressions": [gt]})
    labels = {"gen": "5"}
    assert requirement_matches(gt, labels) is False
    assert nodefit.matches_node_affinity({"spec": spec}, nodefit.NodeInfo("n", labels, (), {})) is False
    assert fit.selects({"spec": spec}, labels) is False
