"""Kueue v0.19.2 ``TestPreemption`` (pkg/scheduler/preemption/preemption_test.go), every case, ported.

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
    MakePodSet,
    MakePodSetAssignment,
    MakeResourceFlavor,
    MakeWorkload,
    base_incoming,
    singlePodSetAssignment,
)

FLAVORS = [
    MakeResourceFlavor("default").Obj(),
    MakeResourceFlavor("alpha").Obj(),
    MakeResourceFlavor("beta").Obj(),
]

defaultClusterQueues = [
    MakeClusterQueue("standalone")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6").Obj(),
    )
    .ResourceGroup(
        MakeFlavorQuotas("alpha").Resource("memory", "3Gi").Obj(),
        MakeFlavorQuotas("beta").Resource("memory", "3Gi").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerPriority",
        )
    )
    .Obj(),
    MakeClusterQueue("c1")
    .Cohort("cohort")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6", "6").Resource("memory", "3Gi", "3Gi").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerPriority",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .Obj(),
    MakeClusterQueue("c2")
    .Cohort("cohort")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6", "6").Resource("memory", "3Gi", "3Gi").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="Any",
        )
    )
    .Obj(),
    MakeClusterQueue("d1")
    .Cohort("cohort-no-limits")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6").Resource("memory", "3Gi").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerPriority",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .Obj(),
    MakeClusterQueue("d2")
    .Cohort("cohort-no-limits")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6").Resource("memory", "3Gi").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="Any",
        )
    )
    .Obj(),
    MakeClusterQueue("l1")
    .Cohort("legion")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6", "12").Resource("memory", "3Gi", "6Gi").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerPriority",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .Obj(),
    MakeClusterQueue("preventStarvation")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerOrNewerEqualPriority",
        )
    )
    .Obj(),
    MakeClusterQueue("a_standard")
    .Cohort("with_shared_cq")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "1", "12").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="LowerPriority",
            BorrowWithinCohort=dict(
                Policy="LowerPriority",
                MaxPriorityThreshold=0,
            ),
        )
    )
    .Obj(),
    MakeClusterQueue("b_standard")
    .Cohort("with_shared_cq")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "1", "12").Obj(),
    )
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
    MakeClusterQueue("a_best_effort")
    .Cohort("with_shared_cq")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "1", "12").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="LowerPriority",
            BorrowWithinCohort=dict(
                Policy="LowerPriority",
                MaxPriorityThreshold=0,
            ),
        )
    )
    .Obj(),
    MakeClusterQueue("b_best_effort")
    .Cohort("with_shared_cq")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "0", "13").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="LowerPriority",
            BorrowWithinCohort=dict(
                Policy="LowerPriority",
                MaxPriorityThreshold=0,
            ),
        )
    )
    .Obj(),
    MakeClusterQueue("shared")
    .Cohort("with_shared_cq")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "10").Obj(),
    )
    .Obj(),
    MakeClusterQueue("lend1")
    .Cohort("cohort-lend")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6", "", "4").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerPriority",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .Obj(),
    MakeClusterQueue("lend2")
    .Cohort("cohort-lend")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "6", "", "2").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerPriority",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .Obj(),
    MakeClusterQueue("a")
    .Cohort("cohort-three")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "2").Resource("memory", "2").Obj(),
    )
    .Preemption(
        dict(
            WithinClusterQueue="LowerPriority",
            ReclaimWithinCohort="Any",
        )
    )
    .Obj(),
    MakeClusterQueue("b")
    .Cohort("cohort-three")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "2").Resource("memory", "2").Obj(),
    )
    .Obj(),
    MakeClusterQueue("c")
    .Cohort("cohort-three")
    .ResourceGroup(
        MakeFlavorQuotas("default").Resource("cpu", "2").Resource("memory", "2").Obj(),
    )
    .Obj(),
]

CASES = {
    "preempt lowest priority": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "2").Obj(),
        targetCQ="standalone",
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
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preempt multiple": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "3").Obj(),
        targetCQ="standalone",
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
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "no preemption for low priority": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=MakeWorkload("in", "").Priority(-1).Request("cpu", "1").Obj(),
        targetCQ="standalone",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "not enough low priority workloads": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=MakeWorkload("in", "").Request("cpu", "4").Obj(),
        targetCQ="standalone",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "some free quota, preempt low priority": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "2").Obj(),
        targetCQ="standalone",
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
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "minimal set excludes low priority": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "2").Obj(),
        targetCQ="standalone",
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
            MakeWorkload("high", "")
            .Priority(1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "only preempt workloads using the chosen flavor": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("memory", "2Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "alpha", "2Gi").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("memory", "1Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "beta", "1Gi").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("high", "")
            .Priority(1)
            .Request("memory", "1Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "beta", "1Gi").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "1").Request("memory", "2Gi").Obj(),
        targetCQ="standalone",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Fit",
                ),
                "memory": dict(
                    Name="beta",
                    Mode="Preempt",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("high", "")
            .Priority(1)
            .Request("memory", "1Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "beta", "1Gi").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("low", "")
            .Priority(-1)
            .Request("memory", "2Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "alpha", "2Gi").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("mid", "")
            .Request("memory", "1Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "beta", "1Gi").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "reclaim quota from borrower": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-high", "")
            .Priority(1)
            .Request("cpu", "6")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "6000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "3").Obj(),
        targetCQ="c1",
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
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-high", "")
            .Priority(1)
            .Request("cpu", "6")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "6000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c1; preemptee path: /cohort/c2",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c1; preemptee path: /cohort/c2",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "reclaim quota if workload requests 0 resources for a resource at nominal quota": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .Request("memory", "3Gi")
            .SimpleReserveQuota("c1", "default", NOW)
            .Obj(),
            MakeWorkload("c2-mid", "").Request("cpu", "3").SimpleReserveQuota("c2", "default", NOW).Obj(),
            MakeWorkload("c2-high", "")
            .Priority(1)
            .Request("cpu", "6")
            .SimpleReserveQuota("c2", "default", NOW)
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "3").Request("memory", "0").Obj(),
        targetCQ="c1",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
                "memory": dict(
                    Name="default",
                    Mode="Fit",
                ),
            }
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .Request("memory", "3Gi")
            .SimpleReserveQuota("c1", "default", NOW)
            .Obj(),
            MakeWorkload("c2-high", "")
            .Priority(1)
            .Request("cpu", "6")
            .SimpleReserveQuota("c2", "default", NOW)
            .Obj(),
            MakeWorkload("c2-mid", "")
            .Request("cpu", "3")
            .SimpleReserveQuota("c2", "default", NOW)
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c1; preemptee path: /cohort/c2",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c1; preemptee path: /cohort/c2",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "no workloads borrowing": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-high", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "4").Obj(),
        targetCQ="c1",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("c1-high", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "not enough workloads borrowing": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-high", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-2", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "4").Obj(),
        targetCQ="c1",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("c1-high", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-2", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preempting locally and borrowing other resources in cohort, without cohort candidates": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-high-2", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "4").Request("memory", "5Gi").Obj(),
        targetCQ="c1",
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
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("c2-high-2", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preempting locally and borrowing same resource in cohort": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "4").Obj(),
        targetCQ="c1",
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
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("c1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("d1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("d1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("d1-low", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("d1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("d2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("d2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "4").Obj(),
        targetCQ="d1",
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
            MakeWorkload("d1-low", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("d1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-no-limits/d1; preemptee path: /cohort-no-limits/d1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-no-limits/d1; preemptee path: /cohort-no-limits/d1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("d1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("d1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("d2-low-1", "")
            .Priority(-1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("d2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preempting locally and borrowing other resources in cohort, with cohort candidates": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "5")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "5000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-2", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "2").Request("memory", "5Gi").Obj(),
        targetCQ="c1",
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
            MakeWorkload("c1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("c2-low-1", "")
            .Priority(-1)
            .Request("cpu", "5")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "5000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-2", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low-3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preempting locally and not borrowing same resource in 1-queue cohort": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("l1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("l1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("l1-low", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("l1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "4").Obj(),
        targetCQ="l1",
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
            MakeWorkload("l1-low", "")
            .Priority(-1)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("l1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("l1-med", "")
            .Priority(0)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("l1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /legion/l1; preemptee path: /legion/l1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /legion/l1; preemptee path: /legion/l1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-1", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-2", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "4").Obj(),
        targetCQ="c1",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("c1", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-1", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-2", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-1", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c1-2", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "4").Obj(),
        targetCQ="c2",
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
            MakeWorkload("c1-1", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c2; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c2; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("c1-2", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preempt from all ClusterQueues in cohort": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c1-mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-mid", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "4").Obj(),
        targetCQ="c1",
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
            MakeWorkload("c1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort/c1; preemptee path: /cohort/c1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("c1-mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("c1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("c2-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c1; preemptee path: /cohort/c2",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort/c1; preemptee path: /cohort/c2",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("c2-mid", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "can't preempt workloads in ClusterQueue for withinClusterQueue=Never": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("c2-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "4").Obj(),
        targetCQ="c2",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("c2-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("c2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "each podset preempts a different flavor": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("low-alpha", "")
            .Priority(-1)
            .Request("memory", "2Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "alpha", "2Gi").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("low-beta", "")
            .Priority(-1)
            .Request("memory", "2Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "beta", "2Gi").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming()
        .PodSets(
            MakePodSet("launcher", 1).Request("memory", "2Gi").Obj(),
            MakePodSet("workers", 2).Request("memory", "1Gi").Obj(),
        )
        .Obj(),
        targetCQ="standalone",
        assignment=dict(
            PodSets=[
                dict(
                    Name="launcher",
                    Flavors={
                        "memory": dict(
                            Name="alpha",
                            Mode="Preempt",
                        ),
                    },
                    Count=1,
                ),
                dict(
                    Name="workers",
                    Flavors={
                        "memory": dict(
                            Name="beta",
                            Mode="Preempt",
                        ),
                    },
                    Count=2,
                ),
            ],
        ),
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("low-alpha", "")
            .Priority(-1)
            .Request("memory", "2Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "alpha", "2Gi").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("low-beta", "")
            .Priority(-1)
            .Request("memory", "2Gi")
            .ReserveQuotaAt(
                MakeAdmission("standalone")
                .PodSets(MakePodSetAssignment("main").Assignment("memory", "beta", "2Gi").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "preempt newer workloads with the same priority": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("wl1", "")
            .Priority(2)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("preventStarvation")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("wl2", "")
            .Priority(1)
            .Creation(NOW)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("preventStarvation")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                (NOW + (1)),
            )
            .Obj(),
            MakeWorkload("wl3", "")
            .Priority(1)
            .Creation(NOW)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("preventStarvation")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming()
        .Priority(1)
        .Creation(NOW + (-15 * 1))
        .PodSets(
            MakePodSet("launcher", 1).Request("cpu", "2").Obj(),
        )
        .Obj(),
        targetCQ="preventStarvation",
        assignment=dict(
            PodSets=[
                dict(
                    Name="launcher",
                    Flavors={
                        "cpu": dict(
                            Name="default",
                            Mode="Preempt",
                        ),
                    },
                ),
            ],
        ),
        wantPreempted=1,
        wantWorkloads=[
            MakeWorkload("wl1", "")
            .Priority(2)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("preventStarvation")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("wl2", "")
            .Priority(1)
            .Creation(NOW)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("preventStarvation")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                (NOW + (1)),
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /preventStarvation; preemptee path: /preventStarvation",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /preventStarvation; preemptee path: /preventStarvation",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("wl3", "")
            .Priority(1)
            .Creation(NOW)
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("preventStarvation")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("a_best_effort_low", "")
            .Priority(-1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("a_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b_best_effort_low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "10").Obj(),
        targetCQ="a_standard",
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
            MakeWorkload("a_best_effort_low", "")
            .Priority(-1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("a_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /with_shared_cq/a_standard; preemptee path: /with_shared_cq/a_best_effort",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclaimWhileBorrowing",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /with_shared_cq/a_standard; preemptee path: /with_shared_cq/a_best_effort",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("b_best_effort_low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is required even after the preemption": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("b_standard", "")
            .Priority(1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(2).Request("cpu", "10").Obj(),
        targetCQ="a_standard",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("b_standard", "")
            .Priority(1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is not required after the preemption": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            # this admitted workload consumes all resources so it needs to be preempted to run a new workload
            MakeWorkload("b_standard", "")
            .Priority(1)
            .Request("cpu", "13")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "13000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming()
        .
        # this is a small workload which can be admitted without borrowing, if the b_standard workload is preempted
        Priority(2)
        .Request("cpu", "1")
        .Obj(),
        targetCQ="a_standard",
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
            # this admitted workload consumes all resources so it needs to be preempted to run a new workload
            MakeWorkload("b_standard", "")
            .Priority(1)
            .Request("cpu", "13")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "13000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /with_shared_cq/a_standard; preemptee path: /with_shared_cq/b_standard",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /with_shared_cq/a_standard; preemptee path: /with_shared_cq/b_standard",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("a_standard", "")
            .Priority(1)
            .Request("cpu", "13")
            .ReserveQuotaAt(
                MakeAdmission("a_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "13000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(2).Request("cpu", "1").Obj(),
        targetCQ="a_standard",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("a_standard", "")
            .Priority(1)
            .Request("cpu", "13")
            .ReserveQuotaAt(
                MakeAdmission("a_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "13000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("a_standard_1", "")
            .Priority(1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("a_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a_standard_2", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b_standard_1", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b_standard_2", "")
            .Priority(2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(3).Request("cpu", "1").Obj(),
        targetCQ="b_standard",
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
            MakeWorkload("a_standard_1", "")
            .Priority(1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("a_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a_standard_2", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b_standard_1", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /with_shared_cq/b_standard; preemptee path: /with_shared_cq/b_standard",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /with_shared_cq/b_standard; preemptee path: /with_shared_cq/b_standard",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("b_standard_2", "")
            .Priority(2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("b_standard_high", "")
            .Priority(2)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b_standard_mid", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a_best_effort_low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a_best_effort_lower", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(2).Request("cpu", "2").Obj(),
        targetCQ="b_standard",
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
            MakeWorkload("a_best_effort_low", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a_best_effort_lower", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a_best_effort")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /with_shared_cq/b_standard; preemptee path: /with_shared_cq/a_best_effort",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclaimWhileBorrowing",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while borrowing; preemptor path: /with_shared_cq/b_standard; preemptee path: /with_shared_cq/a_best_effort",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("b_standard_high", "")
            .Priority(2)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b_standard_mid", "")
            .Priority(1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b_standard")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /with_shared_cq/b_standard; preemptee path: /with_shared_cq/b_standard",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /with_shared_cq/b_standard; preemptee path: /with_shared_cq/b_standard",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "reclaim quota from lender": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("lend1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend2-mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend2-high", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Priority(1).Request("cpu", "3").Obj(),
        targetCQ="lend1",
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
            MakeWorkload("lend1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend2-high", "")
            .Priority(1)
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend2-mid", "")
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort-lend/lend1; preemptee path: /cohort-lend/lend2",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort-lend/lend1; preemptee path: /cohort-lend/lend2",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "preempt from all ClusterQueues in cohort-lend": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("lend1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend1-mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("lend1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend2-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend2-mid", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "4").Obj(),
        targetCQ="lend1",
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
            MakeWorkload("lend1-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-lend/lend1; preemptee path: /cohort-lend/lend1",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-lend/lend1; preemptee path: /cohort-lend/lend1",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("lend1-mid", "")
            .Request("cpu", "2")
            .ReserveQuotaAt(
                MakeAdmission("lend1")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "2000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("lend2-low", "")
            .Priority(-1)
            .Request("cpu", "3")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "3000m").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort-lend/lend1; preemptee path: /cohort-lend/lend2",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort-lend/lend1; preemptee path: /cohort-lend/lend2",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("lend2-mid", "")
            .Request("cpu", "4")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "4000m").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("lend2-low", "")
            .Priority(-1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "9").Obj(),
        targetCQ="lend1",
        assignment=singlePodSetAssignment(
            {
                "cpu": dict(
                    Name="default",
                    Mode="Preempt",
                ),
            }
        ),
        wantWorkloads=[
            MakeWorkload("lend2-low", "")
            .Priority(-1)
            .Request("cpu", "10")
            .ReserveQuotaAt(
                MakeAdmission("lend2")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "10").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preemptions from cq when target queue is exhausted for the single requested resource": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("a1", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a2", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "2").Priority(0).Obj(),
        targetCQ="a",
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
            MakeWorkload("a1", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("a2", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("a3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preemptions from cq when target queue is exhausted for two requested resources": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("a1", "")
            .Priority(-2)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a2", "")
            .Priority(-2)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "2").Request("memory", "2").Priority(0).Obj(),
        targetCQ="a",
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
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("a1", "")
            .Priority(-2)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
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
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("a2", "")
            .Priority(-2)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
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
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("a3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .Request("memory", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(
                    MakePodSetAssignment("main")
                    .Assignment("cpu", "default", "1")
                    .Assignment("memory", "default", "1")
                    .Obj()
                )
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "preemptions from cq when target queue is exhausted for one requested resource, but not the other": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("a1", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a2", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("a3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "2").Request("memory", "2").Priority(0).Obj(),
        targetCQ="a",
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
        wantPreempted=2,
        wantWorkloads=[
            MakeWorkload("a1", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("a2", "")
            .Priority(-2)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("a3", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
    ),
    "allow preemption from other cluster queues if target cq is not exhausted for the requested resource": dict(
        clusterQueues=defaultClusterQueues,
        admitted=[
            MakeWorkload("a1", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b4", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b5", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "2").Obj(),
        targetCQ="a",
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
            MakeWorkload("a1", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("a")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InClusterQueue",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; preemptor path: /cohort-three/a; preemptee path: /cohort-three/a",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("b1", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b2", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b3", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b4", "")
            .Priority(0)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
            MakeWorkload("b5", "")
            .Priority(-1)
            .Request("cpu", "1")
            .ReserveQuotaAt(
                MakeAdmission("b")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "1").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort-three/a; preemptee path: /cohort-three/b",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /cohort-three/a; preemptee path: /cohort-three/b",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
    "long range preemption": dict(
        clusterQueues=[
            MakeClusterQueue("cq-left")
            .Cohort("cohort-left")
            .Preemption(
                dict(
                    ReclaimWithinCohort="Any",
                )
            )
            .ResourceGroup(
                MakeFlavorQuotas("default").Resource("cpu", "10").Obj(),
            )
            .Obj(),
            MakeClusterQueue("cq-right")
            .Cohort("cohort-right")
            .ResourceGroup(
                MakeFlavorQuotas("default").Resource("cpu", "0").Obj(),
            )
            .Obj(),
        ],
        cohorts=[
            MakeCohort("cohort-left").Parent("root").Obj(),
            MakeCohort("cohort-right").Parent("root").Obj(),
        ],
        admitted=[
            MakeWorkload("to-be-preempted", "")
            .Request("cpu", "5")
            .ReserveQuotaAt(
                MakeAdmission("cq-right")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "5").Obj())
                .Obj(),
                NOW,
            )
            .Obj(),
        ],
        incoming=base_incoming().Request("cpu", "8").Obj(),
        targetCQ="cq-left",
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
            MakeWorkload("to-be-preempted", "")
            .Request("cpu", "5")
            .ReserveQuotaAt(
                MakeAdmission("cq-right")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "default", "5").Obj())
                .Obj(),
                NOW,
            )
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /root/cohort-left/cq-left; preemptee path: /root/cohort-right/cq-right",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /root/cohort-left/cq-left; preemptee path: /root/cohort-right/cq-right",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_preemption(name: str) -> None:
    check(CASES[name], FLAVORS)
