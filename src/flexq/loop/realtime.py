"""The loop on the wall clock: the only difference is that it waits instead of jumping.

Owns: ``RealtimeLoop.run_forever`` (blocks on a condition until the next timer is due or another
thread posts), ``call_sync`` (run a function on the loop thread and wait for its result) and ``stop`` (which waits for the
loop's thread to end).
Must not import anything in flexq but ``flexq.clock`` and ``flexq.loop.core``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from flexq.clock import WallClock
from flexq.loop.core import EventLoop

T = TypeVar("T")


class RealtimeLoop(EventLoop):
    """An EventLoop that follows the wall clock and runs in one dedicated thread."""

    def __init__(self) -> None:
        super().__init__(WallClock())
        self._stopping = False
        self.thread: threading.Thread | None = None

    def run_forever(self) -> None:
        """Run callbacks as they fall due until ``stop()``."""
        self.thread = threading.current_thread()
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
