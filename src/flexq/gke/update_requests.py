"""Request bodies of the GKE calls that change an existing cluster: ``clusters.update`` (``ClusterUpdate``),
``setResourceLabels``, ``setLogging`` / ``setMonitoring``, ``updateMaster``, ``nodePools.setManagement``,
``nodePools.rollback`` and ``operations.cancel``.

Owns: the pydantic shapes of those v1 messages, with exactly the API's field names (list from
googlecloudsdk/generated_clients/apis/container/v1/container_v1_messages.py, gcloud 528). As in
``flexq.api.gke_models``, fields the twin acts on are typed and the rest are accepted as opaque JSON, so a field GKE
knows but the twin does not model reaches the backend (which refuses it by name) while a misspelt one is
refused by the parser ("Unknown name ..."). No behaviour.
Must not import flexq.runtime, other domain packages or flexq.http.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from flexq.api.gke_models import AddonsConfig, GkeModel, NodeManagement, NodePoolAutoscaling

__all__ = [
    "ClusterUpdate",
    "UpdateClusterRequest",
    "SetLabelsRequest",
    "SetLoggingServiceRequest",
    "SetMonitoringServiceRequest",
    "UpdateMasterRequest",
    "SetNodePoolManagementRequest",
    "RollbackNodePoolUpgradeRequest",
    "CancelOperationRequest",
    "TYPED_UPDATES",
]

Json = Any  # a field GKE accepts that the twin does not model: the backend refuses it by name


class ClusterUpdate(GkeModel):
    """``ClusterUpdate``: "Exactly one update can be applied to a cluster with each request"."""

    desired_node_pool_id: str | None = None
    desired_node_pool_autoscaling: NodePoolAutoscaling | None = None
    desired_addons_config: AddonsConfig | None = None
    desired_node_version: str | None = None
    desired_master_version: str | None = None
    desired_logging_service: str | None = None
    desired_monitoring_service: str | None = None
    desired_image_type: str | None = None
    desired_image: str | None = None
    desired_image_project: str | None = None
    etag: str | None = None
    # the rest of v1's ClusterUpdate: accepted by the parser, refused by the backend as not modelled
    additional_pod_ranges_config: Json = None
    desired_additional_ip_ranges_config: Json = None
    desired_anonymous_authentication_config: Json = None
    desired_authenticator_groups_config: Json = None
    desired_auto_ipam_config: Json = None
    desired_autopilot: Json = None
    desired_autopilot_insecure_kubelet_readonly_port_enabled: Json = None
    desired_autopilot_workload_policy_config: Json = None
    desired_binary_authorization: Json = None
    desired_cluster_autoscaling: Json = None
    desired_compliance_posture_config: Json = None
    desired_concurrent_ops_config: Json = None
    desired_containerd_config: Json = None
    desired_control_plane_endpoints_config: Json = None
    desired_cost_management_config: Json = None
    desired_database_encryption: Json = None
    desired_datapath_provider: Json = None
    desired_default_enable_private_nodes: Json = None
    desired_default_snat_status: Json = None
    desired_disable_l4_lb_firewall_reconciliation: Json = None
    desired_dns_config: Json = None
    desired_enable_cilium_clusterwide_network_policy: Json = None
    desired_enable_fqdn_network_policy: Json = None
    desired_enable_multi_networking: Json = None
    desired_enable_private_endpoint: Json = None
    desired_enterprise_config: Json = None
    desired_fleet: Json = None
    desired_gateway_api_config: Json = None
    desired_gcfs_config: Json = None
    desired_identity_service_config: Json = None
    desired_in_transit_encryption_config: Json = None
    desired_intra_node_visibility_config: Json = None
    desired_k8s_beta_apis: Json = Field(default=None, alias="desiredK8sBetaApis")
    desired_l4ilb_subsetting_config: Json = Field(default=None, alias="desiredL4ilbSubsettingConfig")
    desired_locations: Json = None
    desired_logging_config: Json = None
    desired_managed_config: Json = None
    desired_master_authorized_networks_config: Json = None
    desired_mesh_certificates: Json = None
    desired_monitoring_config: Json = None
    desired_network_performance_config: Json = None
    desired_network_tier_config: Json = None
    desired_node_kubelet_config: Json = None
    desired_node_pool_auto_config_kubelet_config: Json = None
    desired_node_pool_auto_config_linux_node_config: Json = None
    desired_node_pool_auto_config_network_tags: Json = None
    desired_node_pool_auto_config_resource_manager_tags: Json = None
    desired_node_pool_logging_config: Json = None
    desired_notification_config: Json = None
    desired_parent_product_config: Json = None
    desired_pod_autoscaling: Json = None
    desired_private_cluster_config: Json = None
    desired_private_ipv6_google_access: Json = None
    desired_rbac_binding_config: Json = None
    desired_release_channel: Json = None
    desired_resource_usage_export_config: Json = None
    desired_runtime_vulnerability_insight_config: Json = None
    desired_secret_manager_config: Json = None
    desired_security_posture_config: Json = None
    desired_service_external_ips_config: Json = None
    desired_shielded_nodes: Json = None
    desired_stack_type: Json = None
    desired_user_managed_keys_config: Json = None
    desired_vertical_pod_autoscaling: Json = None
    desired_workload_identity_config: Json = None
    enable_k8s_beta_apis: Json = Field(default=None, alias="enableK8sBetaApis")
    gke_auto_upgrade_config: Json = None
    removed_additional_pod_ranges_config: Json = None
    user_managed_keys_config: Json = None


# The ClusterUpdate fields the twin applies (the rest are refused as not modelled).
TYPED_UPDATES = (
    "desired_node_pool_id",
    "desired_node_pool_autoscaling",
    "desired_addons_config",
    "desired_node_version",
    "desired_master_version",
    "desired_logging_service",
    "desired_monitoring_service",
    "desired_image_type",
    "desired_image",
    "desired_image_project",
    "etag",
)


class _Named(GkeModel):
    """The deprecated addressing fields every v1 request still accepts next to ``name``."""

    name: str | None = None
    project_id: str | None = None
    zone: str | None = None
    cluster_id: str | None = None


class UpdateClusterRequest(_Named):
    update: ClusterUpdate | None = None


class SetLabelsRequest(_Named):
    resource_labels: dict[str, str] | None = None
    label_fingerprint: str | None = None


class SetLoggingServiceRequest(_Named):
    logging_service: str | None = None


class SetMonitoringServiceRequest(_Named):
    monitoring_service: str | None = None


class UpdateMasterRequest(_Named):
    master_version: str | None = None


class SetNodePoolManagementRequest(_Named):
    node_pool_id: str | None = None
    management: NodeManagement | None = None


class RollbackNodePoolUpgradeRequest(_Named):
    node_pool_id: str | None = None
    respect_pdb: bool | None = None


class CancelOperationRequest(GkeModel):
    name: str | None = None
    project_id: str | None = None
    zone: str | None = None
    operation_id: str | None = None
