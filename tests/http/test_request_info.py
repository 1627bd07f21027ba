"""A request's path is parsed once (issue 39, item 1): what authorization checks is what the handler serves.

kube-apiserver computes a ``RequestInfo`` once (``WithRequestInfo``) and its authentication, impersonation,
authorization, in-flight limit and handlers all read it. Before, the twin's router (``paths.parse``) and its
authorization (``auth.request_attributes``) parsed the path each on its own and disagreed:
``/apis/example.com/v1/namespaces/x/status`` was routed to a resource ``status`` in namespace ``x`` while RBAC
checked the ``status`` subresource of ``namespaces/x``, and ``?watch=false&watch=true`` was authorized as a list
(the first value, as the API server converts it) but served as a watch (the last one).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator

import pytest
import requests
from starlette.datastructures import QueryParams

from flexq import Twin
from flexq.errors import MethodNotAllowed, NotFound
from flexq.http.kube.rest import KubeFace
from flexq.http.requestinfo import RequestInfo, request_info
from flexq.semantics.rbac import UserInfo

from .conftest import Served

USER = UserInfo("system:serviceaccount:x:someone", groups=("system:serviceaccounts", "system:authenticated"))


class Face(KubeFace):
    """The twin's router over its kinds, plus two custom kinds whose plurals a parser can confuse with a
    namespace's path: a namespaced ``status`` and a namespaced ``namespaces`` in ``example.com``."""

    def __init__(self, twin: Twin) -> None:
        super().__init__(twin.core)
        base = next(k for k in super().kinds() if k.kind == "ConfigMap")
        self.extra = [
            dataclasses.replace(
                base, group="example.com", kind="Status", plural="status", status_subresource=True
            ),
            dataclasses.replace(
                base, group="example.com", kind="Namespace", plural="namespaces", status_subresource=True
            ),
        ]
        self._kinds = [*super().kinds(), *self.extra]

    def kinds(self):  # type: ignore[no-untyped-def]
        return self._kinds


@pytest.fixture(scope="module")
def face() -> Iterator[Face]:
    twin = Twin(executor="simulated")
    try:
        yield Face(twin)
    finally:
        twin.close()


_WORDS = [
    "namespaces",
    "x",
    "default",
    "status",
    "finalize",
    "watch",
    "proxy",
    "pods",
    "configmaps",
    "serviceaccounts",
    "token",
    "log",
    "exec",
    "jobs",
    "nodes",
    "clusterqueues",
    "workloads",
    "selfsubjectaccessreviews",
    "",
]
_PREFIXES = [
    ["api", "v1"],
    ["apis", "example.com", "v1"],
    ["apis", "batch", "v1"],
    ["apis", "kueue.x-k8s.io", "v1beta2"],
    ["apis", "authorization.k8s.io", "v1"],
    ["apis", "example.com"],
    ["api"],
    [],
]
_QUERY_VALUES = {
    "watch": ["true", "false", "0", "1", "", "False", "yes"],
    "fieldSelector": [
        "metadata.name=x",
        "metadata.name==y",
        "metadata.name!=x",
        "spec.nodeName=n,metadata.name=z",
        "metadata.name=a/b",
        "metadata.name=..",
        "metadata.name=",
    ],
    "labelSelector": ["a=b", "=="],
}
_KNOWN = [  # the paths the review found disagreeing, and one of each operation
    ("GET", "/apis/example.com/v1/namespaces/x/status", []),
    ("GET", "/api/v1/namespaces/x/status", []),
    ("PUT", "/api/v1/namespaces/x/finalize", []),
    ("GET", "/api/v1/namespaces/x/configmaps", [("watch", "false"), ("watch", "true")]),
    ("GET", "/api/v1/namespaces/x/configmaps", [("watch", "true"), ("watch", "false")]),
    ("GET", "/api/v1/namespaces/x/pods/y/log", []),
    ("GET", "/api/v1/watch/namespaces/x/pods/y", []),
    ("GET", "/api/v1/namespaces/x/pods", [("fieldSelector", "metadata.name=y")]),
    ("DELETE", "/api/v1/namespaces/x/pods", []),
    ("DELETE", "/api/v1/namespaces/x/pods/y", []),
    ("POST", "/api/v1/namespaces/x/pods", []),
    ("PATCH", "/clusters/c1/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq/status", []),
]
_METHODS = ["GET", "GET", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "DELETE", "OPTIONS"]


def generated(n: int, seed: int = 39) -> Iterator[tuple[str, str, list[tuple[str, str]]]]:
    """``n`` requests (method, path, query): most built as the API's paths are (a prefix, a verb segment, a
    namespace, a resource, a name, a subresource, more), each part drawn from the words a parser may confuse
    (``namespaces``, ``status``, ``finalize``, ``watch``, empty segments); the rest any words in any order."""
    yield from _KNOWN
    rng = random.Random(seed)
    for _ in range(n - len(_KNOWN)):
        parts: list[str] = []
        if rng.random() < 0.15:
            parts += ["clusters", "c1"]
        parts += rng.choice(_PREFIXES)
        if rng.random() < 0.8:
            if rng.random() < 0.15:
                parts.append(rng.choice(["watch", "proxy"]))
            if rng.random() < 0.6:
                parts += ["namespaces", rng.choice(["x", "default", "status", "finalize", "namespaces", ""])]
            for chance in (0.95, 0.6, 0.35, 0.1):
                if rng.random() < chance:
                    parts.append(rng.choice(_WORDS))
        else:
            parts += [rng.choice(_WORDS) for _ in range(rng.randrange(7))]
        query = [
            (key, rng.choice(_QUERY_VALUES[key]))
            for key in rng.sample(
                ["watch", "fieldSelector", "fieldSelector", "labelSelector"], rng.randrange(4)
            )
            for _ in range(rng.choice([1, 1, 2]))
        ]
        yield rng.choice(_METHODS), "/" + "/".join(parts) + rng.choice(["", "", "/"]), query


def served_versus_authorized(face: KubeFace, method: str, info: RequestInfo) -> str | None:
    """None when the handler would serve what authorization checked (or serves nothing: 404, 405), else how
    they differ."""
    attrs = info.attributes(USER)
    try:
        t, op = face.route(method, info)
    except (NotFound, MethodNotAllowed):
        return None
    if not attrs.resource_request:
        return "a non-resource request was served as a resource"
    kind = t.kind
    served_name = t.name or ""
    authorized_name = attrs.name
    if info.name_from_selector:  # a list or watch filtered to the selector's name
        if op not in ("list", "watch", "deletecollection") or served_name:
            return f"{op} of a selector's name"
        served_name = authorized_name
    if kind.namespaced:
        served_ns = t.namespace or ""
    else:  # a cluster-scoped object: RBAC sees no namespace, or a Namespace's own name
        if attrs.namespace not in ("", attrs.name if attrs.resource == "namespaces" else ""):
            return f"cluster-scoped {kind.plural} authorized in namespace {attrs.namespace!r}"
        served_ns = attrs.namespace
    served = (
        kind.group,
        kind.plural,
        t.subresource or "",
        served_ns,
        served_name,
        "get" if op == "log" else op,
    )
    authorized = (
        attrs.api_group,
        attrs.resource,
        attrs.subresource,
        attrs.namespace,
        authorized_name,
        attrs.verb,
    )
    return None if served == authorized else f"served {served}, authorized {authorized}"


def test_what_rbac_authorizes_is_what_the_router_serves(face: Face) -> None:
    """Over 12,000 generated requests: whenever the router serves one, it serves the group, resource,
    subresource, namespace, name and verb that authorization checked."""
    problems = []
    for method, path, query in generated(12_000):
        info = request_info(method, path, QueryParams(query))
        problem = served_versus_authorized(face, method, info)
        if problem is not None:
            problems.append(f"{method} {path}?{query}: {problem}")
    assert not problems, f"{len(problems)} requests disagree, e.g.\n" + "\n".join(problems[:10])


def test_the_generated_paths_reach_the_handlers(face: Face) -> None:
    """The generator is not vacuous: among its requests are served ones of every operation, of the custom
    kinds a parser could confuse, of a namespace's subresource, and names from field selectors."""
    seen: set[tuple[str, str, str]] = set()
    selected = 0
    for method, path, query in generated(12_000):
        info = request_info(method, path, QueryParams(query))
        try:
            t, op = face.route(method, info)
        except (NotFound, MethodNotAllowed):
            continue
        seen.add((t.kind.plural, t.subresource or "", op))
        selected += info.name_from_selector
    ops = {op for _, _, op in seen}
    assert ops >= {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "log"}
    assert {p for p, _, _ in seen} >= {"pods", "configmaps", "namespaces", "status", "clusterqueues"}
    assert ("namespaces", "status", "get") in seen
    assert selected >= 5


def test_a_namespace_subresource_in_any_group_is_the_namespace_s(face: Face) -> None:
    """``/apis/example.com/v1/namespaces/x/status``: RequestInfoFactory reads the ``status`` subresource of
    ``namespaces/x`` in ``example.com`` in every group (``namespaceSubresources`` is checked before the group is
    looked at), and the API server serves what it reads (the CRD handler looks up ``namespaces.example.com``).
    The old router served the namespaced resource ``status`` of ``example.com`` in ``x`` instead: its list, to
    whoever may get ``namespaces/status`` there. Now both read the namespace's subresource."""
    info = request_info("GET", "/apis/example.com/v1/namespaces/x/status", QueryParams(""))
    attrs = info.attributes(USER)
    assert (attrs.api_group, attrs.resource, attrs.subresource, attrs.namespace, attrs.name, attrs.verb) == (
        "example.com",
        "namespaces",
        "status",
        "x",
        "x",
        "get",
    )
    t, op = face.route("GET", info)
    assert (t.kind.group, t.kind.plural, t.subresource, t.namespace, t.name, op) == (
        "example.com",
        "namespaces",
        "status",
        "x",
        "x",
        "get",
    )
    # the resource "status" is served across namespaces only, as upstream's parser leaves it
    t, op = face.route("GET", request_info("GET", "/apis/example.com/v1/status", QueryParams("")))
    assert (t.kind.plural, t.namespace, t.name, op) == ("status", None, None, "list")
    with pytest.raises(NotFound):
        face.route("GET", request_info("GET", "/apis/example.com/v1/namespaces/x/status/y", QueryParams("")))
    # without a kind of that plural in the group, a 404
    with pytest.raises(NotFound):
        face.route("GET", request_info("GET", "/apis/batch/v1/namespaces/x/status", QueryParams("")))


# -- over HTTPS, with a ServiceAccount's token -------------------------------------------------------------------


def _sa_token(served: Served, ns: str, name: str, verbs: list[str]) -> str:
    served.kubectl("create", "namespace", ns)
    served.kubectl("create", "serviceaccount", name, "-n", ns)
    served.kubectl("create", "role", name, "-n", ns, f"--verb={','.join(verbs)}", "--resource=configmaps")
    served.kubectl("create", "rolebinding", name, "-n", ns, f"--role={name}", f"--serviceaccount={ns}:{name}")
    return served.kubectl("create", "token", name, "-n", ns).stdout.strip()


def _get(served: Served, path: str, token: str) -> requests.Response:
    return requests.get(
        served.url + path, headers={"Authorization": f"Bearer {token}"}, verify=served.ca, timeout=20
    )


def test_a_repeated_watch_parameter_is_read_once(served: Served) -> None:
    """``?watch=false&watch=true``: the API server reads a boolean parameter's first value, for authorization
    and for the handler alike. Before, authorization read the first (a list) and the handler the last (a
    watch): a ServiceAccount that may only ``list`` could watch, and one that may only ``watch`` could list."""
    lister = _sa_token(served, "ri-list", "lister", ["list"])
    r = _get(served, "/api/v1/namespaces/ri-list/configmaps?watch=false&watch=true&timeoutSeconds=1", lister)
    assert r.status_code == 200, r.text
    assert json.loads(r.text)["kind"] == "ConfigMapList"  # a list, not a stream of watch events
    r = _get(served, "/api/v1/namespaces/ri-list/configmaps?watch=true&watch=false&timeoutSeconds=1", lister)
    assert r.status_code == 403, r.text
    assert 'cannot watch resource "configmaps"' in r.json()["message"]

    watcher = _sa_token(served, "ri-watch", "watcher", ["watch"])
    r = _get(served, "/api/v1/namespaces/ri-watch/configmaps?watch=false&watch=true", watcher)
    assert r.status_code == 403, r.text
    assert 'cannot list resource "configmaps"' in r.json()["message"]
    r = _get(served, "/api/v1/namespaces/ri-watch/configmaps?watch=1&watch=0&timeoutSeconds=1", watcher)
    assert r.status_code == 200, r.text
    assert '"kind":"ConfigMapList"' not in r.text.replace(" ", "")


def test_the_named_path_is_authorized_and_answered_as_the_api_server_does(served: Served) -> None:
    """``/apis/example.com/v1/namespaces/x/status`` over HTTPS: a ServiceAccount without rights is refused for
    ``namespaces/status`` (what the path asks), and the admin gets the 404 of an unserved resource."""
    token = _sa_token(served, "ri-named", "nobody", ["get"])
    r = _get(served, "/apis/example.com/v1/namespaces/ri-named/status", token)
    assert r.status_code == 403
    assert r.json()["message"] == (
        'namespaces.example.com "ri-named" is forbidden: User "system:serviceaccount:ri-named:nobody" cannot '
        'get resource "namespaces/status" in API group "example.com" in the namespace "ri-named"'
    )
    r = served.http("GET", "/apis/example.com/v1/namespaces/ri-named/status")
    assert r.status_code == 404 and r.json()["reason"] == "NotFound"
