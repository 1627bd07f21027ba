"""Process pools whose workers end with the process that started them.

A ``ProcessPoolExecutor`` worker blocks on its call queue, whose pipe it holds both ends of: when the process that
owns the pool is killed (``kill -9``, the OOM killer), the worker never sees the end of the pipe and lives on,
reparented, forever (the ``flexq up`` daemon's ETA worker: one more 40-70 MB process per kill). A ``forkserver``
pool's workers keep the fork server alive too (each holds its "alive" pipe). Each worker here watches the pool's
owner once a second and exits when it is gone."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext
from pathlib import Path

__all__ = ["process_pool"]

WATCH_SECONDS = 1.0


def process_pool(
    max_workers: int,
    mp_context: BaseContext,
    setup: Callable[..., None] | None = None,
    setup_args: tuple = (),
) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` whose workers exit within ``WATCH_SECONDS`` of its owner's end (this process).
    ``setup(*setup_args)`` runs once in each worker as it starts (what every task shares, sent once per worker)."""
    owner = os.getpid()
    return ProcessPoolExecutor(
        max_workers=max_workers,
        mp_context=mp_context,
        initializer=_start_worker,
        initargs=(owner, _started(owner), setup, setup_args),
    )


def _start_worker(owner: int, started: str | None, setup: Callable[..., None] | None, args: tuple) -> None:
    _watch_owner(owner, started)
    if setup is not None:
        setup(*args)


def _started(pid: int) -> str | None:
    """The process's start time (``/proc/PID/stat``'s 22nd field: tells a reused pid apart), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return started is None or _started(pid) == started


def _watch_owner(owner: int, started: str | None) -> None:
    if not _alive(owner, started):  # orphaned before it started
        os._exit(0)
    tick = threading.Event()

    def watch() -> None:
        while _alive(owner, started):
            tick.wait(WATCH_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="flexq-owner-watch", daemon=True).start()
