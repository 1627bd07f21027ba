"""Kueue v0.19.2 ``TestCandidatesOrdering`` and ``TestPreemptionMessage``
(pkg/scheduler/preemption/preemption_test.go), ported by name. The ``PriorityBoost`` (alpha, off by default)
and ``AdmissionFairSharing`` cases are left out: flexq models neither."""

from __future__ import annotations

import pytest

from flexq.kueue.preemption import _Ctx, preemption_message
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo

from .upstream_wrappers import NOW, MakeAdmission, MakeClusterQueue, MakeWorkload

PREEMPTOR_CQ = "preemptor"


def _reserved(name: str, cq: str = PREEMPTOR_CQ, at: float = NOW, priority: int | None = None) -> dict:
    w = MakeWorkload(name, "").ReserveQuotaAt(MakeAdmission(cq).Obj(), at)
    if priority is not None:
        w.Priority(priority)
    return w.Obj()


def _evicted(name: str) -> dict:
    return (
        MakeWorkload(name, "")
        .Condition({"Type": "Evicted", "Status": "True", "LastTransitionTime": NOW})
        .Obj()
    )


CASES = {
    "workloads sorted by priority": (
        [_reserved("high", priority=10), _reserved("low", priority=-10)],
        ["low", "high"],
    ),
    "evicted workload first": ([_reserved("other", priority=10), _evicted("evicted")], ["evicted", "other"]),
    "workload from different CQ first": (
        [_reserved("preemptorCq", priority=10), _reserved("other", cq="other", priority=10)],
        ["other", "preemptorCq"],
    ),
    "old workloads last": (
        [_reserved("older", at=NOW - 1), _reserved("younger", at=NOW + 1), _reserved("current")],
        ["younger", "current", "older"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_candidates_ordering(name: str) -> None:
    candidates, want = CASES[name]
    snap = build_snapshot([MakeClusterQueue(PREEMPTOR_CQ).Obj()])
    preemptor = WorkloadInfo.from_obj(MakeWorkload("in", "").Obj(), PREEMPTOR_CQ)
    ctx = _Ctx(snap, preemptor, snap.cq(PREEMPTOR_CQ), set(), {}, NOW)
    infos = [WorkloadInfo.from_obj(c) for c in candidates]
    elems = sorted((type("E", (), {"info": i})() for i in infos), key=ctx.order_key)
    assert [e.info.obj["metadata"]["name"] for e in elems] == want


def _preemptor(uid: str | None = None, job_uid: str | None = None) -> WorkloadInfo:
    md: dict = {}
    if uid:
        md["uid"] = uid
    if job_uid:
        md["labels"] = {"kueue.x-k8s.io/job-uid": job_uid}
    return WorkloadInfo(obj={"metadata": md})


@pytest.mark.parametrize(
    ("preemptor", "reason", "paths", "want"),
    [
        (
            _preemptor(),
            "",
            ("", ""),
            "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to UNKNOWN; preemptor path: "
            "UNKNOWN; preemptee path: UNKNOWN",
        ),
        (
            _preemptor("uid"),
            "",
            ("", ""),
            "Preempted to accommodate a workload (UID: uid, JobUID: UNKNOWN) due to UNKNOWN; preemptor path: "
            "UNKNOWN; preemptee path: UNKNOWN",
        ),
        (
            _preemptor("uid", "juid"),
            "",
            ("", ""),
            "Preempted to accommodate a workload (UID: uid, JobUID: juid) due to UNKNOWN; preemptor path: UNKNOWN; "
            "preemptee path: UNKNOWN",
        ),
        (
            _preemptor("uid", "juid"),
            "InClusterQueue",
            ("/a", "/b"),
            "Preempted to accommodate a workload (UID: uid, JobUID: juid) due to prioritization in the ClusterQueue; "
            "preemptor path: /a; preemptee path: /b",
        ),
    ],
)
def test_preemption_message(preemptor: WorkloadInfo, reason: str, paths: tuple[str, str], want: str) -> None:
    """TestPreemptionMessage, its four cases."""
    assert preemption_message(preemptor, reason, *paths) == want
