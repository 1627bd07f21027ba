"""The only place flexq reads the wall clock.

Owns: the ``Clock`` protocol (``now()`` in seconds since the epoch, as a float), ``WallClock`` and
``VirtualClock`` (moved only by the event loop), RFC 3339 formatting/parsing of timestamps as
Kubernetes writes them, and ``format_duration``, the one way flexq writes a span of time for people (the CLI,
the dashboard, the fallback's Events, the reasons a job waits). Must not import anything from flexq.
"""

from __future__ import annotations

import datetime as _dt
import time as _time
from typing import Protocol

__all__ = [
    "Clock",
    "VirtualClock",
    "WallClock",
    "format_duration",
    "format_time",
    "parse_time",
    "parse_time_or_none",
    "DEFAULT_EPOCH",
]

# A virtual twin starts at a fixed, recognisable instant so runs are reproducible.
DEFAULT_EPOCH = 1_798_761_600.0  # 2027-01-01T00:00:00Z


class Clock(Protocol):
    """Source of time for every component."""

    def now(self) -> float:
        """Seconds since the Unix epoch."""


class WallClock:
    """Real time."""

    def now(self) -> float:
        return _time.time()

    def sleep(self, seconds: float) -> None:
        """Block the calling thread (only the real-time loop and executors' threads may call this)."""
        _time.sleep(seconds)


class VirtualClock:
    """Simulated time: it stands still until the loop moves it to the next due timer."""

    def __init__(self, start: float = DEFAULT_EPOCH) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def set(self, when: float) -> None:
        """Move time forward to ``when`` (never backwards)."""
        if when > self._now:
            self._now = float(when)


_LAST_FORMATTED: list = [None, ""]  # (second, text): controllers stamp the same second over and over


def format_time(ts: float) -> str:
    """RFC 3339 in UTC with second precision, as in ``metadata.creationTimestamp``."""
    sec = int(ts)
    if _LAST_FORMATTED[0] != sec:
        _LAST_FORMATTED[0], _LAST_FORMATTED[1] = (
            sec,
            _dt.datetime.fromtimestamp(sec, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
    return _LAST_FORMATTED[1]


def parse_time(text: str) -> float:
    """Inverse of format_time; accepts fractional seconds and offsets."""
    t = text.replace("Z", "+00:00")
    return _dt.datetime.fromisoformat(t).timestamp()


def parse_time_or_none(text: str | None) -> float | None:
    """``parse_time`` of an optional field: None when it is absent, empty or not a time."""
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


def format_duration(seconds: float) -> str:
    """``45s``, ``3m05s``, ``2h03m``, ``1d04h`` (like kubectl's AGE column, a little finer: two units, the second
    zero-padded); negative spans are ``0s``. (``kubectl``'s own columns use apimachinery's ``HumanDuration``,
    ``flexq.http.kube.table.human_duration``.)"""
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
