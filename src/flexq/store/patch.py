"""Patch documents: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge is reduced to what kubectl sends for the kinds flexq serves: maps merge, lists of
objects with a ``name`` (or ``containerPort``/``key``) merge by that key, ``$patch: delete``/``replace``
directives are honoured, other lists are replaced. ``three_way_merge_patch`` computes the patch a
client-side ``kubectl apply`` sends. Must not import flexq modules other than ``flexq.errors``.
"""

from __future__ import annotations

import copy
from typing import Any

from flexq.errors import BadRequest, Invalid

_MERGE_KEYS = ("name", "containerPort", "mountPath", "key", "type", "port")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


_MISSING = object()


def three_way_merge_patch(original: dict | None, modified: dict, current: dict) -> dict:
    """The JSON merge patch ``kubectl apply`` computes (``CreateThreeWayJSONMergePatch``): set what
    ``modified`` (the manifest now) has and ``current`` (the live object) lacks or holds differently, and
    delete what ``original`` (the manifest last applied) had and ``modified`` no longer has. Fields that
    neither manifest names (defaults, what controllers wrote) are left alone. Lists are replaced whole."""
    patch: dict = {}
    for k, mv in modified.items():
        cv = current.get(k, _MISSING)
        ov = original.get(k) if isinstance(original, dict) else None
        if isinstance(mv, dict) and isinstance(cv, dict):
            sub = three_way_merge_patch(ov if isinstance(ov, dict) else None, mv, cv)
            if sub:
                patch[k] = sub
        elif mv is None:
            if cv is not _MISSING:
                patch[k] = None
        elif cv is _MISSING or cv != mv:
            patch[k] = copy.deepcopy(mv)
    if isinstance(original, dict):
        for k in original:
            if k not in modified and k in current:
                patch[k] = None
    return patch


def _merge_key(items: list) -> str | None:
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in _MERGE_KEYS:
        if all(key in i for i in items):
            return key
    return None


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """kubectl's strategic merge, as far as the twin's kinds need it."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            out[name] = [x for x in out.get(name, []) if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and isinstance(out.get(k), list):
            key = _merge_key(out[k] + [i for i in v if isinstance(i, dict)])
            if key is None:
                out[k] = copy.deepcopy(v)
                continue
            merged = list(out[k])
            for item in v:
                idx = next((i for i, cur in enumerate(merged) if cur.get(key) == item.get(key)), None)
                if item.get("$patch") == "delete":
                    if idx is not None:
                        merged.pop(idx)
                elif idx is None:
                    merged.append({a: b for a, b in item.items() if a != "$patch"})
                else:
                    merged[idx] = strategic_merge_patch(merged[idx], item)
            out[k] = merged
        else:
            out[k] = strategic_merge_patch(out.get(k), v)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise BadRequest(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for p in parts:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise BadRequest("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind in ("add", "replace", "test"):
                value = copy.deepcopy(op["value"])
            if kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = copy.deepcopy(_walk(doc, src))
                if kind == "move":
                    parent = _walk(doc, src[:-1])
                    parent.pop(int(src[-1]) if isinstance(parent, list) else src[-1])
                kind = "add"
            if not parts:
                if kind == "test":
                    if doc != value:
                        raise Invalid("the test operation failed")
                    continue
                doc = value
                continue
            parent = _walk(doc, parts[:-1])
            last = parts[-1]
            if kind == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), value)
                else:
                    parent[last] = value
            elif kind == "remove":
                parent.pop(int(last) if isinstance(parent, list) else last)
            elif kind == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = value
                else:
                    if last not in parent:
                        raise KeyError(last)
                    parent[last] = value
            elif kind == "test":
                cur = parent[int(last)] if isinstance(parent, list) else parent[last]
                if cur != value:
                    raise Invalid(f"the test operation at {op['path']} failed")
            else:
                raise BadRequest(f"unknown json patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise Invalid(f"the server rejected our request due to an error in our request: "
                          f"doc is missing path: {op.get('path') if isinstance(op, dict) else op}: {exc}") from None
    return doc


def apply_patch(target: dict, patch: Any, patch_type: str) -> dict:
    """Dispatch on the content type's short name: merge, json, strategic, apply."""
    if patch_type in ("merge", "application/merge-patch+json"):
        return merge_patch(target, patch)
    if patch_type in ("strategic", "application/strategic-merge-patch+json"):
        return strategic_merge_patch(target, patch)
    if patch_type in ("json", "application/json-patch+json"):
        return json_patch(target, patch)
    raise BadRequest(f"unsupported patch type {patch_type!r}")
