"""The store's watch room: one ``WatchEvent`` per write, the subscriptions, the history kept for resuming,
and the fan-out of a commit's events (at once, or after the commit for a client's ``committed`` watch).

Owns: ``WatchEvent``, ``Subscription``, ``Watchers``. The store (``flexq.store.store``) builds the events
in its commit and hands them here; nothing here reads or writes stored objects. Must not import
``flexq.runtime``, domain packages or ``flexq.http``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

from flexq.errors import Gone

log = logging.getLogger("flexq.store")


class WatchEvent(NamedTuple):
    """One change: ADDED, MODIFIED or DELETED, with the object after (or at) the change. Immutable (a named
    tuple: made three times faster than a frozen dataclass, once per write), built once per write and shared by
    every subscriber. ``old``: for a MODIFIED event delivered as the write happens, the version it replaced
    (controller-runtime's ``UpdateEvent.ObjectOld``, what event predicates compare); None otherwise (ADDED,
    DELETED, and events replayed from the history, which keeps no old versions). Both are read-only."""

    type: str
    kind: str  # KindInfo.key
    object: dict
    rv: int
    old: dict | None = None


class Subscription:
    """A watch callback registration; ``cancel()`` stops delivery. A ``committed`` one hears a write only once
    it is on disk (a client's watch: etcd never shows a write before it is committed)."""

    def __init__(
        self,
        watchers: Watchers,
        callback: Callable[[WatchEvent], None],
        kinds: set[str] | None,
        committed: bool = False,
    ) -> None:
        self.watchers, self.callback, self.kinds = watchers, callback, kinds
        self.committed = committed
        self.active = True

    def cancel(self) -> None:
        self.active = False
        self.watchers.unsubscribe(self)


def deliver(events: list[tuple[Subscription, WatchEvent]]) -> None:
    """Hand committed writes to the watchers that wait for the commit."""
    for sub, ev in events:
        if sub.active:
            try:
                sub.callback(ev)
            except Exception:
                log.exception("watch callback failed")


class Watchers:
    """The subscriptions of one store and the last ``history`` events (an API server's watch cache: a watch
    from an older resourceVersion gets Gone). The store holds its lock around every call but
    ``unsubscribe``, which takes it."""

    def __init__(self, history: int, lock: AbstractContextManager[Any]) -> None:
        self.lock = lock  # the store's (a subscription is cancelled from any thread)
        self.history: deque[WatchEvent] = deque(maxlen=history)
        self.subs: list[Subscription] = []
        self.subs_of: dict[str, list[Subscription]] = {}  # kind key -> its subscribers, in order (a cache)

    def subscribe(
        self,
        callback: Callable[[WatchEvent], None],
        keys: set[str] | None,
        committed: bool,
        since: int | None,
        rv: int,
    ) -> Subscription:
        """A new subscription; with ``since`` (older than the store's ``rv``), the kept events after it are
        delivered first (Gone if they are no longer all kept)."""
        sub = Subscription(self, callback, keys, committed)
        if since is not None and since < rv:
            oldest = self.history[0].rv if self.history else rv + 1
            if since + 1 < oldest:
                raise Gone(f"too old resource version: {since} ({oldest - 1})")
            for ev in list(self.history):
                if ev.rv > since and (keys is None or ev.kind in keys):
                    callback(ev)
        self.subs.append(sub)
        self.subs_of.clear()
        return sub

    def discard(self) -> None:
        """No subscriber and no history any more (a discarded twin's store, ``TwinCore.discard``)."""
        with self.lock:
            for sub in self.subs:
                sub.active = False
            self.subs.clear()
            self.subs_of.clear()
            self.history.clear()

    def unsubscribe(self, sub: Subscription) -> None:
        with self.lock:
            if sub in self.subs:
                self.subs.remove(sub)
                self.subs_of.clear()

    def publish(self, events: list[WatchEvent], nested: bool) -> list[tuple[Subscription, WatchEvent]]:
        """Deliver one commit's events to the subscribers of each kind, in order. ``nested``: the commit is
        inside an open outer transaction; the ``committed`` subscribers' deliveries are returned, for after
        it commits (``deliver``)."""
        later: list[tuple[Subscription, WatchEvent]] = []
        subs_of = self.subs_of
        for ev in events:
            subs = subs_of.get(ev.kind)
            if subs is None:
                subs = subs_of[ev.kind] = [s for s in self.subs if s.kinds is None or ev.kind in s.kinds]
            for sub in subs:
                if sub.active:
                    if nested and sub.committed:
                        later.append((sub, ev))
                        continue
                    try:
                        sub.callback(ev)
                    except Exception:
                        log.exception("watch callback failed")
        return later
