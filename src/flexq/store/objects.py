"""The store's read room: the stored objects, their indexes and every read of them, as a client-go informer's
cache answers reads (``get`` and ``list`` copy; ``peek``, ``peek_list`` and ``peek_indexed`` hand out the stored
versions themselves, read-only).

Owns: ``Objects`` — the objects of one store by kind key and (namespace, name), the indexes beside them
(``flexq.store.index``), the kinds a cluster does not serve, the JSON text kept per listed version, and the reads
(answered from the indexes: a read costs what it matches). ``Store`` (``flexq.store.store``) is an ``Objects``
with the write path; it places every committed version here (``_place``, ``_remove``). Must not import
``flexq.runtime``, domain packages or ``flexq.http``.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from flexq.api.jsoncopy import clone, clone_kept, clone_many, no_gc
from flexq.api.registry import KindInfo, Registry
from flexq.api.scheduling import GLOBAL_DEFAULT_INDEX, global_default_index
from flexq.errors import NotFound
from flexq.store.index import Indexes, Key
from flexq.store.rules import not_found
from flexq.store.selectors import (
    field_equalities,
    label_equalities,
    parse_field_selector,
    parse_label_selector,
)


def status_copy(obj: dict) -> dict:
    """A copy of a read-only stored object to prepare a status write from: ``status`` is copied deeply,
    the object, its ``metadata`` and its ``spec`` one level deep (their own keys may be set or removed);
    anything deeper in ``metadata`` and ``spec`` is shared with the store and must not be changed."""
    out = dict(obj)
    for part in ("metadata", "spec"):
        if type(obj.get(part)) is dict:
            out[part] = dict(obj[part])
    if "status" in obj:
        out["status"] = clone_kept(obj["status"])  # most often stored next (update_status take=True)
    return out


class Objects:
    """The objects of one store and their reads (the store holds ``_lock`` around every write)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.RLock()
        self._objs: dict[str, dict[Key, dict]] = {}
        # with ``check_readonly`` (the store's): the stored versions handed out read-only since the last check
        self._reads: set[tuple[str, Key]] | None = None
        # the JSON text of stored versions that were listed (``clone_many``'s cache, by identity), as an API
        # server's watch cache keeps an object's serialization: a version is dropped when a write replaces it
        self.texts: dict[int, tuple[dict, bytes]] = {}
        # the indexes an API server's informers keep (``flexq.store.index``): per kind, keys by namespace, by
        # label (name, value) and by the values of registered indexers (``add_indexer``: spec.nodeName of pods
        # by default); objects by uid, owners' dependents, each kind's sorted keys. The names below are the
        # same tables (the read paths and the collector use them directly)
        self.indexes = ix = Indexes()
        self._children, self._by_uid, self._sorted = ix.children, ix.by_uid, ix.sorted
        self._by_ns, self._by_label, self._indexers, self._by_index = (
            ix.by_ns,
            ix.by_label,
            ix.indexers,
            ix.by_index,
        )
        # kind keys not served here (e.g. ray.io without the RayOperator addon)
        self.disabled: set[str] = set()
        if any(k.kind == "Pod" and not k.group for k in registry):
            self.add_indexer("Pod", "spec.nodeName", _node_name)
        if any(k.kind == "PriorityClass" for k in registry):  # the Priority admission plugin's global default
            self.add_indexer("PriorityClass", GLOBAL_DEFAULT_INDEX, global_default_index)

    def _place(self, kk: str, key: Key, old: dict | None, obj: dict) -> None:
        """``obj`` stored under ``key`` of kind ``kk``, replacing ``old`` (None: a new key), indexed."""
        bucket = self._objs.get(kk)
        if bucket is None:
            bucket = self._objs[kk] = {}
        if old is None:
            self._sorted.pop(kk, None)
            self.indexes.index(kk, key, obj)
        else:
            self.indexes.reindex(kk, key, old, obj)
        bucket[key] = obj

    def _remove(self, kk: str, key: Key, old: dict | None) -> None:
        """The object under ``key`` of kind ``kk`` (``old``, if stored) removed, unindexed."""
        if old is not None:
            self.indexes.unindex(kk, key, old)
        self._objs.get(kk, {}).pop(key, None)
        self._sorted.pop(kk, None)

    def discard(self) -> None:
        """Drop every object, kept text and index: the content of a closed twin's store that no one reads again
        (``TwinCore.discard``)."""
        with self._lock:
            self._objs.clear()
            self.texts.clear()
            self.indexes.clear()

    def info(self, kind: str) -> KindInfo:
        info = self.registry.resolve(kind)
        if info.key in self.disabled:
            raise NotFound(f'the server doesn\'t have a resource type "{kind}"')
        return info

    def serve_addons(self, addons: Iterable[str]) -> None:
        """Serve only the addon-gated kinds whose addon is enabled (GKE's ``--addons=RayOperator``)."""
        enabled = set(addons)
        self.disabled = {
            k.key for k in self.registry if k.served_by_addon and k.served_by_addon not in enabled
        }

    def _key(self, info: KindInfo, namespace: str | None, name: str) -> Key:
        return ((namespace or "default") if info.namespaced else "", name)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict:
        """A copy of the stored object (storage version). Raises NotFound. Copied through the store's cache of
        each version's JSON text, as ``list`` is: a version read again (a config a controller reads on every
        reconcile) is one decode."""
        info = self.info(kind)
        with self._lock:
            obj = self._objs.get(info.key, {}).get(self._key(info, namespace, name))
            if obj is None:
                raise not_found(info, name)
            return clone_many([obj], self.texts)[0]

    def try_get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.get(kind, name, namespace)
        except NotFound:
            return None

    def peek(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """The stored object itself (no copy), or None: read-only, like the objects of a client-go
        informer cache, and like ``WatchEvent.object``. To change it, ``clone`` it (or take ``get``'s copy).
        Takes no lock, so any thread may call it (the HTTP server's gets do): it is one dictionary lookup, and a
        write replaces a stored version rather than changing it."""
        info = self.info(kind)
        key = self._key(info, namespace, name)
        if self._reads is not None:
            self._reads.add((info.key, key))
        return self._objs.get(info.key, {}).get(key)

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[dict]:
        """Copies of matching objects, ordered by namespace then name (as etcd returns them)."""
        with self._lock:
            objs = self.peek_list(kind, namespace, label_selector, field_selector)
            with no_gc():
                return clone_many(objs, self.texts)

    def peek_list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        *,
        labels: dict[str, str] | None = None,
        index: tuple[str, str] | None = None,
        owner_uid: str | None = None,
    ) -> builtins.list[dict]:
        """The stored matching objects themselves (no copies: read-only, as ``peek``), ordered by namespace
        then name. Besides the selectors' string forms: ``labels`` (exact label values), ``index`` (an
        indexer's name and value, see ``add_indexer``) and ``owner_uid`` (dependents of that owner).
        Answered from the indexes: the cost follows the matching objects, not all objects of the kind."""
        info = self.info(kind)
        kk = info.key
        if owner_uid is not None and not (label_selector or field_selector or labels or index):
            return self._owned_by(info, namespace, owner_uid)
        lmatch = parse_label_selector(label_selector)
        fmatch = parse_field_selector(field_selector)
        eq = dict(labels or {})
        eq.update(label_equalities(label_selector))
        fields = field_equalities(field_selector)
        with self._lock:
            items = self._objs.get(kk, {})
            cands: set[Key] | None = None
            if namespace is not None and info.namespaced:
                cands = self._by_ns.get(kk, {}).get(namespace, set())
            if owner_uid is not None:
                cands = self._smaller(cands, {k for c, k in self._children.get(owner_uid, ()) if c == kk})
            for lk, lv in eq.items():
                cands = self._smaller(cands, self._by_label.get(kk, {}).get((lk, lv), set()))
            idx = [index] if index is not None else []
            idx += [(f, v) for f, v in fields if v and f in self._indexers.get(kk, {})]
            for name, value in idx:
                if name not in self._indexers.get(kk, {}):
                    raise KeyError(f"no indexer {name!r} for {kk}")
                cands = self._smaller(cands, self._by_index.get((kk, name), {}).get(value, set()))
            for f, v in fields:
                if f == "metadata.name" and (namespace is not None or not info.namespaced):
                    cands = self._smaller(cands, {self._key(info, namespace, v)})
                elif f == "metadata.namespace" and info.namespaced:
                    cands = self._smaller(cands, self._by_ns.get(kk, {}).get(v, set()))
            if cands is None:
                keys = self._sorted.get(kk)
                if keys is None:
                    keys = self._sorted[kk] = sorted(items)
            else:
                keys = sorted(cands)
            out = []
            for k in keys:
                obj = items.get(k)
                if obj is None:
                    continue
                md = obj["metadata"]
                if namespace is not None and info.namespaced and k[0] != namespace:
                    continue
                if eq:
                    ol = md.get("labels") or {}
                    if any(ol.get(lk) != lv for lk, lv in eq.items()):
                        continue
                if owner_uid is not None and not any(
                    r.get("uid") == owner_uid for r in md.get("ownerReferences") or ()
                ):
                    continue
                if label_selector and not lmatch(md.get("labels") or {}):
                    continue
                if field_selector and not fmatch(obj):
                    continue
                out.append(obj)
                if self._reads is not None:
                    self._reads.add((kk, k))
            return out

    def peek_indexed(self, kind: str, index: str, value: str) -> builtins.list[dict]:
        """The stored objects whose indexer ``index`` gives ``value`` (read-only, unordered): ``peek_list``'s
        ``index=`` without its selectors and sorting, for a hot path's lookup that is nearly always empty (the
        Priority admission plugin's global default class, on every pod create)."""
        kk = self.info(kind).key
        keys = self._by_index.get((kk, index), {}).get(value)
        if not keys:
            return []
        items = self._objs.get(kk, {})
        if self._reads is not None:
            self._reads.update((kk, k) for k in keys)
        return [items[k] for k in list(keys) if k in items]

    def _owned_by(self, info: KindInfo, namespace: str | None, owner_uid: str) -> builtins.list[dict]:
        """``peek_list`` with ``owner_uid`` (and a namespace) only: the owner index's entries of the kind,
        without the selector machinery (controllers ask this on every reconcile of an owner)."""
        kk = info.key
        ns = namespace if info.namespaced else None
        with self._lock:
            items = self._objs.get(kk, {})
            keys = [k for c, k in self._children.get(owner_uid, ()) if c == kk and (ns is None or k[0] == ns)]
            if len(keys) > 1:
                keys.sort()
            out = []
            for k in keys:
                obj = items.get(k)
                if obj is None:
                    continue
                for r in obj["metadata"].get("ownerReferences") or ():
                    if r.get("uid") == owner_uid:
                        out.append(obj)
                        if self._reads is not None:
                            self._reads.add((kk, k))
                        break
            return out

    @contextmanager
    def read_lock(self, blocking: bool = True) -> Iterator[bool]:
        """Hold the store's lock for a consistent read of several objects from a thread other than the
        loop's (the HTTP server lists the objects and the resourceVersion they are at, without hopping onto the
        loop); yields whether it is held. ``blocking=False`` never waits for a write in progress (which holds
        the lock through its journal commit): the caller then reads another way."""
        held = self._lock.acquire(blocking=blocking)
        try:
            yield held
        finally:
            if held:
                self._lock.release()

    @staticmethod
    def _smaller(a: set[Key] | None, b: set[Key]) -> set[Key]:
        return b if a is None or len(b) < len(a) else a

    def add_indexer(self, kind: str, name: str, fn: Callable[[dict], Iterable[str]]) -> None:
        """Keep an index of ``kind`` by the values ``fn(obj)`` returns (client-go's ``AddIndexers``), for
        ``peek_list(index=(name, value))`` and field selectors on ``name``. Idempotent per name."""
        kk = self.registry.resolve(kind).key
        with self._lock:
            self.indexes.add_indexer(kk, name, fn, self._objs.get(kk, {}))

    def count(self, kind: str) -> int:
        return len(self._objs.get(self.info(kind).key, {}))

    def all_objects(self) -> Iterable[tuple[str, dict]]:
        """Every stored object with its kind key (for dumps and tests)."""
        with self._lock:
            return [(kk, clone(o)) for kk, objs in self._objs.items() for o in objs.values()]


def _node_name(pod: dict) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []
