"""rbac.authorization.k8s.io/v1 kinds: ClusterRole, ClusterRoleBinding, Role, RoleBinding.

Stored and validated as the API server does (``pkg/apis/rbac/validation``): a rule needs ``verbs``, and either
``apiGroups`` and ``resources`` or (cluster roles only) ``nonResourceURLs``; a binding's ``roleRef`` names a Role
or ClusterRole of this API group and cannot change; each subject is a ServiceAccount (with a namespace in a
ClusterRoleBinding), User or Group. The served twin authorizes requests by these objects
(``flexq.semantics.rbac``, ``flexq.http.auth``). Also the API server's bootstrap policy as data
(``bootstrap_cluster_roles``, ``bootstrap_cluster_role_bindings``). No behaviour. Must not import outside
``flexq.api``/``flexq.errors``.
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


# -- the API server's bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy), the roles people bind --

_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]
_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _urls(urls: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"nonResourceURLs": urls, "verbs": verbs}


def _cluster_role(
    name: str,
    rules: list[dict[str, Any]] | None,
    labels: dict[str, str] | None = None,
    aggregate_from: str | None = None,
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {**_BOOTSTRAP_LABELS, **(labels or {})},
            "annotations": _AUTOUPDATE,
        },
        "rules": rules,
    }
    if aggregate_from is not None:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {f"{GROUP}/aggregate-to-{aggregate_from}": "true"}}]
        }
    return role


def bootstrap_cluster_roles() -> list[dict[str, Any]]:
    """The default ClusterRoles a new cluster has (upstream's ``cluster-roles.yaml`` test data, the roles users
    bind and the ones every request needs): ``cluster-admin``, the aggregated ``admin``/``edit``/``view`` and
    their ``system:aggregate-to-*`` parts, ``system:basic-user``, ``system:discovery``,
    ``system:public-info-viewer``, ``system:auth-delegator``, ``system:monitoring`` and
    ``system:service-account-issuer-discovery``. The aggregated roles' ``rules`` are filled by the
    clusterrole-aggregation controller."""
    return [
        _cluster_role("admin", None, aggregate_from="admin"),
        _cluster_role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _cluster_role("edit", None, {f"{GROUP}/aggregate-to-admin": "true"}, aggregate_from="edit"),
        _cluster_role(
            "system:aggregate-to-admin",
            [
                _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
                _rule(
                    [GROUP],
                    ["rolebindings", "roles"],
                    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                ),
            ],
            {f"{GROUP}/aggregate-to-admin": "true"},
        ),
        _cluster_role(
            "system:aggregate-to-edit",
            [
                _rule(
                    [""],
                    [
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                    _READ,
                ),
                _rule([""], ["serviceaccounts"], ["impersonate"]),
                _rule([""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], _WRITE),
                _rule([""], ["pods/eviction"], ["create"]),
                _rule(
                    [""],
                    [
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    _WRITE,
                ),
                _rule([""], ["serviceaccounts/token"], ["create"]),
                _rule(
                    ["apps"],
                    [
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                    _WRITE,
                ),
                _rule(["autoscaling"], ["horizontalpodautoscalers"], _WRITE),
                _rule(["batch"], ["cronjobs", "jobs"], _WRITE),
                _rule(["policy"], ["poddisruptionbudgets"], _WRITE),
                _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], _WRITE),
                _rule(
                    ["coordination.k8s.io"],
                    ["leases"],
                    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                ),
            ],
            {f"{GROUP}/aggregate-to-edit": "true"},
        ),
        _cluster_role(
            "system:aggregate-to-view",
            [
                _rule(
                    [""],
                    [
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    _READ,
                ),
                _rule(
                    [""],
                    [
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    _READ,
                ),
                _rule([""], ["namespaces"], _READ),
                _rule(["discovery.k8s.io"], ["endpointslices"], _READ),
                _rule(
                    ["apps"],
                    [
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                    _READ,
                ),
                _rule(
                    ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], _READ
                ),
                _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], _READ),
                _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], _READ),
                _rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], _READ),
            ],
            {f"{GROUP}/aggregate-to-view": "true"},
        ),
        _cluster_role(
            "system:auth-delegator",
            [
                _rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
                _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
            ],
        ),
        _cluster_role(
            "system:basic-user",
            [
                _rule(
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    ["create"],
                ),
                _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"]),
            ],
        ),
        _cluster_role(
            "system:discovery",
            [
                _urls(
                    [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                    ["get"],
                )
            ],
        ),
        _cluster_role(
            "system:monitoring",
            [
                _urls(
                    [
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/metrics/slis",
                        "/readyz",
                        "/readyz/*",
                    ],
                    ["get"],
                )
            ],
        ),
        _cluster_role(
            "system:public-info-viewer",
            [_urls(["/healthz", "/livez", "/readyz", "/version", "/version/"], ["get"])],
        ),
        _cluster_role(
            "system:service-account-issuer-discovery",
            [_urls(["/.well-known/openid-configuration", "/openid/v1/jwks"], ["get"])],
        ),
        _cluster_role("view", None, {f"{GROUP}/aggregate-to-edit": "true"}, aggregate_from="view"),
    ]


def bootstrap_cluster_role_bindings() -> list[dict[str, Any]]:
    """The default ClusterRoleBindings of the roles above (upstream's ``cluster-role-bindings.yaml``)."""

    def binding(name: str, *groups: str) -> dict[str, Any]:
        return {
            "apiVersion": f"{GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": dict(_BOOTSTRAP_LABELS), "annotations": _AUTOUPDATE},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups],
        }

    return [
        binding("cluster-admin", "system:masters"),
        binding("system:basic-user", "system:authenticated"),
        binding("system:discovery", "system:authenticated"),
        binding("system:monitoring", "system:monitoring"),
        binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
        binding("system:service-account-issuer-discovery", "system:serviceaccounts"),
    ]
