"""ray.io/v1 kinds served by the GKE Ray Operator add-on: RayJob and RayCluster.

Owns the models (KubeRay ``ray-operator/apis/ray/v1/{rayjob,raycluster}_types.go``: CRD defaults such as
``submissionMode: K8sJobMode``, ``backoffLimit: 0``, ``ttlSecondsAfterFinished: 0``, worker groups'
``replicas: 0``, ``minReplicas: 0``, ``maxReplicas: 2147483647``, ``numOfHosts: 1``; the ``managedBy`` CEL
rule) and what Kueue's RayJob/RayCluster webhooks refuse for jobs that carry ``kueue.x-k8s.io/queue-name``
(``pkg/controller/jobs/rayjob/rayjob_webhook.go``, ``raycluster/common.go`` ``ValidateCreate``). KubeRay's own
spec checks run in its controller (status ``ValidationFailed``), not here. No behaviour. Must not import
outside ``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool, field_validator

from flexq.api.base import Int32, Loose, Model, ObjectBase, check_dns1123_subdomain, field_error
from flexq.api.embedded import EmbeddedPodTemplateSpec
from flexq.api.registry import KindInfo, PrinterColumn
from flexq.api.wellknown import QUEUE_NAME_LABEL
from flexq.errors import Cause

GROUP = "ray.io"
QUEUE_LABEL = QUEUE_NAME_LABEL
ELASTIC_ANNOTATION = "kueue.x-k8s.io/elastic-job"
MAX_POD_SETS = 18  # Kueue jobframework.MaxPodSets
_MANAGED_BY = ("ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue")


def _check_managed_by(v: str | None) -> str | None:
    if v is not None and v not in _MANAGED_BY:
        raise field_error(
            "",
            "the managedBy field value must be either 'ray.io/kuberay-operator' or "
            "'kueue.x-k8s.io/multikueue'",
        )
    return v


class HeadGroupSpec(Model):
    """The head pod of a Ray cluster."""

    template: EmbeddedPodTemplateSpec
    ray_start_params: dict[str, str] | None = None
    service_type: str | None = None
    head_service: Loose | None = None
    enable_ingress: StrictBool | None = None
    ingress_options: Loose | None = None
    resources: dict[str, str] | None = None
    labels: dict[str, str] | None = None


class WorkerGroupSpec(Model):
    """A group of identical worker replicas; each replica is ``numOfHosts`` pods (one TPU slice)."""

    group_name: str
    replicas: Int32 = 0  # int32 fields of KubeRay's CRD (format: int32)
    min_replicas: Int32 = 0
    max_replicas: Int32 = 2147483647
    num_of_hosts: Int32 = 1
    idle_timeout_seconds: Int32 | None = None
    priority: Int32 | None = None
    suspend: StrictBool | None = None
    resources: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    ray_start_params: dict[str, str] | None = None
    template: EmbeddedPodTemplateSpec
    scale_strategy: Loose | None = None


class RayClusterSpec(Model):
    """A Ray cluster: one head group and any number of worker groups."""

    head_group_spec: HeadGroupSpec
    worker_group_specs: list[WorkerGroupSpec] | None = None
    enable_in_tree_autoscaling: StrictBool | None = None
    autoscaler_options: Loose | None = None
    ray_version: str | None = None
    suspend: StrictBool | None = None
    managed_by: str | None = None
    head_service_annotations: dict[str, str] | None = None
    gcs_fault_tolerance_options: Loose | None = None
    upgrade_strategy: Loose | None = None
    auth_options: Loose | None = None
    network_policy: Loose | None = None
    tls_options: Loose | None = None
    history_server_options: Loose | None = None

    _managed_by = field_validator("managed_by")(_check_managed_by)


class RayCluster(ObjectBase):
    """A RayCluster (namespaced)."""

    spec: RayClusterSpec
    status: Loose | None = None


class RayJobSpec(Model):
    """A Ray job: the entrypoint and the cluster it runs on."""

    entrypoint: str | None = None
    runtime_env_yaml: str | None = Field(default=None, alias="runtimeEnvYAML")
    ray_cluster_spec: RayClusterSpec | None = None
    cluster_selector: dict[str, str] | None = None
    shutdown_after_job_finishes: StrictBool | None = None
    ttl_seconds_after_finished: Int32 = 0
    suspend: StrictBool | None = None
    submission_mode: str = "K8sJobMode"
    active_deadline_seconds: Int32 | None = None
    pre_running_deadline_seconds: Int32 | None = Field(default=None, ge=1)
    backoff_limit: Int32 = 0
    submitter_pod_template: EmbeddedPodTemplateSpec | None = None
    submitter_config: Loose | None = None
    job_id: str | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: str | None = None
    metadata: dict[str, str] | None = None
    managed_by: str | None = None
    deletion_strategy: Loose | None = None

    _managed_by = field_validator("managed_by")(_check_managed_by)


class RayJob(ObjectBase):
    """A RayJob (namespaced)."""

    spec: RayJobSpec = Field(default_factory=RayJobSpec)
    status: Loose | None = None


# -- what Kueue's webhooks refuse ------------------------------------------------------------------


def _cluster_spec_causes(obj: dict, spec: dict, path: str) -> list[Cause]:
    """``raycluster.ValidateCreate``: autoscaling only with workload slices, pod set count, no ``head`` group."""
    errs: list[Cause] = []
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if spec.get("enableInTreeAutoscaling") and annotations.get(ELASTIC_ANNOTATION) != "true":
        errs.append(
            Cause(
                f"{path}.enableInTreeAutoscaling",
                "FieldValueInvalid",
                "Invalid value: true: a kueue managed job should only use autoscaling when workload "
                "slicing is enabled",
            )
        )
    workers = spec.get("workerGroupSpecs") or []
    if len(workers) + 1 > MAX_POD_SETS:
        errs.append(
            Cause(
                f"{path}.workerGroupSpecs",
                "FieldValueTooMany",
                f"Too many: {len(workers) + 1}: must have at most {MAX_POD_SETS} items",
            )
        )
    for i, group in enumerate(workers):
        if group.get("groupName") == "head":
            errs.append(
                Cause(
                    f"{path}.workerGroupSpecs[{i}].groupName",
                    "FieldValueForbidden",
                    'Forbidden: "head" is reserved for the head group',
                )
            )
    return errs


def _queue_name_causes(obj: dict, old: dict | None) -> list[Cause]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    name = labels.get(QUEUE_LABEL)
    path = f"metadata.labels[{QUEUE_LABEL}]"
    errs: list[Cause] = []
    if name:
        try:
            check_dns1123_subdomain(name)
        except Exception as exc:  # PydanticCustomError
            errs.append(Cause(path, "FieldValueInvalid", f'Invalid value: "{name}": {exc}'))
    if old is not None and not (obj.get("spec") or {}).get("suspend"):
        old_name = ((old.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
        if old_name != name:
            errs.append(
                Cause(path, "FieldValueInvalid", f'Invalid value: "{name or ""}": field is immutable')
            )
    return errs


def validate_rayjob(new: dict, old: dict | None) -> list[Cause]:
    """Kueue's RayJob webhook, for RayJobs with a queue name (``manageJobsWithoutQueueName: false``)."""
    if not ((new.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
        return [] if old is None else _queue_name_causes(new, old)
    spec = new.get("spec") or {}
    errs = _queue_name_causes(new, old)
    selector, cluster = spec.get("clusterSelector"), spec.get("rayClusterSpec")
    if selector and cluster is not None:
        return errs + [
            Cause(
                "spec.clusterSelector",
                "FieldValueInvalid",
                "Invalid value: " + _short(selector) + ": a kueue managed job should not use an "
                "existing cluster",
            )
        ]
    if selector:
        return errs
    if cluster is None:
        return errs + [
            Cause(
                "spec.rayClusterSpec",
                "FieldValueRequired",
                "Required value: rayClusterSpec is "
                "required for Kueue-managed jobs that don't use clusterSelector",
            )
        ]
    if not spec.get("shutdownAfterJobFinishes"):
        errs.append(
            Cause(
                "spec.shutdownAfterJobFinishes",
                "FieldValueInvalid",
                "Invalid value: false: a kueue managed job should delete the cluster after finishing",
            )
        )
    return errs + _cluster_spec_causes(new, cluster, "spec.rayClusterSpec")


def validate_raycluster(new: dict, old: dict | None) -> list[Cause]:
    """Kueue's RayCluster webhook, for RayClusters with a queue name."""
    if not ((new.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
        return []
    return _queue_name_causes(new, old) + _cluster_spec_causes(new, new.get("spec") or {}, "spec")


def mutate_on_create(new: dict, old: dict | None) -> dict:
    """Kueue's mutating webhook (``verbs=create``): a RayJob or RayCluster with a queue name starts suspended.

    ``ApplyDefaultForSuspend``: on create, a job carrying ``kueue.x-k8s.io/queue-name`` gets
    ``spec.suspend: true`` even when it said ``false``; Kueue unsuspends it on admission. Updates pass through.
    Returns a new dict (the argument is not changed).
    """
    if old is not None or not ((new.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
        return new
    if (new.get("metadata") or {}).get("deletionTimestamp"):
        return new
    return {**new, "spec": {**(new.get("spec") or {}), "suspend": True}}


def _short(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), sort_keys=True)


KINDS: list[KindInfo] = [
    KindInfo(
        GROUP,
        "RayJob",
        "rayjobs",
        {"v1": RayJob},
        categories=("all",),
        served_by_addon="RayOperator",
        validate=validate_rayjob,
        mutate=mutate_on_create,
        printer_columns=[
            PrinterColumn("job status", ".status.jobStatus"),
            PrinterColumn("deployment status", ".status.jobDeploymentStatus"),
            PrinterColumn("ray cluster name", ".status.rayClusterName"),
            PrinterColumn("start time", ".status.startTime"),
            PrinterColumn("end time", ".status.endTime"),
            PrinterColumn("age", ".metadata.creationTimestamp", "date"),
        ],
    ),
    KindInfo(
        GROUP,
        "RayCluster",
        "rayclusters",
        {"v1": RayCluster},
        categories=("all",),
        served_by_addon="RayOperator",
        validate=validate_raycluster,
        mutate=mutate_on_create,
        printer_columns=[
            PrinterColumn("desired workers", ".status.desiredWorkerReplicas", "integer"),
            PrinterColumn("available workers", ".status.availableWorkerReplicas", "integer"),
            PrinterColumn("cpus", ".status.desiredCPU"),
            PrinterColumn("memory", ".status.desiredMemory"),
            PrinterColumn("gpus", ".status.desiredGPU"),
            PrinterColumn("tpus", ".status.desiredTPU", priority=1),
            PrinterColumn("status", ".status.state"),
            PrinterColumn("age", ".metadata.creationTimestamp", "date"),
            PrinterColumn("head pod IP", ".status.head.podIP", priority=1),
            PrinterColumn("head service IP", ".status.head.serviceIP", priority=1),
        ],
    ),
]
