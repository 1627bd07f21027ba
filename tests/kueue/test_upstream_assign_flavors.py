"""Kueue v0.19.2 ``TestAssignFlavors`` (pkg/scheduler/flavorassigner/flavorassigner_test.go), every case, ported.

Generated from upstream's table text into the Python twins of its wrappers (``upstream_wrappers.py``,
``upstream_flavorassigner.py``); each case keeps upstream's name (the test id), inputs and wanted
assignment. Cases of Topology Aware Scheduling (``topologies``, the ``TopologyAwareScheduling`` gate), which
flexq does not model, are skipped, and so is the case with the ReclaimablePods gate off (flexq keeps it on).
"""

from __future__ import annotations

import pytest

from .upstream_flavorassigner import (
    FR,
    ElasticJobsViaWorkloadSlices,
    Fit,
    Gi,
    MakeTopology,
    Mi,
    MustParse,
    NewAmount,
    NewRequestsFromMap,
    NewStatus,
    NoFit,
    Preempt,
    ReclaimablePods,
    SimResult,
    TopologyAwareScheduling,
    check,
    new,
)
from .upstream_wrappers import (
    MakeClusterQueue,
    MakeFlavorQuotas,
    MakePodSet,
    SingleContainerForRequest,
)

CASES = {
    "single flavor, fits": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "1").Request("memory", "1Mi").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("cpu", "1").Resource("memory", "2Mi").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                        "memory": MustParse("1Mi"),
                    },
                    Count=1,
                    FlavorAssignmentAttempts=[dict(Flavor="default", Mode=Fit)],
                ),
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="cpu"): NewAmount(1_000),
                    FR(Flavor="default", Resource="memory"): NewAmount(Mi),
                }
            ),
        ),
    ),
    "single flavor, fits tainted flavor": dict(
        wlPods=[
            MakePodSet("main", 1)
            .Request("cpu", "1")
            .Toleration(
                dict(
                    Key="instance",
                    Operator="Equal",
                    Value="spot",
                    Effect="NoSchedule",
                )
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("tainted").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="tainted", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="tainted", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="tainted", Resource="cpu"): NewAmount(1_000),
                }
            ),
        ),
    ),
    "single flavor, fits tainted flavor with toleration": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "1").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("taint_and_toleration").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="taint_and_toleration", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    Count=1,
                    FlavorAssignmentAttempts=[
                        dict(Flavor="taint_and_toleration", Mode=Fit),
                    ],
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="taint_and_toleration", Resource="cpu"): NewAmount(1_000),
                }
            ),
        ),
    ),
    "single flavor, used resources, doesn't fit": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="default", Resource="cpu"): NewAmount(3_000),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor default, 1 more needed"),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="default",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor default, 1 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="cpu"): NewAmount(2_000),
                }
            ),
        ),
    ),
    "multiple resource groups, fits": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "3").Request("memory", "10Mi").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "2").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Obj(),
        )
        .ResourceGroup(
            MakeFlavorQuotas("b_one").Resource("memory", "1Gi").Obj(),
            MakeFlavorQuotas("b_two").Resource("memory", "5Gi").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="b_one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                        "memory": MustParse("10Mi"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(Flavor="two", Mode=Fit),
                        dict(Flavor="b_one", Mode=Fit),
                        dict(
                            Flavor="b_two",
                            Mode=NoFit,
                            Reasons=["flavor b_two does not provide resource memory"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(3_000),
                    FR(Flavor="b_one", Resource="memory"): NewAmount(10 * Mi),
                }
            ),
        ),
    ),
    "multiple flavors, leader worker set, leader and workers request the same resources fits": dict(
        wlPods=[
            MakePodSet("worker", 4).Request("cpu", "2").PodSetGroup("group1").Obj(),
            MakePodSet("leader", 1).Request("cpu", "1").PodSetGroup("group1").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "9").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="worker",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("8"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (9) > maximum capacity (4)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=4,
                ),
                dict(
                    Name="leader",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (9) > maximum capacity (4)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                ),
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(9_000),
                }
            ),
        ),
    ),
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, fits": dict(
        wlPods=[
            MakePodSet("worker", 4)
            .Request("cpu", "1")
            .Request("memory", "1")
            .Request("example.com/gpu", "1")
            .PodSetGroup("group1")
            .Obj(),
            MakePodSet("leader", 1).Request("cpu", "1").Request("memory", "1").PodSetGroup("group1").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "10").Resource("memory", "10").Obj(),
        )
        .ResourceGroup(
            MakeFlavorQuotas("two")
            .Resource("cpu", "5")
            .Resource("memory", "5")
            .Resource("example.com/gpu", "4")
            .Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="worker",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "example.com/gpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("4"),
                        "memory": MustParse("4"),
                        "example.com/gpu": MustParse("4"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=["flavor one does not provide resource example.com/gpu"],
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=4,
                ),
                dict(
                    Name="leader",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                        "memory": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=["flavor one does not provide resource example.com/gpu"],
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                ),
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(5_000),
                    FR(Flavor="two", Resource="memory"): NewAmount(5),
                    FR(Flavor="two", Resource="example.com/gpu"): NewAmount(4),
                }
            ),
        ),
    ),
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, does not fit, without group it would fit": dict(
        wlPods=[
            MakePodSet("worker", 4)
            .Request("cpu", "1")
            .Request("example.com/gpu", "1")
            .PodSetGroup("group1")
            .Obj(),
            MakePodSet("leader", 1).Request("cpu", "1").PodSetGroup("group1").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Resource("example.com/gpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "5").Resource("example.com/gpu", "0").Obj(),
        )
        .Obj(),
        wantRepMode=NoFit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="worker",
                    Requests={
                        "cpu": MustParse("4"),
                        "example.com/gpu": MustParse("4"),
                    },
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)",
                        "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)",
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=4,
                ),
                dict(
                    Name="leader",
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)",
                        "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)",
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=1,
                ),
            ],
            Usage=dict(Quota={}),
            NoFitReason="ExceedsMaxQuota",
        ),
    ),
    "multiple resource groups, one could fit with preemption, other doesn't fit": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "3").Request("memory", "10Mi").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "3").Obj(),
        )
        .ResourceGroup(
            MakeFlavorQuotas("b_one").Resource("memory", "1Mi").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(1_000),
        },
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "cpu": MustParse("3"),
                        "memory": MustParse("10Mi"),
                    },
                    Status=NewStatus(
                        "insufficient quota for memory in flavor b_one, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (1Mi)",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="b_one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for memory in flavor b_one, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (1Mi)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="ExceedsMaxQuota",
        ),
    ),
    "multiple resource groups with multiple resources, fits": dict(
        wlPods=[
            MakePodSet("main", 1)
            .Request("cpu", "3")
            .Request("memory", "10Mi")
            .Request("example.com/gpu", "3")
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "2").Resource("memory", "1Gi").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Resource("memory", "15Mi").Obj(),
        )
        .ResourceGroup(
            MakeFlavorQuotas("b_one").Resource("example.com/gpu", "4").Obj(),
            MakeFlavorQuotas("b_two").Resource("example.com/gpu", "2").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "example.com/gpu": dict(Name="b_one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                        "memory": MustParse("10Mi"),
                        "example.com/gpu": MustParse("3"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="b_one", Mode=Fit),
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(3_000),
                    FR(Flavor="two", Resource="memory"): NewAmount(10 * Mi),
                    FR(Flavor="b_one", Resource="example.com/gpu"): NewAmount(3),
                }
            ),
        ),
    ),
    "multiple resource groups with multiple resources, fits with different modes": dict(
        wlPods=[
            MakePodSet("main", 1)
            .Request("cpu", "3")
            .Request("memory", "10Mi")
            .Request("example.com/gpu", "3")
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "2").Resource("memory", "1Gi").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Resource("memory", "15Mi").Obj(),
        )
        .ResourceGroup(
            MakeFlavorQuotas("b_one").Resource("example.com/gpu", "4").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="two", Resource="memory"): NewAmount(10 * Mi),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("b_one").Resource("example.com/gpu", "0").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="b_one", Resource="example.com/gpu"): NewAmount(2),
        },
        simulationResult={
            FR(Flavor="two", Resource="memory"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="two", Mode=Preempt, TriedFlavorIdx=-1),
                        "example.com/gpu": dict(Name="b_one", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                        "memory": MustParse("10Mi"),
                        "example.com/gpu": MustParse("3"),
                    },
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)",
                        "insufficient unused quota for memory in flavor two, 5Mi more needed",
                        "insufficient unused quota for example.com/gpu in flavor b_one, 1 more needed",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="b_one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=[
                                "insufficient unused quota for example.com/gpu in flavor b_one, 1 more needed"
                            ],
                        ),
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(
                            Flavor="two",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for memory in flavor two, 5Mi more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(3_000),
                    FR(Flavor="two", Resource="memory"): NewAmount(10 * Mi),
                    FR(Flavor="b_one", Resource="example.com/gpu"): NewAmount(3),
                }
            ),
        ),
    ),
    "multiple resources in a group, doesn't fit": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "3").Request("memory", "10Mi").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "2").Resource("memory", "1Gi").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Resource("memory", "5Mi").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "cpu": MustParse("3"),
                        "memory": MustParse("10Mi"),
                    },
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)",
                        "insufficient quota for memory in flavor two, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (5Mi)",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for memory in flavor two, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (5Mi)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="ExceedsMaxQuota",
        ),
    ),
    "multiple flavors, fits while skipping tainted flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "3").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("tainted").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="tainted",
                            Mode=NoFit,
                            Reasons=["untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(3_000),
                }
            ),
        ),
    ),
    "multiple flavors, fits a node selector": dict(
        wlPods=[
            MakePodSet("main", 1)
            .
            # ignored:foo should get ignored
            NodeSelector({"type": "two", "ignored1": "foo"})
            .RequiredDuringSchedulingIgnoredDuringExecution(
                [
                    dict(
                        MatchExpressions=[
                            dict(
                                # this expression should get ignored
                                Key="ignored2",
                                Operator="In",
                                Values=["bar"],
                            ),
                        ],
                    ),
                ]
            )
            .Containers(
                SingleContainerForRequest(
                    {
                        "cpu": "1",
                    }
                ),
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=["flavor one doesn't match node affinity"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(1_000),
                }
            ),
        ),
    ),
    "multiple flavors, fits with node affinity": dict(
        wlPods=[
            MakePodSet("main", 1)
            .NodeSelector({"ignored1": "foo"})
            .RequiredDuringSchedulingIgnoredDuringExecution(
                [
                    dict(
                        MatchExpressions=[
                            dict(
                                Key="type",
                                Operator="In",
                                Values=["two"],
                            ),
                        ],
                    ),
                ]
            )
            .Containers(
                SingleContainerForRequest(
                    {
                        "cpu": "1",
                        "memory": "1Mi",
                    }
                ),
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Resource("memory", "1Gi").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Resource("memory", "1Gi").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                        "memory": MustParse("1Mi"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=["flavor one doesn't match node affinity"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(1_000),
                    FR(Flavor="two", Resource="memory"): NewAmount(Mi),
                }
            ),
        ),
    ),
    "multiple flavors, node affinity fits any flavor": dict(
        wlPods=[
            MakePodSet("main", 1)
            .RequiredDuringSchedulingIgnoredDuringExecution(
                [
                    dict(
                        MatchExpressions=[
                            dict(
                                Key="ignored2",
                                Operator="In",
                                Values=["bar"],
                            ),
                        ],
                    ),
                    dict(
                        MatchExpressions=[
                            dict(
                                # although this terms selects two
                                # the first term practically matches
                                # any flavor; and since the terms
                                # are ORed, any flavor can be selected.
                                Key="cpuType",
                                Operator="In",
                                Values=["two"],
                            ),
                        ],
                    ),
                ]
            )
            .Containers(
                SingleContainerForRequest(
                    {
                        "cpu": "1",
                    }
                ),
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(1_000),
                }
            ),
        ),
    ),
    "multiple flavors with different label keys, selector only uses flavor's own keys": dict(
        wlPods=[
            MakePodSet("main", 1)
            .NodeSelector({"x": "a", "y": "g"})
            .Containers(
                SingleContainerForRequest(
                    {
                        "cpu": "1",
                    }
                ),
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("label-x-a").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("label-xy-b").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="label-x-a", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="label-x-a", Resource="cpu"): NewAmount(1_000),
                }
            ),
        ),
    ),
    "labelless flavor in group with labeled flavor, workload uses labeled selector": dict(
        wlPods=[
            MakePodSet("main", 1)
            .NodeSelector({"type": "two"})
            .Containers(
                SingleContainerForRequest(
                    {
                        "cpu": "1",
                    }
                ),
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="cpu"): NewAmount(1_000),
                }
            ),
        ),
    ),
    "multiple flavors, doesn't fit node affinity": dict(
        wlPods=[
            MakePodSet("main", 1)
            .RequiredDuringSchedulingIgnoredDuringExecution(
                [
                    dict(
                        MatchExpressions=[
                            dict(
                                Key="type",
                                Operator="In",
                                Values=["three"],
                            ),
                        ],
                    ),
                ]
            )
            .Containers(
                SingleContainerForRequest(
                    {
                        "cpu": "1",
                    }
                ),
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    Status=NewStatus(
                        "flavor one doesn't match node affinity",
                        "flavor two doesn't match node affinity",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=["flavor one doesn't match node affinity"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Reasons=["flavor two doesn't match node affinity"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="NoMatchingFlavor",
        ),
    ),
    "multiple specs, fit different flavors": dict(
        wlPods=[
            MakePodSet("driver", 1).Request("cpu", "5").Obj(),
            MakePodSet("worker", 1).Request("cpu", "3").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="driver",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("5"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                ),
                dict(
                    Name="worker",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit),
                    ],
                    Count=1,
                ),
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(3_000),
                    FR(Flavor="two", Resource="cpu"): NewAmount(5_000),
                }
            ),
        ),
    ),
    "multiple specs, fits borrowing": dict(
        wlPods=[
            MakePodSet("driver", 1).Request("cpu", "4").Request("memory", "1Gi").Obj(),
            MakePodSet("worker", 1).Request("cpu", "6").Request("memory", "4Gi").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("2")
            .BorrowingLimit("98")
            .Append()
            .Resource("memory", "2Gi")
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("cpu", "198").Resource("memory", "198Gi").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="driver",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("4"),
                        "memory": MustParse("1Gi"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="default", Mode=Fit, Borrow=1),
                    ],
                    Count=1,
                ),
                dict(
                    Name="worker",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("6"),
                        "memory": MustParse("4Gi"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="default", Mode=Fit, Borrow=1),
                    ],
                    Count=1,
                ),
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="cpu"): NewAmount(10_000),
                    FR(Flavor="default", Resource="memory"): NewAmount(5 * Gi),
                }
            ),
        ),
    ),
    "not enough space to borrow": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "1").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .LendingLimit("0")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
        },
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (2) > maximum capacity (1)"
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (2) > maximum capacity (1)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="ExceedsMaxQuota",
        ),
    ),
    "past max, but can preempt in ClusterQueue": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("2")
            .BorrowingLimit("8")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "98").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 1 more needed"),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
                }
            ),
        ),
    ),
    "past min, but can preempt in ClusterQueue": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "2").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(1_000),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 1 more needed"),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
                }
            ),
        ),
    ),
    "past min, but can preempt in cohort and ClusterQueue": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "3").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "7").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(8_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 2 more needed"),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 2 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
                }
            ),
        ),
    ),
    "can only preempt flavors that match affinity": dict(
        wlPods=[
            MakePodSet("main", 1)
            .Containers(
                SingleContainerForRequest({"cpu": "2"}),
            )
            .NodeSelector({"type": "two"})
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(3_000),
            FR(Flavor="two", Resource="cpu"): NewAmount(3_000),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    Status=NewStatus(
                        "flavor one doesn't match node affinity",
                        "insufficient unused quota for cpu in flavor two, 1 more needed",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=["flavor one doesn't match node affinity"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                        dict(
                            Flavor="two",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor two, 1 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(2_000),
                }
            ),
        ),
    ),
    "each podset requires preemption on a different flavor": dict(
        wlPods=[
            MakePodSet("launcher", 1).Request("cpu", "2").Obj(),
            MakePodSet("workers", 10)
            .Request("cpu", "1")
            .Toleration(
                dict(
                    Key="instance",
                    Operator="Equal",
                    Value="spot",
                    Effect="NoSchedule",
                )
            )
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
            MakeFlavorQuotas("tainted").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(3_000),
            FR(Flavor="tainted", Resource="cpu"): NewAmount(3_000),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="launcher",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    Status=NewStatus(
                        "insufficient unused quota for cpu in flavor one, 1 more needed",
                        "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                        ),
                        dict(
                            Flavor="tainted",
                            Mode=NoFit,
                            Reasons=["untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"],
                            NoFitReason="NoMatchingFlavor",
                        ),
                    ],
                    Count=1,
                ),
                dict(
                    Name="workers",
                    Flavors={
                        "cpu": dict(Name="tainted", Mode=Preempt, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("10"),
                    },
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (2) + current podset request (10) > maximum capacity (4)",
                        "insufficient unused quota for cpu in flavor tainted, 3 more needed",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (2) + current podset request (10) > maximum capacity (4)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(
                            Flavor="tainted",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor tainted, 3 more needed"],
                        ),
                    ],
                    Count=10,
                ),
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
                    FR(Flavor="tainted", Resource="cpu"): NewAmount(10_000),
                }
            ),
        ),
    ),
    "resource not listed in clusterQueue": dict(
        wlPods=[
            MakePodSet("main", 1).Request("example.com/gpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "example.com/gpu": MustParse("2"),
                    },
                    Status=NewStatus("resource example.com/gpu unavailable in ClusterQueue"),
                    Count=1,
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="NoMatchingFlavor",
        ),
    ),
    "zero resource request not in clusterQueue should succeed": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "1").Request("example.com/gpu", "0").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("cpu", "4").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                        "example.com/gpu": MustParse("0"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="default", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="cpu"): NewAmount(1_000),
                }
            ),
        ),
        wantRepMode=Fit,
    ),
    "zero resource request defined in clusterQueue should get flavor assigned": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "1").Request("example.com/gpu", "0").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("cpu", "4").Resource("example.com/gpu", "4").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                        "example.com/gpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                        "example.com/gpu": MustParse("0"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="default", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="cpu"): NewAmount(1_000),
                    FR(Flavor="default", Resource="example.com/gpu"): NewAmount(0),
                }
            ),
        ),
        wantRepMode=Fit,
    ),
    "num pods fit": dict(
        wlPods=[
            MakePodSet("main", 3).Request("cpu", "1").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("pods", "3").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                        "pods": MustParse("3"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="default", Mode=Fit),
                    ],
                    Count=3,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="pods"): NewAmount(3),
                    FR(Flavor="default", Resource="cpu"): NewAmount(3_000),
                }
            ),
        ),
        wantRepMode=Fit,
    ),
    "num pods don't fit": dict(
        wlPods=[
            MakePodSet("main", 3).Request("cpu", "1").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("pods", "2").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "cpu": MustParse("3"),
                        "pods": MustParse("3"),
                    },
                    Status=NewStatus(
                        "insufficient quota for pods in flavor default, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="default",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for pods in flavor default, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=3,
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="ExceedsMaxQuota",
        ),
    ),
    "with reclaimable pods; reclaimablePods on": dict(
        wlPods=[
            MakePodSet("main", 5).Request("cpu", "1").Obj(),
        ],
        wlReclaimablePods=[
            dict(
                Name="main",
                Count=2,
            ),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("pods", "3").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                        "pods": MustParse("3"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="default", Mode=Fit),
                    ],
                    Count=3,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="pods"): NewAmount(3),
                    FR(Flavor="default", Resource="cpu"): NewAmount(3_000),
                }
            ),
        ),
        wantRepMode=Fit,
    ),
    "with reclaimable pods; reclaimablePods off": dict(
        wlPods=[
            MakePodSet("main", 5).Request("cpu", "1").Obj(),
        ],
        wlReclaimablePods=[
            dict(
                Name="main",
                Count=2,
            ),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("default").Resource("pods", "5").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="default", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("5"),
                        "pods": MustParse("5"),
                    },
                    Count=5,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="default", Resource="pods"): NewAmount(5),
                    FR(Flavor="default", Resource="cpu"): NewAmount(5_000),
                }
            ),
        ),
        wantRepMode=Fit,
        featureGates={
            ReclaimablePods: False,
        },
    ),
    "preempt before try next flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("pods", "10").Resource("cpu", "10").Obj(),
            MakeFlavorQuotas("two").Resource("pods", "10").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                        "pods": dict(Name="one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 1 more needed"),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="one", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "preempt before try next flavor; using WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("pods", "10").Resource("cpu", "10").Obj(),
            MakeFlavorQuotas("two").Resource("pods", "10").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                        "pods": dict(Name="one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 1 more needed"),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="one", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "preempt try next flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("pods", "10").Resource("cpu", "10").Obj(),
            MakeFlavorQuotas("two").Resource("pods", "10").Resource("cpu", "10").Obj(),
        )
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="two", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "borrow try next flavor, found the first flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(dict(WhenCanBorrow="TryNextFlavor", WhenCanPreempt="TryNextFlavor"))
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .BorrowingLimit("1")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("pods", "10").Resource("cpu", "1").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "1").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="one", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit, Borrow=1),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (9) > maximum capacity (1)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="one", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "borrow try next flavor, found the second flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(dict(WhenCanBorrow="TryNextFlavor", WhenCanPreempt="TryNextFlavor"))
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .BorrowingLimit("1")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("pods", "10").Resource("cpu", "10").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "1").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit, Borrow=1),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="two", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "borrow before try next flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .BorrowingLimit("1")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("pods", "10").Resource("cpu", "10").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "1").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Fit, TriedFlavorIdx=0),
                        "pods": dict(Name="one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit, Borrow=1),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="one", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .FlavorFungibility(
            dict(
                WhenCanBorrow="MayStopSearch",
                WhenCanPreempt="MayStopSearch",
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("12")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 10 more needed"),
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .FlavorFungibility(
            dict(
                WhenCanBorrow="MayStopSearch",
                WhenCanPreempt="MayStopSearch",
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("12")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 10 more needed"),
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .FlavorFungibility(
            dict(
                WhenCanBorrow="MayStopSearch",
                WhenCanPreempt="MayStopSearch",
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 10 more needed"),
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .FlavorFungibility(
            dict(
                WhenCanBorrow="MayStopSearch",
                WhenCanPreempt="MayStopSearch",
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 10 more needed"),
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .FlavorFungibility(
            dict(
                WhenCanBorrow="TryNextFlavor",
                WhenCanPreempt="MayStopSearch",
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("12")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit, Borrow=1),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor,WhenCanPreempt=MayStopSearch": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .FlavorFungibility(
            dict(
                WhenCanBorrow="TryNextFlavor",
                WhenCanPreempt="MayStopSearch",
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("12")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit, Borrow=1),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed, but borrowingLimit exceeds the quota available in the cohort": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("12")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "11").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        wantRepMode=NoFit,
        wantAssignment=dict(
            Usage=dict(Quota={}),
            PodSets=[
                dict(
                    Name="main",
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (12) > maximum capacity (11)"
                    ),
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (12) > maximum capacity (11)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=1,
                ),
            ],
            NoFitReason="ExceedsMaxQuota",
        ),
    ),
    "lend try next flavor, found the second flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(
            dict(WhenCanBorrow="TryNextFlavor", WhenCanPreempt="TryNextFlavor"),
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .LendingLimit("1")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .LendingLimit("0")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "1").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit, Borrow=1),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="two", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "lend try next flavor, found the first flavor": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(dict(WhenCanBorrow="TryNextFlavor", WhenCanPreempt="TryNextFlavor"))
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .LendingLimit("1")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("1")
            .LendingLimit("0")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "1").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Fit, TriedFlavorIdx=-1),
                        "pods": dict(Name="one", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(Flavor="one", Mode=Fit, Borrow=1),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (9) > maximum capacity (1)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                    ],
                    Count=1,
                )
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="one", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("2")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("2")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").ResourceQuotaWrapper("cpu").NominalQuota("2").Append().Obj(),
            MakeFlavorQuotas("two").ResourceQuotaWrapper("cpu").NominalQuota("2").Append().Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("NoCandidates", 0),
        },
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("NoCandidates"),
                            Reasons=["insufficient unused quota for cpu in flavor one, 2 more needed"],
                        ),
                        dict(Flavor="two", Mode=Fit, Borrow=1),
                    ],
                    Count=1,
                )
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(2_000),
                }
            ),
        ),
    ),
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits); using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "2").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .Preemption(
            dict(
                ReclaimWithinCohort="LowerPriority",
                BorrowWithinCohort=dict(
                    Policy="LowerPriority",
                ),
            )
        )
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("2")
            .Append()
            .Obj(),
            MakeFlavorQuotas("two")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("0")
            .BorrowingLimit("2")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").ResourceQuotaWrapper("cpu").NominalQuota("2").Append().Obj(),
            MakeFlavorQuotas("two").ResourceQuotaWrapper("cpu").NominalQuota("2").Append().Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("NoCandidates", 0),
        },
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("2"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("NoCandidates"),
                            Reasons=["insufficient unused quota for cpu in flavor one, 2 more needed"],
                        ),
                        dict(Flavor="two", Mode=Fit, Borrow=1),
                    ],
                    Count=1,
                )
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(2_000),
                }
            ),
        ),
    ),
    "quota exhausted, but can preempt in cohort and ClusterQueue": dict(
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "9").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .Resource("pods", "10")
            .ResourceQuotaWrapper("cpu")
            .NominalQuota("10")
            .LendingLimit("0")
            .Append()
            .Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        clusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(2_000),
        },
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("pods", "0").Resource("cpu", "0").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=-1),
                        "pods": dict(Name="one", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("9"),
                        "pods": MustParse("1"),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 1 more needed"),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Borrowing=1,
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(9_000),
                    FR(Flavor="one", Resource="pods"): NewAmount(1),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any": dict(
        enableFairSharing=True,
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(dict(ReclaimWithinCohort="Any"))
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 10 more needed"),
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": dict(
        enableFairSharing=True,
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(dict(ReclaimWithinCohort="Any"))
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("Preempt", 1),
        },
        wantRepMode=Preempt,
        wantAssignment=dict(
            Borrowing=1,
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Preempt, TriedFlavorIdx=0),
                    },
                    Status=NewStatus("insufficient unused quota for cpu in flavor one, 10 more needed"),
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Preempt,
                            PreemptionPossibility=new("Preempt"),
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                        ),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never": dict(
        enableFairSharing=True,
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(dict(ReclaimWithinCohort="Never"))
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("NoCandidates", 0),
        },
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                            NoFitReason="WaitingForQuota",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": dict(
        enableFairSharing=True,
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "12").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .Preemption(dict(ReclaimWithinCohort="Never"))
        .FlavorFungibility(dict(WhenCanBorrow="MayStopSearch", WhenCanPreempt="MayStopSearch"))
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "0").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueue=MakeClusterQueue("test-secondary-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "12").Obj(),
        )
        .Cohort("test-cohort")
        .Obj(),
        secondaryClusterQueueUsage={
            FR(Flavor="one", Resource="cpu"): NewAmount(10_000),
        },
        simulationResult={
            FR(Flavor="one", Resource="cpu"): SimResult("NoCandidates", 0),
        },
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("12"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Borrow=1,
                            Reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                            NoFitReason="WaitingForQuota",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(12_000),
                }
            ),
        ),
    ),
    "workload slice preemption fits in the original workload resource flavor": dict(
        featureGates={ElasticJobsViaWorkloadSlices: True},
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "3").Request("memory", "10Mi").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "3").Resource("memory", "1Gi").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Resource("memory", "2Gi").Obj(),
        )
        .Obj(),
        preemptWorkloadSlice=dict(
            TotalRequests=[
                dict(
                    Name="main",
                    Requests=NewRequestsFromMap(
                        {
                            "cpu": 2000,
                            "memory": 10 * Mi,
                        }
                    ),
                    Flavors={
                        "cpu": "two",
                        "memory": "two",
                    },
                ),
            ],
        ),
        wantRepMode=Fit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="two", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("3"),
                        "memory": MustParse("10Mi"),
                    },
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "could not assign one flavor since the original workload is assigned: two",
                            ],
                            NoFitReason="NoMatchingFlavor",
                        ),
                        dict(Flavor="two", Mode=Fit),
                    ],
                    Count=1,
                )
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="two", Resource="cpu"): NewAmount(1_000),
                    FR(Flavor="two", Resource="memory"): NewAmount(0),
                }
            ),
        ),
    ),
    "workload slice preemption does not fit in the original workload resource flavor": dict(
        featureGates={ElasticJobsViaWorkloadSlices: True},
        wlPods=[
            MakePodSet("main", 1).Request("cpu", "3").Request("memory", "10Mi").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one")
            .Resource("cpu", "500m")
            .  # <-- does not fit after scale-up.
            Resource("memory", "1Gi")
            .Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "4").Resource("memory", "2Gi").Obj(),
        )
        .Obj(),
        preemptWorkloadSlice=dict(
            TotalRequests=[
                dict(
                    Name="main",
                    Requests=NewRequestsFromMap(
                        {
                            "cpu": 2000,
                            "memory": 10 * Mi,
                        }
                    ),
                    Flavors={
                        "cpu": "one",
                        "memory": "one",
                    },
                ),
            ],
        ),
        wantRepMode=NoFit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Requests={
                        "cpu": MustParse("3"),
                        "memory": MustParse("10Mi"),
                    },
                    Count=1,
                    Status=NewStatus(
                        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (1) > maximum capacity (500m)",
                        "could not assign two flavor since the original workload is assigned: one",
                        "could not assign two flavor since the original workload is assigned: one",
                    ),
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (1) > maximum capacity (500m)"
                            ],
                            NoFitReason="ExceedsMaxQuota",
                        ),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Reasons=[
                                "could not assign two flavor since the original workload is assigned: one"
                            ],
                            NoFitReason="NoMatchingFlavor",
                        ),
                    ],
                )
            ],
            Usage=dict(Quota={}),
            NoFitReason="ExceedsMaxQuota",
        ),
    ),
    "multiple TAS flavors assigned to different resources in the same PodSet leads to NoFit": dict(
        featureGates={
            TopologyAwareScheduling: True,
        },
        topologies=[
            MakeTopology("tas-topo-a").Levels("kubernetes.io/hostname").Obj(),
            MakeTopology("tas-topo-b").Levels("kubernetes.io/hostname").Obj(),
        ],
        wlPods=[
            MakePodSet("main", 1)
            .Request("cpu", "1")
            .Request("memory", "1Mi")
            .RequiredTopologyRequest("kubernetes.io/hostname")
            .Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("tas-a").Resource("cpu", "10").Obj(),
        )
        .ResourceGroup(
            MakeFlavorQuotas("tas-b").Resource("memory", "10Mi").Obj(),
        )
        .Obj(),
        wantRepMode=NoFit,
        wantAssignment=dict(
            PodSets=[
                dict(
                    Name="main",
                    Flavors={
                        "cpu": dict(Name="tas-a", Mode=Fit, TriedFlavorIdx=-1),
                        "memory": dict(Name="tas-b", Mode=Fit, TriedFlavorIdx=-1),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                        "memory": MustParse("1Mi"),
                    },
                    Count=1,
                    Status=dict(
                        err=dict(Flavors=["tas-a", "tas-b"]),
                    ),
                ),
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="tas-a", Resource="cpu"): NewAmount(1_000),
                    FR(Flavor="tas-b", Resource="memory"): NewAmount(Mi),
                }
            ),
        ),
    ),
    "multi-podset, one fits and another fails, fitting podset attempts skipped in resolveNoFitReason": dict(
        wlPods=[
            MakePodSet("fitting-podset", 1).Request("cpu", "1").NodeSelector({"type": "one"}).Obj(),
            MakePodSet("blocking-podset", 1).Request("cpu", "5").Obj(),
        ],
        clusterQueue=MakeClusterQueue("test-clusterqueue")
        .ResourceGroup(
            MakeFlavorQuotas("one").Resource("cpu", "2").Obj(),
            MakeFlavorQuotas("two").Resource("cpu", "2").Obj(),
        )
        .Obj(),
        wantRepMode=NoFit,
        wantAssignment=dict(
            NoFitReason="ExceedsMaxQuota",
            PodSets=[
                dict(
                    Name="fitting-podset",
                    Flavors={
                        "cpu": dict(Name="one", Mode=Fit, TriedFlavorIdx=0),
                    },
                    Requests={
                        "cpu": MustParse("1"),
                    },
                    Count=1,
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=Fit,
                        ),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            NoFitReason="NoMatchingFlavor",
                        ),
                    ],
                ),
                dict(
                    Name="blocking-podset",
                    Status=dict(
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (1) + current podset request (5) > maximum capacity (2)",
                            "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2)",
                        ],
                    ),
                    Requests={
                        "cpu": MustParse("5"),
                    },
                    Count=1,
                    FlavorAssignmentAttempts=[
                        dict(
                            Flavor="one",
                            Mode=NoFit,
                            Borrow=0,
                            NoFitReason="ExceedsMaxQuota",
                            Reasons=[
                                "insufficient quota for cpu in flavor one, previously considered podsets requests (1) + current podset request (5) > maximum capacity (2)",
                            ],
                        ),
                        dict(
                            Flavor="two",
                            Mode=NoFit,
                            Borrow=0,
                            NoFitReason="ExceedsMaxQuota",
                            Reasons=[
                                "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2)",
                            ],
                        ),
                    ],
                ),
            ],
            Usage=dict(
                Quota={
                    FR(Flavor="one", Resource="cpu"): NewAmount(1000),
                },
            ),
        ),
    ),
}


def _tas(case: dict) -> bool:
    return bool(case.get("topologies")) or TopologyAwareScheduling in (case.get("featureGates") or {})


@pytest.mark.parametrize("name", sorted(CASES))
def test_assign_flavors(name: str) -> None:
    if _tas(CASES[name]):
        pytest.skip("Topology Aware Scheduling is not modelled")
    if (CASES[name].get("featureGates") or {}).get(ReclaimablePods) is False:
        pytest.skip("the ReclaimablePods gate (beta, on by default) is always on in flexq")
    check(CASES[name])
