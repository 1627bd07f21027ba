"""Controllers on the virtual clock: seven simulated days in well under two seconds."""

from __future__ import annotations

import time

from flexq.assembly import TwinCore
from flexq.clock import VirtualClock
from flexq.loop import EventLoop
from flexq.runtime import Context, Controller, Manager, Result, Watch


class Ticker(Controller):
    """Requeues itself every simulated minute and counts its runs in a ConfigMap."""

    name = "ticker"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.runs = 0

    def watches(self) -> list[Watch]:
        return [Watch("ConfigMap", lambda ev: ["tick"] if ev.object["metadata"]["name"] == "ticks" else [])]

    def reconcile(self, key: object) -> Result | None:
        self.runs += 1
        if self.runs % 60 == 0:  # write hourly, so the store is part of the loop too
            cm = self.store.get("ConfigMap", "ticks", "default")
            cm["data"] = {"runs": str(self.runs)}
            self.store.update(cm, validate=False)
        return Result(requeue_after=60)


def test_seven_days_of_minutely_requeues_in_under_two_seconds() -> None:
    core = TwinCore()
    core.start()
    ticker = Ticker(core.current().ctx)
    core.current().manager.add(ticker)
    core.current().store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ticks",
                                                                                      "namespace": "default"}})
    start = core.loop.now()
    t0 = time.perf_counter()
    core.loop.run_until(start + 7 * 86400)
    wall = time.perf_counter() - t0
    assert ticker.runs >= 7 * 24 * 60
    assert core.loop.now() == start + 7 * 86400
    assert wall < 2.0, f"7 simulated days took {wall:.2f}s"


def test_loop_orders_by_time_then_sequence() -> None:
    loop = EventLoop(VirtualClock(0))
    seen: list[str] = []
    loop.call_at(5, lambda: seen.append("b"))
    loop.call_at(5, lambda: seen.append("c"))
    loop.call_at(1, lambda: seen.append("a"))
    loop.call_later(10, lambda: seen.append("d"))
    loop.run_until(7)
    assert seen == ["a", "b", "c"] and loop.now() == 7
    loop.run_until_idle(100)
    assert seen[-1] == "d" and loop.now() == 10


def test_failed_reconcile_is_retried_with_backoff() -> None:
    loop = EventLoop(VirtualClock(0))
    core = TwinCore()
    core.start()
    ctx = core.current().ctx

    class Flaky(Controller):
        name = "flaky"
        calls: list[float] = []

        def reconcile(self, key: object) -> Result | None:
            self.calls.append(self.ctx.now())
            if len(self.calls) < 4:
                raise RuntimeError("boom")
            return None

    mgr = Manager(ctx)
    flaky = Flaky(ctx)
    mgr.add(flaky)
    flaky.enqueue("k")
    core.loop.run_until_idle(60)
    gaps = [round(b - a, 3) for a, b in zip(flaky.calls, flaky.calls[1:], strict=False)]
    assert len(flaky.calls) == 4 and gaps == [0.005, 0.01, 0.02]
    del loop
