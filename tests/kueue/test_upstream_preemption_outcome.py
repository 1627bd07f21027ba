"""Kueue v0.19.2 ``TestEntryMarkPreemptionOutcome`` (pkg/scheduler/scheduler_test.go), its four cases."""

from __future__ import annotations

import pytest

from flexq.kueue.flavorassigner import AssignmentState
from flexq.kueue.scheduler import Entry, mark_preemption_outcome
from flexq.kueue.workload import WorkloadInfo


@pytest.mark.parametrize(
    ("name", "preempted", "errors", "want_msg", "want_reason"),
    [
        (
            "pending preemption",
            2,
            0,
            "fits with preemption. Pending the preemption of 2 workload(s)",
            "PendingPreemption",
        ),
        (
            "failed preemption",
            0,
            2,
            "fits with preemption. Preempting 2 workload(s) failed, will retry.",
            "PreemptionFailed",
        ),
        (
            "preempted takes precedence over errors",
            1,
            1,
            "fits with preemption. Pending the preemption of 1 workload(s)",
            "PendingPreemption",
        ),
        ("no outcome", 0, 0, "fits with preemption", ""),  # "" is upstream's RequeueReasonGeneric
    ],
)
def test_entry_mark_preemption_outcome(
    name: str, preempted: int, errors: int, want_msg: str, want_reason: str
):
    info = WorkloadInfo.from_obj({"metadata": {"name": "w", "namespace": "ns"}, "spec": {}})
    info.last_assignment = AssignmentState()
    e = Entry(info, msg="fits with preemption")
    mark_preemption_outcome(e, preempted, errors)
    assert (e.msg, e.requeue_reason, e.info.last_assignment) == (want_msg, want_reason, None)
