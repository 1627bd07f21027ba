"""Running a study's runs (variants x replicas): in this process, one process per core, or over a Ray cluster.

Each run is independent (its own virtual twin, seeded by the study's seed + the replica number), so the
three ways give identical results; only the wall time differs. Processes report progress through a
multiprocessing queue; Ray tasks report when they finish. ``ray`` is imported only when a Ray address is
given (the import-linter contract lets only this module and the local-Ray executor import it).

Must not import flexq.http.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
from collections.abc import Callable
from concurrent.futures import as_completed
from typing import Any

from flexq.errors import InputError, require_extra
from flexq.loop.procpool import process_pool
from flexq.simulate.engine import run_one
from flexq.simulate.run_result import RunResult
from flexq.simulate.study import Study

__all__ = ["run_all", "default_workers"]

Progress = Callable[[dict[str, Any]], None]


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _check_address(address: str) -> None:
    """A ``host:port`` or ``ray://host:port`` that accepts a connection, at once: Ray itself keeps retrying an
    address nobody listens on for minutes. ``auto`` (and other forms) are left to Ray."""
    if address == "auto" or "://" in address and not address.startswith("ray://"):
        return
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"{address!r} is not host:port, ray://host:port or auto", field="--ray-address")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            pass
    except OSError as exc:
        raise InputError(
            f"cannot reach a Ray cluster at {host}:{port}: {exc.strerror or exc}", field="--ray-address"
        ) from None


def _task(study: Study, variant: str, replica: int, q: Any) -> RunResult:
    def progress(p: dict[str, Any]) -> None:
        if q is not None:
            q.put(p)

    return run_one(study, variant, replica, progress)


def run_all(
    study: Study,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> list[RunResult]:
    """Every (variant, replica) run of ``study``, in variant order then replica order."""
    tasks = [(v.name, r) for v in study.variants for r in range(study.replicas)]
    if ray_address:
        results = _run_ray(study, tasks, ray_address, progress)
    else:
        n = min(workers or default_workers(), len(tasks))
        if n <= 1:
            results = [run_one(study, v, r, progress) for v, r in tasks]
        else:
            results = _run_processes(study, tasks, n, progress)
    order = {t: i for i, t in enumerate(tasks)}
    return sorted(results, key=lambda res: order[(res.variant, res.replica)])


def _run_processes(
    study: Study, tasks: list[tuple[str, int]], n: int, progress: Progress | None
) -> list[RunResult]:
    import multiprocessing as mp

    # forkserver: workers fork from a server process that has imported the twin once (fast start, and no
    # threads of this process -- a live progress display, the queue pump -- are inherited)
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["flexq.simulate.engine"])
    manager = ctx.Manager() if progress is not None else None
    q = manager.Queue() if manager is not None else None
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            try:
                item = q.get(timeout=0.1)  # type: ignore[union-attr]
            except queue.Empty:
                continue
            except (EOFError, OSError):
                return
            if progress is not None:
                progress(item)

    pumper = threading.Thread(target=pump, daemon=True) if q is not None else None
    if pumper is not None:
        pumper.start()
    results = []
    try:
        with process_pool(n, ctx) as pool:
            futures = [pool.submit(_task, study, v, r, q) for v, r in tasks]
            for fut in as_completed(futures):
                results.append(fut.result())
    finally:
        stop.set()
        if pumper is not None:
            pumper.join(timeout=2)
        if manager is not None:
            manager.shutdown()
    return results


def _run_ray(
    study: Study, tasks: list[tuple[str, int]], address: str, progress: Progress | None
) -> list[RunResult]:
    _check_address(address)  # before importing ray (seconds)
    require_extra("ray", "flexq simulate on a Ray cluster (--ray-address)")
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise InputError(
                f"cannot join the Ray cluster at {address}: {exc}", field="--ray-address"
            ) from None
    try:
        remote = ray.remote(num_cpus=1)(run_one)
        ref = ray.put(study)
        pending = {remote.remote(ref, v, r): (v, r) for v, r in tasks}
        results = []
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for d in done:
                res = ray.get(d)
                results.append(res)
                pending.pop(d)
                if progress is not None:
                    progress(
                        {
                            "variant": res.variant,
                            "replica": res.replica,
                            "time": res.duration,
                            "horizon": res.duration,
                            "submitted": len(res.jobs),
                            "total": len(res.jobs),
                            "finished": len(res.jobs),
                            "pending": 0,
                            "done": True,
                        }
                    )
        return results
    finally:
        if started_here:
            ray.shutdown()
