"""Kueue v0.19.2 ``TestDeletedFlavors`` (pkg/scheduler/flavorassigner/flavorassigner_test.go), its two cases:
a ResourceFlavor that was in the snapshot is gone by the time flavors are assigned. Generated from upstream's
table text; the assignment is compared as ``TestAssignFlavors`` does, and the flavor attempts too."""

from __future__ import annotations

import pytest

from flexq.kueue.flavorassigner import FlavorAssigner
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo

from .upstream_flavorassigner import (
    FR,
    Fit,
    MustParse,
    NewAmount,
    NewStatus,
    NoFit,
    _got_podset,
    _want_podset,
)
from .upstream_wrappers import (
    MakeClusterQueue,
    MakeFlavorQuotas,
    MakePodSet,
    MakeResourceFlavor,
    MakeWorkload,
)

CASES = {
    "multiple flavors, skip missing ResourceFlavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "3").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("deleted-flavor").ResourceQuotaWrapper("cpu").NominalQuota("4").Append().Obj(),
            MakeFlavorQuotas("flavor").ResourceQuotaWrapper("cpu").NominalQuota("4").Append().Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="flavor", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="deleted-flavor",
                            Mode=NoFit,
                            Reasons=["flavor deleted-flavor not found"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                        dict(Flavor="flavor", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="flavor", Resource="cpu"): NewAmount(3_000),
                }
            ),
        ),
    ),
    "flavor not found": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "1").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("deleted-flavor").ResourceQuotaWrapper("cpu").NominalQuota("4").Append().Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    Status=NewStatus("flavor deleted-flavor not found"),
                    Count=1,
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="deleted-flavor",
                            Mode=NoFit,
                            Reasons=["flavor deleted-flavor not found"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                    ],
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="NoMatchingFlavor",
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_deleted_flavors(name: str) -> None:
    case = CASES[name]
    flavors = {n: MakeResourceFlavor(n).Obj() for n in ("flavor", "deleted-flavor")}
    snap = build_snapshot([case["clusterQueue"]], [], list(flavors.values()))
    del flavors["deleted-flavor"]  # deleted after the snapshot was taken
    w = MakeWorkload("", "").PodSets(*case["wlPods"]).Obj()
    info = WorkloadInfo.from_obj(w, "test-clusterqueue")
    a = FlavorAssigner(info, snap.cq("test-clusterqueue"), flavors, lambda *_: ("Preempt", 0)).assign()
    want = case["wantAssignment"]
    assert a.representative_mode() == case.get("wantRepMode", NoFit)
    assert [_got_podset(p) for p in a.podsets] == [_want_podset(p) for p in want["PodSets"]]
    assert {k: v for k, v in a.usage.items() if v} == dict(want["Usage"]["Quota"])
    assert a.no_fit_reason == want.get("NoFitReason", "")
    for got_ps, want_ps in zip(a.podsets, want["PodSets"], strict=True):
        assert [(x.flavor, x.mode, sorted(x.reasons), x.no_fit_reason) for x in got_ps.attempts] == [
            (x["Flavor"], x["Mode"], sorted(x.get("Reasons") or []), x.get("NoFitReason", ""))
            for x in want_ps["FlavorAssignmentAttempts"]
        ]
