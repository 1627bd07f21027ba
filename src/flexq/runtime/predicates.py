"""Event predicates: which watch events may wake a controller, as controller-runtime's ``predicate`` package.

A ``Watch`` may carry a ``predicate`` over the event (``WatchEvent.old`` is the version a MODIFIED event
replaced): an event it refuses enqueues nothing, so a controller is not woken by updates it does not care
about (its own status writes, another controller's status). Each controller declares what its upstream
declares in ``SetupWithManager`` (``builder.WithPredicates``, ``WithEventFilter``, or a handler that filters
in ``Update``). As controller-runtime's, every predicate here lets ADDED and DELETED events through and judges
only updates; an update whose old version is unknown (a replay) is let through too: never miss a change.

The twin's store never emits an event for a no-op write (as the API server does not), so
``resource_version_changed`` is always true here; it is kept for controllers that declare it.
Must not import domain packages or ``flexq.http``.
"""

from __future__ import annotations

from collections.abc import Callable

from flexq.store.store import WatchEvent

Predicate = Callable[[WatchEvent], bool]

__all__ = [
    "Predicate",
    "all_of",
    "annotations_changed",
    "any_of",
    "generation_changed",
    "labels_changed",
    "metadata_changed",
    "outside_status_changed",
    "resource_version_changed",
    "update_changed",
    "view_changed",
]

# metadata a write moves without changing what the object says (compared by no predicate)
_WRITE_METADATA = frozenset({"resourceVersion", "managedFields"})
_MISSING = object()


def _md(obj: dict) -> dict:
    return obj.get("metadata") or {}


def resource_version_changed(ev: WatchEvent) -> bool:
    """``predicate.ResourceVersionChangedPredicate``: an update whose resourceVersion moved."""
    if ev.type != "MODIFIED" or ev.old is None:
        return True
    return _md(ev.old).get("resourceVersion") != _md(ev.object).get("resourceVersion")


def generation_changed(ev: WatchEvent) -> bool:
    """``predicate.GenerationChangedPredicate``: an update that changed ``metadata.generation`` (the spec; a
    deletion mark bumps it too for kinds with finalizers). Status-only and metadata-only updates are refused."""
    if ev.type != "MODIFIED" or ev.old is None:
        return True
    return _md(ev.old).get("generation") != _md(ev.object).get("generation")


def labels_changed(ev: WatchEvent) -> bool:
    """``predicate.LabelChangedPredicate``."""
    if ev.type != "MODIFIED" or ev.old is None:
        return True
    return (_md(ev.old).get("labels") or {}) != (_md(ev.object).get("labels") or {})


def annotations_changed(ev: WatchEvent) -> bool:
    """``predicate.AnnotationChangedPredicate``."""
    if ev.type != "MODIFIED" or ev.old is None:
        return True
    return (_md(ev.old).get("annotations") or {}) != (_md(ev.object).get("annotations") or {})


def update_changed(compare: Callable[[dict, dict], bool]) -> Predicate:
    """``predicate.Funcs`` with only ``UpdateFunc`` set: ``compare(old, new)`` judges updates; creates and deletes
    pass."""

    def pred(ev: WatchEvent) -> bool:
        if ev.type != "MODIFIED" or ev.old is None:
            return True
        return compare(ev.old, ev.object)

    return pred


def metadata_changed(old: dict, new: dict, ignored: frozenset[str] = _WRITE_METADATA) -> bool:
    """Two versions' metadata differ in a field but the ``ignored`` ones (by default the resourceVersion and
    managedFields, which every write moves). Fields shared by both versions compare by identity first."""
    missing = _MISSING
    for m, a in old.items():
        if m in ignored:
            continue
        b = new.get(m, missing)
        if a is not b and a != b:
            return True
    return new.keys() != old.keys() and any(m not in old and m not in ignored for m in new)


def outside_status_changed(old: dict, new: dict) -> bool:
    """Anything but the status changed between two versions: the spec, any metadata (labels, annotations,
    owner references, finalizers, the deletion mark) but the resourceVersion and managedFields, any other
    top-level field. A comparison for ``update_changed`` or ``view_changed``; equal shared parts compare by
    identity first (stored versions share what a write did not change)."""
    missing = _MISSING
    for k, a in old.items():
        if k == "status":
            continue
        b = new.get(k, missing)
        if a is b:
            continue
        if k == "metadata" and isinstance(a, dict) and isinstance(b, dict):
            if metadata_changed(a, b):
                return True
        elif a != b:
            return True
    return new.keys() != old.keys() and any(k not in old and k != "status" for k in new)


def view_changed(view: Callable[[dict], object]) -> Predicate:
    """An update passes when ``view`` (what its controller reads of the object) differs between the old and the
    new version; creates and deletes pass. The view must name every field the reconcile reads, so that a
    refused update is one whose reconcile would find its inputs as they were."""

    def pred(ev: WatchEvent) -> bool:
        if ev.type != "MODIFIED" or ev.old is None:
            return True
        return view(ev.old) != view(ev.object)

    return pred


def any_of(*preds: Predicate) -> Predicate:
    """``predicate.Or``."""

    def pred(ev: WatchEvent) -> bool:
        return any(p(ev) for p in preds)

    return pred


def all_of(*preds: Predicate) -> Predicate:
    """``predicate.And``."""

    def pred(ev: WatchEvent) -> bool:
        return all(p(ev) for p in preds)

    return pred
