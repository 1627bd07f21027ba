"""Server-side apply, reduced to what kubectl and the Python client exercise.

Owns: field sets (leaf paths of an applied configuration; lists are atomic), their ``FieldsV1`` encoding
in ``metadata.managedFields``, conflict detection against other managers (409 ``FieldManagerConflict``
unless ``force``), removal of fields a manager applied before and no longer applies (when no other manager
owns them), and the merge of the applied configuration into the live object. Pure: it returns the object
to write; the store writes it. Must not import flexq modules other than ``flexq.errors``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from flexq.errors import Cause, Conflict

Path = tuple[str, ...]
_IDENTITY = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
_SKIP_META = {
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
}


def leaf_paths(obj: Any, prefix: Path = ()) -> set[Path]:
    """Paths of the leaves of a configuration (maps recurse; lists, scalars and ``{}`` are leaves)."""
    if isinstance(obj, dict) and obj:
        out: set[Path] = set()
        for k, v in obj.items():
            if prefix == () and k == "status":
                continue
            if prefix == ("metadata",) and k in _SKIP_META:
                continue
            out |= leaf_paths(v, (*prefix, k))
        return out
    return {prefix} - _IDENTITY if prefix else set()


def encode(paths: set[Path]) -> dict[str, Any]:
    """``FieldsV1``: ``{"f:spec": {"f:x": {}}}``."""
    root: dict[str, Any] = {}
    for p in sorted(paths):
        node = root
        for part in p:
            node = node.setdefault(f"f:{part}", {})
    return root


def decode(fields: dict[str, Any] | None, prefix: Path = ()) -> set[Path]:
    """Inverse of ``encode`` (keys other than ``f:`` ones, such as list items ``k:``, count as leaves)."""
    out: set[Path] = set()
    for k, v in (fields or {}).items():
        if not k.startswith("f:"):
            if prefix:
                out.add(prefix)
            continue
        p = (*prefix, k[2:])
        if isinstance(v, dict) and any(x.startswith("f:") for x in v):
            out |= decode(v, p)
        else:
            out.add(p)
    return out


_MISSING = object()


def _get(obj: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _set(obj: dict, path: Path, value: Any) -> None:
    for part in path[:-1]:
        nxt = obj.get(part)
        if not isinstance(nxt, dict):
            nxt = obj[part] = {}
        obj = nxt
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: dict, path: Path) -> None:
    parents = []
    for part in path[:-1]:
        if not isinstance(obj.get(part), dict):
            return
        parents.append((obj, part))
        obj = obj[part]
    obj.pop(path[-1], None)
    for parent, part in reversed(parents):  # drop maps the removal emptied
        if parent[part] == {}:
            del parent[part]


def _dotted(p: Path) -> str:
    return "".join(f".{x}" if all(c.isalnum() or c in "_-" for c in x) else f"[{json.dumps(x)}]" for x in p)


def _manager(entry: dict) -> str:
    """A manager as the API server names it in a conflict (an Update one with its version and time)."""
    name = json.dumps(str(entry.get("manager")))
    if entry.get("operation") == "Update":
        return f"{name} using {entry.get('apiVersion')}" + (
            f" at {entry['time']}" if entry.get("time") else ""
        )
    return name


def track_update(
    live: dict, new: dict, manager: str, api_version: str, now: str, subresource: str | None = None
) -> dict:
    """``new`` with its ``managedFields`` as the API server keeps them after a non-apply write (create,
    update, patch) by ``manager``: the fields the write changed leave every other manager's set and join
    ``manager``'s ``Update`` entry, so that a later apply by a manager that lost them conflicts."""
    entries = [dict(e) for e in (live.get("metadata") or {}).get("managedFields") or []]
    old_paths, new_paths = _all_paths(live, subresource), _all_paths(new, subresource)
    changed = {p for p in old_paths | new_paths if _get(live, p) != _get(new, p)}
    if not changed:
        out_meta = new.setdefault("metadata", {})
        out_meta["managedFields"] = entries
        return new
    mine = next(
        (
            e
            for e in entries
            if e.get("manager") == manager
            and e.get("operation") == "Update"
            and e.get("subresource") == subresource
        ),
        None,
    )
    kept = []
    for e in entries:
        if e is mine:
            continue
        owned = decode(e.get("fieldsV1")) - changed
        owned = {p for p in owned if not any(p[: len(c)] == c or c[: len(p)] == p for c in changed)}
        if owned:
            e["fieldsV1"] = encode(owned)
            kept.append(e)
    owned = (decode(mine.get("fieldsV1")) if mine else set()) | {p for p in changed if p in new_paths}
    owned = {p for p in owned if _get(new, p) is not _MISSING}
    if owned:
        entry = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            "time": now,
            "fieldsType": "FieldsV1",
            "fieldsV1": encode(owned),
        }
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    new.setdefault("metadata", {})["managedFields"] = kept
    return new


def _all_paths(obj: dict, subresource: str | None) -> set[Path]:
    if subresource == "status":
        return {("status", *p) for p in leaf_paths(obj.get("status") or {})} if obj.get("status") else set()
    return leaf_paths(obj)


def apply(live: dict | None, applied: dict, manager: str, force: bool, api_version: str, now: str) -> dict:
    """The object after ``manager`` applies ``applied`` to ``live`` (None: it does not exist yet)."""
    entries = [dict(e) for e in ((live or {}).get("metadata") or {}).get("managedFields") or []]
    mine = next((e for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"), None)
    old_set = decode(mine.get("fieldsV1")) if mine else set()
    new_set = leaf_paths(applied)
    others = [(e, decode(e.get("fieldsV1"))) for e in entries if e is not mine]
    conflicts: list[tuple[str, Path]] = []
    for e, owned in others:
        for p in sorted(new_set & owned):
            if live is not None and _get(live, p) != _get(applied, p):
                conflicts.append((_manager(e), p))
    if conflicts and not force:
        causes = [Cause(_dotted(p), "FieldManagerConflict", f"conflict with {m}") for m, p in conflicts]
        text = "; ".join(f"conflict with {m}: {_dotted(p)}" for m, p in conflicts)
        n = len(conflicts)
        raise Conflict(f"Apply failed with {n} conflict{'s' if n > 1 else ''}: {text}", causes=causes)
    taken = {p for _, p in conflicts}
    out = copy.deepcopy(live) if live is not None else {}
    others_owned: set[Path] = set()
    for e, owned in others:
        owned -= taken
        e["fieldsV1"] = encode(owned)
        others_owned |= owned
    for p in sorted(old_set - new_set, key=len, reverse=True):
        if p not in others_owned:
            _remove(out, p)
    for p in sorted(new_set):
        value = _get(applied, p)
        if value == {} and isinstance(_get(out, p), dict):
            continue  # an empty map claims the field, it does not clear what others put there
        _set(out, p, value)
    for f in ("apiVersion", "kind"):
        if f in applied:
            out[f] = applied[f]
    meta = out.setdefault("metadata", {})
    for f in ("name", "namespace"):
        if (applied.get("metadata") or {}).get(f):
            meta[f] = applied["metadata"][f]
    mine_entry = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": encode(new_set),
    }
    kept = [e for e, owned in others if owned]
    meta["managedFields"] = (
        [*kept, mine_entry] if mine is None else [mine_entry if e is mine else e for e in [*kept, mine]]
    )
    return out
