"""A harness after Kueue's ``pkg/scheduler/flavorassigner/flavorassigner_test.go`` ``TestAssignFlavors``.

Upstream's table builds a snapshot of one ClusterQueue (and an optional second one in the same cohort),
charges the usage the case gives (``clusterQueueUsage``), runs ``FlavorAssigner.Assign`` for a workload
of the case's pod sets with a test oracle (``simulationResult``: per flavor-resource the preemption
possibility and the borrowing after the simulated preemption; ``Preempt``, 0 otherwise), and compares the
representative mode and the assignment: per pod set the flavors (name, mode, tried flavor index), the
status reasons (sorted), the requests and count; the borrowing, the usage and the no-fit reason.
``check`` does the same against flexq's ``FlavorAssigner``.
"""

from __future__ import annotations

from typing import Any

from flexq.api.quantity import resource_value
from flexq.kueue.flavorassigner import FlavorAssigner, Mode
from flexq.kueue.resources import PodSetResources
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo

from .kueue_builders import rf
from .upstream_wrappers import MakeCohort, MakeWorkload

Fit, Preempt, NoFit = Mode.FIT, Mode.PREEMPT, Mode.NO_FIT
Mi, Gi = 1 << 20, 1 << 30
ElasticJobsViaWorkloadSlices = "ElasticJobsViaWorkloadSlices"
ReclaimablePods = "ReclaimablePods"
TopologyAwareScheduling = "TopologyAwareScheduling"

TAINT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
FLAVORS = [
    rf("default"),
    rf("one", {"type": "one"}),
    rf("two", {"type": "two"}),
    rf("b_one", {"b_type": "one"}),
    rf("b_two", {"b_type": "two"}),
    rf("tainted", taints=[TAINT]),
    rf("taint_and_toleration", taints=[TAINT], tolerations=[{**TAINT, "operator": "Equal"}]),
    rf("label-x-a", {"x": "a"}),
    rf("label-xy-b", {"x": "b", "y": "k"}),
]


def FR(Flavor: str, Resource: str) -> tuple[str, str]:
    """``resources.FlavorResource``."""
    return (Flavor, Resource)


def SimResult(
    possibility: str = "",
    borrowing: int = 0,
    preemptionPossiblity: str = "",
    borrowingAfterSimulation: int = 0,
) -> tuple[str, int]:
    """``simulationResultForFlavor`` (positional or by upstream's field names)."""
    return (possibility or preemptionPossiblity, borrowing or borrowingAfterSimulation)


def NewAmount(v: int) -> int:
    return v


def MustParse(q: str) -> str:
    return q


def NewRequestsFromMap(m: dict) -> dict:
    return dict(m)


def NewStatus(*reasons: str) -> dict:
    return {"reasons": list(reasons)}


def new(v: Any) -> Any:
    return v


def _slice(spec: dict | None) -> WorkloadInfo | None:
    if spec is None:
        return None
    reqs = [
        PodSetResources(
            p["Name"], dict(p.get("Requests") or {}), p.get("Count", 0), dict(p.get("Flavors") or {})
        )
        for p in spec["TotalRequests"]
    ]
    return WorkloadInfo(obj={"metadata": {}}, total_requests=reqs)


def run_assign(case: dict):
    cq = case["clusterQueue"]
    sec = case.get("secondaryClusterQueue")
    cohorts = []
    if cq["spec"].get("cohortName"):
        cohorts.append(MakeCohort(cq["spec"]["cohortName"]).Obj())
    snap = build_snapshot([cq, *([sec] if sec else [])], cohorts, FLAVORS)
    cqs = snap.cq(cq["metadata"]["name"])
    if case.get("clusterQueueUsage"):
        cqs.add_usage(case["clusterQueueUsage"])
    if sec is not None:
        snap.cq(sec["metadata"]["name"]).add_usage(case.get("secondaryClusterQueueUsage") or {})
    w = MakeWorkload("", "").PodSets(*case["wlPods"]).Obj()
    if case.get("wlReclaimablePods"):
        w["status"]["reclaimablePods"] = [
            {"name": r["Name"], "count": r["Count"]} for r in case["wlReclaimablePods"]
        ]
    info = WorkloadInfo.from_obj(w, cq["metadata"]["name"])
    sim = case.get("simulationResult") or {}

    def oracle(_cq, _info, fr, _quantity):
        return sim.get(fr, ("Preempt", 0))

    fa = FlavorAssigner(
        info,
        cqs,
        snap.resource_flavors,
        oracle,
        _slice(case.get("preemptWorkloadSlice")),
        0,
        bool(case.get("enableFairSharing")),
    )
    return fa.assign()


def _want_podset(p: dict) -> dict:
    st = p.get("Status") or {}
    return {
        "name": p.get("Name", ""),
        "flavors": {
            r: (f["Name"], f["Mode"], f.get("TriedFlavorIdx", 0)) for r, f in (p.get("Flavors") or {}).items()
        },
        "reasons": sorted(st.get("reasons") or []),
        "requests": {r: resource_value(r, q) for r, q in (p.get("Requests") or {}).items()},
        "count": p.get("Count", 0),
    }


def _got_podset(p) -> dict:
    return {
        "name": p.name,
        "flavors": {r: (f.name, f.mode, f.tried_flavor_idx) for r, f in p.flavors.items()},
        "reasons": sorted(p.status.reasons),
        "requests": dict(p.requests),
        "count": p.count,
    }


def check(case: dict) -> None:
    """Run a case and compare as upstream does (with ``UnadmittedWorkloadsObservability``: no-fit reasons)."""
    a = run_assign(case)
    want = case["wantAssignment"]
    assert a.representative_mode() == case.get("wantRepMode", NoFit)
    assert [_got_podset(p) for p in a.podsets] == [_want_podset(p) for p in want.get("PodSets") or []]
    assert a.borrowing == want.get("Borrowing", 0)
    assert {k: v for k, v in a.usage.items() if v} == {
        k: v for k, v in ((want.get("Usage") or {}).get("Quota") or {}).items() if v
    }
    assert a.no_fit_reason == want.get("NoFitReason", "")


class MakeTopology:
    """``MakeTopology`` (only for the skipped Topology Aware Scheduling cases)."""

    def __init__(self, name: str) -> None:
        self.t: dict = {"name": name, "levels": []}

    def Levels(self, *levels: str) -> MakeTopology:
        self.t["levels"] = list(levels)
        return self

    def Obj(self) -> dict:
        return self.t
