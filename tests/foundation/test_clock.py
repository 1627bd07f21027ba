"""Controllers on the virtual clock: seven simulated days in well under two seconds."""

from __future__ import annotations

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
            self.store.update(cm)
        return Result(requeue_after=60)


def test_seven_days_of_minutely_requeues() -> None:
    """Every minute of seven simulated days runs the controller once. How fast (the issue's target: under two
    seconds of wall time) is measured by ``bench/store_bench.py``, not asserted here."""
    core = TwinCore()
    core.start()
    ticker = Ticker(core.current().ctx)
    core.current().manager.add(ticker)
    core.current().store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ticks", "namespace": "default"}}
    )
    start = core.loop.now()
    core.loop.run_until(start + 7 * 86400)
    assert ticker.runs >= 7 * 24 * 60  # plus one per hourly write its watch sees
    assert core.loop.now() == start + 7 * 86400


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


class Recorder(Controller):
    """Records (virtual time, key) of every reconcile; asks for a requeue when told to."""

    name = "recorder"

    def __init__(self, ctx: Context, requeue: dict | None = None) -> None:
        super().__init__(ctx)
        self.calls: list[tuple[float, object]] = []
        self.requeue = requeue or {}
        self.during: list[object] = []

    def watches(self) -> list[Watch]:
        return [Watch("ConfigMap")]

    def reconcile(self, key: object) -> Result | None:
        self.calls.append((self.ctx.now(), key))
        while self.during:
            self.enqueue(self.during.pop())
        after = self.requeue.pop(key, None)
        return Result(requeue_after=after) if after else None


def _recorder(**kw: object) -> tuple[TwinCore, Recorder]:
    core = TwinCore()
    core.start()
    rec = Recorder(core.current().ctx, **kw)  # type: ignore[arg-type]
    Manager(core.current().ctx).add(rec)
    return core, rec


def test_work_queue_deduplicates_keys_waiting_to_be_processed() -> None:
    core, rec = _recorder()
    t0 = core.loop.now()
    for key in ["a", "b", "a", "a", "b", "c"]:
        rec.enqueue(key)
    core.loop.run_until_idle(60)
    assert rec.calls == [(t0, "a"), (t0, "b"), (t0, "c")]


def test_a_key_added_while_it_is_processed_runs_once_more() -> None:
    core, rec = _recorder()
    rec.during = ["a", "a"]
    rec.enqueue("a")
    core.loop.run_until_idle(60)
    assert [k for _, k in rec.calls] == ["a", "a"]


def test_requeue_after_keeps_the_earliest_timer_per_key() -> None:
    core, rec = _recorder()
    t0 = core.loop.now()
    rec.enqueue_after("a", 60)
    rec.enqueue_after("a", 10)
    rec.enqueue_after("a", 30)  # later than the pending one: ignored
    rec.enqueue_after("b", 5)
    core.loop.run_until_idle(3600)
    assert rec.calls == [(t0 + 5, "b"), (t0 + 10, "a")]
    rec2_core, rec2 = _recorder(requeue={"x": 90})
    s = rec2_core.loop.now()
    rec2.enqueue("x")
    rec2_core.loop.run_until_idle(3600)
    assert rec2.calls == [(s, "x"), (s + 90, "x")]


def test_watch_events_wake_the_controller_with_the_object_key() -> None:
    core, rec = _recorder()
    store = core.current().store
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}})
    store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
                }
            },
        }
    )
    core.loop.run_until_idle(60)
    assert [k for _, k in rec.calls] == [("default", "c")]


def test_retry_backoff_doubles_up_to_the_cap_and_resets_after_a_success() -> None:
    core = TwinCore()
    core.start()
    ctx = core.current().ctx

    class Failing(Controller):
        name = "failing"
        fail_until = 25

        def __init__(self, c: Context) -> None:
            super().__init__(c)
            self.calls: list[float] = []

        def reconcile(self, key: object) -> Result | None:
            self.calls.append(self.ctx.now())
            if len(self.calls) <= self.fail_until or len(self.calls) == self.fail_until + 2:
                raise RuntimeError("boom")
            return None

    f = Failing(ctx)
    Manager(ctx).add(f)
    f.enqueue("k")
    core.loop.run_until_idle(86400)
    gaps = [round(b - a, 3) for a, b in zip(f.calls, f.calls[1:], strict=False)]
    assert gaps[:3] == [0.005, 0.01, 0.02]
    assert max(gaps) == 1000.0  # client-go's default per-item limiter: 5 ms doubling, capped at 1000 s
    assert len(f.calls) == 26  # the 26th succeeded; nothing more is queued
    f.enqueue("k")  # fails once more: the backoff starts again at 5 ms
    core.loop.run_until_idle(86400)
    assert round(f.calls[-1] - f.calls[-2], 3) == 0.005 and len(f.calls) == 28
