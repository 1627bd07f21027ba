"""apps/v1 Deployment and ReplicaSet: stored, defaulted and validated as the API server does.

Their behaviour is ``flexq.kube.deployment_controller`` (a Deployment's ReplicaSets: the ``pod-template-hash``,
revisions, Recreate and RollingUpdate, status and conditions) and ``flexq.kube.replicaset_controller`` (a
ReplicaSet's pods and status), as kube-controller-manager's; the pods run on the twin's kubelet like any other
(simulated: a ``restartPolicy: Always`` pod runs, Ready, until stopped). Both kinds serve the ``scale``
subresource (``kubectl scale``) and ``status``.

Defaults (``SetDefaults_Deployment``): ``replicas`` 1, ``strategy`` RollingUpdate with 25% max unavailable and
surge, ``revisionHistoryLimit`` 10, ``progressDeadlineSeconds`` 600, the pod template's pod-spec defaults.
Validation (``ValidateDeploymentSpec``): a non-empty ``selector`` that matches the template's labels, a template
whose ``restartPolicy`` is Always, non-negative counts, no ``rollingUpdate`` with the Recreate strategy; the
selector cannot change. A ReplicaSet (``SetDefaults_ReplicaSet``, ``ValidateReplicaSetSpec``): ``replicas`` 1, a
non-empty selector matching the template's labels, ``restartPolicy`` Always; its selector cannot change either.
No behaviour. Must not import outside ``flexq.api``/``flexq.errors``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, ValidationInfo, model_validator

from flexq.api.base import Int32, LabelSelector, Loose, ObjectBase, field_error
from flexq.api.core import PodTemplateSpec
from flexq.api.core_defaults import child_dict, default_pod_spec, defaulted
from flexq.api.registry import KindInfo, PrinterColumn
from flexq.errors import Cause


def default_deployment(dep: dict) -> None:
    spec = child_dict(dep, "spec")
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.setdefault("rollingUpdate", {})
            if isinstance(ru, dict):
                ru.setdefault("maxUnavailable", "25%")
                ru.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    template = child_dict(spec, "template")
    pod_spec = child_dict(template, "spec") if template is not None else None
    if pod_spec is not None:
        default_pod_spec(pod_spec)


def _matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in (selector.match_labels or {}).items()):
        return False
    for e in selector.match_expressions or []:
        present, value = e.key in labels, labels.get(e.key)
        ok = {
            "In": present and value in (e.values or []),
            "NotIn": not present or value not in (e.values or []),
            "Exists": present,
            "DoesNotExist": not present,
        }.get(e.operator, False)
        if not ok:
            return False
    return True


class DeploymentStrategy(Loose):
    type: Literal["Recreate", "RollingUpdate"] | None = None
    rolling_update: dict[str, Any] | None = None


class DeploymentSpec(Loose):
    replicas: Int32 | None = Field(default=None, ge=0)
    selector: LabelSelector | None = None
    template: PodTemplateSpec
    strategy: DeploymentStrategy | None = None
    min_ready_seconds: Int32 | None = Field(default=None, ge=0)
    revision_history_limit: Int32 | None = Field(default=None, ge=0)
    progress_deadline_seconds: Int32 | None = None
    paused: StrictBool | None = None

    @model_validator(mode="after")
    def _check(self) -> DeploymentSpec:
        _check_selector(self.selector, self.template, "deployment")
        if self.strategy and self.strategy.type == "Recreate" and self.strategy.rolling_update is not None:
            raise field_error(
                "strategy.rollingUpdate",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                "FieldValueForbidden",
            )
        if self.progress_deadline_seconds is not None and self.progress_deadline_seconds <= (
            self.min_ready_seconds or 0
        ):
            raise field_error(
                "progressDeadlineSeconds",
                f"Invalid value: {self.progress_deadline_seconds}: must be greater than minReadySeconds",
            )
        return self


def _check_selector(selector: LabelSelector | None, template: PodTemplateSpec, what: str) -> None:
    """``ValidateDeploymentSpec`` / ``ValidateReplicaSetSpec``: a non-empty selector matching the template's
    labels, a template whose ``restartPolicy`` is Always."""
    if selector is None:
        raise field_error("selector", "Required value", "FieldValueRequired")
    if not selector.match_labels and not selector.match_expressions:
        raise field_error("selector", f"Invalid value: {{}}: empty selector is invalid for {what}")
    labels = (template.metadata.labels if template.metadata else None) or {}
    if not _matches(selector, labels):
        raise field_error(
            "template.metadata.labels",
            f"Invalid value: {labels}: `selector` does not match template `labels`",
        )
    rp = template.spec.restart_policy
    if rp != "Always":
        raise field_error(
            "template.spec.restartPolicy",
            f'Unsupported value: "{rp}": supported values: "Always"',
            "FieldValueNotSupported",
        )


class Deployment(ObjectBase):
    """An apps/v1 Deployment (see the module docstring; its controller is ``flexq.kube.deployment_controller``)."""

    spec: DeploymentSpec
    status: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_deployment, info)


def default_replicaset(rs: dict) -> None:
    spec = child_dict(rs, "spec")
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    template = child_dict(spec, "template")
    pod_spec = child_dict(template, "spec") if template is not None else None
    if pod_spec is not None:
        default_pod_spec(pod_spec)


class ReplicaSetSpec(Loose):
    replicas: Int32 | None = Field(default=None, ge=0)
    selector: LabelSelector | None = None
    template: PodTemplateSpec
    min_ready_seconds: Int32 | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _check(self) -> ReplicaSetSpec:
        _check_selector(
            self.selector, self.template, "deployment"
        )  # upstream's message says "deployment" too
        return self


class ReplicaSet(ObjectBase):
    """An apps/v1 ReplicaSet (its controller is ``flexq.kube.replicaset_controller``)."""

    spec: ReplicaSetSpec
    status: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_replicaset, info)


def validate_deployment(new: dict, old: dict | None) -> list[Cause]:
    """``spec.selector`` is immutable in apps/v1."""
    if old is None:
        return []
    sel, old_sel = (new.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
    if sel != old_sel:
        return [Cause("spec.selector", "FieldValueInvalid", f"Invalid value: {sel}: field is immutable")]
    return []


KINDS = [
    KindInfo(
        "apps",
        "Deployment",
        "deployments",
        {"v1": Deployment},
        short_names=("deploy",),
        categories=("all",),
        validate=validate_deployment,
        printer_columns=[
            PrinterColumn("Ready", ".status.readyReplicas", "integer"),
            PrinterColumn("Up-to-date", ".status.updatedReplicas", "integer"),
            PrinterColumn("Available", ".status.availableReplicas", "integer"),
            PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        ],
        scale_subresource=True,
    ),
    KindInfo(
        "apps",
        "ReplicaSet",
        "replicasets",
        {"v1": ReplicaSet},
        short_names=("rs",),
        categories=("all",),
        validate=validate_deployment,  # the same rule: spec.selector is immutable
        printer_columns=[
            PrinterColumn("Desired", ".spec.replicas", "integer"),
            PrinterColumn("Current", ".status.replicas", "integer"),
            PrinterColumn("Ready", ".status.readyReplicas", "integer"),
            PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        ],
        scale_subresource=True,
    ),
]
