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
    # an event this calls unchanged (nothing its reconcile reads moved) still queues its keys, which keep their
    # place in the loop, but a key queued by such events alone is not reconciled when its turn comes: a
    # predicate that refuses the event outright would move the controller's later work of that instant earlier
    # in the loop, and with it the order of that instant's writes (same writes, Events named in another order)
    unchanged: Callable[[WatchEvent], bool] | None = None

    def keys(self, ev: WatchEvent) -> list[Key]:
        """The keys ``ev`` enqueues through this watch (none if the predicate refuses it)."""
        if self.predicate is not None and not self.predicate(ev):
            return []
        return list(self.mapper(ev) or ())


@dataclass
class Result:
    """What a reconcile asks for next: nothing, or another call after ``requeue_after`` seconds."""

    requeue_after: float | None = None


COMBINED = "(combined from similar events): "  # client-go's EventAggregatorByReasonMessageFunc
_AGGREGATE = object()  # the message part of an aggregated event's dedup key (its message changes)


def _dedup_key(ns: str, obj: Any, component: Any, type_: Any, reason: Any, message: Any) -> tuple[Any, ...]:
    return (ns, obj, component, type_, reason, message)


def event_dedup_key(ev: dict[str, Any]) -> tuple[Any, ...]:
    """The key under which the recorders' shared index (``Context.event_index``) holds a written Event."""
    inv = ev.get("involvedObject") or {}
    message = ev.get("message")
    return _dedup_key(
        ev["metadata"].get("namespace") or "default",
        inv.get("uid") or inv.get("name"),
        (ev.get("source") or {}).get("component"),
        ev.get("type"),
        ev.get("reason"),
        _AGGREGATE if isinstance(message, str) and message.startswith(COMBINED) else message,
    )


MAX_LRU_CACHE_ENTRIES = 4096  # client-go's record.maxLruCacheEntries
MAX_NAME_LENGTH = 253  # a DNS-1123 subdomain, what an Event's name must be
AGGREGATE_MAX_EVENTS = 10  # client-go's defaultAggregateMaxEvents: similar events in ...
AGGREGATE_INTERVAL = 600.0  # ... defaultAggregateIntervalInSeconds are combined into one
SPAM_BURST = 25  # client-go's defaultSpamBurst: events a source may record about one object at once ...
SPAM_QPS = 1.0 / 300  # ... and defaultSpamQPS: one more every five minutes


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


class _Lru(OrderedDict):
    """An LRU of at most ``size`` entries (client-go's ``lru.Cache``): a get or a set makes an entry the newest."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def take(self, key: Any) -> Any:
        """The entry of ``key`` (None if there is none), made the newest."""
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def add(self, key: Any, value: Any) -> None:
        """A new entry (``key`` not held), the oldest dropped past ``size``."""
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)


class EventCorrelator:
    """client-go's ``EventCorrelator`` (``tools/record/events_cache.go``) for the recorders of one cluster, each
    step keyed by the recording component as upstream's are:

    - aggregation: events about one object with the same component, type and reason but different messages
      are "similar"; from the ``AGGREGATE_MAX_EVENTS``-th distinct message within ``AGGREGATE_INTERVAL`` s of
      the last one, they are written as one Event, ``(combined from similar events): <latest message>``,
      counted up as one (a ReplicaSet's "Created pod: <name>" per pod is a handful of Events, not one per pod);
    - observation: a repeat of an Event already written bumps its ``count``, ``lastTimestamp`` and message
      (``EventRecorder``, through ``Context.event_index``); ``observed`` counts every occurrence, written or not;
    - the spam filter: a token bucket per component and object, ``SPAM_BURST`` events at once and one more
      every five minutes; an event beyond it is counted but not written (a Deployment scaled 0<->300 in a loop
      writes tens of Events, not hundreds of thousands).

    Each table is an LRU of ``MAX_LRU_CACHE_ENTRIES`` entries, as upstream's; times are the store's clock.
    Where upstream drops an arbitrary message from a full aggregation record (Go's map order), the oldest goes,
    so that a run is reproducible."""

    def __init__(self, size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self.aggregates = _Lru(size)  # aggregate key -> [messages (insertion-ordered), last time]
        self.buckets = _Lru(size)  # spam key -> [tokens, last time]
        self.observed = _Lru(size)  # dedup key -> occurrences seen

    def clear(self) -> None:
        """Forget every event seen (a discarded twin's, ``TwinCore.discard``)."""
        for table in (self.aggregates, self.buckets, self.observed):
            table.clear()

    def aggregate(self, key: tuple, message: str, now: float) -> bool:
        """Whether an event of aggregate ``key`` with ``message`` is written combined with its similar ones."""
        record = self.aggregates.take(key)
        if record is None:
            record = [{}, now]
            self.aggregates.add(key, record)
        elif now - record[1] > AGGREGATE_INTERVAL:
            record[0] = {}
        messages = record[0]
        messages[message] = None
        record[1] = now
        if len(messages) < AGGREGATE_MAX_EVENTS:
            return False
        del messages[next(iter(messages))]
        return True

    def observe(self, key: tuple) -> int:
        """One more occurrence of the event ``key``: how many have been seen (while it is remembered)."""
        count = self.observed.take(key)
        if count is None:
            self.observed.add(key, 1)
            return 1
        self.observed[key] = count + 1
        return count + 1

    def allow(self, key: tuple, now: float) -> bool:
        """The spam filter: whether the bucket of ``key`` (a component and an object) has a token left."""
        bucket = self.buckets.take(key)
        if bucket is None:
            bucket = [float(SPAM_BURST), now]
            self.buckets.add(key, bucket)
        tokens = min(float(SPAM_BURST), bucket[0] + (now - bucket[1]) * SPAM_QPS)
        allowed = tokens >= 1.0
        bucket[0], bucket[1] = (tokens - 1.0 if allowed else tokens), now
        return allowed

    def forget(self, key: tuple) -> None:
        """An Event of ``key`` expired: a repeat is a new Event, counted from one."""
        self.observed.pop(key, None)


class EventRecorder:
    """Writes core/v1 Events like client-go's recorder, through the cluster's ``EventCorrelator``: similar
    events are aggregated, spam is dropped, and the same reason and message from the same component about one
    object bumps ``count`` and ``lastTimestamp`` of the event already written (found through an index shared
    by every recorder of the cluster, an LRU as client-go's: ``EventIndex``, so recording is O(1)); names never
    collide because their sequence number is store-wide. ``reasons``: write only Events with these reasons
    (``TwinSettings.event_reasons``; None: every one) — the others are still correlated, as upstream records
    them, so the ones written are the same."""

    def __init__(
        self,
        store: Store,
        component: str,
        index: dict[tuple, str] | None = None,
        reasons: frozenset[str] | None = None,
        correlator: EventCorrelator | None = None,
    ) -> None:
        self.store, self.component, self.reasons = store, component, reasons
        self.index: dict[tuple, str] = index if index is not None else EventIndex()
        self.correlator = correlator if correlator is not None else EventCorrelator()
        try:  # resolved once: every Event is built here
            self._info: KindInfo | None = store.registry.by_gvk("v1", "Event")
        except NotFound:  # a store without Events: recording is a no-op, as a refused create was before
            self._info = None

    def record(self, obj: dict, type_: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        now_s = self.store.clock.now()
        about = meta.get("uid") or meta["name"]
        corr = self.correlator
        if corr.aggregate((ns, about, obj.get("kind"), self.component, type_, reason), message, now_s):
            message = COMBINED + message
            key = _dedup_key(ns, about, self.component, type_, reason, _AGGREGATE)
        else:
            key = _dedup_key(ns, about, self.component, type_, reason, message)
        count = corr.observe(key)
        if not corr.allow((self.component, obj.get("kind"), ns, meta["name"], about), now_s):
            return  # spam: counted, not written
        if self.reasons is not None and reason not in self.reasons:
            return  # nothing reads it (a simulation's twin)
        now = format_time(now_s)
        try:
            name = self.index.get(key)
            cur = self.store.peek("Event", name, ns) if name else None
            if cur is not None:  # the next version shares all but its top level and metadata with the stored
                ev = evolve(cur, ("count",), max(count, cur.get("count", 1) + 1))  # one
                ev["metadata"] = dict(cur["metadata"])
                ev["lastTimestamp"] = now
                if ev.get("message") != message:  # an aggregated event carries the latest message
                    ev["message"] = message
                self.store.update(ev, take=True)  # built here, for this write: kept, not copied
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
            corr.observed.pop(key, None)
            corr.observed.add(key, 1)
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
    event_correlator: EventCorrelator = field(default_factory=EventCorrelator)  # and their correlator
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
        return EventRecorder(
            self.store, component, self.event_index, self.settings.event_reasons, self.event_correlator
        )


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
