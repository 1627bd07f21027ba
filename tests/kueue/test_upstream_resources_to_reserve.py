"""Kueue v0.19.2 ``TestResourcesToReserve`` (pkg/scheduler/scheduler_test.go), its six cases: what a Preempt
entry without candidates reserves in its ClusterQueue ``cq`` (cohort ``eng``; memory: on-demand 100, spot 0
borrowing up to 100; gpu: model-a 10 borrowing 0, model-b 10 borrowing up to 5)."""

from __future__ import annotations

import pytest

from flexq.kueue.cycle import Entry, to_reserve
from flexq.kueue.flavorassigner import Assignment, FlavorAssignment, Mode, PodSetAssignment, Status
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo

from .upstream_wrappers import MakeClusterQueue, MakeFlavorQuotas, MakeResourceFlavor

CQ_USAGE = {("on-demand", "memory"): 60, ("spot", "memory"): 50, ("model-a", "gpu"): 6, ("model-b", "gpu"): 2}
BORROWING_CQ_USAGE = {
    ("on-demand", "memory"): 60,
    ("spot", "memory"): 60,
    ("model-a", "gpu"): 2,
    ("model-b", "gpu"): 10,
}

CASES = {
    "Reserved memory and gpu less than assignment usage, assignment preempts": (
        Mode.PREEMPT,
        0,
        {("on-demand", "memory"): 50, ("model-a", "gpu"): 6},
        CQ_USAGE,
        {("on-demand", "memory"): 40, ("model-a", "gpu"): 4},
    ),
    "Reserved memory equal assignment usage, assignment preempts": (
        Mode.PREEMPT,
        0,
        {("on-demand", "memory"): 30, ("model-a", "gpu"): 2},
        {**CQ_USAGE, ("model-a", "gpu"): 2},
        {("on-demand", "memory"): 30, ("model-a", "gpu"): 2},
    ),
    "Reserved memory equal assignment usage, assignment fits": (
        Mode.FIT,
        0,
        {("on-demand", "memory"): 50, ("model-a", "gpu"): 2},
        {**CQ_USAGE, ("model-a", "gpu"): 2},
        {("on-demand", "memory"): 50, ("model-a", "gpu"): 2},
    ),
    "Reserved memory is 0, CQ is borrowing, assignment preempts without borrowing": (
        Mode.PREEMPT,
        0,
        {("spot", "memory"): 50, ("model-b", "gpu"): 2},
        BORROWING_CQ_USAGE,
        {("spot", "memory"): 0, ("model-b", "gpu"): 0},
    ),
    "Reserved memory cut by nominal+borrowing quota, assignment preempts and borrows": (
        Mode.PREEMPT,
        1,
        {("spot", "memory"): 50, ("model-b", "gpu"): 2},
        BORROWING_CQ_USAGE,
        {("spot", "memory"): 40, ("model-b", "gpu"): 2},
    ),
    "Reserved memory equal assignment usage, CQ borrowing limit is nil": (
        Mode.PREEMPT,
        1,
        {("on-demand", "memory"): 50, ("model-b", "gpu"): 2},
        BORROWING_CQ_USAGE,
        {("on-demand", "memory"): 50, ("model-b", "gpu"): 2},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_resources_to_reserve(name: str) -> None:
    mode, borrowing, usage, cq_usage, want = CASES[name]
    cq = (
        MakeClusterQueue("cq")
        .Cohort("eng")
        .ResourceGroup(
            MakeFlavorQuotas("on-demand").Resource("memory", "100").Obj(),
            MakeFlavorQuotas("spot").Resource("memory", "0", "100").Obj(),
        )
        .ResourceGroup(
            MakeFlavorQuotas("model-a").Resource("gpu", "10", "0").Obj(),
            MakeFlavorQuotas("model-b").Resource("gpu", "10", "5").Obj(),
        )
        .QueueingStrategy("StrictFIFO")
        .Obj()
    )
    flavors = [MakeResourceFlavor(n).Obj() for n in ("on-demand", "spot", "model-a", "model-b")]
    snap = build_snapshot([cq], [{"kind": "Cohort", "metadata": {"name": "eng"}, "spec": {}}], flavors)
    cqs = snap.cq("cq")
    cqs.add_usage(cq_usage)
    a = Assignment(
        podsets=[
            PodSetAssignment(
                "memory", {"memory": FlavorAssignment("", mode)}, Status(["needs to preempt"]), {}, 0
            ),
            PodSetAssignment("gpu", {"gpu": FlavorAssignment("", mode)}, Status(["needs to preempt"]), {}, 0),
        ],
        borrowing=borrowing,
        usage=dict(usage),
    )
    e = Entry(WorkloadInfo.from_obj({"metadata": {"name": "w", "namespace": "ns"}, "spec": {}}), cqs, a)
    assert to_reserve(e) == want
