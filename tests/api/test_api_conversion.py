"""kueue.x-k8s.io v1beta1 <-> v1beta2 conversions (Kueue's apis/kueue/v1beta1/*_conversion.go), both ways."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flexq.api.kinds import REGISTRY
from flexq.api.scheme import admit, render

V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"


def _pod_set(name: str = "main", count: int = 1) -> dict:
    return {
        "name": name,
        "count": count,
        "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
    }


def _cq(version: str, **spec) -> dict:
    base = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
            }
        ]
    }
    return {
        "apiVersion": version,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {**base, **spec},
    }


def test_cluster_queue_cohort_checks_and_fungibility_become_v1beta2_names():
    info = REGISTRY.resolve("cq")
    stored = admit(
        info,
        _cq(
            V1,
            cohort="team",
            admissionChecks=["dws-prov", "other"],
            flavorFungibility={"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        ),
    )
    assert stored["apiVersion"] == V2
    spec = stored["spec"]
    assert spec["cohortName"] == "team" and "cohort" not in spec
    assert "admissionChecks" not in spec
    assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": "dws-prov"}, {"name": "other"}]}
    assert spec["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}

    back = render(info, stored, V1)
    assert back["apiVersion"] == V1
    assert back["spec"]["cohort"] == "team" and "cohortName" not in back["spec"]
    assert back["spec"]["admissionChecksStrategy"] == spec["admissionChecksStrategy"]


def test_cluster_queue_v1beta1_round_trips():
    info = REGISTRY.resolve("clusterqueues.kueue.x-k8s.io")
    first = render(info, admit(info, _cq(V1, cohort="team")), V1)
    assert render(info, admit(info, copy.deepcopy(first)), V1) == first


def test_v1beta2_only_fields_are_dropped_in_v1beta1():
    info = REGISTRY.resolve("cq")
    stored = admit(
        info,
        _cq(V2, cohortName="team", concurrentAdmissionPolicy={"migration": {"mode": "TryPreferredFlavors"}}),
    )
    assert "concurrentAdmissionPolicy" not in render(info, stored, V1)["spec"]


def test_v1beta2_rejects_v1beta1_field_names():
    with pytest.raises(Exception) as exc:
        admit(REGISTRY.resolve("cq"), _cq(V2, cohort="team"))
    assert [c.field for c in exc.value.causes] == ["spec.cohort"]


def test_local_queue_flavor_usage_renamed_both_ways():
    info = REGISTRY.resolve("lq")
    usage = [{"name": "on-demand", "resources": [{"name": "cpu", "total": "2"}]}]
    obj = {
        "apiVersion": V1,
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "default"},
        "spec": {"clusterQueue": "cq"},
        "status": {"flavorUsage": usage, "flavors": [{"name": "on-demand"}], "pendingWorkloads": 0},
    }
    stored = admit(info, obj)
    assert stored["status"]["flavorsUsage"] == usage
    assert "flavorUsage" not in stored["status"] and "flavors" not in stored["status"]
    back = render(info, stored, V1)
    assert back["status"]["flavorUsage"] == usage and "flavorsUsage" not in back["status"]


@pytest.mark.parametrize(
    ("source", "group", "kind"),
    [
        ("kueue.x-k8s.io/workloadpriorityclass", "kueue.x-k8s.io", "WorkloadPriorityClass"),
        ("scheduling.k8s.io/priorityclass", "scheduling.k8s.io", "PriorityClass"),
    ],
    ids=["workload-priority-class", "pod-priority-class"],
)
def test_workload_priority_class_becomes_a_ref(source, group, kind):
    info = REGISTRY.resolve("kwl")
    obj = {
        "apiVersion": V1,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "podSets": [_pod_set()],
            "queueName": "user-queue",
            "priority": 100,
            "priorityClassName": "high",
            "priorityClassSource": source,
        },
        "status": {"accumulatedPastExexcutionTimeSeconds": 42},
    }
    stored = admit(info, obj)
    assert stored["spec"]["priorityClassRef"] == {"group": group, "kind": kind, "name": "high"}
    assert "priorityClassName" not in stored["spec"] and "priorityClassSource" not in stored["spec"]
    assert stored["status"]["accumulatedPastExecutionTimeSeconds"] == 42
    assert stored["spec"]["active"] is True
    back = render(info, stored, V1)
    assert back["spec"]["priorityClassName"] == "high"
    assert back["spec"]["priorityClassSource"] == source
    assert back["status"] == {"accumulatedPastExexcutionTimeSeconds": 42}


def test_workload_without_priority_class_reads_back_with_empty_source():
    info = REGISTRY.resolve("workload")
    obj = {
        "apiVersion": V1,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"podSets": [{"template": {"spec": {"containers": [{"name": "c"}]}}}]},
    }
    stored = admit(info, obj)
    assert stored["spec"]["podSets"][0]["name"] == "main"
    assert stored["spec"]["podSets"][0]["count"] == 1
    assert "priorityClassRef" not in stored["spec"]
    back = render(info, stored, V1)
    assert back["spec"]["priorityClassSource"] == ""
    assert render(info, admit(info, copy.deepcopy(back)), V1) == back


def test_admission_check_retry_delay_dropped_then_defaulted_on_read():
    info = REGISTRY.resolve("admissioncheck")
    obj = {
        "apiVersion": V1,
        "kind": "AdmissionCheck",
        "metadata": {"name": "ac"},
        "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request", "retryDelayMinutes": 3},
    }
    stored = admit(info, obj)
    assert stored["spec"] == {"controllerName": "kueue.x-k8s.io/provisioning-request"}
    assert render(info, stored, V1)["spec"]["retryDelayMinutes"] == 15


@pytest.mark.parametrize("name", ["rf", "prc", "wpc", "cohort"])
def test_unchanged_kinds_are_served_in_both_versions(name):
    info = REGISTRY.resolve(name)
    assert info.versions == ["v1beta2", "v1beta1"] and info.storage == "v1beta2"


_names = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True)


@st.composite
def _cluster_queues(draw: st.DrawFn) -> dict:
    flavors = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    checks = draw(
        st.lists(
            st.tuples(_names, st.lists(st.sampled_from(flavors), unique=True, max_size=2)),
            max_size=3,
            unique_by=lambda c: c[0],
        )
    )
    spec: dict = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {
                        "name": f,
                        "resources": [
                            {"name": "cpu", "nominalQuota": draw(st.integers(0, 10**9))},
                            {"name": "memory", "nominalQuota": f"{draw(st.integers(0, 10**6))}Gi"},
                        ],
                    }
                    for f in flavors
                ],
            }
        ],
        "flavorFungibility": {
            "whenCanBorrow": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
            "whenCanPreempt": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
        },
    }
    if draw(st.booleans()):
        spec["cohortName"] = draw(_names)
    if checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": n, **({"onFlavors": on} if on else {})} for n, on in checks]
        }
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": draw(_names)}, "spec": spec}


@settings(max_examples=60, deadline=None)
@given(_cluster_queues())
def test_any_cluster_queue_survives_a_trip_through_v1beta1(cq):
    info = REGISTRY.resolve("cq")
    stored = admit(info, cq)
    as_v1 = render(info, stored, V1)
    assert ("cohort" in as_v1["spec"]) == ("cohortName" in stored["spec"])
    assert admit(info, as_v1) == stored
