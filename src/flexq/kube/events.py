"""Event recording for the kube controllers, in O(1) per event.

Owns ``KubeEvents``: one per cluster, shared by the scheduler, kubelet and Job controller. It writes
core/v1 Events exactly as ``flexq.runtime.EventRecorder`` does (same reason + message + source on one
object -> ``count`` + 1 and a new ``lastTimestamp``, as client-go's correlator), but finds the event to
bump through an index instead of listing every Event of the namespace, and draws event-name sequence
numbers from one shared counter, so two components writing about one object in the same millisecond
never collide. (Both are candidates for ``flexq.runtime`` itself.) Must not import other domains.
"""

from __future__ import annotations

from flexq.clock import format_time
from flexq.errors import AlreadyExists, Conflict, NotFound
from flexq.runtime import EventRecorder
from flexq.store import Store

_SEQ_BASE = 1 << 16  # above the per-recorder sequence numbers of the runtime's recorders


class KubeEvents:
    """The index and sequence shared by this cluster's kube recorders."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.index: dict[tuple, str] = {}
        self.seq = _SEQ_BASE

    def recorder(self, component: str) -> EventRecorder:
        return _Recorder(self, component)


class _Recorder(EventRecorder):
    def __init__(self, shared: KubeEvents, component: str) -> None:
        super().__init__(shared.store, component)
        self.shared = shared

    def record(self, obj: dict, type_: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        now_s = self.store.clock.now()
        now = format_time(now_s)
        key = (ns, meta.get("uid") or meta["name"], self.component, type_, reason, message)
        try:
            name = self.shared.index.get(key)
            ev = self.store.try_get("Event", name, ns) if name else None
            if ev is not None:
                ev["count"] = ev.get("count", 1) + 1
                ev["lastTimestamp"] = now
                self.store.update(ev, validate=False)
                return
            self.shared.seq += 1
            name = f"{meta['name']}.{int(now_s * 1000):x}{self.shared.seq:04x}"
            self.store.create({
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
                "involvedObject": {"kind": obj.get("kind"), "namespace": meta.get("namespace"), "name": meta["name"],
                                   "uid": meta.get("uid"), "apiVersion": obj.get("apiVersion"),
                                   "resourceVersion": meta.get("resourceVersion")},
                "reason": reason, "message": message, "type": type_, "count": 1,
                "firstTimestamp": now, "lastTimestamp": now,
                "source": {"component": self.component}, "reportingComponent": self.component,
            }, validate=False)
            self.shared.index[key] = name
        except (NotFound, AlreadyExists, Conflict):
            pass  # the namespace is going away, or a race: events are best effort, as in Kubernetes
