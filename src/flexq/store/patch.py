"""Patch documents: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge follows the patch strategies of the built-in kinds' types (``PATCH_SCHEMAS``, from the
``patchStrategy``/``patchMergeKey`` struct tags): keyed lists merge by their key, ``$patch``,
``$retainKeys``, ``$deleteFromPrimitiveList`` and ``$setElementOrder`` directives are honoured, other lists
are replaced; custom resources have no strategic merge. ``three_way_merge_patch`` (JSON merge, for custom
resources) and ``three_way_strategic_patch`` (built-ins) compute the patch a client-side ``kubectl apply``
sends.

The API server's bounds on a patch (so a few KB cannot grow an object a millionfold): a JSON patch has at most
``MAX_JSON_PATCH_OPERATIONS`` operations (413), its ``copy`` operations may add at most ``MAX_COPY_BYTES`` in all
(``JSONPatchMaxCopyBytes``, json-patch's ``AccumulatedCopySizeLimit``: 422), and whatever the patch type, the
patched object may be at most ``MAX_REQUEST`` bytes as JSON (413), as a request body may. Must not import flexq
modules other than ``flexq.errors`` and ``flexq.api`` (copies, decoded sizes).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from flexq.api.decode import MAX_REQUEST, check_decoded
from flexq.api.jsoncopy import clone
from flexq.errors import BadRequest, Invalid, RequestEntityTooLarge, UnsupportedMediaType

MAX_JSON_PATCH_OPERATIONS = 10_000  # the API server's maxJSONPatchOperations
MAX_COPY_BYTES = 3 * 1024 * 1024  # the API server's JSONPatchMaxCopyBytes
_REJECTED = "the server rejected our request due to an error in our request"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 (a new object: neither argument is changed nor shared). ``target`` is copied once and the
    patch merged into the copy in place, rather than copied again at every level."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = clone(target) if isinstance(target, dict) else {}
    _merge_into(out, patch)
    return out


def _merge_into(out: dict, patch: dict) -> None:
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            cur = out.get(k)
            if not isinstance(cur, dict):
                cur = out[k] = {}
            _merge_into(cur, v)
        else:
            out[k] = clone(v)


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


# -- strategic merge ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ListField:
    """A list the server merges rather than replaces (``patchStrategy: merge``): items by the value of
    ``key`` (``patchMergeKey``), or, with ``key`` None, scalars merged as a set. ``item`` is the patch
    schema of the items; ``retain_keys`` marks ``patchStrategy: merge,retainKeys``."""

    key: str | None
    item: dict[str, Any] | None = None
    retain_keys: bool = False


# The patch strategies of the built-in types flexq serves, from the ``patchStrategy``/``patchMergeKey`` struct
# tags of k8s.io/api core/v1 and batch/v1. A schema maps a field to the schema of a nested struct or to a
# ListField; any other list is replaced whole (tolerations, args, envFrom, affinity terms...).
_CONDITIONS = {"conditions": ListField("type")}
_OBJECT_META = {"finalizers": ListField(None), "ownerReferences": ListField("uid")}
_CONTAINER = {
    "ports": ListField("containerPort"),
    "env": ListField("name"),
    "volumeMounts": ListField("mountPath"),
    "volumeDevices": ListField("devicePath"),
}
_POD_SPEC = {
    "containers": ListField("name", _CONTAINER),
    "initContainers": ListField("name", _CONTAINER),
    "ephemeralContainers": ListField("name", _CONTAINER),
    "volumes": ListField("name", None, True),
    "imagePullSecrets": ListField("name"),
    "hostAliases": ListField("ip"),
    "topologySpreadConstraints": ListField("topologyKey"),
    "resourceClaims": ListField("name", None, True),
    "schedulingGates": ListField("name"),
}
_POD_TEMPLATE_SPEC = {"metadata": _OBJECT_META, "spec": _POD_SPEC}
PATCH_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("", "Pod"): {
        "metadata": _OBJECT_META,
        "spec": _POD_SPEC,
        "status": {
            **_CONDITIONS,
            "podIPs": ListField("ip"),
            "hostIPs": ListField("ip"),
            "resourceClaimStatuses": ListField("name", None, True),
        },
    },
    ("", "PodTemplate"): {"metadata": _OBJECT_META, "template": _POD_TEMPLATE_SPEC},
    ("batch", "Job"): {
        "metadata": _OBJECT_META,
        "spec": {"template": _POD_TEMPLATE_SPEC},
        "status": _CONDITIONS,
    },
    ("", "Service"): {"metadata": _OBJECT_META, "spec": {"ports": ListField("port")}, "status": _CONDITIONS},
    ("", "Node"): {
        "metadata": _OBJECT_META,
        "spec": {"podCIDRs": ListField(None)},
        "status": {**_CONDITIONS, "addresses": ListField("type")},
    },
    ("", "Namespace"): {"metadata": _OBJECT_META, "status": _CONDITIONS},
    ("", "ConfigMap"): {"metadata": _OBJECT_META},
    ("", "Secret"): {"metadata": _OBJECT_META},
    ("", "Event"): {"metadata": _OBJECT_META},
    ("", "ServiceAccount"): {"metadata": _OBJECT_META, "secrets": ListField("name")},
    ("apps", "Deployment"): {
        "metadata": _OBJECT_META,
        "spec": {"template": _POD_TEMPLATE_SPEC},
        "status": _CONDITIONS,
    },
    ("coordination.k8s.io", "Lease"): {"metadata": _OBJECT_META},
    ("scheduling.k8s.io", "PriorityClass"): {"metadata": _OBJECT_META},
    # RBAC's rules, subjects and roleRef carry no patch strategy: a strategic merge replaces them whole
    ("rbac.authorization.k8s.io", "Role"): {"metadata": _OBJECT_META},
    ("rbac.authorization.k8s.io", "ClusterRole"): {"metadata": _OBJECT_META},
    ("rbac.authorization.k8s.io", "RoleBinding"): {"metadata": _OBJECT_META},
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): {"metadata": _OBJECT_META},
}
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def patch_schema(group: str, kind: str) -> dict[str, Any] | None:
    """The strategic-merge schema of a built-in kind; None for kinds strategic merge does not serve
    (custom resources: the API server refuses the patch type for them)."""
    return PATCH_SCHEMAS.get((group, kind))


def strategic_merge_patch(target: Any, patch: Any, schema: dict[str, Any] | None = None) -> Any:
    """The API server's strategic merge (``StrategicMergePatch``): maps merge; lists the schema marks merge
    by their merge key (``$patch: delete`` items go, a ``$patch: replace`` item replaces the list), or as
    sets of scalars; every other list is replaced. Directives: ``$patch`` (merge/replace/delete) on a map,
    ``$retainKeys``, ``$deleteFromPrimitiveList/<list>``, ``$setElementOrder/<list>``. A merged list is
    ordered as upstream orders it: the items the patch (or ``$setElementOrder``) names in that order,
    interleaved with the items only the server has by their places on the server (so an item new to the
    server comes before the server's own items, as in the Kubernetes docs' patch examples)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = _merge_map(target if isinstance(target, dict) else {}, patch, schema or {})
    return {} if out is None else out


def _key_of(item: Any, key: str | None) -> Any:
    if key is None:
        return item
    if not isinstance(item, dict):
        raise BadRequest(f"expected a map in a list merged by {key!r}, got {type(item).__name__}")
    if key not in item:
        raise BadRequest(f"map: {item} does not contain declared merge key: {key}")
    return item[key]


def _fresh(patch: dict) -> dict | None:
    """``_merge_map({}, patch)`` for a patch with no directive, map or list (a new keyed list item, as each of
    25,000 owner references is): its non-null values, shared (scalars); None for any other patch."""
    for k, v in patch.items():
        if type(k) is not str or k[:1] == "$" or isinstance(v, dict | list):
            return None
    return {k: v for k, v in patch.items() if v is not None}


def _merge_map(original: dict, patch: dict, schema: dict[str, Any]) -> dict | None:
    if not original and (fresh := _fresh(patch)) is not None:
        return fresh
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise BadRequest(f"Unknown patch type: {directive}")
    _check_directives(patch)
    out = clone(original)
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or ())
        out = {k: v for k, v in out.items() if k in keep}
    for k, v in patch.items():
        if k.startswith(_DELETE_PRIMITIVE):
            name = k[len(_DELETE_PRIMITIVE) :]
            if isinstance(out.get(name), list):
                out[name] = [x for x in out[name] if x not in (v or ())]
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        sub = schema.get(k)
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and isinstance(sub, ListField):
            cur_list = out.get(k)
            out[k] = _merge_list(cur_list if isinstance(cur_list, list) else [], v, sub)
        elif isinstance(v, dict):
            cur_map = out.get(k)
            merged = _merge_map(
                cur_map if isinstance(cur_map, dict) else {}, v, sub if isinstance(sub, dict) else {}
            )
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        else:
            out[k] = copy.deepcopy(v)
    for k, order in patch.items():
        if k.startswith(_ORDER):
            name = k[len(_ORDER) :]
            sub = schema.get(name)
            if isinstance(sub, ListField) and isinstance(out.get(name), list) and isinstance(order, list):
                prior = original.get(name)
                was = prior if isinstance(prior, list) else []
                out[name] = _in_order(
                    out[name],
                    [_key_of(o, sub.key) for o in order],
                    [_key_or_none(o, sub.key) for o in was],
                    sub.key,
                )
    return out


def _check_directives(patch: dict) -> None:
    """The list-valued directives must be lists (of scalars for ``$retainKeys``): a 400 with
    apimachinery's mergepatch error otherwise, as the API server answers."""
    retain = patch.get("$retainKeys")
    if retain is not None and (not isinstance(retain, list) or not all(isinstance(k, str) for k in retain)):
        raise BadRequest("invalid patch format of retainKeys")
    for k, v in patch.items():
        if k.startswith(_DELETE_PRIMITIVE) and v is not None and not isinstance(v, list):
            raise BadRequest("invalid patch format of primitive list")
        if k.startswith(_ORDER) and not isinstance(v, list):
            raise BadRequest("invalid patch format of setElementOrder list")


_GONE = object()  # a removed slot of a list being merged


def _canonical(v: Any) -> Any:
    """A hashable stand-in equal for equal JSON values (a dict's keys in any order)."""
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
    return v


def _merge_list(original: list, items: list, field: ListField) -> list:
    """A list merged by its merge key (or, without one, as a set of primitives), in time linear in the lists'
    lengths (the API server merges through maps: 25,000 owner references or 40,000 finalizers in a patch must
    not cost a quadratic scan; issue 49)."""
    if field.key is None:
        seen: set = set()
        merged = []
        for x in original + items:
            c = _canonical(x)
            if c not in seen:
                seen.add(c)
                merged.append(x)
        return _in_order(merged, items, original, None)
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in items):
        return [copy.deepcopy(i) for i in items if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    slots: list[Any] = clone(original)
    where: dict[Any, list[int]] = {}  # merge key -> the live slots that hold it, in order
    for n, cur in enumerate(slots):
        if isinstance(cur, dict):
            where.setdefault(_canonical(cur.get(field.key)), []).append(n)
    listed = []
    schema = field.item or {}
    for item in items:
        kv = _key_of(item, field.key)
        ck = _canonical(kv)
        at = where.get(ck)
        if item.get("$patch") == "delete":
            for n in where.pop(ck, []):
                slots[n] = _GONE
            continue
        listed.append(kv)
        idx = at[0] if at else None
        new = _merge_map(slots[idx] if idx is not None else {}, item, schema)
        if idx is None:
            slots.append(new)
            if new is not None:
                where.setdefault(ck, []).append(len(slots) - 1)
        elif new is None:
            slots[idx] = _GONE
            if at:
                at.pop(0)
        else:
            slots[idx] = new
    merged = [s for s in slots if s is not _GONE]
    return _in_order(merged, listed, [_key_or_none(o, field.key) for o in original], field.key)


def _in_order(merged: list, order: list, server: list, key: str | None) -> list:
    """``normalizeElementOrder``: the items ``order`` names, in that order, merged with the items only the
    server has, which keep their places relative to the items they stood next to on the server."""

    def pos(keys: list) -> dict:  # each key's first place
        return {c: n for n, c in reversed(list(enumerate(map(_canonical, keys))))}

    at_order, at_server = pos(order), pos(server)
    keys = [_canonical(_key_or_none(m, key)) for m in merged]  # each item's key, worked out once
    mine = sorted((i for i, k in enumerate(keys) if k in at_order), key=lambda i: at_order[keys[i]])
    last = len(server)
    theirs = sorted(
        (i for i, k in enumerate(keys) if k not in at_order), key=lambda i: at_server.get(keys[i], last)
    )
    out, i, j = [], 0, 0
    while i < len(theirs) or j < len(mine):  # theirs first where the server had it before the next of mine
        li = at_server.get(keys[theirs[i]]) if i < len(theirs) else None
        ri = at_server.get(keys[mine[j]]) if j < len(mine) else None
        if j >= len(mine) or (li is not None and ri is not None and li < ri):
            out.append(merged[theirs[i]])
            i += 1
        else:
            out.append(merged[mine[j]])
            j += 1
    return out


def _key_or_none(item: Any, key: str | None) -> Any:
    """The merge key of an item already stored (which may lack it: then it matches nothing)."""
    if key is None:
        return item
    return item.get(key) if isinstance(item, dict) else None


def three_way_strategic_patch(
    original: dict | None, modified: dict, current: dict, schema: dict[str, Any]
) -> dict:
    """The strategic merge patch a client-side ``kubectl apply`` sends for a built-in kind
    (``CreateThreeWayMergePatch``): the changes and additions from ``current`` (the live object) to
    ``modified`` (the manifest now), merged with the deletions from ``original`` (the manifest last applied)
    to ``modified``. Lists merge by key, so an item a controller added to the live object stays, and an item
    dropped from the manifest goes (``$patch: delete``, ``$deleteFromPrimitiveList``); ``$setElementOrder``
    carries the manifest's order."""
    delta = _diff_maps(current, modified, schema, deletions=False, changes=True)
    if not isinstance(original, dict):
        return delta
    return _combine(_diff_maps(original, modified, schema, deletions=True, changes=False), delta, schema)


def _diff_maps(
    old: dict, new: dict, schema: dict[str, Any], *, deletions: bool, changes: bool, retain_keys: bool = False
) -> dict:
    patch: dict = {}
    for k, nv in new.items():
        if k not in old or type(old[k]) is not type(nv):
            if changes:
                patch[k] = copy.deepcopy(nv)
            continue
        ov, sub = old[k], schema.get(k)
        if isinstance(nv, dict):
            p = _diff_maps(ov, nv, sub if isinstance(sub, dict) else {}, deletions=deletions, changes=changes)
            if p:
                patch[k] = p
        elif isinstance(nv, list) and isinstance(sub, ListField):
            _diff_lists(k, ov, nv, sub, patch, deletions=deletions, changes=changes)
        elif changes and ov != nv:
            patch[k] = copy.deepcopy(nv)
    if deletions:
        for k in old:
            if k not in new:
                patch[k] = None
    if retain_keys and changes and patch:
        patch["$retainKeys"] = sorted(k for k, v in new.items() if v is not None)
    return patch


def _diff_lists(
    name: str, old: list, new: list, field: ListField, patch: dict, *, deletions: bool, changes: bool
) -> None:
    if field.key is None:
        added = [x for x in new if x not in old] if changes else []
        gone = [x for x in old if x not in new] if deletions else []
        if added:
            patch[name] = added
        if gone:
            patch[_DELETE_PRIMITIVE + name] = gone
        if (deletions and gone) or (changes and old != new):
            patch[_ORDER + name] = copy.deepcopy(new)
        return
    key = field.key
    before = {_canonical(i.get(key)): i for i in old if isinstance(i, dict)}
    now = {_canonical(i.get(key)) for i in new if isinstance(i, dict)}
    items: list = []
    for item in new:
        if not isinstance(item, dict):
            continue
        was = before.get(_canonical(item.get(key)))
        if was is None:
            if changes:
                items.append(copy.deepcopy(item))
            continue
        p = _diff_maps(
            was, item, field.item or {}, deletions=deletions, changes=changes, retain_keys=field.retain_keys
        )
        if p:
            items.append({key: item.get(key), **p})
    if deletions:
        items += [
            {key: i.get(key), "$patch": "delete"}
            for i in old
            if isinstance(i, dict) and _canonical(i.get(key)) not in now
        ]
    same_order = [i.get(key) for i in old if isinstance(i, dict)] == [
        i.get(key) for i in new if isinstance(i, dict)
    ]
    if (changes and (items or not same_order)) or (deletions and items):
        patch[_ORDER + name] = [{key: i.get(key)} for i in new if isinstance(i, dict)]
    if items:
        patch[name] = items


def _combine(first: dict, second: dict, schema: dict[str, Any]) -> dict:
    """Two patches as one (the deletions, then the changes): maps and keyed lists merge, directives of
    ``second`` win."""
    out = copy.deepcopy(first)
    for k, v in second.items():
        sub = schema.get(k)
        cur = out.get(k)
        if isinstance(cur, dict) and isinstance(v, dict):
            out[k] = _combine(cur, v, sub if isinstance(sub, dict) else {})
        elif isinstance(cur, list) and isinstance(v, list) and isinstance(sub, ListField):
            merged = list(cur)
            for item in v:
                if sub.key is None:
                    if item not in merged:
                        merged.append(copy.deepcopy(item))
                    continue
                idx = next((n for n, m in enumerate(merged) if m.get(sub.key) == item.get(sub.key)), None)
                if idx is None:
                    merged.append(copy.deepcopy(item))
                else:
                    merged[idx] = _combine(merged[idx], item, sub.item or {})
            out[k] = merged
        else:
            out[k] = copy.deepcopy(v)
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
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise RequestEntityTooLarge(
            f"Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}"
        )
    doc = copy.deepcopy(target)
    copied = 0  # what the copy operations added so far, in bytes of JSON (json-patch's accumulatedCopySize)
    for n, op in enumerate(ops):
        if not isinstance(op, dict):
            raise BadRequest(f"json patch operation {n} is not an object: {json.dumps(op)[:100]}")
        for name in ("op", "path"):
            if not isinstance(op.get(name), str):
                raise BadRequest(f'json patch operation {n} must have a string "{name}"')
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind not in ("add", "remove", "replace", "move", "copy", "test"):
                raise BadRequest(f"unknown json patch operation {kind!r}")
            if kind == "remove" and not parts:
                raise Invalid(
                    "the server rejected our request due to an error in our request: unable to remove "
                    'the whole document (path "")'
                )
            if kind in ("add", "replace", "test"):
                value = copy.deepcopy(op["value"])
            if kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = _walk(doc, src)
                if kind == "copy":  # sized before it is copied: a refused copy costs no memory
                    copied += check_decoded(value, limit=2**62)
                    if copied > MAX_COPY_BYTES:
                        raise Invalid(
                            f"{_REJECTED}: Unable to complete the copy, the accumulated size increase of copy "
                            f"is {copied}, exceeding the limit {MAX_COPY_BYTES}"
                        )
                if kind == "move":  # the value itself goes (RFC 6902: remove, then add): nothing to copy
                    parent = _walk(doc, src[:-1])
                    parent.pop(int(src[-1]) if isinstance(parent, list) else src[-1])
                else:
                    value = copy.deepcopy(value)
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
        except (KeyError, IndexError, ValueError, TypeError, AttributeError, RecursionError) as exc:
            raise Invalid(
                f"the server rejected our request due to an error in our request: "
                f"doc is missing path: {op.get('path') if isinstance(op, dict) else op}: {exc}"
            ) from None
    return doc


def apply_patch(target: dict, patch: Any, patch_type: str, kind: tuple[str, str] | None = None) -> dict:
    """Dispatch on the content type's short name: merge, json, strategic. A strategic merge needs the
    (group, kind) of a built-in kind; for any other the API server refuses that patch type (415). The patched
    object is refused (413) past ``MAX_REQUEST`` bytes of JSON."""
    patched = _apply_patch(target, patch, patch_type, kind)
    try:
        check_decoded(patched)
    except RequestEntityTooLarge:
        raise RequestEntityTooLarge(
            f"Request entity too large: the patched object is larger than the limit of {MAX_REQUEST} bytes"
        ) from None
    return patched


def _apply_patch(target: dict, patch: Any, patch_type: str, kind: tuple[str, str] | None) -> Any:
    if patch_type in ("merge", "application/merge-patch+json"):
        return merge_patch(target, patch)
    if patch_type in ("strategic", "application/strategic-merge-patch+json"):
        schema = patch_schema(*kind) if kind is not None else None
        if schema is None:
            raise UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml"
            )
        return strategic_merge_patch(target, patch, schema)
    if patch_type in ("json", "application/json-patch+json"):
        return json_patch(target, patch)
    raise BadRequest(f"unsupported patch type {patch_type!r}")
