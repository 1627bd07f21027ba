"""Role-based access control as the Kubernetes API server evaluates it: who a request is, which rules apply to
them, and whether one allows the request.

Owns (after upstream's ``plugin/pkg/auth/authorizer/rbac``, ``pkg/registry/rbac/validation`` and
``component-helpers/auth/rbac/validation``):

- ``UserInfo`` and ``Attributes`` (``authorizer.AttributesRecord``): who asks, and what for — a resource request
  (verb, API group, resource, subresource, namespace, name) or a non-resource one (verb, path).
- ``rule_allows`` (``RuleAllows``) over ``verb_matches``, ``api_group_matches``, ``resource_matches`` (``*``,
  ``resource/subresource``, ``*/subresource``), ``resource_name_matches`` and ``non_resource_url_matches``
  (exact or a trailing ``*`` prefix).
- ``applies_to`` (which binding subject is this user: ``User`` by name, ``Group`` by membership,
  ``ServiceAccount`` by its ``system:serviceaccount:<ns>:<name>`` username, the namespace defaulting to the
  binding's).
- ``visit_rules`` (``DefaultRuleResolver.VisitRulesFor``): the ClusterRoleBindings, then the namespace's
  RoleBindings, each rule with the binding that grants it ("ClusterRoleBinding "x" of ClusterRole "y" to User
  "z""), and the errors met (a role that does not exist); ``authorize`` (the ``system:masters`` group first, as
  kube-apiserver's privileged-group authorizer, then RBAC: ``RBAC: allowed by …``, else no opinion, with the
  resolution errors as the reason) and ``rules_for`` (``RulesFor``, what ``SelfSubjectRulesReview`` lists).
- ``covers`` (``validation.Covers``) and ``escalation_message`` (``ConfirmNoEscalation``'s text, its missing
  rules compacted as ``CompactRules`` does): a user may only grant the permissions they hold.
- ``aggregated_rules``: the rules of a ClusterRole with an ``aggregationRule`` (kube-controller-manager's
  clusterrole-aggregation controller): per selector, the rules of every ClusterRole it selects, in name
  order, each rule once.
- ServiceAccount usernames and groups (``serviceaccount.MakeUsername``, ``SplitUsername``,
  ``MakeGroupNames``).

Rules are the stored camelCase dicts (``verbs``, ``apiGroups``, ``resources``, ``resourceNames``,
``nonResourceURLs``). Pure: imports only ``flexq.api``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flexq.api.goquote import go_quote, go_quote_list

__all__ = [
    "ALL_AUTHENTICATED",
    "ALL_UNAUTHENTICATED",
    "ANONYMOUS",
    "SYSTEM_MASTERS",
    "Attributes",
    "RoleSource",
    "UserInfo",
    "aggregated_rules",
    "applies_to",
    "authorize",
    "covers",
    "escalation_message",
    "privileged",
    "rule_allows",
    "rules_for",
    "sa_groups",
    "sa_username",
    "split_sa_username",
    "visit_rules",
]

SYSTEM_MASTERS = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SA_PREFIX = "system:serviceaccount:"
SA_GROUP = "system:serviceaccounts"
GROUP = "rbac.authorization.k8s.io"
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True)
class UserInfo:
    """An authenticated user (``user.DefaultInfo``)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """As ``authentication.k8s.io/v1`` ``UserInfo`` prints it (empty fields left out)."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in sorted(self.extra.items())}
        return out


def privileged(user: UserInfo) -> bool:
    """``system:masters``: allowed everything, without an RBAC lookup (kube-apiserver's privileged-group
    authorizer, first in its chain; the twin's own token is in it)."""
    return SYSTEM_MASTERS in user.groups


@dataclass(frozen=True)
class Attributes:
    """What a request asks (``authorizer.AttributesRecord``)."""

    user: UserInfo
    verb: str
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    resource_request: bool = True
    path: str = ""

    def forbidden_message(self) -> str:
        """The reason part of the API server's 403 (``responsewriters.forbiddenMessage``)."""
        who = go_quote(self.user.name)
        if not self.resource_request:
            return f"User {who} cannot {self.verb} path {go_quote(self.path)}"
        resource = self.resource + (f"/{self.subresource}" if self.subresource else "")
        where = f"in the namespace {go_quote(self.namespace)}" if self.namespace else "at the cluster scope"
        return (
            f"User {who} cannot {self.verb} resource {go_quote(resource)} in API group "
            f"{go_quote(self.api_group)} {where}"
        )


# -- ServiceAccount identities ---------------------------------------------------------------------------


def sa_username(namespace: str, name: str) -> str:
    """``serviceaccount.MakeUsername``."""
    return f"{SA_PREFIX}{namespace}:{name}"


def sa_groups(namespace: str) -> tuple[str, str]:
    """``serviceaccount.MakeGroupNames``: every ServiceAccount's group and its namespace's."""
    return SA_GROUP, f"{SA_GROUP}:{namespace}"


def split_sa_username(username: str) -> tuple[str, str] | None:
    """``serviceaccount.SplitUsername``: (namespace, name) of a ServiceAccount's username, else None (not the
    prefix, not two parts, a namespace that is not a DNS-1123 label or a name not a DNS-1123 subdomain)."""
    if not username.startswith(SA_PREFIX):
        return None
    parts = username[len(SA_PREFIX) :].split(":")
    if len(parts) != 2:
        return None
    ns, name = parts
    if len(ns) > 63 or not _DNS1123_LABEL.fullmatch(ns):
        return None
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        return None
    return ns, name


# -- one rule against one request --------------------------------------------------------------------------


def _list(rule: Mapping[str, Any], key: str) -> Sequence[str]:
    value = rule.get(key)
    return value if isinstance(value, list) else ()


def verb_matches(rule: Mapping[str, Any], verb: str) -> bool:
    return any(v == "*" or v == verb for v in _list(rule, "verbs"))


def api_group_matches(rule: Mapping[str, Any], group: str) -> bool:
    return any(g == "*" or g == group for g in _list(rule, "apiGroups"))


def resource_matches(rule: Mapping[str, Any], combined: str, subresource: str) -> bool:
    """``combined`` is ``resource`` or ``resource/subresource``; a rule's ``*/subresource`` matches the
    subresource of every resource."""
    for r in _list(rule, "resources"):
        if r == "*" or r == combined:
            return True
        if subresource and len(r) == len(subresource) + 2 and r.startswith("*/") and r.endswith(subresource):
            return True
    return False


def resource_name_matches(rule: Mapping[str, Any], name: str) -> bool:
    names = _list(rule, "resourceNames")
    return not names or name in names


def non_resource_url_matches(rule: Mapping[str, Any], path: str) -> bool:
    for url in _list(rule, "nonResourceURLs"):
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Mapping[str, Any]) -> bool:
    """``RuleAllows``."""
    if attrs.resource_request:
        combined = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        return (
            verb_matches(rule, attrs.verb)
            and api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, combined, attrs.subresource)
            and resource_name_matches(rule, attrs.name)
        )
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


# -- which bindings apply ------------------------------------------------------------------------------------


def _applies(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        # a RoleBinding's subject without a namespace is in the binding's namespace
        ns = subject.get("namespace") or namespace
        return bool(ns) and user.name == sa_username(ns, name)
    return False


def applies_to(user: UserInfo, subjects: Iterable[Mapping[str, Any]] | None, namespace: str) -> int | None:
    """The index of the first subject that is ``user`` (``appliesTo``), else None."""
    for i, subject in enumerate(subjects or ()):
        if isinstance(subject, Mapping) and _applies(user, subject, namespace):
            return i
    return None


class RoleSource(Protocol):
    """Where the roles and bindings are read (the API server's informers)."""

    def cluster_role_bindings(self) -> Iterable[Mapping[str, Any]]: ...

    def role_bindings(self, namespace: str) -> Iterable[Mapping[str, Any]]: ...

    def cluster_role(self, name: str) -> Mapping[str, Any] | None: ...

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


def _describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f"{kind} {go_quote(name + '/' + (subject.get('namespace') or binding_namespace))}"
    return f"{kind} {go_quote(name)}"


def role_reference_rules(
    source: RoleSource, ref: Mapping[str, Any], namespace: str
) -> tuple[list[Mapping[str, Any]], str | None]:
    """``GetRoleReferenceRules``: the rules of a binding's ``roleRef``, or the error that it cannot be found."""
    kind, name = ref.get("kind"), ref.get("name") or ""
    if kind == "Role":
        role = source.role(namespace, name)
        if role is None:
            return [], f"role.rbac.authorization.k8s.io {go_quote(name)} not found"
    elif kind == "ClusterRole":
        role = source.cluster_role(name)
        if role is None:
            return [], f"clusterrole.rbac.authorization.k8s.io {go_quote(name)} not found"
    else:
        return [], f"unsupported role reference kind: {go_quote(str(kind))}"
    rules = role.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else [], None


def visit_rules(
    source: RoleSource, user: UserInfo, namespace: str
) -> Iterator[tuple[str, Mapping[str, Any] | None, str | None]]:
    """(source description, rule, None) for each rule that applies to ``user`` in ``namespace`` (the
    ClusterRoleBindings first), and ("", None, error) for each binding whose role cannot be found."""
    for binding in source.cluster_role_bindings():
        i = applies_to(user, binding.get("subjects"), "")
        if i is None:
            continue
        ref = binding.get("roleRef") or {}
        rules, err = role_reference_rules(source, ref, "")
        if err is not None:
            yield "", None, err
            continue
        name = (binding.get("metadata") or {}).get("name", "")
        described = (
            f"ClusterRoleBinding {go_quote(name)} of {ref.get('kind', '')} {go_quote(ref.get('name', ''))} "
            f"to {_describe_subject(binding['subjects'][i], '')}"
        )
        for rule in rules:
            yield described, rule, None
    if not namespace:
        return
    for binding in source.role_bindings(namespace):
        i = applies_to(user, binding.get("subjects"), namespace)
        if i is None:
            continue
        ref = binding.get("roleRef") or {}
        rules, err = role_reference_rules(source, ref, namespace)
        if err is not None:
            yield "", None, err
            continue
        name = (binding.get("metadata") or {}).get("name", "")
        described = (
            f"RoleBinding {go_quote(name + '/' + namespace)} of {ref.get('kind', '')} "
            f"{go_quote(ref.get('name', ''))} to {_describe_subject(binding['subjects'][i], namespace)}"
        )
        for rule in rules:
            yield described, rule, None


def _aggregate_errors(errors: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


def authorize(source: RoleSource, attrs: Attributes) -> tuple[bool, str]:
    """(allowed, reason): the privileged group (``system:masters``), then RBAC (``RBACAuthorizer.Authorize``)."""
    if privileged(attrs.user):
        return True, ""
    errors: list[str] = []
    for described, rule, err in visit_rules(source, attrs.user, attrs.namespace):
        if rule is not None and rule_allows(attrs, rule):
            return True, f"RBAC: allowed by {described}"
        if err is not None:
            errors.append(err)
    return False, f"RBAC: {_aggregate_errors(errors)}" if errors else ""


def rules_for(source: RoleSource, user: UserInfo, namespace: str) -> tuple[list[Mapping[str, Any]], str]:
    """Every rule that applies to ``user`` in ``namespace``, and the resolution errors (``RulesFor``)."""
    rules: list[Mapping[str, Any]] = []
    errors: list[str] = []
    for _described, rule, err in visit_rules(source, user, namespace):
        if rule is not None:
            rules.append(rule)
        if err is not None:
            errors.append(err)
    return rules, _aggregate_errors(errors) if errors else ""


# -- escalation: a user may only grant what they hold ----------------------------------------------------------


def breakdown_rule(rule: Mapping[str, Any]) -> list[dict[str, list[str]]]:
    """``BreakdownRule``: one rule per group x resource x verb (x name), and per URL x verb."""
    out: list[dict[str, list[str]]] = []
    names = list(_list(rule, "resourceNames"))
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in _list(rule, "verbs"):
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                if names:
                    out += [{**base, "resourceNames": [n]} for n in names]
                else:
                    out.append(base)
    for url in _list(rule, "nonResourceURLs"):
        for verb in _list(rule, "verbs"):
            out.append({"nonResourceURLs": [url], "verbs": [verb]})
    return out


def _has_all(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    have = set(owned)
    return all(w in have for w in wanted)


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if "*" in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def _rule_covers(owner: Mapping[str, Any], sub: Mapping[str, Any]) -> bool:
    verbs = "*" in _list(owner, "verbs") or _has_all(_list(owner, "verbs"), _list(sub, "verbs"))
    groups = "*" in _list(owner, "apiGroups") or _has_all(_list(owner, "apiGroups"), _list(sub, "apiGroups"))
    resources = _resources_cover(_list(owner, "resources"), _list(sub, "resources"))
    urls = all(
        any(_url_covers(o, s) for o in _list(owner, "nonResourceURLs")) for s in _list(sub, "nonResourceURLs")
    )
    owner_names, sub_names = _list(owner, "resourceNames"), _list(sub, "resourceNames")
    names = not owner_names if not sub_names else (not owner_names or _has_all(owner_names, sub_names))
    return verbs and groups and resources and names and urls


def covers(
    owner_rules: Sequence[Mapping[str, Any]], servant_rules: Iterable[Mapping[str, Any]]
) -> tuple[bool, list[dict[str, list[str]]]]:
    """``validation.Covers``: whether ``owner_rules`` allow everything ``servant_rules`` do, and what they miss."""
    missing = [
        sub
        for rule in servant_rules
        for sub in breakdown_rule(rule)
        if not any(_rule_covers(owner, sub) for owner in owner_rules)
    ]
    return not missing, missing


def compact_rules(rules: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """``CompactRules``: rules of one group and one resource, differing only by verb, as one."""
    out: list[dict[str, list[str]]] = []
    simple: dict[tuple[str, str], dict[str, list[str]]] = {}
    for rule in rules:
        if (
            set(rule) == {"apiGroups", "resources", "verbs"}
            and len(rule["apiGroups"]) == 1
            and len(rule["resources"]) == 1
        ):
            key = (rule["apiGroups"][0], rule["resources"][0])
            if key in simple:
                simple[key]["verbs"] = simple[key]["verbs"] + rule["verbs"]
            else:
                simple[key] = {k: list(v) for k, v in rule.items()}
        else:
            out.append(rule)
    return out + list(simple.values())


def compact_string(rule: Mapping[str, Any]) -> str:
    """``rbacv1helpers.CompactString``: ``{APIGroups:["x"], Resources:["y"], Verbs:["get"]}``."""
    parts = []
    for key, label in (
        ("apiGroups", "APIGroups"),
        ("resources", "Resources"),
        ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"),
        ("verbs", "Verbs"),
    ):
        if _list(rule, key):
            parts.append(f"{label}:{go_quote_list(_list(rule, key))}")
    return "{" + ", ".join(parts) + "}"


def escalation_message(
    source: RoleSource, user: UserInfo, namespace: str, rules: Iterable[Mapping[str, Any]]
) -> str | None:
    """``ConfirmNoEscalation``: None when ``user``'s rules in ``namespace`` cover ``rules``, else why not."""
    owned, errors = rules_for(source, user, namespace)
    ok, missing = covers(owned, rules)
    if ok:
        return None
    lines = sorted({compact_string(r) for r in compact_rules(missing)})
    msg = (
        f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant RBAC "
        "permissions not currently held:\n" + "\n".join(lines)
    )
    if errors:
        msg += f"; resolution errors: [{errors}]"
    return msg


# -- aggregation --------------------------------------------------------------------------------------------


def aggregated_rules(
    role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]], selects: Any
) -> list[dict[str, Any]] | None:
    """The rules the clusterrole-aggregation controller writes into ``role`` (None: it has no
    ``aggregationRule``): every other ClusterRole that one of its ``clusterRoleSelectors`` selects
    (``selects(selector, labels)``), in name order, each rule once."""
    agg = role.get("aggregationRule")
    if not isinstance(agg, Mapping):
        return None
    selectors = [s for s in agg.get("clusterRoleSelectors") or () if isinstance(s, Mapping)]
    own = (role.get("metadata") or {}).get("name")
    others = sorted(cluster_roles, key=lambda r: (r.get("metadata") or {}).get("name", ""))
    out: list[dict[str, Any]] = []
    for sel in selectors:  # upstream's order: per selector, the selected roles by name
        for other in others:
            md = other.get("metadata") or {}
            if md.get("name") == own or not selects(sel, md.get("labels") or {}):
                continue
            for rule in other.get("rules") or ():
                if isinstance(rule, Mapping) and rule not in out:
                    out.append(dict(rule))
    return out
