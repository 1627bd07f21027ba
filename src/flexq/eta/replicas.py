"""The fast engine's replicas of one forecast: run here, or shared with other processes when they are long.

Owns ``run_replicas(world, cfg, deadline)`` -> one result per replica, in replica order. Replica ``r`` draws from
its own seed (``replica_seed``), so where it runs changes nothing it says. Most forecasts take milliseconds and run
here, one replica after the other. A deep queue's replicas take seconds each (100 jobs retrying behind a full DWS
pool: about 10,000 scheduling ticks per replica), so when the rest would take ``PARALLEL_AFTER_SECONDS`` at the
first one's pace, they are handed to ``cfg.workers`` other processes (None: one per core; this one waits): each
takes the next as it is free. Past ``deadline`` (wall clock) no replica is started once ``MIN_REPLICAS`` are done.
When the other processes cannot run (a user's script without ``if __name__ == "__main__":`` is run again by each
and multiprocessing refuses them), the replicas left run here: the same answer, later.
(Running the first here beside them was tried: three processes on two cores and the longest replica last gave the
same wall time, for a thread more.)
"""

from __future__ import annotations

import logging
import os
import random
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from flexq.clock import WallClock
from flexq.forecast import fast
from flexq.forecast.config import EtaConfig
from flexq.loop.procpool import process_pool

__all__ = ["MIN_REPLICAS", "PARALLEL_AFTER_SECONDS", "replica_seed", "run_replicas", "workers_of"]

# the fewest forward runs an ETA stands on, whatever its time budget (9: the fewest that bound an 80 % interval)
MIN_REPLICAS = 9
# the replicas are shared with other processes when the rest would take this long here (a pool starts in about
# half a second)
PARALLEL_AFTER_SECONDS = 2.0

Result = dict[str, dict[str, Any]]
log = logging.getLogger("flexq.eta")


def replica_seed(cfg: EtaConfig, r: int) -> str:
    return f"flexq-eta:{cfg.seed}:{r}"


def run_one(world: Any, seed: str) -> Result:
    """One replica: its rows by job key."""
    return {row.pop("key"): row for row in fast.run(world, random.Random(seed))}


_installed: list[Any] = []  # in a sharing process: the world its replicas run


def _install(world: Any) -> None:
    _installed[:] = [world]


def _run_installed(seed: str) -> Result:
    return run_one(_installed[0], seed)


def workers_of(cfg: EtaConfig) -> int:
    """The processes ``cfg`` allows (None: one per core this process may use)."""
    if cfg.workers is not None:
        return max(1, cfg.workers)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def run_replicas(world: Any, cfg: EtaConfig, deadline: float | None) -> list[Result]:
    """All of ``cfg.replicas``, fewer when ``deadline`` comes first — at least ``MIN_REPLICAS`` (see the module
    docstring)."""
    clock = WallClock()
    t0 = clock.now()
    done = {0: run_one(world, replica_seed(cfg, 0))}
    workers = min(workers_of(cfg), cfg.replicas - 1)
    if workers > 1 and (clock.now() - t0) * (cfg.replicas - 1) >= PARALLEL_AFTER_SECONDS:
        shared = _Shared(world, cfg, workers)
        try:
            shared.start()
            shared.collect(done, deadline)
        except BrokenProcessPool:
            # the other processes could not run (a script without ``if __name__ == "__main__":`` is run again
            # by each of them and refused by multiprocessing; a process killed): the rest run here
            log.warning("the forecast's other processes failed; its remaining forward runs run in this one")
        finally:
            shared.close()
    for r in range(1, cfg.replicas):
        if r in done:
            continue
        if deadline is not None and len(done) >= MIN_REPLICAS and clock.now() > deadline:
            break
        done[r] = run_one(world, replica_seed(cfg, r))
    return [done[r] for r in sorted(done)]


class _Shared:
    """Replicas 1.. on ``workers`` other processes, each taking the next as it is free."""

    def __init__(self, world: Any, cfg: EtaConfig, workers: int) -> None:
        self.world, self.cfg, self.workers = world, cfg, workers
        self.pool: ProcessPoolExecutor | None = None
        self.running: dict[Future, int] = {}

    def start(self) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["flexq.eta.replicas"])
        # the world is sent once per process, not once per replica
        self.pool = process_pool(self.workers, ctx, _install, (self.world,))
        for r in range(1, self.cfg.replicas):
            self.running[self.pool.submit(_run_installed, replica_seed(self.cfg, r))] = r

    def collect(self, done: dict[int, Result], deadline: float | None) -> None:
        """Wait for the replicas handed out; past ``deadline``, once ``MIN_REPLICAS`` are done, those not started
        are dropped and those started are waited for."""
        clock = WallClock()
        while self.running:
            # past the deadline with fewer than MIN_REPLICAS done: wait for the next to end (no spinning)
            timeout = None if deadline is None or clock.now() > deadline else deadline - clock.now()
            finished, _ = wait(self.running, timeout=timeout, return_when=FIRST_COMPLETED)
            for f in finished:
                r = self.running.pop(f)
                if not f.cancelled():
                    done[r] = f.result()
            if deadline is not None and clock.now() > deadline and len(done) >= MIN_REPLICAS:
                for f in list(self.running):
                    if f.cancel():
                        self.running.pop(f)
                deadline = None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
