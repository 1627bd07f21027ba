"""What the recorder keeps of a run, as plain data its readers share without loading the twin: ``JobRecord``
(one job of the traffic as the run saw it), ``WorkloadSeen`` (what was last seen of one Workload), the buckets
a job's wait goes into (``WAIT_BUCKETS``, see ``flexq.simulate.recorder``) and the Event reasons the run reads.
Must not import flexq.http."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from types import MappingProxyType

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


NO_NAMES: frozenset[str] = frozenset()  # what an unset set field of a JobRecord reads as
NO_COUNTS: Mapping[str, int] = MappingProxyType({})
NO_SECONDS: Mapping[str, float] = MappingProxyType({})


@dataclass(slots=True)  # one per job of the traffic (60,000 in Kueue's large-scale file): no __dict__ each
class JobRecord:
    """One job as the run saw it. The fields that most jobs never fill (the pods it waits for, the refusals and
    failures it met, its preemptions...) are held only once written (``owned_*``; read, an unset one is a shared
    empty that cannot be changed); a set emptied again is dropped (``discard``): eleven empty containers
    per job took 1.8 KB each of 60,000 records."""

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
    pending: bool = True
    closed: bool = False  # finished, or deactivated by Kueue with nobody to reactivate it
    deactivated: bool = False  # its Workload is deactivated now
    size: float = 0.0  # what it asks for of the goodput resource (TPU chips, else CPUs), all pod sets
    bucket: str | None = "quota"  # where its wait goes now (None: started, or finished)
    bucket_since: float = 0.0
    waits: dict[str, float] = field(default_factory=dict)  # bucket -> seconds
    refused: str = ""  # the cloud's refusal its pods met since the last admission (a capacity kind)
    refused_code: str = ""
    refused_pool: str = ""  # the node pool its refused pods asked for (their nodeSelector)
    lost_reason: str = ""  # Kueue's Evicted reason when it deactivated the job
    lost_message: str = ""
    quota_key: str = ""  # "flavor/resource" Kueue last said had no quota for it
    undid_preemption: int = 0
    # seconds its Workloads held quota while an admission check was in Retry (waiting out the check's back-off
    # before the eviction: Kueue 0.19; 0.20.7 evicts at once, kueue#18785), and the flavors they held (below)
    retry_hold: float = 0.0
    check_evictions: int = 0  # evictions for an admission check in Retry (Kueue's reason AdmissionCheck)
    # held once written (the properties below read them)
    _holding: set[str] | None = None  # workloads of this job holding quota now
    _admitted_now: set[str] | None = None  # workloads of this job admitted now
    _unscheduled: set[str] | None = None  # its pods without a node
    _blocked: set[str] | None = None  # its pods the kubelet cannot start now
    _retry_hold_flavors: set[str] | None = None
    _pr_failed: Counter[str] | None = None  # ProvisioningRequest failures by reason
    _start_errors: Counter[str] | None = None  # "Reason: the kubelet's message" -> Events
    _quota_waits: dict[str, float] | None = None  # "flavor/resource" -> seconds waited
    _refusals: list[tuple[float, str, int]] | None = None  # (time, pool, nodes) pool-max
    # flexq fallback and Kueue's preemption: per preemption, the fallback's moves of the job until it next
    # started (the Workloads Kueue had preempted the fallback sent back: ``undid_preemption``)
    _after_preemption: list[int] | None = None

    @property
    def holding(self) -> AbstractSet[str]:
        return self._holding or NO_NAMES

    @property
    def admitted_now(self) -> AbstractSet[str]:
        return self._admitted_now or NO_NAMES

    @property
    def unscheduled(self) -> AbstractSet[str]:
        return self._unscheduled or NO_NAMES

    @property
    def blocked(self) -> AbstractSet[str]:
        return self._blocked or NO_NAMES

    @property
    def retry_hold_flavors(self) -> AbstractSet[str]:
        return self._retry_hold_flavors or NO_NAMES

    @property
    def pr_failed(self) -> Mapping[str, int]:
        return self._pr_failed or NO_COUNTS

    @property
    def start_errors(self) -> Mapping[str, int]:
        return self._start_errors or NO_COUNTS

    @property
    def quota_waits(self) -> Mapping[str, float]:
        return self._quota_waits or NO_SECONDS

    @property
    def refusals(self) -> Sequence[tuple[float, str, int]]:
        return self._refusals or ()

    @property
    def after_preemption(self) -> Sequence[int]:
        return self._after_preemption or ()

    def owned_set(self, name: str) -> set[str]:
        """The record's own set ``name`` (``holding``, ``blocked``...), made on first write."""
        own: set[str] | None = getattr(self, "_" + name)
        if own is None:
            own = set()
            setattr(self, "_" + name, own)
        return own

    def discard(self, name: str, item: str) -> None:
        """``item`` out of the set ``name``; the set dropped once empty."""
        own: set[str] | None = getattr(self, "_" + name)
        if own is not None:
            own.discard(item)
            if not own:
                setattr(self, "_" + name, None)

    def owned_counter(self, name: str) -> Counter[str]:
        """The record's own counter ``name`` (``pr_failed``, ``start_errors``), made on first write."""
        own: Counter[str] | None = getattr(self, "_" + name)
        if own is None:
            own = Counter()
            setattr(self, "_" + name, own)
        return own

    def owned_quota_waits(self) -> dict[str, float]:
        if self._quota_waits is None:
            self._quota_waits = {}
        return self._quota_waits

    def owned_refusals(self) -> list[tuple[float, str, int]]:
        if self._refusals is None:
            self._refusals = []
        return self._refusals

    def owned_after_preemption(self) -> list[int]:
        if self._after_preemption is None:
            self._after_preemption = []
        return self._after_preemption


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
