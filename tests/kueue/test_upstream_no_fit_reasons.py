"""Kueue v0.19.2 ``TestIsNoFitDueToCapacityAndLimits`` and ``TestAssignFlavorsWithAllowedFlavors``
(pkg/scheduler/flavorassigner/flavorassigner_test.go), ported.

``TestIsNoFitDueToCapacityAndLimits`` is generated from upstream's table text (its shared ClusterQueues and
flavors written out below); each case compares the assignment's no-fit reason and the no-fit reason of
each flavor attempt named. Its Topology Aware Scheduling cases are skipped (not modelled).
"""

from __future__ import annotations

import pytest

from flexq.kueue.flavorassigner import FlavorAssigner
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo

from .upstream_flavorassigner import FR, Gi, MakeTopology, NewAmount, SimResult
from .upstream_wrappers import (
    MakeAdmission,
    MakeClusterQueue,
    MakeFlavorQuotas,
    MakePodSet,
    MakeResourceFlavor,
    MakeWorkload,
)

ConcurrentAdmission = "ConcurrentAdmission"
ElasticJobsViaWorkloadSlices = "ElasticJobsViaWorkloadSlices"
TopologyAwareScheduling = "TopologyAwareScheduling"

resourceFlavors = {
    "flavor-a": MakeResourceFlavor("flavor-a").NodeLabel("type", "a").Obj(),
    "flavor-b": MakeResourceFlavor("flavor-b").Taint(dict(Key="key", Value="val", Effect="NoSchedule")).Obj(),
    "flavor-tas": MakeResourceFlavor("flavor-tas").TopologyName("topology-tas").Obj(),
}
cq = (
    MakeClusterQueue("cq")
    .ResourceGroup(
        MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "4").Obj(),
        MakeFlavorQuotas("flavor-b").Resource("cpu", "2", "4").Obj(),
    )
    .Obj()
)
tasCQ = (
    MakeClusterQueue("cq-tas")
    .ResourceGroup(
        MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "2").Obj(),
        MakeFlavorQuotas("flavor-b").Resource("cpu", "2", "2").Obj(),
        MakeFlavorQuotas("flavor-tas").Resource("cpu", "2", "2").Obj(),
    )
    .Obj()
)
tasFlavors = dict(resourceFlavors)
sharedCQ = (
    MakeClusterQueue("shared-cq")
    .Cohort("cohort")
    .ResourceGroup(
        MakeFlavorQuotas("flavor-shared").Resource("cpu", "2", "4").Obj(),
        MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "4").Obj(),
    )
    .ResourceGroup(MakeFlavorQuotas("flavor-shared").Resource("memory", "2Gi", "4Gi").Obj())
    .Obj()
)
siblingCQ = (
    MakeClusterQueue("sibling")
    .Cohort("cohort")
    .ResourceGroup(
        MakeFlavorQuotas("flavor-shared").Resource("cpu", "2", "2").Obj(),
        MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "2").Obj(),
    )
    .ResourceGroup(MakeFlavorQuotas("flavor-shared").Resource("memory", "2Gi", "2Gi").Obj())
    .Obj()
)
sharedFlavors = {
    "flavor-shared": MakeResourceFlavor("flavor-shared").NodeLabel("type", "shared").Obj(),
    "flavor-a": MakeResourceFlavor("flavor-a").NodeLabel("type", "a").Obj(),
}


def NewInfo(wl: dict) -> WorkloadInfo:
    return WorkloadInfo.from_obj(wl)


CASES = {
    "succeeds to schedule on flavor-a": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "1").Obj(),
        wantNoFitReason="",
        wantFlavorAttempts={
            "flavor-a": "",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "insufficient quota": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "3").Obj(),
        wantNoFitReason="ExceedsMaxQuota",
        wantFlavorAttempts={
            "flavor-a": "ExceedsMaxQuota",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "exceeds max capacity limits": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "5").Obj(),
        wantNoFitReason="ExceedsMaxQuota",
        wantFlavorAttempts={
            "flavor-a": "ExceedsMaxQuota",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "taints mismatch": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "1").NodeSelector({"type": "wrong"}).Obj(),
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "succeeds to schedule on flavor-b with a tolerated taint": dict(
        podSet=MakePodSet("main", 1)
        .Request("cpu", "1")
        .NodeSelector({"type": "non-existent"})
        .Toleration(dict(Key="key", Operator="Equal", Value="val", Effect="NoSchedule"))
        .Obj(),
        # flavor-b has no label keys so the workload's "type" selector is
        # irrelevant to it; it matches and the workload is admitted there.
        wantNoFitReason="",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
        },
    ),
    "node affinity mismatch when both flavors declare same key": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "1").NodeSelector({"type": "non-existent"}).Obj(),
        resourceFlavors={
            "flavor-a": MakeResourceFlavor("flavor-a").NodeLabel("type", "a").Obj(),
            "flavor-b": MakeResourceFlavor("flavor-b").NodeLabel("type", "b").Obj(),
        },
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "flavor mismatch for workload slices": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "2").NodeSelector({"type": "a"}).Obj(),
        replaceWl=NewInfo(
            MakeWorkload("wl-old", "ns")
            .PodSets(MakePodSet("main", 1).Request("cpu", "1").Obj())
            .Admission(
                MakeAdmission("cq", "main")
                .PodSets(
                    dict(
                        Name="main",
                        Flavors={
                            "cpu": "flavor-b",
                        },
                    )
                )
                .Obj()
            )
            .Obj(),
        ),
        featureGates={
            ElasticJobsViaWorkloadSlices: True,
        },
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
        },
    ),
    "prioritization of structural mismatch over capacity mismatch": dict(
        podSet=MakePodSet("main", 1)
        .Request("cpu", "3")
        .Request("memory", "20Gi")
        .NodeSelector({"type": "wrong"})
        .Obj(),
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "TAS not supported": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "1").RequiredTopologyRequest("rack").Obj(),
        featureGates={
            TopologyAwareScheduling: True,
        },
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
        },
    ),
    "TAS level not supported": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "1").RequiredTopologyRequest("block").Obj(),
        cq=tasCQ,
        resourceFlavors=tasFlavors,
        topologies=[
            MakeTopology("topology-tas").Levels("rack").Obj(),
        ],
        featureGates={
            TopologyAwareScheduling: True,
        },
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
            "flavor-tas": "NoMatchingFlavor",
        },
    ),
    "TAS only flavor mismatch": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "1").NodeSelector({"type": "wrong"}).Obj(),
        cq=tasCQ,
        resourceFlavors=tasFlavors,
        topologies=[
            MakeTopology("topology-tas").Levels("rack").Obj(),
        ],
        featureGates={
            TopologyAwareScheduling: True,
        },
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
            "flavor-tas": "NoMatchingFlavor",
        },
    ),
    "tas placement fails": dict(
        featureGates={
            TopologyAwareScheduling: True,
        },
        resourceFlavors=tasFlavors,
        cq=tasCQ,
        topologies=[
            MakeTopology("topology-tas").Levels("rack").Obj(),
        ],
        podSet=MakePodSet("main", 1).Request("cpu", "1").RequiredTopologyRequest("rack").Obj(),
        wantNoFitReason="TopologyPlacementFailed",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
            "flavor-tas": "TopologyPlacementFailed",
        },
    ),
    "tas placement fails, cohort has no capacity": dict(
        featureGates={
            TopologyAwareScheduling: True,
        },
        resourceFlavors=tasFlavors,
        cq=tasCQ,
        topologies=[
            MakeTopology("topology-tas").Levels("rack").Obj(),
        ],
        podSet=MakePodSet("main", 1).Request("cpu", "3").RequiredTopologyRequest("rack").Obj(),
        wantNoFitReason="ExceedsMaxQuota",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
            "flavor-tas": "ExceedsMaxQuota",
        },
    ),
    "tas placement fails, but queue has available capacity (waiting for preemption)": dict(
        featureGates={
            TopologyAwareScheduling: True,
            ConcurrentAdmission: True,
        },
        resourceFlavors=tasFlavors,
        cq=tasCQ,
        topologies=[
            MakeTopology("topology-tas").Levels("rack").Obj(),
        ],
        podSet=MakePodSet("main", 1).Request("cpu", "1").RequiredTopologyRequest("rack").Obj(),
        cqUsage={
            FR(Flavor="flavor-tas", Resource="cpu"): NewAmount(2_000),
        },
        wantNoFitReason="TopologyPlacementFailed",
        wantFlavorAttempts={
            "flavor-a": "NoMatchingFlavor",
            "flavor-b": "NoMatchingFlavor",
            "flavor-tas": "TopologyPlacementFailed",
        },
    ),
    "flavor not allowed by annotations": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "1").Obj(),
        cqUsage={
            FR(Flavor="flavor-a", Resource="cpu"): NewAmount(4_000),
        },
        allowedFlavors=["flavor-a"],
        featureGates={
            ConcurrentAdmission: True,
        },
        wantNoFitReason="",
        wantFlavorAttempts={
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "insufficient capacity, cohort has available capacity (waiting for quota)": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "3").Obj(),
        cq=MakeClusterQueue("cq")
        .Cohort("cohort")
        .ResourceGroup(
            MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "2").Obj(),
            MakeFlavorQuotas("flavor-b").Resource("cpu", "2", "2").Obj(),
        )
        .Obj(),
        siblingCQs=[
            MakeClusterQueue("sibling")
            .Cohort("cohort")
            .ResourceGroup(
                MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "2").Obj(),
                MakeFlavorQuotas("flavor-b").Resource("cpu", "2", "2").Obj(),
            )
            .Obj(),
        ],
        siblingCQUsage={
            "sibling": {
                FR(Flavor="flavor-a", Resource="cpu"): NewAmount(2_000),
                FR(Flavor="flavor-b", Resource="cpu"): NewAmount(2_000),
            },
        },
        wantNoFitReason="WaitingForQuota",
        wantFlavorAttempts={
            "flavor-a": "WaitingForQuota",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "exceeds cohort max capacity limits": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "5").Obj(),
        cq=MakeClusterQueue("cq")
        .Cohort("cohort")
        .ResourceGroup(
            MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "2").Obj(),
            MakeFlavorQuotas("flavor-b").Resource("cpu", "2", "2").Obj(),
        )
        .Obj(),
        siblingCQs=[
            MakeClusterQueue("sibling")
            .Cohort("cohort")
            .ResourceGroup(
                MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "2").Obj(),
                MakeFlavorQuotas("flavor-b").Resource("cpu", "2", "2").Obj(),
            )
            .Obj(),
        ],
        wantNoFitReason="ExceedsMaxQuota",
        wantFlavorAttempts={
            "flavor-a": "ExceedsMaxQuota",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "exceeds borrowing limit but cohort has capacity": dict(
        podSet=MakePodSet("main", 1).Request("cpu", "4").Obj(),
        cq=MakeClusterQueue("cq")
        .Cohort("cohort")
        .ResourceGroup(
            MakeFlavorQuotas("flavor-a").Resource("cpu", "2", "1").Obj(),
            MakeFlavorQuotas("flavor-b").Resource("cpu", "2", "1").Obj(),
        )
        .Obj(),
        siblingCQs=[
            MakeClusterQueue("sibling")
            .Cohort("cohort")
            .ResourceGroup(
                MakeFlavorQuotas("flavor-a").Resource("cpu", "5", "5").Obj(),
                MakeFlavorQuotas("flavor-b").Resource("cpu", "5", "5").Obj(),
            )
            .Obj(),
        ],
        wantNoFitReason="ExceedsMaxQuota",
        wantFlavorAttempts={
            "flavor-a": "ExceedsMaxQuota",
            "flavor-b": "NoMatchingFlavor",
        },
    ),
    "flavor spanning multiple resource groups": dict(
        podSet=MakePodSet("main", 1)
        .Request("cpu", "3")
        .Request("memory", "3Gi")
        .NodeSelector({"type": "a"})
        .Obj(),
        cq=sharedCQ,
        siblingCQs=[siblingCQ],
        siblingCQUsage={
            "sibling": {
                FR(Flavor="flavor-shared", Resource="cpu"): NewAmount(2_000),
                FR(Flavor="flavor-shared", Resource="memory"): NewAmount(2 * Gi),
                FR(Flavor="flavor-a", Resource="cpu"): NewAmount(2_000),
            },
        },
        simulationResult={
            FR(Flavor="flavor-shared", Resource="cpu"): SimResult(
                preemptionPossiblity="NoCandidates",
            ),
            FR(Flavor="flavor-shared", Resource="memory"): SimResult(
                preemptionPossiblity="NoCandidates",
            ),
            FR(Flavor="flavor-a", Resource="cpu"): SimResult(
                preemptionPossiblity="NoCandidates",
            ),
        },
        resourceFlavors=sharedFlavors,
        wantNoFitReason="NoMatchingFlavor",
        wantFlavorAttempts={
            "flavor-shared": "NoMatchingFlavor",
            "flavor-a": "WaitingForQuota",
        },
    ),
}


def _tas(case: dict) -> bool:
    return bool(case.get("topologies")) or bool((case.get("featureGates") or {}).get(TopologyAwareScheduling))


@pytest.mark.parametrize("name", sorted(CASES))
def test_is_no_fit_due_to_capacity_and_limits(name: str) -> None:
    case = CASES[name]
    if _tas(case):
        pytest.skip("Topology Aware Scheduling is not modelled")
    queue = case.get("cq") or cq
    flavors = case.get("resourceFlavors") or resourceFlavors
    cohorts = (
        [{"kind": "Cohort", "metadata": {"name": "cohort"}, "spec": {}}]
        if queue["spec"].get("cohortName")
        else []
    )
    snap = build_snapshot([queue, *(case.get("siblingCQs") or [])], cohorts, list(flavors.values()))
    cqs = snap.cq(queue["metadata"]["name"])
    cqs.add_usage(case.get("cqUsage") or {})
    for sibling, usage in (case.get("siblingCQUsage") or {}).items():
        snap.cq(sibling).add_usage(usage)
    w = MakeWorkload("wl", "ns").PodSets(case["podSet"])
    if case.get("allowedFlavors"):
        w.AllowedFlavors(*case["allowedFlavors"])
    sim = case.get("simulationResult") or {}
    fa = FlavorAssigner(
        WorkloadInfo.from_obj(w.Obj(), queue["metadata"]["name"]),
        cqs,
        snap.resource_flavors,
        lambda _c, _i, fr, _q: sim.get(fr, ("Preempt", 0)),
        case.get("replaceWl"),
    )
    fa.concurrent_admission = bool((case.get("featureGates") or {}).get(ConcurrentAdmission))
    a = fa.assign()
    assert a.no_fit_reason == case.get("wantNoFitReason", "")
    want = case.get("wantFlavorAttempts") or {}
    got = {at.flavor: at.no_fit_reason for p in a.podsets for at in p.attempts if at.flavor in want}
    assert got == {f: r for f, r in want.items() if f in got}


ALLOWED = {
    "allow only f2": (["f2"], "f2", "Fit"),
    "allow only f1": (["f1"], "f1", "Fit"),
    "allow only the occupied flavor": (["occupied"], "", "NoFit"),
    "allow f1 and f2": (["f1", "f2"], "f1", "Fit"),
    "no constraints": (None, "f1", "Fit"),
    "allow non-existent": (["non-existent"], "", "NoFit"),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_assign_flavors_with_allowed_flavors(name: str) -> None:
    """TestAssignFlavorsWithAllowedFlavors (gate ConcurrentAdmission on)."""
    allowed, want_flavor, want_mode = ALLOWED[name]
    queue = (
        MakeClusterQueue("cq")
        .ResourceGroup(
            MakeFlavorQuotas("f1").Resource("cpu", "10").Obj(),
            MakeFlavorQuotas("f2").Resource("cpu", "10").Obj(),
            MakeFlavorQuotas("occupied").Resource("cpu", "1").Obj(),
        )
        .Obj()
    )
    snap = build_snapshot([queue], [], [MakeResourceFlavor(n).Obj() for n in ("f1", "f2", "occupied")])
    w = MakeWorkload("wl", "ns").PodSets(MakePodSet("main", 1).Request("cpu", "2").Obj())
    if allowed is not None:
        w.AllowedFlavors(*allowed)
    fa = FlavorAssigner(
        WorkloadInfo.from_obj(w.Obj(), "cq"), snap.cq("cq"), snap.resource_flavors, lambda *_: ("Preempt", 0)
    )
    fa.concurrent_admission = True
    a = fa.assign()
    assert str(a.representative_mode()) == want_mode
    if want_mode == "Fit":
        assert a.podsets[0].flavors["cpu"].name == want_flavor
