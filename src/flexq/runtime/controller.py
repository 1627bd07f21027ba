"""How a controller is written.

A controller is level-triggered and idempotent: ``reconcile(key)`` reads the current state from the
store, moves it one step toward the desired state, and returns a ``Result`` (``requeue_after`` seconds
to be called again; never sleep or poll). Watches map store events to keys. Spec/metadata and status
are written by separate calls; each status field has one writer (named in the controller's docstring).

Example::

    class LocalQueueCounter(Controller):
        name = "localqueue-counter"

        def watches(self) -> list[Watch]:
            return [Watch("LocalQueue"), Watch("Workload", lambda ev: [(ev.object["metadata"]["namespace"],
                                                                        ev.object["spec"]["queueName"])])]

        def reconcile(self, key: Key) -> Result | None:
            ns, name = key
            lq = self.ctx.store.try_get("LocalQueue", name, ns)
            ...

Must not import domain packages or ``flexq.http``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from random import Random
from typing import Any

from flexq.api.jsoncopy import evolve
from flexq.api.registry import KindInfo
from flexq.clock import format_time
from flexq.errors import AlreadyExists, Conflict, NotFound
from flexq.loop.core import EventLoop
from flexq.loop.rng import Rngs
from flexq.runtime.executor import PodExecutor
from flexq.runtime.settings import ClusterSettings, TwinSettings
from flexq.store.logs import PodLogs
from flexq.store.store import Store, WatchEvent

Key = Hashable
Mapper = Callable[[WatchEvent], Iterable[Key]]


def object_key(ev: WatchEvent) -> Iterable[Key]:
    """The default mapper: (namespace, name) of the changed object."""
    m = ev.object["metadata"]
    return [(m.get("namespace", ""), m["name"])]


@dataclass
class Watch:
    """Reconcile the keys ``mapper`` returns whenever an object of ``kind`` changes.

    ``source`` is ``"cluster"`` (this cluster's store) or ``"project"`` (the twin's GKE project store).
    ``predicate`` (``flexq.runtime.predicates``, as controller-runtime's ``builder.WithPredicates``): an event
    it refuses is dropped before the mapper runs, so it enqueues nothing.
    """

    kind: str
    mapper: Mapper = object_key
    source: str = "cluster"
    delay: float = 0.0  # seconds an event's keys wait before they are queued (client-go's AddAfter batching)
    predicate: Callable[[WatchEvent], bool] | None = None

    def keys(self, ev: WatchEvent) -> list[Key]:
        """The keys ``ev`` enqueues through this watch (none if the predicate refuses it)."""
        if self.predicate is not None and not self.predicate(ev):
            return []
        return list(self.mapper(ev) or ())


@dataclass
class Result:
    """What a reconcile asks for next: nothing, or another call after ``requeue_after`` seconds."""

    requeue_after: float | None = None


def _dedup_key(ns: str, obj: Any, component: Any, type_: Any, reason: Any, message: Any) -> tuple[Any, ...]:
    return (ns, obj, component, type_, reason, message)


def event_dedup_key(ev: dict[str, Any]) -> tuple[Any, ...]:
    """The key under which the recorders' shared index (``Context.event_index``) holds a written Event."""
    inv = ev.get("involvedObject") or {}
    return _dedup_key(
        ev["metadata"].get("namespace") or "default",
        inv.get("uid") or inv.get("name"),
        (ev.get("source") or {}).get("component"),
        ev.get("type"),
        ev.get("reason"),
        ev.get("message"),
    )


MAX_LRU_CACHE_ENTRIES = 4096  # client-go's record.maxLruCacheEntries
MAX_NAME_LENGTH = 253  # a DNS-1123 subdomain, what an Event's name must be


class EventIndex(OrderedDict):
    """The recorders' dedup cache: dedup key -> the name of the Event written for it, at most ``size`` entries,
    the least recently used going first, as client-go's ``EventCorrelator`` keeps its ``eventLogger`` in an LRU
    of 4,096 entries (a repeated event whose entry went is written as a new Event, with count 1). Without the
    bound, a long run's index held one entry per distinct event ever recorded."""

    def __init__(self, size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        super().__init__()
        self.size = size

    def get(self, key: Any, default: Any = None) -> Any:
        value = super().get(key, default)
        if value is not default:
            self.move_to_end(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        if len(self) > self.size:
            self.popitem(last=False)


class EventRecorder:
    """Writes core/v1 Events like client-go's recorder: the same reason and message from the same component
    about one object bumps ``count`` and ``lastTimestamp`` of the event already written (found through an
    index shared by every recorder of the cluster, an LRU as client-go's: ``EventIndex``, so recording is
    O(1)); names never collide because their sequence number is store-wide. ``reasons``: record only Events
    with these reasons (``TwinSettings.event_reasons``; None: every one)."""

    def __init__(
        self,
        store: Store,
        component: str,
        index: dict[tuple, str] | None = None,
        reasons: frozenset[str] | None = None,
    ) -> None:
        self.store, self.component, self.reasons = store, component, reasons
        self.index: dict[tuple, str] = index if index is not None else EventIndex()
        try:  # resolved once: every Event is built here
            self._info: KindInfo | None = store.registry.by_gvk("v1", "Event")
        except NotFound:  # a store without Events: recording is a no-op, as a refused create was before
            self._info = None

    def record(self, obj: dict, type_: str, reason: str, message: str) -> None:
        if self.reasons is not None and reason not in self.reasons:
            return  # nothing reads it (a simulation's twin)
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        now_s = self.store.clock.now()
        now = format_time(now_s)
        key = _dedup_key(ns, meta.get("uid") or meta["name"], self.component, type_, reason, message)
        try:
            name = self.index.get(key)
            cur = self.store.peek("Event", name, ns) if name else None
            if cur is not None:  # the next version shares all but its top level with the stored one
                ev = evolve(cur, ("count",), cur.get("count", 1) + 1)
                ev["lastTimestamp"] = now
                self.store.update(ev)
                return
            name = f"{meta['name']}.{int(now_s * 1000):x}{self.store.next_seq():06x}"
            if len(name) > MAX_NAME_LENGTH:  # the API server refuses the Event (its name is too long, as
                return  # client-go's ``<name>.<nanoseconds>`` of a long name is): the recorder drops it
            self.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": name, "namespace": ns},
                    "involvedObject": {
                        "kind": obj.get("kind"),
                        "namespace": meta.get("namespace"),
                        "name": meta["name"],
                        "uid": meta.get("uid"),
                        "apiVersion": obj.get("apiVersion"),
                        "resourceVersion": meta.get("resourceVersion"),
                    },
                    "reason": reason,
                    "message": message,
                    "type": type_,
                    "count": 1,
                    "firstTimestamp": now,
                    "lastTimestamp": now,
                    "source": {"component": self.component},
                    "reportingComponent": self.component,
                },
                take=True,
                kind_info=self._info,
            )
            self.index[key] = name
        except (NotFound, AlreadyExists, Conflict):
            pass  # the namespace is going away, or a race: events are best effort, as in Kubernetes


@dataclass
class Context:
    """What every controller of one cluster gets."""

    store: Store  # this cluster's objects
    loop: EventLoop
    rngs: Rngs
    logs: PodLogs
    cluster: str = ""  # GKE cluster name ("" for a twin without GKE)
    project: Store | None = None  # the twin's project-level store (GKE clusters, node pools, operations)
    executors: list[PodExecutor] = field(
        default_factory=list
    )  # this cluster's pod executors, first match runs
    settings: TwinSettings = field(default_factory=TwinSettings)  # twin-wide knobs (shared by every cluster)
    cluster_settings: ClusterSettings = field(
        default_factory=ClusterSettings
    )  # this cluster's GKE identity, addons
    event_index: dict[tuple, str] = field(default_factory=EventIndex)  # shared by this cluster's recorders
    metrics: Any = (
        None  # this cluster's prometheus_client CollectorRegistry (the assembly makes one per cluster)
    )
    # derived reads a domain keeps for this cluster, under keys of its own (e.g. gke's node pools per version of
    # the project store): they live and go with the cluster, never in a process-wide table
    memo: dict[Hashable, Any] = field(default_factory=dict)

    def now(self) -> float:
        return self.loop.now()

    def rng(self, name: str) -> Random:
        return self.rngs.get(f"{self.cluster}/{name}")

    def recorder(self, component: str) -> EventRecorder:
        return EventRecorder(self.store, component, self.event_index, self.settings.event_reasons)


class Controller:
    """Base class: subclasses set ``name``, implement ``watches`` and ``reconcile``."""

    name = "controller"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.events = ctx.recorder(self.name)
        self.enqueue: Callable[[Key], None] = lambda key: None  # set by the manager
        self.enqueue_after: Callable[[Key, float], None] = lambda key, delay: None

    def watches(self) -> list[Watch]:
        """Which store changes wake which keys."""
        return []

    def start(self) -> None:
        """Called once after wiring (e.g. to enqueue every existing object on a restart)."""

    def reconcile(self, key: Any) -> Result | None:
        """Move ``key`` one step toward its desired state."""
        raise NotImplementedError

    def stop(self) -> None:
        """Called when the twin shuts down."""
