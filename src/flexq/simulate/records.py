"""What the recorder keeps of a run, as plain data its readers share without loading the twin: ``JobRecord``
(one job of the traffic as the run saw it), ``WorkloadSeen`` (what was last seen of one Workload), the buckets
a job's wait goes into (``WAIT_BUCKETS``, see ``flexq.simulate.recorder``) and the Event reasons the run reads.
Must not import flexq.http."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from flexq.simulate.jobs import JobSpec

__all__ = ["JobRecord", "WorkloadSeen", "WAIT_BUCKETS", "TPU", "CAPACITY_REASONS", "START_ERRORS"]

WAIT_BUCKETS = (
    "quota",
    "dws",
    "scaleUp",
    "stockout",
    "poolMax",
    "pods",
    "podErrors",
    "evicted",
    "deactivated",
)
TPU = "google.com/tpu"
CAPACITY_REASONS = ("FailedScaleUp", "NotTriggerScaleUp")
# the kubelet's Warning Events when it cannot start a pod's containers (kube.podenv.start_blocker)
START_ERRORS = {
    "FailedMount": "FailedMount",
    "InspectFailed": "InvalidImageName",
    "Failed": "CreateContainerConfigError",
}


@dataclass(slots=True)  # one per job of the traffic (60,000 in Kueue's large-scale file): no __dict__ each
class JobRecord:
    spec: JobSpec
    submit: float
    cluster_queue: str = ""
    reserved: float | None = None
    admitted: float | None = None
    started: float | None = None
    finished: float | None = None
    outcome: str = ""
    flavors: str = ""
    evictions: int = 0
    preemptions: int = 0
    holding: set[str] = field(default_factory=set)  # workloads of this job holding quota now
    admitted_now: set[str] = field(default_factory=set)  # workloads of this job admitted now
    pending: bool = True
    closed: bool = False  # finished, or deactivated by Kueue with nobody to reactivate it
    deactivated: bool = False  # its Workload is deactivated now
    size: float = 0.0  # what it asks for of the goodput resource (TPU chips, else CPUs), all pod sets
    bucket: str | None = "quota"  # where its wait goes now (None: started, or finished)
    bucket_since: float = 0.0
    waits: dict[str, float] = field(default_factory=dict)  # bucket -> seconds
    unscheduled: set[str] = field(default_factory=set)  # its pods without a node
    refused: str = ""  # the cloud's refusal its pods met since the last admission (a capacity kind)
    refused_code: str = ""
    refused_pool: str = ""  # the node pool its refused pods asked for (their nodeSelector)
    lost_reason: str = ""  # Kueue's Evicted reason when it deactivated the job
    lost_message: str = ""
    pr_failed: Counter[str] = field(default_factory=Counter)  # ProvisioningRequest failures by reason
    quota_key: str = ""  # "flavor/resource" Kueue last said had no quota for it
    quota_waits: dict[str, float] = field(default_factory=dict)  # "flavor/resource" -> seconds waited
    refusals: list[tuple[float, str, int]] = field(default_factory=list)  # (time, pool, nodes) pool-max
    # flexq fallback and Kueue's preemption: per preemption, the fallback's moves of the job until it next
    # started; and how many Workloads Kueue had preempted the fallback sent back (undoing the preemption)
    after_preemption: list[int] = field(default_factory=list)
    undid_preemption: int = 0
    blocked: set[str] = field(default_factory=set)  # its pods the kubelet cannot start now
    start_errors: Counter[str] = field(default_factory=Counter)  # "Reason: the kubelet's message" -> Events
    # seconds its Workloads held quota while an admission check was in Retry (waiting out the check's back-off
    # before the eviction: Kueue 0.19; 0.20.7 evicts at once, kueue#18785), and the flavors they held
    retry_hold: float = 0.0
    retry_hold_flavors: set[str] = field(default_factory=set)
    check_evictions: int = 0  # evictions for an admission check in Retry (Kueue's reason AdmissionCheck)


@dataclass(slots=True)
class WorkloadSeen:
    """What the recorder last saw of one Workload: the state ``on_workload`` compares the new version with."""

    queued_at: float  # since when it has waited for admission (its creation, or its last eviction)
    reserved: bool = False
    admitted: bool = False
    since: float = 0.0  # when its quota was reserved
    usage: list[tuple[str, float]] = field(default_factory=list)  # ("cq/flavor/resource", quantity) it holds
    evict_lt: str | None = None  # lastTransitionTime of the Evicted condition last counted
    preempt_lt: str | None = None  # ... of the Preempted condition last counted
    ready: bool = False  # PodsReady seen
    seq: int = 0  # admissions so far (a bare Workload's run belongs to one)
    retry_since: float | None = None  # when an admission check went to Retry with the quota held
    preempted: bool = False
    fallback_moved: bool = False  # flexq's fallback made it inactive
