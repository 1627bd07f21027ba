"""The GKE controllers' informer cache: one cluster's GKE Nodes and its Pods, kept current by a store watch.

Owns: ``GkeCache`` (references to the store's stored objects, never mutated: callers clone before changing
one) and ``cache_for(store)``, so every GKE controller of a cluster shares one cache and no reconcile has
to copy every pod and node of the cluster out of the store. Subscribed when the package's controllers are
built, before their own watches, so a reconcile always sees the event that woke it.
Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

import weakref
from typing import Any

from flexq.gke.catalog import LABEL_NODEPOOL
from flexq.store.store import Store, WatchEvent

__all__ = ["GkeCache", "cache_for"]


class GkeCache:
    """Pods by (namespace, name); GKE nodes (those with a node pool label) by name."""

    def __init__(self, store: Store) -> None:
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self._sub = store.watch(self._on_event, ["Node", "Pod"])
        for node in store.list("Node"):
            self._on_event(WatchEvent("ADDED", "", node, 0))
        for pod in store.list("Pod"):
            self._on_event(WatchEvent("ADDED", "", pod, 0))

    def _on_event(self, ev: WatchEvent) -> None:
        obj, meta = ev.object, ev.object["metadata"]
        if obj.get("kind") == "Node":
            if ev.type == "DELETED" or LABEL_NODEPOOL not in (meta.get("labels") or {}):
                self.nodes.pop(meta["name"], None)
            else:
                self.nodes[meta["name"]] = obj
            return
        key = (meta.get("namespace") or "default", meta["name"])
        if ev.type == "DELETED":
            self.pods.pop(key, None)
        else:
            self.pods[key] = obj

    def pod_list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return [p for k, p in sorted(self.pods.items()) if namespace is None or k[0] == namespace]

    def node_list(self, pool: str | None = None) -> list[dict[str, Any]]:
        return [n for name, n in sorted(self.nodes.items())
                if pool is None or n["metadata"]["labels"].get(LABEL_NODEPOOL) == pool]

    def close(self) -> None:
        self._sub.cancel()


_CACHES: weakref.WeakKeyDictionary[Store, GkeCache] = weakref.WeakKeyDictionary()


def cache_for(store: Store) -> GkeCache:
    """The cluster's shared cache (created on first use)."""
    cache = _CACHES.get(store)
    if cache is None:
        cache = _CACHES[store] = GkeCache(store)
    return cache
