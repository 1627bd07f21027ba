"""The seam between the fallback policy and a cluster: ``ClusterAPI``, and its implementation over a twin's store.

The policy reads Kueue's objects, pods, the autoscaler's events and ProvisioningRequests, and writes a workload's
``spec.active``, a job's pod templates and annotations, Events, its state ConfigMap, and deletes evicted
Workloads. ``StoreAPI`` serves that from a flexq store (inside the twin, through the store's indexes, never a
scan of every stored object); ``flexq.fallback.kubeapi.KubernetesAPI`` serves it from a real API server.
"""

from __future__ import annotations

import builtins
import contextlib
from typing import Protocol

from flexq.api.jsoncopy import clone
from flexq.api.scheme import ADMIT
from flexq.api.wellknown import GKE_CLUSTER_LABEL, GKE_NODE_POOL_KIND
from flexq.errors import NotFound
from flexq.runtime import EventRecorder
from flexq.semantics.pods import is_terminal
from flexq.store import Store, WatchEvent

CAPACITY_EVENT_REASONS = ("FailedScaleUp", "NotTriggerScaleUp")


class ClusterAPI(Protocol):
    """What the fallback policy reads and writes."""

    def now(self) -> float:
        """Seconds since the epoch (the twin's clock, or the wall clock)."""

    def list(self, kind: str, namespace: str | None = None) -> list[dict]:
        """Objects of ``kind`` (Workload, LocalQueue, ClusterQueue, ResourceFlavor, Pod, ProvisioningRequest)."""

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """One object, or None."""

    def capacity_events(self, namespace: str) -> builtins.list[dict]:
        """The cluster autoscaler's FailedScaleUp / NotTriggerScaleUp events in ``namespace``."""

    def replace(self, obj: dict) -> dict:
        """PUT ``obj`` (with its resourceVersion: a concurrent change fails with Conflict)."""

    def create(self, obj: dict) -> dict:
        """POST ``obj`` (AlreadyExists when it exists)."""

    def merge_patch(self, kind: str, name: str, namespace: str | None, patch: dict) -> dict:
        """A JSON merge patch."""

    def delete(self, kind: str, name: str, namespace: str | None) -> None:
        """Delete (NotFound is not an error)."""

    def event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        """Record an Event about ``obj``."""

    def load_state(self, namespace: str, name: str) -> dict[str, str]:
        """The data of the state ConfigMap (empty when it does not exist)."""

    def save_state(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """Create or update the state ConfigMap."""

    def node_pools(self) -> builtins.list[dict]:
        """The cluster's node pools as the GKE API lists them (``nodePools.list``), when they can be read; [] when
        not (the forecast then infers them from what Kubernetes shows)."""


class StoreAPI:
    """``ClusterAPI`` over a twin's store. Writes go through the store's validation, as a client's would.

    The kinds that pile up over a long run — Workloads (finished ones stay), Pods, Events — are read from caches
    a watch keeps: unfinished Workloads, pods not yet terminal, and the capacity events of live pods, so a
    policy pass costs what is in flight, not what was ever stored."""

    def __init__(
        self, store: Store, recorder: EventRecorder, project: Store | None = None, cluster: str = ""
    ) -> None:
        self.store, self.recorder = store, recorder
        self.project, self.cluster = project, cluster  # the twin's GKE API objects, and this cluster's name
        self._workloads: dict[tuple[str, str], dict] = {}
        self._pods: dict[tuple[str, str], dict] = {}
        self._events: dict[str, dict[str, dict]] = {}  # namespace -> event name -> event
        self._events_of_pod: dict[str, set[tuple[str, str]]] = {}  # pod uid -> (namespace, event name)
        for kind in ("Workload", "Pod", "Event"):
            for obj in self.list_stored(kind):
                self._observe(kind, obj, deleted=False)
        self._sub = store.watch(self._on_event, ["Workload", "Pod", "Event"])

    def close(self) -> None:
        self._sub.cancel()

    def _on_event(self, ev: WatchEvent) -> None:
        self._observe(ev.object.get("kind") or ev.kind, ev.object, deleted=ev.type == "DELETED")

    def _observe(self, kind: str, obj: dict, *, deleted: bool) -> None:
        md = obj["metadata"]
        key = (md.get("namespace") or "", md["name"])
        if kind == "Workload":
            finished = any(
                c.get("type") == "Finished" and c.get("status") == "True"
                for c in (obj.get("status") or {}).get("conditions") or []
            )
            if deleted or finished:
                self._workloads.pop(key, None)
            else:
                self._workloads[key] = obj
        elif kind == "Pod":
            if deleted or is_terminal(obj):
                self._pods.pop(key, None)
                for ns, name in self._events_of_pod.pop(md.get("uid") or "", ()):
                    self._events.get(ns, {}).pop(name, None)
            else:
                self._pods[key] = obj
        elif kind == "Event" and obj.get("reason") in CAPACITY_EVENT_REASONS:
            involved = obj.get("involvedObject") or {}
            pod = self._pods.get((involved.get("namespace") or "", involved.get("name") or ""))
            if deleted:
                self._events.get(key[0], {}).pop(key[1], None)
            elif pod is not None and pod["metadata"].get("uid") == involved.get("uid"):
                self._events.setdefault(key[0], {})[key[1]] = obj
                self._events_of_pod.setdefault(involved.get("uid") or "", set()).add(key)

    def now(self) -> float:
        return self.store.clock.now()

    def list_stored(self, kind: str, namespace: str | None = None) -> list[dict]:
        try:
            return self.store.peek_list(kind, namespace)
        except NotFound:  # a kind this cluster does not serve
            return []

    def list(self, kind: str, namespace: str | None = None) -> list[dict]:
        cache = {"Workload": self._workloads, "Pod": self._pods}.get(kind)
        if cache is None:
            return self.list_stored(kind, namespace)
        return [o for (ns, _), o in cache.items() if namespace is None or ns == namespace]

    def capacity_events(self, namespace: str) -> builtins.list[dict]:
        return list(self._events.get(namespace, {}).values())

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.store.peek(kind, name, namespace)
        except NotFound:
            return None

    def replace(self, obj: dict) -> dict:
        return clone(self.store.update(obj, admission=ADMIT))  # a client's own copy

    def create(self, obj: dict) -> dict:
        return clone(self.store.create(obj, admission=ADMIT))

    def merge_patch(self, kind: str, name: str, namespace: str | None, patch: dict) -> dict:
        return self.store.patch(kind, name, patch, namespace, patch_type="merge", admission=ADMIT)

    def delete(self, kind: str, name: str, namespace: str | None) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete(kind, name, namespace)

    def event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        self.recorder.record(obj, type_, reason, message)

    def node_pools(self) -> builtins.list[dict]:
        if self.project is None or not self.cluster:
            return []
        try:
            pools = self.project.peek_list(GKE_NODE_POOL_KIND)
        except NotFound:
            return []
        return [
            clone(p.get("spec") or {})
            for p in pools
            if (p["metadata"].get("labels") or {}).get(GKE_CLUSTER_LABEL) == self.cluster
        ]

    def load_state(self, namespace: str, name: str) -> dict[str, str]:
        cm = self.get("ConfigMap", name, namespace)
        return dict((cm or {}).get("data") or {})

    def save_state(self, namespace: str, name: str, data: dict[str, str]) -> None:
        cm = self.store.try_get("ConfigMap", name, namespace)
        if cm is None:
            self.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "labels": {"app.kubernetes.io/managed-by": "flexq-fallback"},
                    },
                    "data": data,
                },
                admission=ADMIT,
            )
        elif cm.get("data") != data:
            cm["data"] = data
            self.store.update(cm, admission=ADMIT)


__all__ = ["CAPACITY_EVENT_REASONS", "ClusterAPI", "StoreAPI"]
