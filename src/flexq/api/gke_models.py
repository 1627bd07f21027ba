"""GKE REST shapes (``container.googleapis.com/v1`` JSON, camelCase): Cluster, NodePool, Operation and requests.

Owns: the pydantic models of the GKE resources and request bodies the twin serves, with exactly the field
names of the v1 API. Fields the twin acts on are typed; the many others the API accepts (gcloud fills some
of them) are listed by name and kept as opaque JSON, so a body gcloud sends is accepted while a misspelt
field is refused as GKE refuses it ("Unknown name ..."). int64 fields accept JSON strings, as protobuf
JSON does (``"acceleratorCount": "8"``). No behaviour, no defaults beyond the API's own.

Field lists: googlecloudsdk/generated_clients/apis/container/v1/container_v1_messages.py (gcloud 528).
Must not import anything from flexq.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "GkeModel",
    "Int64",
    "NodeTaint",
    "AcceleratorConfig",
    "ReservationAffinity",
    "RESERVATION_KEY",
    "specific_reservation",
    "GcfsConfig",
    "NodeConfig",
    "NodePoolAutoscaling",
    "PlacementPolicy",
    "QueuedProvisioning",
    "NodeManagement",
    "UpgradeSettings",
    "StatusCondition",
    "NodePool",
    "RayOperatorConfig",
    "AddonsConfig",
    "NodeConfigDefaults",
    "NodePoolDefaults",
    "Cluster",
    "OperationError",
    "Operation",
    "CreateClusterRequest",
    "CreateNodePoolRequest",
    "SetNodePoolAutoscalingRequest",
    "SetNodePoolSizeRequest",
    "UpdateNodePoolRequest",
    "ListClustersResponse",
    "ListNodePoolsResponse",
    "ListOperationsResponse",
    "OperationStatus",
    "OperationType",
    "NodePoolStatus",
    "ClusterStatus",
]


class GkeModel(BaseModel):
    """Base of every GKE shape: camelCase aliases, unknown fields refused, serialized by alias."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", serialize_by_alias=True
    )


def _int64(v: Any) -> Any:
    """Protobuf JSON encodes int64 as a string; accept both (and refuse bools, which int() would take)."""
    if isinstance(v, bool):
        raise ValueError("Invalid value: expected an integer")
    if isinstance(v, str):
        try:
            v = int(v)
        except ValueError:
            raise ValueError(f'Invalid value at integer field: "{v}"') from None
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")) or not v.is_integer():
            raise ValueError(f"Invalid value: {v} is not an integer")
        v = int(v)
    if isinstance(v, int) and not -(2**63) <= v < 2**63:
        raise ValueError(f"Invalid value: {v} is out of range for an integer field")
    return v


Int64 = Annotated[int, BeforeValidator(_int64)]
Json = Any  # an API field the twin stores but does not interpret


def _proto_enum(numbers: dict[int, str]) -> BeforeValidator:
    """Proto enums arrive as names, or as numbers from clients asking ``enum-encoding=int``
    (google-cloud-container's REST transport): numbers become names."""

    def convert(v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool) and v in numbers:
            return numbers[v]
        return v

    return BeforeValidator(convert)


def _seq(*names: str) -> dict[int, str]:
    return dict(enumerate(names))


OperationStatus = Literal["STATUS_UNSPECIFIED", "PENDING", "RUNNING", "DONE", "ABORTING"]
OperationType = Literal[
    "TYPE_UNSPECIFIED",
    "CREATE_CLUSTER",
    "DELETE_CLUSTER",
    "UPGRADE_MASTER",
    "UPGRADE_NODES",
    "REPAIR_CLUSTER",
    "UPDATE_CLUSTER",
    "CREATE_NODE_POOL",
    "DELETE_NODE_POOL",
    "SET_NODE_POOL_MANAGEMENT",
    "AUTO_REPAIR_NODES",
    "AUTO_UPGRADE_NODES",
    "SET_LABELS",
    "SET_MASTER_AUTH",
    "SET_NODE_POOL_SIZE",
    "SET_NETWORK_POLICY",
    "SET_MAINTENANCE_POLICY",
    "RESIZE_CLUSTER",
    "FLEET_FEATURE_UPGRADE",
]
NodePoolStatus = Literal[
    "STATUS_UNSPECIFIED", "PROVISIONING", "RUNNING", "RUNNING_WITH_ERROR", "RECONCILING", "STOPPING", "ERROR"
]
ClusterStatus = Literal[
    "STATUS_UNSPECIFIED", "PROVISIONING", "RUNNING", "RECONCILING", "STOPPING", "ERROR", "DEGRADED"
]


class NodeTaint(GkeModel):
    key: str | None = None
    value: str | None = None
    effect: Annotated[
        Literal["EFFECT_UNSPECIFIED", "NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"] | None,
        _proto_enum(_seq("EFFECT_UNSPECIFIED", "NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE")),
    ] = None


class AcceleratorConfig(GkeModel):
    accelerator_count: Int64 | None = None
    accelerator_type: str | None = None
    gpu_driver_installation_config: Json = None
    gpu_partition_size: str | None = None
    gpu_sharing_config: Json = None


class ReservationAffinity(GkeModel):
    consume_reservation_type: Annotated[
        Literal[
            "UNSPECIFIED",
            "NO_RESERVATION",
            "ANY_RESERVATION",
            "SPECIFIC_RESERVATION",
            "ANY_RESERVATION_THEN_FAIL",
        ]
        | None,
        _proto_enum(
            _seq(
                "UNSPECIFIED",
                "NO_RESERVATION",
                "ANY_RESERVATION",
                "SPECIFIC_RESERVATION",
                "ANY_RESERVATION_THEN_FAIL",
            )
        ),
    ] = None
    key: str | None = None
    values: list[str] | None = None


# what gcloud sends for ``--reservation-affinity=specific --reservation=NAME``
RESERVATION_KEY = "compute.googleapis.com/reservation-name"


def specific_reservation(config: dict[str, Any] | None) -> str | None:
    """The reservation a node pool's ``config`` consumes by name (``reservationAffinity`` SPECIFIC_RESERVATION with
    the ``compute.googleapis.com/reservation-name`` key and one value), or None."""
    aff = (config or {}).get("reservationAffinity") or {}
    if aff.get("consumeReservationType") != "SPECIFIC_RESERVATION" or aff.get("key") != RESERVATION_KEY:
        return None
    values = aff.get("values") or []
    return str(values[0]) if len(values) == 1 else None


class GcfsConfig(GkeModel):
    enabled: bool | None = None


class NodeConfig(GkeModel):
    """``NodeConfig``: the fields the twin reads are typed; the rest are carried as JSON."""

    machine_type: str | None = None
    accelerators: list[AcceleratorConfig] | None = None
    flex_start: bool | None = None
    spot: bool | None = None
    preemptible: bool | None = None
    max_run_duration: str | None = None  # google.protobuf.Duration JSON, e.g. "3600s"
    reservation_affinity: ReservationAffinity | None = None
    labels: dict[str, str] | None = None
    taints: list[NodeTaint] | None = None
    oauth_scopes: list[str] | None = None
    gcfs_config: GcfsConfig | None = None
    disk_size_gb: Int64 | None = None
    disk_type: str | None = None
    image_type: str | None = None
    service_account: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, str] | None = None
    resource_labels: dict[str, str] | None = None
    local_ssd_count: Int64 | None = None
    min_cpu_platform: str | None = None
    node_group: str | None = None
    boot_disk_kms_key: str | None = None
    enable_confidential_storage: bool | None = None
    storage_pools: list[str] | None = None
    effective_cgroup_mode: str | None = None
    local_ssd_encryption_mode: str | None = None
    advanced_machine_features: Json = None
    boot_disk: Json = None
    confidential_nodes: Json = None
    containerd_config: Json = None
    ephemeral_storage_local_ssd_config: Json = None
    fast_socket: Json = None
    gpu_direct_config: Json = None
    gvnic: Json = None
    kubelet_config: Json = None
    linux_node_config: Json = None
    local_nvme_ssd_block_config: Json = None
    logging_config: Json = None
    node_image_config: Json = None
    resource_manager_tags: Json = None
    sandbox_config: Json = None
    secondary_boot_disk_update_strategy: Json = None
    secondary_boot_disks: Json = None
    shielded_instance_config: Json = None
    sole_tenant_config: Json = None
    windows_node_config: Json = None
    workload_metadata_config: Json = None


class NodePoolAutoscaling(GkeModel):
    enabled: bool | None = None
    min_node_count: Int64 | None = None
    max_node_count: Int64 | None = None
    total_min_node_count: Int64 | None = None
    total_max_node_count: Int64 | None = None
    location_policy: Annotated[
        Literal["LOCATION_POLICY_UNSPECIFIED", "BALANCED", "ANY"] | None,
        _proto_enum(_seq("LOCATION_POLICY_UNSPECIFIED", "BALANCED", "ANY")),
    ] = None
    autoprovisioned: bool | None = None


class PlacementPolicy(GkeModel):
    type: Annotated[
        Literal["TYPE_UNSPECIFIED", "COMPACT"] | None, _proto_enum(_seq("TYPE_UNSPECIFIED", "COMPACT"))
    ] = None
    tpu_topology: str | None = None
    policy_name: str | None = None


class QueuedProvisioning(GkeModel):
    enabled: bool | None = None


class NodeManagement(GkeModel):
    auto_repair: bool | None = None
    auto_upgrade: bool | None = None
    upgrade_options: Json = None


class UpgradeSettings(GkeModel):
    max_surge: Int64 | None = None
    max_unavailable: Int64 | None = None
    strategy: Annotated[
        Literal[
            "NODE_POOL_UPDATE_STRATEGY_UNSPECIFIED",
            "ROLLING",
            "BLUE_GREEN",
            "SURGE",
            "QUEUED_PROVISIONING",
            "SHORT_LIVED",
        ]
        | None,
        _proto_enum(
            {0: "NODE_POOL_UPDATE_STRATEGY_UNSPECIFIED", 2: "BLUE_GREEN", 3: "SURGE", 5: "SHORT_LIVED"}
        ),
    ] = None
    blue_green_settings: Json = None
    rolling_settings: Json = None


class StatusCondition(GkeModel):
    code: str | None = None
    message: str | None = None
    canonical_code: str | None = None


class NodePool(GkeModel):
    """``NodePool`` as GET returns it and as ``CreateNodePoolRequest.nodePool`` carries it."""

    name: str | None = None
    config: NodeConfig | None = None
    initial_node_count: Int64 | None = None
    locations: list[str] | None = None
    autoscaling: NodePoolAutoscaling | None = None
    management: NodeManagement | None = None
    placement_policy: PlacementPolicy | None = None
    queued_provisioning: QueuedProvisioning | None = None
    upgrade_settings: UpgradeSettings | None = None
    max_pods_constraint: Json = None
    network_config: Json = None
    best_effort_provisioning: Json = None
    autopilot_config: Json = None
    update_info: Json = None
    pod_ipv4_cidr_size: Int64 | None = None
    version: str | None = None
    instance_group_urls: list[str] | None = None
    self_link: str | None = None
    status: NodePoolStatus | None = None
    status_message: str | None = None
    conditions: list[StatusCondition] | None = None
    etag: str | None = None


class RayOperatorConfig(GkeModel):
    enabled: bool | None = None
    ray_cluster_logging_config: Json = None
    ray_cluster_monitoring_config: Json = None


class AddonsConfig(GkeModel):
    ray_operator_config: RayOperatorConfig | None = None
    horizontal_pod_autoscaling: Json = None
    http_load_balancing: Json = None
    kubernetes_dashboard: Json = None
    network_policy_config: Json = None
    cloud_run_config: Json = None
    config_connector_config: Json = None
    dns_cache_config: Json = None
    gce_persistent_disk_csi_driver_config: Json = None
    gcp_filestore_csi_driver_config: Json = None
    gcs_fuse_csi_driver_config: Json = None
    gke_backup_agent_config: Json = None
    high_scale_checkpointing_config: Json = None
    lustre_csi_driver_config: Json = None
    parallelstore_csi_driver_config: Json = None
    ray_config: Json = None
    stateful_ha_config: Json = None


class NodeConfigDefaults(GkeModel):
    gcfs_config: GcfsConfig | None = None
    containerd_config: Json = None
    logging_config: Json = None
    node_kubelet_config: Json = None


class NodePoolDefaults(GkeModel):
    node_config_defaults: NodeConfigDefaults | None = None


class Cluster(GkeModel):
    """``Cluster``. Typed where the twin acts; every other v1 field is accepted as opaque JSON."""

    name: str | None = None
    description: str | None = None
    initial_node_count: Int64 | None = None
    node_config: NodeConfig | None = None
    node_pools: list[NodePool] | None = None
    addons_config: AddonsConfig | None = None
    node_pool_defaults: NodePoolDefaults | None = None
    initial_cluster_version: str | None = None
    current_master_version: str | None = None
    current_node_version: str | None = None
    current_node_count: Int64 | None = None
    location: str | None = None
    locations: list[str] | None = None
    zone: str | None = None
    network: str | None = None
    subnetwork: str | None = None
    cluster_ipv4_cidr: str | None = None
    services_ipv4_cidr: str | None = None
    tpu_ipv4_cidr_block: str | None = None
    node_ipv4_cidr_size: Int64 | None = None
    logging_service: str | None = None
    monitoring_service: str | None = None
    enable_kubernetes_alpha: bool | None = None
    enable_tpu: bool | None = None
    resource_labels: dict[str, str] | None = None
    label_fingerprint: str | None = None
    endpoint: str | None = None
    self_link: str | None = None
    id: str | None = None
    create_time: str | None = None
    expire_time: str | None = None
    status: ClusterStatus | None = None
    status_message: str | None = None
    conditions: list[StatusCondition] | None = None
    instance_group_urls: list[str] | None = None
    etag: str | None = None
    satisfies_pzi: bool | None = None
    satisfies_pzs: bool | None = None
    # opaque v1 fields; declared explicitly so extra="forbid" still refuses misspellings
    alpha_cluster_feature_gates: Json = None
    anonymous_authentication_config: Json = None
    authenticator_groups_config: Json = None
    autopilot: Json = None
    autoscaling: Json = None
    binary_authorization: Json = None
    compliance_posture_config: Json = None
    concurrent_ops_config: Json = None
    confidential_nodes: Json = None
    control_plane_endpoints_config: Json = None
    cost_management_config: Json = None
    database_encryption: Json = None
    default_max_pods_constraint: Json = None
    enable_k8s_beta_apis: Json = Field(default=None, alias="enableK8sBetaApis")
    enterprise_config: Json = None
    fleet: Json = None
    gke_auto_upgrade_config: Json = None
    identity_service_config: Json = None
    ip_allocation_policy: Json = None
    legacy_abac: Json = None
    logging_config: Json = None
    maintenance_policy: Json = None
    managed_config: Json = None
    master_auth: Json = None
    master_authorized_networks_config: Json = None
    mesh_certificates: Json = None
    monitoring_config: Json = None
    network_config: Json = None
    network_policy: Json = None
    node_pool_auto_config: Json = None
    notification_config: Json = None
    parent_product_config: Json = None
    pod_autoscaling: Json = None
    private_cluster_config: Json = None
    rbac_binding_config: Json = None
    release_channel: Json = None
    resource_usage_export_config: Json = None
    runtime_vulnerability_insight_config: Json = None
    secret_manager_config: Json = None
    security_posture_config: Json = None
    shielded_nodes: Json = None
    tags: Json = None
    user_managed_keys_config: Json = None
    vertical_pod_autoscaling: Json = None
    workload_identity_config: Json = None


class OperationError(GkeModel):
    """``google.rpc.Status`` as carried in ``Operation.error``."""

    code: int | None = None
    message: str | None = None
    details: list[Json] | None = None


class Operation(GkeModel):
    name: str | None = None
    zone: str | None = None
    location: str | None = None
    operation_type: OperationType | None = None
    status: OperationStatus | None = None
    detail: str | None = None
    status_message: str | None = None
    self_link: str | None = None
    target_link: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    progress: Json = None
    error: OperationError | None = None
    cluster_conditions: list[StatusCondition] | None = None
    nodepool_conditions: list[StatusCondition] | None = None


class CreateClusterRequest(GkeModel):
    cluster: Cluster | None = None
    parent: str | None = None
    project_id: str | None = None
    zone: str | None = None


class CreateNodePoolRequest(GkeModel):
    node_pool: NodePool | None = None
    parent: str | None = None
    project_id: str | None = None
    zone: str | None = None
    cluster_id: str | None = None


class SetNodePoolAutoscalingRequest(GkeModel):
    autoscaling: NodePoolAutoscaling | None = None
    name: str | None = None
    project_id: str | None = None
    zone: str | None = None
    cluster_id: str | None = None
    node_pool_id: str | None = None


class SetNodePoolSizeRequest(GkeModel):
    node_count: Int64 | None = None
    name: str | None = None
    project_id: str | None = None
    zone: str | None = None
    cluster_id: str | None = None
    node_pool_id: str | None = None


class UpdateNodePoolRequest(GkeModel):
    """``UpdateNodePoolRequest`` (PUT .../nodePools/*): the twin applies the fields typed here."""

    name: str | None = None
    project_id: str | None = None
    zone: str | None = None
    cluster_id: str | None = None
    node_pool_id: str | None = None
    node_version: str | None = None
    image_type: str | None = None
    machine_type: str | None = None
    disk_size_gb: Int64 | None = None
    disk_type: str | None = None
    flex_start: bool | None = None
    queued_provisioning: QueuedProvisioning | None = None
    max_run_duration: str | None = None
    locations: list[str] | None = None
    labels: Json = None
    taints: Json = None
    tags: Json = None
    resource_labels: Json = None
    upgrade_settings: UpgradeSettings | None = None
    accelerators: list[AcceleratorConfig] | None = None
    etag: str | None = None
    confidential_nodes: Json = None
    containerd_config: Json = None
    fast_socket: Json = None
    gcfs_config: GcfsConfig | None = None
    gvnic: Json = None
    image: str | None = None
    image_project: str | None = None
    kubelet_config: Json = None
    linux_node_config: Json = None
    logging_config: Json = None
    node_network_config: Json = None
    resource_manager_tags: Json = None
    storage_pools: list[str] | None = None
    windows_node_config: Json = None
    workload_metadata_config: Json = None


class ListClustersResponse(GkeModel):
    clusters: list[Cluster] = Field(default_factory=list)
    missing_zones: list[str] | None = None


class ListNodePoolsResponse(GkeModel):
    node_pools: list[NodePool] = Field(default_factory=list)


class ListOperationsResponse(GkeModel):
    operations: list[Operation] = Field(default_factory=list)
    missing_zones: list[str] | None = None
