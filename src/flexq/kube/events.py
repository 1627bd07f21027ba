"""Event expiry, as kube-apiserver's ``--event-ttl`` (default one hour) does with an etcd lease per write.

Owns: deleting an Event ``ttl`` seconds after its last write. Upstream every create or update of an Event
attaches a fresh lease (``registry/core/event``: ``TTLFunc`` returns the TTL on update too), so an event that
keeps being bumped (``count``) lives on, and one nobody writes again goes an hour later, DELETED watch event
and all. Without it a twin that runs for days (``flexq up``, a simulated week) keeps every event it ever
recorded: memory and ``kubectl get events`` grow without bound.

Here expiry is checked whenever an Event is written, not on a timer of its own, so a quiet twin's
``run_until_idle`` ends when its controllers do, as before: a cluster that keeps recording events keeps
about the last ``ttl`` seconds of them; one that records nothing more keeps what it has until it does.
After a restart every stored event starts a fresh lease (the journal does not keep the write times). The
recorders' shared dedup index (``Context.event_index``) forgets an expired event too, so a repeat of it is
a new Event, as client-go's recorder makes one once its cached event is gone. ``ttl`` 0 keeps events
forever (``Twin(event_ttl_seconds=0)``). Must not import other domain packages.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from flexq.runtime import Context, Controller, Result, Watch
from flexq.runtime.controller import event_dedup_key
from flexq.store.store import WatchEvent

SWEEP = ("", "expired-events")


class EventTTL(Controller):
    """Deletes Events ``ttl`` seconds after their last write."""

    name = "event-ttl"

    def __init__(self, ctx: Context, ttl: float) -> None:
        super().__init__(ctx)
        self.ttl = ttl
        self._written: dict[tuple[str, str], tuple[float, int]] = {}  # event -> (time, rv) of its last write
        self._order: deque[tuple[float, tuple[str, str], int]] = deque()  # writes, oldest first

    def watches(self) -> list[Watch]:
        return [Watch("Event", self._on_event)] if self.ttl > 0 else []

    def _on_event(self, ev: WatchEvent) -> list[tuple[str, str]]:
        md = ev.object["metadata"]
        key = (md.get("namespace") or "", md["name"])
        if ev.type == "DELETED":
            self._written.pop(key, None)
            return []
        now = self.ctx.now()
        self._written[key] = (now, ev.rv)
        self._order.append((now, key, ev.rv))
        return [SWEEP] if self._order[0][0] + self.ttl <= now else []

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        now = self.ctx.now()
        order, written = self._order, self._written
        due: list[tuple[str, str, int]] = []
        while order and order[0][0] + self.ttl <= now:
            at, ev_key, rv = order.popleft()
            if written.get(ev_key) != (at, rv):
                continue  # written again since (a later entry stands for it), or already gone
            del written[ev_key]
            due.append((ev_key[0], ev_key[1], rv))
        if due:
            # one commit for every event whose lease ran out (each still a DELETED watch event, in order)
            for ev in self.store.expire("Event", due):
                self._forget(ev)
        return None

    def _forget(self, ev: dict[str, Any]) -> None:
        """Drop the recorders' dedup entry for ``ev``."""
        key = event_dedup_key(ev)
        if self.ctx.event_index.get(key) == ev["metadata"]["name"]:
            del self.ctx.event_index[key]
            self.ctx.event_correlator.forget(key)
