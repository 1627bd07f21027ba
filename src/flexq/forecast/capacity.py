"""The GKE half of one forward run's replica: node pools' nodes and DWS requests, as GKE's autoscaler makes them.

Owns ``CapacityRun``, the part of ``flexq.forecast.fast``'s replica that answers "when are this job's nodes
there": how many nodes an admitted job's accelerator pod sets take (whole slices, ``node_need``); idle nodes taken
first, else made in the pool's provisioning time — unless the pool is at its maximum (the job waits for room,
``wake_room``) or its machines are stocked out (the autoscaler's back-off after a refusal delays the first try
after it ends; a pool consuming a specific reservation never stocks out); nodes a job leaves stay ``SCALE_DOWN_UNNEEDED_SECONDS`` (``idle_node``); and DWS: a
ProvisioningRequest fails ``NodepoolSizeReached`` at creation when its pool cannot grow by its slices, retries
after the check's back-off or is deactivated past its limit, is granted after a wait drawn from the model, looks
again ``GRANT_RETRY_SECONDS`` after a grant that finds its pool full, and fails past ``DWS_MAX_WAIT_SECONDS``.
The queueing half (Kueue's queues and cycle, evictions, the event loop) is ``flexq.forecast.fast``'s, which
provides the events (``at``), the wait buckets (``move``), Kueue's evictions and the checks a job needs.
Pure: no clock, no store.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from flexq.api import gke_catalog as catalog
from flexq.clock import parse_time_or_none
from flexq.forecast.model import FittedCapacity
from flexq.forecast.world import Check, Pool, World, WorldJob
from flexq.gke.timing import (
    DWS_MAX_WAIT_SECONDS,
    FAILED_SCALE_UP_BACKOFF_SECONDS,
    GRANT_RETRY_SECONDS,
    SCALE_DOWN_UNNEEDED_SECONDS,
)
from flexq.kueue.checks import retry_strategy
from flexq.kueue.snapshot import Snapshot
from flexq.kueue.workload import WorkloadInfo, admission_checks_for, backoff_seconds

__all__ = ["CapacityRun"]


class CapacityRun:
    """The nodes and DWS requests of one replica (mixed into ``flexq.forecast.fast``'s run, which sets the
    state below in its ``__init__`` and ``setup``)."""

    world: World
    model: FittedCapacity
    t: float  # the run's virtual instant
    snap: Snapshot  # the quota: each ClusterQueue's checks and flavors
    size: dict[str, int]  # pool -> nodes now (busy, idle, coming)
    idle: dict[str, list[float]]  # pool -> its idle nodes: when each goes
    making: dict[str, list[float]]  # pool -> creation times of its nodes being made at the instant, unclaimed
    room_waiters: dict[str, list[WorldJob]]  # pool -> the jobs waiting for room in it
    # (machine type, provisioning model) -> its stock-outs (start, end), in order
    stock_windows: dict[tuple[str, str], list[tuple[float, float]]]

    # what the queueing half provides ------------------------------------------------------------------------------
    def at(self, when: float, kind: str, job: WorldJob | None = None, arrival: int = -1) -> None:
        raise NotImplementedError

    def move(self, job: WorldJob, bucket: str) -> None:
        raise NotImplementedError

    def evict(self, job: WorldJob, reason: str, requeue_after: float) -> None:
        raise NotImplementedError

    def deactivate(self, job: WorldJob, cause: str) -> None:
        raise NotImplementedError

    def checks_of(self, job: WorldJob) -> list[Check]:
        raise NotImplementedError

    def capacity_handlers(self) -> dict[str, Callable[[WorldJob | None], None]]:
        """The events this half answers, by kind."""
        return {
            "pr-create": self._on_pr_create,
            "pr-grant": self._on_pr_grant,
            "retry-evict": self._on_retry_evict,
            "scale-down": self._on_scale_down,
        }

    def idle_node(self, pool: str) -> None:
        when = self.t + SCALE_DOWN_UNNEEDED_SECONDS
        self.idle[pool].append(when)
        self.at(when, "scale-down")
        self.wake_room(pool)

    # nodes ---------------------------------------------------------------------------------------------------
    def node_need(self, info: WorkloadInfo) -> dict[str, int]:
        """Pool -> nodes the job's accelerator pod sets take (whole slices)."""
        out: dict[str, int] = {}
        for ps in info.total_requests:
            for f in set(ps.flavors.values()):
                pool = self.world.pools.get(self.world.flavor_pool.get(f, ""))
                if pool is None or not pool.chips:
                    continue
                per_pod = max(
                    (q for r, q in ps.requests.items() if r in (catalog.RESOURCE_TPU, catalog.RESOURCE_GPU)),
                    default=0,
                ) / max(1, ps.count)
                if per_pod <= 0:
                    continue
                per_node = max(1, int(pool.chips // per_pod))
                nodes = -(-ps.count // per_node)
                nodes = -(-nodes // pool.hosts) * pool.hosts
                out[pool.name] = out.get(pool.name, 0) + nodes
        return out

    def _take_idle(self, pool: str, n: int) -> int:
        """Idle nodes of ``pool`` a job takes at once (up to ``n``); the rest must be made."""
        idle = sorted(t for t in self.idle[pool] if t > self.t)
        took = min(n, len(idle))
        self.idle[pool] = idle[took:]
        return took

    def nodes_for(self, job: WorldJob, since: float | None = None) -> None:
        """Admitted (no check left, ``since``: when): its pods need nodes. A job admitted before the instant has
        had its nodes in the making since its admission (the autoscaler asked at once; the nodes it takes at
        the instant may be those), unless a stock-out holds them."""
        assert job.info is not None
        need = self.node_need(job.info)
        job.nodes = {}
        ready = self.t
        for p, n in need.items():
            pool = self.world.pools[p]
            took = self._take_idle(p, n) if not pool.queued else 0
            make = n - took
            if make and self.size[p] + make > pool.max_nodes:
                if took:
                    self.idle[p].extend([self.t + SCALE_DOWN_UNNEEDED_SECONDS] * took)
                self.move(job, "poolMax")
                self.room_waiters[p].append(job)
                return
            job.nodes[p] = n
            if took and since is not None and since < self.t:  # nodes that may still be in the making
                ready = max(ready, since + self._provision(pool.machine_type, took, job.rng))
            if make:
                self.size[p] += make
                end = self.stocked_until(pool)
                start = self.t if since is None else min(self.t, since)
                if end > self.t and not pool.queued and not pool.reserved:  # a reservation never stocks out
                    self.move(job, "stockout")
                    start = end + job.rng.uniform(0.0, FAILED_SCALE_UP_BACKOFF_SECONDS)
                ready = max(ready, self.t, start + self._provision(pool.machine_type, make, job.rng))
        if ready > self.t and job.bucket != "stockout":
            self.move(job, "scaleUp")
        job.nodes_ready = ready
        self.at(ready + self.model.draw_pod_start(job.rng), "start", job)

    def stocked_until(self, pool: Pool) -> float:
        """When the stock-out of ``pool``'s capacity (its machine type, under its provisioning model) going on now
        ends (0: none now)."""
        for start, end in self.stock_windows.get((pool.machine_type, pool.model), ()):
            if start <= self.t < end:
                return end
            if start > self.t:
                break
        return 0.0

    def _provision(self, machine_type: str, n: int, rng: random.Random) -> float:
        lo, hi = self.model.provision_range(machine_type)
        return max(rng.uniform(lo, hi) for _ in range(max(1, n)))

    def wake_room(self, pool: str) -> None:
        waiters, self.room_waiters[pool] = self.room_waiters[pool], []
        for job in waiters:
            if job.role == "reserved" and job.info is not None:
                self.nodes_for(job)

    def _on_scale_down(self, _job: WorldJob | None) -> None:
        for p in self.idle:
            gone = [x for x in self.idle[p] if x <= self.t]
            if gone:
                self.idle[p] = [x for x in self.idle[p] if x > self.t]
                self.size[p] -= len(gone)
                self.wake_room(p)

    # DWS -------------------------------------------------------------------------------------------------------
    def dws_pool(self, job: WorldJob) -> tuple[Pool | None, int]:
        assert job.info is not None
        for p, n in self.node_need(job.info).items():
            if self.world.pools[p].queued:
                return self.world.pools[p], n
        return None, 0

    def _on_pr_create(self, job: WorldJob | None) -> None:
        assert job is not None
        if job.info is None or job.role != "reserved":
            return
        pool, n = self.dws_pool(job)
        job.attempt += 1
        if pool is None:  # no queued pool behind the flavor: the request is answered as GKE would not
            self._pr_failed(job, "NoQueuedNodepoolAvailable")
            return
        if self.size[pool.name] + n > pool.max_nodes:
            self._pr_failed(job, "NodepoolSizeReached")
            return
        job.pr_since = self.t
        self.at(self.t + self.model.draw_dws(0.0, job.rng, pool.machine_type), "pr-grant", job)

    def _pr_failed(self, job: WorldJob, reason: str) -> None:
        """The check goes to Retry (or Rejected past ``backoffLimitCount``: the job is deactivated). From 0.20.7
        the job is evicted at once and waits out the back-off without quota; before, it keeps its quota through
        the back-off and is evicted when it ends (then queued at once)."""
        job.pr_failures[reason] = job.pr_failures.get(reason, 0) + 1
        chk = next((c for c in self.checks_of(job) if c.kind == "dws"), None)
        rs = chk.retry if chk is not None else retry_strategy(None)
        if job.attempt > rs.limit:
            self.deactivate(job, f"ProvisioningRequest {reason}")
            return
        wait = backoff_seconds(rs.base, rs.cap, job.attempt)
        if self.world.version.retry_evicts_at_once:
            self.evict(job, "AdmissionCheck", wait)
        else:
            self.move(job, "dws")
            self.at(self.t + wait, "retry-evict", job)

    def unreserved_attempt(self, job: WorldJob) -> int:
        """Its request attempts after a wait without quota. Kueue's workload controller syncs the checks of a
        Workload without quota to those that apply before a reservation (``AdmissionChecksForWorkload``: only
        checks on every flavor); a check on some flavors (``admissionChecksStrategy.onFlavors``, the tutorial's
        DWS check) is dropped with its ``retryCount`` unless the job got quota again at the instant its back-off
        ended, and its next request is attempt 1 again, its back-off the first."""
        cq = self.snap.cq(job.cq)
        if cq is None:
            return job.attempt
        kept = admission_checks_for(cq.admission_checks, cq.all_flavors, None)
        dws = [c for c in self.checks_of(job) if c.kind == "dws"]
        return job.attempt if all(c.name in kept for c in dws) else 0

    def resume_failed(self, job: WorldJob, check: dict, requeue_at: float | None) -> None:
        """A job holding quota at the instant whose DWS request failed (its check in Retry or Rejected): Rejected,
        it is deactivated; in Retry it waits out the back-off the state shows (``requeueState.requeueAt``, else
        the check's ``requeueAfterSeconds`` from its last transition) — holding its quota until then before
        0.20.7, evicted at once from it — then queues again, its next request being attempt ``retryCount + 2``
        (the failed one was ``retryCount + 1``; Kueue counts the retry when it evicts)."""
        job.attempt = int(check.get("retryCount") or 0) + 1
        job.pr_failures["Failed"] = job.pr_failures.get("Failed", 0) + 1
        if check.get("state") == "Rejected":
            self.deactivate(job, "ProvisioningRequest Failed")
            return
        if requeue_at is None:
            since = parse_time_or_none(check.get("lastTransitionTime"))
            requeue_at = (self.t if since is None else since) + float(check.get("requeueAfterSeconds") or 0)
        wait = max(0.0, requeue_at - self.t)
        if self.world.version.retry_evicts_at_once:
            self.evict(job, "AdmissionCheck", wait)
        else:
            self.move(job, "dws")
            self.at(self.t + wait, "retry-evict", job)

    def _on_retry_evict(self, job: WorldJob | None) -> None:
        assert job is not None
        if job.role == "reserved":
            self.evict(job, "AdmissionCheck", 0.0)

    def _on_pr_grant(self, job: WorldJob | None) -> None:
        assert job is not None
        if job.info is None or job.role != "reserved":
            return  # its quota went (released, requeued) since the request: the grant is stale
        pool, n = self.dws_pool(job)
        if pool is None:
            return
        if job.pr_since is not None and self.t - job.pr_since >= DWS_MAX_WAIT_SECONDS:
            self._pr_failed(job, "WaitTimeExceeded")
            return
        if self.size[pool.name] + n > pool.max_nodes:
            self.at(self.t + GRANT_RETRY_SECONDS, "pr-grant", job)
            return
        self.size[pool.name] += n
        self._granted(job, pool, n, self.t + self._provision(pool.machine_type, n, job.rng))

    def grant_in_progress(self, job: WorldJob, pool: Pool, n: int) -> bool:
        """A DWS request waiting at the instant whose grant is being made: its queued pool has ``n`` nodes no
        running job holds that are not Ready yet (GKE makes a request's nodes all at once, for it alone). It
        takes them (the oldest first), and its pods start once they are Ready."""
        making = self.making.get(pool.name) or []
        if n <= 0 or len(making) < n:
            return False
        mine, self.making[pool.name] = making[:n], making[n:]
        idle = sorted(self.idle[pool.name])
        self.idle[pool.name] = idle[n:]  # they were counted idle: no running job held them
        lo, hi = self.model.provision_range(pool.machine_type)
        ready = max(self.t, max(c + job.rng.uniform(lo, hi) for c in mine))
        self._granted(job, pool, n, ready)
        return True

    def _granted(self, job: WorldJob, pool: Pool, n: int, nodes_ready: float) -> None:
        job.nodes = {pool.name: n}
        self.move(job, "scaleUp")
        cfg = self.world.config
        job.nodes_ready = nodes_ready
        ready = job.nodes_ready + self.model.draw_pod_start(job.rng)
        if cfg.wait_for_pods_ready and cfg.pods_ready_timeout > 0:  # admitted now: the timer starts
            self.at(self.t + cfg.pods_ready_timeout, "pods-ready-timeout", job)
        self.at(ready, "start", job)
