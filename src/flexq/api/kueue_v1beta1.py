"""kueue.x-k8s.io/v1beta1 models (deprecated, served; what the tutorial applies) and the conversions to and from v1beta2.

Owns the v1beta1 models where they differ from v1beta2 (ClusterQueue ``cohort``/``admissionChecks``/
``Borrow``/``Preempt``, Workload ``priorityClassName``/``priorityClassSource``, AdmissionCheck
``retryDelayMinutes``) and the dict-level conversions Kueue's ``apis/kueue/v1beta1/*_conversion.go`` do,
both ways, and ``conversion_losses`` (what a v1beta1 object loses or has changed on its way to v1beta2, field by
field, for ``flexq convert`` to name). Conversions take and return plain dicts and never mutate their argument.
No behaviour. Must not import outside ``flexq.api``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field, model_validator

from flexq.api.base import DNS1123Subdomain, Model, ObjectBase, field_error
from flexq.api.jsoncopy import clone
from flexq.api.kueue_v1beta2 import (
    AdmissionCheckParametersReference,
    AdmissionChecksStrategy,
    CheckRef,
    ClusterQueueSpecBase,
    ClusterQueueStatus,
    CohortRef,
    Status,
    WorkloadSpecBase,
    WorkloadStatus,
    has_borrowing_limit,
)

__all__ = ["AdmissionCheck", "ClusterQueue", "TO_STORAGE", "FROM_STORAGE", "Workload"]


# -- models ---------------------------------------------------------------------------------------


class FlavorFungibility(Model):
    """v1beta1 fungibility: also accepts the deprecated ``Borrow`` / ``Preempt``."""

    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor", "Borrow"] = "MayStopSearch"
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor", "Preempt"] = "TryNextFlavor"
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


class ClusterQueueSpec(ClusterQueueSpecBase):
    """v1beta1 ClusterQueue spec: ``cohort`` and the list form ``admissionChecks``."""

    cohort: CohortRef | None = None
    admission_checks: list[CheckRef] | None = None
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    flavor_fungibility: FlavorFungibility = Field(default_factory=FlavorFungibility)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _borrowing_needs_cohort(self) -> ClusterQueueSpec:
        if not self.cohort and has_borrowing_limit(self.resource_groups):
            raise field_error("", "borrowingLimit must be nil when cohort is empty")
        return self


class ClusterQueue(ObjectBase):
    """A v1beta1 ClusterQueue."""

    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus | None = None


class WorkloadSpec(WorkloadSpecBase):
    """v1beta1 Workload spec: the priority class as a name and a source."""

    priority_class_name: DNS1123Subdomain | None = None
    priority_class_source: Literal[
        "kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""
    ] = ""

    @model_validator(mode="after")
    def _priority_with_name(self) -> WorkloadSpec:
        if self.priority_class_name and self.priority is None:
            raise field_error("", "priority should not be nil when priorityClassName is set")
        return self


class Workload(ObjectBase):
    """A v1beta1 Workload."""

    spec: WorkloadSpec
    status: WorkloadStatus | None = None


class AdmissionCheckSpec(Model):
    """v1beta1 AdmissionCheck spec: with the deprecated, ineffective ``retryDelayMinutes`` (default 15)."""

    controller_name: str = Field(min_length=1, max_length=253)
    retry_delay_minutes: int = 15
    parameters: AdmissionCheckParametersReference | None = None


class AdmissionCheck(ObjectBase):
    """A v1beta1 AdmissionCheck."""

    spec: AdmissionCheckSpec
    status: Status | None = None


# -- conversions ----------------------------------------------------------------------------------

_WPC = ("kueue.x-k8s.io", "WorkloadPriorityClass", "kueue.x-k8s.io/workloadpriorityclass")
_PC = ("scheduling.k8s.io", "PriorityClass", "scheduling.k8s.io/priorityclass")


def _rename(d: dict, old: str, new: str) -> None:
    if old in d:
        d[new] = d.pop(old)


def cq_to_v1beta2(obj: dict) -> dict:
    """ClusterQueue v1beta1 -> v1beta2 (``clusterqueue_conversion.go``)."""
    out = clone(obj)
    spec = out.get("spec") or {}
    _rename(spec, "cohort", "cohortName")
    checks = spec.pop("admissionChecks", None)
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    ff = spec.get("flavorFungibility") or {}
    if ff.get("whenCanBorrow") == "Borrow":
        ff["whenCanBorrow"] = "MayStopSearch"
    if ff.get("whenCanPreempt") == "Preempt":
        ff["whenCanPreempt"] = "MayStopSearch"
    (out.get("status") or {}).pop("pendingWorkloadsStatus", None)
    return out


def cq_from_v1beta2(obj: dict) -> dict:
    """ClusterQueue v1beta2 -> v1beta1 (``concurrentAdmissionPolicy`` has no v1beta1 form and is dropped)."""
    out = clone(obj)
    spec = out.get("spec") or {}
    _rename(spec, "cohortName", "cohort")
    spec.pop("concurrentAdmissionPolicy", None)
    return out


def lq_to_v1beta2(obj: dict) -> dict:
    """LocalQueue v1beta1 -> v1beta2: ``status.flavorUsage`` -> ``flavorsUsage``; ``status.flavors`` is gone."""
    out = clone(obj)
    status = out.get("status") or {}
    _rename(status, "flavorUsage", "flavorsUsage")
    status.pop("flavors", None)
    return out


def lq_from_v1beta2(obj: dict) -> dict:
    """LocalQueue v1beta2 -> v1beta1."""
    out = clone(obj)
    _rename(out.get("status") or {}, "flavorsUsage", "flavorUsage")
    return out


def wl_to_v1beta2(obj: dict) -> dict:
    """Workload v1beta1 -> v1beta2: priority class name+source -> ``priorityClassRef``; the misspelt field."""
    out = clone(obj)
    spec = out.get("spec") or {}
    name = spec.pop("priorityClassName", None)
    source = spec.pop("priorityClassSource", None)
    for group, kind, src in (_WPC, _PC):
        if source == src:
            spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name or ""}
    _rename(
        out.get("status") or {}, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds"
    )
    return out


def wl_from_v1beta2(obj: dict) -> dict:
    """Workload v1beta2 -> v1beta1 (``preemptionGates`` have no v1beta1 form and are dropped)."""
    out = clone(obj)
    spec = out.get("spec")
    if spec is not None:
        ref = spec.pop("priorityClassRef", None)
        spec.pop("preemptionGates", None)
        source = ""
        for group, kind, src in (_WPC, _PC):
            if ref and ref.get("group") == group and ref.get("kind") == kind:
                spec["priorityClassName"] = ref.get("name", "")
                source = src
        spec["priorityClassSource"] = source  # +kubebuilder:default="" is applied on read
    status = out.get("status") or {}
    _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
    status.pop("preemptionGates", None)
    return out


def ac_to_v1beta2(obj: dict) -> dict:
    """AdmissionCheck v1beta1 -> v1beta2: ``retryDelayMinutes`` is dropped."""
    out = clone(obj)
    (out.get("spec") or {}).pop("retryDelayMinutes", None)
    return out


def ac_from_v1beta2(obj: dict) -> dict:
    """AdmissionCheck v1beta2 -> v1beta1: the v1beta1 default ``retryDelayMinutes: 15`` shows on read."""
    out = clone(obj)
    spec = out.get("spec")
    if spec is not None:
        spec.setdefault("retryDelayMinutes", 15)
    return out


Converter = Callable[[dict], dict]

TO_STORAGE: dict[str, Converter] = {
    "ClusterQueue": cq_to_v1beta2,
    "LocalQueue": lq_to_v1beta2,
    "Workload": wl_to_v1beta2,
    "AdmissionCheck": ac_to_v1beta2,
}
FROM_STORAGE: dict[str, Converter] = {
    "ClusterQueue": cq_from_v1beta2,
    "LocalQueue": lq_from_v1beta2,
    "Workload": wl_from_v1beta2,
    "AdmissionCheck": ac_from_v1beta2,
}


def _spec(obj: dict) -> dict:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _status(obj: dict) -> dict:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def conversion_losses(kind: str, obj: dict) -> list[tuple[str, str]]:
    """(field, what happens to it) for each part of the v1beta1 ``obj`` that its v1beta2 form does not carry
    over unchanged (the functions above decide; this says it). Renames that keep the meaning (``cohort`` to
    ``cohortName``, the ``admissionChecks`` list to ``admissionChecksStrategy``) are not losses."""
    out: list[tuple[str, str]] = []
    spec, status = _spec(obj), _status(obj)
    if kind == "ClusterQueue":
        if spec.get("admissionChecks") and spec.get("admissionChecksStrategy"):
            out.append(
                (
                    "spec.admissionChecksStrategy",
                    "replaced by the checks of spec.admissionChecks (both were set; Kueue's conversion keeps the "
                    "list, as admissionChecksStrategy with every check on every flavor)",
                )
            )
        raw = spec.get("flavorFungibility")
        ff: dict = raw if isinstance(raw, dict) else {}
        for key, old in (("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")):
            if ff.get(key) == old:
                out.append(
                    (
                        f"spec.flavorFungibility.{key}",
                        f'"{old}" becomes "MayStopSearch" (v1beta2 has only the new name; v1beta1 read it so)',
                    )
                )
        if "pendingWorkloadsStatus" in status:
            out.append(("status.pendingWorkloadsStatus", "dropped: v1beta2 has no such field"))
    elif kind == "Workload":
        name, source = spec.get("priorityClassName"), spec.get("priorityClassSource")
        if name and source not in (_WPC[2], _PC[2]):
            out.append(
                (
                    "spec.priorityClassName",
                    f"dropped: priorityClassSource is {source or 'empty'!r}, so v1beta2's priorityClassRef cannot "
                    "say which kind of priority class it names",
                )
            )
    elif kind == "AdmissionCheck":
        if "retryDelayMinutes" in spec:
            out.append(
                (
                    "spec.retryDelayMinutes",
                    "dropped: v1beta2 has no such field (deprecated in v1beta1 and never used; retries follow the "
                    "ProvisioningRequestConfig's retryStrategy)",
                )
            )
    elif kind == "LocalQueue" and "flavors" in status:
        out.append(("status.flavors", "dropped: v1beta2 has no such field"))
    return out
