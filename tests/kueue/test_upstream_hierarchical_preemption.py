"""Kueue v0.19.2 ``TestHierarchicalPreemptions`` (pkg/scheduler/preemption/preemption_hierarchical_test.go), every case, ported.

Generated from upstream's table text into the Python twins of its wrappers (``upstream_wrappers.py``);
each case keeps upstream's name (the test id), inputs and wanted workloads. ``upstream_preemption.check``
runs ``get_targets`` and the scheduler's preemption issuing and compares the preempted count, every
workload's ``Evicted`` / ``Preempted`` condition (reason and message) and the snapshot.
"""

from __future__ import annotations

import pytest

from .upstream_preemption import check
from .upstream_wrappers import (
    NOW,
    MakeAdmission,
    MakeClusterQueue,
    MakeCohort,
    MakeFlavorQuotas,
    MakePodSetAssignment,
    MakeResourceFlavor,
    MakeWorkload,
    base_incoming,
    singlePodSetAssignment,
)

FLAVORS = [MakeResourceFlavor("default").Obj()]

CASES = {
    #
    #            R
    #      /      |
    #   C(2) q_borrowing(0)
    #  /
    # q
    "preempt with hierarchical advantage": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted2", "")
            .Priority(0)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "2").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("admitted2", "")
            .Priority(0)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #             R
    #      /      |         \
    #   C(2) q_borrowing(0)  q_nominal(2)
    #  /
    # q
    "avoid queues within nominal quota": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q_nominal")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted1", "")
            .Priority(-10)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_nominal")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted2", "")
            .Priority(0)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "2").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("admitted1", "")
            .Priority(-10)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_nominal")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted2", "")
            .Priority(0)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #            R(0)
    #      /      |
    #   C(2) q_borrowing(0)
    #  /
    # q(0)
    "preempt multiple with hierarchical advantage": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted1", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted2", "")
            .Priority(2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "2").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("admitted1", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted2", "")
            .Priority(2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #        R(0)
    #      /
    #   C(3)
    #  /   \
    # q(0) q_same_cohort(0)
    "preempt in cohort and own CQ": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "3").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                    BorrowWithinCohort=dict(
                        Policy="LowerPriority",
                        MaxPriorityThreshold=0,
                    ),
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_not_preemptible", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_preemptible", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_own_queue", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "2").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("admitted_not_preemptible", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_own_queue", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /r/c/q; preemptee path: /r/c/q",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /r/c/q; preemptee path: /r/c/q",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_preemptible", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclaimWhileBorrowing",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #            R(0)
    #      /      |
    #   C(2) q_borrowing(0)
    #  /
    # q(0)
    "prefer to preempt hierarchical candidate": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_queue", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "1").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_same_queue", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    #
    #           R(0)
    #      /      |
    #   C(2)   q_nominal(2)
    #  /   \
    # q(0) q_same_cohort(0)
    "forced to preempt priority candidate": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                    BorrowWithinCohort=dict(
                        Policy="LowerPriority",
                        MaxPriorityThreshold=0,
                    ),
                )
            )
            .Obj(),
            MakeClusterQueue("q_nominal")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_nominal", "")
            .Priority(-10)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_nominal")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "2").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("admitted_nominal", "")
            .Priority(-10)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_nominal")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclaimWhileBorrowing",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #           R(0)
    #      /      |
    #   C(2)   q_borrowing(0)
    #  /    \
    # q(4)  q_same_cohort(0)
    #
    "incoming workload fits in CQ nominal quota": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(10)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(10)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "4").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(10)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(10)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #           R(1)
    #      /      |
    #   C(4)   q_borrowing(0)
    #  /    \
    # q(0)  q_same_cohort(0)
    #
    "preempt hierarchical and priority candidates": dict(
        cohorts=[
            MakeCohort("r").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "1").Obj()).Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="LowerPriority",
                    BorrowWithinCohort=dict(
                        Policy="LowerPriority",
                        MaxPriorityThreshold=0,
                    ),
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort_preemptible", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_not_preemptible", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "3").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_borrowing_not_preemptible", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort_preemptible", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclaimWhileBorrowing",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #           R(1)
    #      /      |
    #   C(4)   q_borrowing(0)
    #  /    \
    # q(0)  q_same_cohort(0)
    #
    "preempt hierarchical candidates and inside CQ": dict(
        cohorts=[
            MakeCohort("r").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "1").Obj()).Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="LowerPriority",
                    BorrowWithinCohort=dict(
                        Policy="LowerPriority",
                        MaxPriorityThreshold=0,
                    ),
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_queue_preemptible", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_not_preemptible", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "3").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_borrowing_not_preemptible", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_queue_preemptible", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /r/c/q; preemptee path: /r/c/q",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /r/c/q; preemptee path: /r/c/q",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #
    #            R(0)
    #      /      |          \
    #   C(3) q_borrowing(0)  q_nominal(2)
    #  /
    # q(0)
    "reclaim nominal quota from lowest priority workload, excluding non-borrowing": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "3").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_nominal")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing_prio_8", "")
            .Priority(8)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_prio_9", "")
            .Priority(9)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_prio_10", "")
            .Priority(9)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_nominal", "")
            .Priority(-2)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_nominal")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "1").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing_prio_10", "")
            .Priority(9)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_prio_8", "")
            .Priority(8)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_borrowing_prio_9", "")
            .Priority(9)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_nominal", "")
            .Priority(-2)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_nominal")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    #
    #                  R
    #            /            \
    #      C(2)                   C_other(2)
    #     /    \                     |
    #    q(0)  q_same_cohort(0)   q_other(0)
    "infeasible preemption all available workloads in pruned subtrees": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
            MakeCohort("c_other")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q_other")
            .Cohort("c_other")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_other_1", "")
            .Priority(-10)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_other")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_other_2", "")
            .Priority(-10)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_other")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(0)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "2").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("admitted_other_1", "")
            .Priority(-10)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_other")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_other_2", "")
            .Priority(-10)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_other")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(0)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    #
    #          R(3CPU, 0Gi)
    #      /      |
    #   C(4CPU,4Gi) q_borrowing(0)
    #  /    \
    # q(0)   q_same_cohort(0)
    "hiearchical preemption with multiple resources": dict(
        cohorts=[
            MakeCohort("r").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "3").Obj()).Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Resource("memory", "4Gi").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(0)
            .Request("cpu", "3")
            .Request("memory", "1Gi")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "3")
                    .Assignment("memory", "default", "1Gi")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(-2)
            .Request("cpu", "1")
            .Request("memory", "3Gi")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "3Gi")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(-2).Request("cpu", "2").Request("memory", "1Gi").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
                "memory": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(0)
            .Request("cpu", "3")
            .Request("memory", "1Gi")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "3")
                    .Assignment("memory", "default", "1Gi")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_same_cohort", "")
            .Priority(-2)
            .Request("cpu", "1")
            .Request("memory", "3Gi")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "3Gi")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    #
    #           R(0)
    #      /      |
    #   C(2)   q_borrowing(0)
    #  /    \
    # q(0)  q_same_cohort(0)
    #
    "prefer to preempt evicted workloads": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                    BorrowWithinCohort=dict(
                        Policy="LowerPriority",
                        MaxPriorityThreshold=0,
                    ),
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_same_cohort")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(-10)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("evicted_same_cohort", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    LastTransitionTime=NOW,
                )
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(0).Request("cpu", "1").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,  # preemption on going
        wantWorkloads=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(-10)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("evicted_same_cohort", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("q_same_cohort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    LastTransitionTime=NOW,
                )
            )
            .Obj(),
        ],
    ),
    #
    #           R(0)
    #      /      |
    #   C(2)   q_borrowing(0)
    #  /
    # q(3, lending limit 2)
    #
    "respect lending limits": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q")
            .Cohort("c")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "3", "", "2").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q_borrowing")
            .Cohort("r")
            .ResourceGroup(MakeFlavorQuotas("default").Obj())
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(-2).Request("cpu", "5").Obj(),
        targetCQ="q",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q_borrowing")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    #                                r
    #                             /      \
    #                          c11        c12
    #                       /   |   \       \
    #                    c21   c22    c23    q1
    #                  /  |     |     |
    #                c31  c32   q3    q2
    #              /      |
    #            q5       q4
    # 	quotas:
    # 	4: c11, c12, c21, c22, c23, c32, c31
    # 	0: q1, q3, q4, q5
    "reclaim in complex hierarchy": dict(
        cohorts=[
            MakeCohort("r").Obj(),
            MakeCohort("c11")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
            MakeCohort("c12")
            .Parent("r")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
            MakeCohort("c21")
            .Parent("c11")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
            MakeCohort("c22")
            .Parent("c11")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
            MakeCohort("c23")
            .Parent("c11")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
            MakeCohort("c31")
            .Parent("c21")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
            MakeCohort("c32")
            .Parent("c21")
            .ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj())
            .Obj(),
        ],
        clusterQueues=[
            MakeClusterQueue("q1")
            .Cohort("c12")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q2")
            .Cohort("c23")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q3")
            .Cohort("c22")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q4")
            .Cohort("c32")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
            MakeClusterQueue("q5")
            .Cohort("c31")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .Obj(),
        ],
        admitted=[
            MakeWorkload("admitted_borrowing_1", "")
            .Priority(-6)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_2", "")
            .Priority(-5)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_3", "")
            .Priority(-9)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_4", "")
            .Priority(-10)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_5", "")
            .Priority(-4)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q3")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_6", "")
            .Priority(-3)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q3")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_7", "")
            .Priority(4)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q4")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_8", "")
            .Priority(2)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q4")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(-2).Request("cpu", "7").Obj(),
        targetCQ="q5",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        # only one of workloads from q2 will be preempted because
        # after preempting the first one, the usage of cohort
        # c23 will be back within nominal quota
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("admitted_borrowing_1", "")
            .Priority(-6)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c11/c21/c31/q5; preemptee path: /r/c12/q1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c11/c21/c31/q5; preemptee path: /r/c12/q1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_borrowing_2", "")
            .Priority(-5)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_3", "")
            .Priority(-9)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_4", "")
            .Priority(-10)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c11/c21/c31/q5; preemptee path: /r/c11/c23/q2",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c11/c21/c31/q5; preemptee path: /r/c11/c23/q2",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("admitted_borrowing_5", "")
            .Priority(-4)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("q3")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_6", "")
            .Priority(-3)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q3")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_7", "")
            .Priority(4)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("q4")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("admitted_borrowing_8", "")
            .Priority(2)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("q4")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hierarchical_preemptions(name: str) -> None:
    check(CASES[name], FLAVORS)
