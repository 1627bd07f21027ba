"""core/v1 and batch/v1 kinds: Namespace, Node, Pod, PodTemplate, ConfigMap, Secret, Service, ServiceAccount, Event,
Job.

Only the fields the twin reads are modelled field by field (with the API server's validation); the rest
of each spec is kept as sent (``Loose``).

Defaulting is done as the API server does it, in two places only:
- ``SetDefaults_*`` of ``pkg/apis/core/v1`` and ``pkg/apis/batch/v1`` (decode-time, on create and update):
  the ``default_*`` functions of ``flexq.api.core_defaults``, run on the raw object before validation by each top-level model
  (``Pod``, ``PodTemplate``, ``Job``, ``Service``, ``Namespace``). The nested models (``PodSpec``,
  ``Container``) carry no such defaults, so pod templates embedded in custom resources stay as written.
- what the registry strategies, the IP allocator and the admission plugins set on create (pod status and
  priority, a Service's IPs and families, a Namespace's finalizer and phase, a Job's selector): the
  ``prepare_*`` functions, run by the store once the uid is known, on every create path (also objects
  controllers create without validation, so a Job's pods get the Pod-only defaults too).
No behaviour. Must not import outside ``flexq.api``/``flexq.errors``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictBool, ValidationInfo, field_validator, model_validator

from flexq.api import podsecurity
from flexq.api.base import (
    INT32_MAX,
    DNS1123Label,
    Int32,
    Int64,
    Labels,
    LabelSelector,
    Loose,
    MicroTime,
    Model,
    ObjectBase,
    Quantity,
    Taint,
    Time,
    Toleration,
    field_error,
)
from flexq.api.core_defaults import (
    canonical_as_is,
    canonical_job,
    canonical_pod,
    canonical_pod_template,
    default_job,
    default_namespace,
    default_pod,
    default_pod_template,
    default_secret,
    default_service,
    defaulted,
    keep_namespace_spec,
    prepare_job,
    prepare_namespace,
    prepare_pod,
    prepare_service,
    suspend_queued_job,
)
from flexq.api.quantity import parse_quantity
from flexq.api.registry import KindInfo, PrinterColumn
from flexq.api.scheduling import admit_pod
from flexq.errors import Cause

# -- pods ---------------------------------------------------------------------------------------


def _merged_by(key: str, strategy: str = "merge") -> Any:
    """A list's ``patchMergeKey``/``patchStrategy`` (core/v1 types.go), published in the OpenAPI schema:
    kubectl's client-side apply reads them there to merge such a list by key instead of replacing it whole,
    so fields the server defaulted inside it do not make a re-applied manifest "configured"."""
    return Field(
        default=None,
        json_schema_extra={"x-kubernetes-patch-merge-key": key, "x-kubernetes-patch-strategy": strategy},
    )


class ResourceRequirements(Model):
    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _not_negative(self) -> ResourceRequirements:
        """``ValidateResourceQuantityValue``: no limit or request below zero (``cpu: -1`` is refused)."""
        for field_name, values in (("limits", self.limits), ("requests", self.requests)):
            for name, qty in (values or {}).items():
                if parse_quantity(qty) < 0:
                    raise field_error(
                        f"{field_name}[{name}]", f'Invalid value: "{qty}": must be greater than or equal to 0'
                    )
        return self


class ContainerPort(Loose):
    container_port: int = Field(ge=1, le=65535)
    name: str | None = None
    # a schema default (``+default="TCP"``), so CRDs generated from core/v1 (RayCluster's) carry it too
    protocol: Literal["TCP", "UDP", "SCTP"] | None = "TCP"


class EnvVar(Loose):
    name: str
    value: str | None = None


class VolumeMount(Loose):
    name: str
    mount_path: str


class Container(Loose):
    name: DNS1123Label
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] | None = _merged_by("name")
    ports: list[ContainerPort] | None = _merged_by("containerPort")
    resources: ResourceRequirements | None = None
    volume_mounts: list[VolumeMount] | None = _merged_by("mountPath")

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Container:
        res = self.resources
        if res and res.limits and res.requests:
            for name, req in res.requests.items():
                lim = res.limits.get(name)
                if lim is not None and lim != req and parse_quantity(req) > parse_quantity(lim):
                    raise field_error(
                        f"resources.requests[{name}]", f"must be less than or equal to {name} limit of {lim}"
                    )
        return self


class ConfigMapVolumeSource(Loose):
    name: str | None = None
    items: list[dict[str, Any]] | None = None


class Volume(Loose):
    name: DNS1123Label
    config_map: ConfigMapVolumeSource | None = None


class NodeSelectorRequirement(Model):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] | None = None


class NodeSelectorTerm(Model):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(Model):
    node_selector_terms: list[NodeSelectorTerm]


class NodeAffinity(Loose):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None


class Affinity(Loose):
    node_affinity: NodeAffinity | None = None


class PodSpec(Loose):
    containers: list[Container] = Field(
        min_length=1,
        json_schema_extra={"x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
    )
    init_containers: list[Container] | None = _merged_by("name")
    node_selector: Labels = None
    node_name: str | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    volumes: list[Volume] | None = _merged_by("name", "merge,retainKeys")
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None
    priority_class_name: str | None = None
    priority: Int32 | None = None
    scheduling_gates: list[dict[str, str]] | None = None
    overhead: dict[str, Quantity] | None = None
    scheduler_name: str | None = None
    termination_grace_period_seconds: Int64 | None = None
    dns_policy: str | None = None
    # validateContainerCommon: every container of a Pod or of a core pod template (Job, Deployment, PodTemplate)
    # names its image; a custom resource's embedded template (its CRD's schema) need not
    image_required: ClassVar[bool] = True

    @model_validator(mode="after")
    def _images(self) -> PodSpec:
        if self.image_required:
            for field, ctrs in (
                ("containers", self.containers),
                ("initContainers", self.init_containers or []),
            ):
                for i, c in enumerate(ctrs):
                    if not c.image:
                        raise field_error(f"{field}[{i}].image", "Required value", "FieldValueRequired")
        return self

    @field_validator("containers")
    @classmethod
    def _unique_names(cls, v: list[Container]) -> list[Container]:
        seen: set[str] = set()
        for i, c in enumerate(v):
            if c.name in seen:
                raise field_error(f"[{i}].name", f'Duplicate value: "{c.name}"', "FieldValueDuplicate")
            seen.add(c.name)
        return v


class PodTemplateMeta(Model):
    name: str | None = None
    namespace: str | None = None
    labels: Labels = None
    annotations: dict[str, str] | None = None
    generate_name: str | None = None
    finalizers: list[str] | None = None
    creation_timestamp: str | None = None


class PodTemplateSpec(Model):
    metadata: PodTemplateMeta | None = None
    spec: PodSpec


class Pod(ObjectBase):
    spec: PodSpec
    status: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_pod, info)


class PodTemplate(ObjectBase):
    template: PodTemplateSpec

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_pod_template, info)


# -- nodes, namespaces, config ------------------------------------------------------------------


class NodeSpec(Loose):
    taints: list[Taint] | None = None
    unschedulable: StrictBool | None = None
    provider_id: str | None = Field(default=None, alias="providerID")


class Node(ObjectBase):
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: dict[str, Any] | None = None


class Namespace(ObjectBase):
    spec: dict[str, Any] | None = None
    status: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_namespace, info)


MAX_CONFIG_SIZE = 1024 * 1024  # core.MaxSecretSize, the limit of a ConfigMap's (and a Secret's) data


def _keys_and_base64(v: dict[str, str] | None) -> dict[str, str] | None:
    """The keys of a ``map[string][]byte`` (ConfigMap ``binaryData``, Secret ``data``) and their base64."""
    import base64
    import binascii
    import json
    import re

    for k, val in (v or {}).items():
        if not re.match(r"^[-._a-zA-Z0-9]+$", k) or len(k) > 253:
            raise field_error(
                f"[{k}]",
                "a valid config key must consist of alphanumeric characters, '-', "
                "'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                "validation is '[-._a-zA-Z0-9]+')",
            )
        try:
            base64.b64decode(val, validate=True)
        except (binascii.Error, ValueError):
            raise field_error(
                f"[{k}]",
                f"Invalid value: {json.dumps(val[:40])}: illegal base64 data: the "
                "value must be standard base64 (a []byte field)",
            ) from None
    return v


class ConfigMap(ObjectBase):
    data: dict[str, str] | None = None
    binary_data: dict[str, str] | None = None
    immutable: StrictBool | None = None

    @field_validator("data")
    @classmethod
    def _keys(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        import re

        for k in v or {}:
            if not re.match(r"^[-._a-zA-Z0-9]+$", k) or len(k) > 253:
                raise field_error(
                    f"[{k}]",
                    "a valid config key must consist of alphanumeric characters, '-', "
                    "'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                    "validation is '[-._a-zA-Z0-9]+')",
                )
        return v

    @field_validator("binary_data")
    @classmethod
    def _base64(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        return _keys_and_base64(v)

    @model_validator(mode="after")
    def _size(self) -> ConfigMap:
        """ValidateConfigMap: a key in both bags is refused, and all data together is at most 1 MiB."""
        data, binary = self.data or {}, self.binary_data or {}
        for k in data:
            if k in binary:
                raise field_error(
                    f"data[{k}]", f'Invalid value: "{k}": duplicate of key present in binaryData'
                )
        total = sum(len(v.encode()) for v in data.values()) + sum(len(v) * 3 // 4 for v in binary.values())
        if total > MAX_CONFIG_SIZE:
            raise field_error(
                "[]", f"Too long: must have at most {MAX_CONFIG_SIZE} bytes", "FieldValueTooLong"
            )
        return self


class ServicePort(Loose):
    port: int = Field(ge=1, le=65535)
    name: str | None = None
    target_port: int | str | None = None
    protocol: Literal["TCP", "UDP", "SCTP"] | None = None


class ServiceSpec(Loose):
    selector: dict[str, str] | None = None
    ports: list[ServicePort] | None = _merged_by("port")
    type: Literal["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"] | None = None
    cluster_ip: str | None = Field(default=None, alias="clusterIP")
    cluster_ips: list[str] | None = Field(default=None, alias="clusterIPs")


class Service(ObjectBase):
    spec: ServiceSpec = Field(default_factory=ServiceSpec)
    status: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_service, info)


class ObjectReference(Loose):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None


class Event(ObjectBase):
    involved_object: ObjectReference
    reason: str | None = None
    message: str | None = None
    type: Literal["Normal", "Warning"] | None = None
    count: Int32 | None = None
    first_timestamp: Time | None = None
    last_timestamp: Time | None = None
    event_time: MicroTime | None = None
    source: dict[str, Any] | None = None
    reporting_component: str | None = None
    reporting_instance: str | None = None
    action: str | None = None


class LocalObjectReference(Loose):
    name: str | None = None


# the keys ValidateSecret requires per built-in Secret type (core/v1 types.go: SecretType*)
_SECRET_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


class Secret(ObjectBase):
    """A core/v1 Secret: ``data`` values are base64 (``[]byte``); ``stringData`` is merged into ``data`` when
    decoded (``default_secret``); keys, size and the keys its ``type`` requires are checked as
    ``ValidateSecret`` checks them."""

    data: dict[str, str] | None = None
    string_data: dict[str, str] | None = None
    type: str | None = None
    immutable: StrictBool | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_secret, info)

    @field_validator("data")
    @classmethod
    def _data(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        return _keys_and_base64(v)

    @model_validator(mode="after")
    def _valid(self) -> Secret:
        import base64

        data = self.data or {}
        total = sum(len(v) * 3 // 4 for v in data.values())
        if total > MAX_CONFIG_SIZE:
            raise field_error(
                "data", f"Too long: must have at most {MAX_CONFIG_SIZE} bytes", "FieldValueTooLong"
            )
        for key in _SECRET_KEYS.get(self.type or "", ()):
            if key not in data:
                raise field_error(f"data[{key}]", "Required value", "FieldValueRequired")
        if self.type == "kubernetes.io/basic-auth" and not ({"username", "password"} & set(data)):
            raise field_error("data[username]", "Required value", "FieldValueRequired")
        if self.type == "kubernetes.io/service-account-token":
            ann = (self.metadata.annotations or {}) if self.metadata else {}
            if not ann.get("kubernetes.io/service-account.name"):
                raise field_error(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "Required value",
                    "FieldValueRequired",
                )
        if self.type == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" in data:
            import json

            try:
                json.loads(base64.b64decode(data[".dockerconfigjson"]))
            except ValueError as e:
                raise field_error(
                    "data[.dockerconfigjson]", f'Invalid value: "<secret contents redacted>": {e}'
                ) from None
        return self


POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
    "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _spec_diff(old: dict, new: dict) -> str:
    """Which fields of the pod's spec differ (upstream prints a ``cmp.Diff``; this names the fields)."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            if key in old:
                lines.append(f"-  {key}: {json.dumps(old[key], sort_keys=True)[:200]},")
            if key in new:
                lines.append(f"+  {key}: {json.dumps(new[key], sort_keys=True)[:200]},")
    lines.append("  }")
    return "\n".join(lines)


def validate_pod(new: dict, old: dict | None) -> list[Cause]:
    """``ValidatePodUpdate``'s rule for ``spec``: an update may change the containers' and init containers'
    images, ``activeDeadlineSeconds`` (set, or lowered), add tolerations, set a negative
    ``terminationGracePeriodSeconds`` to 1, remove scheduling gates and, while the pod is gated, add to its
    ``nodeSelector``; containers may not be added or removed; anything else (privileges, host namespaces,
    capabilities, ephemeral containers: those go through their own subresource) is Forbidden, 422."""
    if old is None:
        return []
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if ns == os_:
        return []
    causes: list[Cause] = []
    munged = dict(ns)
    for key in ("containers", "initContainers"):
        nc, oc = ns.get(key) or [], os_.get(key) or []
        if len(nc) != len(oc):
            # ValidateContainerUpdates: the lists must match in length before anything else is compared
            return [
                Cause(
                    f"spec.{key}",
                    "FieldValueForbidden",
                    "Forbidden: pod updates may not add or remove containers",
                )
            ]
        if key in ns or key in os_:
            munged[key] = [
                {**c, "image": o.get("image")} if isinstance(c, dict) and isinstance(o, dict) else c
                for c, o in zip(nc, oc, strict=True)
            ]
    old_deadline, new_deadline = os_.get("activeDeadlineSeconds"), ns.get("activeDeadlineSeconds")
    if old_deadline is not None and (new_deadline is None or new_deadline > old_deadline):
        causes.append(
            Cause(
                "spec.activeDeadlineSeconds",
                "FieldValueInvalid",
                f"Invalid value: {json.dumps(new_deadline)}: must be less than or equal to previous value",
            )
        )
    munged.pop("activeDeadlineSeconds", None)
    if "activeDeadlineSeconds" in os_:
        munged["activeDeadlineSeconds"] = old_deadline
    old_tol, new_tol = os_.get("tolerations") or [], ns.get("tolerations") or []
    if all(t in new_tol for t in old_tol):  # only additions: compared as the old list
        if "tolerations" in os_:
            munged["tolerations"] = old_tol
        else:
            munged.pop("tolerations", None)
    grace_old, grace_new = os_.get("terminationGracePeriodSeconds"), ns.get("terminationGracePeriodSeconds")
    if isinstance(grace_old, int) and grace_old < 0 and grace_new == 1:
        munged["terminationGracePeriodSeconds"] = grace_old
    gates_old, gates_new = os_.get("schedulingGates") or [], ns.get("schedulingGates") or []
    if all(g in gates_old for g in gates_new):  # scheduling gates may only be removed
        if "schedulingGates" in os_:
            munged["schedulingGates"] = gates_old
        else:
            munged.pop("schedulingGates", None)
        if gates_old:  # a gated pod's nodeSelector may gain entries (PodSchedulingReadiness)
            sel_old, sel_new = os_.get("nodeSelector") or {}, ns.get("nodeSelector") or {}
            if all(sel_new.get(k) == v for k, v in sel_old.items()):
                if "nodeSelector" in os_:
                    munged["nodeSelector"] = sel_old
                else:
                    munged.pop("nodeSelector", None)
    else:
        causes.append(
            Cause(
                "spec.schedulingGates",
                "FieldValueForbidden",
                "Forbidden: only deletion is allowed, but found new scheduling gate",
            )
        )
        munged["schedulingGates"] = gates_old
    if munged != os_:
        causes.append(
            Cause("spec", "FieldValueForbidden", POD_UPDATE_FORBIDDEN + "\n" + _spec_diff(os_, munged))
        )
    return causes


def validate_secret(new: dict, old: dict | None) -> list[Cause]:
    """ValidateSecretUpdate: ``type`` is immutable, and so are ``data`` and ``immutable`` once ``immutable``
    is true."""
    if old is None:
        return []
    causes: list[Cause] = []
    if new.get("type") != old.get("type"):
        causes.append(
            Cause("type", "FieldValueInvalid", f'Invalid value: "{new.get("type")}": field is immutable')
        )
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            causes.append(
                Cause(
                    "immutable",
                    "FieldValueForbidden",
                    "Forbidden: field is immutable when `immutable` is set",
                )
            )
        if new.get("data") != old.get("data"):
            causes.append(
                Cause("data", "FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set")
            )
    return causes


class ServiceAccount(ObjectBase):
    """A core/v1 ServiceAccount: an identity of the served twin's API (``kubectl create token``, a pod's projected
    token; RBAC binds it), stored as sent."""

    secrets: list[ObjectReference] | None = _merged_by("name")
    image_pull_secrets: list[LocalObjectReference] | None = None
    automount_service_account_token: StrictBool | None = None


# -- batch/v1 Job ---------------------------------------------------------------------------------


class JobSpec(Loose):
    template: PodTemplateSpec
    # int32 on the API server (activeDeadlineSeconds int64)
    parallelism: int | None = Field(default=None, ge=0, le=INT32_MAX)
    completions: int | None = Field(default=None, ge=0, le=INT32_MAX)
    backoff_limit: int | None = Field(default=None, ge=0, le=INT32_MAX)
    active_deadline_seconds: int | None = Field(default=None, ge=1, le=2**63 - 1)
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0, le=INT32_MAX)
    suspend: StrictBool | None = None
    selector: LabelSelector | None = None
    manual_selector: StrictBool | None = None
    completion_mode: Literal["NonIndexed", "Indexed"] | None = None

    @model_validator(mode="after")
    def _restart_policy(self) -> JobSpec:
        if self.template.spec.restart_policy not in ("OnFailure", "Never"):
            raise field_error(
                "template.spec.restartPolicy",
                f'Unsupported value: "{self.template.spec.restart_policy}": supported values: '
                '"OnFailure", "Never"',
                "FieldValueNotSupported",
            )
        if self.completion_mode == "Indexed" and self.completions is None:
            raise field_error(
                "completions", "Required value: when completion mode is Indexed", "FieldValueRequired"
            )
        return self


class Job(ObjectBase):
    spec: JobSpec
    status: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any, info: ValidationInfo) -> Any:
        return defaulted(data, default_job, info)


def _admit_pod(op: str, pod: dict, old: dict | None, reader: Any, name: str) -> None:
    """A pod's built-in admission, in kube-apiserver's plugin order: Priority (mutating), then PodSecurity
    (validating, on what Priority left)."""
    admit_pod(op, pod, old, reader, name)
    podsecurity.admit(op, pod, old, reader, name)


KINDS = [
    KindInfo(
        "",
        "Namespace",
        "namespaces",
        {"v1": Namespace},
        generation=False,
        namespaced=False,
        short_names=("ns",),
        name_rule="label",
        mutate=keep_namespace_spec,
        prepare_create=prepare_namespace,
        admission=podsecurity.admit_namespace,
    ),
    KindInfo(
        "",
        "Node",
        "nodes",
        {"v1": Node},
        generation=False,
        namespaced=False,
        short_names=("no",),
        printer_columns=[
            PrinterColumn("Status", ".status.conditions[?(@.type=='Ready')].status"),
            PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        ],
    ),
    KindInfo(
        "",
        "Pod",
        "pods",
        {"v1": Pod},
        short_names=("po",),
        categories=("all",),
        prepare_create=prepare_pod,
        admission=_admit_pod,
        validate=validate_pod,
        canonical=canonical_pod,
    ),
    KindInfo(
        "",
        "PodTemplate",
        "podtemplates",
        {"v1": PodTemplate},
        status_subresource=False,
        canonical=canonical_pod_template,
    ),
    KindInfo(
        "",
        "ConfigMap",
        "configmaps",
        {"v1": ConfigMap},
        generation=False,
        short_names=("cm",),
        status_subresource=False,
    ),
    KindInfo(
        "",
        "Secret",
        "secrets",
        {"v1": Secret},
        generation=False,
        status_subresource=False,
        validate=validate_secret,
    ),
    KindInfo(
        "",
        "Service",
        "services",
        {"v1": Service},
        generation=False,
        short_names=("svc",),
        categories=("all",),
        name_rule="label",
        prepare_create=prepare_service,
        canonical=canonical_as_is,
    ),
    KindInfo(
        "",
        "ServiceAccount",
        "serviceaccounts",
        {"v1": ServiceAccount},
        generation=False,
        short_names=("sa",),
        status_subresource=False,
    ),
    KindInfo(
        "", "Event", "events", {"v1": Event}, generation=False, short_names=("ev",), status_subresource=False
    ),
    KindInfo(
        "batch",
        "Job",
        "jobs",
        {"v1": Job},
        categories=("all",),
        mutate=suspend_queued_job,
        prepare_create=prepare_job,
        canonical=canonical_job,
    ),
]
