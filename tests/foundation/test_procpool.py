"""A process pool's workers end with their owner (``flexq.loop.procpool``): the owner killed with SIGKILL (as the
kill -9 soak kills ``flexq up``, whose ETA service computes in a spawned worker), its workers exit within seconds
instead of living on, reparented, forever. Both contexts flexq uses: ``spawn`` (the ETA service) and
``forkserver`` (the simulate fan-out, the ETA's parallel forward runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

OWNER = """
import multiprocessing as mp, os, sys
from flexq.loop.procpool import process_pool

if __name__ == "__main__":
    pool = process_pool(2, mp.get_context(sys.argv[1]))
    pids = {pool.submit(os.getpid).result() for _ in range(8)}
    print(" ".join(map(str, sorted(pids))), flush=True)
    sys.stdin.read()  # until the test kills it
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_workers_exit_when_the_pools_owner_is_killed(tmp_path, method) -> None:
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    owner = subprocess.Popen(
        [sys.executable, str(script), method], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        workers = [int(p) for p in owner.stdout.readline().split()]
        assert workers and all(psutil.pid_exists(p) for p in workers)
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    deadline = time.monotonic() + 15
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [
            p for p in workers if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
    for p in alive:  # leave nothing behind, then fail
        os.kill(p, signal.SIGKILL)
    assert not alive, f"{method} workers outlived their pool's owner: {alive}"
