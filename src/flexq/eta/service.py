"""A live twin's ETAs, kept fresh in the background: ``EtaService``.

The service reads the twin's current cluster the way the ETA reads any cluster (``state_from_twin``, which
hops onto the twin's loop for each list: a read, never a write, and each is a copy of a few hundred objects at
most), then computes in a process of its own (``multiprocessing`` ``spawn``: the twin's loop, its HTTP
threads and Ray's are never forked, and the computation never holds the twin process's interpreter lock) —
every ``period`` seconds, and ``debounce`` seconds after the queue changes (a Workload created, deleted, or
changing state). Nothing here writes to the twin; an API write never waits for it. Its cost is bounded:

- a cluster where no job waits (and at most ``IN_THREAD`` Workloads to fit the model on) is forecast in the
  service's thread: there is nothing to run forward, so an idle twin starts no second interpreter;
- the forward runs stop at ``budget`` wall seconds (60) once ``MIN_REPLICAS`` are done (a deep queue on a
  cluster whose history is long and busy makes each run long: the forecast says on how many runs it stands);
- after a forecast that took ``T`` seconds the next waits at least ``duty × T`` (``duty`` 1.0: the service
  computes at most half the time, however often the queue changes on a busy twin);
- ``stop`` ends a forecast in progress (its process is terminated): ``flexq down`` never waits for one.

It follows the twin's current cluster (``Twin.runtime``: the root one, which moves from the twin's placeholder
to the first GKE cluster once one is created — ``flexq up`` and then ``gcloud container clusters create``, as
the README goes): within ``follow`` seconds of the move it watches that cluster's Workloads, publishes on its
``/metrics`` and computes its forecast, without a restart (issue 49).

What it publishes (``latest``, ``eta_of`` as the dashboard asks through ``flexq.http.seam.Forecasts``, and
``forecast_json``: the forecast as the served twin's ``GET /flexq/eta`` sends it to ``flexq status``, serialised
once per refresh, in the service's thread) is the last ``Forecast``; ``collector`` is its Prometheus face: ``flexq_workload_eta_seconds{namespace,workload,
cluster_queue}`` (the median seconds to start from the forecast's instant; +Inf when not within the horizon or
never), one series per Workload that waits now — a Workload that started or went has no series, whatever the
last forecast said — and ``flexq_eta_forecast_timestamp_seconds``.

    service = EtaService(twin, period=60).start()     # flexq up does this for its twin
    service.latest().find("rayjob-tpu-v6e-dws-2")
    service.stop()
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from flexq.clock import WallClock, format_duration
from flexq.eta.calibration import Calibration
from flexq.eta.estimate import Forecast, estimate, fmt_eta
from flexq.eta.read import state_from_twin
from flexq.forecast.config import EtaConfig
from flexq.forecast.state import ClusterState
from flexq.loop.procpool import process_pool
from flexq.semantics.workloads import FINISHED_STATES, workload_state
from flexq.twin import Twin

__all__ = ["EtaService", "compute", "served_document"]

log = logging.getLogger("flexq.eta")

IN_THREAD = 500  # Workloads (none waiting) up to which the forecast is made in the twin's process


def compute(
    state: dict[str, Any],
    cfg: EtaConfig,
    calibration: dict[str, Any] | None = None,
    budget: float | None = None,
) -> dict[str, Any]:
    """The forecast of a state (in the service's process; plain data in and out), its intervals drawn as the
    online correction ``calibration`` (``Calibration.to_dict``) says; its forward runs within ``budget`` wall
    seconds (fewer replicas past it, never fewer than ``MIN_REPLICAS``: the forecast says how many)."""
    cal = Calibration.from_dict(calibration) if calibration is not None else None
    return estimate(ClusterState.from_dict(state), cfg, calibration=cal, budget=budget).as_dict()


class EtaService:
    """See the module docstring."""

    def __init__(
        self,
        twin: Twin,
        *,
        period: float = 60.0,
        debounce: float = 2.0,
        cfg: EtaConfig | None = None,
        in_process: bool = False,
        follow: float = 1.0,
        duty: float = 1.0,
        budget: float | None = 60.0,
    ) -> None:
        self.twin = twin
        self.period, self.debounce, self.follow, self.duty = period, debounce, follow, duty
        self.budget = budget
        self.last_seconds = 0.0  # the wall time the last refresh took
        self.cfg = cfg or EtaConfig(workers=1)
        self.in_process = in_process  # compute in this process (tests of a virtual twin)
        self._forecast: Forecast | None = None
        self._forecast_cluster = ""  # the cluster the forecast is of
        self._served = b""  # the forecast as GET /flexq/eta sends it (made once per refresh)
        self._cluster = ""  # the cluster followed (its Workloads watched, its metrics registry)
        self._rt: Any = None
        self._collector = _Collector(self)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._sub: Any = None
        self._signature: frozenset[tuple[str, str, str]] = frozenset()
        self.refreshes = 0
        self.error = ""
        # the intervals' online correction: what was predicted and what happened, kept beside the twin's state
        # (``<home>/eta-calibration.json``; in memory for a twin without a home)
        home = getattr(twin.core, "home", None)
        self.calibration_path = Path(home) / "eta-calibration.json" if home else None
        self.calibration = (
            Calibration.load(self.calibration_path) if self.calibration_path is not None else Calibration()
        )

    # -- life ----------------------------------------------------------------------------------------------------
    def start(self, background: bool = True) -> EtaService:
        """Attach to the twin (its ``forecasts``, its metrics, a watch on Workloads) and, with ``background``,
        start refreshing (without: ``refresh()`` when asked; a virtual twin's loop is not for other threads)."""
        self.twin.core.forecasts = self
        self._follow()
        if background:
            self._thread = threading.Thread(target=self._run, name="flexq-eta", daemon=True)
            self._thread.start()
            self._wake.set()
        return self

    def _follow(self) -> bool:
        """Attach to the twin's current cluster when it is not the one followed: watch its Workloads, publish
        on its metrics registry (and leave the previous one's). True when it moved."""
        rt = self.twin.runtime
        if rt is self._rt:
            return False
        old, self._rt = self._rt, rt
        if old is not None:
            with contextlib.suppress(KeyError):
                old.metrics.unregister(self._collector)
            if self._sub is not None:
                self.twin.core.loop.post(self._sub.cancel)
        self._cluster, self._signature = rt.name, frozenset()
        rt.metrics.register(self._collector)

        def subscribe() -> Any:
            return rt.store.watch(self._on_workload, ["Workload"])

        self._sub = self.twin._call(subscribe)
        if old is not None:
            log.info("ETA: following cluster %s (was %s)", rt.name, old.name)
        return True

    def _moved(self) -> bool:
        return self.twin.runtime is not self._rt

    def stop(self) -> None:
        """Stop refreshing; a forecast in progress is abandoned (its process terminated), not waited for."""
        self._stop.set()
        self._wake.set()
        pool, self._pool = self._pool, None
        if pool is not None:
            # ``shutdown`` alone would let the worker finish its forecast, and the interpreter's exit would wait
            # for it (concurrent.futures joins its manager thread): end the worker itself
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                with contextlib.suppress(Exception):
                    proc.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._sub is not None:
            sub = self._sub
            self.twin.core.loop.post(sub.cancel)
        if getattr(self.twin.core, "forecasts", None) is self:
            self.twin.core.forecasts = None

    # -- watching ------------------------------------------------------------------------------------------------
    def _on_workload(self, ev: Any) -> None:
        """On the loop: a Workload created, deleted or changing state wakes the refresher (cheap: a flag)."""
        md = ev.object.get("metadata") or {}
        key = (
            md.get("namespace", ""),
            md.get("name", ""),
            "" if ev.type == "DELETED" else workload_state(ev.object),
        )
        if key not in self._signature:
            self._signature = frozenset({*(k for k in self._signature if k[:2] != key[:2]), key})
            self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            waited = 0.0  # until the period ends, the queue changes, or the current cluster is another
            while waited < self.period and not self._moved():
                tick = min(self.follow, self.period - waited)
                if self._wake.wait(tick):
                    break
                waited += tick
            if self._stop.is_set():
                return
            # let a burst of changes settle; and after a long forecast, as long again (at most half the time)
            if self._stop.wait(max(self.debounce, self.duty * self.last_seconds)):
                return
            self._wake.clear()
            try:
                self.refresh()
            except Exception as exc:  # the twin goes on; the error is kept and logged
                if self._stop.is_set():
                    return  # a forecast ended by ``stop``
                self.error = f"{type(exc).__name__}: {exc}"
                log.warning("ETA refresh failed: %s", self.error)

    def refresh(self) -> Forecast:
        """Read the state and compute its forecast now (the background thread calls this)."""
        t0 = WallClock().now()
        self._follow()
        cluster = self._cluster
        state = state_from_twin(self.twin)
        self.calibration.observe(state.workloads, state.now)  # the starts since the last forecasts
        cal = self.calibration.to_dict()
        if self.in_process or (len(state.workloads) <= IN_THREAD and not _waiting(state)):
            data = compute(state.to_dict(), self.cfg, cal, self.budget)
        else:
            if self._stop.is_set():
                raise RuntimeError("the ETA service is stopping")
            if self._pool is None:
                import multiprocessing as mp

                self._pool = process_pool(1, mp.get_context("spawn"))
            data = self._pool.submit(compute, state.to_dict(), self.cfg, cal, self.budget).result()
        fc = Forecast.from_dict(data)
        self.calibration.record(fc.predictions())
        self.calibration.memory.watch(state, fc.stockouts)  # stock-outs that ended since the last look
        if self.calibration_path is not None:
            try:
                self.calibration.save(self.calibration_path)
            except OSError as exc:
                log.warning("ETA calibration not kept: %s", exc)
        served = served_document(fc, cluster)
        self._forecast, self._forecast_cluster, self._served = fc, cluster, served
        self.refreshes += 1
        self.error = ""
        self.last_seconds = WallClock().now() - t0
        return fc

    # -- what it publishes -----------------------------------------------------------------------------------------
    def latest(self) -> Forecast | None:
        """The last forecast of the cluster followed (None before its first)."""
        return self._forecast if self._forecast_cluster == self._cluster else None

    def forecast_json(self, cluster: str) -> bytes | None:
        """The last forecast of ``cluster`` as ``GET /flexq/eta`` sends it (``served_document``); None when there
        is none yet (the service follows another cluster, or has not finished its first forecast)."""
        if cluster != self._cluster or self.latest() is None:
            return None
        return self._served

    def eta_of(self, cluster: str, namespace: str, workload: str) -> dict[str, Any] | None:
        """What the dashboard shows of one Workload's ETA (None when there is none)."""
        fc = self.latest()
        if fc is None or cluster != self._cluster:
            return None
        j = fc.jobs.get(f"{namespace}/{workload}")
        if j is None:
            return None
        return {
            "text": fmt_eta(j, fc.horizon),
            "median": j.median,
            "low": j.low,
            "high": j.high,
            "plan": j.plan,
            "waitsFor": j.waits_for,
            "interval": j.interval,
            "cannot": j.cannot,
            "reasoning": list(j.reasoning),
            "model": list(fc.model),
            "replicas": fc.replicas,
            "horizon": format_duration(fc.horizon),
        }


def _waiting(state: ClusterState) -> bool:
    """Whether a Workload of ``state`` waits (neither finished nor running): only then is there a forward run
    worth a process of its own."""
    for wl in state.workloads:
        phase = workload_state(wl)
        if phase not in FINISHED_STATES and phase != "Running":
            return True
    return False


def served_document(fc: Forecast, cluster: str) -> bytes:
    """What ``GET /flexq/eta`` sends: the forecast's instant, horizon, replicas and engine, and per waiting
    Workload its ETA as data (``JobEta`` without the reasoning, which ``flexq eta JOB`` gives) and as the words
    the dashboard shows (``text``: ``fmt_eta``), all counted from the forecast's instant ``now``."""
    jobs = {}
    for key, j in fc.jobs.items():
        d = j.as_dict()
        del d["reasoning"]
        d["text"] = fmt_eta(j, fc.horizon)
        jobs[key] = d
    doc = {
        "cluster": cluster,
        "now": fc.now,
        "horizon": fc.horizon,
        "replicas": fc.replicas,
        "engine": fc.engine,
        "seconds": fc.seconds,
        "jobs": jobs,
    }
    return orjson.dumps(doc)


class _Collector:
    """``flexq_workload_eta_seconds``: one series per waiting Workload (collected on the loop thread)."""

    def __init__(self, service: EtaService) -> None:
        self.service = service

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        fc = self.service.latest()
        g = GaugeMetricFamily(
            "flexq_workload_eta_seconds",
            "Seconds from the last forecast to a waiting Workload's expected start (the median over the ETA's "
            "forward runs; +Inf: not within the horizon, or nothing can run it)",
            labels=["namespace", "workload", "cluster_queue"],
        )
        ts = GaugeMetricFamily(
            "flexq_eta_forecast_timestamp_seconds", "When the ETAs were last computed (the state's instant)"
        )
        if fc is not None:
            ts.add_metric([], fc.now)
            store = self.service._rt.store
            for key, j in fc.jobs.items():
                wl = store.peek("Workload", j.workload, j.namespace)
                if wl is None or workload_state(wl) in FINISHED_STATES or workload_state(wl) == "Running":
                    continue  # started or gone: no series
                cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
                value = float("inf") if j.cannot or j.median is None else j.median
                g.add_metric([j.namespace, j.workload, cq], value)
                del key
        yield g
        yield ts
