"""The kube controllers' shared informer cache: Nodes and Pods indexed the ways they are asked for.

Owns: ``ClusterCache``, fed by one store watch (subscribed before the controllers' own watches, so a
mapper already sees the event applied): the scheduler's ``NodeInfo`` per node, the resources requested
on each node by the pods bound to it that are not terminal (what NodeResourcesFit subtracts), bound pods
per node (for the kubelet when a node disappears), and pod names per controlling owner (for the Job
controller). It keeps references to the store's stored objects and never mutates them. Each change
costs O(1) work, so no reconcile has to list all pods. ``node_changed`` / ``freed`` (resourceVersion,
node) tell a mapper whether an event changed what fits on which node. Must not import domain packages.
"""

from __future__ import annotations

from collections import Counter

from flexq.semantics.nodefit import NodeInfo, SliceKey, node_info, pod_requests, replica_of, slice_key
from flexq.semantics.owners import controller_owner
from flexq.semantics.pods import is_terminal
from flexq.store.store import Store, Subscription, WatchEvent

PodKey = tuple[str, str]
OwnerKey = tuple[str, str, str]  # (namespace, owner kind, owner name)


def pod_key(pod: dict) -> PodKey:
    m = pod["metadata"]
    return (m.get("namespace") or "default", m["name"])


class ClusterCache:
    """Indexes over one cluster's Nodes and Pods, kept current by a watch."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.nodes: dict[str, NodeInfo] = {}
        self.pods: dict[PodKey, dict] = {}
        self.used: dict[str, Counter[str]] = {}
        self.pod_counts: Counter[str] = Counter()
        self.node_pods: dict[str, set[PodKey]] = {}
        self.owned: dict[OwnerKey, set[str]] = {}
        self._accounted: dict[PodKey, tuple[str, dict[str, int]]] = {}
        # (namespace, replica name) -> its bound, non-terminal TPU hosts -> their node (``replica_of``)
        self.replica_hosts: dict[tuple[str, str], dict[PodKey, str]] = {}
        self._replica: dict[PodKey, tuple[str, str]] = {}
        # (rv, node) of the last event that changed a NodeInfo / released resources on a node
        self.node_changed: tuple[int, str] = (-1, "")
        self.freed: tuple[int, str] = (-1, "")
        # (rv, (namespace, replica)) of the last event that bound the first host of a multi-host replica
        self.replica_bound: tuple[int, tuple[str, str]] = (-1, ("", ""))
        # moves whenever anything a scheduling decision reads changes: a node (added, changed, gone), or the
        # requests and pod counts on a node
        self.version = 0
        self._sub: Subscription | None = None
        self._sub = store.watch(self._on_event, ["Node", "Pod"])
        for node in store.list("Node"):
            self._on_event(WatchEvent("ADDED", store.info("Node").key, node, 0))
        for pod in store.list("Pod"):
            self._on_event(WatchEvent("ADDED", store.info("Pod").key, pod, 0))

    def close(self) -> None:
        if self._sub is not None:
            self._sub.cancel()
            self._sub = None

    # -- queries ----------------------------------------------------------------------------------
    def pods_on(self, node: str) -> list[PodKey]:
        return sorted(self.node_pods.get(node, ()))

    def replica_slices(self, namespace: str, replica: str) -> set[SliceKey]:
        """The slices the bound hosts of a multi-host replica are on."""
        out = set()
        for node in self.replica_hosts.get((namespace, replica), {}).values():
            info = self.nodes.get(node)
            k = slice_key(info) if info is not None else None
            if k is not None:
                out.add(k)
        return out

    def owned_pods(self, namespace: str, kind: str, name: str) -> list[dict]:
        """Pods whose controller is ``kind/name`` in ``namespace``, by name."""
        names = self.owned.get((namespace, kind, name), ())
        return [self.pods[(namespace, n)] for n in sorted(names) if (namespace, n) in self.pods]

    # -- feeding ----------------------------------------------------------------------------------
    def _on_event(self, ev: WatchEvent) -> None:
        if ev.object.get("kind") == "Node":
            self._on_node(ev)
        else:
            self._on_pod(ev)

    def _on_node(self, ev: WatchEvent) -> None:
        name = ev.object["metadata"]["name"]
        if ev.type == "DELETED":
            if self.nodes.pop(name, None) is not None:  # nothing new can fit anywhere
                self.version += 1
            return
        info = node_info(ev.object)
        if self.nodes.get(name) != info:
            self.nodes[name] = info
            self.node_changed = (ev.rv, name)
            self.version += 1

    def _on_pod(self, ev: WatchEvent) -> None:
        pod = ev.object
        key = pod_key(pod)
        old = self.pods.get(key)
        if old is not None:
            self._unindex(key, old)
        if ev.type == "DELETED":
            self.pods.pop(key, None)
            self._unaccount(key, ev.rv)
            return
        self.pods[key] = pod
        self._index(key, pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not is_terminal(pod):
            if key not in self._accounted:
                requests = pod_requests(pod)
                self._account(key, node, requests)
                replica = replica_of(pod, requests)
                if replica is not None:
                    self._replica[key] = (key[0], replica)
                    hosts = self.replica_hosts.setdefault((key[0], replica), {})
                    if not hosts:  # the replica's first host: where the others must go is now known
                        self.replica_bound = (ev.rv, (key[0], replica))
                    hosts[key] = node
        else:
            self._unaccount(key, ev.rv)

    def _index(self, key: PodKey, pod: dict) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self.node_pods.setdefault(node, set()).add(key)
        ref = controller_owner(pod)
        if ref is not None:
            self.owned.setdefault((key[0], ref.get("kind", ""), ref.get("name", "")), set()).add(key[1])

    def _unindex(self, key: PodKey, pod: dict) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and node in self.node_pods:
            self.node_pods[node].discard(key)
            if not self.node_pods[node]:
                del self.node_pods[node]
        ref = controller_owner(pod)
        if ref is not None:
            okey = (key[0], ref.get("kind", ""), ref.get("name", ""))
            names = self.owned.get(okey)
            if names is not None:
                names.discard(key[1])
                if not names:
                    del self.owned[okey]

    def _account(self, key: PodKey, node: str, requests: dict[str, int]) -> None:
        self.version += 1
        self._accounted[key] = (node, requests)
        self.used.setdefault(node, Counter()).update(requests)
        self.pod_counts[node] += 1

    def _unaccount(self, key: PodKey, rv: int) -> None:
        entry = self._accounted.pop(key, None)
        if entry is None:
            return
        node, requests = entry
        replica = self._replica.pop(key, None)
        if replica is not None:
            hosts = self.replica_hosts.get(replica)
            if hosts is not None:
                hosts.pop(key, None)
                if not hosts:
                    del self.replica_hosts[replica]
        self.version += 1
        self.freed = (rv, node)
        used = self.used.get(node)
        if used is not None:
            used.subtract(requests)
        self.pod_counts[node] -= 1
        if self.pod_counts[node] <= 0:
            del self.pod_counts[node]
            self.used.pop(node, None)
