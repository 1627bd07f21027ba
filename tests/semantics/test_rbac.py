"""``flexq.semantics.rbac`` against upstream's own RBAC tests, ported case by case with upstream's names:
``plugin/pkg/auth/authorizer/rbac/rbac_test.go`` (TestAuthorizer, TestRuleMatches),
``pkg/registry/rbac/validation/rule_test.go`` (TestDefaultRuleResolver, TestAppliesTo) and
``component-helpers/auth/rbac/validation/policy_comparator_test.go`` (the TestCovers* cases,
TestNonResourceURLCovers); then the reasons and messages the API server prints."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from flexq.semantics import rbac
from flexq.semantics.rbac import Attributes, UserInfo
from flexq.semantics.selectors import label_selector_matches

GROUP = "rbac.authorization.k8s.io"


def _canon(rule: Mapping[str, Any]) -> str:
    return json.dumps(rule, sort_keys=True)


class Static:
    """upstream's StaticRoles: a rule resolver over lists of objects."""

    def __init__(
        self,
        roles: Iterable[dict] = (),
        role_bindings: Iterable[dict] = (),
        cluster_roles: Iterable[dict] = (),
        cluster_role_bindings: Iterable[dict] = (),
    ) -> None:
        self.roles, self.rbs = list(roles), list(role_bindings)
        self.crs, self.crbs = list(cluster_roles), list(cluster_role_bindings)

    def cluster_role_bindings(self) -> Iterable[Mapping[str, Any]]:
        return self.crbs

    def role_bindings(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return [b for b in self.rbs if b["metadata"]["namespace"] == namespace]

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        return next((r for r in self.crs if r["metadata"]["name"] == name), None)

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return next(
            (r for r in self.roles if r["metadata"] == {"namespace": namespace, "name": name}),
            None,
        )


def new_rule(verbs: str, groups: str, resources: str, urls: str) -> dict:
    """upstream's newRule: each comma-separated list split as strings.Split does ("" gives [""])."""
    return {
        "verbs": verbs.split(","),
        "apiGroups": groups.split(","),
        "resources": resources.split(","),
        "nonResourceURLs": urls.split(","),
    }


def new_cluster_role(name: str, *rules: dict) -> dict:
    return {"metadata": {"name": name}, "rules": list(rules)}


def _subjects(subjects: Iterable[str]) -> list[dict]:
    out = []
    for s in subjects:
        kind, name = s.split(":", 1)
        out.append({"kind": kind, "name": name, **({"apiGroup": GROUP} if kind != "ServiceAccount" else {})})
    return out


def new_cluster_role_binding(role: str, *subjects: str) -> dict:
    return {
        "metadata": {"name": ""},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": _subjects(subjects),
    }


def new_role_binding(namespace: str, role: str, kind: str, *subjects: str) -> dict:
    return {
        "metadata": {"namespace": namespace, "name": ""},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role},
        "subjects": _subjects(subjects),
    }


def attrs(user: str, groups: str, verb: str, resource: str, sub: str, ns: str, group: str) -> Attributes:
    """upstream's defaultAttributes (groups comma-separated, as strings.Split gives them)."""
    return Attributes(
        UserInfo(user, groups=tuple(groups.split(","))),
        verb,
        namespace=ns,
        api_group=group,
        resource=resource,
        subresource=sub,
    )


def url(verb: str, path: str, name: str = "", groups: tuple[str, ...] = ()) -> Attributes:
    return Attributes(UserInfo(name, groups=groups), verb, resource_request=False, path=path)


AUTHORIZER_CASES = [
    (
        Static(
            cluster_roles=[new_cluster_role("admin", new_rule("*", "*", "*", "*"))],
            role_bindings=[new_role_binding("ns1", "admin", "ClusterRole", "User:admin", "Group:admins")],
        ),
        [
            attrs("admin", "", "get", "Pods", "", "ns1", ""),
            attrs("admin", "", "watch", "Pods", "", "ns1", ""),
            attrs("admin", "group1", "watch", "Foobar", "", "ns1", ""),
            attrs("joe", "admins", "watch", "Foobar", "", "ns1", ""),
            attrs("joe", "group1,admins", "watch", "Foobar", "", "ns1", ""),
        ],
        [
            attrs("admin", "", "GET", "Pods", "", "ns2", ""),
            attrs("admin", "", "GET", "Nodes", "", "", ""),
            attrs("admin", "admins", "GET", "Pods", "", "ns2", ""),
            attrs("admin", "admins", "GET", "Nodes", "", "", ""),
        ],
    ),
    (  # Non-resource-url tests
        Static(
            cluster_roles=[
                new_cluster_role("non-resource-url-getter", new_rule("get", "", "", "/apis")),
                new_cluster_role("non-resource-url", new_rule("*", "", "", "/apis")),
                new_cluster_role("non-resource-url-prefix", new_rule("get", "", "", "/apis/*")),
            ],
            cluster_role_bindings=[
                new_cluster_role_binding("non-resource-url-getter", "User:foo", "Group:bar"),
                new_cluster_role_binding("non-resource-url", "User:admin", "Group:admin"),
                new_cluster_role_binding("non-resource-url-prefix", "User:prefixed", "Group:prefixed"),
            ],
        ),
        [
            url("get", "/apis", "foo"),
            url("get", "/apis", groups=("bar",)),
            url("get", "/apis", "admin"),
            url("get", "/apis", groups=("admin",)),
            url("watch", "/apis", "admin"),
            url("watch", "/apis", groups=("admin",)),
            url("get", "/apis/v1", "prefixed"),
            url("get", "/apis/v1", groups=("prefixed",)),
            url("get", "/apis/v1/foobar", "prefixed"),
            url("get", "/apis/v1/foorbar", groups=("prefixed",)),
        ],
        [
            url("watch", "/apis", "foo"),  # wrong verb
            url("watch", "/apis", groups=("bar",)),
            url("get", "/api/v1", "foo"),  # wrong path
            url("get", "/api/v1", groups=("bar",)),
            url("get", "/api/v1", "admin"),
            url("get", "/api/v1", groups=("admin",)),
            url("get", "/api/v1", "prefixed"),  # not covered by prefix
            url("get", "/api/v1", groups=("prefixed",)),
        ],
    ),
    (  # test subresource resolution
        Static(
            cluster_roles=[new_cluster_role("admin", new_rule("*", "*", "pods", "*"))],
            role_bindings=[new_role_binding("ns1", "admin", "ClusterRole", "User:admin", "Group:admins")],
        ),
        [attrs("admin", "", "get", "pods", "", "ns1", "")],
        [attrs("admin", "", "get", "pods", "status", "ns1", "")],
    ),
    (  # test subresource resolution
        Static(
            cluster_roles=[new_cluster_role("admin", new_rule("*", "*", "pods/status", "*"))],
            role_bindings=[new_role_binding("ns1", "admin", "ClusterRole", "User:admin", "Group:admins")],
        ),
        [attrs("admin", "", "get", "pods", "status", "ns1", "")],
        [attrs("admin", "", "get", "pods", "", "ns1", "")],
    ),
]


@pytest.mark.parametrize(("source", "should_pass", "should_fail"), AUTHORIZER_CASES, ids=range(4))
def test_authorizer(source: Static, should_pass: list[Attributes], should_fail: list[Attributes]) -> None:
    for a in should_pass:
        assert rbac.authorize(source, a)[0], f"incorrectly restricted {a}"
    for a in should_fail:
        assert not rbac.authorize(source, a)[0], f"incorrectly passed {a}"


def _res(verb: str, group: str, resource: str, sub: str = "") -> Attributes:
    return Attributes(UserInfo(""), verb, api_group=group, resource=resource, subresource=sub)


def _rule(verbs: list[str], groups: list[str] | None = None, resources: list[str] | None = None, urls=None):
    out: dict[str, Any] = {"verbs": verbs}
    if groups is not None:
        out["apiGroups"] = groups
    if resources is not None:
        out["resources"] = resources
    if urls is not None:
        out["nonResourceURLs"] = urls
    return out


RULE_MATCHES = {
    "star verb, exact match other": (
        _rule(["*"], ["group1"], ["resource1"]),
        {
            ("verb1", "group1", "resource1"): True,
            ("verb1", "group2", "resource1"): False,
            ("verb1", "group1", "resource2"): False,
            ("verb1", "group2", "resource2"): False,
            ("verb2", "group1", "resource1"): True,
            ("verb2", "group2", "resource1"): False,
            ("verb2", "group1", "resource2"): False,
            ("verb2", "group2", "resource2"): False,
        },
    ),
    "star group, exact match other": (
        _rule(["verb1"], ["*"], ["resource1"]),
        {
            ("verb1", "group1", "resource1"): True,
            ("verb1", "group2", "resource1"): True,
            ("verb1", "group1", "resource2"): False,
            ("verb1", "group2", "resource2"): False,
            ("verb2", "group1", "resource1"): False,
            ("verb2", "group2", "resource1"): False,
            ("verb2", "group1", "resource2"): False,
            ("verb2", "group2", "resource2"): False,
        },
    ),
    "star resource, exact match other": (
        _rule(["verb1"], ["group1"], ["*"]),
        {
            ("verb1", "group1", "resource1"): True,
            ("verb1", "group2", "resource1"): False,
            ("verb1", "group1", "resource2"): True,
            ("verb1", "group2", "resource2"): False,
            ("verb2", "group1", "resource1"): False,
            ("verb2", "group2", "resource1"): False,
            ("verb2", "group1", "resource2"): False,
            ("verb2", "group2", "resource2"): False,
        },
    ),
    "tuple expansion": (
        _rule(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"]),
        {
            (v, g, r): True
            for v in ("verb1", "verb2")
            for g in ("group1", "group2")
            for r in ("resource1", "resource2")
        },
    ),
    "subresource expansion": (
        _rule(["*"], ["*"], ["resource1/subresource1"]),
        {
            ("verb1", "group1", "resource1", "subresource1"): True,
            ("verb1", "group2", "resource1", "subresource2"): False,
            ("verb1", "group1", "resource2", "subresource1"): False,
            ("verb1", "group2", "resource2", "subresource1"): False,
            ("verb2", "group1", "resource1", "subresource1"): True,
            ("verb2", "group2", "resource1", "subresource2"): False,
            ("verb2", "group1", "resource2", "subresource1"): False,
            ("verb2", "group2", "resource2", "subresource1"): False,
        },
    ),
    "star nonresource, exact match other": (
        _rule(["verb1"], urls=["*"]),
        {
            **{("verb1", p): True for p in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")},
            **{("verb2", p): False for p in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")},
        },
    ),
    "star nonresource subpath": (
        _rule(["verb1"], urls=["/foo/*"]),
        {
            ("verb1", "/foo"): False,
            ("verb1", "/foo/bar"): True,
            ("verb1", "/foo/baz"): True,
            ("verb1", "/foo/bar/one"): True,
            ("verb1", "/foo/baz/one"): True,
            ("verb1", "/notfoo"): False,
            ("verb1", "/notfoo/bar"): False,
            ("verb1", "/notfoo/baz"): False,
            ("verb1", "/notfoo/bar/one"): False,
            ("verb1", "/notfoo/baz/one"): False,
        },
    ),
    "star verb, exact nonresource": (
        _rule(["*"], urls=["/foo", "/foo/bar/one"]),
        {
            **{(v, "/foo"): True for v in ("verb1", "verb2")},
            **{(v, "/foo/bar"): False for v in ("verb1", "verb2")},
            **{(v, "/foo/baz"): False for v in ("verb1", "verb2")},
            **{(v, "/foo/bar/one"): True for v in ("verb1", "verb2")},
            **{(v, "/foo/baz/one"): False for v in ("verb1", "verb2")},
        },
    ),
}


@pytest.mark.parametrize("name", list(RULE_MATCHES))
def test_rule_matches(name: str) -> None:
    rule, expected = RULE_MATCHES[name]
    for request, want in expected.items():
        if len(request) == 2:
            a = url(request[0], request[1])
        else:
            a = _res(*request)
        assert rbac.rule_allows(a, rule) is want, (name, request)


RULE_READ_PODS = {"verbs": ["GET", "WATCH"], "apiGroups": ["v1"], "resources": ["pods"]}
RULE_READ_SERVICES = {"verbs": ["GET", "WATCH"], "apiGroups": ["v1"], "resources": ["services"]}
RULE_WRITE_NODES = {"verbs": ["PUT", "CREATE", "UPDATE"], "apiGroups": ["v1"], "resources": ["nodes"]}
RULE_ADMIN = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
STATIC_ROLES_1 = Static(
    roles=[
        {
            "metadata": {"namespace": "namespace1", "name": "readthings"},
            "rules": [RULE_READ_PODS, RULE_READ_SERVICES],
        }
    ],
    cluster_roles=[
        new_cluster_role("cluster-admin", RULE_ADMIN),
        new_cluster_role("write-nodes", RULE_WRITE_NODES),
    ],
    role_bindings=[
        {
            "metadata": {"namespace": "namespace1"},
            "subjects": [{"kind": "User", "name": "foobar"}, {"kind": "Group", "name": "group1"}],
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "readthings"},
        }
    ],
    cluster_role_bindings=[
        {
            "metadata": {},
            "subjects": [{"kind": "User", "name": "admin"}, {"kind": "Group", "name": "admin"}],
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "cluster-admin"},
        }
    ],
)


@pytest.mark.parametrize(
    ("user", "namespace", "effective"),
    [
        (UserInfo("foobar"), "namespace1", [RULE_READ_PODS, RULE_READ_SERVICES]),
        (UserInfo("foobar"), "namespace2", []),
        # Same as above but without a namespace. Only cluster rules should apply.
        (UserInfo("foobar", groups=("admin",)), "", [RULE_ADMIN]),
        (UserInfo(""), "", []),
    ],
)
def test_default_rule_resolver(user: UserInfo, namespace: str, effective: list[dict]) -> None:
    rules, errors = rbac.rules_for(STATIC_ROLES_1, user, namespace)
    assert errors == ""
    assert sorted(map(_canon, rules)) == sorted(map(_canon, effective))


APPLIES_TO = [
    (
        [{"kind": "User", "name": "foobar"}],
        UserInfo("foobar"),
        "",
        True,
        "single subject that matches username",
    ),
    (
        [{"kind": "User", "name": "barfoo"}, {"kind": "User", "name": "foobar"}],
        UserInfo("foobar"),
        "",
        True,
        "multiple subjects, one that matches username",
    ),
    (
        [{"kind": "User", "name": "barfoo"}, {"kind": "User", "name": "foobar"}],
        UserInfo("zimzam"),
        "",
        False,
        "multiple subjects, none that match username",
    ),
    (
        [{"kind": "User", "name": "barfoo"}, {"kind": "Group", "name": "foobar"}],
        UserInfo("zimzam", groups=("foobar",)),
        "",
        True,
        "multiple subjects, one that match group",
    ),
    (
        [{"kind": "User", "name": "barfoo"}, {"kind": "Group", "name": "foobar"}],
        UserInfo("zimzam", groups=("foobar",)),
        "namespace1",
        True,
        "multiple subjects, one that match group, should ignore namespace",
    ),
    (
        [
            {"kind": "User", "name": "barfoo"},
            {"kind": "Group", "name": "foobar"},
            {"kind": "ServiceAccount", "namespace": "kube-system", "name": "default"},
        ],
        UserInfo("system:serviceaccount:kube-system:default"),
        "default",
        True,
        "multiple subjects with a service account that matches",
    ),
    (
        [{"kind": "User", "name": "*"}],
        UserInfo("foobar"),
        "default",
        False,
        "* user subject name doesn't match all users",
    ),
    (
        [
            {"kind": "Group", "name": rbac.ALL_AUTHENTICATED},
            {"kind": "Group", "name": rbac.ALL_UNAUTHENTICATED},
        ],
        UserInfo("foobar", groups=(rbac.ALL_AUTHENTICATED,)),
        "default",
        True,
        "binding to all authenticated and unauthenticated subjects matches authenticated user",
    ),
    (
        [
            {"kind": "Group", "name": rbac.ALL_AUTHENTICATED},
            {"kind": "Group", "name": rbac.ALL_UNAUTHENTICATED},
        ],
        UserInfo(rbac.ANONYMOUS, groups=(rbac.ALL_UNAUTHENTICATED,)),
        "default",
        True,
        "binding to all authenticated and unauthenticated subjects matches anonymous user",
    ),
]


@pytest.mark.parametrize(
    ("subjects", "user", "namespace", "applies", "case"), APPLIES_TO, ids=[c[-1] for c in APPLIES_TO]
)
def test_applies_to(subjects: list[dict], user: UserInfo, namespace: str, applies: bool, case: str) -> None:
    assert (rbac.applies_to(user, subjects, namespace) is not None) is applies


def _r(groups=None, verbs=None, resources=None, names=None, urls=None) -> dict:
    out: dict[str, list[str]] = {}
    for key, value in (
        ("apiGroups", groups),
        ("resources", resources),
        ("verbs", verbs),
        ("resourceNames", names),
        ("nonResourceURLs", urls),
    ):
        if value is not None:
            out[key] = value
    return out


COVERS = {
    "TestCoversExactMatch": ([_r(["v1"], ["get"], ["builds"])], [_r(["v1"], ["get"], ["builds"])], True, []),
    "TestCoversSubresourceWildcard": (
        [_r(["v1"], ["get"], ["*/scale"])],
        [_r(["v1"], ["get"], ["foo/scale"])],
        True,
        [],
    ),
    "TestCoversMultipleRulesCoveringSingleRule": (
        [
            _r(["v1"], ["delete"], ["deployments"]),
            _r(["v1"], ["delete"], ["builds"]),
            _r(["v1"], ["update"], ["builds", "deployments"]),
        ],
        [_r(["v1"], ["delete", "update"], ["builds", "deployments"])],
        True,
        [],
    ),
    "TestCoversMultipleAPIGroupsCoveringSingleRule": (
        [_r([g], ["delete"], [r]) for g in ("group1", "group2") for r in ("deployments", "builds")]
        + [_r([g], ["update"], ["builds", "deployments"]) for g in ("group1", "group2")],
        [_r(["group1", "group2"], ["delete", "update"], ["builds", "deployments"])],
        True,
        [],
    ),
    "TestCoversSingleAPIGroupsCoveringMultiple": (
        [_r(["group1", "group2"], ["delete", "update"], ["builds", "deployments"])],
        [_r([g], ["delete"], [r]) for g in ("group1", "group2") for r in ("deployments", "builds")]
        + [_r([g], ["update"], ["builds", "deployments"]) for g in ("group1", "group2")],
        True,
        [],
    ),
    "TestCoversMultipleRulesMissingSingleVerbResourceCombination": (
        [_r(["v1"], ["delete", "update"], ["builds", "deployments"]), _r(["v1"], ["delete"], ["pods"])],
        [_r(["v1"], ["delete", "update"], ["builds", "deployments", "pods"])],
        False,
        [_r(["v1"], ["update"], ["pods"])],
    ),
    "TestCoversAPIGroupStarCoveringMultiple": (
        [_r(["*"], ["get"], ["roles"])],
        [_r(["group1", "group2"], ["get"], ["roles"])],
        True,
        [],
    ),
    "TestCoversEnumerationNotCoveringAPIGroupStar": (
        [_r(["dummy-group"], ["get"], ["roles"])],
        [_r(["*"], ["get"], ["roles"])],
        False,
        [_r(["*"], ["get"], ["roles"])],
    ),
    "TestCoversAPIGroupStarCoveringStar": (
        [_r(["*"], ["get"], ["roles"])],
        [_r(["*"], ["get"], ["roles"])],
        True,
        [],
    ),
    "TestCoversVerbStarCoveringMultiple": (
        [_r(["v1"], ["*"], ["roles"])],
        [_r(["v1"], ["watch", "list"], ["roles"])],
        True,
        [],
    ),
    "TestCoversEnumerationNotCoveringVerbStar": (
        [_r(["v1"], ["get", "list", "watch", "create", "update", "delete", "exec"], ["roles"])],
        [_r(["v1"], ["*"], ["roles"])],
        False,
        [_r(["v1"], ["*"], ["roles"])],
    ),
    "TestCoversVerbStarCoveringStar": (
        [_r(["v1"], ["*"], ["roles"])],
        [_r(["v1"], ["*"], ["roles"])],
        True,
        [],
    ),
    "TestCoversResourceStarCoveringMultiple": (
        [_r(["v1"], ["get"], ["*"])],
        [_r(["v1"], ["get"], ["resourcegroup:deployments"])],
        True,
        [],
    ),
    "TestCoversEnumerationNotCoveringResourceStar": (
        [_r(["v1"], ["get"], ["roles", "resourcegroup:deployments"])],
        [_r(["v1"], ["get"], ["*"])],
        False,
        [_r(["v1"], ["get"], ["*"])],
    ),
    "TestCoversResourceStarCoveringStar": (
        [_r(["v1"], ["get"], ["*"])],
        [_r(["v1"], ["get"], ["*"])],
        True,
        [],
    ),
    "TestCoversResourceNameEmptyCoveringMultiple": (
        [_r(["v1"], ["get"], ["pods"], [])],
        [_r(["v1"], ["get"], ["pods"], ["foo", "bar"])],
        True,
        [],
    ),
    "TestCoversEnumerationNotCoveringResourceNameEmpty": (
        [_r(["v1"], ["get"], ["pods"], ["foo", "bar"])],
        [_r(["v1"], ["get"], ["pods"], [])],
        False,
        [_r(["v1"], ["get"], ["pods"])],
    ),
    "TestCoversNonResourceURLs": (
        [_r(verbs=["*"], urls=["/apis"])],
        [_r(verbs=["*"], urls=["/apis"])],
        True,
        [],
    ),
    "TestCoversNonResourceURLsStar": (
        [_r(verbs=["*"], urls=["*"])],
        [_r(verbs=["*"], urls=["/apis", "/apis/v1", "/"])],
        True,
        [],
    ),
    "TestCoversNonResourceURLsStarAfterPrefixDoesntCover": (
        [_r(verbs=["*"], urls=["/apis/*"])],
        [_r(verbs=["get"], urls=["/apis", "/apis/v1"])],
        False,
        [_r(verbs=["get"], urls=["/apis"])],
    ),
    "TestCoversNonResourceURLsStarAfterPrefix": (
        [_r(verbs=["*"], urls=["/apis/*"])],
        [_r(verbs=["get"], urls=["/apis/v1/foo", "/apis/v1"])],
        True,
        [],
    ),
    "TestCoversNonResourceURLsWithOtherFields": (
        [_r(["v1"], ["get"], ["builds"], urls=["/apis"])],
        [_r(["v1"], ["get"], ["builds"], urls=["/apis"])],
        True,
        [],
    ),
    "TestCoversNonResourceURLsWithOtherFieldsFailure": (
        [_r(["v1"], ["get"], ["builds"])],
        [_r(["v1"], ["get"], ["builds"], urls=["/apis"])],
        False,
        [_r(verbs=["get"], urls=["/apis"])],
    ),
}


@pytest.mark.parametrize("name", list(COVERS))
def test_covers(name: str) -> None:
    owner, servant, covered, uncovered = COVERS[name]
    got, missing = rbac.covers(owner, servant)
    assert got is covered
    assert sorted(map(_canon, missing)) == sorted(map(_canon, uncovered))


@pytest.mark.parametrize(
    ("owner", "requested", "want"),
    [
        ("*", "", True),
        ("*", "/", True),
        ("*", "/api", True),
        ("/*", "", False),
        ("/*", "/", True),
        ("/*", "/foo", True),
        ("/api", "/api", True),
        ("/apis", "/api", False),
        ("/api/v1", "/api", False),
        ("/api/v1", "/api/v1", True),
        ("/api/*", "/api/v1", True),
        ("/api/*", "/api", False),
        ("/api/*/*", "/api/v1", False),
        ("/*/v1/*", "/api/v1", False),
    ],
)
def test_non_resource_url_covers(owner: str, requested: str, want: bool) -> None:
    assert rbac.covers([_r(verbs=["get"], urls=[owner])], [_r(verbs=["get"], urls=[requested])])[0] is want


# -- what the API server says --------------------------------------------------------------------------------


def test_reasons_name_the_binding_and_the_missing_role() -> None:
    source = Static(
        cluster_roles=[new_cluster_role("reader", _r([""], ["get"], ["pods"]))],
        cluster_role_bindings=[
            {**new_cluster_role_binding("reader", "User:ann"), "metadata": {"name": "read"}}
        ],
        role_bindings=[
            {
                **new_role_binding("ns1", "gone", "Role", "ServiceAccount:sa"),
                "metadata": {"namespace": "ns1", "name": "rb"},
            }
        ],
    )
    allowed = rbac.authorize(source, Attributes(UserInfo("ann"), "get", "ns1", resource="pods"))
    assert allowed == (
        True,
        'RBAC: allowed by ClusterRoleBinding "read" of ClusterRole "reader" to User "ann"',
    )
    sa = UserInfo("system:serviceaccount:ns1:sa")
    denied = rbac.authorize(source, Attributes(sa, "get", "ns1", resource="pods"))
    assert denied == (False, 'RBAC: role.rbac.authorization.k8s.io "gone" not found')
    assert rbac.authorize(source, Attributes(UserInfo("bob"), "get", "ns1", resource="pods")) == (False, "")
    # system:masters needs no binding
    assert rbac.authorize(
        Static(), Attributes(UserInfo("x", groups=("system:masters",)), "delete", resource="nodes")
    )[0]


def test_forbidden_messages_quote_as_go_does() -> None:
    a = Attributes(UserInfo("system:serviceaccount:ns:sa"), "list", "ns", resource="pods", subresource="log")
    assert a.forbidden_message() == (
        'User "system:serviceaccount:ns:sa" cannot list resource "pods/log" in API group "" in the namespace "ns"'
    )
    b = Attributes(UserInfo("eve\x1b[2J\u202e"), "get", api_group="ray.io", resource="rayclusters")
    assert b.forbidden_message() == (
        'User "eve\\x1b[2J\\u202e" cannot get resource "rayclusters" in API group "ray.io" at the cluster scope'
    )
    c = Attributes(UserInfo("u"), "get", resource_request=False, path="/metrics")
    assert c.forbidden_message() == 'User "u" cannot get path "/metrics"'


def test_escalation_message_lists_what_is_missing() -> None:
    source = Static(
        cluster_roles=[new_cluster_role("pods", _r([""], ["get", "list"], ["pods"]))],
        cluster_role_bindings=[new_cluster_role_binding("pods", "User:ann")],
    )
    ann = UserInfo("ann", groups=("system:authenticated",))
    assert rbac.escalation_message(source, ann, "", [_r([""], ["get"], ["pods"])]) is None
    msg = rbac.escalation_message(
        source, ann, "", [_r([""], ["get", "delete", "update"], ["pods", "secrets"])]
    )
    assert msg == (
        'user "ann" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete" "update"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete" "update"]}'
    )


def test_aggregation_collects_selected_roles_once_in_order() -> None:
    view = {
        "metadata": {"name": "view"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"v": "true"}}]},
    }
    roles = [
        view,
        {"metadata": {"name": "b", "labels": {"v": "true"}}, "rules": [_r([""], ["get"], ["pods"])]},
        {
            "metadata": {"name": "a", "labels": {"v": "true"}},
            "rules": [_r([""], ["get"], ["pods"]), _r(["x"], ["list"], ["y"])],
        },
        {"metadata": {"name": "c"}, "rules": [_r(["z"], ["*"], ["*"])]},
    ]
    assert rbac.aggregated_rules(view, roles, label_selector_matches) == [
        _r([""], ["get"], ["pods"]),
        _r(["x"], ["list"], ["y"]),
    ]
    assert rbac.aggregated_rules(roles[1], roles, label_selector_matches) is None


def test_service_account_usernames() -> None:
    assert rbac.split_sa_username("system:serviceaccount:ns:name") == ("ns", "name")
    assert rbac.split_sa_username("system:serviceaccount:ns:na:me") is None
    assert rbac.split_sa_username("system:serviceaccount:NS:name") is None
    assert rbac.split_sa_username("alice") is None
    assert rbac.sa_groups("ns") == ("system:serviceaccounts", "system:serviceaccounts:ns")
