"""The review APIs: what kubectl's ``auth`` commands and other API servers' delegated authorization call, answered
truthfully from the cluster's RBAC.

- ``SelfSubjectAccessReview`` (``kubectl auth can-i``): may the requesting user (after impersonation) do this?
- ``SelfSubjectRulesReview`` (``kubectl auth can-i --list``): the rules that apply to the user in a namespace.
- ``SelfSubjectReview`` (``kubectl auth whoami``): the user, its uid, groups and extra.
- ``SubjectAccessReview`` and ``LocalSubjectAccessReview`` (``create`` on them needs its own permission, as
  ``system:auth-delegator`` grants): the same question for the user, groups, uid and extra the spec names.
- ``TokenReview``: who a bearer token is (``authenticated``, ``user``, ``audiences``).

Create-only virtual resources: nothing is stored, the answer is 201 with the request's spec and the status.
Specs are checked as ``ValidateSelfSubjectAccessReviewSpec``/``ValidateSubjectAccessReviewSpec`` do (exactly one
of ``resourceAttributes`` or ``nonResourceAttributes``; a user or a group; a local review's namespace is its
own). Bodies come as JSON or protobuf (decoded by the caller). Must not import domain packages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flexq.errors import BadRequest, Cause, Invalid, MethodNotAllowed
from flexq.http.requestinfo import RequestInfo
from flexq.semantics import rbac
from flexq.semantics.rbac import Attributes, RoleSource, UserInfo

__all__ = ["handles", "review"]

AUTHZ = "authorization.k8s.io"
AUTHN = "authentication.k8s.io"

# (group, version, plural) -> kind; the local review is namespaced
_KINDS: dict[tuple[str, str, str], str] = {
    (AUTHZ, "v1", "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    (AUTHZ, "v1", "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
    (AUTHZ, "v1", "subjectaccessreviews"): "SubjectAccessReview",
    (AUTHZ, "v1", "localsubjectaccessreviews"): "LocalSubjectAccessReview",
    (AUTHN, "v1", "selfsubjectreviews"): "SelfSubjectReview",
    (AUTHN, "v1beta1", "selfsubjectreviews"): "SelfSubjectReview",
    (AUTHN, "v1", "tokenreviews"): "TokenReview",
}


def target(info: RequestInfo) -> tuple[str, str, str, str | None] | None:
    """(group, version, kind, namespace) of a review request, else None."""
    if len(info.parts) != 1:
        return None
    kind = _KINDS.get((info.api_group, info.api_version, info.resource))
    if kind is None or info.namespaced_path != (kind == "LocalSubjectAccessReview"):
        return None
    return info.api_group, info.api_version, kind, info.namespace if info.namespaced_path else None


def handles(info: RequestInfo) -> bool:
    return target(info) is not None


def _invalid(kind: str, group: str, field: str, message: str) -> Invalid:
    return Invalid(
        f'{kind}.{group} "" is invalid: {field}: {message}',
        kind=kind,
        group=group,
        causes=[Cause(field, "FieldValueInvalid", message)],
    )


def _str(spec: Mapping[str, Any], key: str) -> str:
    value = spec.get(key)
    return value if isinstance(value, str) else ""


def _attributes(kind: str, spec: Mapping[str, Any], user: UserInfo, namespace: str | None) -> Attributes:
    res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if isinstance(res, Mapping) and isinstance(nonres, Mapping):
        raise _invalid(
            kind,
            AUTHZ,
            "spec.nonResourceAttributes",
            'Invalid value: "{...}": cannot be specified in combination with resourceAttributes',
        )
    if isinstance(res, Mapping):
        ns = _str(res, "namespace")
        if namespace is not None and ns != namespace:
            raise _invalid(
                kind,
                AUTHZ,
                "spec.resourceAttributes.namespace",
                f'Invalid value: "{ns}": must match metadata.namespace',
            )
        return Attributes(
            user,
            _str(res, "verb"),
            ns,
            _str(res, "group"),
            _str(res, "version"),
            _str(res, "resource"),
            _str(res, "subresource"),
            _str(res, "name"),
        )
    if isinstance(nonres, Mapping):
        if namespace is not None:
            raise _invalid(
                kind, AUTHZ, "spec.nonResourceAttributes", "Forbidden: disallowed on this kind of request"
            )
        return Attributes(user, _str(nonres, "verb"), resource_request=False, path=_str(nonres, "path"))
    raise _invalid(
        kind,
        AUTHZ,
        "spec.resourceAttributes",
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
    )


def _subject(kind: str, spec: Mapping[str, Any]) -> UserInfo:
    """The user a (Local)SubjectAccessReview asks about, its groups as given."""
    groups = [g for g in spec.get("groups") or () if isinstance(g, str)]
    name = _str(spec, "user")
    if not name and not groups:
        raise _invalid(
            kind, AUTHZ, "spec.user", 'Invalid value: "": at least one of user or group must be specified'
        )
    extra_raw = spec.get("extra")
    extra = {
        k: tuple(x for x in v if isinstance(x, str))
        for k, v in (extra_raw.items() if isinstance(extra_raw, Mapping) else ())
        if isinstance(v, list)
    }
    return UserInfo(name, uid=_str(spec, "uid"), groups=tuple(groups), extra=extra)


def _rules(source: RoleSource, user: UserInfo, namespace: str) -> dict[str, Any]:
    """``SubjectRulesReviewStatus``: what RBAC's bindings grant (``system:masters`` sees ``*`` through the bootstrap
    ``cluster-admin`` binding, as on the API server)."""
    found, errors = rbac.rules_for(source, user, namespace)
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    for rule in found:
        if rule.get("resources"):
            r = {"verbs": list(rule.get("verbs") or []), "apiGroups": list(rule.get("apiGroups") or [])}
            r["resources"] = list(rule["resources"])
            if rule.get("resourceNames"):
                r["resourceNames"] = list(rule["resourceNames"])
            resource_rules.append(r)
        if rule.get("nonResourceURLs"):
            non_resource_rules.append(
                {"verbs": list(rule.get("verbs") or []), "nonResourceURLs": list(rule["nonResourceURLs"])}
            )
    out: dict[str, Any] = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": False,
    }
    if errors:
        out["evaluationError"] = errors
    return out


def review(
    method: str,
    info: RequestInfo,
    sent: Any,
    user: UserInfo,
    authorize: Callable[[Attributes], tuple[bool, str]],
    source: RoleSource,
    token_user: Callable[[str, list[str]], tuple[UserInfo | None, list[str]]] | None = None,
) -> dict[str, Any]:
    """The answer to a review ``POST`` of ``sent`` (the decoded body) by ``user``."""
    found = target(info)
    assert found is not None
    group, version, kind, namespace = found
    if method != "POST":
        raise MethodNotAllowed(
            f"the server does not allow this method on the requested resource ({kind} is create-only)"
        )
    if sent is not None and not isinstance(sent, Mapping):
        raise BadRequest(f"the body of the request must be a {kind} object")
    given = sent.get("spec") if isinstance(sent, Mapping) else None
    spec: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    meta: dict[str, Any] = {"creationTimestamp": None}
    if namespace is not None:
        meta["namespace"] = namespace
    out: dict[str, Any] = {"kind": kind, "apiVersion": f"{group}/{version}", "metadata": meta}
    if kind == "SelfSubjectReview":
        out["status"] = {"userInfo": user.to_json()}
        return out
    out["spec"] = dict(spec)
    if kind == "TokenReview":
        token = _str(spec, "token")
        audiences = [a for a in spec.get("audiences") or () if isinstance(a, str)]
        who, auds = token_user(token, audiences) if token_user is not None else (None, [])
        out["status"] = (
            {"authenticated": True, "user": who.to_json(), "audiences": auds} if who else {"user": {}}
        )
        return out
    if kind == "SelfSubjectRulesReview":
        ns = _str(spec, "namespace")
        if not ns:
            raise BadRequest("no namespace on request")
        out["status"] = _rules(source, user, ns)
        return out
    subject = user if kind == "SelfSubjectAccessReview" else _subject(kind, spec)
    allowed, reason = authorize(_attributes(kind, spec, subject, namespace))
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    out["status"] = status
    return out
