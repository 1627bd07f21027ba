"""Watches -> work queues -> reconcilers, one reconcile per loop callback.

Owns: ``Manager`` with one de-duplicating, delaying work queue per controller (a key already queued is
not queued twice; ``requeue_after`` keeps the earliest pending timer per key), rate-limited retries when
a reconcile raises (5 ms doubling to 1000 s per key, reset on success, as client-go's default limiter),
the livelock guard (``runtime.livelock``: every reconcile is reported to the loop's guard, which the
assembly shares between the managers of one loop; a key it names on the wall clock is backed off by the same
limiter until it calms down), and a restart path: ``start()``
enqueues every existing watched object so controllers converge on whatever state a crash left.
Must not import domain packages or ``flexq.http``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable

from flexq.errors import Conflict, InvalidWrite, Livelock, NotFound
from flexq.loop.core import EventLoop, Timer
from flexq.runtime.controller import Context, Controller, Key, Result
from flexq.runtime.livelock import LivelockGuard
from flexq.runtime.metrics import ControllerMetrics
from flexq.store.store import Store, WatchEvent

log = logging.getLogger("flexq.runtime")

BASE_DELAY, MAX_DELAY = 0.005, 1000.0
RESULTS = ("success", "error", "requeue", "requeue_after")  # controller-runtime's ``result`` label values


def _direct(mapper: Callable[[WatchEvent], Iterable[Key] | None], add: Callable[[Key], None]):
    """A watch callback that queues the keys ``mapper`` gives at once (on a virtual-time loop the writer is
    always the loop's own thread: no hop through the loop's inbox is ever needed)."""

    def on_event(ev: WatchEvent) -> None:
        keys = mapper(ev)
        if keys:
            for k in keys:
                add(k)

    return on_event


def _judged(
    unchanged: Callable[[WatchEvent], bool],
    mapper: Callable[[WatchEvent], Iterable[Key] | None],
    add: Callable[[Key, bool], None],
):
    """``_direct`` for a watch with ``unchanged``: the keys are queued with the event's judgement, so that a key
    queued by unchanged events alone keeps its place in the loop but is skipped when its turn comes."""

    def on_event(ev: WatchEvent) -> None:
        keys = mapper(ev)
        if keys:
            same = unchanged(ev)
            for k in keys:
                add(k, same)

    return on_event


def _filtered(predicate: Callable[[WatchEvent], bool], mapper: Callable[[WatchEvent], Iterable[Key] | None]):
    """``mapper`` behind a watch's predicate: an event the predicate refuses maps to no key."""

    def mapped(ev: WatchEvent) -> Iterable[Key] | None:
        return mapper(ev) if predicate(ev) else None

    return mapped


def _nothing(*_: object) -> None:
    """A discarded controller's enqueue."""


class _Queue:
    """A controller's queue: FIFO of distinct keys, delayed adds, failure counts."""

    def __init__(self, manager: Manager, controller: Controller) -> None:
        self.manager, self.controller = manager, controller
        self.items: deque[Key] = deque()
        self.queued: set[Key] = set()
        self.timers: dict[Key, Timer] = {}
        self.failures: dict[Key, int] = {}
        # keys the livelock guard named (wall clock): (adds backed off so far, when the last one came)
        self.throttled: dict[Key, tuple[int, float]] = {}
        self.scheduled = False
        self.processing: Key | None = None
        self.dirty_while_processing: set[Key] = set()
        # keys queued (or dirtied while processing) only by events their watch called unchanged: skipped in turn
        self.idle: set[Key] = set()
        self.skipped = 0  # reconciles so skipped
        # controller-runtime's counts (``flexq.runtime.metrics``): reconciles by result, adds, retries
        self.results: dict[str, int] = dict.fromkeys(RESULTS, 0)
        self.adds = 0
        self.retries = 0

    def add(self, key: Key, unchanged: bool = False) -> None:
        if self.throttled and key in self.throttled and self._backed_off(key):
            return
        self._enqueue(key, unchanged)

    def _enqueue(self, key: Key, unchanged: bool = False) -> None:
        if key == self.processing:
            if key not in self.dirty_while_processing:
                self.dirty_while_processing.add(key)
                self.adds += 1
                if unchanged:
                    self.idle.add(key)
            elif not unchanged and self.idle:
                self.idle.discard(key)
            return
        if key in self.queued:
            if not unchanged and self.idle:
                self.idle.discard(key)
            return
        self.adds += 1
        self.queued.add(key)
        self.items.append(key)
        if unchanged:
            self.idle.add(key)
        self._schedule()

    def _backed_off(self, key: Key) -> bool:
        """A throttled key's add waits ``5 ms · 2^n`` (at most 1000 s), as controller-runtime's per-item
        exponential limiter; a key whose next add comes long after its back-off has calmed down and is let go."""
        n, last = self.throttled[key]
        now = self.manager.loop.now()
        delay = min(MAX_DELAY, BASE_DELAY * 2**n)
        if now - last > 2 * delay + 1.0:
            del self.throttled[key]
            return False
        self.throttled[key] = (n + 1, now)
        self._add_timer(key, delay)
        return True

    def throttle(self, key: Key) -> None:
        if key not in self.throttled:
            self.throttled[key] = (0, self.manager.loop.now())

    def add_after(self, key: Key, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        self._add_timer(key, delay)

    def _add_timer(self, key: Key, delay: float) -> None:
        loop = self.manager.loop
        when = loop.now() + delay
        cur = self.timers.get(key)
        if cur is not None and not cur.cancelled and cur.when <= when:
            return
        if cur is not None:
            cur.cancel()

        def fire() -> None:
            self.timers.pop(key, None)
            self._enqueue(key)

        self.timers[key] = loop.call_at(when, fire)

    def _schedule(self) -> None:
        if not self.scheduled and self.items:
            self.scheduled = True
            self.manager.loop.call_soon(self.process_one)

    def process_one(self) -> None:
        self.scheduled = False
        if not self.items:
            return
        key = self.items.popleft()
        self.queued.discard(key)
        try:
            self.manager.guard.note(self.controller.name, key, self)
        except Livelock:
            self.add(key)  # left queued: the twin is stuck, but consistent
            raise
        if self.idle and key in self.idle:  # queued only by events that changed nothing it reads
            self.idle.discard(key)
            self.skipped += 1
            self._schedule()
            return
        self.processing = key
        # one journal commit for the reconcile's writes (a Job's 500 new pods and their events: one sync to
        # disk, not a thousand); a write that fails undoes only its own rows, and the error stays inside
        journal = self.manager.ctx.store.journal
        for store in self.manager.check_writers:  # a test setting: a trusted write admission refuses names
            store.writer = f"{self.controller.name} {key!r}"  # this reconcile
        with journal.transaction() if journal is not None else contextlib.nullcontext():
            try:
                result = self.controller.reconcile(key)
            except InvalidWrite:
                raise
            except (Conflict, NotFound) as exc:
                # stale read or a racing delete: retry soon, quietly (client-go controllers do the same)
                log.debug("%s %r: %s; retrying", self.controller.name, key, exc)
                result = self._retry(key)
            except Exception:
                log.exception("reconcile %s %r failed", self.controller.name, key)
                result = self._retry(key)
            else:
                self.failures.pop(key, None)
                after = None if result is None else result.requeue_after
                self.results["success" if after is None else "requeue_after" if after > 0 else "requeue"] += 1
            finally:
                self.processing = None
        if self.manager.check_reads:  # a test setting: a controller that changed a shared object fails here
            for store in self.manager.check_reads:
                store.verify_reads(f"{self.controller.name} {key!r}")
        if key in self.dirty_while_processing:
            self.dirty_while_processing.discard(key)
            self.add(key, bool(self.idle) and key in self.idle)
        if result is not None and result.requeue_after is not None:
            self.add_after(key, result.requeue_after)
        self._schedule()

    def _retry(self, key: Key) -> Result:
        self.results["error"] += 1
        self.retries += 1
        n = self.failures.get(key, 0)
        self.failures[key] = n + 1
        return Result(requeue_after=min(MAX_DELAY, BASE_DELAY * 2**n))


class Manager:
    """Runs a set of controllers for one cluster on the loop."""

    def __init__(self, ctx: Context, guard: LivelockGuard | None = None) -> None:
        """``guard``: the loop's livelock guard, shared by every manager running on the loop (the assembly
        makes one per twin); a manager alone on its loop may leave it out and gets its own."""
        self.ctx = ctx
        self.loop: EventLoop = ctx.loop
        self.controllers: list[Controller] = []
        self._queues: dict[str, _Queue] = {}
        self._subs: list = []
        self.guard = guard if guard is not None else LivelockGuard(self.loop)
        # stores whose read-only check is on (``Store(check_readonly=True)``): verified after every reconcile
        self.check_reads = [s for s in (ctx.store, ctx.project) if s is not None and s.check_readonly]
        # stores that admit every trusted write (``Store.check_writes``): told which reconcile is writing
        self.check_writers = [s for s in (ctx.store, ctx.project) if s is not None and s.check_writes]
        if ctx.metrics is not None:  # a cluster's registry: controller-runtime's metrics of these controllers
            ControllerMetrics(self, ctx.metrics)

    def add(self, controller: Controller) -> Controller:
        q = _Queue(self, controller)
        self._queues[controller.name] = q
        controller.enqueue = q.add
        controller.enqueue_after = q.add_after
        self.controllers.append(controller)
        for w in controller.watches():
            store = self._store(w.source)
            if store is None:
                continue
            mapper = w.mapper if w.predicate is None else _filtered(w.predicate, w.mapper)
            add = q.add if w.delay <= 0 else (lambda k, d=w.delay, after=q.add_after: after(k, d))
            if not hasattr(self.loop, "thread"):  # a virtual-time loop: every write is made on its thread
                if w.unchanged is not None and w.delay <= 0:
                    self._subs.append(store.watch(_judged(w.unchanged, mapper, q.add), [w.kind]))
                    continue
                self._subs.append(store.watch(_direct(mapper, add), [w.kind]))
                continue
            # on the wall clock every key an event queues is reconciled (``Watch.unchanged`` is not consulted)

            def on_event(ev: WatchEvent, mapper=mapper, add=add, loop=self.loop) -> None:
                keys = mapper(ev)
                if not keys:
                    return
                thread = getattr(loop, "thread", None)  # a real-time loop's; None on virtual time
                if thread is None or thread is threading.current_thread():
                    for k in keys:
                        add(k)
                else:
                    ks = list(keys)
                    loop.post(lambda: [add(k) for k in ks])

            self._subs.append(store.watch(on_event, [w.kind]))
        return controller

    def _store(self, source: str) -> Store | None:
        return self.ctx.project if source == "project" else self.ctx.store

    def add_all(self, controllers: Iterable[Controller]) -> None:
        for c in controllers:
            self.add(c)

    def start(self) -> None:
        """Enqueue every existing watched object (converge after a restart), then let controllers start."""
        for c in self.controllers:
            for w in c.watches():
                store = self._store(w.source)
                if store is None:
                    continue
                try:
                    info = store.info(w.kind)
                    objs = store.list(w.kind)
                except NotFound:  # a kind this cluster does not serve (e.g. ray.io without the addon)
                    continue
                for obj in objs:
                    ev = WatchEvent("ADDED", info.key, obj, int(obj["metadata"].get("resourceVersion", 0)))
                    for k in w.mapper(ev) or ():
                        self._queues[c.name].add(k)
            c.start()

    def stop(self) -> None:
        for s in self._subs:
            s.cancel()
        self._subs.clear()
        for c in self.controllers:
            try:
                c.stop()
            except Exception:
                log.exception("stopping %s failed", c.name)

    def discard(self) -> None:
        """After ``stop``: unwire the controllers from their queues and the queues from this manager, so that a
        discarded twin's controllers are freed by reference counting (``TwinCore.discard``)."""
        for q in self._queues.values():
            for t in q.timers.values():
                t.cancel()
            q.timers.clear()
            q.items.clear()
            q.controller.enqueue = _nothing
            q.controller.enqueue_after = _nothing
        self._queues.clear()
        self.controllers.clear()

    def queue_length(self, name: str) -> int:
        return len(self._queues[name].items)

    def queue_stats(self) -> list[tuple[str, dict[str, int], int, int, int]]:
        """Per controller: reconciles by result, adds, retries and the queue's depth (for the metrics)."""
        return [(n, dict(q.results), q.adds, q.retries, len(q.items)) for n, q in self._queues.items()]
