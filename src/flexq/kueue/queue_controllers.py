"""Kueue's scheduler loop, inadmissible requeuer and queue status controllers.

Owns:
- ``SchedulerController`` — runs ``Scheduler.cycle`` whenever the cache changes, back to back while
  cycles make progress (Kueue runs them continuously; a cycle that changes nothing would only repeat), each
  taking ``TwinSettings.kueue_cycle_seconds`` of the clock (the next starts when it ends).
- ``RequeuerController`` — Kueue's inadmissible-workload requeuer: capacity or configuration changes
  flush a ClusterQueue (or its whole root cohort tree) after a 1 s batching period.
- ``ClusterQueueStatusController`` — writes ClusterQueue ``status`` (workload churn is batched for 1 s, as
  Kueue's ``UpdatesBatchPeriod``) (the ``Active`` condition, pending /
  reserving / admitted counters, ``flavorsReservation`` and ``flavorsUsage`` with ``borrowed``).
- ``LocalQueueStatusController`` — writes LocalQueue ``status`` (``Active``, counters, flavor usage).
Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

from flexq.api.jsoncopy import clone_kept
from flexq.kueue.cache import KueueCache
from flexq.kueue.queues import REQUEUE_BATCH_PERIOD
from flexq.kueue.resources import from_resource_value
from flexq.kueue.scheduler import Scheduler
from flexq.kueue.snapshot import parse_resource_groups
from flexq.kueue.workload import is_admitted
from flexq.runtime.controller import Controller, Result, Watch
from flexq.semantics.conditions import set_status_condition

__all__ = [
    "ClusterQueueStatusController",
    "LocalQueueStatusController",
    "RequeuerController",
    "SchedulerController",
]

UPDATES_BATCH_PERIOD = 1.0  # pkg/constants UpdatesBatchPeriod: queue status follows workload churn in batches


class SchedulerController(Controller):
    """Drives scheduling cycles (the ``kueue-scheduler`` runnable)."""

    name = "kueue-scheduler"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.events = cache.events
        self.scheduler = Scheduler(cache, ctx.store, cache.events)
        cache.hooks.schedule = lambda: self.enqueue("cycle")
        # one cycle's duration (``TwinSettings.kueue_cycle_seconds``): a cycle starts no sooner than the last
        # one's end, so a deep queue drains one head per ClusterQueue per cycle, at the cycle's rate (kueue#14477)
        self.period = float(ctx.settings.kueue_cycle_seconds)
        self.next_start = float("-inf")

    def reconcile(self, key: object) -> Result | None:
        now = self.ctx.now()
        if now < self.next_start:
            return Result(requeue_after=self.next_start - now)  # the cycle under way has not ended yet
        progressed = self.scheduler.cycle(now)
        if self.scheduler.had_heads:
            self.next_start = now + self.period
        if progressed:
            return Result(requeue_after=self.period)
        return None


class RequeuerController(Controller):
    """Moves inadmissible workloads back to the heaps, batched per ClusterQueue or root cohort."""

    name = "kueue-requeuer"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.events = cache.events
        cache.hooks.flush = self.notify

    def notify(self, names: set[str]) -> None:
        """``NotifyRetryInadmissible``."""
        q = self.cache.queues
        for n in names:
            root = q.root_of(n)
            self.enqueue_after(("cohort", root) if root else ("cq", n), REQUEUE_BATCH_PERIOD)

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        kind, name = key
        q = self.cache.queues
        names = {n for n in q.cluster_queues if q.root_of(n) == name} if kind == "cohort" else {name}
        moved = q.flush(names, self.ctx.now(), self.cache.namespace_labels)
        if moved:
            self.cache.hooks.schedule()
        for n in names:
            at = q.cluster_queues[n].next_requeue_at() if n in q.cluster_queues else None
            if at is not None and at > self.ctx.now():
                self.enqueue_after(key, at - self.ctx.now())
        return None


def _groups(q: dict, cache: dict) -> tuple:
    """Parsed resource groups of a ClusterQueue, cached per object identity and generation."""
    md = q["metadata"]
    key = (md["name"], md.get("uid"), md.get("generation"))
    got = cache.get(key)
    if got is None:
        if len(cache) > 10_000:
            cache.clear()
        got = cache[key] = parse_resource_groups((q.get("spec") or {}).get("resourceGroups") or [])
    return got


def _usage_lists(cq: dict, infos, admitted_only: bool, with_borrowed: bool, cache: dict) -> list[dict]:
    groups, quotas = _groups(cq, cache)
    used: dict[tuple[str, str], int] = {}
    for info in infos:
        if admitted_only and not is_admitted(info.obj):
            continue
        for fr, q in info.flavor_usage().items():
            used[fr] = used.get(fr, 0) + q
    out = []
    for g in groups:
        for f in g.flavors:
            res = []
            for r in g.covered:
                total = used.get((f, r), 0)
                item = {"name": r, "total": from_resource_value(r, total)}
                if with_borrowed:
                    nominal = quotas[(f, r)].nominal if (f, r) in quotas else 0
                    item["borrowed"] = from_resource_value(r, max(0, total - nominal))
                res.append(item)
            out.append({"name": f, "resources": res})
    return out


def _write_if_changed(store, cached: dict, status: dict) -> None:
    """Write ``status`` unless the last seen object already has it."""
    if cached.get("status") == status:
        return
    store.update_status({**cached, "status": status}, take=True)  # status: built by the caller


class ClusterQueueStatusController(Controller):
    """Writes ClusterQueue status (one writer: this controller)."""

    name = "kueue-clusterqueue"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.events = cache.events
        cache.hooks.cq_status = lambda n: self.enqueue_after(n, UPDATES_BATCH_PERIOD)
        self._groups: dict = {}

    def watches(self) -> list[Watch]:
        return [Watch("ClusterQueue", lambda ev: [ev.object["metadata"]["name"]])]

    def reconcile(self, key: str) -> Result | None:
        cached = self.cache.cqs.get(key)
        if cached is None:
            return None
        cq = {"metadata": cached["metadata"], "status": clone_kept(cached.get("status") or {})}
        now = self.ctx.now()
        infos = list(self.cache.reserving_by_cq.get(key, {}).values())
        inactive = self.cache.inactive_reason(key)
        if inactive is None:
            set_status_condition(cq, "Active", True, "Ready", "Can admit new workloads", now)
        else:
            set_status_condition(cq, "Active", False, inactive[0], inactive[1], now)
        st = cq.setdefault("status", {})
        st["pendingWorkloads"] = self.cache.queues.pending(key)
        st["reservingWorkloads"] = len(infos)
        st["admittedWorkloads"] = sum(1 for i in infos if is_admitted(i.obj))
        st["flavorsReservation"] = _usage_lists(cached, infos, False, True, self._groups)
        st["flavorsUsage"] = _usage_lists(cached, infos, True, True, self._groups)
        _write_if_changed(self.store, cached, st)
        return None


class LocalQueueStatusController(Controller):
    """Writes LocalQueue status (one writer: this controller)."""

    name = "kueue-localqueue"

    def __init__(self, ctx, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.events = cache.events
        cache.hooks.lq_status = lambda ns, n: self.enqueue_after((ns, n), UPDATES_BATCH_PERIOD)
        self._groups: dict = {}

    def watches(self) -> list[Watch]:
        return [Watch("LocalQueue")]

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        ns, name = key
        cached = self.cache.local_queues.get(f"{ns}/{name}")
        if cached is None:
            return None
        lq = {"metadata": cached["metadata"], "status": clone_kept(cached.get("status") or {})}
        now = self.ctx.now()
        spec = cached.get("spec") or {}
        cq_name = spec.get("clusterQueue", "")
        cq = self.cache.cqs.get(cq_name)
        if (spec.get("stopPolicy") or "None") != "None":
            set_status_condition(lq, "Active", False, "Stopped", "LocalQueue is stopped", now)
        elif cq is None or self.cache.inactive_reason(cq_name) is not None:
            set_status_condition(
                lq,
                "Active",
                False,
                "ClusterQueueIsInactive",
                "Can't submit new workloads to clusterQueue",
                now,
            )
        else:
            set_status_condition(lq, "Active", True, "Ready", "Can submit new workloads to localQueue", now)
        infos = list(self.cache.reserving_by_lq.get((ns, name), {}).values())
        st = lq.setdefault("status", {})
        st["pendingWorkloads"] = self.cache.queues.pending_in_local_queue(ns, name)
        st["reservingWorkloads"] = len(infos)
        st["admittedWorkloads"] = sum(1 for i in infos if is_admitted(i.obj))
        if cq is not None:
            st["flavorsReservation"] = _usage_lists(cq, infos, False, False, self._groups)
            st["flavorsUsage"] = _usage_lists(cq, infos, True, False, self._groups)
        _write_if_changed(self.store, cached, st)
        return None
