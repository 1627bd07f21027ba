"""What a request asks, computed once: kube-apiserver's ``RequestInfoFactory.NewRequestInfo``, which its
``WithRequestInfo`` filter runs first and every later stage reads.

Owns: ``RequestInfo`` and ``request_info(method, path, query)`` — the only parse of a request's path in the
served twin. The twin's ``/clusters/<name>/`` prefix (one port serves each GKE cluster's API) is taken off
first; then, as upstream: a resource request is ``/api/<version>/...`` or ``/apis/<group>/<version>/...``; a
``watch`` or ``proxy`` segment after the version is the verb (``/api/v1/watch/namespaces/x/pods``); after
``namespaces/<ns>`` comes the resource, unless the next segment is a namespace subresource (``status``,
``finalize``: ``/api/v1/namespaces/x/status`` is namespace ``x``'s status), so
``/apis/example.com/v1/namespaces/x/status`` is the ``status`` subresource of a ``namespaces`` resource of
``example.com`` named ``x`` (which no group but the core one serves: a 404), never a resource called
``status``; the verb of a ``GET`` without a name is ``list``, or ``watch`` when ``?watch`` says so (its first
value, as the API server converts a query's booleans), and a ``list``'s ``metadata.name=`` field selector is its
name; a ``DELETE`` without a name is ``deletecollection``; everything else is a non-resource request whose verb
is its lowercased method. Also what the later stages ask of it: ``attributes(user)`` (what authorization
checks), ``long_running`` (``BasicLongRunningRequestCheck``: the in-flight limit does not count it) and
``mutating``. Pure: imports only ``flexq.semantics.rbac``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from flexq.semantics.rbac import Attributes, UserInfo

__all__ = ["NAMESPACE_SUBRESOURCES", "RequestInfo", "request_info", "truthy"]

API_PREFIXES = frozenset({"api", "apis"})
GROUPLESS_PREFIXES = frozenset({"api"})
SPECIAL_VERBS = frozenset({"proxy", "watch"})
SPECIAL_VERBS_NO_SUBRESOURCES = frozenset({"proxy"})
# a namespace's own subresources: the parser tells ``namespaces/x/status`` from a namespaced resource by them
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_READ_VERBS = frozenset({"get", "list", "watch"})
_LONG_VERBS = frozenset({"watch", "proxy"})
_LONG_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})


class Query(Protocol):
    """A query string's values by name (Starlette's ``QueryParams``)."""

    def getlist(self, key: str) -> Sequence[str]: ...


def truthy(value: str | None) -> bool:
    """A boolean query parameter as the API server converts it (``runtime.Convert_Slice_string_To_bool`` on the
    parameter's first value, used by the generated ``url.Values`` conversions of ListOptions, PodLogOptions,
    PatchOptions, DeleteOptions): absent is false; present, only ``0`` and ``false`` in any case are false,
    everything else is true (``?watch=on``, ``?watch=yes``, ``?watch`` and ``?watch=`` start a watch; the Python
    client sends ``True``)."""
    if value is None:
        return False
    return not (value == "0" or value.casefold() == "false")


def _first(query: Query, key: str) -> str | None:
    values = query.getlist(key)
    return values[0] if values else None


def _valid_path_segment_name(name: str) -> bool:
    """apimachinery's ``path.IsValidPathSegmentName``."""
    return name not in (".", "..") and "/" not in name and "%" not in name


def _name_from_field_selector(selector: str) -> str:
    """``fields.Selector.RequiresExactMatch("metadata.name")``: the value of a ``metadata.name=`` (or ``==``)
    term of an AND of terms; "" when there is none (or ``!=``)."""
    for term in selector.split(","):
        if "!=" in term:
            continue
        key, op, value = term.partition("==") if "==" in term else term.partition("=")
        if key.strip() == "metadata.name" and op:
            return value.strip()
    return ""


@dataclass(frozen=True)
class RequestInfo:
    """What one request asks (``request.RequestInfo``), and the cluster its path names."""

    path: str  # the URL path as received (``/clusters/<name>/...`` included)
    local_path: str  # the path within its cluster (the ``/clusters/<name>`` prefix taken off)
    cluster: str | None  # the cluster ``/clusters/<name>/`` names; None: the twin's current one
    verb: str
    resource_request: bool = False
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()  # resource/name/subresource/... as upstream's ``Parts``
    segments: tuple[str, ...] = ()  # every segment of ``local_path`` (non-resource routing reads these)
    namespaced_path: bool = (
        False  # ``.../namespaces/<ns>/<resource>...``: the resource was asked in a namespace
    )
    verb_via_path: bool = False  # the legacy ``/watch/`` (or ``/proxy/``) segment named the verb
    name_from_selector: bool = False  # a list's name is its ``metadata.name`` field selector's
    error: str = ""  # why the path could not be parsed (``/api/v1/watch``), as upstream returns it

    @property
    def group_version(self) -> str:
        return f"{self.api_group}/{self.api_version}" if self.api_group else self.api_version

    @property
    def long_running(self) -> bool:
        """``BasicLongRunningRequestCheck({watch, proxy}, {attach, exec, proxy, log, portforward})``."""
        return self.verb in _LONG_VERBS or (self.resource_request and self.subresource in _LONG_SUBRESOURCES)

    @property
    def mutating(self) -> bool:
        """Whether the in-flight limit counts it among the writes (everything but get, list and watch)."""
        return self.verb not in _READ_VERBS

    def attributes(self, user: UserInfo) -> Attributes:
        """What authorization checks for ``user`` (``authorizer.AttributesRecord`` from this info)."""
        if not self.resource_request:
            return Attributes(user, self.verb, resource_request=False, path=self.local_path)
        return Attributes(
            user,
            self.verb,
            namespace=self.namespace,
            api_group=self.api_group,
            api_version=self.api_version,
            resource=self.resource,
            subresource=self.subresource,
            name=self.name,
            path=self.local_path,
        )


def request_info(method: str, path: str, query: Query | None = None) -> RequestInfo:
    """``NewRequestInfo`` for a request (``path`` decoded, as ``req.URL.Path``; ``query`` its parameters)."""
    segments = [p for p in path.strip("/").split("/")] if path.strip("/") else []
    cluster: str | None = None
    local_path = path
    if len(segments) >= 2 and segments[0] == "clusters":
        cluster, segments = segments[1], segments[2:]
        local_path = "/" + "/".join(segments)
    segs = tuple(segments)
    base: dict[str, Any] = {
        "path": path,
        "local_path": local_path,
        "cluster": cluster,
        "verb": method.lower(),
        "segments": segs,
    }
    current = segments
    if len(current) < 3 or current[0] not in API_PREFIXES:
        return RequestInfo(**base)
    prefix, current = current[0], current[1:]
    base["api_prefix"] = prefix
    if prefix not in GROUPLESS_PREFIXES:
        if len(current) < 3:
            return RequestInfo(**base)
        base["api_group"], current = current[0], current[1:]
    base["resource_request"] = True
    base["api_version"], current = current[0], current[1:]
    if current[0] in SPECIAL_VERBS:
        if len(current) < 2:
            return RequestInfo(**base, error="unable to determine kind and namespace from url")
        base["verb"], current = current[0], current[1:]
        base["verb_via_path"] = True
    else:
        base["verb"] = _METHOD_VERBS.get(method.upper(), "")
    if current[0] == "namespaces" and len(current) > 1:
        base["namespace"] = current[1]
        if len(current) > 2 and current[2] not in NAMESPACE_SUBRESOURCES:
            current = current[2:]
            base["namespaced_path"] = True
    parts = tuple(current)
    base["parts"] = parts
    if len(parts) >= 3 and base["verb"] not in SPECIAL_VERBS_NO_SUBRESOURCES:
        base["subresource"] = parts[2]
    if len(parts) >= 2:
        base["name"] = parts[1]
    base["resource"] = parts[0]
    base.setdefault("name", "")
    if not base["name"] and base["verb"] == "get":
        base["verb"] = "watch" if query is not None and truthy(_first(query, "watch")) else "list"
        selector = (_first(query, "fieldSelector") or "") if query is not None else ""
        name = _name_from_field_selector(selector)
        if name and _valid_path_segment_name(name):
            base["name"] = name
            base["name_from_selector"] = True
    if not base["name"] and base["verb"] == "delete":
        base["verb"] = "deletecollection"
    return RequestInfo(**base)
