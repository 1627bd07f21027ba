"""API discovery documents, legacy and aggregated, built from the registry's kinds.

Owns: ``/version``; ``/api`` and ``/apis`` (``APIVersions``/``APIGroupList``), ``/api/v1`` and
``/apis/<group>/<version>`` (``APIResourceList``); the aggregated form (``apidiscovery.k8s.io/v2``
``APIGroupDiscoveryList``) that kubectl 1.30+ asks for first. Pure functions of a list of ``KindInfo``.
Methods as kube-apiserver answers them: ``/apis`` and ``/apis/<group>`` come from kube-aggregator's
handlers, which answer any method with the document (``handler_apis.go``); so do a custom resource group's
``/apis/<group>/<version>`` (apiextensions-apiserver's ``versionDiscoveryHandler``); ``/api``, ``/api/v1`` and a
compiled-in group's version are go-restful web services with a GET route only: another method is
``405: Method Not Allowed`` in plain text with ``Allow: GET`` (``no_route``). Whether the caller may use the
method at all is RBAC's question (``nonResourceURLs``), asked before.
Must not import flexq modules outside ``flexq.api``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.responses import Response

from flexq.api.registry import COMPILED_IN_GROUPS, KindInfo

DEFAULT_VERSION = "1.34.1-gke.1829001"  # a cluster without a GKE version (the twin's own): GKE's default
GO_VERSIONS = {
    "1.30": "go1.22.12",
    "1.31": "go1.23.6",
    "1.32": "go1.23.6",
    "1.33": "go1.24.4",
    "1.34": "go1.24.6",
    "1.35": "go1.25.1",
}  # what each minor's kube-apiserver was built with


def version_info(version: str | None = None) -> dict[str, str]:
    """``/version`` of a cluster at GKE ``version`` (e.g. ``1.34.1-gke.1829001``): what ``kubectl version``
    shows as the server's version, the same as the cluster's ``currentMasterVersion``."""
    version = (version or DEFAULT_VERSION).lstrip("v")
    major, minor = (version.split(".") + ["0", "0"])[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": f"v{version}",
        "gitCommit": "flexq",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": GO_VERSIONS.get(f"{major}.{minor}", "go1.24.6"),
        "compiler": "gc",
        "platform": "linux/amd64",
        "emulationMajor": major,
        "emulationMinor": minor,
    }


VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_BETA = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def compiled_in(group: str) -> bool:
    """The group is kube-apiserver's own (go-restful), not a CustomResourceDefinition's."""
    return group in COMPILED_IN_GROUPS


def no_route() -> Response:
    """go-restful's answer to a method a discovery path has no route for (``jsr311.go``: 405 with the allowed
    methods in ``Allow``, the body written as a plain string)."""
    return Response(
        b"405: Method Not Allowed",
        status_code=405,
        media_type="text/plain; charset=utf-8",
        headers={"Allow": "GET"},
    )


def subresources(info: KindInfo) -> list[tuple[str, str, list[str]]]:
    """(name, response kind, verbs) of each subresource a kind serves."""
    out: list[tuple[str, str, list[str]]] = []
    if info.status_subresource:
        out.append(("status", info.kind, ["get", "patch", "update"]))
    if info.scale_subresource:
        out.append(("scale", "Scale", ["get", "patch", "update"]))
    if info.group == "" and info.kind == "Pod":
        out.append(("ephemeralcontainers", "Pod", ["get", "patch", "update"]))
        out.append(("log", "Pod", ["get"]))
        out.append(("portforward", "PodPortForwardOptions", ["create", "get"]))
    return out


def groups(kinds: Iterable[KindInfo]) -> dict[str, list[KindInfo]]:
    """Kinds per group, in registry order (core group ``""`` included)."""
    out: dict[str, list[KindInfo]] = {}
    for info in kinds:
        out.setdefault(info.group, []).append(info)
    return out


def group_versions(infos: list[KindInfo]) -> list[str]:
    """The group's served versions, preferred first."""
    seen: list[str] = []
    for info in infos:
        for v in info.versions:
            if v not in seen:
                seen.append(v)
    preferred = infos[0].preferred_version
    return [preferred] + [v for v in seen if v != preferred]


def api_versions(server_address: str) -> dict[str, Any]:
    """``GET /api``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list(kinds: Iterable[KindInfo]) -> dict[str, Any]:
    """``GET /apis``."""
    items = []
    for group, infos in groups(kinds).items():
        if not group:
            continue
        versions = group_versions(infos)
        items.append(
            {
                "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {"groupVersion": f"{group}/{versions[0]}", "version": versions[0]},
            }
        )
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": items}


def api_group(kinds: Iterable[KindInfo], group: str) -> dict[str, Any] | None:
    """``GET /apis/<group>``."""
    for g in api_group_list(kinds)["groups"]:
        if g["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **g}
    return None


def resource_list(kinds: Iterable[KindInfo], group: str, version: str) -> dict[str, Any] | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>``; None when that group/version is not served."""
    resources: list[dict[str, Any]] = []
    for info in kinds:
        if info.group != group or version not in info.models:
            continue
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": VERBS,
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        resources.append(entry)
        for sub, kind, verbs in subresources(info):
            resources.append(
                {
                    "name": f"{info.plural}/{sub}",
                    "singularName": "",
                    "namespaced": info.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
    if not resources:
        return None
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _discovery_resource(info: KindInfo, version: str) -> dict[str, Any]:
    rk = {"group": info.group, "version": version, "kind": info.kind}
    out: dict[str, Any] = {
        "resource": info.plural,
        "responseKind": rk,
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": VERBS,
    }
    if info.short_names:
        out["shortNames"] = list(info.short_names)
    if info.categories:
        out["categories"] = list(info.categories)
    subs = [
        {
            "subresource": sub,
            "responseKind": {
                "group": info.group if kind == info.kind else ("autoscaling" if kind == "Scale" else ""),
                "version": version if kind == info.kind else "v1",
                "kind": kind,
            },
            "verbs": verbs,
        }
        for sub, kind, verbs in subresources(info)
    ]
    if subs:
        out["subresources"] = subs
    return out


def aggregated(kinds: Iterable[KindInfo], core: bool, version: str = "v2") -> dict[str, Any]:
    """``GET /api`` (core=True) or ``/apis`` with ``Accept: ...;as=APIGroupDiscoveryList``."""
    items = []
    for group, infos in groups(kinds).items():
        if bool(group) == core:
            continue
        versions = []
        for v in group_versions(infos):
            res = [_discovery_resource(i, v) for i in infos if v in i.models]
            versions.append({"version": v, "resources": res, "freshness": "Current"})
        meta: dict[str, Any] = (
            {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None}
        )
        items.append({"metadata": meta, "versions": versions})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


def wants_aggregated(accept: str) -> str | None:
    """The aggregated discovery version the Accept header asks for in JSON (``v2``/``v2beta1``), if any."""
    for part in accept.split(","):
        p = part.replace(" ", "")
        if "as=APIGroupDiscoveryList" in p and p.startswith("application/json"):
            if "v=v2beta1" in p:
                return "v2beta1"
            if "v=v2" in p:
                return "v2"
    return None
