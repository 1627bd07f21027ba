"""The loop on the wall clock: the only difference is that it waits instead of jumping.

Owns: ``RealtimeLoop.run_forever`` (blocks on a condition until the next timer is due or another
thread posts), ``call_sync`` (run a function on the loop thread and wait for its result), ``stop`` (which waits
for the loop's thread to end) and ``alive`` (the loop thread runs: a loop that died of an error escaping its
callbacks keeps that error in ``failure``, and the served twin's ``/healthz`` and ``/readyz`` fail while its
process exits).
Must not import anything in flexq but ``flexq.clock`` and ``flexq.loop.core``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from flexq.clock import WallClock
from flexq.loop.core import EventLoop, Timer

T = TypeVar("T")

log = logging.getLogger("flexq.loop")


class RealtimeLoop(EventLoop):
    """An EventLoop that follows the wall clock and runs in one dedicated thread."""

    def __init__(self) -> None:
        super().__init__(WallClock())
        self._stopping = False
        self.thread: threading.Thread | None = None
        self.failure: BaseException | None = None  # what ended the loop thread, if anything did

    def _drain_inbox(self) -> None:
        """Work posted by other threads (the API server's reads and writes, executors' wake-ups) runs as soon as
        the loop looks, before the controller work already due: as the API server never waits behind the
        controllers, a client's write never queues behind a backlog of reconciles (a Job's 500 new pods, each
        to be scheduled). The callbacks run as the loop's own do (errors logged, steps counted)."""
        if not self._inbox:
            return
        with self._inbox_lock:
            items = list(self._inbox)
            self._inbox.clear()
        now = self.now()
        for cb in items:
            self._run(Timer(now, cb))

    def alive(self) -> bool:
        """The loop runs callbacks: its thread is running (or not started yet) and nothing ended it."""
        return self.failure is None and (self.thread is None or self.thread.is_alive())

    def run_forever(self) -> None:
        """Run callbacks as they fall due until ``stop()``; an error that escapes a callback (the loop logs and
        keeps every ``Exception``; a ``BaseException`` such as ``SystemExit`` ends it) is kept in ``failure``,
        logged, and ends the thread."""
        self.thread = threading.current_thread()
        try:
            self._run_forever()
        except BaseException as exc:  # kept for the health checks, which then fail; the process exits
            self.failure = exc
            log.critical("the twin's event loop stopped: %r", exc, exc_info=True)

    def _run_forever(self) -> None:
        while not self._stopping:
            self.run_until(self.now())
            nxt = self.next_time()
            with self._wake:
                if self._inbox or self._stopping:
                    continue
                timeout = None if nxt is None else max(0.0, nxt - self.now())
                if timeout is None or timeout > 0:
                    self.idles += 1  # nothing runnable: a busy period ends
                self._wake.wait(timeout=min(timeout, 1.0) if timeout is not None else 1.0)

    def start_thread(self, name: str = "flexq-loop") -> threading.Thread:
        t = threading.Thread(target=self.run_forever, name=name, daemon=True)
        t.start()
        self.thread = t
        return t

    def stop(self, join: float = 10.0) -> None:
        """Stop the loop; from another thread, wait up to ``join`` seconds for the loop's thread to end (its
        last callback to finish), so nothing runs on a twin after ``close()`` returns."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        t = self.thread
        if t is not None and t is not threading.current_thread() and t.is_alive():
            t.join(join)

    def in_loop_thread(self) -> bool:
        return self.thread is threading.current_thread()

    def call_sync(self, fn: Callable[[], T], timeout: float | None = 60.0) -> T:
        """Run ``fn`` on the loop thread and return its result (re-raising its exception)."""
        if self.in_loop_thread() or self.thread is None:
            return fn()
        fut: Future[T] = Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as exc:  # handed back to the caller's thread
                fut.set_exception(exc)

        self.post(run)
        return fut.result(timeout=timeout)
