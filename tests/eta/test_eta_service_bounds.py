"""The background ETA service's cost is bounded (issue 49; the suite's served twins each run one):

- a twin where nothing waits starts no process for its forecasts (an idle ``flexq up`` costs one interpreter);
- ``stop`` (``flexq down``) abandons a forecast in progress: its process is ended, nothing waits for it;
- after a forecast that took ``T`` seconds the next waits at least ``duty × T``, however often the queue changes.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from flexq import Twin
from flexq.eta import EtaConfig
from flexq.eta.service import EtaService
from tests.eta.helpers import live_tutorial_cluster, rayjob
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_an_idle_twin_starts_no_forecast_process(tmp_path) -> None:
    twin = Twin(clock="real", home=tmp_path / "home", executor="simulated")
    service = EtaService(twin, cfg=EtaConfig(replicas=2, workers=1), period=3600, debounce=0.1).start()
    try:
        wait_for(lambda: service.refreshes >= 1, 60, "the first forecast")
        assert service.error == ""
        assert service.latest() is not None and service.latest().jobs == {}
        assert service._pool is None  # nothing waits: no second interpreter
    finally:
        service.stop()
        twin.close()


def test_stop_abandons_a_forecast_in_progress(tmp_path) -> None:
    twin = Twin(clock="real", home=tmp_path / "home", executor="simulated")
    # far more forward runs than the test lasts: the forecast is still computing when it is stopped
    service = EtaService(
        twin, cfg=EtaConfig(replicas=200_000, workers=1), period=3600, debounce=0.1, budget=None
    )
    try:
        live_tutorial_cluster(twin, jobs=6)
        service.start()

        def computing() -> list[int]:
            pool = service._pool
            return [p.pid for p in (getattr(pool, "_processes", None) or {}).values()] if pool else []

        wait_for(lambda: bool(computing()), 120, "the forecast's process")
        pids = computing()
        time.sleep(3)  # past its start-up, into the forward runs
        assert service.refreshes == 0
        stopped = threading.Event()
        threading.Thread(target=lambda: (service.stop(), stopped.set()), daemon=True).start()
        assert stopped.wait(60), "stop waited for the forecast in progress"
        assert service.refreshes == 0  # abandoned, not finished
        wait_for(lambda: not any(_alive(p) for p in pids), 30, "the forecast's process to end")
    finally:
        service.stop()
        twin.close()


def test_the_next_forecast_waits_as_long_as_the_last_took(tmp_path) -> None:
    twin = Twin(clock="real", home=tmp_path / "home", executor="simulated")
    service = EtaService(
        twin, cfg=EtaConfig(replicas=2, workers=1), period=3600, debounce=0.1, in_process=True
    )
    try:
        service.start()
        live_tutorial_cluster(twin, jobs=0)
        cluster = twin.runtime.name
        wait_for(lambda: service._forecast_cluster == cluster, 60, "a forecast of the new cluster")
        time.sleep(0.5)
        service.last_seconds = 4.0  # as if the last forecast had taken 4 s
        done = service.refreshes
        changed = time.monotonic()
        twin.create(rayjob(1, run=3600))  # the queue changes
        wait_for(lambda: service.refreshes > done, 60, "the next forecast")
        assert time.monotonic() - changed >= 4.0 * 0.9
        fc = service.latest()  # a forecast of the state after the change: the job waits or runs in it
        assert fc is not None and (fc.jobs or fc.running)
    finally:
        service.stop()
        twin.close()
