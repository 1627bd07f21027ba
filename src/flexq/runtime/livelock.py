"""The livelock guard: controllers that keep waking each other without time moving.

Owns: ``LivelockGuard``, one per event loop (the assembly makes it and hands it to every manager of the loop),
told of every reconcile those managers run. It counts the reconciles of each ``(controller, key)`` within one busy period of the loop (on virtual
time: one instant, the clock has not moved; on the wall clock: the loop has not waited since). Every
``WINDOW`` reconciles of one busy period it looks at who ran them: when a few keys ran nearly all of them
(each at least ``WINDOW // 100`` times, together at least 90 %), the controllers are rescheduling one another
and the store never settles; a burst of real work touches a different key at almost every step (a thousand
Workloads admitted at one instant are a thousand keys, the scheduler's cycle among them), so it never looks
like that. Then:

- on virtual time, ``Livelock`` is raised out of the loop, naming the controllers, keys and counts (the
  virtual clock would otherwise never move again: ``Twin.advance``, ``flexq simulate`` and tests would hang);
- on the wall clock (``flexq up``), it logs a warning naming them and asks their queues to back those keys
  off as controller-runtime's default rate limiter does for a key requeued again and again
  (``ItemExponentialFailureRateLimiter``: 5 ms doubling to 1000 s; ``runtime.manager``), so the twin keeps
  serving while the pair slows down.

Must not import domain packages or ``flexq.http``.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from flexq.clock import VirtualClock, format_time
from flexq.errors import Livelock
from flexq.loop.core import EventLoop

__all__ = ["LivelockGuard"]

log = logging.getLogger("flexq.runtime")

WINDOW = 10_000  # reconciles of one busy period looked at together
SHARE = 0.9  # of a window run by the repeating keys: a livelock


class Throttled(Protocol):
    """What runs a controller's keys (a manager's queue): it can back a key off."""

    def throttle(self, key: Any) -> None: ...


def _show(key: Any) -> str:
    if isinstance(key, tuple):
        return "/".join(str(k) for k in key if k not in ("", None))
    return str(key)


class LivelockGuard:
    """Counts reconciles per ``(controller, key)`` within one busy period of ``loop``."""

    def __init__(self, loop: EventLoop, window: int = WINDOW) -> None:
        self.loop = loop
        self.window = window
        self.virtual = isinstance(loop.clock, VirtualClock)
        self._period = -1  # ``loop.idles`` when the counts began
        self._counts: dict[tuple[str, Any, Throttled | None], int] = {}
        self._n = 0
        self.detected = 0  # livelocks seen (on the wall clock, each logged and backed off)

    def note(self, controller: str, key: Any, queue: Throttled | None = None) -> None:
        """One reconcile of ``key`` by ``controller`` (run from ``queue``) is about to run."""
        if self._period != self.loop.idles:
            self._period = self.loop.idles
            self._counts.clear()
            self._n = 0
        k = (controller, key, queue)
        self._counts[k] = self._counts.get(k, 0) + 1
        self._n += 1
        if self._n >= self.window:
            self._judge()

    def _judge(self) -> None:
        floor = self.window // 100
        offenders = sorted(
            ((c, k, q, n) for (c, k, q), n in self._counts.items() if n >= floor), key=lambda o: (-o[3], o[0])
        )
        total = self._n
        self._counts.clear()
        self._n = 0
        if sum(o[3] for o in offenders) < SHARE * total:
            return  # real work: many keys, each a few times
        self.detected += 1
        names = ", ".join(f"{c} {_show(k)!r} ×{n:,}" for c, k, _, n in offenders)
        where = f"at {format_time(self.loop.now())}" if self.virtual else "on the wall clock"
        msg = (
            f"livelock {where}: controllers kept waking each other without the store settling "
            f"({total:,} reconciles in one busy period of the loop): {names}"
        )
        shown = [(c, _show(k), n) for c, k, _, n in offenders]
        if self.virtual:
            raise Livelock(msg + "; the virtual clock cannot move on", shown, self.loop.now())
        log.warning("%s; backing them off as controller-runtime's rate limiter would", msg)
        for _, k, q, _ in offenders:
            if q is not None:
                q.throttle(k)
