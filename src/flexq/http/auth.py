"""Who a request is and whether it may: the API server's authentication, impersonation and authorization filters,
for a served twin.

Owns:
- ``Authenticator``: the bearer token of the request. The twin's own token (``pki/token``, what ``flexq up``
  writes into the kubeconfig) is the cluster admin ``flexq-admin`` in ``system:masters``; a ServiceAccount token
  the twin signed (``TokenRequest``, ``kubectl create token``, a pod's projected token) is that
  ServiceAccount — verified as the API server's ``JWTTokenAuthenticator`` does: this cluster's issuer and
  audience, not expired, the ServiceAccount (and the bound Pod or Secret) still there with the same uid. Anything
  else is 401. A twin served without a token (tests) treats every request as the admin's.
- ``impersonate`` (``WithImpersonation``): ``Impersonate-User``/``-Group``/``-Uid``/``-Extra-*``, each
  authorized as the ``impersonate`` verb on ``users``, ``serviceaccounts``, ``groups``, ``uids`` or
  ``userextras/<key>``; a ServiceAccount gets its groups when none are given, everyone ``system:authenticated``
  (the anonymous user ``system:unauthenticated``); groups without a user are a 400.
- ``StoreRoles`` (RBAC's role source over a cluster's store, read on the HTTP thread: the store's own indexes) and
  ``authorize``/``forbidden`` (the 403 ``Status`` the API server writes: ``pods "x" is forbidden: User "…" cannot
  get resource "pods" in API group "" in the namespace "…"``, with RBAC's reason when it has one).
- ``escalation_check``: a Role, ClusterRole or binding written by someone outside ``system:masters`` may grant
  only what they hold, unless they may ``escalate`` the role or ``bind`` its role (``ConfirmNoEscalation``,
  ``BindingAuthorized``; an ``aggregationRule`` needs cluster-admin's authority).

What a request asks (its authorization attributes) is read off its ``flexq.http.requestinfo.RequestInfo``,
computed once per request. The rules themselves live in ``flexq.semantics.rbac`` and
``flexq.semantics.satokens``. Must not import domain packages.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from flexq.api.goquote import go_quote
from flexq.errors import BadRequest, Forbidden
from flexq.semantics import rbac, satokens
from flexq.semantics.rbac import Attributes, UserInfo
from flexq.store import Store

__all__ = [
    "ADMIN",
    "ANONYMOUS",
    "Authenticator",
    "StoreRoles",
    "authorize",
    "forbidden",
    "impersonate",
]

log = logging.getLogger("flexq.http.auth")
USER_KEY = "flexq.user"  # where a request's scope keeps the user it acts as
ADMIN = UserInfo("flexq-admin", uid="flexq-admin", groups=(rbac.SYSTEM_MASTERS, rbac.ALL_AUTHENTICATED))
ANONYMOUS = UserInfo(rbac.ANONYMOUS, groups=(rbac.ALL_UNAUTHENTICATED,))
AUTH_GROUP = "authentication.k8s.io"
_CACHE = 4096  # verified token signatures remembered (a token's objects are checked on every request)


# -- authentication -------------------------------------------------------------------------------------------


class Authenticator:
    """The bearer token of a request -> its user (None: 401)."""

    def __init__(self, token: str | None, signing_key: Callable[[], bytes | None]) -> None:
        self.token = token
        self._signing_key = signing_key
        self._signer: tuple[bytes, satokens.Signer] | None = None
        self._verified: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def signer(self) -> satokens.Signer | None:
        """The service-account key's signer (None until the server has one)."""
        pem = self._signing_key()
        if pem is None:
            return None
        cached = self._signer
        if cached is None or cached[0] != pem:
            cached = self._signer = (pem, satokens.Signer(pem))
        return cached[1]

    def admin(self, header: str) -> bool:
        """Whether ``header`` (``Authorization``) carries the twin's own token."""
        if self.token is None:
            return True
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())

    def user(self, header: str, store: Store, issuer: str, now: float) -> UserInfo | None:
        """The user of ``header`` for a request to the cluster of ``store`` (whose issuer is ``issuer``)."""
        if self.admin(header):
            return ADMIN
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value:
            return None
        claims = self._claims(value)
        if claims is None or satokens.validate_claims(claims, now, issuer, [issuer]) is not None:
            return None
        if satokens.bound_objects_valid(claims, now, lambda k, n, ns: store.peek(k, n, ns)) is not None:
            return None
        return satokens.user_for(claims)

    def _claims(self, token: str) -> dict[str, Any] | None:
        with self._lock:
            hit = self._verified.get(token)
            if hit is not None:
                self._verified.move_to_end(token)
                return hit
        signer = self.signer()
        claims = signer.verify(token) if signer is not None else None
        if claims is not None:
            with self._lock:
                self._verified[token] = claims
                while len(self._verified) > _CACHE:
                    self._verified.popitem(last=False)
        return claims


# -- authorization ----------------------------------------------------------------------------------------------


class StoreRoles:
    """RBAC's roles and bindings, read from a cluster's store (its indexes: no copies, read-only)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def cluster_role_bindings(self) -> Iterable[Mapping[str, Any]]:
        return self.store.peek_list("ClusterRoleBinding")

    def role_bindings(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return self.store.peek_list("RoleBinding", namespace)

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        return self.store.peek("ClusterRole", name)

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.store.peek("Role", name, namespace)


def authorize(store: Store, attrs: Attributes) -> tuple[bool, str]:
    """The privileged group, then RBAC over ``store``'s roles (``rbac.authorize``)."""
    return rbac.authorize(StoreRoles(store), attrs)


def forbidden(attrs: Attributes, reason: str = "") -> Forbidden:
    """The API server's 403 (``responsewriters.Forbidden`` through ``errors.NewForbidden``)."""
    msg = attrs.forbidden_message() + (f": {reason}" if reason else "")
    if not attrs.resource_request:
        return Forbidden(f"forbidden: {msg}")
    qualified = attrs.resource + (f".{attrs.api_group}" if attrs.api_group else "")
    if attrs.name:
        text = f"{qualified} {go_quote(attrs.name)} is forbidden: {msg}"
    else:
        text = f"{qualified} is forbidden: {msg}"
    return Forbidden(text, kind=attrs.resource, name=attrs.name, group=attrs.api_group)


def check(store: Store, attrs: Attributes) -> None:
    """Raise the 403 unless ``attrs`` is allowed."""
    allowed, reason = authorize(store, attrs)
    if not allowed:
        err = forbidden(attrs, reason)
        log.debug("denied: %s", err.message)  # the API server logs each denial (at -v=4)
        raise err


# -- impersonation ----------------------------------------------------------------------------------------------


def impersonate(requestor: UserInfo, headers: Any, store: Store) -> UserInfo:
    """The user the request acts as (``requestor`` when it impersonates no one); each impersonated attribute
    must be allowed to ``requestor`` (403 otherwise). ``headers`` is Starlette's (lowercase names)."""
    user_name = headers.get("impersonate-user") or ""
    groups_given = headers.getlist("impersonate-group")
    uid = headers.get("impersonate-uid") or ""
    extras: dict[str, list[str]] = {}
    for key, value in headers.items():
        if key.startswith("impersonate-extra-"):
            extras.setdefault(unquote(key[len("impersonate-extra-") :].lower()), []).append(value)
    if not (user_name or groups_given or uid or extras):
        return requestor
    if not user_name:
        asked = [f"Group {g}" for g in groups_given] + [
            f"UserExtra {k}={v}" for k, vs in extras.items() for v in vs
        ]
        if uid:
            asked.append(f"UID {uid}")
        raise BadRequest(f"requested [{' '.join(asked)}] without impersonating a user")
    requests: list[Attributes] = []
    sa = rbac.split_sa_username(user_name)
    groups: list[str] = []
    if sa is not None:
        requests.append(Attributes(requestor, "impersonate", sa[0], "", "v1", "serviceaccounts", name=sa[1]))
        if not groups_given:
            groups = list(rbac.sa_groups(sa[0]))
    else:
        requests.append(Attributes(requestor, "impersonate", "", "", "v1", "users", name=user_name))
    for g in groups_given:
        requests.append(Attributes(requestor, "impersonate", "", "", "v1", "groups", name=g))
        groups.append(g)
    for key, values in extras.items():
        for v in values:
            requests.append(Attributes(requestor, "impersonate", "", AUTH_GROUP, "v1", "userextras", key, v))
    if uid:
        requests.append(Attributes(requestor, "impersonate", "", AUTH_GROUP, "v1", "uids", name=uid))
    for attrs in requests:
        check(store, attrs)
    if user_name != rbac.ANONYMOUS:
        if rbac.ALL_AUTHENTICATED not in groups and rbac.ALL_UNAUTHENTICATED not in groups:
            groups.append(rbac.ALL_AUTHENTICATED)
    elif rbac.ALL_UNAUTHENTICATED not in groups:
        groups.append(rbac.ALL_UNAUTHENTICATED)
    return UserInfo(user_name, uid=uid, groups=tuple(groups), extra={k: tuple(v) for k, v in extras.items()})


# -- RBAC's own escalation check (pkg/registry/rbac/*/policybased) ------------------------------------------------

_FULL_AUTHORITY = [
    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
    {"nonResourceURLs": ["*"], "verbs": ["*"]},
]
_PLURALS = {
    "Role": "roles",
    "ClusterRole": "clusterroles",
    "RoleBinding": "rolebindings",
    "ClusterRoleBinding": "clusterrolebindings",
}
# metadata a write may change without the check: the garbage collector's fields and what the server sets
_GC_FIELDS = (
    "ownerReferences",
    "finalizers",
    "resourceVersion",
    "managedFields",
    "generation",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def _only_gc_fields(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """``IsOnlyMutatingGCFields``: the two differ at most in owner references and finalizers."""

    def strip(obj: Mapping[str, Any]) -> dict[str, Any]:
        md = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS}
        return {**{k: v for k, v in obj.items() if k not in ("metadata", "status")}, "metadata": md}

    return strip(new) == strip(old)


def escalation_check(
    store: Store,
    user: UserInfo,
    kind: str,
    namespace: str,
    new: Mapping[str, Any],
    old: Mapping[str, Any] | None,
) -> None:
    """Refuse (403) a Role, ClusterRole or binding that would grant what ``user`` does not hold, unless they may
    ``escalate`` (roles) or ``bind`` (bindings) it, as the RBAC registry's policy-based storage does."""
    if rbac.privileged(user) or (old is not None and _only_gc_fields(new, old)):
        return
    group = rbac.GROUP
    plural = _PLURALS[kind]
    name = (new.get("metadata") or {}).get("name", "")

    def refuse(why: str) -> Forbidden:
        return Forbidden(
            f"{plural}.{group} {go_quote(name)} is forbidden: {why}", kind=plural, name=name, group=group
        )

    source = StoreRoles(store)
    if kind in ("Role", "ClusterRole"):
        if authorize(store, Attributes(user, "escalate", namespace, group, "v1", plural, name=name))[0]:
            return
        msg = rbac.escalation_message(
            source, user, namespace, [r for r in new.get("rules") or () if isinstance(r, Mapping)]
        )
        if msg is not None:
            raise refuse(msg)
        changed_agg = old is None or old.get("aggregationRule") != new.get("aggregationRule")
        aggregating = kind == "ClusterRole" and bool(new.get("aggregationRule")) and changed_agg
        if aggregating and rbac.escalation_message(source, user, "", _FULL_AUTHORITY) is not None:
            raise refuse("must have cluster-admin privileges to use the aggregationRule")
        return
    ref = new.get("roleRef") or {}
    role_plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
    bind = Attributes(
        user,
        "bind",
        namespace,
        str(ref.get("apiGroup") or ""),
        "",
        role_plural,
        name=str(ref.get("name") or ""),
    )
    if authorize(store, bind)[0]:
        return
    rules, err = rbac.role_reference_rules(source, ref, namespace)
    if err is not None:
        raise refuse(err)
    msg = rbac.escalation_message(source, user, namespace, rules)
    if msg is not None:
        raise refuse(msg)
