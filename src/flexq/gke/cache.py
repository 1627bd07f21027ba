"""The GKE controllers' informer cache: one cluster's GKE Nodes and its Pods, kept current by a store watch.

Owns: ``GkeCache`` (references to the store's stored objects, never mutated: callers clone before changing
one). The package's registry makes one per cluster and hands it to every GKE controller of that cluster, so
no reconcile has to copy every pod and node of the cluster out of the store. Made when the package's
controllers are built, before their own watches, so a reconcile always sees the event that woke it.
Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

from typing import Any

from flexq.api.gke_catalog import LABEL_NODEPOOL
from flexq.api.wellknown import CONSUME_PROVISIONING_REQUEST
from flexq.gke.fit import Resources, pod_requests
from flexq.semantics.pods import is_terminal
from flexq.store.store import Store, WatchEvent

CONSUME_KEY = CONSUME_PROVISIONING_REQUEST
ANN_REQUEST = "gke.twin.flexq.dev/provisioning-request"  # node -> "<namespace>/<name>" of its request

__all__ = ["GkeCache"]


class GkeCache:
    """Pods by (namespace, name); GKE nodes (those with a node pool label) by name; and, kept per event in
    O(1), what the autoscaler asks every time: the unschedulable pods, the requests of the live pods bound
    to each node (``used``: values are never changed in place), and how many bound pods consume each
    ProvisioningRequest."""

    def __init__(self, store: Store) -> None:
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.unschedulable: dict[tuple[str, str], dict[str, Any]] = {}
        self._pending_req: dict[tuple[str, str], tuple[dict[str, Any], Resources]] = {}
        self.used: dict[str, Resources] = {}
        self._live: dict[str, int] = {}  # node -> live pods bound to it
        self._acct: dict[tuple[str, str], tuple[str, Resources]] = {}
        self.consumers: dict[tuple[str, str], int] = {}  # (namespace, request) -> bound consuming pods
        self._consuming: dict[tuple[str, str], tuple[str, str]] = {}
        self.node_version = 0  # changes with every Node event (for layouts derived from the nodes)
        self.used_version = 0  # changes whenever ``used`` does
        self.pool_sizes: dict[str, int] = {}  # node pool -> its nodes
        self._by_request: dict[str, dict[str, dict[str, Any]]] = {}  # "<ns>/<request>" -> its nodes by name
        self.internal_ips: dict[str, int] = {}  # the nodes' InternalIP addresses -> how many nodes have each
        self._node_list: list[dict[str, Any]] | None = None  # every node, by name (until the next Node event)
        self._sub = store.watch(self._on_event, ["Node", "Pod"])
        for node in store.list("Node"):
            self._on_event(WatchEvent("ADDED", "", node, 0))
        for pod in store.list("Pod"):
            self._on_event(WatchEvent("ADDED", "", pod, 0))

    def _on_event(self, ev: WatchEvent) -> None:
        obj, meta = ev.object, ev.object["metadata"]
        if obj.get("kind") == "Node":
            self.node_version += 1
            self._node_list = None
            name = meta["name"]
            old = self.nodes.get(name)
            if old is not None:
                self._unindex_node(name, old)
            if ev.type == "DELETED" or LABEL_NODEPOOL not in (meta.get("labels") or {}):
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = obj
                self._index_node(name, obj)
            return
        key = (meta.get("namespace") or "default", meta["name"])
        if ev.type == "DELETED":
            self.pods.pop(key, None)
            self.unschedulable.pop(key, None)
            self._pending_req.pop(key, None)
            self._unaccount(key)
            self._unconsume(key)
            return
        self.pods[key] = obj
        node = (obj.get("spec") or {}).get("nodeName")
        if _unschedulable(obj):
            self.unschedulable[key] = obj
        else:
            self.unschedulable.pop(key, None)
            self._pending_req.pop(key, None)
        if node and not is_terminal(obj):
            if key not in self._acct:
                req = pod_requests(obj)
                self._acct[key] = (node, req)
                self._live[node] = self._live.get(node, 0) + 1
                cur = self.used.get(node, {})
                self.used[node] = {**cur, **{k: cur.get(k, 0) + v for k, v in req.items()}}
                self.used_version += 1
        else:
            self._unaccount(key)
        consumed = (meta.get("annotations") or {}).get(CONSUME_KEY)
        if node and consumed:
            if key not in self._consuming:
                ck = (key[0], consumed)
                self._consuming[key] = ck
                self.consumers[ck] = self.consumers.get(ck, 0) + 1
        else:
            self._unconsume(key)

    def _count_ips(self, node: dict[str, Any], by: int) -> None:
        ips = self.internal_ips
        for a in (node.get("status") or {}).get("addresses") or []:
            if a.get("type") == "InternalIP":
                n = ips[a.get("address")] = ips.get(a.get("address"), 0) + by
                if not n:
                    del ips[a.get("address")]

    def _index_node(self, name: str, node: dict[str, Any]) -> None:
        meta = node["metadata"]
        self._count_ips(node, 1)
        pool = meta["labels"][LABEL_NODEPOOL]
        self.pool_sizes[pool] = self.pool_sizes.get(pool, 0) + 1
        ref = (meta.get("annotations") or {}).get(ANN_REQUEST)
        if ref:
            self._by_request.setdefault(ref, {})[name] = node

    def _unindex_node(self, name: str, node: dict[str, Any]) -> None:
        meta = node["metadata"]
        self._count_ips(node, -1)
        pool = meta["labels"][LABEL_NODEPOOL]
        self.pool_sizes[pool] -= 1
        if not self.pool_sizes[pool]:
            del self.pool_sizes[pool]
        ref = (meta.get("annotations") or {}).get(ANN_REQUEST)
        if ref:
            mine = self._by_request.get(ref)
            if mine is not None:
                mine.pop(name, None)
                if not mine:
                    del self._by_request[ref]

    def request_nodes(self, ref: str) -> list[dict[str, Any]]:
        """The nodes annotated for the ProvisioningRequest ``ref`` ("<namespace>/<name>"), by name."""
        mine = self._by_request.get(ref)
        return [n for _, n in sorted(mine.items())] if mine else []

    def _unaccount(self, key: tuple[str, str]) -> None:
        entry = self._acct.pop(key, None)
        if entry is None:
            return
        node, req = entry
        self.used_version += 1
        self._live[node] -= 1
        if not self._live[node]:
            del self._live[node]
            del self.used[node]
        else:
            cur = self.used[node]
            self.used[node] = {**cur, **{k: cur[k] - v for k, v in req.items()}}

    def _unconsume(self, key: tuple[str, str]) -> None:
        ck = self._consuming.pop(key, None)
        if ck is not None:
            self.consumers[ck] -= 1
            if not self.consumers[ck]:
                del self.consumers[ck]

    def requests_of(self, pod: dict[str, Any]) -> Resources:
        """``pod_requests`` of an unschedulable pod, computed once per version of it."""
        key = (pod["metadata"].get("namespace") or "default", pod["metadata"]["name"])
        hit = self._pending_req.get(key)
        if hit is not None and hit[0] is pod:
            return hit[1]
        req = pod_requests(pod)
        if key in self.unschedulable:
            self._pending_req[key] = (pod, req)
        return req

    def busy_nodes(self) -> set[str]:
        """Nodes with a live (bound, not terminal) pod."""
        return set(self._live)

    def pending(self) -> list[dict[str, Any]]:
        """Pods the scheduler could not place, oldest first (the autoscaler's input)."""
        return sorted(
            self.unschedulable.values(),
            key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]),
        )

    def pod_list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return [p for k, p in sorted(self.pods.items()) if namespace is None or k[0] == namespace]

    def node_list(self, pool: str | None = None) -> list[dict[str, Any]]:
        """The nodes (of one pool), by name; a new list (the sorted order is kept until a Node event)."""
        if self._node_list is None:
            self._node_list = [n for _, n in sorted(self.nodes.items())]
        if pool is None:
            return list(self._node_list)
        return [n for n in self._node_list if n["metadata"]["labels"].get(LABEL_NODEPOOL) == pool]

    def close(self) -> None:
        self._sub.cancel()


def _unschedulable(p: dict[str, Any]) -> bool:
    if (p.get("spec") or {}).get("nodeName") or is_terminal(p) or p["metadata"].get("deletionTimestamp"):
        return False
    for c in (p.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return c.get("status") == "False" and c.get("reason") == "Unschedulable"
    return False
