"""``Watch.unchanged`` (``runtime.manager``): an event its watch calls unchanged still queues its keys, which keep
their turn in the loop, but a key queued by such events alone is not reconciled when its turn comes. Any other
reason to reconcile the key (another event, a timer, a change written while it was reconciled) must still reach
the reconcile: these tests fail if the skip swallows one."""

from __future__ import annotations

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.loop import EventLoop, Rngs
from flexq.runtime import Context, Controller, Manager, Result, Watch
from flexq.store import Store, clone
from flexq.store.logs import PodLogs
from flexq.store.store import WatchEvent


def _noise_only(ev: WatchEvent) -> bool:
    """Unchanged: an update that moved only ``data.noise``."""
    if ev.type != "MODIFIED" or ev.old is None:
        return False
    a, b = dict(ev.old.get("data") or {}), dict(ev.object.get("data") or {})
    a.pop("noise", None)
    b.pop("noise", None)
    return a == b


class _Reader(Controller):
    """Reads ConfigMaps' ``data.real``; on request writes ``noise`` itself, or asks to be called again."""

    name = "reader"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.calls: list[tuple[float, str | None]] = []
        self.write_noise = False
        self.requeue: float | None = None

    def watches(self) -> list[Watch]:
        return [Watch("ConfigMap", unchanged=_noise_only)]

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        cm = self.store.peek("ConfigMap", key[1], key[0])
        self.calls.append((self.ctx.now(), None if cm is None else (cm.get("data") or {}).get("real")))
        if cm is not None and self.write_noise:
            self.write_noise = False
            new = clone(cm)
            new.setdefault("data", {})["noise"] = str(len(self.calls))
            self.store.update(new)
        return None if self.requeue is None else Result(requeue_after=self.requeue)


def _setup() -> tuple[EventLoop, Store, Manager, _Reader]:
    loop = EventLoop(VirtualClock(0))
    store = Store(default_registry(), loop.clock, namespaces=["default"])
    manager = Manager(Context(store=store, loop=loop, rngs=Rngs(1), logs=PodLogs(None)))
    reader = _Reader(manager.ctx)
    manager.add(reader)
    store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"},
            "data": {"real": "1"},
        }
    )
    loop.run_until(0)
    return loop, store, manager, reader


def _set(store: Store, **data: str) -> None:
    cm = clone(store.peek("ConfigMap", "c", "default"))
    cm["data"] = {**cm.get("data", {}), **data}
    store.update(cm)


def _skipped(manager: Manager) -> int:
    return manager._queues["reader"].skipped


def test_an_unchanged_update_alone_is_skipped_a_read_one_is_not() -> None:
    loop, store, manager, reader = _setup()
    assert [c[1] for c in reader.calls] == ["1"]  # the create
    _set(store, noise="a")
    loop.run_until(1)
    assert [c[1] for c in reader.calls] == ["1"] and _skipped(manager) == 1
    _set(store, real="2")
    loop.run_until(2)
    assert [c[1] for c in reader.calls] == ["1", "2"]


def test_a_key_queued_by_an_unchanged_and_a_read_change_is_reconciled() -> None:
    loop, store, manager, reader = _setup()
    _set(store, noise="a")  # queued idle ...
    _set(store, real="3")  # ... then for a change it reads: reconciled
    loop.run_until(1)
    assert [c[1] for c in reader.calls] == ["1", "3"] and _skipped(manager) == 0
    _set(store, real="4")
    _set(store, noise="b")  # the order does not matter
    loop.run_until(2)
    assert [c[1] for c in reader.calls] == ["1", "3", "4"] and _skipped(manager) == 0


def test_its_own_unchanged_write_is_skipped_but_a_timer_is_not() -> None:
    loop, store, manager, reader = _setup()
    reader.write_noise = True
    _set(store, real="5")
    loop.run_until(1)
    assert [c[1] for c in reader.calls] == ["1", "5"]  # its own noise write: skipped
    assert _skipped(manager) == 1
    loop.run_until(5)
    reader.requeue = 10.0
    _set(store, real="6")
    loop.run_until(6)
    reader.requeue = None
    _set(store, noise="c")  # queued idle while the timer is pending: skipped ...
    loop.run_until(20)
    assert _skipped(manager) == 2
    assert [c[0] for c in reader.calls] == [0, 0, 5, 15]  # ... but the timer's reconcile at 15 still came


def test_a_delete_is_never_unchanged() -> None:
    loop, store, _manager, reader = _setup()
    store.delete("ConfigMap", "c", "default")
    loop.run_until(1)
    assert reader.calls[-1][1] is None
