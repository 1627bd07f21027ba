"""rbac.authorization.k8s.io/v1 kinds: ClusterRole, ClusterRoleBinding, Role, RoleBinding.

Stored and validated as the API server does (``pkg/apis/rbac/validation``): a rule needs ``verbs``, and either
``apiGroups`` and ``resources`` or (cluster roles only) ``nonResourceURLs``; a binding's ``roleRef`` names a Role
or ClusterRole of this API group and cannot change; each subject is a ServiceAccount (with a namespace in a
ClusterRoleBinding), User or Group. The twin does not authorize requests by these objects (its API server
serves one admin token): they are kept so that manifests granting access — ``flexq fallback manifests`` among
them — apply as they would on GKE. No behaviour. Must not import outside ``flexq.api``/``flexq.errors``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from flexq.api.base import LabelSelector, Model, ObjectBase, check_dns1123_subdomain, field_error
from flexq.api.registry import KindInfo
from flexq.errors import Cause

GROUP = "rbac.authorization.k8s.io"


def _not_supported(value: str, supported: list[str]) -> str:
    return f'Unsupported value: "{value}": supported values: ' + ", ".join(f'"{s}"' for s in supported)


class PolicyRule(Model):
    verbs: list[str] | None = None
    api_groups: list[str] | None = None
    resources: list[str] | None = None
    resource_names: list[str] | None = None
    non_resource_urls: list[str] | None = Field(default=None, alias="nonResourceURLs")


def _check_rules(rules: list[PolicyRule] | None, namespaced: bool) -> None:
    """``ValidatePolicyRule`` for each rule."""
    for i, r in enumerate(rules or []):
        at = f"rules[{i}]"
        if not r.verbs:
            raise field_error(
                f"{at}.verbs", "Required value: verbs must contain at least one value", "FieldValueRequired"
            )
        if r.non_resource_urls:
            if namespaced:
                raise field_error(
                    f"{at}.nonResourceURLs",
                    f"Invalid value: {r.non_resource_urls}: namespaced "
                    "rules cannot apply to non-resource URLs",
                )
            if r.api_groups or r.resources:
                raise field_error(
                    f"{at}.nonResourceURLs",
                    f"Invalid value: {r.non_resource_urls}: rules cannot "
                    "apply to both regular resources and non-resource URLs",
                )
            continue
        if not r.api_groups:
            raise field_error(
                f"{at}.apiGroups",
                "Required value: resource rules must supply at least one api group",
                "FieldValueRequired",
            )
        if not r.resources:
            raise field_error(
                f"{at}.resources",
                "Required value: resource rules must supply at least one resource",
                "FieldValueRequired",
            )


class Role(ObjectBase):
    rules: list[PolicyRule] | None = None

    @model_validator(mode="after")
    def _rules(self) -> Role:
        _check_rules(self.rules, namespaced=True)
        return self


class AggregationRule(Model):
    cluster_role_selectors: list[LabelSelector] | None = None


class ClusterRole(ObjectBase):
    rules: list[PolicyRule] | None = None
    aggregation_rule: AggregationRule | None = None

    @model_validator(mode="after")
    def _rules(self) -> ClusterRole:
        _check_rules(self.rules, namespaced=False)
        return self


class RoleRef(Model):
    api_group: str
    kind: str
    name: str


class Subject(Model):
    kind: str
    name: str = ""
    api_group: str | None = None
    namespace: str | None = None


def _check_binding(ref: RoleRef, subjects: list[Subject] | None, namespaced: bool) -> None:
    """``ValidateRoleBinding`` / ``ValidateClusterRoleBinding``."""
    if not ref.name:
        raise field_error("roleRef.name", "Required value", "FieldValueRequired")
    if "/" in ref.name or "%" in ref.name or ref.name in (".", ".."):
        raise field_error("roleRef.name", f"Invalid value: \"{ref.name}\": may not contain '/' or '%'")
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.kind not in kinds:
        raise field_error("roleRef.kind", _not_supported(ref.kind, kinds), "FieldValueNotSupported")
    if ref.api_group != GROUP:
        raise field_error(
            "roleRef.apiGroup", _not_supported(ref.api_group, [GROUP]), "FieldValueNotSupported"
        )
    for i, s in enumerate(subjects or []):
        at = f"subjects[{i}]"
        if not s.name:
            raise field_error(f"{at}.name", "Required value", "FieldValueRequired")
        if s.kind == "ServiceAccount":
            try:
                check_dns1123_subdomain(s.name)
            except PydanticCustomError as exc:
                raise field_error(f"{at}.name", f'Invalid value: "{s.name}": {exc.message()}') from None
            if s.api_group:
                raise field_error(
                    f"{at}.apiGroup", _not_supported(s.api_group, [""]), "FieldValueNotSupported"
                )
            if not namespaced and not s.namespace:
                raise field_error(f"{at}.namespace", "Required value", "FieldValueRequired")
        elif s.kind in ("User", "Group"):
            if s.api_group != GROUP:
                raise field_error(
                    f"{at}.apiGroup", _not_supported(s.api_group or "", [GROUP]), "FieldValueNotSupported"
                )
        else:
            raise field_error(
                f"{at}.kind",
                _not_supported(s.kind, ["ServiceAccount", "User", "Group"]),
                "FieldValueNotSupported",
            )


class RoleBinding(ObjectBase):
    subjects: list[Subject] | None = None
    role_ref: RoleRef

    @model_validator(mode="after")
    def _binding(self) -> RoleBinding:
        _check_binding(self.role_ref, self.subjects, namespaced=True)
        return self


class ClusterRoleBinding(ObjectBase):
    subjects: list[Subject] | None = None
    role_ref: RoleRef

    @model_validator(mode="after")
    def _binding(self) -> ClusterRoleBinding:
        _check_binding(self.role_ref, self.subjects, namespaced=False)
        return self


def validate_binding(new: dict, old: dict | None) -> list[Cause]:
    """``roleRef`` cannot change (``ValidateRoleBindingUpdate``)."""
    if old is None or new.get("roleRef") == old.get("roleRef"):
        return []
    ref: Any = new.get("roleRef") or {}
    text = 'rbac.RoleRef{{APIGroup:"{}", Kind:"{}", Name:"{}"}}'.format(
        ref.get("apiGroup", ""), ref.get("kind", ""), ref.get("name", "")
    )
    return [Cause("roleRef", "FieldValueInvalid", f"Invalid value: {text}: cannot change roleRef")]


KINDS = [
    KindInfo(
        GROUP,
        "ClusterRole",
        "clusterroles",
        {"v1": ClusterRole},
        namespaced=False,
        generation=False,
        status_subresource=False,
        name_rule="path",
    ),
    KindInfo(
        GROUP,
        "ClusterRoleBinding",
        "clusterrolebindings",
        {"v1": ClusterRoleBinding},
        namespaced=False,
        generation=False,
        status_subresource=False,
        validate=validate_binding,
        name_rule="path",
    ),
    KindInfo(
        GROUP, "Role", "roles", {"v1": Role}, generation=False, status_subresource=False, name_rule="path"
    ),
    KindInfo(
        GROUP,
        "RoleBinding",
        "rolebindings",
        {"v1": RoleBinding},
        generation=False,
        status_subresource=False,
        validate=validate_binding,
        name_rule="path",
    ),
]
