"""The store's storage rules: what the write path does to an object's metadata, as the API server's registry
(``k8s.io/apiserver/pkg/registry/rest``: ``BeforeCreate``, ``BeforeUpdate``, the patcher's name checks) does it,
whoever wrote the object.

Owns: ``created`` (a new object's uid, creation time and generation; what a client may not set, dropped),
``carried`` (what an update keeps of the stored version: identity, deletion, generation bumped by a spec change
only; no new finalizer on an object being deleted), ``check_patched`` (a patch may not move an object to another
name, namespace or uid), ``same`` (a write that changes nothing is no write: no new resourceVersion) and
``spec_changed``. Pure functions of their arguments: the store (``flexq.store.store``) calls them under its lock.
Must not import ``flexq.runtime``, domain packages or ``flexq.http``.
"""

from __future__ import annotations

from typing import Any

from flexq.api import scheme
from flexq.api.registry import KindInfo
from flexq.errors import AlreadyExists, BadRequest, Cause, Conflict, Invalid, InvalidWrite, NotFound


def _resource(info: KindInfo) -> str:
    return f"{info.plural}{'.' + info.group if info.group else ''}"


def not_found(info: KindInfo, name: str) -> NotFound:
    """The API server's NotFound for ``name`` of ``info``'s kind."""
    return NotFound(f'{_resource(info)} "{name}" not found', kind=info.plural, group=info.group, name=name)


def check_new(info: KindInfo, key: tuple[str, str], objs: dict[str, dict]) -> None:
    """A create of ``key`` (namespace, name) among the stored ``objs``: AlreadyExists if it is taken; its namespace
    must exist (NotFound) and not be terminating (Conflict), as the NamespaceLifecycle admission plugin says."""
    if key in objs.get(info.key, {}):
        raise AlreadyExists(
            f'{_resource(info)} "{key[1]}" already exists', kind=info.plural, group=info.group, name=key[1]
        )
    if info.namespaced and ("", key[0]) not in objs.get("namespaces", {}):
        raise NotFound(f'namespaces "{key[0]}" not found', kind="namespaces", name=key[0])
    if info.namespaced and objs["namespaces"][("", key[0])]["metadata"].get("deletionTimestamp"):
        raise Conflict(
            f"unable to create new content in namespace {key[0]} because it is being terminated",
            kind=info.plural,
            name=key[1],
        )


def check_version(info: KindInfo, name: str, cur: dict, rv: str | None) -> None:
    """A write that names a resourceVersion ``rv`` other than ``cur``'s: Conflict (optimistic concurrency)."""
    if rv and rv != cur["metadata"]["resourceVersion"]:
        raise Conflict(
            f'Operation cannot be fulfilled on {_resource(info)} "{name}": the object has been modified; please '
            "apply your changes to the latest version and try again",
            kind=info.plural,
            group=info.group,
            name=name,
        )


def check_trusted(info: KindInfo, data: dict, old: dict | None, writer: str) -> dict:
    """A trusted write's object (a controller's) admitted as a client's would be (``Store.check_writes``, a test
    setting): refused, ``InvalidWrite`` names ``writer``. Admission reads ``data`` and changes none of it."""
    try:
        return scheme.admit(info, data, old, "Strict")
    except (Invalid, BadRequest) as err:
        name = (data.get("metadata") or {}).get("name") or (data.get("metadata") or {}).get("generateName")
        raise InvalidWrite(
            f"{writer or 'a trusted writer'} wrote an invalid {info.kind} {name!r} "
            f"(a controller's write is not admitted; admission refuses it): {err}"
        ) from None


def check_built(info: KindInfo, given: dict, stored: dict, old: dict | None, writer: str) -> None:
    """A controller's object admitted as built (``scheme.BUILT``, kept as its defaulters filled it;
    ``Store.check_writes``, a test setting): ``InvalidWrite`` names ``writer`` when ``ADMIT`` would store
    anything else."""
    admitted = check_trusted(info, given, old, writer)
    if admitted != stored:
        name = (given.get("metadata") or {}).get("name")
        raise InvalidWrite(
            f"{writer or 'a trusted writer'} wrote a {info.kind} {name!r} that admission as built stores other than "
            f"a client's admission would: {_differences(admitted, stored)}"
        )


def _differences(a: Any, b: Any, path: str = "") -> str:
    """Where ``a`` and ``b`` (JSON values) first differ, for a message."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k, _MISSING) != b.get(k, _MISSING):
                return _differences(a.get(k, _MISSING), b.get(k, _MISSING), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _differences(x, y, f"{path}[{i}]")
    return f"{path or '.'}: admitted {a!r}, defaulted {b!r}"


_MISSING = "<absent>"


def created(info: KindInfo, stored: dict, uid: str, now: str) -> dict:
    """``stored``'s metadata as a create leaves it (changed in place and returned): ``uid``, ``now`` as its
    creation time, generation 1 (for a kind that keeps one); a resourceVersion, deletion or selfLink the writer
    sent dropped."""
    m = stored["metadata"]
    m["uid"] = uid
    m["creationTimestamp"] = now
    if info.generation:
        m["generation"] = 1
    else:
        m.pop("generation", None)
    for f in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        m.pop(f, None)
    return m


def carried(info: KindInfo, stored: dict, cur: dict) -> dict:
    """``stored``'s metadata as an update of ``cur`` leaves it (changed in place and returned): uid, creation and
    deletion carried over from ``cur``, the generation bumped when the spec changed, ``cur``'s resourceVersion.
    Invalid when the update adds a finalizer to an object being deleted."""
    m, cm = stored["metadata"], cur["metadata"]
    for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if f in cm:
            m[f] = cm[f]
        else:
            m.pop(f, None)
    if cm.get("deletionTimestamp") and len(m.get("finalizers") or []) > len(cm.get("finalizers") or []):
        new = set(m.get("finalizers") or []) - set(cm.get("finalizers") or [])
        raise Invalid(
            f"metadata.finalizers: Forbidden: no new finalizers can be added if the object is "
            f"being deleted, found new finalizers {sorted(new)}"
        )
    if info.generation:
        m["generation"] = cm.get("generation", 1) + (1 if spec_changed(cur, stored) else 0)
    else:
        m.pop("generation", None)
    m["resourceVersion"] = cm["resourceVersion"]
    return m


def check_patched(info: KindInfo, patched: dict, cur: dict, name: str, namespace: str | None) -> None:
    """The patcher's ``applyPatch`` checks on ``patched`` (the result of patching ``cur``, requested as ``name`` in
    ``namespace``): ``EnsureObjectNamespaceMatchesRequestNamespace`` (an empty namespace takes the request's),
    then ``checkName``; the uid may not change. ``patched``'s metadata is completed in place."""
    pm = patched["metadata"]
    want_ns = (namespace or "") if info.namespaced else ""
    got_ns = pm.get("namespace") or ""
    if got_ns != want_ns:
        if got_ns and want_ns:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if want_ns:
            pm["namespace"] = want_ns
        else:
            pm.pop("namespace", None)
    got_name = pm.get("name")
    if not got_name:  # {"metadata": null}, {"metadata": {"name": null}}
        raise BadRequest(
            f"the name of the object ({name} based on URL) was undeterminable: name must be provided"
        )
    if got_name != name:
        raise BadRequest(f"the name of the object ({got_name}) does not match the name on the URL ({name})")
    if pm.get("uid") and pm["uid"] != cur["metadata"].get("uid"):
        raise scheme.invalid(
            info,
            name,
            [Cause("metadata.uid", "FieldValueInvalid", f'Invalid value: "{pm["uid"]}": field is immutable')],
        )
    pm["name"] = name


def spec_changed(old: dict, new: dict) -> bool:
    """Whether anything but metadata, status, apiVersion and kind differs (what bumps the generation)."""
    for k in set(old) | set(new):
        if k in ("metadata", "status", "apiVersion", "kind"):
            continue
        if old.get(k) != new.get(k):
            return True
    return False


def same(old: dict, new: dict) -> bool:
    """No-op write? (Kubernetes does not bump resourceVersion for those.)"""
    om, nm = old["metadata"], new["metadata"]
    keys = set(om) | set(nm)
    keys.discard("resourceVersion")
    keys.discard("managedFields")
    return (
        all(om.get(k) == nm.get(k) for k in keys)
        and not spec_changed(old, new)
        and old.get("status") == new.get("status")
    )
