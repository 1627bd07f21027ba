"""Kueue v0.19.2 ``TestReclaimBeforePriorityPreemption`` and ``TestHierarchical``
(pkg/scheduler/flavorassigner/flavorassigner_test.go), every case, ported.

Generated from upstream's table text into the Python twins of its wrappers; the set-up of each table (its
ClusterQueues, cohorts and flavors) is upstream's, written out below. Each case compares the representative
mode and the flavor of each resource of the one pod set, with the test oracle of ``upstream_flavorassigner``.
"""

from __future__ import annotations

import pytest

from flexq.kueue.flavorassigner import FlavorAssigner
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo

from .upstream_flavorassigner import FR, Fit, NewAmount, Preempt, SimResult, new
from .upstream_wrappers import (
    MakeClusterQueue,
    MakeCohort,
    MakeFlavorQuotas,
    MakePodSet,
    MakeResourceFlavor,
    MakeWorkload,
)


def defaultTestClusterQueueFlavors() -> list[dict]:
    return [
        MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
        MakeFlavorQuotas("two").Resource("cpu", "0").Obj(),
        MakeFlavorQuotas("three").Resource("cpu", "0").Obj(),
    ]


RECLAIM_CASES = {
    "Select first flavor which fits": dict(
        workloadRequests=MakePodSet("main", 1).Request("gpu", "10"),
        testClusterQueueUsage={
            FR(Flavor="uno", Resource="gpu"): NewAmount(1),
        },
        otherClusterQueueUsage={
            FR(Flavor="due", Resource="gpu"): NewAmount(1),
        },
        wantMode=Fit,
        wantAssigment={"gpu": "tre"},
    ),
    "Select first flavor where gpu reclamation is possible": dict(
        workloadRequests=MakePodSet("main", 1).Request("gpu", "10"),
        testClusterQueueUsage={
            FR(Flavor="uno", Resource="gpu"): NewAmount(1),
        },
        otherClusterQueueUsage={
            FR(Flavor="due", Resource="gpu"): NewAmount(1),
            FR(Flavor="tre", Resource="gpu"): NewAmount(1),
        },
        simulationResult={
            FR(Flavor="uno", Resource="gpu"): SimResult("Preempt", 0),
            FR(Flavor="due", Resource="gpu"): SimResult("Reclaim", 0),
        },
        wantMode=Preempt,
        wantAssigment={"gpu": "due"},
    ),
    "Select first flavor when flavor fungibility is disabled": dict(
        workloadRequests=MakePodSet("main", 1).Request("gpu", "10"),
        testClusterQueueUsage={
            FR(Flavor="uno", Resource="gpu"): NewAmount(1),
        },
        otherClusterQueueUsage={
            FR(Flavor="due", Resource="gpu"): NewAmount(1),
            FR(Flavor="tre", Resource="gpu"): NewAmount(1),
        },
        flavorFungibility=dict(
            WhenCanPreempt="MayStopSearch",
        ),
        wantMode=Preempt,
        wantAssigment={"gpu": "uno"},
    ),
    "Select first flavor when flavor fungibility is disabled; using deprecated WhenCanPreempt=MayStopSearch": dict(
        workloadRequests=MakePodSet("main", 1).Request("gpu", "10"),
        testClusterQueueUsage={
            FR(Flavor="uno", Resource="gpu"): NewAmount(1),
        },
        otherClusterQueueUsage={
            FR(Flavor="due", Resource="gpu"): NewAmount(1),
            FR(Flavor="tre", Resource="gpu"): NewAmount(1),
        },
        flavorFungibility=dict(
            WhenCanPreempt="MayStopSearch",
        ),
        wantMode=Preempt,
        wantAssigment={"gpu": "uno"},
    ),
    "Select first flavor where priority based preemption is possible": dict(
        workloadRequests=MakePodSet("main", 1).Request("gpu", "10"),
        testClusterQueueUsage={
            FR(Flavor="uno", Resource="gpu"): NewAmount(1),
            FR(Flavor="due", Resource="gpu"): NewAmount(1),
            FR(Flavor="tre", Resource="gpu"): NewAmount(1),
        },
        wantMode=Preempt,
        wantAssigment={"gpu": "uno"},
    ),
    "Select second flavor where gpu reclamation is possible, as compute Fits": dict(
        workloadRequests=MakePodSet("main", 1).Request("gpu", "10").Request("compute", "10"),
        testClusterQueueUsage={
            FR(Flavor="uno", Resource="gpu"): NewAmount(1),
            FR(Flavor="uno", Resource="compute"): NewAmount(1),
            FR(Flavor="due", Resource="compute"): NewAmount(1),
        },
        otherClusterQueueUsage={
            FR(Flavor="due", Resource="gpu"): NewAmount(1),
            FR(Flavor="tre", Resource="gpu"): NewAmount(1),
        },
        simulationResult={
            FR(Flavor="uno", Resource="gpu"): SimResult("Preempt", 0),
            FR(Flavor="due", Resource="gpu"): SimResult("Reclaim", 0),
            FR(Flavor="tre", Resource="gpu"): SimResult("Reclaim", 0),
        },
        wantMode=Preempt,
        wantAssigment={"gpu": "tre", "compute": "tre"},
    ),
}

HIERARCHICAL_CASES = {
    "Select the top flavor": dict(
        workloadRequests=MakePodSet("main", 1).Request("cpu", "4"),
        testClusterQueueFlavors=defaultTestClusterQueueFlavors(),
        testClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(4_000),
        },
        otherClusterQueueUsage={
            FR(Flavor="two", Resource="cpu"): NewAmount(4_000),
        },
        wantMode=Fit,
        wantAssigment={"cpu": "three"},
    ),
    "Select the first flavor which fits": dict(
        workloadRequests=MakePodSet("main", 1).Request("cpu", "4"),
        testClusterQueueFlavors=defaultTestClusterQueueFlavors(),
        testClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(4_000),
        },
        wantMode=Fit,
        wantAssigment={"cpu": "two"},
    ),
    "Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no preemption candidates": dict(
        workloadRequests=MakePodSet("main", 1).Request("cpu", "4"),
        testClusterQueueFlavors=[
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("4")
            .BorrowingLimit("0")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("three").Resource("cpu", "0").Obj(),
        ],
        testClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(4_000),
        },
        flavorFungibility=dict(
            WhenCanBorrow="TryNextFlavor",
            WhenCanPreempt="TryNextFlavor",
            Preference=new("PreemptionOverBorrowing"),
        ),
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("NoCandidates", 1),
        },
        wantMode=Fit,
        wantAssigment={"cpu": "two"},
    ),
}


def _assign(case: dict, test_cq: dict, other_cq: dict, cohorts: list[dict], flavors: list[dict]):
    if case.get("flavorFungibility"):
        MakeClusterQueue.FlavorFungibility(_Wrap(test_cq), case["flavorFungibility"])
    snap = build_snapshot([test_cq, other_cq], cohorts, flavors)
    snap.cq("other-clusterqueue").add_usage(case.get("otherClusterQueueUsage") or {})
    snap.cq("test-clusterqueue").add_usage(case.get("testClusterQueueUsage") or {})
    w = MakeWorkload("", "").PodSets(case["workloadRequests"].Obj()).Obj()
    info = WorkloadInfo.from_obj(w, "test-clusterqueue")
    sim = case.get("simulationResult") or {}
    a = FlavorAssigner(
        info,
        snap.cq("test-clusterqueue"),
        snap.resource_flavors,
        lambda _c, _i, fr, _q: sim.get(fr, ("Preempt", 0)),
    ).assign()
    assert a.representative_mode() == case["wantMode"]
    assert {r: f.name for r, f in a.podsets[0].flavors.items()} == dict(case.get("wantAssigment") or {})


class _Wrap:
    def __init__(self, c: dict) -> None:
        self.c = c


@pytest.mark.parametrize("name", sorted(RECLAIM_CASES))
def test_reclaim_before_priority_preemption(name: str) -> None:
    test_cq = (
        MakeClusterQueue("test-clusterqueue")
        .Cohort("cohort")
        .Preemption(dict(WithinClusterQueue="LowerPriority", ReclaimWithinCohort="LowerPriority"))
        .FlavorFungibility(dict(WhenCanPreempt="TryNextFlavor"))
        .ResourceGroup(
            MakeFlavorQuotas("uno").Resource("compute", "10").Resource("gpu", "10").Obj(),
            MakeFlavorQuotas("due").Resource("compute", "10").Resource("gpu", "10").Obj(),
            MakeFlavorQuotas("tre").Resource("compute", "10").Resource("gpu", "10").Obj(),
        )
        .Obj()
    )
    other_cq = (
        MakeClusterQueue("other-clusterqueue")
        .Cohort("cohort")
        .ResourceGroup(
            MakeFlavorQuotas("uno").Resource("compute", "0").Resource("gpu", "0").Obj(),
            MakeFlavorQuotas("due").Resource("compute", "0").Resource("gpu", "0").Obj(),
            MakeFlavorQuotas("tre").Resource("compute", "0").Resource("gpu", "0").Obj(),
        )
        .Obj()
    )
    flavors = [MakeResourceFlavor(n).Obj() for n in ("uno", "due", "tre")]
    _assign(RECLAIM_CASES[name], test_cq, other_cq, [MakeCohort("cohort").Obj()], flavors)


@pytest.mark.parametrize("name", sorted(HIERARCHICAL_CASES))
def test_hierarchical(name: str) -> None:
    case = HIERARCHICAL_CASES[name]
    cohorts = [
        MakeCohort("three").ResourceGroup(MakeFlavorQuotas("three").Resource("cpu", "4").Obj()).Obj(),
        MakeCohort("two")
        .Parent("three")
        .ResourceGroup(MakeFlavorQuotas("two").Resource("cpu", "4").Obj())
        .Obj(),
        MakeCohort("one")
        .Parent("two")
        .ResourceGroup(MakeFlavorQuotas("one").Resource("cpu", "4").Obj())
        .Obj(),
    ]
    test_cq = (
        MakeClusterQueue("test-clusterqueue")
        .Cohort("one")
        .Preemption(dict(WithinClusterQueue="LowerPriority", ReclaimWithinCohort="LowerPriority"))
        .ResourceGroup(*case["testClusterQueueFlavors"])
        .FlavorFungibility(dict(WhenCanPreempt="TryNextFlavor"))
        .Obj()
    )
    other_cq = (
        MakeClusterQueue("other-clusterqueue")
        .Cohort("two")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("three").Resource("cpu", "0").Obj(),
        )
        .Obj()
    )
    flavors = [MakeResourceFlavor(n).Obj() for n in ("one", "two", "three")]
    _assign(case, test_cq, other_cq, cohorts, flavors)
