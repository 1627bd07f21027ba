"""How many writes a tutorial RayJob makes in the whole twin, and what the store alone needs for them.

A lower bound for the speed targets of a week of RayJobs (issue 11: 10,000 in 20 s; issue 14: two variants of
5,000+ in 30 s on 2 cores). It runs ``--jobs`` tutorial-shaped RayJobs through the whole twin exactly as
``bench/week_rayjobs.py`` does, counting every write of every store (its watch events: kind and type), then
times the same mix of writes on a bare ``Store`` — no controller, nothing watching, no journal, every object
already built — and prints:

- writes per RayJob, by kind and type;
- the bare store's cost per create, update, status write and delete (median of ``--reps`` batches);
- the floor: the writes one RayJob makes, at the bare store's prices, times 10,000 RayJobs, next to the targets
  and next to what the whole twin took per RayJob in the same run.

The floor counts nothing but the store's own work (validation, defaulting, resourceVersion, indexes, the
watch event), so the whole twin, whose controllers also read, decide and build each write, cannot go below it.

    .venv/bin/python bench/write_floor.py [--jobs 300] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
import week_rayjobs  # the week benchmark's own setup and traffic
from store_bench import run_ticker  # a controller that only requeues itself, on a fresh twin


def count_study(
    path: str, variant: str | None, until: str | None
) -> tuple[Counter[tuple[str, str]], Counter[str], float, int]:
    """The same counts for one run of a ``flexq simulate`` study (its first variant unless named, replica 0,
    the jobs submitted before ``until``): writes, reconciles, CPU seconds and the number of jobs."""
    from flexq.simulate.engine import Sim
    from flexq.simulate.study import load_study, submit_window

    study = load_study(path)
    if until:
        study.submit_until = submit_window(until)
    v = study.variant(variant) if variant else study.variants[0]
    jobs = study.jobs(study.seed)
    sim = Sim(study, v, 0, jobs)
    counts: Counter[tuple[str, str]] = Counter()
    reconciles: Counter[str] = Counter()
    try:
        sim.setup()
        _observe(sim.twin, counts, reconciles)
        t = time.process_time()
        sim.run(None)
        cpu = time.process_time() - t
    finally:
        sim.twin.close()
    return counts, reconciles, cpu, len(jobs)


def _observe(twin: Any, counts: Counter[tuple[str, str]], reconciles: Counter[str]) -> None:
    """Count every write of every store of ``twin`` and every reconcile of its controllers."""

    def counted(name: str, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def reconcile(key: Any) -> Any:
            reconciles[name] += 1
            return fn(key)

        return reconcile

    for store in (twin.store, twin.core.project):
        store.watch(lambda ev: counts.update([(ev.kind, ev.type)]))
    managers = [twin.core.project_manager, *(c.manager for c in twin.core.clusters.values())]
    for manager in managers:
        for controller in manager.controllers:
            controller.reconcile = counted(controller.name, controller.reconcile)  # type: ignore[method-assign]


def count_writes(jobs: int, seed: int) -> tuple[Counter[tuple[str, str]], Counter[str], float]:
    """Writes by (kind, type) over every store of a week's run of ``jobs`` RayJobs, reconciles by controller
    (each controller's ``reconcile`` wrapped in a counter), and the run's CPU seconds."""
    counts: Counter[tuple[str, str]] = Counter()
    reconciles: Counter[str] = Counter()

    twin, _submitted, _wall, cpu = week_rayjobs.run_week(
        jobs, seed, observe=lambda twin: _observe(twin, counts, reconciles)
    )
    twin.close()
    return counts, reconciles, cpu


def noop_reconcile_cost(days: int = 140) -> float:
    """CPU seconds per reconcile of a controller that does nothing (the manager's work queue and the loop's
    timer, on the virtual clock): the least any reconcile costs."""
    ticker, t = run_ticker(days)
    return t.cpu / max(ticker.runs, 1)


def _pod(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{i}", "namespace": "default", "labels": {"ray.io/node-type": "worker"}},
        "spec": {
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.41.0-py311",
                    "resources": {"requests": {"cpu": "1", "google.com/tpu": "4"}},
                }
            ],
            "nodeSelector": {"cloud.google.com/gke-tpu-topology": "4x4"},
        },
    }


def _event(i: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"p-{i}.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": f"p-{i}", "namespace": "default", "apiVersion": "v1"},
        "reason": "Scheduled",
        "message": f"Successfully assigned default/p-{i} to gke-node-{i}",
        "type": "Normal",
        "source": {"component": "default-scheduler"},
        "count": 1,
    }


def bare_costs(n: int, reps: int) -> dict[str, float]:
    """Median CPU seconds per create / update / status / delete on a bare store (Pods and Events)."""
    got: dict[str, list[float]] = {"create": [], "update": [], "status": [], "delete": []}
    for _ in range(reps):
        store = Store(default_registry(), VirtualClock(), namespaces=["default"])
        bodies = [(_pod(i), _event(i)) for i in range(n)]
        t = time.process_time()
        for pod, ev in bodies:
            store.create(pod)
            store.create(ev)
        got["create"].append((time.process_time() - t) / (2 * n))
        pods = store.list("Pod")
        for p in pods:
            p["metadata"]["labels"]["touched"] = "yes"
        t = time.process_time()
        for p in pods:
            store.update(p)
        got["update"].append((time.process_time() - t) / n)
        pods = store.list("Pod")
        for p in pods:
            p["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        t = time.process_time()
        for p in pods:
            store.update_status(p)
        got["status"].append((time.process_time() - t) / n)
        t = time.process_time()
        for i in range(n):
            store.delete("Event", f"p-{i}.1", "default")
        got["delete"].append((time.process_time() - t) / n)
    return {k: statistics.median(v) for k, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--study", help="count a flexq simulate study's run instead of the week of RayJobs")
    ap.add_argument("--variant", help="with --study: the variant (default: the first)")
    ap.add_argument("--until", help="with --study: only the jobs submitted before this (e.g. 24h)")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    if args.study:
        counts, reconciles, cpu, args.jobs = count_study(args.study, args.variant, args.until)
        what = f"{args.study} ({args.variant or 'first variant'}, submitted before {args.until or 'the end'})"
    else:
        counts, reconciles, cpu = count_writes(args.jobs, args.seed)
        what = "tutorial RayJobs through the whole twin"
    costs = bare_costs(2000, args.reps)
    noop = noop_reconcile_cost()
    per_job = sum(counts.values()) / args.jobs
    print(f"{args.jobs} {what}: {per_job:.1f} writes per job")
    for (kind, typ), c in counts.most_common():
        if c / args.jobs >= 0.1:
            print(f"  {c / args.jobs:6.1f}  {kind} {typ}")
    print(
        "the bare store (no controller, nothing watching, no journal), CPU per write: "
        + ", ".join(f"{k} {v * 1e6:.0f} µs" for k, v in costs.items())
    )
    floor = 0.0
    for (_kind, typ), c in counts.items():
        if typ == "ADDED":
            floor += c * costs["create"]
        elif typ == "DELETED":
            floor += c * costs["delete"]
        else:  # a MODIFIED: priced as the cheaper status write, so the floor is a low one
            floor += c * costs["status"]
    floor /= args.jobs
    per_job_rec = sum(reconciles.values()) / args.jobs
    print(
        f"reconciles per job: {per_job_rec:.1f} ("
        + ", ".join(f"{k} {v / args.jobs:.1f}" for k, v in reconciles.most_common(8))
        + f", ...); a reconcile that does nothing costs {noop * 1e6:.1f} µs"
    )
    floor += per_job_rec * noop
    cheapest = per_job * min(costs.values()) + per_job_rec * noop
    print(
        f"even with every write at the cheapest price measured ({min(costs.values()) * 1e6:.0f} µs, no validation): "
        f"{cheapest * 1e3:.2f} ms per job -> 10,000 RayJobs >= {cheapest * 1e4:.1f} s; 2 x 5,391 on 2 cores >= "
        f"{cheapest * 5391:.1f} s"
    )
    twin_ms = cpu / args.jobs * 1e3
    print(
        f"floor: {floor * 1e3:.2f} ms per job (store writes + empty reconciles) -> 10,000 RayJobs >= {floor * 1e4:.1f} s "
        "[issue 11 target 20 s]; 2 x 5,391 on 2 cores >= "
        f"{floor * 5391:.1f} s [issue 14 target 30 s]"
    )
    print(
        f"the whole twin in this run: {twin_ms:.1f} ms CPU per job ({twin_ms / (floor * 1e3):.1f}x the floor); "
        f"load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
