"""cloud.google.com/v1 ComputeClass, the CRD GKE installs in every cluster (GKE ≥ 1.30.3-gke.1451000).

Owns the model of the fields the twin acts on (GKE's CRD reference, docs …/reference/crds/computeclass):
``priorities[]`` rules (``nodepools``, ``machineFamily`` / ``machineType``, ``minCores``, ``minMemoryGb``,
``spot``, ``gpu``, ``tpu {type, count, topology}``, ``reservations {affinity, specific[]}``,
``flexStart {enabled, nodeRecycling}``, ``maxRunDurationSeconds``, ``capacityCheckWaitTimeSeconds``,
``location``, ``priorityScore``; other GKE fields are kept as given), ``whenUnsatisfiable`` (``DoNotScaleUp``,
the default since GKE 1.33, or ``ScaleUpAnyway``), ``activeMigration {optimizeRulePriority}``,
``nodePoolAutoCreation {enabled}``, ``priorityDefaults``, ``nodePoolConfig``, ``autoscalingPolicy``; the
KindInfo (cluster-scoped, no short name; ``kubectl get computeclasses`` prints NAME and AGE as on GKE); and
the semantic checks that refuse what GKE refuses (their wording is the twin's own [inferred]: GKE does not
publish its messages). No behaviour (the autoscaler
in ``flexq.gke.compute_class`` reads these objects). Must not import
outside ``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flexq.api.base import Condition, Loose, Model, ObjectBase
from flexq.api.registry import KindInfo, PrinterColumn
from flexq.api.wellknown import COMPUTE_CLASS_LABEL
from flexq.errors import Cause

GROUP = "cloud.google.com"
LABEL = COMPUTE_CLASS_LABEL  # pod nodeSelector key; node pool label and taint key
MAX_RUN_SECONDS = 604800  # flex-start VMs run at most 7 days

__all__ = ["ComputeClass", "GROUP", "KINDS", "LABEL", "chips", "validate_compute_class"]


class Tpu(Model):
    """A TPU slice: type (``tpu-v6e-slice``), chips per node, topology."""

    type: str
    count: int = Field(ge=1)
    topology: str


class Gpu(Loose):
    type: str
    count: int = Field(ge=1)
    driver_version: str | None = None


class FlexStart(Loose):
    enabled: bool = False


class SpecificReservation(Loose):
    name: str
    project: str | None = None


class Reservations(Loose):
    affinity: Literal["Specific", "AnyBestEffort", "None"] = "None"
    specific: list[SpecificReservation] | None = None


class PriorityRule(Loose):
    """One fallback rule; the first satisfiable one wins."""

    nodepools: list[str] | None = None
    machine_family: str | None = None
    machine_type: str | None = None
    min_cores: int | None = Field(default=None, ge=0)
    min_memory_gb: int | None = Field(default=None, ge=0)
    spot: bool | None = None
    gpu: Gpu | None = None
    tpu: Tpu | None = None
    reservations: Reservations | None = None
    flex_start: FlexStart | None = None
    max_run_duration_seconds: int | None = Field(default=None, ge=0)
    capacity_check_wait_time_seconds: int | None = Field(default=None, ge=0)
    priority_score: int | None = None


class ActiveMigration(Loose):
    optimize_rule_priority: bool = False
    ensure_all_daemon_set_pods_running: bool | None = None


class NodePoolAutoCreation(Loose):
    enabled: bool = False


class ComputeClassSpec(Loose):
    priorities: list[PriorityRule] = Field(min_length=1)
    when_unsatisfiable: Literal["DoNotScaleUp", "ScaleUpAnyway"] = "DoNotScaleUp"
    active_migration: ActiveMigration | None = None
    node_pool_auto_creation: NodePoolAutoCreation | None = None
    description: str | None = None


class ComputeClassStatus(Loose):
    conditions: list[Condition] | None = None


class ComputeClass(ObjectBase):
    """A ComputeClass (cluster-scoped)."""

    spec: ComputeClassSpec
    status: ComputeClassStatus | None = None


def chips(topology: str) -> int:
    """Chips in a TPU topology (``4x4`` → 16); 0 when it does not parse."""
    n = 1
    for part in topology.lower().split("x"):
        if not part.isdigit():
            return 0
        n *= int(part)
    return n


def _rule_causes(i: int, rule: dict) -> list[Cause]:
    """[inferred wording] GKE does not publish these messages; the rules are its documented limits."""
    path = f"spec.priorities[{i}]"
    out = []
    if rule.get("nodepools") is not None and any(
        rule.get(k) is not None for k in ("machineFamily", "machineType", "gpu", "tpu", "spot", "flexStart")
    ):
        out.append(
            Cause(
                path,
                "FieldValueInvalid",
                'Invalid value: "object": nodepools cannot be combined '
                "with other node attributes in the same priority rule ",
            )
        )
    if rule.get("machineFamily") and rule.get("machineType"):
        out.append(
            Cause(
                path,
                "FieldValueInvalid",
                'Invalid value: "object": machineFamily and machineType are mutually exclusive',
            )
        )
    if rule.get("gpu") and rule.get("tpu"):
        out.append(
            Cause(path, "FieldValueInvalid", 'Invalid value: "object": gpu and tpu are mutually exclusive')
        )
    flex = bool((rule.get("flexStart") or {}).get("enabled"))
    if flex and rule.get("spot"):
        out.append(
            Cause(path, "FieldValueInvalid", 'Invalid value: "object": flexStart cannot be used with spot')
        )
    if flex and ((rule.get("reservations") or {}).get("affinity") or "None") != "None":
        out.append(
            Cause(
                path,
                "FieldValueInvalid",
                'Invalid value: "object": flexStart cannot be used with reservations',
            )
        )
    mrd = rule.get("maxRunDurationSeconds")
    if flex and mrd is not None and mrd > MAX_RUN_SECONDS:
        out.append(
            Cause(
                f"{path}.maxRunDurationSeconds",
                "FieldValueInvalid",
                f"Invalid value: {mrd}: flex-start VMs run for at most {MAX_RUN_SECONDS} seconds (7 days)",
            )
        )
    tpu = rule.get("tpu") or {}
    if flex and tpu:
        total = chips(str(tpu.get("topology", "")))
        if total and int(tpu.get("count") or 0) < total:
            out.append(
                Cause(
                    f"{path}.tpu",
                    "FieldValueInvalid",
                    f'Invalid value: "{tpu.get("topology")}": flex-start VMs support only single-host '
                    "TPU slices; a multi-host TPU slice needs flex-start with queued provisioning "
                    "(a ProvisioningRequest, e.g. through Kueue)",
                )
            )
    return out


def validate_compute_class(new: dict, old: dict | None) -> list[Cause]:
    """GKE's checks beyond the schema (the CRD's validation rules)."""
    out: list[Cause] = []
    for i, rule in enumerate(((new.get("spec") or {}).get("priorities")) or []):
        if isinstance(rule, dict):
            out += _rule_causes(i, rule)
    return out


KINDS: list[KindInfo] = [
    KindInfo(
        GROUP,
        "ComputeClass",
        "computeclasses",
        {"v1": ComputeClass},
        namespaced=False,
        validate=validate_compute_class,
        printer_columns=[PrinterColumn("Age", ".metadata.creationTimestamp", "date")],
    ),
]
