"""Malformed manifests are refused with a Kubernetes ``Status``: reason Invalid, each problem by field path.

Every case starts from a valid object (checked by ``test_bases_are_valid``) and breaks one thing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from flexq import Twin
from flexq.api.kinds import REGISTRY
from flexq.api.scheme import admit, resolve_object
from flexq.errors import Invalid

V1, V2 = "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"


def _containers(requests: dict | None = None) -> list[dict]:
    return [{"name": "c", "image": "busybox", "resources": {"requests": requests or {"cpu": "1"}}}]


def _flavor(name: str, *quotas: tuple[str, Any]) -> dict:
    return {"name": name, "resources": [{"name": r, "nominalQuota": q} for r, q in quotas]}


BASES: dict[str, Callable[[], dict]] = {
    "rf": lambda: {
        "apiVersion": V2,
        "kind": "ResourceFlavor",
        "metadata": {"name": "on-demand"},
        "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": "on-demand-pool"}},
    },
    "cq": lambda: {
        "apiVersion": V2,
        "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        _flavor("on-demand", ("cpu", 40), ("memory", "75Gi")),
                        _flavor("dws", ("cpu", 1e9), ("memory", "1e9")),
                    ],
                }
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "dws-prov", "onFlavors": ["dws"]}]},
        },
    },
    "lq": lambda: {
        "apiVersion": V1,
        "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": "default"},
        "spec": {"clusterQueue": "cluster-queue"},
    },
    "wl": lambda: {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "default"},
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {"name": "head", "count": 1, "template": {"spec": {"containers": _containers()}}},
                {"name": "workers", "count": 4, "template": {"spec": {"containers": _containers()}}},
            ],
        },
    },
    "ac": lambda: {
        "apiVersion": V1,
        "kind": "AdmissionCheck",
        "metadata": {"name": "dws-prov"},
        "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"},
    },
    "prc": lambda: {
        "apiVersion": V1,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "dws-config"},
        "spec": {
            "provisioningClassName": "queued-provisioning.gke.io",
            "managedResources": ["google.com/tpu"],
        },
    },
    "wpc": lambda: {
        "apiVersion": V2,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    },
    "cohort": lambda: {
        "apiVersion": V2,
        "kind": "Cohort",
        "metadata": {"name": "team"},
        "spec": {
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [_flavor("on-demand", ("cpu", 8))]}]
        },
    },
    "pr": lambda: {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": "pr", "namespace": "default"},
        "spec": {
            "provisioningClassName": "queued-provisioning.gke.io",
            "podSets": [{"podTemplateRef": {"name": "ppt-wl-dws-prov-1-workers"}, "count": 4}],
        },
    },
    "rayjob": lambda: {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "rayjob-tpu-v6e-dws-1",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
            "annotations": {"kueue.x-k8s.io/elastic-job": "true"},
        },
        "spec": {
            "entrypoint": "python /app/train.py",
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "enableInTreeAutoscaling": True,
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": _containers()}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "tpu-group",
                        "replicas": 1,
                        "numOfHosts": 4,
                        "template": {"spec": {"containers": _containers({"google.com/tpu": "4"})}},
                    }
                ],
            },
        },
    },
}


def _rc() -> dict:
    job = BASES["rayjob"]()
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {k: v for k, v in job["spec"]["rayClusterSpec"].items() if k != "enableInTreeAutoscaling"},
    }


BASES["rc"] = _rc


def _rg(o: dict, i: int = 0) -> dict:
    return o["spec"]["resourceGroups"][i]


def _rq(o: dict, f: int = 0, r: int = 0) -> dict:
    return _rg(o)["flavors"][f]["resources"][r]


def _set(d: dict, key: str, value: Any) -> None:
    d[key] = value


RG0F0R0 = "spec.resourceGroups[0].flavors[0].resources[0]"
TEMPLATE0 = "spec.podSets[0].template.spec.containers[0]"

# (id, base, mutation, [(field, reason), ...])
CASES: list[tuple[str, str, Callable[[dict], Any], list[tuple[str, str]]]] = [
    # ResourceFlavor
    (
        "rf-name-not-dns-1123",
        "rf",
        lambda o: _set(o["metadata"], "name", "On_Demand"),
        [("metadata.name", "FieldValueInvalid")],
    ),
    (
        "rf-nine-node-labels",
        "rf",
        lambda o: o["spec"]["nodeLabels"].update({f"k{i}": "v" for i in range(8)}),
        [("spec.nodeLabels", "FieldValueTooMany")],
    ),
    (
        "rf-node-label-bad-key",
        "rf",
        lambda o: o["spec"]["nodeLabels"].update({"bad key": "v"}),
        [("spec.nodeLabels", "FieldValueInvalid")],
    ),
    (
        "rf-taint-bad-effect",
        "rf",
        lambda o: _set(o["spec"], "nodeTaints", [{"key": "k", "effect": "Sometimes"}]),
        [("spec.nodeTaints[0].effect", "FieldValueNotSupported")],
    ),
    (
        "rf-nine-taints",
        "rf",
        lambda o: _set(o["spec"], "nodeTaints", [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(9)]),
        [("spec.nodeTaints", "FieldValueTooMany")],
    ),
    (
        "rf-duplicate-taint",
        "rf",
        lambda o: _set(
            o["spec"],
            "nodeTaints",
            [
                {"key": "google.com/tpu", "value": "a", "effect": "NoSchedule"},
                {"key": "google.com/tpu", "value": "b", "effect": "NoSchedule"},
            ],
        ),
        [("spec.nodeTaints[1]", "FieldValueDuplicate")],
    ),
    (
        "rf-toleration-without-key-must-be-exists",
        "rf",
        lambda o: _set(o["spec"], "tolerations", [{"operator": "Equal", "value": "x"}]),
        [("spec.tolerations", "FieldValueInvalid")],
    ),
    # ClusterQueue: schema and CEL
    (
        "cq-seventeen-resource-groups",
        "cq",
        lambda o: _set(
            o["spec"],
            "resourceGroups",
            [{"coveredResources": [f"r{i}"], "flavors": [_flavor(f"f{i}", (f"r{i}", 1))]} for i in range(17)],
        ),
        [("spec.resourceGroups", "FieldValueTooMany")],
    ),
    (
        "cq-sixty-five-flavors-in-a-group",
        "cq",
        lambda o: _set(_rg(o), "flavors", [_flavor(f"f{i}", ("cpu", 1), ("memory", 1)) for i in range(65)]),
        [("spec.resourceGroups[0].flavors", "FieldValueTooMany")],
    ),
    (
        "cq-group-without-flavors",
        "cq",
        lambda o: _set(_rg(o), "flavors", []),
        [("spec.resourceGroups[0].flavors", "FieldValueRequired")],
    ),
    (
        "cq-flavor-resource-count-differs",
        "cq",
        lambda o: _rg(o)["flavors"][0]["resources"].pop(),
        [("spec.resourceGroups[0]", "FieldValueInvalid")],
    ),
    (
        "cq-quota-not-a-quantity",
        "cq",
        lambda o: _set(_rq(o), "nominalQuota", "ten"),
        [(f"{RG0F0R0}.nominalQuota", "FieldValueInvalid")],
    ),
    (
        "cq-quota-missing",
        "cq",
        lambda o: _rq(o).pop("nominalQuota"),
        [(f"{RG0F0R0}.nominalQuota", "FieldValueRequired")],
    ),
    (
        "cq-flavor-name-not-dns-1123",
        "cq",
        lambda o: _set(_rg(o)["flavors"][0], "name", "On-Demand"),
        [("spec.resourceGroups[0].flavors[0].name", "FieldValueInvalid")],
    ),
    (
        "cq-borrowing-limit-without-cohort",
        "cq",
        lambda o: _set(_rq(o), "borrowingLimit", "1"),
        [("spec", "FieldValueInvalid")],
    ),
    (
        "cq-preference-needs-try-next-flavor",
        "cq",
        lambda o: _set(
            o["spec"],
            "flavorFungibility",
            {
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "PreemptionOverBorrowing",
            },
        ),
        [("spec.flavorFungibility", "FieldValueInvalid")],
    ),
    (
        "cq-borrow-within-cohort-needs-reclaim",
        "cq",
        lambda o: _set(o["spec"], "preemption", {"borrowWithinCohort": {"policy": "LowerPriority"}}),
        [("spec.preemption", "FieldValueInvalid")],
    ),
    (
        "cq-unknown-queueing-strategy",
        "cq",
        lambda o: _set(o["spec"], "queueingStrategy", "FIFO"),
        [("spec.queueingStrategy", "FieldValueNotSupported")],
    ),
    (
        "cq-unknown-stop-policy",
        "cq",
        lambda o: _set(o["spec"], "stopPolicy", "Drain"),
        [("spec.stopPolicy", "FieldValueNotSupported")],
    ),
    (
        "cq-v1beta2-rejects-deprecated-preempt",
        "cq",
        lambda o: _set(o["spec"], "flavorFungibility", {"whenCanPreempt": "Preempt"}),
        [("spec.flavorFungibility.whenCanPreempt", "FieldValueNotSupported")],
    ),
    # ClusterQueue: webhook
    (
        "cq-resource-name-out-of-order",
        "cq",
        lambda o: _rg(o)["flavors"][0]["resources"].reverse(),
        [
            (f"{RG0F0R0}.name", "FieldValueInvalid"),
            ("spec.resourceGroups[0].flavors[0].resources[1].name", "FieldValueInvalid"),
        ],
    ),
    (
        "cq-flavor-in-two-groups",
        "cq",
        lambda o: o["spec"]["resourceGroups"].append(
            {"coveredResources": ["google.com/tpu"], "flavors": [_flavor("dws", ("google.com/tpu", 16))]}
        ),
        [("spec.resourceGroups[1].flavors[0].name", "FieldValueDuplicate")],
    ),
    (
        "cq-resource-in-two-groups",
        "cq",
        lambda o: o["spec"]["resourceGroups"].append(
            {"coveredResources": ["cpu"], "flavors": [_flavor("spot", ("cpu", 16))]}
        ),
        [("spec.resourceGroups[1].coveredResources[0]", "FieldValueDuplicate")],
    ),
    (
        "cq-negative-quota",
        "cq",
        lambda o: _set(_rq(o), "nominalQuota", "-1"),
        [(f"{RG0F0R0}.nominalQuota", "FieldValueInvalid")],
    ),
    (
        "cq-lending-limit-without-cohort",
        "cq",
        lambda o: _set(_rq(o), "lendingLimit", "1"),
        [(f"{RG0F0R0}.lendingLimit", "FieldValueInvalid")],
    ),
    (
        "cq-lending-limit-above-nominal",
        "cq",
        lambda o: (_set(o["spec"], "cohortName", "team"), _set(_rq(o), "lendingLimit", "41")),
        [(f"{RG0F0R0}.lendingLimit", "FieldValueInvalid")],
    ),
    (
        "cq-covered-resource-bad-name",
        "cq",
        lambda o: (
            _set(_rg(o), "coveredResources", ["cpu", "bad resource"]),
            _set(_rq(o, 0, 1), "name", "bad resource"),
            _set(_rq(o, 1, 1), "name", "bad resource"),
        ),
        [("spec.resourceGroups[0].coveredResources[1]", "FieldValueInvalid")],
    ),
    (
        "cq-on-flavors-unknown-flavor",
        "cq",
        lambda o: _set(o["spec"]["admissionChecksStrategy"]["admissionChecks"][0], "onFlavors", ["flex"]),
        [("spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]", "FieldValueNotSupported")],
    ),
    (
        "cq-every-webhook-problem-named",
        "cq",
        lambda o: (
            _set(_rq(o), "nominalQuota", "-5"),
            _set(o["spec"]["admissionChecksStrategy"]["admissionChecks"][0], "onFlavors", ["flex"]),
        ),
        [
            (f"{RG0F0R0}.nominalQuota", "FieldValueInvalid"),
            ("spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]", "FieldValueNotSupported"),
        ],
    ),
    (
        "cq-v1beta1-cohort-name-typo",
        "cq",
        lambda o: (_set(o, "apiVersion", V1), _set(o["spec"], "cohortName", "x")),
        [("spec.cohortName", "FieldValueInvalid")],
    ),
    # LocalQueue
    ("lq-without-spec", "lq", lambda o: o.pop("spec"), [("spec", "FieldValueRequired")]),
    (
        "lq-cluster-queue-not-dns-1123",
        "lq",
        lambda o: _set(o["spec"], "clusterQueue", "Cluster Queue"),
        [("spec.clusterQueue", "FieldValueInvalid")],
    ),
    # Workload
    (
        "wl-no-pod-sets",
        "wl",
        lambda o: _set(o["spec"], "podSets", []),
        [("spec.podSets", "FieldValueRequired")],
    ),
    (
        "wl-nineteen-pod-sets",
        "wl",
        lambda o: _set(
            o["spec"],
            "podSets",
            [{"name": f"ps{i}", "template": {"spec": {"containers": _containers()}}} for i in range(19)],
        ),
        [("spec.podSets", "FieldValueTooMany")],
    ),
    (
        "wl-duplicate-pod-set-names",
        "wl",
        lambda o: _set(o["spec"]["podSets"][1], "name", "head"),
        [("spec.podSets[1]", "FieldValueDuplicate")],
    ),
    (
        "wl-pod-set-name-not-dns-label",
        "wl",
        lambda o: _set(o["spec"]["podSets"][0], "name", "Head.Group"),
        [("spec.podSets[0].name", "FieldValueInvalid")],
    ),
    (
        "wl-negative-count",
        "wl",
        lambda o: _set(o["spec"]["podSets"][0], "count", -1),
        [("spec.podSets[0].count", "FieldValueInvalid")],
    ),
    (
        "wl-min-count-above-count",
        "wl",
        lambda o: _set(o["spec"]["podSets"][1], "minCount", 5),
        [("spec.podSets[1]", "FieldValueInvalid")],
    ),
    (
        "wl-two-pod-sets-with-min-count",
        "wl",
        lambda o: [_set(ps, "minCount", 1) for ps in o["spec"]["podSets"]],
        [("spec.podSets", "FieldValueInvalid")],
    ),
    (
        "wl-priority-class-ref-without-priority",
        "wl",
        lambda o: _set(
            o["spec"],
            "priorityClassRef",
            {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
        ),
        [("spec", "FieldValueInvalid")],
    ),
    (
        "wl-pods-resource-is-reserved",
        "wl",
        lambda o: _set(
            o["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"],
            "requests",
            {"pods": "1"},
        ),
        [(f"{TEMPLATE0}.resources.requests[pods]", "FieldValueInvalid")],
    ),
    (
        "wl-v1beta1-unknown-priority-source",
        "wl",
        lambda o: (_set(o, "apiVersion", V1), _set(o["spec"], "priorityClassSource", "kueue")),
        [("spec.priorityClassSource", "FieldValueNotSupported")],
    ),
    # AdmissionCheck, ProvisioningRequestConfig, WorkloadPriorityClass, Cohort
    (
        "ac-without-controller-name",
        "ac",
        lambda o: o["spec"].pop("controllerName"),
        [("spec.controllerName", "FieldValueRequired")],
    ),
    (
        "ac-parameters-kind-not-a-name",
        "ac",
        lambda o: _set(
            o["spec"],
            "parameters",
            {"apiGroup": "kueue.x-k8s.io", "kind": "Provisioning Request Config", "name": "dws-config"},
        ),
        [("spec.parameters.kind", "FieldValueInvalid")],
    ),
    (
        "prc-class-name-not-dns-1123",
        "prc",
        lambda o: _set(o["spec"], "provisioningClassName", "Queued_Provisioning"),
        [("spec.provisioningClassName", "FieldValueInvalid")],
    ),
    (
        "prc-unknown-merge-policy",
        "prc",
        lambda o: _set(o["spec"], "podSetMergePolicy", "Merge"),
        [("spec.podSetMergePolicy", "FieldValueNotSupported")],
    ),
    (
        "prc-hundred-and-one-parameters",
        "prc",
        lambda o: _set(o["spec"], "parameters", {f"p{i}": "v" for i in range(101)}),
        [("spec.parameters", "FieldValueTooMany")],
    ),
    ("wpc-without-value", "wpc", lambda o: o.pop("value"), [("value", "FieldValueRequired")]),
    ("wpc-value-beyond-int32", "wpc", lambda o: _set(o, "value", 2**31), [("value", "FieldValueInvalid")]),
    (
        "cohort-lending-limit-without-parent",
        "cohort",
        lambda o: _set(_rq(o), "lendingLimit", "2"),
        [(f"{RG0F0R0}.lendingLimit", "FieldValueInvalid")],
    ),
    # ProvisioningRequest
    (
        "pr-zero-count",
        "pr",
        lambda o: _set(o["spec"]["podSets"][0], "count", 0),
        [("spec.podSets[0].count", "FieldValueInvalid")],
    ),
    (
        "pr-thirty-three-pod-sets",
        "pr",
        lambda o: _set(o["spec"], "podSets", o["spec"]["podSets"] * 33),
        [("spec.podSets", "FieldValueTooMany")],
    ),
    (
        "pr-without-class-name",
        "pr",
        lambda o: o["spec"].pop("provisioningClassName"),
        [("spec.provisioningClassName", "FieldValueRequired")],
    ),
    # RayJob (KubeRay schema, Kueue webhook for queued jobs), RayCluster
    (
        "rayjob-queued-without-shutdown",
        "rayjob",
        lambda o: _set(o["spec"], "shutdownAfterJobFinishes", False),
        [("spec.shutdownAfterJobFinishes", "FieldValueInvalid")],
    ),
    (
        "rayjob-autoscaling-without-elastic-annotation",
        "rayjob",
        lambda o: o["metadata"].pop("annotations"),
        [("spec.rayClusterSpec.enableInTreeAutoscaling", "FieldValueInvalid")],
    ),
    (
        "rayjob-queued-on-existing-cluster",
        "rayjob",
        lambda o: _set(o["spec"], "clusterSelector", {"ray.io/cluster": "mine"}),
        [("spec.clusterSelector", "FieldValueInvalid")],
    ),
    (
        "rayjob-queued-without-cluster-spec",
        "rayjob",
        lambda o: o["spec"].pop("rayClusterSpec"),
        [("spec.rayClusterSpec", "FieldValueRequired")],
    ),
    (
        "rayjob-worker-group-named-head",
        "rayjob",
        lambda o: _set(o["spec"]["rayClusterSpec"]["workerGroupSpecs"][0], "groupName", "head"),
        [("spec.rayClusterSpec.workerGroupSpecs[0].groupName", "FieldValueForbidden")],
    ),
    (
        "rayjob-queue-name-not-dns-1123",
        "rayjob",
        lambda o: _set(o["metadata"]["labels"], "kueue.x-k8s.io/queue-name", "User-Queue"),
        [("metadata.labels[kueue.x-k8s.io/queue-name]", "FieldValueInvalid")],
    ),
    (
        "rayjob-head-without-template",
        "rayjob",
        lambda o: o["spec"]["rayClusterSpec"]["headGroupSpec"].pop("template"),
        [("spec.rayClusterSpec.headGroupSpec.template", "FieldValueRequired")],
    ),
    (
        "rayjob-bad-managed-by",
        "rayjob",
        lambda o: _set(o["spec"], "managedBy", "me"),
        [("spec.managedBy", "FieldValueInvalid")],
    ),
    (
        "raycluster-queued-nineteen-pod-sets",
        "rc",
        lambda o: _set(
            o["spec"],
            "workerGroupSpecs",
            [{**o["spec"]["workerGroupSpecs"][0], "groupName": f"g{i}"} for i in range(18)],
        ),
        [("spec.workerGroupSpecs", "FieldValueTooMany")],
    ),
]


@pytest.mark.parametrize("base", sorted(BASES))
def test_bases_are_valid(base):
    obj = BASES[base]()
    stored = admit(resolve_object(REGISTRY, obj), copy.deepcopy(obj))
    assert stored["metadata"]["name"] == obj["metadata"]["name"]


def test_there_are_at_least_thirty_distinct_cases():
    assert len({c[0] for c in CASES}) == len(CASES) >= 30


@pytest.mark.parametrize(("base", "mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_manifest_is_refused(base, mutate, expected):
    obj = BASES[base]()
    mutate(obj)
    with pytest.raises(Invalid) as exc:
        admit(resolve_object(REGISTRY, obj), obj)
    status = exc.value.to_status()
    assert (status["reason"], status["code"], status["status"]) == ("Invalid", 422, "Failure")
    assert status["details"]["kind"] == obj["kind"]
    assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == expected
    for cause in status["details"]["causes"]:
        assert cause["field"] in status["message"] and cause["message"]


def _snapshot(twin: Twin) -> list[tuple[str, dict]]:
    return sorted(
        ((kk, o) for kk, o in twin.store.all_objects()), key=lambda e: json.dumps(e, sort_keys=True)
    )


@pytest.mark.parametrize(("base", "mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_manifest_applied_to_a_twin_stores_nothing(twin_v1beta1: Twin, base, mutate, expected):
    """Through ``Twin.apply`` (create) and over an existing valid object (update): refused with the same causes,
    and the store is exactly as before (same resourceVersion, same objects). Kueue 0.19.2: the cases include
    v1beta1 objects."""
    twin = twin_v1beta1
    good = BASES[base]()
    twin.apply(good)
    bad = BASES[base]()
    mutate(bad)
    targets = [bad]  # an update of the valid object, or (a name made invalid) a create
    if bad["metadata"].get("name") == good["metadata"]["name"]:
        targets.append({**bad, "metadata": {**bad["metadata"], "name": "fresh"}})  # a create
    for target in targets:
        before_rv, before = twin.store.resource_version, _snapshot(twin)
        with pytest.raises(Invalid) as exc:
            twin.apply(copy.deepcopy(target))
        assert [(c.field, c.reason) for c in exc.value.causes] == expected
        assert twin.store.resource_version == before_rv and _snapshot(twin) == before
