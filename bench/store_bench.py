"""Store and virtual-clock throughput on this machine.

    .venv/bin/python bench/store_bench.py [--n 5000]

Prints creates/s, updates/s, status writes/s, lists/s (in memory and journalled to SQLite), and timers/s
on the virtual clock (a controller requeueing itself, through the work queue and manager).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.loop import EventLoop
from flexq.store import Journal, Store


def workload(i: int) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"wl-{i}", "namespace": "default", "labels": {"i": str(i % 10)}},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def configmap(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "default",
                                                                  "labels": {"i": str(i % 10)}},
            "data": {"a": "x" * 100}}


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:>10,.0f}/s"


def bench_store(n: int, journal: Journal | None, label: str) -> None:
    store = Store(default_registry(), VirtualClock(), journal=journal, namespaces=["default"])
    kind_obj = workload
    try:
        store.create(kind_obj(0))
    except Exception:  # Kueue models not registered in this build
        kind_obj = configmap
        store.create(kind_obj(0))
    t = time.perf_counter()
    for i in range(1, n):
        store.create(kind_obj(i))
    t_create = time.perf_counter() - t
    kind = kind_obj(0)["kind"]
    objs = store.list(kind)
    t = time.perf_counter()
    updated = []
    for o in objs:
        o["metadata"]["labels"]["touched"] = "yes"
        updated.append(store.update(o))
    objs = updated
    t_update = time.perf_counter() - t
    t = time.perf_counter()
    for o in objs:
        store.update_status(dict(o, status={"conditions": [{"type": "Seen", "status": "True"}]}))
    t_status = time.perf_counter() - t
    lists = 50
    t = time.perf_counter()
    for _ in range(lists):
        store.list(kind, "default", label_selector="i=3")
    t_list = time.perf_counter() - t
    print(f"[{label}] {kind} x {n}: create {rate(n, t_create)}  update {rate(n, t_update)}  "
          f"status {rate(n, t_status)}  list(label_selector, {n} objects) {rate(lists, t_list)}")


def bench_timers(n: int) -> None:
    loop = EventLoop(VirtualClock(0))
    count = 0

    def tick() -> None:
        nonlocal count
        count += 1
        if count < n:
            loop.call_later(60, tick)

    loop.call_soon(tick)
    t = time.perf_counter()
    loop.run_until_idle(10 * 365 * 86400)
    dt = time.perf_counter() - t
    print(f"[loop] {n:,} self-rescheduling timers: {rate(n, dt)}  ({n / 1440:,.0f} simulated days)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args()
    bench_store(args.n, None, "memory")
    with tempfile.TemporaryDirectory() as d:
        bench_store(min(args.n, 2000), Journal(Path(d) / "state.db"), "sqlite, synchronous=FULL")
    bench_timers(200_000)


if __name__ == "__main__":
    main()
