"""Kueue v0.19.2 ``TestLastAssignmentOutdated`` (10 cases) and ``TestEntryMarkSkipped`` (2 cases)
(pkg/scheduler/scheduler_test.go): when the flavor scan progress of a workload's last assignment is dropped,
with and without ``FlavorFungibilityPreserveScanProgress``. A scheduling hash of "" is upstream's
``SchedulingHashUnknown``."""

from __future__ import annotations

import pytest

from flexq.kueue.config import KueueConfig
from flexq.kueue.cycle import Entry, last_assignment_outdated, mark_skipped
from flexq.kueue.flavorassigner import AssignmentState
from flexq.kueue.workload import WorkloadInfo

# name: (preserveProgress, currentSchedulingCycle, last (generation, cycle, hash), currentCQGeneration,
#        currentSchedulingHash, want)
OUTDATED = {
    "Cluster queue allocatableResourceIncreasedGen increased": (False, 5, (0, 1, ""), 1, "", True),
    "AllocatableResourceGeneration not increased": (False, 5, (0, 1, ""), 0, "", False),
    "assignment from the immediately preceding cycle survives a generation bump": (
        True,
        5,
        (0, 4, ""),
        1,
        "",
        False,
    ),
    "assignment from the current cycle survives a generation bump": (True, 5, (0, 5, ""), 1, "", False),
    "assignment older than one cycle falls back to the generation check": (True, 5, (0, 3, ""), 1, "", True),
    "a changed scheduling shape starts the scan over even in the preceding cycle": (
        True,
        5,
        (0, 4, "shape-a"),
        0,
        "shape-b",
        True,
    ),
    "an unchanged scheduling shape keeps the preceding cycle's assignment": (
        True,
        5,
        (0, 4, "shape-a"),
        1,
        "shape-a",
        False,
    ),
    "an unknown hash is not treated as a shape change": (True, 5, (0, 4, ""), 1, "shape-b", False),
    "without the gate a changed scheduling shape is ignored": (
        False,
        5,
        (0, 4, "shape-a"),
        0,
        "shape-b",
        False,
    ),
    "without the gate the preceding cycle gets no special treatment": (False, 5, (0, 4, ""), 1, "", True),
}


@pytest.mark.parametrize("name", sorted(OUTDATED))
def test_last_assignment_outdated(name: str) -> None:
    gate, cycle, (gen, last_cycle, last_hash), cq_gen, hash_now, want = OUTDATED[name]
    last = AssignmentState([], gen, last_cycle)
    assert last_assignment_outdated(last, cq_gen, cycle, gate, last_hash, hash_now) is want


@pytest.mark.parametrize(
    ("name", "gate", "want_dropped"),
    [
        ("without the gate the assignment is discarded so every flavor is retried", False, True),
        ("with the gate the assignment is kept so the scan resumes", True, False),
    ],
)
def test_entry_mark_skipped(name: str, gate: bool, want_dropped: bool) -> None:
    cfg = KueueConfig()
    cfg.gates["FlavorFungibilityPreserveScanProgress"] = gate
    info = WorkloadInfo.from_obj({"metadata": {"name": "w", "namespace": "ns"}, "spec": {}})
    info.last_assignment = AssignmentState([{"cpu": 0}])
    e = Entry(info)
    mark_skipped(
        e,
        "Workload no longer fits after processing another workload",
        "WaitingForQuota",
        cfg.gate("FlavorFungibilityPreserveScanProgress"),
    )
    assert e.status == "skipped"
    assert e.msg == "Workload no longer fits after processing another workload"
    assert (e.info.last_assignment is None) is want_dropped
    if not want_dropped:
        assert e.info.last_assignment.last_tried_flavor_idx[0]["cpu"] == 0
