"""The store's index room: the tables an API server's informers keep beside the objects, so that a read costs
what it matches, not what the kind holds.

Owns: ``Indexes`` — per kind, keys by namespace, by label (name, value) and by the values of registered
indexers (client-go's ``AddIndexers``); every object by uid; every owner's dependents (by the uids of its
``ownerReferences``, what the garbage collector walks); each kind's keys sorted (dropped when the key set
changes). Updated by the store's commit; nothing here reads or writes stored objects otherwise. Must not
import ``flexq.runtime``, domain packages or ``flexq.http``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped kinds
Indexer = Callable[[dict], Iterable[str]]


class Indexes:
    """The indexes of one store's objects (the store holds its lock around every call)."""

    def __init__(self) -> None:
        self.children: dict[str, set[tuple[str, Key]]] = {}  # owner uid -> dependents (kind key, key)
        self.by_uid: dict[str, tuple[str, Key]] = {}  # uid -> (kind key, key) of every stored object
        self.sorted: dict[str, list[Key]] = {}  # kind key -> sorted keys, dropped when the key set changes
        self.by_ns: dict[str, dict[str, set[Key]]] = {}
        self.by_label: dict[str, dict[tuple[str, str], set[Key]]] = {}
        self.indexers: dict[str, dict[str, Indexer]] = {}
        self.by_index: dict[tuple[str, str], dict[str, set[Key]]] = {}

    def clear(self) -> None:
        """Forget every object (the indexers stay registered)."""
        for table in (self.children, self.by_uid, self.sorted, self.by_ns, self.by_label, self.by_index):
            table.clear()

    def add_indexer(self, kk: str, name: str, fn: Indexer, objs: dict[Key, dict]) -> None:
        """Index kind ``kk`` by ``fn``'s values too, starting with its stored ``objs``. Idempotent per name."""
        if name in self.indexers.get(kk, {}):
            return
        self.indexers.setdefault(kk, {})[name] = fn
        table = self.by_index.setdefault((kk, name), {})
        for key, obj in objs.items():
            for v in fn(obj):
                table.setdefault(v, set()).add(key)

    def index(self, kk: str, key: Key, obj: dict) -> None:
        md = obj["metadata"]
        uid = md.get("uid")
        if uid:
            self.by_uid[uid] = (kk, key)
        for ref in md.get("ownerReferences") or ():
            self.children.setdefault(ref.get("uid", ""), set()).add((kk, key))
        self.by_ns.setdefault(kk, {}).setdefault(key[0], set()).add(key)
        labels = md.get("labels")
        if labels:
            table = self.by_label.setdefault(kk, {})
            for lk, lv in labels.items():
                table.setdefault((lk, lv), set()).add(key)
        for name, fn in self.indexers.get(kk, {}).items():
            table2 = self.by_index[(kk, name)]
            for v in fn(obj):
                table2.setdefault(v, set()).add(key)

    def reindex(self, kk: str, key: Key, old: dict, new: dict) -> None:
        """``unindex(old)`` then ``index(new)``, without touching the tables whose inputs (uid, owners, labels;
        an indexer's values) the write left as they were: most writes change only status or spec."""
        om, nm = old["metadata"], new["metadata"]
        if om is not nm and (
            om.get("uid") != nm.get("uid")
            or om.get("ownerReferences") != nm.get("ownerReferences")
            or om.get("labels") != nm.get("labels")
        ):
            self.unindex(kk, key, old)
            self.index(kk, key, new)
            return
        for name, fn in self.indexers.get(kk, {}).items():
            before, after = list(fn(old)), list(fn(new))
            if before != after:
                table = self.by_index[(kk, name)]
                for v in before:
                    _drop(table, v, key)
                for v in after:
                    table.setdefault(v, set()).add(key)

    def unindex(self, kk: str, key: Key, obj: dict) -> None:
        uid = obj["metadata"].get("uid")
        if uid and self.by_uid.get(uid) == (kk, key):
            del self.by_uid[uid]
        for ref in obj["metadata"].get("ownerReferences") or ():
            s = self.children.get(ref.get("uid", ""))
            if s is not None:
                s.discard((kk, key))
                if not s:
                    del self.children[ref.get("uid", "")]
        _drop(self.by_ns.get(kk, {}), key[0], key)
        labels = obj["metadata"].get("labels")
        if labels:
            table = self.by_label.get(kk, {})
            for lk, lv in labels.items():
                _drop(table, (lk, lv), key)
        for name, fn in self.indexers.get(kk, {}).items():
            table2 = self.by_index[(kk, name)]
            for v in fn(obj):
                _drop(table2, v, key)


def _drop(table: dict, value: Any, key: Key) -> None:
    keys = table.get(value)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del table[value]
