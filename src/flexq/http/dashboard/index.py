"""What the dashboard joins, kept current from a cluster store's watch, as an informer's indexer keeps a cache.

Owns ``StoreIndex`` (one per cluster store): the Workloads; the ProvisioningRequests by namespace and owning Workload (and,
without owners, by namespace and name); the Events by namespace and the name of the object they are about, that
name kept sorted per namespace so that a job's pods (the names under ``<job>-``) are one range. It subscribes to
the store's watch on the loop (nothing more there), then fills itself off the loop from the store's lists; an
object the watch has told of meanwhile is newer than the list's and is not filed again. Each watch event costs a
dictionary update and at most one sorted insertion on the loop; a render reads under the index's own lock for as
long as it copies references (never the store's lock, so no write waits for a render). Stored objects are
immutable (a write replaces them), so references stay valid snapshots. Must not import domain packages.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from typing import Any

from flexq.store import Store, WatchEvent

__all__ = ["StoreIndex"]

KINDS = ("Workload", "ProvisioningRequest", "Event")


class _Sorted:
    """Objects of one namespace by a name, the names kept sorted (for prefix ranges)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.objs: dict[str, dict[tuple[str, str], dict]] = {}  # name -> (kind, object name) -> object

    def put(self, name: str, key: tuple[str, str], obj: dict) -> None:
        bucket = self.objs.get(name)
        if bucket is None:
            bucket = self.objs[name] = {}
            bisect.insort(self.names, name)
        bucket[key] = obj

    def drop(self, name: str, key: tuple[str, str]) -> None:
        bucket = self.objs.get(name)
        if bucket is None:
            return
        bucket.pop(key, None)
        if not bucket:
            del self.objs[name]
            i = bisect.bisect_left(self.names, name)
            if i < len(self.names) and self.names[i] == name:
                del self.names[i]

    def fill(self, items: list[tuple[str, tuple[str, str], dict]]) -> None:
        """Many at once (one sort, not one insertion each)."""
        for name, key, obj in items:
            self.objs.setdefault(name, {})[key] = obj
        self.names = sorted(self.objs)

    def prefixed(self, prefix: str) -> list[dict]:
        out: list[dict] = []
        i = bisect.bisect_left(self.names, prefix)
        while i < len(self.names) and self.names[i].startswith(prefix):
            out.extend(self.objs[self.names[i]].values())
            i += 1
        return out

    def named(self, name: str) -> list[dict]:
        return list((self.objs.get(name) or {}).values())


class StoreIndex:
    """The dashboard's indexes over one cluster store (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.workloads: dict[tuple[str, str], dict] = {}
        self.prs: dict[tuple[str, str], dict] = {}
        self.prs_by_owner: dict[tuple[str, str], dict[str, dict]] = {}
        self.ownerless_prs: dict[str, _Sorted] = {}
        self.events: dict[str, _Sorted] = {}  # namespace -> by involvedObject name
        self._where: dict[tuple[str, str, str], tuple[Any, ...]] = {}  # what each object was filed under
        self._version = 0  # bumped when a Workload comes or goes (their order: creation time, then name)
        self._ordered: tuple[int, list[tuple[str, str]]] = (-1, [])
        self._cancel: Callable[[], None] | None = None
        self._touched: set[tuple[str, str, str]] | None = None  # told of by the watch while filling

    # -- on the loop ----------------------------------------------------------------------------------------
    def subscribe(self) -> None:
        """Follow the store's watch (on the loop thread, before ``fill``)."""
        self._touched = set()
        sub = self.store.watch(self._on_event, list(KINDS))
        self._cancel = sub.cancel

    def start(self) -> None:
        """``subscribe`` and ``fill`` at once (on the loop)."""
        self.subscribe()
        self.fill()

    # -- off the loop -------------------------------------------------------------------------------------------
    def fill(self) -> None:
        """Everything the store holds now, except what the watch has already told of."""
        lists: dict[str, list[dict]] = {}
        for kind in KINDS:
            try:
                lists[kind] = self.store.peek_list(kind)
            except Exception:  # a kind this cluster does not serve
                lists[kind] = []
        with self.lock:
            touched: set[tuple[str, str, str]] = self._touched or set()
            fresh = {
                kind: [
                    o
                    for o in objs
                    if (kind, o["metadata"].get("namespace") or "", o["metadata"]["name"]) not in touched
                ]
                for kind, objs in lists.items()
            }
            for kind in ("Workload", "ProvisioningRequest"):
                for obj in fresh[kind]:
                    self._put(kind, obj, locked=True)
            by_ns: dict[str, list[tuple[str, tuple[str, str], dict]]] = {}
            for ev in fresh["Event"]:
                md = ev["metadata"]
                ns, about = md.get("namespace") or "", (ev.get("involvedObject") or {}).get("name") or ""
                if ("Event", ns, md["name"]) in self._where:
                    continue
                by_ns.setdefault(ns, []).append((about, ("Event", md["name"]), ev))
                self._where[("Event", ns, md["name"])] = (about,)
            for ns, items in by_ns.items():
                table = self.events.setdefault(ns, _Sorted())
                items += [(n, k, o) for n, bucket in table.objs.items() for k, o in bucket.items()]
                fresh_table = _Sorted()
                fresh_table.fill(items)
                self.events[ns] = fresh_table
            self._touched = None

    def stop(self) -> None:
        if self._cancel is not None:
            self._cancel()

    def _on_event(self, ev: WatchEvent) -> None:
        kind = ev.object.get("kind") or ""
        with self.lock:
            if self._touched is not None:
                md = ev.object["metadata"]
                self._touched.add((kind, md.get("namespace") or "", md["name"]))
            if ev.type == "DELETED":
                self._drop(kind, ev.object)
            else:
                self._put(kind, ev.object, locked=True)

    def _put(self, kind: str, obj: dict, locked: bool = False) -> None:
        if not locked:
            with self.lock:
                self._put(kind, obj, locked=True)
            return
        md = obj["metadata"]
        ns, name = md.get("namespace") or "", md["name"]
        self._drop(kind, obj, replaced=True)
        if kind == "Workload":
            if (ns, name) not in self.workloads:
                self._version += 1
            self.workloads[(ns, name)] = obj
            self._where[(kind, ns, name)] = ()
        elif kind == "ProvisioningRequest":
            self.prs[(ns, name)] = obj
            owners = tuple(
                o.get("name") or "" for o in md.get("ownerReferences") or () if o.get("kind") == "Workload"
            )
            for owner in owners:
                self.prs_by_owner.setdefault((ns, owner), {})[name] = obj
            if not md.get("ownerReferences"):
                self.ownerless_prs.setdefault(ns, _Sorted()).put(name, (kind, name), obj)
            self._where[(kind, ns, name)] = owners
        elif kind == "Event":
            about = (obj.get("involvedObject") or {}).get("name") or ""
            self.events.setdefault(ns, _Sorted()).put(about, (kind, name), obj)
            self._where[(kind, ns, name)] = (about,)

    def _drop(self, kind: str, obj: dict, replaced: bool = False) -> None:
        md = obj["metadata"]
        ns, name = md.get("namespace") or "", md["name"]
        filed = self._where.pop((kind, ns, name), None)
        if filed is None:
            return
        if kind == "Workload":
            if not replaced:
                self.workloads.pop((ns, name), None)
                self._version += 1
        elif kind == "ProvisioningRequest":
            self.prs.pop((ns, name), None)
            for owner in filed:
                mine = self.prs_by_owner.get((ns, owner))
                if mine is not None:
                    mine.pop(name, None)
                    if not mine:
                        del self.prs_by_owner[(ns, owner)]
            if ns in self.ownerless_prs:
                self.ownerless_prs[ns].drop(name, (kind, name))
        elif kind == "Event" and ns in self.events:
            self.events[ns].drop(filed[0], (kind, name))

    # -- any thread -----------------------------------------------------------------------------------------
    def all_workloads(self) -> list[dict]:
        with self.lock:
            return list(self.workloads.values())

    def ordered_workloads(self) -> list[dict]:
        """The Workloads by creation time, then namespace and name (the order sorted again only when one came
        or went: a write replaces an object in place, and a creation time never changes)."""
        with self.lock:
            version, keys = self._ordered
            if version != self._version:
                keys = sorted(
                    self.workloads,
                    key=lambda k: (self.workloads[k]["metadata"].get("creationTimestamp") or "", k[1], k[0]),
                )
                self._ordered = (self._version, keys)
            return [self.workloads[k] for k in keys]

    def all_prs(self) -> list[dict]:
        with self.lock:
            return list(self.prs.values())

    def prs_of(self, wl: dict) -> list[dict]:
        """The requests owned by ``wl``, and those without owners named ``<wl>-…`` (``reasons._mine`` picks)."""
        md = wl["metadata"]
        ns = md.get("namespace") or ""
        with self.lock:
            out = list((self.prs_by_owner.get((ns, md["name"])) or {}).values())
            sorted_ = self.ownerless_prs.get(ns)
            if sorted_ is not None:
                out += sorted_.prefixed(md["name"] + "-")
        return out

    def events_about(self, namespace: str, name: str, prefix: str | None = None) -> list[dict]:
        """Events about the object ``name`` of the namespace, and (``prefix``) about those named ``prefix…``."""
        with self.lock:
            table = self.events.get(namespace)
            if table is None:
                return []
            out = table.named(name) if name else []
            if prefix:
                out += [
                    e for e in table.prefixed(prefix) if (e.get("involvedObject") or {}).get("name") != name
                ]
        return out
