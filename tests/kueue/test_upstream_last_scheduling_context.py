"""Kueue v0.19.2 ``TestLastSchedulingContext`` (pkg/scheduler/scheduler_test.go), its six cases.

Generated from upstream's table text into the Python twins of its wrappers. Upstream schedules once,
compares every workload (the pending ones' QuotaReserved messages), deletes the case's workloads, lets the
inadmissible ones requeue and schedules again, then compares the admissions held. Here the objects go into a
minimal Kueue (``flexq.testing.minimal_kueue``) whose controllers and scheduler run on a virtual clock: the
first cycle runs, the pending workloads' messages are compared, the workloads are deleted and the loop runs
until quiet; the admissions held must be upstream's.
"""

from __future__ import annotations

import copy

import pytest

from flexq.testing.minimal_kueue import MinimalKueue

from .upstream_flavorassigner import MustParse
from .upstream_schedule import _without_lone_borrowing_limit
from .upstream_wrappers import (
    NOW,
    MakeAdmission,
    MakeClusterQueue,
    MakeFlavorQuotas,
    MakePodSetAssignment,
    MakeResourceFlavor,
    MakeWorkload,
)

clusterQueueCohort = [
    MakeClusterQueue("eng-cohort-alpha")
    .Cohort("cohort")
    .QueueingStrategy("StrictFIFO")
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .FlavorFungibility(
        dict(
            WhenCanPreempt="MayStopSearch",
            WhenCanBorrow="MayStopSearch",
        )
    )
    .ResourceGroup(
        MakeFlavorQuotas("on-demand").Resource("cpu", "50", "50").Obj(),
        MakeFlavorQuotas("spot").Resource("cpu", "100", "0").Obj(),
    )
    .Obj(),
    MakeClusterQueue("eng-cohort-beta")
    .Cohort("cohort")
    .QueueingStrategy("StrictFIFO")
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .FlavorFungibility(
        dict(
            WhenCanPreempt="MayStopSearch",
            WhenCanBorrow="MayStopSearch",
        )
    )
    .ResourceGroup(
        MakeFlavorQuotas("on-demand").Resource("cpu", "50", "50").Obj(),
        MakeFlavorQuotas("spot").Resource("cpu", "100", "0").Obj(),
    )
    .Obj(),
    MakeClusterQueue("eng-cohort-theta")
    .Cohort("cohort")
    .QueueingStrategy("StrictFIFO")
    .Preemption(
        dict(
            WithinClusterQueue="Never",
            ReclaimWithinCohort="LowerPriority",
        )
    )
    .FlavorFungibility(
        dict(
            WhenCanPreempt="TryNextFlavor",
            WhenCanBorrow="TryNextFlavor",
        )
    )
    .ResourceGroup(
        MakeFlavorQuotas("on-demand").Resource("cpu", "50", "50").Obj(),
        MakeFlavorQuotas("spot").Resource("cpu", "100", "0").Obj(),
    )
    .Obj(),
]

QUEUES = {
    "main": "eng-alpha",
    "main-alpha": "eng-cohort-alpha",
    "main-beta": "eng-cohort-beta",
    "main-theta": "eng-cohort-theta",
}

CASES = [
    dict(
        name="scheduling on the first flavor is unblocked after some workloads were deleted",
        # In this scenario we wait for the first flavor to be unblocked by
        # removal of workloads. The second flavor cannot be used because
        # it is noFit.
        cqs=[
            MakeClusterQueue("eng-alpha")
            .QueueingStrategy("BestEffortFIFO")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                )
            )
            .FlavorFungibility(
                dict(
                    WhenCanPreempt="MayStopSearch",
                )
            )
            .ResourceGroup(
                MakeFlavorQuotas("on-demand").Resource("cpu", "50", "50").Obj(),
                MakeFlavorQuotas("spot").Resource("cpu", "10", "0").Obj(),
            )
            .Obj(),
        ],
        workloads=[
            MakeWorkload("low-1", "default")
            .Queue("main")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("preemptor", "default").Queue("main").Request("cpu", "20").Obj(),
        ],
        deleteWorkloads=[
            dict(
                Namespace="default",
                Name="low-1",
            )
        ],
        wantWorkloads=[
            MakeWorkload("low-1", "default")
            .Queue("main")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("preemptor", "default")
            .Queue("main")
            .Request("cpu", "20")
            .Condition(
                dict(
                    Type="QuotaReserved",
                    Status="False",
                    Reason="WaitingForQuota",
                    Message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor spot, previously considered podsets requests (0) + current podset request (20) > maximum capacity (10), insufficient unused quota for cpu in flavor on-demand, 20 more needed",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Admitted",
                    Status="False",
                    Reason="NoReservation",
                    Message="The workload has no reservation",
                    LastTransitionTime=NOW,
                )
            )
            .ResourceRequests(
                dict(
                    Name="main",
                    Resources={
                        "cpu": MustParse("20"),
                    },
                )
            )
            .Obj(),
        ],
        wantAdmissionsOnSecondSchedule={
            "default/preemptor": MakeAdmission("eng-alpha")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Obj())
            .Obj(),
        },
    ),
    dict(
        name="borrow before next flavor",
        cqs=clusterQueueCohort,
        workloads=[
            MakeWorkload("placeholder", "default")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("borrower", "default").Queue("main-alpha").Request("cpu", "20").Obj(),
            MakeWorkload("workload1", "default").Queue("main-beta").Request("cpu", "20").Obj(),
        ],
        wantWorkloads=[
            MakeWorkload("borrower", "default")
            .Queue("main-alpha")
            .Request("cpu", "20")
            .Condition(
                dict(
                    Type="QuotaReserved",
                    Status="True",
                    Reason="QuotaReserved",
                    Message="Quota reserved in ClusterQueue eng-cohort-alpha",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Admitted",
                    Status="True",
                    Reason="Admitted",
                    Message="The workload is admitted",
                    LastTransitionTime=NOW,
                )
            )
            .Admission(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(
                    MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Count(1).Obj(),
                )
                .Obj(),
            )
            .Obj(),
            MakeWorkload("placeholder", "default")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("workload1", "default")
            .Queue("main-beta")
            .Request("cpu", "20")
            .Condition(
                dict(
                    Type="QuotaReserved",
                    Status="True",
                    Reason="QuotaReserved",
                    Message="Quota reserved in ClusterQueue eng-cohort-beta",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Admitted",
                    Status="True",
                    Reason="Admitted",
                    Message="The workload is admitted",
                    LastTransitionTime=NOW,
                )
            )
            .Admission(
                MakeAdmission("eng-cohort-beta")
                .PodSets(
                    MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Count(1).Obj(),
                )
                .Obj(),
            )
            .Obj(),
        ],
        wantAdmissionsOnSecondSchedule={
            "default/placeholder": MakeAdmission("eng-cohort-alpha")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
            .Obj(),
            "default/workload1": MakeAdmission("eng-cohort-beta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Obj())
            .Obj(),
            "default/borrower": MakeAdmission("eng-cohort-alpha")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Obj())
            .Obj(),
        },
    ),
    dict(
        name="borrow after all flavors",
        cqs=clusterQueueCohort,
        workloads=[
            MakeWorkload("placeholder", "default")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("placeholder1", "default")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("workload", "default").Queue("main-theta").Request("cpu", "20").Obj(),
        ],
        wantWorkloads=[
            MakeWorkload("placeholder", "default")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("placeholder1", "default")
            .Request("cpu", "50")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("workload", "default")
            .Queue("main-theta")
            .Request("cpu", "20")
            .Condition(
                dict(
                    Type="QuotaReserved",
                    Status="True",
                    Reason="QuotaReserved",
                    Message="Quota reserved in ClusterQueue eng-cohort-theta",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Admitted",
                    Status="True",
                    Reason="Admitted",
                    Message="The workload is admitted",
                    LastTransitionTime=NOW,
                )
            )
            .Admission(
                MakeAdmission("eng-cohort-theta")
                .PodSets(
                    MakePodSetAssignment("main").Assignment("cpu", "spot", "20").Count(1).Obj(),
                )
                .Obj(),
            )
            .Obj(),
        ],
        wantAdmissionsOnSecondSchedule={
            "default/placeholder": MakeAdmission("eng-cohort-alpha")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
            .Obj(),
            "default/placeholder1": MakeAdmission("eng-cohort-theta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "50").Obj())
            .Obj(),
            "default/workload": MakeAdmission("eng-cohort-theta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "20").Obj())
            .Obj(),
        },
    ),
    dict(
        name="when the next flavor is full, but can borrow on first",
        cqs=clusterQueueCohort,
        workloads=[
            MakeWorkload("placeholder", "default")
            .Request("cpu", "40")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "40").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("placeholder1", "default")
            .Request("cpu", "40")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "40").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("placeholder2", "default")
            .Request("cpu", "100")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "100").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("workload", "default").Queue("main-theta").Request("cpu", "20").Obj(),
        ],
        wantWorkloads=[
            MakeWorkload("placeholder", "default")
            .Request("cpu", "40")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "40").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("placeholder1", "default")
            .Request("cpu", "40")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "40").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("placeholder2", "default")
            .Request("cpu", "100")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "100").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("workload", "default")
            .Queue("main-theta")
            .Request("cpu", "20")
            .Condition(
                dict(
                    Type="QuotaReserved",
                    Status="True",
                    Reason="QuotaReserved",
                    Message="Quota reserved in ClusterQueue eng-cohort-theta",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Admitted",
                    Status="True",
                    Reason="Admitted",
                    Message="The workload is admitted",
                    LastTransitionTime=NOW,
                )
            )
            .Admission(
                MakeAdmission("eng-cohort-theta")
                .PodSets(
                    MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Count(1).Obj(),
                )
                .Obj(),
            )
            .Obj(),
        ],
        wantAdmissionsOnSecondSchedule={
            "default/placeholder": MakeAdmission("eng-cohort-alpha")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "40").Obj())
            .Obj(),
            "default/placeholder1": MakeAdmission("eng-cohort-theta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "40").Obj())
            .Obj(),
            "default/placeholder2": MakeAdmission("eng-cohort-theta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "100").Obj())
            .Obj(),
            "default/workload": MakeAdmission("eng-cohort-theta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Obj())
            .Obj(),
        },
    ),
    dict(
        name="when the next flavor is full, but can preempt on first",
        cqs=clusterQueueCohort,
        workloads=[
            MakeWorkload("placeholder-alpha", "default")
            .Priority(-1)
            .Request("cpu", "150")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "150").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("placeholder-theta-spot", "default")
            .Request("cpu", "100")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "100").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("new", "default")
            .UID("wl-new")
            .JobUID("job-new")
            .Queue("main-theta")
            .Request("cpu", "20")
            .Obj(),
        ],
        deleteWorkloads=[
            dict(
                Namespace="default",
                Name="placeholder-alpha",
            )
        ],
        wantWorkloads=[
            MakeWorkload("new", "default")
            .UID("wl-new")
            .JobUID("job-new")
            .Queue("main-theta")
            .Request("cpu", "20")
            .Condition(
                dict(
                    Type="QuotaReserved",
                    Status="False",
                    Reason="WaitingForPreemptedWorkloads",
                    Message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 20 more needed, insufficient unused quota for cpu in flavor spot, 20 more needed. Pending the preemption of 1 workload(s)",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Admitted",
                    Status="False",
                    Reason="NoReservation",
                    Message="The workload has no reservation",
                    LastTransitionTime=NOW,
                )
            )
            .ResourceRequests(
                dict(
                    Name="main",
                    Resources={
                        "cpu": MustParse("20"),
                    },
                )
            )
            .Obj(),
            MakeWorkload("placeholder-alpha", "default")
            .Priority(-1)
            .Request("cpu", "150")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-alpha")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "150").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-new, JobUID: job-new) due to reclamation within the cohort; preemptor path: /cohort/eng-cohort-theta; preemptee path: /cohort/eng-cohort-alpha",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-new, JobUID: job-new) due to reclamation within the cohort; preemptor path: /cohort/eng-cohort-theta; preemptee path: /cohort/eng-cohort-alpha",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("placeholder-theta-spot", "default")
            .Request("cpu", "100")
            .ReserveQuotaAt(
                MakeAdmission("eng-cohort-theta")
                .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "100").Obj())
                .Obj(),
                NOW,
            )
            .AdmittedAt(True, NOW)
            .Obj(),
        ],
        wantAdmissionsOnSecondSchedule={
            "default/placeholder-theta-spot": MakeAdmission("eng-cohort-theta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "100").Obj())
            .Obj(),
            "default/new": MakeAdmission("eng-cohort-theta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "20").Obj())
            .Obj(),
        },
    ),
    dict(
        name="TryNextFlavor, but second flavor is full and can preempt on first",
        cqs=[
            MakeClusterQueue("eng-cohort-alpha")
            .Cohort("cohort")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .FlavorFungibility(
                dict(
                    WhenCanPreempt="TryNextFlavor",
                    WhenCanBorrow="TryNextFlavor",
                )
            )
            .ResourceGroup(
                MakeFlavorQuotas("on-demand")
                .ResourceQuotaWrapper("cpu")
                .NominalQuota("0")
                .BorrowingLimit("60")
                .Append()
                .Obj(),
                MakeFlavorQuotas("spot")
                .ResourceQuotaWrapper("cpu")
                .NominalQuota("30")
                .BorrowingLimit("30")
                .Append()
                .Obj(),
            )
            .Obj(),
            MakeClusterQueue("eng-cohort-beta")
            .Cohort("cohort")
            .Preemption(
                dict(
                    WithinClusterQueue="LowerPriority",
                    ReclaimWithinCohort="Any",
                )
            )
            .FlavorFungibility(
                dict(
                    WhenCanPreempt="TryNextFlavor",
                    WhenCanBorrow="TryNextFlavor",
                )
            )
            .ResourceGroup(
                MakeFlavorQuotas("on-demand")
                .ResourceQuotaWrapper("cpu")
                .NominalQuota("30")
                .BorrowingLimit("30")
                .Append()
                .Obj(),
                MakeFlavorQuotas("spot")
                .ResourceQuotaWrapper("cpu")
                .NominalQuota("30")
                .BorrowingLimit("30")
                .Append()
                .Obj(),
            )
            .Obj(),
            MakeClusterQueue("eng-cohort-shared")
            .Cohort("cohort")
            .ResourceGroup(
                MakeFlavorQuotas("on-demand").ResourceQuotaWrapper("cpu").NominalQuota("30").Append().Obj(),
            )
            .Obj(),
        ],
        workloads=[
            MakeWorkload("alpha1", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-alpha", "on-demand", (NOW + (-1)))
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("alpha2", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-alpha", "on-demand", NOW)
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("alpha3", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-alpha", "spot", NOW)
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("beta1", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-beta", "spot", NOW)
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("new", "default")
            .UID("wl-new")
            .JobUID("job-new")
            .Queue("main-beta")
            .Request("cpu", "22")
            .Obj(),
        ],
        deleteWorkloads=[
            dict(
                Namespace="default",
                Name="alpha2",
            )
        ],
        wantWorkloads=[
            MakeWorkload("alpha1", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-alpha", "on-demand", (NOW + (-1)))
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("alpha2", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-alpha", "on-demand", NOW)
            .AdmittedAt(True, NOW)
            .Condition(
                dict(
                    Type="Evicted",
                    Status="True",
                    Reason="Preempted",
                    Message="Preempted to accommodate a workload (UID: wl-new, JobUID: job-new) due to reclamation within the cohort; preemptor path: /cohort/eng-cohort-beta; preemptee path: /cohort/eng-cohort-alpha",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Preempted",
                    Status="True",
                    Reason="InCohortReclamation",
                    Message="Preempted to accommodate a workload (UID: wl-new, JobUID: job-new) due to reclamation within the cohort; preemptor path: /cohort/eng-cohort-beta; preemptee path: /cohort/eng-cohort-alpha",
                    LastTransitionTime=NOW,
                )
            )
            .SchedulingStatsEviction(dict(Reason="Preempted", Count=1))
            .Obj(),
            MakeWorkload("alpha3", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-alpha", "spot", NOW)
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("beta1", "default")
            .Request("cpu", "22")
            .SimpleReserveQuota("eng-cohort-beta", "spot", NOW)
            .AdmittedAt(True, NOW)
            .Obj(),
            MakeWorkload("new", "default")
            .UID("wl-new")
            .JobUID("job-new")
            .Queue("main-beta")
            .Request("cpu", "22")
            .Condition(
                dict(
                    Type="QuotaReserved",
                    Status="False",
                    Reason="WaitingForPreemptedWorkloads",
                    Message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 6 more needed, insufficient unused quota for cpu in flavor spot, 6 more needed. Pending the preemption of 1 workload(s)",
                    LastTransitionTime=NOW,
                )
            )
            .Condition(
                dict(
                    Type="Admitted",
                    Status="False",
                    Reason="NoReservation",
                    Message="The workload has no reservation",
                    LastTransitionTime=NOW,
                )
            )
            .ResourceRequests(
                dict(
                    Name="main",
                    Resources={
                        "cpu": MustParse("22"),
                    },
                )
            )
            .Obj(),
        ],
        wantAdmissionsOnSecondSchedule={
            "default/alpha1": MakeAdmission("eng-cohort-alpha")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "22").Obj())
            .Obj(),
            "default/alpha3": MakeAdmission("eng-cohort-alpha")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "22").Obj())
            .Obj(),
            "default/beta1": MakeAdmission("eng-cohort-beta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "spot", "22").Obj())
            .Obj(),
            "default/new": MakeAdmission("eng-cohort-beta")
            .PodSets(MakePodSetAssignment("main").Assignment("cpu", "on-demand", "22").Obj())
            .Obj(),
        },
    ),
]


def _admissions(mk: MinimalKueue) -> dict[str, tuple]:
    out = {}
    for w in mk.store.list("Workload"):
        adm = (w.get("status") or {}).get("admission")
        reserved = any(
            c["type"] == "QuotaReserved" and c["status"] == "True"
            for c in w["status"].get("conditions") or []
        )
        if adm and reserved:
            out[f"{w['metadata']['namespace']}/{w['metadata']['name']}"] = _adm(adm)
    return out


def _adm(adm: dict) -> tuple:
    return (
        adm["clusterQueue"],
        tuple(
            (
                p["name"],
                tuple(sorted(p["flavors"].items())),
                p.get("count", 1),
                tuple(sorted(_usage(p).items())),
            )
            for p in adm["podSetAssignments"]
        ),
    )


def _usage(p: dict) -> dict:
    from flexq.api.quantity import resource_value

    return {r: resource_value(r, q) for r, q in (p.get("resourceUsage") or {}).items()}


def _pending_messages(workloads: list[dict]) -> dict[str, str]:
    out = {}
    for w in workloads:
        for c in (w.get("status") or {}).get("conditions") or []:
            if c["type"] == "QuotaReserved" and c["status"] == "False":
                out[w["metadata"]["name"]] = c["message"]
    return out


@pytest.mark.parametrize("name", [c["name"] for c in CASES])
def test_last_scheduling_context(name: str) -> None:
    case = next(c for c in CASES if c["name"] == name)
    mk = MinimalKueue(start=NOW - 10)
    for f in ("on-demand", "spot"):
        mk.store.create(MakeResourceFlavor(f).Obj())
    for q in case["cqs"]:
        mk.store.create(_without_lone_borrowing_limit(copy.deepcopy(q)), keep_status=True)
    if any(q["spec"].get("cohortName") for q in case["cqs"]):
        mk.store.create(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Cohort",
                "metadata": {"name": "cohort"},
                "spec": {},
            }
        )
    for lq, cq in QUEUES.items():
        mk.store.create(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": "default"},
                "spec": {"clusterQueue": cq},
            }
        )
    for w in case["workloads"]:
        mk.store.create(copy.deepcopy(w), keep_status=True)
    mk.advance(10.5)  # the caches fill and the first cycle runs
    got = _pending_messages(mk.store.list("Workload"))
    want = _pending_messages(case["wantWorkloads"])
    assert {n: got.get(n) for n in want} == want
    for ref in case.get("deleteWorkloads") or []:
        mk.store.delete("Workload", ref["Name"], ref["Namespace"])
    mk.advance(30)
    want_adm = {k: _adm(v) for k, v in (case.get("wantAdmissionsOnSecondSchedule") or {}).items()}
    assert _admissions(mk) == want_adm
