"""GKE's request validation: what the GKE API refuses, and with which error.

Owns: GKE-shaped errors (``CloudError``: HTTP status + Google status + message), parsing request bodies
into the typed v1 models with protobuf-JSON wording for unknown fields and bad values, and the semantic
checks on clusters and node pools (names, machine types, TPU topologies, flex-start, queued provisioning,
spot, autoscaling limits, multi-host slice sizes, accelerators, run durations, versions). Pure functions.

Messages follow GKE's where known (names regex, "Already exists", "Not found", unknown JSON fields); the
rest are written in its style and marked [inferred] where the exact wording was not found.
Must not import flexq.runtime, other domain packages or flexq.http.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_snake

from flexq.api import gke_catalog as catalog
from flexq.api.gke_models import RESERVATION_KEY, Cluster, NodePool, NodePoolAutoscaling
from flexq.errors import CloudError

__all__ = [
    "invalid",
    "not_found",
    "already_exists",
    "precondition",
    "parse_body",
    "check_cluster_name",
    "check_location",
    "check_labels",
    "check_size",
    "check_capacity",
    "node_capacity",
    "check_version_text",
    "check_cluster",
    "check_node_pool",
    "pool_model",
    "pool_hosts",
    "version_tuple",
    "version_key",
    "resolve_version",
    "SUPPORTED_MINOR_VERSIONS",
    "DEFAULT_VERSION",
    "DEFAULT_PATCHES",
    "FLEX_START_MIN_TPU",
    "FLEX_START_MIN_GPU",
]

M = TypeVar("M", bound=BaseModel)

SUPPORTED_MINOR_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35")
DEFAULT_VERSION = "1.34.1-gke.1829001"
# The patch a minor version given alone (``--cluster-version=1.33``) resolves to [twin choice: a recent patch
# of each minor, at or above every minimum below].
DEFAULT_PATCHES = {
    "1.31": "1.31.13-gke.1023000",
    "1.32": "1.32.9-gke.1108000",
    "1.33": "1.33.5-gke.1080000",
    "1.34": DEFAULT_VERSION,
    "1.35": "1.35.0-gke.1795000",
}
# Flex-start needs at least these versions (research/cloud.md §2.1, DWS-DOC).
FLEX_START_MIN_TPU = "1.33.0-gke.1712000"
FLEX_START_MIN_GPU = "1.32.2-gke.1652000"
_NAME = re.compile(r"^(?:[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?)$")
_LOCATION = re.compile(r"^[a-z]+-[a-z]+[0-9]+(-[a-z])?$")
_VERSION = re.compile(r"^(latest|-|\d+\.\d+(\.\d+(-gke\.\d+)?)?)$")
_DURATION = re.compile(r"^(\d+)(\.\d+)?s$")
MAX_RUN_SECONDS = 7 * 24 * 3600
# GKE's quotas and limits page: "Nodes per node pool zone: 1,000" (initial, fixed and autoscaled sizes alike).
MAX_NODES_PER_POOL_ZONE = 1000
RESERVED_SUBNET_ADDRESSES = 4  # GCE keeps the network, gateway, second-to-last and broadcast addresses


def invalid(message: str) -> CloudError:
    return CloudError(400, "INVALID_ARGUMENT", message)


def not_found(resource: str) -> CloudError:
    return CloudError(404, "NOT_FOUND", f"Not found: {resource}.")


def already_exists(resource: str) -> CloudError:
    return CloudError(409, "ALREADY_EXISTS", f"Already exists: {resource}.")


def precondition(message: str) -> CloudError:
    return CloudError(400, "FAILED_PRECONDITION", message)


def _proto_path(loc: tuple[Any, ...]) -> str:
    """A field path as protobuf JSON errors print it, from the request message (``node_pool.config``)."""
    parts = [to_snake(str(p)) if not isinstance(p, int) else f"[{p}]" for p in loc]
    return ".".join(parts).replace(".[", "[")


def parse_body(model: type[M], body: Any) -> M:
    """Validate a JSON body into ``model``; errors worded like the protobuf JSON parser GKE uses."""
    if not isinstance(body, dict):
        raise invalid("Invalid JSON payload received. Expected an object.")
    try:
        return model.model_validate(body)
    except ValidationError as err:
        e = err.errors(include_url=False)[0]
        loc = tuple(e["loc"])
        if e["type"] == "extra_forbidden":
            raise invalid(
                f'Invalid JSON payload received. Unknown name "{loc[-1]}" at '
                f"'{_proto_path(loc[:-1])}': Cannot find field."
            ) from None
        value = json.dumps(e.get("input"), default=str)
        raise invalid(f"Invalid value at '{_proto_path(loc)}', {value}: {e['msg']}") from None


def check_cluster_name(name: str | None, what: str = "cluster.name") -> str:
    if not name:
        raise (
            invalid(f"{what} must be specified.")
            if what != "cluster.name"
            else invalid("Cluster.name must be specified.")
        )
    if not _NAME.match(name):
        raise invalid(
            f"Invalid value for field '{what}': \"{name}\". Must be a match of regex "
            "'(?:[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?)' (only alphanumerics and '-' allowed, must start with a "
            "letter and end with an alphanumeric, and must be no longer than 40 characters)."
        )
    return name


def check_location(location: str) -> str:
    if not _LOCATION.match(location):
        raise invalid(f'Location "{location}" is not a valid zone or region.')  # [inferred]
    return location


def resolve_version(version: str | None) -> str:
    """The full version GKE runs for a requested one: the default for none / "latest", a minor's default patch."""
    if not version or version in ("latest", "-"):
        return DEFAULT_VERSION
    if version.count(".") == 1:
        return DEFAULT_PATCHES.get(version, DEFAULT_VERSION)
    return version


def version_key(version: str | None) -> tuple[int, int, int, int]:
    """(major, minor, patch, gke build) of a version, for comparisons ("1.33.0-gke.1712000" -> (1, 33, 0, 1712000))."""
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?", resolve_version(version))
    if m is None:
        return version_key(DEFAULT_VERSION)
    major, minor, patch, build = (int(g) if g else 0 for g in m.groups())
    return major, minor, patch, build


def version_tuple(version: str | None) -> tuple[int, int]:
    """(major, minor) of a GKE version string; the default version when unset or "latest"."""
    if not version or version in ("latest", "-"):
        version = DEFAULT_VERSION
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def check_labels(labels: dict[str, str]) -> None:
    """Resource labels follow Google Cloud's label rules: at most 64; keys start with a lowercase letter;
    keys and values use lowercase letters, digits, ``_`` and ``-``, up to 63 characters."""
    if len(labels) > 64:
        raise invalid(
            f"A resource can have at most 64 labels; {len(labels)} were given."
        )  # [inferred wording]
    for key, value in labels.items():
        if not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
            raise invalid(
                f'Invalid resource label "{key}": "{value}": keys must start with a lowercase letter, '
                "and keys and values may contain only lowercase letters, digits, '_' and '-' (at most "
                "63 characters)."
            )  # [inferred wording]


def check_version_text(version: str, what: str) -> None:
    """A requested version must be "latest", "-" or a version of a supported minor ("Master version ... is
    unsupported."; ``what`` is "Master" or "Node")."""
    if not _VERSION.match(version) or (
        version not in ("latest", "-") and ".".join(version.split(".")[:2]) not in SUPPORTED_MINOR_VERSIONS
    ):
        raise invalid(f'{what} version "{version}" is unsupported.')


def check_cluster(cluster: Cluster) -> None:
    """Checks on a CreateClusterRequest.cluster, before any node pool check."""
    check_cluster_name(cluster.name)
    if isinstance(cluster.autopilot, dict) and cluster.autopilot.get("enabled"):
        # [twin limit] Autopilot provisions nodes for each pod's requests (node auto-provisioning, compute
        # classes) and bills per pod; the twin models neither, so it refuses rather than pretend.
        raise invalid(
            "Autopilot clusters (autopilot.enabled, gcloud container clusters create-auto) are not "
            "supported by this GKE twin (flexq); create a Standard cluster with `gcloud container "
            "clusters create` instead."
        )
    if cluster.initial_cluster_version is not None:
        check_version_text(cluster.initial_cluster_version, "Master")
    if cluster.node_pools and (cluster.initial_node_count is not None or cluster.node_config is not None):
        raise invalid(
            "Cluster.initial_node_count and Cluster.node_config cannot be set together with "
            "Cluster.node_pools; set them on the node pools instead."
        )  # [inferred wording]
    if not cluster.node_pools and not cluster.initial_node_count:
        raise invalid("Cluster.initial_node_count must be greater than zero.")
    if cluster.initial_node_count is not None:
        check_size(cluster.initial_node_count, "Cluster.initial_node_count")
    names = [p.name for p in cluster.node_pools or []]
    if len(set(names)) != len(names):
        raise invalid("Node pool names must be unique within a cluster.")  # [inferred wording]


def pool_model(pool: NodePool) -> catalog.ProvisioningModel:
    cfg = pool.config
    if cfg is not None and cfg.flex_start:
        return catalog.FLEX_START
    if cfg is not None and (cfg.spot or cfg.preemptible):
        return catalog.SPOT
    return catalog.ON_DEMAND


def pool_hosts(pool: NodePool) -> int:
    """Nodes in one slice of the pool (1 unless it is a multi-host TPU slice pool)."""
    mt = catalog.machine_type((pool.config.machine_type if pool.config else None) or "e2-medium")
    topology = pool.placement_policy.tpu_topology if pool.placement_policy else None
    return catalog.hosts_per_slice(mt, topology)


def _duration_seconds(text: str, field: str) -> float:
    m = _DURATION.match(text)
    if not m:
        raise invalid(
            f"Invalid value at '{field}' (type.googleapis.com/google.protobuf.Duration), \"{text}\""
        )
    return float(m.group(1) + (m.group(2) or ""))


def check_node_pool(pool: NodePool, *, location: str, cluster_version: str | None) -> None:
    """Every semantic check GKE makes on a new node pool, in the order it reports them: 1. name, machine type
    and topology; 2. provisioning model (spot, flex-start, queued); 3. run duration and accelerators;
    4. autoscaling limits and slice sizes."""
    check_cluster_name(pool.name, "node_pool.name")
    cfg = pool.config
    machine = (cfg.machine_type if cfg else None) or "e2-medium"
    try:
        mt = catalog.machine_type(machine)
    except catalog.CatalogError:
        raise invalid(f'Invalid machine type "{machine}": it does not exist in zone "{location}".') from None
    topology = pool.placement_policy.tpu_topology if pool.placement_policy else None
    try:
        hosts = catalog.hosts_per_slice(mt, topology)
    except catalog.CatalogError as exc:
        raise invalid(str(exc)) from None
    auto = pool.autoscaling if pool.autoscaling and pool.autoscaling.enabled else None
    initial = pool.initial_node_count or 0
    if initial < 0:
        raise invalid("node_pool.initial_node_count must be non-negative.")
    check_size(initial, "node_pool.initial_node_count")
    surge = pool.upgrade_settings
    if surge is not None:
        for field, value in (("max_surge", surge.max_surge), ("max_unavailable", surge.max_unavailable)):
            if value is not None and value < 0:
                raise invalid(
                    f"node_pool.upgrade_settings.{field} must be non-negative."
                )  # [inferred wording]
    _check_provisioning(pool, mt, auto, initial, cluster_version)
    _check_config(pool, mt)
    if auto is not None:
        _check_autoscaling(auto, hosts, topology)
    if hosts > 1 and initial not in (0, hosts) and initial % hosts:
        raise invalid(
            f"A multi-host TPU slice node pool with topology {topology} has {hosts} nodes per slice; "
            f"initial_node_count must be 0 or a multiple of {hosts}, not {initial}."
        )


def _check_provisioning(
    pool: NodePool,
    mt: catalog.MachineType,
    auto: NodePoolAutoscaling | None,
    initial: int,
    cluster_version: str | None,
) -> None:
    cfg = pool.config
    flex, spot, preemptible = (
        bool(cfg and cfg.flex_start),
        bool(cfg and cfg.spot),
        bool(cfg and cfg.preemptible),
    )
    queued = bool(pool.queued_provisioning and pool.queued_provisioning.enabled)
    if spot and preemptible:
        raise invalid("Only one of spot or preemptible can be set on a node pool.")  # [inferred wording]
    if flex and (spot or preemptible):
        raise invalid("Flex-start cannot be combined with spot or preemptible VMs.")  # [inferred wording]
    if flex and mt.prices.flex_start is None:  # e.g. TPU v4, shared-core e2
        raise invalid(f'Flex-start is not supported for machine type "{mt.name}".')
    minimum = FLEX_START_MIN_TPU if mt.is_tpu else FLEX_START_MIN_GPU if mt.is_gpu else None
    if flex and minimum and version_key(cluster_version) < version_key(minimum):
        raise invalid(
            f"Flex-start for {'TPUs' if mt.is_tpu else 'GPUs'} requires GKE version {minimum} or later; "
            f"the cluster runs {resolve_version(cluster_version)}."
        )  # [inferred wording]
    if queued:
        if auto is None:
            raise invalid("Queued provisioning requires autoscaling to be enabled (--enable-autoscaling).")
        if initial != 0:
            raise invalid("Queued provisioning node pools must be created with 0 nodes (--num-nodes=0).")
        aff = cfg.reservation_affinity.consume_reservation_type if cfg and cfg.reservation_affinity else None
        if aff != "NO_RESERVATION":
            raise invalid(
                "Queued provisioning requires reservation affinity NO_RESERVATION "
                "(--reservation-affinity=none)."
            )
        if spot or preemptible:
            raise invalid("Queued provisioning cannot be used with spot or preemptible VMs.")
        # [inferred] on the tutorial's GKE 1.34, queued provisioning is the flex-start-with-queue mode.
        if not flex and version_tuple(cluster_version) >= (1, 34):
            raise invalid("Queued provisioning requires flex-start (--flex-start) on GKE 1.34 and later.")
    if flex and auto is None and initial == 0:
        raise invalid(
            "Flex-start node pools with no initial nodes require autoscaling to be enabled "
            "(--enable-autoscaling)."
        )  # [inferred wording]


def _check_config(pool: NodePool, mt: catalog.MachineType) -> None:
    cfg = pool.config
    aff = cfg.reservation_affinity if cfg else None
    # what gcloud sends for --reservation-affinity=specific --reservation=NAME
    if (
        aff is not None
        and aff.consume_reservation_type == "SPECIFIC_RESERVATION"
        and (aff.key != RESERVATION_KEY or len(aff.values or []) != 1)
    ):
        raise invalid(
            "node_pool.config.reservation_affinity: SPECIFIC_RESERVATION needs key "
            f'"{RESERVATION_KEY}" and the reservation\'s name as its one value '
            "(--reservation-affinity=specific --reservation=NAME)."
        )  # [inferred wording]
    if cfg and cfg.max_run_duration is not None:
        seconds = _duration_seconds(cfg.max_run_duration, "node_pool.config.max_run_duration")
        if seconds <= 0 or seconds > MAX_RUN_SECONDS:
            raise invalid(f"node_pool.config.max_run_duration must be between 1s and {MAX_RUN_SECONDS}s.")
    for acc in (cfg.accelerators if cfg else None) or []:
        if not mt.gpus:
            raise invalid(
                f'Accelerator type "{acc.accelerator_type}" is not supported with machine type "{mt.name}".'
            )
        if acc.accelerator_type != mt.gpu_type or (acc.accelerator_count or 0) != mt.gpus:
            raise invalid(
                f'Machine type "{mt.name}" has {mt.gpus} {mt.gpu_type} accelerators; the request '
                f"asks for {acc.accelerator_count} {acc.accelerator_type}."
            )


def _check_autoscaling(auto: NodePoolAutoscaling, hosts: int, topology: str | None) -> None:
    per_zone = auto.min_node_count is not None or auto.max_node_count is not None
    total = auto.total_min_node_count is not None or auto.total_max_node_count is not None
    if per_zone and total:
        raise invalid("Autoscaling limits: cannot specify both total and per zone limits.")
    lo = (auto.min_node_count if per_zone else auto.total_min_node_count) or 0
    hi = (auto.max_node_count if per_zone else auto.total_max_node_count) or 0
    if lo < 0 or hi < 0:
        raise invalid("Autoscaling limits must be non-negative.")
    if per_zone:
        check_size(hi, "Autoscaling limits: max_node_count")
    if hi < lo:
        raise invalid(
            f"Autoscaling limits are invalid: max_node_count ({hi}) must be greater than or equal "
            f"to min_node_count ({lo})."
        )
    if hi == 0:
        raise invalid("Autoscaling limits are invalid: max_node_count must be greater than zero.")
    if hosts > 1 and (hi % hosts or lo % hosts):
        raise invalid(
            f"Multi-host TPU slice node pools scale in whole slices of {hosts} nodes (topology "
            f"{topology}); min and max node counts must be multiples of {hosts}."
        )


def check_size(count: int, what: str) -> None:
    """A node count within GKE's 1,000 nodes per node pool per zone. [inferred wording]"""
    if count > MAX_NODES_PER_POOL_ZONE:
        raise invalid(
            f"{what} ({count}) exceeds the limit of {MAX_NODES_PER_POOL_ZONE} nodes per node pool per zone."
        )


def node_capacity(cluster_spec: dict[str, Any], node_range: str) -> tuple[int, str]:
    """How many nodes the cluster's IP ranges can hold, and why: each node takes an address of the node
    range (its subnetwork's primary range, less GCE's reserved four) and a /podIpv4CidrSize slice of the
    Pod range (``clusterIpv4Cidr``; default /14 with /24 per node: 1,024 nodes)."""
    import ipaddress

    given = cluster_spec.get("clusterIpv4Cidr") or "10.80.0.0/14"
    try:
        nodes = ipaddress.ip_network(node_range, strict=False)
        pods = ipaddress.ip_network(given, strict=False)
        per_node = int(
            cluster_spec.get("podIpv4CidrSize")
            or ((cluster_spec.get("ipAllocationPolicy") or {}).get("podIpv4CidrSize") or 24)
        )
    except (ValueError, TypeError):
        raise invalid(
            f'Invalid value for field "cluster.cluster_ipv4_cidr": "{given}" is not a valid IPv4 '
            f'CIDR range (node range "{node_range}").'
        ) from None
    by_nodes = nodes.num_addresses - RESERVED_SUBNET_ADDRESSES
    by_pods = 2 ** max(0, per_node - pods.prefixlen) if per_node >= pods.prefixlen else 0
    if by_pods < by_nodes:
        return by_pods, f"the Pod range {pods} with a /{per_node} per node holds {by_pods} nodes"
    return by_nodes, f"the node range {nodes} holds {by_nodes} nodes"


def check_capacity(requested: int, others: int, cluster_spec: dict[str, Any], node_range: str) -> None:
    """``requested`` more nodes beside ``others`` fit the cluster's IP ranges, or GKE's IP_SPACE_EXHAUSTED
    answer (as a refused request: the twin builds nothing). [inferred wording]"""
    cap, why = node_capacity(cluster_spec, node_range)
    if requested + others > cap:
        raise invalid(
            f"IP_SPACE_EXHAUSTED: the cluster cannot hold {requested + others} nodes "
            f"({requested} requested, {others} in its other node pools): {why}."
        )
