"""kueue.x-k8s.io/v1beta2 models (the storage version): schema types, enums, limits, defaults and CEL rules.

Owns one pydantic model per kind (ResourceFlavor, ClusterQueue, LocalQueue, Workload, AdmissionCheck,
ProvisioningRequestConfig, WorkloadPriorityClass, Cohort) and the building blocks the v1beta1 models reuse.
What Kueue checks in its validating webhooks (cross-field rules that need lists, duplicates, the old object)
lives in ``flexq.api.kueue_webhooks``. Field names, defaults and limits follow
``apis/kueue/v1beta2/*_types.go`` of Kueue. No behaviour. Must not import outside ``flexq.api``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StrictBool, field_validator, model_validator

from flexq.api.base import (
    DNS1123Label,
    DNS1123Subdomain,
    Int32,
    Int64,
    Labels,
    LabelSelector,
    Loose,
    MetaCondition,
    Model,
    ObjectBase,
    Quantity,
    ResourceList,
    Taint,
    Toleration,
    check_conditions,
    field_error,
)
from flexq.api.embedded import EmbeddedPodTemplateSpec, check_tolerations_cel

GROUP = "kueue.x-k8s.io"

FlavorRef = DNS1123Subdomain  # ResourceFlavorReference: DNS-1123 subdomain, at most 253 characters
CohortRef = DNS1123Subdomain
PodSetRef = DNS1123Label  # PodSetReference: DNS-1123 label, at most 63 characters
CheckRef = Annotated[str, Field(min_length=1, max_length=316)]
StopPolicy = Literal["None", "Hold", "HoldAndDrain"]
FungibilityPolicy = Literal["MayStopSearch", "TryNextFlavor"]
Tolerations8 = Annotated[list[Toleration] | None, Field(max_length=8), AfterValidator(check_tolerations_cel)]


class Status(Loose):
    """A status written by controllers: conditions typed (``metav1.Condition``'s schema rules, one per type),
    everything else kept as written."""

    conditions: Annotated[list[MetaCondition] | None, AfterValidator(check_conditions)] = Field(
        default=None, max_length=16
    )


# Status types as Kueue's Go types declare them: a /status write is checked against the kind's schema as a write
# of the object is (``admittedWorkloads: "many"`` is refused as the API server refuses it); fields the twin does
# not model are kept as written.
NonNegative32 = Annotated[int, Field(ge=0, le=2**31 - 1)]


class ResourceUsage(Loose):
    """``ResourceUsage``: a resource's used quota in a flavor, with what is borrowed."""

    name: str
    total: Quantity | None = None
    borrowed: Quantity | None = None


class FlavorUsage(Loose):
    """``FlavorUsage``."""

    name: FlavorRef
    resources: list[ResourceUsage] | None = Field(default=None, max_length=64)


class AdmissionFairSharingStatus(Loose):
    """``AdmissionFairSharingStatus``."""

    consumed_resources: ResourceList
    last_update: str


class FairSharingStatus(Loose):
    """``FairSharingStatus``."""

    weighted_share: Int64
    admission_fair_sharing_status: AdmissionFairSharingStatus | None = None


class ClusterQueueStatus(Status):
    """``ClusterQueueStatus``."""

    flavors_reservation: list[FlavorUsage] | None = Field(default=None, max_length=64)
    flavors_usage: list[FlavorUsage] | None = Field(default=None, max_length=64)
    pending_workloads: Int32 | None = None
    reserving_workloads: Int32 | None = None
    admitted_workloads: Int32 | None = None
    fair_sharing: FairSharingStatus | None = None


class LocalQueueResourceUsage(Loose):
    """``LocalQueueResourceUsage``."""

    name: str
    total: Quantity | None = None


class LocalQueueFlavorUsage(Loose):
    """``LocalQueueFlavorUsage``."""

    name: FlavorRef
    resources: list[LocalQueueResourceUsage] | None = Field(default=None, max_length=64)


class LocalQueueStatus(Status):
    """``LocalQueueStatus``."""

    pending_workloads: Int32 | None = None
    reserving_workloads: Int32 | None = None
    admitted_workloads: Int32 | None = None
    flavors_reservation: list[LocalQueueFlavorUsage] | None = Field(default=None, max_length=64)
    flavors_usage: list[LocalQueueFlavorUsage] | None = Field(default=None, max_length=64)
    fair_sharing: FairSharingStatus | None = None


class CohortStatus(Loose):
    """``CohortStatus``."""

    fair_sharing: FairSharingStatus | None = None


# -- ResourceFlavor -----------------------------------------------------------------------------------


class ResourceFlavorSpec(Model):
    """``spec`` of a ResourceFlavor: node labels, taints and tolerations of the flavor's nodes."""

    node_labels: Annotated[Labels, Field(max_length=8)] = None
    node_taints: list[Taint] | None = Field(default=None, max_length=8)
    tolerations: Tolerations8 = None
    topology_name: DNS1123Subdomain | None = None

    @model_validator(mode="after")
    def _topology_needs_labels(self) -> ResourceFlavorSpec:
        if self.topology_name and not self.node_labels:
            raise field_error("", "at least one nodeLabel is required when topology is set")
        return self


class ResourceFlavor(ObjectBase):
    """A ResourceFlavor (cluster-scoped)."""

    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


# -- quotas (shared by ClusterQueue and Cohort) --------------------------------------------------------


class ResourceQuota(Model):
    """One resource's quota in a flavor; ``name`` must equal the group's ``coveredResources[i]``."""

    name: str | None = None
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(Model):
    """A flavor of a resource group and its quotas, in ``coveredResources`` order."""

    name: FlavorRef
    resources: list[ResourceQuota] = Field(min_length=1, max_length=64)


class ResourceGroup(Model):
    """Resources governed together; the order of ``flavors`` is the order Kueue tries them."""

    covered_resources: list[str] = Field(min_length=1, max_length=64)
    flavors: list[FlavorQuotas] = Field(min_length=1, max_length=64)

    @model_validator(mode="after")
    def _same_count(self) -> ResourceGroup:
        if not all(len(f.resources) == len(self.covered_resources) for f in self.flavors):
            raise field_error("", "flavors must have the same number of resources as the coveredResources")
        return self


ResourceGroups = Annotated[list[ResourceGroup] | None, Field(max_length=16)]


def has_borrowing_limit(groups: list[ResourceGroup] | None) -> bool:
    """True when any quota in ``groups`` sets ``borrowingLimit`` (the CEL rule that needs a cohort)."""
    return any(r.borrowing_limit is not None for g in groups or [] for f in g.flavors for r in f.resources)


class FairSharing(Model):
    """Fair sharing weight."""

    weight: Quantity | None = None


# -- ClusterQueue ---------------------------------------------------------------------------------


class FlavorFungibility(Model):
    """Whether to try the next flavor when the current one can only borrow or preempt."""

    when_can_borrow: FungibilityPolicy = "MayStopSearch"
    when_can_preempt: FungibilityPolicy = "TryNextFlavor"
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None

    @model_validator(mode="after")
    def _preference(self) -> FlavorFungibility:
        if self.preference is not None and not (
            self.when_can_borrow == "TryNextFlavor" and self.when_can_preempt == "TryNextFlavor"
        ):
            raise field_error(
                "", "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor"
            )
        return self


class BorrowWithinCohort(Model):
    """Preemption while borrowing."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(Model):
    """Preemption policies of a ClusterQueue (all ``Never`` by default)."""

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: BorrowWithinCohort = Field(default_factory=BorrowWithinCohort)
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"

    @model_validator(mode="after")
    def _reclaim_never(self) -> ClusterQueuePreemption:
        if self.reclaim_within_cohort == "Never" and self.borrow_within_cohort.policy != "Never":
            raise field_error("", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
        return self


class AdmissionCheckStrategyRule(Model):
    """A check required for admission; ``onFlavors`` empty means every flavor."""

    name: CheckRef
    on_flavors: list[FlavorRef] | None = Field(default=None, max_length=64)


class AdmissionChecksStrategy(Model):
    """The admission checks of a ClusterQueue, per flavor."""

    admission_checks: list[AdmissionCheckStrategyRule] | None = Field(
        default=None, min_length=1, max_length=64
    )

    @field_validator("admission_checks")
    @classmethod
    def _unique(cls, v: list[AdmissionCheckStrategyRule] | None) -> list[AdmissionCheckStrategyRule] | None:
        return unique_by_name(v)


def unique_by_name(items: list[Any] | None) -> list[Any] | None:
    """A ``listType=map, listMapKey=name`` list: a repeated name is a Duplicate at that index."""
    seen: set[str] = set()
    for i, item in enumerate(items or []):
        if item.name in seen:
            raise field_error(f"[{i}]", f'Duplicate value: {{"name":"{item.name}"}}', "FieldValueDuplicate")
        seen.add(item.name)
    return items


class ClusterQueueSpecBase(Model):
    """The ClusterQueue fields both versions share."""

    resource_groups: ResourceGroups = None
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility = Field(default_factory=FlavorFungibility)
    preemption: ClusterQueuePreemption = Field(default_factory=ClusterQueuePreemption)
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None
    admission_scope: Loose | None = None


class ConcurrentAdmissionConstraints(Model):
    """``constraints`` of a migration: the last flavor a running Workload may migrate up to."""

    last_acceptable_flavor_name: FlavorRef | None = None


class ConcurrentAdmissionMigration(Model):
    """``migration`` of a ConcurrentAdmissionPolicy (``mode`` is required by the CRD, no default)."""

    mode: Annotated[Literal["TryPreferredFlavors", "RetainFirstAdmission"], Field(max_length=253)]
    constraints: ConcurrentAdmissionConstraints | None = None


class ConcurrentAdmissionPolicy(Model):
    """``spec.concurrentAdmissionPolicy`` (alpha, gate ``ConcurrentAdmission``): one Variant Workload per flavor."""

    migration: ConcurrentAdmissionMigration


class ClusterQueueSpec(ClusterQueueSpecBase):
    """v1beta2 ClusterQueue spec."""

    cohort_name: CohortRef | None = None
    concurrent_admission_policy: ConcurrentAdmissionPolicy | None = None

    @model_validator(mode="after")
    def _borrowing_needs_cohort(self) -> ClusterQueueSpec:
        if not self.cohort_name and has_borrowing_limit(self.resource_groups):
            raise field_error("", "borrowingLimit must be nil when cohort is empty")
        return self


class ClusterQueue(ObjectBase):
    """A ClusterQueue (cluster-scoped)."""

    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus | None = None


# -- Cohort ---------------------------------------------------------------------------------------


class CohortSpec(Model):
    """A Cohort: a parent and quota owned by the cohort itself."""

    parent_name: CohortRef | None = None
    resource_groups: ResourceGroups = None
    fair_sharing: FairSharing | None = None


class Cohort(ObjectBase):
    """A Cohort (cluster-scoped)."""

    spec: CohortSpec = Field(default_factory=CohortSpec)
    status: CohortStatus | None = None


# -- LocalQueue -----------------------------------------------------------------------------------


class LocalQueueSpec(Model):
    """A namespaced queue pointing at a ClusterQueue (``clusterQueue`` is immutable)."""

    cluster_queue: DNS1123Subdomain | None = None
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None


class LocalQueue(ObjectBase):
    """A LocalQueue (namespaced)."""

    spec: LocalQueueSpec
    status: LocalQueueStatus | None = None


# -- Workload -------------------------------------------------------------------------------------


class PodSet(Model):
    """A group of identical pods of a workload."""

    name: PodSetRef = "main"
    template: EmbeddedPodTemplateSpec
    count: int = Field(default=1, ge=0, le=2**31 - 1)  # int32
    min_count: int | None = Field(default=None, ge=1, le=2**31 - 1)
    topology_request: Loose | None = None

    @model_validator(mode="after")
    def _min_count(self) -> PodSet:
        if self.min_count is not None and self.min_count > self.count:
            raise field_error("", "minCount should be positive and less or equal to count")
        return self


PodSets = Annotated[list[PodSet], Field(min_length=1, max_length=18), AfterValidator(unique_by_name)]


class PriorityClassRef(Model):
    """Which priority class gave the workload its priority."""

    group: Literal["kueue.x-k8s.io", "scheduling.k8s.io"]
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: DNS1123Subdomain

    @model_validator(mode="after")
    def _kind_matches_group(self) -> PriorityClassRef:
        if self.group == "scheduling.k8s.io" and self.kind != "PriorityClass":
            raise field_error("", "only the PriorityClass kind is allowed for the scheduling.k8s.io group")
        if self.group == "kueue.x-k8s.io" and self.kind != "WorkloadPriorityClass":
            raise field_error(
                "", "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"
            )
        return self


class PreemptionGate(Model):
    """A gate that holds preemption (MultiKueue, ConcurrentAdmission)."""

    name: Annotated[str, Field(min_length=1, max_length=63)]


class WorkloadSpecBase(Model):
    """Workload fields both versions share."""

    pod_sets: PodSets
    queue_name: DNS1123Subdomain | None = None
    priority: int | None = None
    active: StrictBool = True
    maximum_execution_time_seconds: int | None = Field(default=None, ge=1)


class WorkloadSpec(WorkloadSpecBase):
    """v1beta2 Workload spec."""

    priority_class_ref: PriorityClassRef | None = None
    preemption_gates: list[PreemptionGate] | None = Field(default=None, max_length=8)

    @model_validator(mode="after")
    def _priority_with_ref(self) -> WorkloadSpec:
        if self.priority_class_ref is not None and self.priority is None:
            raise field_error("", "priority should not be nil when priorityClassRef is set")
        return self


class PodSetUpdate(Model):
    """What an admission check adds to a pod set's pods when it is Ready."""

    name: PodSetRef
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    node_selector: dict[str, str] | None = None
    tolerations: Tolerations8 = None


class AdmissionCheckState(Loose):
    """The state of one admission check on a workload."""

    name: CheckRef
    state: Literal["Pending", "Ready", "Retry", "Rejected"]
    last_transition_time: str | None = None
    message: str = Field(default="", max_length=32768)
    requeue_after_seconds: int | None = Field(default=None, ge=0)
    retry_count: int | None = Field(default=None, ge=0)
    pod_set_updates: list[PodSetUpdate] | None = Field(default=None, max_length=18)


class PodSetAssignment(Loose):
    """``PodSetAssignment`` (topology assignments kept as written)."""

    name: PodSetRef
    flavors: dict[str, FlavorRef] | None = None
    resource_usage: ResourceList | None = None
    count: NonNegative32 | None = None


class Admission(Loose):
    """``Admission``."""

    cluster_queue: DNS1123Subdomain
    pod_set_assignments: list[PodSetAssignment] = Field(max_length=18)


class RequeueState(Loose):
    """``RequeueState``."""

    count: NonNegative32 | None = None
    requeue_at: str | None = None


class ReclaimablePod(Loose):
    """``ReclaimablePod``."""

    name: PodSetRef
    count: NonNegative32


class PodSetRequest(Loose):
    """``PodSetRequest``."""

    name: PodSetRef
    resources: ResourceList | None = None


class SchedulingStatsEviction(Loose):
    """``WorkloadSchedulingStatsEviction``."""

    reason: str = Field(max_length=316)
    underlying_cause: str
    count: NonNegative32


class SchedulingStats(Loose):
    """``SchedulingStats``."""

    evictions: list[SchedulingStatsEviction] | None = Field(default=None, max_length=256)


class UnhealthyNode(Loose):
    """``UnhealthyNode``."""

    name: str = Field(max_length=63)


class PreemptionGateState(Loose):
    """``PreemptionGateState``."""

    name: str = Field(min_length=1, max_length=63)
    position: Literal["Closed", "Open"] | None = None
    last_transition_time: str | None = None


class WorkloadStatus(Status):
    """``WorkloadStatus``."""

    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    reclaimable_pods: list[ReclaimablePod] | None = Field(default=None, max_length=18)
    admission_checks: list[AdmissionCheckState] | None = Field(default=None, max_length=8)
    resource_requests: list[PodSetRequest] | None = Field(default=None, max_length=18)
    accumulated_past_execution_time_seconds: Int32 | None = None
    scheduling_stats: SchedulingStats | None = None
    nominated_cluster_names: list[Annotated[str, Field(max_length=256)]] | None = Field(
        default=None, max_length=20
    )
    cluster_name: str | None = Field(default=None, max_length=256)
    unhealthy_nodes: list[UnhealthyNode] | None = Field(default=None, max_length=8)
    preemption_gates: list[PreemptionGateState] | None = Field(default=None, max_length=8)


class Workload(ObjectBase):
    """A Workload (namespaced)."""

    spec: WorkloadSpec
    status: WorkloadStatus | None = None


# -- AdmissionCheck, ProvisioningRequestConfig, WorkloadPriorityClass ---------------------------------


class AdmissionCheckParametersReference(Model):
    """Where a check's parameters live (e.g. a ProvisioningRequestConfig)."""

    api_group: DNS1123Subdomain | None = None
    kind: (
        Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$")]
        | None
    ) = None
    name: DNS1123Label | None = None


class AdmissionCheckSpec(Model):
    """An admission check: its controller (immutable) and parameters."""

    controller_name: Annotated[str, Field(min_length=1, max_length=253)]
    parameters: AdmissionCheckParametersReference | None = None


class AdmissionCheck(ObjectBase):
    """An AdmissionCheck (cluster-scoped)."""

    spec: AdmissionCheckSpec
    status: Status | None = None


class RetryStrategy(Model):
    """How often and how late a failed ProvisioningRequest is retried."""

    backoff_limit_count: int = 3
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 1800


class PodSetUpdatesNodeSelector(Model):
    """A nodeSelector entry taken from the ProvisioningRequest's class details."""

    key: Annotated[
        str,
        Field(
            min_length=1,
            max_length=317,
            pattern=(
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                r"[A-Za-z0-9])$"
            ),
        ),
    ]
    value_from_provisioning_class_detail: Annotated[str, Field(min_length=1, max_length=32768)]


class ProvisioningRequestPodSetUpdates(Model):
    """Pod set updates applied when the ProvisioningRequest is provisioned."""

    node_selector: list[PodSetUpdatesNodeSelector] | None = Field(default=None, max_length=8)


class ProvisioningRequestConfigSpec(Model):
    """Parameters of the ProvisioningRequest admission check."""

    provisioning_class_name: DNS1123Subdomain
    parameters: dict[str, Annotated[str, Field(max_length=255)]] | None = Field(default=None, max_length=100)
    managed_resources: list[str] | None = Field(default=None, max_length=100)
    retry_strategy: RetryStrategy = Field(default_factory=RetryStrategy)
    pod_set_updates: ProvisioningRequestPodSetUpdates | None = None
    pod_set_merge_policy: (
        Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"] | None
    ) = None


class ProvisioningRequestConfig(ObjectBase):
    """A ProvisioningRequestConfig (cluster-scoped, no status)."""

    spec: ProvisioningRequestConfigSpec


class WorkloadPriorityClass(ObjectBase):
    """A WorkloadPriorityClass: ``value`` and ``description`` at the top level, no spec."""

    value: int = Field(ge=-2147483648, le=2147483647)
    description: str | None = Field(default=None, max_length=2048)
