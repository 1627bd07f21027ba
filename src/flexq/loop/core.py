"""The single-threaded event loop that changes all state (SimPy's kernel, reduced).

Owns: a heap of ``(time, priority, seq, timer)``; ``call_at`` / ``call_later`` / ``call_soon``; a
thread-safe inbox (``post``) for callbacks from other threads; ``run_until`` and ``run_until_idle``
on virtual time, where the clock jumps straight to the next due timer. The sequence number breaks
ties so that, with the same inputs, a run is identical event for event. ``idles`` counts the times the loop
went idle (on virtual time: the clock moved forward; on the wall clock: it waited), so a watcher can tell the
steps of one busy period (one virtual instant) apart; a callback's ``Livelock`` stops the run instead of being
logged like any other error.
Must not import anything in flexq but ``flexq.clock`` and ``flexq.errors``.
"""

from __future__ import annotations

import gc
import heapq
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from flexq.clock import Clock, VirtualClock
from flexq.errors import InvalidWrite, Livelock, SharedObjectChanged

log = logging.getLogger("flexq.loop")

Callback = Callable[[], Any]


# 200,000: Kueue's large-scale file (60,000 workloads) spent 11.7 s of 133 s CPU in the collector at 50,000 (283
# young collections of 21 ms, 25 middle, 3 full), 9.1 s of 120 s at 200,000 (177, 16, 3)
YOUNG_GC_THRESHOLD = 200_000
# A twin someone drives (the SDK, the API, kubectl, the dashboard): there a middle collection's pause counts more
# than the collector's total. A middle collection walks up to ten young generations: at 200,000 it took 0.70-0.78 s
# on the whole-twin baseline's heap (a list of its 15,000 Workloads that met one: 1.0-1.1 s against its 0.5 s
# target), at 50,000 0.2 s, the collector's total the same (3.7 against 3.5 s of 48 s). ``flexq simulate``'s runs,
# batch work, raise it to ``YOUNG_GC_THRESHOLD``.
INTERACTIVE_YOUNG_GC_THRESHOLD = 50_000
ERRORS_KEPT = 100


def tune_gc(young: int = YOUNG_GC_THRESHOLD) -> None:
    """Let the cyclic garbage collector run less often in a process that holds a twin's large heap.

    CPython collects its youngest generation every 700 net container allocations and, as a heap of
    hundreds of thousands of stored dicts grows and churns, walks all of it again and again (about a
    fifth of the CPU time of the Kueue baseline benchmark). Stored objects are acyclic JSON trees that
    reference counting frees at once; the collector only has cycles to find. Only ever raises the
    threshold (a process that chose a higher one keeps it).
    """
    t0, t1, t2 = gc.get_threshold()
    if t0 and t0 < young:
        gc.set_threshold(young, t1, t2)


class Timer:
    """A scheduled callback; ``cancel()`` makes it a no-op."""

    __slots__ = ("when", "callback", "cancelled")

    def __init__(self, when: float, callback: Callback) -> None:
        self.when = when
        self.callback: Callback | None = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = None


class EventLoop:
    """Runs callbacks in time order. With a VirtualClock, time only moves inside ``run_*``."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self._heap: list[tuple[float, int, int, Timer]] = []
        self._seq = 0
        self._inbox: deque[Callback] = deque()
        self._inbox_lock = threading.Lock()
        self._wake = threading.Condition(self._inbox_lock)
        self.steps = 0  # callbacks run so far (for benchmarks and determinism checks)
        self.idles = 0  # times the loop went idle: the clock moved on (virtual) or the loop waited (real)
        # the last errors of broken callbacks (bounded: a live twin runs for days, and an error's traceback holds
        # the frames, with their data, that raised it)
        self.errors: deque[BaseException] = deque(maxlen=ERRORS_KEPT)

    # -- scheduling ---------------------------------------------------------------------------
    def now(self) -> float:
        return self.clock.now()

    def call_at(self, when: float, callback: Callback, priority: int = 1) -> Timer:
        """Run ``callback`` at ``when`` (or as soon as possible if that is in the past)."""
        timer = Timer(when, callback)
        self._seq += 1
        heapq.heappush(self._heap, (when, priority, self._seq, timer))
        return timer

    def call_later(self, delay: float, callback: Callback, priority: int = 1) -> Timer:
        return self.call_at(self.now() + max(0.0, delay), callback, priority)

    def call_soon(self, callback: Callback) -> Timer:
        return self.call_at(self.now(), callback, priority=0)

    def post(self, callback: Callback) -> None:
        """Thread-safe: queue ``callback`` to run on the loop thread as soon as possible."""
        with self._wake:
            self._inbox.append(callback)
            self._wake.notify_all()

    # -- running ------------------------------------------------------------------------------
    def _drain_inbox(self) -> None:
        # looked at without the lock first (every turn of the loop does this): a callback posted just after
        # the look is drained on the next turn, as one posted just after the locked read always was
        if not self._inbox:
            return
        with self._inbox_lock:
            items = list(self._inbox)
            self._inbox.clear()
        for cb in items:
            self.call_soon(cb)

    def _pop_due(self, until: float) -> Timer | None:
        while self._heap:
            when, _, _, timer = self._heap[0]
            if timer.cancelled:
                heapq.heappop(self._heap)
                continue
            if when > until:
                return None
            heapq.heappop(self._heap)
            return timer
        return None

    def _run(self, timer: Timer) -> None:
        if isinstance(self.clock, VirtualClock) and timer.when > self.clock.now():
            self.idles += 1
            self.clock.set(timer.when)
        cb = timer.callback
        timer.callback = None
        if cb is None:
            return
        self.steps += 1
        try:
            cb()
        except (
            Livelock,
            SharedObjectChanged,
            InvalidWrite,
        ):  # controllers spin at one instant, or one changed a
            raise  # shared object or wrote an invalid one (test settings): stop the run, say who
        except Exception as exc:  # a broken callback must not stop the world
            log.exception("callback %r failed", cb)
            self.errors.append(exc.with_traceback(None))

    def next_time(self) -> float | None:
        """When the next live timer is due, or None."""
        while self._heap and self._heap[0][3].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def has_inbox(self) -> bool:
        with self._inbox_lock:
            return bool(self._inbox)

    def run_until(self, until: float) -> int:
        """Run every callback due at or before ``until``; on virtual time, end with the clock at ``until``."""
        ran = 0
        while True:
            self._drain_inbox()
            timer = self._pop_due(until)
            if timer is None:
                break
            self._run(timer)
            ran += 1
        if isinstance(self.clock, VirtualClock) and until > self.clock.now():
            self.idles += 1
            self.clock.set(until)
        return ran

    def discard(self) -> None:
        """Drop every timer and queued callback unrun (a discarded twin's loop, ``TwinCore.discard``)."""
        for entry in self._heap:
            entry[3].cancel()
        self._heap.clear()
        with self._inbox_lock:
            self._inbox.clear()

    def run_until_idle(self, max_seconds: float) -> int:
        """Run until no timer is left, jumping over idle time, but never past now + max_seconds."""
        limit = self.now() + max_seconds
        ran = 0
        while True:
            self._drain_inbox()
            timer = self._pop_due(limit)
            if timer is None:
                break
            self._run(timer)
            ran += 1
        return ran

    def pending(self) -> int:
        """Live timers in the heap."""
        return sum(1 for entry in self._heap if not entry[3].cancelled)
