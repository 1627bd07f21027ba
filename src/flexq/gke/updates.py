"""What a change to an existing GKE cluster does, decided before anything is written: ``clusters.update``
(``ClusterUpdate``), labels and their fingerprint, node-pool autoscaling, and ``getServerConfig``.

Owns: ``plan_update(cluster, pools, update, ...) -> UpdatePlan`` — which of the update kinds a request is (node-pool
autoscaling, node-pool version, master version, addons, logging/monitoring service), the checks GKE makes
on it (one update per request, the node pool to act on, version rules), the operation type GKE names it
with, and the fields written at once versus when the operation finishes (an upgrade lands at its end);
``autoscaling_patch`` (shared with ``setAutoscaling``); ``label_fingerprint``; ``server_config``. Pure
functions over the stored JSON; they raise ``CloudError`` and change nothing.
Messages follow GKE's where known; the others are marked [inferred].
Must not import flexq.runtime, other domain packages or flexq.http.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from flexq.api.gke_models import NodePool, NodePoolAutoscaling
from flexq.gke.update_requests import TYPED_UPDATES, ClusterUpdate
from flexq.gke.validation import (
    DEFAULT_PATCHES,
    DEFAULT_VERSION,
    check_node_pool,
    check_version_text,
    invalid,
    not_found,
    resolve_version,
    version_key,
)

__all__ = [
    "UpdatePlan",
    "plan_update",
    "autoscaling_patch",
    "label_fingerprint",
    "server_config",
    "LOGGING_SERVICES",
    "MONITORING_SERVICES",
]

# labelFingerprint of a cluster without labels, as GKE reports it (seen in GKE's own fingerprint-mismatch
# errors: 'the expected one is "a9dc16a7"'); other label sets get a twin-computed 8-hex-digit hash.
EMPTY_LABELS_FINGERPRINT = "a9dc16a7"
LOGGING_SERVICES = ("logging.googleapis.com/kubernetes", "none")
MONITORING_SERVICES = ("monitoring.googleapis.com/kubernetes", "none")
_POOL_UPDATES = {"desired_node_pool_autoscaling", "desired_node_version", "desired_image_type"}
# update kinds: the fields each may set together (gcloud sends these groups in one ClusterUpdate)
_KINDS: list[tuple[str, set[str]]] = [
    ("autoscaling", {"desired_node_pool_autoscaling", "desired_node_pool_id"}),
    ("node-version", {"desired_node_version", "desired_node_pool_id", "desired_image_type"}),
    ("master-version", {"desired_master_version"}),
    ("addons", {"desired_addons_config"}),
    ("services", {"desired_logging_service", "desired_monitoring_service"}),
]


@dataclass
class UpdatePlan:
    """One accepted update: the operation to start and the JSON fields to merge (a None value removes the
    field) into the cluster's and the target pool's specs, at once (``*_now``) or when it finishes."""

    op_type: str
    pool: str | None = None
    cluster_now: dict[str, Any] = field(default_factory=dict)
    pool_now: dict[str, Any] = field(default_factory=dict)
    cluster_done: dict[str, Any] = field(default_factory=dict)
    pool_done: dict[str, Any] = field(default_factory=dict)


def _alias(name: str) -> str:
    info = ClusterUpdate.model_fields[name]
    return info.alias or name


def label_fingerprint(labels: dict[str, str] | None) -> str:
    """The ``labelFingerprint`` of a label set (GKE's value for none; a stable hash otherwise [twin choice])."""
    if not labels:
        return EMPTY_LABELS_FINGERPRINT
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:8]


def autoscaling_patch(
    pool_spec: dict[str, Any], autoscaling: NodePoolAutoscaling | None, location: str
) -> dict[str, Any]:
    """The pool fields a new autoscaling setting writes (``{"autoscaling": ...}``, None to remove it), after
    the checks ``setAutoscaling`` makes; enabled=false (gcloud's ``--no-enable-autoscaling``) removes it."""
    enabled = autoscaling is not None and bool(autoscaling.enabled)
    dumped = (
        autoscaling.model_dump(mode="json", by_alias=True, exclude_none=True)
        if enabled and autoscaling
        else None
    )
    merged = NodePool.model_validate({**pool_spec, "autoscaling": dumped})
    check_node_pool(
        merged.model_copy(update={"initial_node_count": 0}),
        location=location,
        cluster_version=pool_spec.get("version"),
    )
    if not enabled and (pool_spec.get("queuedProvisioning") or {}).get("enabled"):
        raise invalid("Queued provisioning requires autoscaling to be enabled (--enable-autoscaling).")
    return {"autoscaling": dumped}


def _kind_of(fields: set[str]) -> str:
    """Which single update the request is; GKE applies exactly one per request."""
    unmodelled = sorted(
        f for f in fields if f not in TYPED_UPDATES or f in ("desired_image", "desired_image_project")
    )
    if unmodelled:
        names = ", ".join(_alias(f) for f in unmodelled)
        raise invalid(
            f"ClusterUpdate field(s) {names} are not supported by this GKE twin (flexq); it applies "
            "desiredNodePoolAutoscaling, desiredNodeVersion, desiredMasterVersion, desiredAddonsConfig, "
            "desiredLoggingService and desiredMonitoringService. Nothing was changed."
        )
    if not fields or fields == {"desired_node_pool_id"}:
        raise invalid("Update must specify at least one field to update.")  # [inferred wording]
    for kind, allowed in _KINDS:
        if fields <= allowed and fields != {"desired_node_pool_id"}:
            if kind == "node-version" and not fields & {"desired_node_version", "desired_image_type"}:
                continue
            return kind
    names = ", ".join(_alias(f) for f in sorted(fields))
    raise invalid(
        f"Exactly one update can be applied to a cluster with each request; this one sets {names}."
    )  # [inferred wording, after the ClusterUpdate reference]


def _target_pool(update: ClusterUpdate, pools: dict[str, dict[str, Any]], cluster_path: str) -> str:
    if update.desired_node_pool_id:
        if update.desired_node_pool_id not in pools:
            raise not_found(f"{cluster_path}/nodePools/{update.desired_node_pool_id}")
        return update.desired_node_pool_id
    if len(pools) != 1:
        raise invalid("Node pool id must be specified if cluster has more than one node pool.")
    return next(iter(pools))


def _resolve(version: str, what: str) -> str:
    check_version_text(version, what)
    return resolve_version(version)


def _master_plan(cluster: dict[str, Any], version: str) -> UpdatePlan:
    current = cluster.get("currentMasterVersion", DEFAULT_VERSION)
    target = _resolve(version, "Master")
    cur, new = version_key(current), version_key(target)
    if new < cur:
        raise invalid(
            f'Master version "{target}" is older than the current version "{current}"; the master '
            "cannot be downgraded."
        )  # [inferred wording]
    if new[:2] > (cur[0], cur[1] + 1):
        raise invalid(
            f'Master version "{target}" is more than one minor version newer than the current version '
            f'"{current}"; upgrade one minor version at a time.'
        )  # [inferred wording]
    return UpdatePlan("UPGRADE_MASTER", cluster_done={"currentMasterVersion": target})


def _node_plan(cluster: dict[str, Any], pool: str, update: ClusterUpdate) -> UpdatePlan:
    master = cluster.get("currentMasterVersion", DEFAULT_VERSION)
    version = update.desired_node_version or "-"
    target = master if version == "-" else _resolve(version, "Node")
    if version_key(target) > version_key(master):
        raise invalid(
            f'Node version "{target}" must not be newer than the master version "{master}".'
        )  # [inferred wording]
    plan = UpdatePlan("UPGRADE_NODES", pool=pool, pool_done={"version": target})
    if update.desired_image_type:
        plan.pool_done["config"] = {"imageType": update.desired_image_type}
    return plan


def _services_plan(update: ClusterUpdate) -> UpdatePlan:
    plan = UpdatePlan("UPDATE_CLUSTER")
    for value, valid, key in (
        (update.desired_logging_service, LOGGING_SERVICES, "loggingService"),
        (update.desired_monitoring_service, MONITORING_SERVICES, "monitoringService"),
    ):
        if value is None:
            continue
        if value not in valid:
            raise invalid(
                f'Invalid value for {key}: "{value}"; expected one of {", ".join(valid)}.'
            )  # [inferred wording]
        plan.cluster_now[key] = value
    return plan


def plan_update(
    cluster: dict[str, Any],
    pools: dict[str, dict[str, Any]],
    update: ClusterUpdate,
    *,
    location: str,
    cluster_path: str,
) -> UpdatePlan:
    """The plan of one ``ClusterUpdate`` on ``cluster`` (its GKE JSON) with ``pools`` (name -> pool JSON):
    1. which update it is (one per request; unmodelled fields refused by name); 2. its target pool;
    3. its own checks; 4. what it writes, now and at the end."""
    fields = {name for name in update.model_fields_set if getattr(update, name) is not None} - {"etag"}
    kind = _kind_of(fields)
    if kind == "autoscaling":
        pool = _target_pool(update, pools, cluster_path)
        patch = autoscaling_patch(pools[pool], update.desired_node_pool_autoscaling, location)
        return UpdatePlan("UPDATE_CLUSTER", pool=pool, pool_now=patch)
    if kind == "node-version":
        return _node_plan(cluster, _target_pool(update, pools, cluster_path), update)
    if kind == "master-version":
        assert update.desired_master_version is not None
        return _master_plan(cluster, update.desired_master_version)
    if kind == "addons":
        assert update.desired_addons_config is not None
        desired = _dump(update.desired_addons_config)
        return UpdatePlan(
            "UPDATE_CLUSTER", cluster_now={"addonsConfig": {**(cluster.get("addonsConfig") or {}), **desired}}
        )
    return _services_plan(update)


def _dump(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return out


def server_config() -> dict[str, Any]:
    """``getServerConfig``: the versions the twin accepts (each supported minor's patch, newest first), its
    default, and the release channels over them [twin choice: RAPID offers every minor, REGULAR up to the
    default's minor, STABLE one minor behind]."""
    valid = sorted(DEFAULT_PATCHES.values(), key=version_key, reverse=True)
    default_minor = version_key(DEFAULT_VERSION)[:2]

    def channel(name: str, newest: tuple[int, int], default: str) -> dict[str, Any]:
        versions = [v for v in valid if version_key(v)[:2] <= newest]
        return {
            "channel": name,
            "defaultVersion": default,
            "validVersions": versions,
            "upgradeTargetVersion": versions[0],
        }

    stable_minor = (default_minor[0], default_minor[1] - 1)
    stable = DEFAULT_PATCHES.get(f"{stable_minor[0]}.{stable_minor[1]}", DEFAULT_VERSION)
    newest = version_key(valid[0])[:2]
    return {
        "defaultClusterVersion": DEFAULT_VERSION,
        "defaultImageType": "COS_CONTAINERD",
        "validImageTypes": ["COS_CONTAINERD", "UBUNTU_CONTAINERD"],
        "validMasterVersions": valid,
        "validNodeVersions": valid,
        "channels": [
            channel("RAPID", newest, valid[0]),
            channel("REGULAR", default_minor, DEFAULT_VERSION),
            channel("STABLE", stable_minor, stable),
        ],
    }
