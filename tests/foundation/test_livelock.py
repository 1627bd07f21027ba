"""The livelock guard (issue 26, item 2): controllers that keep waking each other without the clock moving.

Two deliberately ping-ponging controllers: ``ping`` answers every change of ConfigMap ``a`` by bumping ConfigMap
``b``, ``pong`` every change of ``b`` by bumping ``a``. On virtual time the loop would never leave the instant;
the guard stops it with ``Livelock`` naming both. On the wall clock it logs them and backs their keys off as
controller-runtime's rate limiter does, and the twin keeps running. Real work of many keys at one instant
(a burst of objects) is not a livelock.
"""

from __future__ import annotations

import logging
import threading

import pytest

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.errors import FlexqError, Livelock
from flexq.loop import EventLoop, Rngs
from flexq.loop.realtime import RealtimeLoop
from flexq.runtime import Context, Controller, Manager, Result, Watch
from flexq.runtime.livelock import WINDOW, LivelockGuard
from flexq.store import Store
from flexq.store.logs import PodLogs


class _Bumper(Controller):
    """On any change of ConfigMap ``source``, bump a counter in ConfigMap ``target``."""

    def __init__(self, ctx: Context, name: str, source: str, target: str) -> None:
        self.name = name
        super().__init__(ctx)
        self.source, self.target = source, target
        self.calls = 0

    def watches(self) -> list[Watch]:
        return [
            Watch(
                "ConfigMap",
                lambda ev: [("default", self.target)] if ev.object["metadata"]["name"] == self.source else [],
            )
        ]

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        self.calls += 1
        cm = self.store.get("ConfigMap", key[1], key[0])
        cm["data"] = {"n": str(int(cm.get("data", {}).get("n", "0")) + 1)}
        self.store.update(cm)
        return None


class _Counter(Controller):
    """Counts the ConfigMaps it sees (one reconcile per object, no writes)."""

    name = "counter"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.seen = 0

    def watches(self) -> list[Watch]:
        return [Watch("ConfigMap")]

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        self.seen += 1
        return None


def _cluster(loop: EventLoop) -> tuple[Store, Manager]:
    store = Store(default_registry(), loop.clock, namespaces=["default"])
    ctx = Context(store=store, loop=loop, rngs=Rngs(1), logs=PodLogs(None))
    return store, Manager(ctx)


def _ping_pong(store: Store, manager: Manager) -> tuple[_Bumper, _Bumper]:
    ping = _Bumper(manager.ctx, "ping", "a", "b")
    pong = _Bumper(manager.ctx, "pong", "b", "a")
    manager.add_all([ping, pong])
    for name in ("a", "b"):
        store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}
        )
    return ping, pong


def test_ping_ponging_controllers_stop_the_virtual_loop_with_an_error_naming_both() -> None:
    loop = EventLoop(VirtualClock(0))
    store, manager = _cluster(loop)
    ping, pong = _ping_pong(store, manager)
    with pytest.raises(Livelock) as err:
        loop.run_until(1.0)
    assert isinstance(err.value, FlexqError)
    names = {c for c, _, _ in err.value.offenders}
    assert names == {"ping", "pong"}
    assert {k for _, k, _ in err.value.offenders} == {"default/a", "default/b"}
    msg = str(err.value)
    assert "ping 'default/b'" in msg and "pong 'default/a'" in msg and "virtual clock" in msg
    assert loop.now() == 0  # stopped at the instant it could not leave
    assert ping.calls + pong.calls == WINDOW - 1  # the last reconcile was refused, its key left queued
    assert manager.queue_length("ping") + manager.queue_length("pong") == 1


def test_a_burst_of_real_work_at_one_instant_is_not_a_livelock() -> None:
    """Three windows' worth of objects created at one instant: each key is reconciled once."""
    loop = EventLoop(VirtualClock(0))
    store, manager = _cluster(loop)
    counter = _Counter(manager.ctx)
    manager.add(counter)
    n = 3 * WINDOW
    for i in range(n):
        store.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "default"}}
        )
    loop.run_until(1.0)
    assert counter.seen == n
    assert manager.guard.detected == 0


def test_the_guard_counts_per_busy_period() -> None:
    """The same key reconciled again and again, but each time at a new instant: no livelock (a periodic
    controller), while the same count within one instant is."""
    loop = EventLoop(VirtualClock(0))
    guard = LivelockGuard(loop, window=100)
    for i in range(1000):
        loop.call_at(float(i), lambda: guard.note("tick", "k"))
    loop.run_until(2000)
    assert guard.detected == 0
    for _ in range(99):
        guard.note("spin", "k")
    with pytest.raises(Livelock, match="spin 'k' ×100"):
        guard.note("spin", "k")


def test_on_the_wall_clock_the_pair_is_logged_and_backed_off(caplog: pytest.LogCaptureFixture) -> None:
    loop = RealtimeLoop()
    store, manager = _cluster(loop)
    caplog.set_level(logging.WARNING, logger="flexq.runtime")
    backed_off = threading.Event()

    def watch() -> None:  # on the loop thread: done once both keys have been backed off a few times
        queues = manager._queues.values()
        if all(q.throttled for q in queues) and all(n >= 4 for q in queues for n, _ in q.throttled.values()):
            calls.append(ping.calls + pong.calls)
            backed_off.set()
        else:
            loop.call_later(0.05, watch)

    t = loop.start_thread("livelock-test")
    try:
        ping, pong = loop.call_sync(lambda: _ping_pong(store, manager))
        calls: list[int] = []
        loop.call_sync(watch)
        assert backed_off.wait(120), "the guard never backed the pair off"
        assert manager.guard.detected >= 1
        warning = next(r for r in caplog.records if "livelock on the wall clock" in r.getMessage())
        text = warning.getMessage()
        assert "ping 'default/b'" in text and "pong 'default/a'" in text
        assert "rate limiter" in text
        # 5 ms, 10, 20, 40 ms...: a handful of reconciles after the window, not thousands more
        assert calls[0] < WINDOW + 100
        assert loop.call_sync(lambda: loop.now()) > 0  # still serving
    finally:
        loop.stop()
        t.join(10)
