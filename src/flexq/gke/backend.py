"""The GKE API backend (moto-style): clusters, node pools and long-running operations of one twin project.

Owns: creating, reading, listing, updating and deleting clusters and node pools the way
``container.googleapis.com/v1`` does — validation first (``flexq.gke.validation``; a refused request changes
nothing), then the resource in PROVISIONING / RECONCILING / STOPPING and a RUNNING ``Operation`` that
``settle(now)`` finishes once its duration (from the capacity profile's ``operations``) has passed; the
default pool; ``addonsConfig.rayOperatorConfig``; cluster deletion removing its pools. The operations and the stored
resources are ``flexq.gke.resources``' (its base class). State lives in a
``GkeStorage`` as plain dicts (``flexq.gke.storage``), so the same code runs over a dict or the project store.
Nodes are not created here: the cluster-side controllers read ``status.desiredNodeCount`` of each pool.

Must not import flexq.runtime, other domain packages or flexq.http.
"""

from __future__ import annotations

import copy
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.gke_models import (
    Cluster,
    CreateClusterRequest,
    CreateNodePoolRequest,
    NodePool,
    SetNodePoolAutoscalingRequest,
    SetNodePoolSizeRequest,
    UpdateNodePoolRequest,
)
from flexq.clock import format_time
from flexq.gke.resources import (
    API,
    LABEL_CLUSTER,
    LABEL_LOCATION,
    LABEL_PROJECT,
    GkeResources,
    merge,
)
from flexq.gke.storage import (
    CLUSTER,
    NODE_POOL,
    cluster_key,
    envelope,
    pool_key,
)
from flexq.gke.update_requests import (
    ClusterUpdate,
    RollbackNodePoolUpgradeRequest,
    SetLabelsRequest,
    SetLoggingServiceRequest,
    SetMonitoringServiceRequest,
    SetNodePoolManagementRequest,
    UpdateClusterRequest,
    UpdateMasterRequest,
)
from flexq.gke.updates import UpdatePlan, autoscaling_patch, label_fingerprint, server_config
from flexq.gke.validation import (
    DEFAULT_VERSION,
    already_exists,
    check_capacity,
    check_cluster,
    check_labels,
    check_location,
    check_node_pool,
    check_size,
    invalid,
    parse_body,
    pool_hosts,
    pool_model,
    precondition,
    resolve_version,
    version_key,
)

__all__ = ["GkeBackend", "cluster_settings", "node_range"]


def _dump(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return out


class GkeBackend(GkeResources):
    """All GKE resources of one project, as the API's verbs. Every public method takes ``now`` (epoch seconds)."""

    # -- clusters -------------------------------------------------------------------------------------------
    def create_cluster(self, project: str, location: str, body: Any, now: float) -> dict[str, Any]:
        check_location(location)
        req = parse_body(CreateClusterRequest, body)
        if req.cluster is None:
            raise invalid("Cluster must be specified.")
        cluster = req.cluster
        check_cluster(cluster)
        assert cluster.name is not None
        if self.storage.get(CLUSTER, cluster_key(project, location, cluster.name)) is not None:
            raise already_exists(self._cluster_path(project, location, cluster.name))
        version = resolve_version(cluster.initial_cluster_version)
        pools = list(cluster.node_pools or [])
        if not pools:  # the default pool from the legacy top-level fields
            pools = [
                NodePool(
                    name="default-pool",
                    config=cluster.node_config,
                    initial_node_count=cluster.initial_node_count,
                )
            ]
        for p in pools:
            check_node_pool(p, location=location, cluster_version=version)
        spec = self._cluster_spec(project, location, cluster, version, now)
        check_capacity(sum(p.initial_node_count or 0 for p in pools), 0, spec, node_range(spec))
        self.storage.put(
            envelope(
                CLUSTER,
                cluster_key(project, location, cluster.name),
                spec,
                {"createdAt": now},
                self._labels(project, location, cluster.name),
            )
        )
        for p in pools:
            self._put_pool(project, location, cluster.name, p, version, now, status="PROVISIONING")
        return self._operation(
            project,
            location,
            "CREATE_CLUSTER",
            f"clusters/{cluster.name}",
            now,
            self.op_times("create_cluster"),
            {"action": "cluster-created", "project": project, "location": location, "cluster": cluster.name},
        )

    def _cluster_spec(
        self, project: str, location: str, cluster: Cluster, version: str, now: float
    ) -> dict[str, Any]:
        spec = _dump(cluster)
        spec.pop("nodePools", None)
        spec.pop("nodeConfig", None)
        spec.pop("initialNodeCount", None)
        zonal = location.count("-") >= 2
        master = resolve_version(version)
        spec.update(
            {
                "location": location,
                "locations": [location] if zonal else [f"{location}-a", f"{location}-b"],
                "currentMasterVersion": master,
                "currentNodeVersion": master,
                "status": "PROVISIONING",
                "createTime": format_time(now),
                "selfLink": f"{API}/projects/{project}/{'zones' if zonal else 'locations'}/{location}/clusters/"
                f"{cluster.name}",
                "id": f"{self.rng.getrandbits(128):032x}",
                "network": spec.get("network", "default"),
                "subnetwork": spec.get("subnetwork", "default"),
                "clusterIpv4Cidr": spec.get("clusterIpv4Cidr", "10.80.0.0/14"),
                "servicesIpv4Cidr": spec.get("servicesIpv4Cidr", "34.118.224.0/20"),
                "loggingService": spec.get("loggingService", "logging.googleapis.com/kubernetes"),
                "monitoringService": spec.get("monitoringService", "monitoring.googleapis.com/kubernetes"),
                "endpoint": spec.get("endpoint", "127.0.0.1"),
                "masterAuth": spec.get("masterAuth", {"clusterCaCertificate": ""}),
                "releaseChannel": spec.get("releaseChannel", {"channel": "REGULAR"}),
            }
        )
        spec["zone"] = (
            location  # the deprecated field GKE still fills, with the region for a regional cluster
        )
        spec["labelFingerprint"] = label_fingerprint(spec.get("resourceLabels"))
        spec.setdefault("addonsConfig", {})
        return spec

    def get_cluster(self, project: str, location: str, cluster: str) -> dict[str, Any]:
        obj = self._get_cluster_obj(project, location, cluster)
        spec = copy.deepcopy(obj["spec"])
        pools = [p["spec"] for p in self._pools_of(project, location, cluster)]
        spec["nodePools"] = pools
        spec.setdefault("zone", spec["location"])  # clusters stored before the twin filled it
        spec.setdefault("labelFingerprint", label_fingerprint(spec.get("resourceLabels")))
        if pools:  # the oldest version any pool runs
            spec["currentNodeVersion"] = min(
                (p.get("version") or DEFAULT_VERSION for p in pools), key=version_key
            )
        spec["currentNodeCount"] = sum(
            p["status"].get("currentNodeCount", 0) for p in self._pools_of(project, location, cluster)
        )
        spec["instanceGroupUrls"] = [u for p in pools for u in p.get("instanceGroupUrls", [])]
        endpoint, ca = self.server() if self.server else (None, None)
        if endpoint:  # where get-credentials points kubectl: this cluster's part of the served Kubernetes API
            spec["endpoint"] = f"{endpoint}/clusters/{cluster}"
        if ca:
            spec["masterAuth"] = {**spec.get("masterAuth", {}), "clusterCaCertificate": ca}
        return spec

    # -- the other Google APIs gcloud consults on the way ----------------------------------------------------
    def get_project(self, project: str, version: str) -> dict[str, Any]:
        """Resource Manager ``projects.get`` (v1 and v3 shapes): every project id names this twin's project."""
        if version == "v3":
            return {
                "name": f"projects/{self.project_number}",
                "projectId": project,
                "state": "ACTIVE",
                "displayName": project,
            }
        return {
            "projectNumber": self.project_number,
            "projectId": project,
            "lifecycleState": "ACTIVE",
            "name": project,
        }

    def get_service(self, project: str, service: str) -> dict[str, Any]:
        """Service Usage ``services.get``: the APIs gcloud checks (container, containerfilesystem) are enabled."""
        return {
            "name": f"projects/{self.project_number}/services/{service}",
            "parent": f"projects/{self.project_number}",
            "config": {"name": service},
            "state": "ENABLED",
        }

    def list_clusters(self, project: str, location: str) -> dict[str, Any]:
        labels = (
            {LABEL_PROJECT: project}
            if location == "-"
            else {LABEL_PROJECT: project, LABEL_LOCATION: location}
        )
        out = []
        for c in self.storage.list(CLUSTER, labels):
            lab = c["metadata"]["labels"]
            out.append(self.get_cluster(project, lab[LABEL_LOCATION], lab[LABEL_CLUSTER]))
        return {"clusters": out}

    def delete_cluster(self, project: str, location: str, cluster: str, now: float) -> dict[str, Any]:
        obj = self._get_cluster_obj(project, location, cluster)
        if obj["spec"]["status"] == "STOPPING":
            raise precondition(f"Cluster {cluster} is already being deleted.")
        self._busy(project, location, cluster)
        self._set_status(CLUSTER, obj["metadata"]["name"], "STOPPING")
        for p in self._pools_of(project, location, cluster):
            self._set_status(NODE_POOL, p["metadata"]["name"], "STOPPING")
        return self._operation(
            project,
            location,
            "DELETE_CLUSTER",
            f"clusters/{cluster}",
            now,
            self.op_times("delete_cluster"),
            {"action": "cluster-deleted", "project": project, "location": location, "cluster": cluster},
        )

    # -- node pools -----------------------------------------------------------------------------------------
    def _put_pool(
        self, project: str, location: str, cluster: str, pool: NodePool, version: str, now: float, status: str
    ) -> dict[str, Any]:
        spec = _dump(pool)
        cfg = spec.setdefault("config", {})
        cfg.setdefault("machineType", "e2-medium")
        cfg.setdefault("diskSizeGb", 100)
        cfg.setdefault("diskType", "pd-balanced")
        cfg.setdefault("imageType", "COS_CONTAINERD")
        cfg.setdefault("oauthScopes", list(catalog.GCLOUD_OAUTH_SCOPES))
        cfg.setdefault("serviceAccount", "default")
        cfg.setdefault("metadata", {"disable-legacy-endpoints": "true"})
        spec.setdefault("initialNodeCount", 0)
        spec.setdefault("management", {"autoRepair": True, "autoUpgrade": True})
        queued = bool((spec.get("queuedProvisioning") or {}).get("enabled"))
        if queued or cfg.get("flexStart"):
            # research/cloud.md §2.1: DWS pools use the short-lived upgrade strategy
            spec["upgradeSettings"] = {**spec.get("upgradeSettings", {}), "strategy": "SHORT_LIVED"}
        spec.setdefault("upgradeSettings", {"maxSurge": 1, "strategy": "SURGE"})
        spec.setdefault("podIpv4CidrSize", 24)
        zonal = location.count("-") >= 2
        spec.setdefault("locations", [location] if zonal else [f"{location}-b"])
        spec["version"] = resolve_version(version)
        spec["status"] = status
        group = f"gke-{cluster}-{pool.name}-{self.rng.getrandbits(32):08x}"[:63]
        spec["selfLink"] = (
            f"{API}/projects/{project}/{'zones' if zonal else 'locations'}/{location}/clusters/"
            f"{cluster}/nodePools/{pool.name}"
        )
        spec["instanceGroupUrls"] = [
            f"https://www.googleapis.com/compute/v1/projects/{project}/zones/"
            f"{spec['locations'][0]}/instanceGroupManagers/{group}-grp"
        ]
        spec["etag"] = f"{self.rng.getrandbits(64):016x}"
        mt = catalog.machine_type(cfg["machineType"])
        twin = {
            "createdAt": now,
            "cluster": cluster,
            "instanceGroup": group,
            "desiredNodeCount": spec["initialNodeCount"],
            "hostsPerSlice": pool_hosts(pool),
            "provisioningModel": pool_model(pool),
            "queued": queued,
            "accelerator": mt.tpu.name if mt.tpu else mt.gpu_type,
            "zone": spec["locations"][0],
        }
        obj = envelope(
            NODE_POOL,
            pool_key(project, location, cluster, pool.name or ""),
            spec,
            twin,
            self._labels(project, location, cluster),
        )
        self.storage.put(obj)
        return obj

    def create_node_pool(
        self, project: str, location: str, cluster: str, body: Any, now: float
    ) -> dict[str, Any]:
        cobj = self._get_cluster_obj(project, location, cluster)
        req = parse_body(CreateNodePoolRequest, body)
        if req.node_pool is None:
            raise invalid("Node_pool must be specified.")
        pool = req.node_pool
        version = cobj["spec"].get("currentMasterVersion", DEFAULT_VERSION)
        check_node_pool(pool, location=location, cluster_version=version)
        assert pool.name is not None
        if self.storage.get(NODE_POOL, pool_key(project, location, cluster, pool.name)) is not None:
            raise already_exists(f"{self._cluster_path(project, location, cluster)}/nodePools/{pool.name}")
        if cobj["spec"]["status"] == "STOPPING":
            raise precondition(f"Cluster {cluster} is being deleted.")
        check_capacity(
            pool.initial_node_count or 0,
            self._fixed_nodes(project, location, cluster),
            cobj["spec"],
            node_range(cobj["spec"]),
        )
        self._busy(project, location, cluster)
        self._put_pool(project, location, cluster, pool, version, now, status="PROVISIONING")
        self._set_status(CLUSTER, cobj["metadata"]["name"], "RECONCILING")
        return self._operation(
            project,
            location,
            "CREATE_NODE_POOL",
            f"clusters/{cluster}/nodePools/{pool.name}",
            now,
            self.op_times("create_node_pool"),
            {
                "action": "pool-created",
                "project": project,
                "location": location,
                "cluster": cluster,
                "pool": pool.name,
            },
        )

    def get_node_pool(self, project: str, location: str, cluster: str, pool: str) -> dict[str, Any]:
        return copy.deepcopy(self._get_pool_obj(project, location, cluster, pool)["spec"])

    def list_node_pools(self, project: str, location: str, cluster: str) -> dict[str, Any]:
        self._get_cluster_obj(project, location, cluster)
        return {"nodePools": [p["spec"] for p in self._pools_of(project, location, cluster)]}

    def delete_node_pool(
        self, project: str, location: str, cluster: str, pool: str, now: float
    ) -> dict[str, Any]:
        obj = self._get_pool_obj(project, location, cluster, pool)
        self._busy(project, location, cluster)
        self._set_status(NODE_POOL, obj["metadata"]["name"], "STOPPING")
        return self._operation(
            project,
            location,
            "DELETE_NODE_POOL",
            f"clusters/{cluster}/nodePools/{pool}",
            now,
            self.op_times("delete_node_pool"),
            {
                "action": "pool-deleted",
                "project": project,
                "location": location,
                "cluster": cluster,
                "pool": pool,
            },
        )

    def set_autoscaling(
        self, project: str, location: str, cluster: str, pool: str, body: Any, now: float
    ) -> dict[str, Any]:
        obj = self._get_pool_obj(project, location, cluster, pool)
        req = parse_body(SetNodePoolAutoscalingRequest, body)
        merge(obj["spec"], autoscaling_patch(obj["spec"], req.autoscaling, location))
        return self._update_op(project, location, cluster, pool, obj, now)

    def set_size(
        self, project: str, location: str, cluster: str, pool: str, body: Any, now: float
    ) -> dict[str, Any]:
        obj = self._get_pool_obj(project, location, cluster, pool)
        req = parse_body(SetNodePoolSizeRequest, body)
        count = req.node_count if req.node_count is not None else -1
        hosts = obj["status"]["hostsPerSlice"]
        if count < 0:
            raise invalid("node_count must be specified and non-negative.")
        if obj["status"].get("queued"):
            raise precondition(
                "Node pools with queued provisioning cannot be resized; nodes are created only "
                "for ProvisioningRequests."
            )  # [inferred wording]
        if hosts > 1 and count % hosts:
            raise invalid(f"A multi-host TPU slice node pool is resized in whole slices of {hosts} nodes.")
        check_size(count, "node_count")
        cspec = self._get_cluster_obj(project, location, cluster)["spec"]
        check_capacity(
            count, self._fixed_nodes(project, location, cluster, but=pool), cspec, node_range(cspec)
        )
        obj["status"]["desiredNodeCount"] = count
        obj["status"]["resizeRequestedAt"] = now
        return self._update_op(project, location, cluster, pool, obj, now, "SET_NODE_POOL_SIZE")

    def update_node_pool(
        self, project: str, location: str, cluster: str, pool: str, body: Any, now: float
    ) -> dict[str, Any]:
        obj = self._get_pool_obj(project, location, cluster, pool)
        req = parse_body(UpdateNodePoolRequest, body)
        spec = copy.deepcopy(obj["spec"])
        cfg = spec.setdefault("config", {})
        if req.machine_type is not None:
            cfg["machineType"] = req.machine_type
        if req.flex_start is not None:
            cfg["flexStart"] = req.flex_start
        if req.max_run_duration is not None:
            cfg["maxRunDuration"] = req.max_run_duration
        if req.queued_provisioning is not None:
            spec["queuedProvisioning"] = _dump(req.queued_provisioning)
        # NodeLabels / NodeTaints / NetworkTags / ResourceLabels wrap the map or list in one field
        for attr, cfg_field, inner in (
            ("labels", "labels", "labels"),
            ("taints", "taints", "taints"),
            ("tags", "tags", "tags"),
            ("resource_labels", "resourceLabels", "labels"),
        ):
            value = getattr(req, attr)
            if value is not None:
                cfg[cfg_field] = value.get(inner) if isinstance(value, dict) else value
        merged = NodePool.model_validate(spec)
        check_node_pool(
            merged.model_copy(update={"initial_node_count": 0}),
            location=location,
            cluster_version=spec.get("version"),
        )
        obj["spec"] = spec
        obj["status"]["provisioningModel"] = pool_model(merged)
        obj["status"]["queued"] = bool(merged.queued_provisioning and merged.queued_provisioning.enabled)
        # "UPGRADE_NODES: A node pool is being updated. Despite calling this an upgrade, this includes most
        # forms of updates to node pools." (Operation.Type)
        return self._update_op(project, location, cluster, pool, obj, now, "UPGRADE_NODES")

    def update_cluster(
        self, project: str, location: str, cluster: str, body: Any, now: float
    ) -> dict[str, Any]:
        """``clusters.update`` (PUT): one ``ClusterUpdate`` (see ``flexq.gke.updates``)."""
        self._get_cluster_obj(project, location, cluster)
        req = parse_body(UpdateClusterRequest, body)
        if req.update is None:
            raise invalid("Update must be specified.")  # [inferred wording]
        plan = self._plan(project, location, cluster, req.update)
        return self._start_update(project, location, cluster, plan, now)

    def _set_one(
        self, project: str, location: str, cluster: str, update: ClusterUpdate, now: float
    ) -> dict[str, Any]:
        """The cluster verbs that set one field (``setLogging``, ``setMonitoring``, ``updateMaster``): one
        ``ClusterUpdate``, as ``clusters.update`` takes it."""
        return self._start_update(
            project, location, cluster, self._plan(project, location, cluster, update), now
        )

    def set_logging(self, project: str, location: str, cluster: str, body: Any, now: float) -> dict[str, Any]:
        req = parse_body(SetLoggingServiceRequest, body)
        return self._set_one(
            project, location, cluster, ClusterUpdate(desired_logging_service=req.logging_service or ""), now
        )

    def set_monitoring(
        self, project: str, location: str, cluster: str, body: Any, now: float
    ) -> dict[str, Any]:
        req = parse_body(SetMonitoringServiceRequest, body)
        update = ClusterUpdate(desired_monitoring_service=req.monitoring_service or "")
        return self._set_one(project, location, cluster, update, now)

    def update_master(
        self, project: str, location: str, cluster: str, body: Any, now: float
    ) -> dict[str, Any]:
        req = parse_body(UpdateMasterRequest, body)
        update = ClusterUpdate(desired_master_version=req.master_version or "-")
        return self._set_one(project, location, cluster, update, now)

    def set_resource_labels(
        self, project: str, location: str, cluster: str, body: Any, now: float
    ) -> dict[str, Any]:
        """``setResourceLabels``: replaces the labels, guarded by ``labelFingerprint`` as GKE guards them."""
        cobj = self._get_cluster_obj(project, location, cluster)
        req = parse_body(SetLabelsRequest, body)
        expected = label_fingerprint(cobj["spec"].get("resourceLabels"))
        if (req.label_fingerprint or "") != expected:
            raise precondition(
                "Labels could not be set due to fingerprint mismatch; try again with the proper "
                f'fingerprint: incorrect fingerprint supplied was "{req.label_fingerprint or ""}", '
                f'the expected one is "{expected}".'
            )
        labels = req.resource_labels or {}
        check_labels(labels)
        plan = UpdatePlan(
            "SET_LABELS",
            cluster_now={"resourceLabels": labels or None, "labelFingerprint": label_fingerprint(labels)},
        )
        return self._start_update(project, location, cluster, plan, now)

    def set_management(
        self, project: str, location: str, cluster: str, pool: str, body: Any, now: float
    ) -> dict[str, Any]:
        """``nodePools.setManagement``: auto-repair and auto-upgrade (gcloud sends the whole NodeManagement)."""
        self._get_pool_obj(project, location, cluster, pool)
        req = parse_body(SetNodePoolManagementRequest, body)
        if req.management is None:
            raise invalid("Management must be specified.")  # [inferred wording]
        plan = UpdatePlan(
            "SET_NODE_POOL_MANAGEMENT", pool=pool, pool_now={"management": _dump(req.management)}
        )
        return self._start_update(project, location, cluster, plan, now)

    def rollback_node_pool(
        self, project: str, location: str, cluster: str, pool: str, body: Any, now: float
    ) -> dict[str, Any]:
        """``nodePools.rollback``: after a canceled (or failed) upgrade, back to the version it left."""
        pobj = self._get_pool_obj(project, location, cluster, pool)
        parse_body(RollbackNodePoolUpgradeRequest, body if body is not None else {})
        interrupted = pobj["status"].get("interruptedUpgrade")
        if not interrupted:
            raise precondition(
                f"Node pool {pool} has no canceled or failed upgrade to roll back."
            )  # [inferred wording]
        plan = UpdatePlan("UPGRADE_NODES", pool=pool, pool_done={"version": interrupted["from"]})
        return self._start_update(project, location, cluster, plan, now)

    def get_server_config(self, project: str, location: str) -> dict[str, Any]:
        """``getServerConfig``: versions and release channels the twin offers (``flexq.gke.updates``)."""
        check_location(location)
        return server_config()


# The primary range of each region's subnet in an auto-mode "default" VPC, where GKE nodes get their internal
# IPs (GCE's auto-mode ranges, for the regions the catalog prices); other regions get a 10.x range of the same
# shape derived from the name [twin choice].
_AUTO_MODE_RANGES = {
    "us-central1": "10.128.0.0/20",
    "europe-west1": "10.132.0.0/20",
    "us-west1": "10.138.0.0/20",
    "asia-east1": "10.140.0.0/20",
    "us-east1": "10.142.0.0/20",
    "asia-northeast1": "10.146.0.0/20",
    "us-east4": "10.150.0.0/20",
    "europe-west4": "10.164.0.0/20",
    "us-west4": "10.182.0.0/20",
    "us-east5": "10.202.0.0/20",
    "us-south1": "10.206.0.0/20",
}


def node_range(spec: dict[str, Any]) -> str:
    """The IPv4 range the cluster's nodes take internal IPs from: its subnetwork's primary range."""
    policy = spec.get("ipAllocationPolicy") or {}
    given = policy.get("nodeIpv4CidrBlock") or policy.get("nodeIpv4Cidr")
    if given:
        return str(given)
    region = "-".join(spec["location"].split("-")[:2])
    if region in _AUTO_MODE_RANGES:
        return _AUTO_MODE_RANGES[region]
    return f"10.{128 + sum(region.encode()) % 112}.0.0/20"


def cluster_settings(cluster_obj: dict[str, Any]) -> dict[str, Any]:
    """What the twin needs to build the cluster's Kubernetes runtime (addons, location, version)."""
    spec = cluster_obj["spec"]
    addons = []
    if ((spec.get("addonsConfig") or {}).get("rayOperatorConfig") or {}).get("enabled"):
        addons.append("RayOperator")
    lab = cluster_obj["metadata"].get("labels") or {}
    return {
        "addons": addons,
        "gkeProject": lab.get(LABEL_PROJECT, ""),
        "gkeLocation": spec["location"],
        "gkeNodeCidr": node_range(spec),
        "gkeCluster": spec["name"],
        "gkeVersion": spec.get("currentMasterVersion", DEFAULT_VERSION),
    }
