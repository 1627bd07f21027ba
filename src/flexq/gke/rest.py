"""The container.googleapis.com/v1 REST surface in-process: (method, path, body) -> (HTTP status, JSON).

Owns: matching request paths (``/v1/projects/{p}/locations/{l}/clusters/...``, the legacy ``zones`` form,
``?alt=json`` and other query strings ignored) to ``GkeBackend`` calls, plus the two calls gcloud makes to
other Google APIs on the way (Resource Manager ``projects.get``, Service Usage ``services.get``), and turning ``CloudError`` into
Google's error JSON ``{"error": {"code", "message", "status"}}``. It decides nothing itself.

Must not import flexq.runtime, other domain packages or flexq.http.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flexq.api.decode import nonfinite_path
from flexq.errors import CloudError
from flexq.gke.backend import GkeBackend

__all__ = ["route", "handle"]

_P = r"/v1/projects/(?P<p>[^/]+)/(?:locations|zones)/(?P<l>[^/]+)"
_C = _P + r"/clusters/(?P<c>[^/:]+)"
_N = _C + r"/nodePools/(?P<n>[^/:]+)"
Handler = Callable[[GkeBackend, dict[str, str], Any, float], dict[str, Any]]

_ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    (
        "POST",
        re.compile(_P + r"/clusters"),
        lambda b, m, body, now: b.create_cluster(m["p"], m["l"], body, now),
    ),
    ("GET", re.compile(_P + r"/clusters"), lambda b, m, body, now: b.list_clusters(m["p"], m["l"])),
    ("GET", re.compile(_C), lambda b, m, body, now: b.get_cluster(m["p"], m["l"], m["c"])),
    ("DELETE", re.compile(_C), lambda b, m, body, now: b.delete_cluster(m["p"], m["l"], m["c"], now)),
    (
        "POST",
        re.compile(_C + r"/nodePools"),
        lambda b, m, body, now: b.create_node_pool(m["p"], m["l"], m["c"], body, now),
    ),
    (
        "GET",
        re.compile(_C + r"/nodePools"),
        lambda b, m, body, now: b.list_node_pools(m["p"], m["l"], m["c"]),
    ),
    ("GET", re.compile(_N), lambda b, m, body, now: b.get_node_pool(m["p"], m["l"], m["c"], m["n"])),
    (
        "DELETE",
        re.compile(_N),
        lambda b, m, body, now: b.delete_node_pool(m["p"], m["l"], m["c"], m["n"], now),
    ),
    (
        "PUT",
        re.compile(_N),
        lambda b, m, body, now: b.update_node_pool(m["p"], m["l"], m["c"], m["n"], body, now),
    ),
    (
        "POST",
        re.compile(_N + r"(?::setAutoscaling|/autoscaling)"),
        lambda b, m, body, now: b.set_autoscaling(m["p"], m["l"], m["c"], m["n"], body, now),
    ),
    (
        "POST",
        re.compile(_N + r"(?::setSize|/setSize)"),
        lambda b, m, body, now: b.set_size(m["p"], m["l"], m["c"], m["n"], body, now),
    ),
    (
        "GET",
        re.compile(r"/(?P<v>v1|v3)/projects/(?P<p>[^/]+)"),
        lambda b, m, body, now: b.get_project(m["p"], m["v"]),
    ),
    (
        "GET",
        re.compile(r"/v1/projects/(?P<p>[^/]+)/services/(?P<s>[^/:]+)"),
        lambda b, m, body, now: b.get_service(m["p"], m["s"]),
    ),
    ("PUT", re.compile(_C), lambda b, m, body, now: b.update_cluster(m["p"], m["l"], m["c"], body, now)),
    (
        "POST",
        re.compile(_C + r"(?::setResourceLabels|/resourceLabels)"),
        lambda b, m, body, now: b.set_resource_labels(m["p"], m["l"], m["c"], body, now),
    ),
    (
        "POST",
        re.compile(_C + r"(?::setLogging|/logging)"),
        lambda b, m, body, now: b.set_logging(m["p"], m["l"], m["c"], body, now),
    ),
    (
        "POST",
        re.compile(_C + r"(?::setMonitoring|/monitoring)"),
        lambda b, m, body, now: b.set_monitoring(m["p"], m["l"], m["c"], body, now),
    ),
    (
        "POST",
        re.compile(_C + r"(?::updateMaster|/master)"),
        lambda b, m, body, now: b.update_master(m["p"], m["l"], m["c"], body, now),
    ),
    (
        "POST",
        re.compile(_N + r"(?::setManagement|/setManagement)"),
        lambda b, m, body, now: b.set_management(m["p"], m["l"], m["c"], m["n"], body, now),
    ),
    (
        "POST",
        re.compile(_N + r":rollback"),
        lambda b, m, body, now: b.rollback_node_pool(m["p"], m["l"], m["c"], m["n"], body, now),
    ),
    (
        "POST",
        re.compile(_N + r"/update"),  # the zonal form of nodePools.update
        lambda b, m, body, now: b.update_node_pool(m["p"], m["l"], m["c"], m["n"], body, now),
    ),
    (
        "GET",
        re.compile(_P + r"/(?:serverConfig|serverconfig)"),
        lambda b, m, body, now: b.get_server_config(m["p"], m["l"]),
    ),
    (
        "POST",
        re.compile(_P + r"/operations/(?P<o>[^/:]+):cancel"),
        lambda b, m, body, now: b.cancel_operation(m["p"], m["l"], m["o"], body, now),
    ),
    ("GET", re.compile(_P + r"/operations"), lambda b, m, body, now: b.list_operations(m["p"], m["l"])),
    (
        "GET",
        re.compile(_P + r"/operations/(?P<o>[^/:]+)"),
        lambda b, m, body, now: b.get_operation(m["p"], m["l"], m["o"]),
    ),
]


def route(method: str, path: str) -> tuple[Handler, dict[str, str]] | None:
    """The handler and path parameters for a request, or None."""
    bare = path.split("?", 1)[0].rstrip("/")
    if not bare.startswith("/"):
        bare = "/" + bare
    for verb, pattern, handler in _ROUTES:
        m = pattern.fullmatch(bare)
        if m and verb == method.upper():
            return handler, m.groupdict()
    return None


def handle(backend: GkeBackend, method: str, path: str, body: Any, now: float) -> tuple[int, dict[str, Any]]:
    """Serve one request. Any refusal leaves the backend's state unchanged (checks run before writes)."""
    found = route(method, path)
    if found is None:
        return 404, CloudError(404, "NOT_FOUND", "Requested entity was not found.").to_dict()
    handler, params = found
    bad = nonfinite_path(body)
    if bad is not None:  # JSON cannot carry NaN or Infinity: Google's parser stops at such a token
        return 400, CloudError(
            400,
            "INVALID_ARGUMENT",
            f'Invalid JSON payload received. Invalid value at "{bad[0]}": {bad[1]} (NaN and Infinity are not '
            "JSON numbers).",
        ).to_dict()
    try:
        return 200, handler(backend, params, body, now)
    except CloudError as exc:
        return exc.code, exc.to_dict()
