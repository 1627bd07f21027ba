"""``flexq.http.auth.impersonate`` against upstream's own cases (``apiserver/pkg/endpoints/filters/
impersonation_test.go``, ``TestImpersonationFilter``, case by case with upstream's names). Upstream's test
authorizer allows by the requester's groups; here the same grants are RBAC objects in a twin's store (a group's
grant is a ClusterRoleBinding to it), so the cases also exercise the authorizer. A group, extra or uid without a
user is a 400 (``apierrors.NewBadRequest``, as upstream answers since 1.27; the test's older copy says 500)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.datastructures import Headers

from flexq import Twin
from flexq.errors import BadRequest, Forbidden
from flexq.http import auth
from flexq.semantics.rbac import UserInfo

RBAC = "rbac.authorization.k8s.io"
AUTHN = "authentication.k8s.io"


def _grant(name: str, group: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": group}],
        },
    ]


def _imp(resources: list[str], group: str = "", names: list[str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [group], "resources": resources, "verbs": ["impersonate"]}
    if names:
        rule["resourceNames"] = names
    return rule


# upstream's impersonateAuthorizer, as RBAC
GRANTS = [
    *_grant("wheel", "wheel", [_imp(["users"])]),
    *_grant("sa-impersonater", "sa-impersonater", [_imp(["serviceaccounts"])]),
    *_grant("regular-impersonater", "regular-impersonater", [_imp(["users"])]),
    *_grant("group-impersonater", "group-impersonater", [_imp(["groups"])]),
    *_grant("extra-setter-scopes", "extra-setter-scopes", [_imp(["userextras/scopes"], AUTHN)]),
    *_grant("escaped-scopes", "escaped-scopes", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    *_grant(
        "almost-escaped-scopes",
        "almost-escaped-scopes",
        [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    ),
    *_grant(
        "extra-setter-particular-scopes",
        "extra-setter-particular-scopes",
        [_imp(["userextras/scopes"], AUTHN, ["scope-a"])],
    ),
    *_grant("extra-setter-project", "extra-setter-project", [_imp(["userextras/project"], AUTHN)]),
    *_grant(
        "everything-impersonater",
        "everything-impersonater",
        [
            _imp(["users"]),
            _imp(["uids"], AUTHN, ["some-uid"]),
            _imp(["groups"]),
            _imp(["userextras/scopes"], AUTHN),
        ],
    ),
]
ADMIN = UserInfo("system:admin", groups=("system:masters",))


@pytest.fixture(scope="module")
def store() -> Iterator[Any]:
    twin = Twin(clock="virtual")
    twin.apply(GRANTS)
    yield twin.core.current().store
    twin.close()


def headers(
    user: str = "", groups: tuple[str, ...] = (), extras: dict[str, list[str]] | None = None, uid: str = ""
) -> Headers:
    raw: list[tuple[bytes, bytes]] = []
    if user:
        raw.append((b"impersonate-user", user.encode()))
    raw += [(b"impersonate-group", g.encode()) for g in groups]
    for key, values in (extras or {}).items():
        raw += [(f"impersonate-extra-{key}".encode(), v.encode()) for v in values]
    if uid:
        raw.append((b"impersonate-uid", uid.encode()))
    return Headers(raw=raw)


CASES: list[tuple[str, UserInfo, dict[str, Any], UserInfo | type[Exception]]] = [
    ("not-impersonating", UserInfo("tester"), {}, UserInfo("tester")),
    ("impersonating-error", UserInfo("tester"), {"user": "anyone"}, Forbidden),
    ("impersonating-group-without-user", UserInfo("tester"), {"groups": ("some-group",)}, BadRequest),
    ("impersonating-extra-without-user", UserInfo("tester"), {"extras": {"scopes": ["scope-a"]}}, BadRequest),
    ("impersonating-uid-without-user", UserInfo("tester"), {"uid": "some-uid"}, BadRequest),
    (
        "disallowed-group",
        UserInfo("dev", groups=("wheel",)),
        {"user": "system:admin", "groups": ("some-group",)},
        Forbidden,
    ),
    (
        "allowed-group",
        UserInfo("dev", groups=("wheel", "group-impersonater")),
        {"user": "system:admin", "groups": ("some-group",)},
        UserInfo("system:admin", groups=("some-group", "system:authenticated")),
    ),
    (
        "disallowed-userextra-1",
        UserInfo("dev", groups=("wheel",)),
        {"user": "system:admin", "groups": ("some-group",), "extras": {"scopes": ["scope-a"]}},
        Forbidden,
    ),
    (
        "disallowed-userextra-2",
        UserInfo("dev", groups=("wheel", "extra-setter-project")),
        {"user": "system:admin", "groups": ("some-group",), "extras": {"scopes": ["scope-a"]}},
        Forbidden,
    ),
    (
        "disallowed-userextra-3",
        UserInfo("dev", groups=("wheel", "extra-setter-particular-scopes")),
        {"user": "system:admin", "groups": ("some-group",), "extras": {"scopes": ["scope-a", "scope-b"]}},
        Forbidden,
    ),
    (
        "allowed-userextras",
        UserInfo("dev", groups=("wheel", "extra-setter-scopes")),
        {"user": "system:admin", "extras": {"scopes": ["scope-a", "scope-b"]}},
        UserInfo("system:admin", groups=("system:authenticated",), extra={"scopes": ("scope-a", "scope-b")}),
    ),
    (
        "percent-escaped-userextras",
        UserInfo("dev", groups=("wheel", "escaped-scopes")),
        {"user": "system:admin", "extras": {"example.com%2fescaped%e1%9b%84scopes": ["scope-a", "scope-b"]}},
        UserInfo(
            "system:admin",
            groups=("system:authenticated",),
            extra={"example.com/escapedᛄscopes": ("scope-a", "scope-b")},
        ),
    ),
    (
        "almost-percent-escaped-userextras",
        UserInfo("dev", groups=("wheel", "almost-escaped-scopes")),
        {"user": "system:admin", "extras": {"almost%zzpercent%xxencoded": ["scope-a", "scope-b"]}},
        UserInfo(
            "system:admin",
            groups=("system:authenticated",),
            extra={"almost%zzpercent%xxencoded": ("scope-a", "scope-b")},
        ),
    ),
    (
        "allowed-users-impersonation",
        UserInfo("dev", groups=("regular-impersonater",)),
        {"user": "tester"},
        UserInfo("tester", groups=("system:authenticated",)),
    ),
    ("disallowed-impersonating", UserInfo("dev", groups=("sa-impersonater",)), {"user": "tester"}, Forbidden),
    (
        "allowed-sa-impersonating",
        UserInfo("dev", groups=("sa-impersonater",)),
        {"user": "system:serviceaccount:foo:default"},
        UserInfo(
            "system:serviceaccount:foo:default",
            groups=("system:serviceaccounts", "system:serviceaccounts:foo", "system:authenticated"),
        ),
    ),
    (
        "anonymous-username-prevents-adding-authenticated-group",
        ADMIN,
        {"user": "system:anonymous"},
        UserInfo("system:anonymous", groups=("system:unauthenticated",)),
    ),
    (
        "unauthenticated-group-prevents-adding-authenticated-group",
        ADMIN,
        {"user": "unknown", "groups": ("system:unauthenticated",)},
        UserInfo("unknown", groups=("system:unauthenticated",)),
    ),
    (
        "unauthenticated-group-prevents-double-adding-authenticated-group",
        ADMIN,
        {"user": "unknown", "groups": ("system:authenticated",)},
        UserInfo("unknown", groups=("system:authenticated",)),
    ),
    (
        "specified-authenticated-group-prevents-double-adding-authenticated-group",
        UserInfo("dev", groups=("wheel", "group-impersonater")),
        {"user": "system:admin", "groups": ("some-group", "system:authenticated")},
        UserInfo("system:admin", groups=("some-group", "system:authenticated")),
    ),
    (
        "anonymous-user-prevents-double-adding-unauthenticated-group",
        ADMIN,
        {"user": "system:anonymous", "groups": ("system:unauthenticated",)},
        UserInfo("system:anonymous", groups=("system:unauthenticated",)),
    ),
    (
        "allowed-user-impersonation-with-uid",
        UserInfo("dev", groups=("everything-impersonater",)),
        {"user": "tester", "uid": "some-uid"},
        UserInfo("tester", uid="some-uid", groups=("system:authenticated",)),
    ),
    (
        "disallowed-user-impersonation-with-uid",
        UserInfo("dev", groups=("everything-impersonater",)),
        {"user": "tester", "uid": "disallowed-uid"},
        Forbidden,
    ),
    (
        "allowed-impersonation-with-all-headers",
        UserInfo("dev", groups=("everything-impersonater",)),
        {
            "user": "tester",
            "uid": "some-uid",
            "groups": ("system:authenticated",),
            "extras": {"scopes": ["scope-a", "scope-b"]},
        },
        UserInfo(
            "tester",
            uid="some-uid",
            groups=("system:authenticated",),
            extra={"scopes": ("scope-a", "scope-b")},
        ),
    ),
]


@pytest.mark.parametrize(("name", "requestor", "asked", "expected"), CASES, ids=[c[0] for c in CASES])
def test_impersonation_filter(store: Any, name: str, requestor: UserInfo, asked: dict, expected: Any) -> None:
    if isinstance(expected, type):
        with pytest.raises(expected):
            auth.impersonate(requestor, headers(**asked), store)
        return
    got = auth.impersonate(requestor, headers(**asked), store)
    assert (got.name, got.uid, list(got.groups), dict(got.extra)) == (
        expected.name,
        expected.uid,
        list(expected.groups),
        dict(expected.extra),
    )
