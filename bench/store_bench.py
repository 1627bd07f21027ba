"""Store and virtual-clock throughput on this machine.

    .venv/bin/python bench/store_bench.py [--n 5000]

Prints creates/s, updates/s, status writes/s, lists/s (in memory and journalled to SQLite), and timers/s
on the virtual clock: bare loop timers, and a controller requeueing itself every simulated minute through the
work queue and manager (acceptance 5's shape). Each figure is given for wall time and for this process's CPU
time (the machine may be shared: CPU time is the steadier of the two).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from flexq.api.kinds import default_registry
from flexq.assembly import TwinCore
from flexq.clock import VirtualClock
from flexq.loop import EventLoop
from flexq.runtime import Controller, Manager, Result
from flexq.store import Journal, Store


def workload(i: int) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"wl-{i}", "namespace": "default", "labels": {"i": str(i % 10)}},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                    },
                }
            ],
        },
    }


def configmap(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"cm-{i}", "namespace": "default", "labels": {"i": str(i % 10)}},
        "data": {"a": "x" * 100},
    }


class Timed:
    """Wall and CPU seconds of a block."""

    def __enter__(self) -> Timed:
        self.t, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.t, time.process_time() - self.c


def rate(n: int, t: Timed) -> str:
    return f"{n / t.wall:>9,.0f}/s ({n / max(t.cpu, 1e-9):,.0f}/s cpu)"


def bench_store(n: int, journal: Journal | None, label: str) -> None:
    store = Store(default_registry(), VirtualClock(), journal=journal, namespaces=["default"])
    with Timed() as t_create:
        for i in range(n):
            store.create(workload(i))
    objs = store.list("Workload")
    with Timed() as t_update:
        for o in objs:
            o["metadata"]["labels"]["touched"] = "yes"
            store.update(o)
    objs = store.list("Workload")
    with Timed() as t_status:
        for o in objs:
            store.update_status(dict(o, status={"conditions": [{"type": "Seen", "status": "True"}]}))
    lists = 50
    with Timed() as t_list:
        for _ in range(lists):
            store.list("Workload", "default", label_selector="i=3")
    print(
        f"[{label}] Workload x {n:,}: create {rate(n, t_create)}  update {rate(n, t_update)}  "
        f"status {rate(n, t_status)}  list(label_selector over {n:,}) {rate(lists, t_list)}"
    )


def bench_timers(n: int) -> None:
    loop = EventLoop(VirtualClock(0))
    count = 0

    def tick() -> None:
        nonlocal count
        count += 1
        if count < n:
            loop.call_later(60, tick)

    loop.call_soon(tick)
    with Timed() as t:
        loop.run_until_idle(10 * 365 * 86400)
    print(f"[loop] {n:,} self-rescheduling timers: {rate(n, t)}  ({n / 1440:,.0f} simulated days)")


class Ticker(Controller):
    """Requeues itself every simulated minute."""

    name = "ticker"
    runs = 0

    def reconcile(self, key: object) -> Result | None:
        self.runs += 1
        return Result(requeue_after=60)


def run_ticker(days: int) -> tuple[Ticker, Timed]:
    """A ``Ticker`` on a fresh twin's manager for ``days`` simulated days: the ticker and the time it took."""
    core = TwinCore()
    core.start()
    ctx = core.current().ctx
    ticker = Ticker(ctx)
    Manager(ctx).add(ticker)
    ticker.enqueue("tick")
    with Timed() as t:
        core.loop.run_until(core.loop.now() + days * 86400)
    return ticker, t


def bench_controller(days: int) -> None:
    ticker, t = run_ticker(days)
    print(
        f"[manager] a controller requeueing itself every simulated minute for {days} days: {ticker.runs:,} "
        f"reconciles in {t.wall:.3f} s wall, {t.cpu:.3f} s cpu: {rate(ticker.runs, t)} "
        f"(target: 7 days in under 2 s wall, foundation issue)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args()
    bench_store(args.n, None, "memory")
    with tempfile.TemporaryDirectory() as d:
        bench_store(min(args.n, 2000), Journal(Path(d) / "state.db"), "sqlite, synchronous=FULL")
    bench_timers(200_000)
    bench_controller(7)


if __name__ == "__main__":
    main()
