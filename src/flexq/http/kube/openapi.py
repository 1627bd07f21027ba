"""OpenAPI v3 and v2 documents generated from the kinds' pydantic models.

Owns: per group/version documents (``/openapi/v3/apis/<group>/<version>``, ``/openapi/v3/api/v1``) whose
schemas carry ``x-kubernetes-group-version-kind`` and whose PATCH operations declare the
``fieldValidation`` query parameter (kubectl reads that to leave validation to the server), the v3 index
(``/openapi/v3``) and a Swagger 2.0 document (``/openapi/v2``, JSON, or protobuf: ``openapi_proto``). Schemas are pydantic's JSON schema
tidied into what ``kubectl explain`` reads: optional fields without ``anyOf [..., null]``, ``$ref`` with
siblings wrapped in ``allOf``, definitions named ``<reversed group>.<version>.<Model>``. Pure, cached per
set of kinds. Must not import flexq modules outside ``flexq.api``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from flexq.api.registry import KindInfo
from flexq.http.kube import openapi_proto
from flexq.http.kube.discovery import groups

_DROP = {"title"}
_PATCH_TYPES = ["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"]
_BUILTIN_GROUPS = {
    "",
    "batch",
    "apps",
    "policy",
    "rbac.authorization.k8s.io",
    "coordination.k8s.io",
    "scheduling.k8s.io",
}
_QUERY = ["dryRun", "fieldManager", "fieldValidation", "pretty"]


def prefix(group: str, version: str) -> str:
    """``kueue.x-k8s.io`` + ``v1beta2`` -> ``io.x-k8s.kueue.v1beta2``; core -> ``io.k8s.api.core.v1``."""
    if not group:
        return f"io.k8s.api.core.{version}"
    parts = group.split(".")
    if len(parts) == 1:
        return f"io.k8s.api.{group}.{version}"
    return ".".join(reversed(parts)) + f".{version}"


def _tidy(node: Any, rename: dict[str, str], ref_base: str) -> Any:
    if isinstance(node, list):
        return [_tidy(x, rename, ref_base) for x in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        rest = [x for x in any_of if x != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(any_of):
            del node["anyOf"]
            node = {**rest[0], **node}
    if node.get("default", 0) is None:
        del node["default"]
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in _DROP and not isinstance(v, dict):
            continue
        if k == "$ref":
            out[k] = ref_base + rename.get(v.rsplit("/", 1)[-1], v.rsplit("/", 1)[-1])
        elif k in ("properties", "$defs"):
            out[k] = {pk: _tidy(pv, rename, ref_base) for pk, pv in v.items()}
        else:
            out[k] = _tidy(v, rename, ref_base)
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}]
    if "additionalProperties" in out and out["additionalProperties"] is False:
        del out["additionalProperties"]
    return out


def _inline(node: Any, ref: str, schema: dict[str, Any]) -> Any:
    """``node`` with each ``$ref`` to ``ref`` replaced by ``schema`` (its siblings, a description, kept)."""
    if isinstance(node, list):
        return [_inline(x, ref, schema) for x in node]
    if not isinstance(node, dict):
        return node
    if node.get("$ref") == ref:
        return {**schema, **{k: v for k, v in node.items() if k != "$ref"}}
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of == [{"$ref": ref}]:
        return {**schema, **{k: v for k, v in node.items() if k != "allOf"}}
    return {k: _inline(v, ref, schema) for k, v in node.items()}


def schemas(infos: tuple[KindInfo, ...], version: str, ref_base: str) -> dict[str, Any]:
    """Named schemas of every kind served in ``version`` among ``infos`` (one group)."""
    models: list[tuple[type[BaseModel], Literal["validation", "serialization"]]] = [
        (i.models[version], "validation") for i in infos if version in i.models
    ]
    _, doc = models_json_schema(models, ref_template="#/$defs/{model}")
    defs: dict[str, Any] = doc.get("$defs", {})
    pre = prefix(infos[0].group, version)
    rename = {name: f"{pre}.{name.split('__')[-1] if name.count('__') else name}" for name in defs}
    if len(set(rename.values())) < len(rename):  # same short name from two modules: keep them apart
        rename = {name: f"{pre}.{name.replace('__', '.')}" for name in defs}
    out = {rename[n]: _tidy(s, rename, ref_base) for n, s in defs.items()}
    if "Loose" in rename:  # a field kept as sent (no model of its own): an object, as a CRD's schema has it
        out = _inline(
            out, ref_base + rename["Loose"], {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        )
        out.pop(rename["Loose"], None)
    for i in infos:
        if version not in i.models:
            continue
        model_name = i.models[version].__name__
        key = next((rename[n] for n in defs if n == model_name or n.endswith(f"__{model_name}")), None)
        if key is None:
            continue
        sch = out[key]
        sch["x-kubernetes-group-version-kind"] = [{"group": i.group, "version": version, "kind": i.kind}]
        props = sch.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})["description"] = (
            "APIVersion defines the versioned schema of this representation of an object."
        )
        props.setdefault("kind", {"type": "string"})["description"] = (
            "Kind is a string value representing the REST resource this object represents."
        )
        sch.setdefault("description", f"{i.kind} ({i.api_version(version)})")
    return out


def _schema_key(info: KindInfo, version: str, defs: dict[str, Any]) -> str:
    for k, v in defs.items():
        if {"group": info.group, "version": version, "kind": info.kind} in v.get(
            "x-kubernetes-group-version-kind", []
        ):
            return k
    return ""


_PARAM_TYPES = {"force": "boolean", "watch": "boolean", "limit": "integer"}


def _params(v3: bool, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for n in names:
        p: dict[str, Any] = {"name": n, "in": "query", "description": n, "uniqueItems": True}
        kind = _PARAM_TYPES.get(n, "string")
        if v3:
            p["schema"] = {"type": kind}
        else:
            p["type"] = kind
        out.append(p)
    return out


def _op(info: KindInfo, version: str, verb: str, ref: str, v3: bool, params: list[str]) -> dict[str, Any]:
    resp: dict[str, Any] = {"description": "OK"}
    if v3:
        resp["content"] = {"application/json": {"schema": {"$ref": ref}}}
    else:
        resp["schema"] = {"$ref": ref}
    op: dict[str, Any] = {
        "operationId": f"{verb}{info.kind}",
        "parameters": _params(v3, params),
        "responses": {"200": resp},
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": version, "kind": info.kind},
    }
    if verb == "patch":  # kubectl's client-side apply reads these to choose strategic merge (built-ins only)
        types = _PATCH_TYPES + (
            ["application/strategic-merge-patch+json"] if info.group in _BUILTIN_GROUPS else []
        )
        if v3:
            op["requestBody"] = {
                "content": {t: {"schema": {"type": "object"}} for t in types},
                "required": True,
            }
        else:
            op["consumes"] = types
    return op


def paths(infos: Iterable[KindInfo], version: str, defs: dict[str, Any], ref_base: str, v3: bool) -> dict:
    out: dict[str, Any] = {}
    for info in infos:
        if version not in info.models:
            continue
        ref = ref_base + _schema_key(info, version, defs)
        base = f"/apis/{info.group}/{version}" if info.group else f"/api/{version}"
        coll = (
            f"{base}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{base}/{info.plural}"
        )
        out[coll] = {
            "get": _op(
                info,
                version,
                "list",
                ref,
                v3,
                ["labelSelector", "fieldSelector", "limit", "continue", "watch"],
            ),
            "post": _op(info, version, "post", ref, v3, _QUERY),
        }
        item = {
            "get": _op(info, version, "get", ref, v3, []),
            "put": _op(info, version, "put", ref, v3, _QUERY),
            "patch": _op(info, version, "patch", ref, v3, [*_QUERY, "force"]),
            "delete": _op(info, version, "delete", ref, v3, ["dryRun", "propagationPolicy"]),
        }
        out[f"{coll}/{{name}}"] = item
        if info.status_subresource:
            out[f"{coll}/{{name}}/status"] = {k: item[k] for k in ("get", "put", "patch")}
    return out


_CACHE: dict[tuple[Any, ...], tuple[tuple[KindInfo, ...], bytes]] = {}


def _cached(key: tuple[Any, ...], infos: tuple[KindInfo, ...], build: Any) -> bytes:
    """KindInfos are not hashable: documents are cached by the identity of the kinds they cover. The entry
    keeps those kinds, and a hit must be them: an id is reused once its object is freed (a twin dropped, a
    CustomResourceDefinition replaced), and a document built for other kinds must never be served."""
    hit = _CACHE.get(key)
    if (
        hit is not None
        and len(hit[0]) == len(infos)
        and all(a is b for a, b in zip(hit[0], infos, strict=True))
    ):
        return hit[1]
    if len(_CACHE) > 256:
        _CACHE.clear()
    doc: bytes = build()
    _CACHE[key] = (infos, doc)
    return doc


def _v3_doc(infos: tuple[KindInfo, ...], version: str) -> bytes:
    return _cached(("v3", version, *map(id, infos)), infos, lambda: _build_v3(infos, version))


def _build_v3(infos: tuple[KindInfo, ...], version: str) -> bytes:
    base = "#/components/schemas/"
    defs = schemas(infos, version, base)
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.4"},
        "paths": paths(infos, version, defs, base, True),
        "components": {"schemas": defs},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def v3_group_version(kinds: Iterable[KindInfo], group: str, version: str) -> bytes | None:
    """``/openapi/v3/apis/<group>/<version>`` (or ``api/v1``); None when not served."""
    infos = tuple(groups(kinds).get(group, []))
    if not any(version in i.models for i in infos):
        return None
    return _v3_doc(infos, version)


def v3_index(kinds: Iterable[KindInfo], prefix: str = "") -> dict[str, Any]:
    """``/openapi/v3``: where each group/version's document is (``prefix``: the path a cluster is served
    under, ``/clusters/<name>``; clients take these URLs as they are, not relative to their server's path)."""
    out: dict[str, Any] = {}
    kinds = list(kinds)
    for group, infos in groups(kinds).items():
        versions = {v for i in infos for v in i.models}
        for v in sorted(versions):
            key = f"apis/{group}/{v}" if group else f"api/{v}"
            doc = v3_group_version(kinds, group, v) or b""
            h = hashlib.sha512(doc).hexdigest()[:32].upper()
            out[key] = {"serverRelativeURL": f"{prefix}/openapi/v3/{key}?hash={h}"}
    return {"paths": out}


def _v2_doc(infos: tuple[KindInfo, ...]) -> bytes:
    return _cached(("v2", *map(id, infos)), infos, lambda: _build_v2(infos))


def _build_v2(infos: tuple[KindInfo, ...]) -> bytes:
    base = "#/definitions/"
    definitions: dict[str, Any] = {}
    all_paths: dict[str, Any] = {}
    for ginfos in groups(infos).values():
        versions = sorted({v for i in ginfos for v in i.models})
        for v in versions:
            defs = schemas(tuple(ginfos), v, base)
            definitions.update(defs)
            all_paths.update(paths(ginfos, v, defs, base, False))
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.32.4"},
        "paths": all_paths,
        "definitions": definitions,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def v2(kinds: Iterable[KindInfo]) -> bytes:
    """``/openapi/v2`` as JSON."""
    return _v2_doc(tuple(kinds))


def v2_proto(kinds: Iterable[KindInfo]) -> bytes:
    """``/openapi/v2`` as gnostic's protobuf ``Document`` (what kubectl asks for)."""
    infos = tuple(kinds)
    return _cached(
        ("v2proto", *map(id, infos)), infos, lambda: openapi_proto.encode(json.loads(_v2_doc(infos)))
    )
