"""Kueue's Prometheus metrics, with the names, types, labels and histogram buckets of Kueue v0.19.2
(``pkg/metrics/metrics.go``), recorded by this cluster's Kueue on the twin's clock.

Owns: ``KueueMetrics`` — one per cluster, registered on the ``prometheus_client`` registry the assembly hands
over in ``Context.metrics`` (never a global one). Counters and histograms are recorded at the moments Kueue
records them: ``admission_attempts_total`` at the end of each scheduling cycle (``scheduler.go``), quota
reservation and admission when the scheduler's or the workload controller's write of ``QuotaReserved=True``
/ ``Admitted=True`` lands (``recordQuotaReservationMetrics``, ``recordWorkloadAdmissionEvents``,
``workload_controller.go``), evictions when Kueue's own ``workloadevict.Evict`` evicts an admitted workload
(``ReportEvictedWorkloads``: ``flexq.kueue.scheduler.evict`` calls ``evicted``; what another client writes into
a Workload's status counts nothing), preemptions when the scheduler issues them (``ReportPreemption``) and
finished workloads when ``Finished=True`` lands. Gauges (pending, reserving, admitted, unadmitted, status,
the optional ClusterQueue resource gauges) are computed at scrape time from Kueue's cache and queues, the
values the controllers would have set at their last update. When a ClusterQueue or LocalQueue is deleted its
series go (``ClearClusterQueueMetrics``, ``ClearLocalQueueMetrics``): the metrics hold what exists and what Kueue
did, so their size is bounded by the queues, Kueue's reasons and the priority classes. Every series carries ``replica_role="standalone"``
(one Kueue replica, no leader election) except ``kueue_build_info``.

Everything is held here and exposed through a custom collector, so a virtual-clock twin never stamps a
wall-clock ``_created`` series. Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube``, ``flexq.http``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from flexq.kueue.workload import key, parse_ts
from flexq.semantics.conditions import find_condition, is_true
from flexq.store.store import WatchEvent

if TYPE_CHECKING:
    from flexq.kueue.cache import KueueCache

__all__ = ["KueueMetrics", "exponential_buckets", "GO_DEFAULT_BUCKETS", "KUEUE_VERSION"]

ROLE = "standalone"
KUEUE_VERSION = "v0.19.2"
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)  # prometheus.DefBuckets


def exponential_buckets(count: int) -> tuple[float, ...]:
    """``generateExponentialBuckets(count)``: 1, then 2.5·2^k for k = 0..count-2."""
    return (1.0, *(2.5 * 2**k for k in range(count - 1)))


CQ_PC = ("cluster_queue", "priority_class")
LQ_PC = ("name", "namespace", "priority_class")
EVICTION_HELP = "The number of evicted workloads per '{}'"

# name (without the kueue_ prefix), type, help, labels (replica_role appended), buckets for histograms
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "admission_attempts_total": ("The total number of attempts to admit workloads.", ("result",)),
    "quota_reserved_workloads_total": (
        "The total number of quota reserved workloads per 'cluster_queue'",
        CQ_PC,
    ),
    "admitted_workloads_total": ("The total number of admitted workloads per 'cluster_queue'", CQ_PC),
    "finished_workloads_total": ("The total number of finished workloads per 'cluster_queue'", CQ_PC),
    "evicted_workloads_total": (
        EVICTION_HELP.format("cluster_queue"),
        ("cluster_queue", "reason", "underlying_cause", "priority_class"),
    ),
    "preempted_workloads_total": (
        "The number of preempted workloads per 'preempting_cluster_queue'",
        ("preempting_cluster_queue", "reason"),
    ),
    "local_queue_quota_reserved_workloads_total": (
        "The total number of quota reserved workloads per 'local_queue'",
        LQ_PC,
    ),
    "local_queue_admitted_workloads_total": (
        "The total number of admitted workloads per 'local_queue'",
        LQ_PC,
    ),
    "local_queue_finished_workloads_total": (
        "The total number of finished workloads per 'local_queue'",
        LQ_PC,
    ),
    "local_queue_evicted_workloads_total": (
        EVICTION_HELP.format("local_queue"),
        ("name", "namespace", "reason", "underlying_cause", "priority_class"),
    ),
}
HISTOGRAMS: dict[str, tuple[str, tuple[str, ...], tuple[float, ...]]] = {
    "admission_attempt_duration_seconds": (
        "The latency of an admission attempt.",
        ("result",),
        GO_DEFAULT_BUCKETS,
    ),
    "quota_reserved_wait_time_seconds": (
        "The time between a workload was created or requeued until it got quota "
        "reservation, per 'cluster_queue'",
        CQ_PC,
        exponential_buckets(14),
    ),
    "admission_wait_time_seconds": (
        "The time between a workload was created or requeued until admission, per 'cluster_queue'",
        CQ_PC,
        exponential_buckets(16),
    ),
    "admission_checks_wait_time_seconds": (
        "The time from when a workload got the quota reservation until admission, per 'cluster_queue'",
        CQ_PC,
        exponential_buckets(14),
    ),
    "local_queue_quota_reserved_wait_time_seconds": (
        "The time between a workload was created or requeued until it "
        "got quota reservation, per 'local_queue'",
        LQ_PC,
        exponential_buckets(14),
    ),
    "local_queue_admission_wait_time_seconds": (
        "The time between a workload was created or requeued until admission, per 'local_queue'",
        LQ_PC,
        exponential_buckets(14),
    ),
    "local_queue_admission_checks_wait_time_seconds": (
        "The time from when a workload got the quota reservation until admission, per 'local_queue'",
        LQ_PC,
        exponential_buckets(14),
    ),
}
RESOURCE_GAUGES = {  # only with metrics.enableClusterQueueResources
    "cluster_queue_resource_reservation": "Reports the cluster_queue's total resource reservation within all the flavors",
    "cluster_queue_resource_usage": "Reports the cluster_queue's total resource usage within all the flavors",
    "cluster_queue_nominal_quota": "Reports the cluster_queue's resource nominal quota within all the flavors",
    "cluster_queue_borrowing_limit": "Reports the cluster_queue's resource borrowing limit within all the flavors. "
    "If borrowingLimit is unset, this metric reports +Inf.",
    "cluster_queue_lending_limit": "Reports the cluster_queue's resource lending limit within all the flavors. "
    "If lendingLimit is unset, this metric reports +Inf.",
}
CQ_STATUSES = ("pending", "active", "terminating")
CONDITION_STATUSES = ("True", "False", "Unknown")


class _Histogram:
    __slots__ = ("buckets", "counts", "sum", "count")

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        for i, b in enumerate(self.buckets):
            if value <= b:
                self.counts[i] += 1
        self.sum += value
        self.count += 1


def _quantity(resource: str, value: int) -> float:
    """A Kueue integer as ``AsApproximateFloat64`` gives it (cpu is kept in millis)."""
    return value / 1000 if resource == "cpu" else float(value)


def priority_class(wl: dict) -> str:
    """``patching.PriorityClassName``: ``spec.priorityClassRef.name`` (v1beta2, as stored), else ""."""
    ref = (wl.get("spec") or {}).get("priorityClassRef") or {}
    return str(ref.get("name") or "")


def queued_wait(wl: dict, now: float) -> float:
    """``workload.QueuedWaitTime``: since the Requeued condition's last transition, else since creation."""
    rq = find_condition(wl, "Requeued")
    since = parse_ts(rq["lastTransitionTime"]) if rq else parse_ts(wl["metadata"].get("creationTimestamp"))
    return max(0.0, now - since)


class KueueMetrics:
    """The metrics of one cluster's Kueue (a collector on the registry ``registry``)."""

    def __init__(self, cache: KueueCache, registry: Any) -> None:
        self.cache = cache
        self.counters: dict[str, dict[tuple[str, ...], float]] = {n: {} for n in COUNTERS}
        self.histograms: dict[str, dict[tuple[str, ...], _Histogram]] = {n: {} for n in HISTOGRAMS}
        # per workload: (QuotaReserved, Admitted, Finished, admitted CQ)
        self._seen: dict[str, tuple[bool, bool, bool, str]] = {}
        if registry is not None:
            registry.register(self)

    # -- recording ------------------------------------------------------------------------------------
    def inc(self, name: str, labels: tuple[str, ...], by: float = 1.0) -> None:
        series = self.counters[name]
        series[labels] = series.get(labels, 0.0) + by

    def observe(self, name: str, labels: tuple[str, ...], value: float) -> None:
        series = self.histograms[name]
        h = series.get(labels)
        if h is None:
            h = series[labels] = _Histogram(HISTOGRAMS[name][2])
        h.observe(value)

    def admission_attempt(self, success: bool, seconds: float) -> None:
        """``metrics.AdmissionAttempt`` (end of a scheduling cycle that had heads)."""
        result = "success" if success else "inadmissible"
        self.inc("admission_attempts_total", (result,))
        self.observe("admission_attempt_duration_seconds", (result,), max(0.0, seconds))

    def preemption(self, preempting_cq: str, reason: str) -> None:
        """``metrics.ReportPreemption`` (a preemption the scheduler issued)."""
        self.inc("preempted_workloads_total", (preempting_cq, reason))

    # -- labels: only objects that exist ----------------------------------------------------------------
    # A Workload's status can be written by any client allowed to (kubectl, a controller): the ClusterQueue,
    # LocalQueue and priority class it names are labels here only while that object exists, so nobody
    # grows the page by naming made-up ones, and a queue's series go with it (``_clear``).
    def _cq(self, name: str) -> str:
        return name if name and name in self.cache.cqs else ""

    def _lq(self, wl: dict) -> tuple[str, str]:
        ns, lq = wl["metadata"].get("namespace", ""), (wl.get("spec") or {}).get("queueName", "")
        return (lq, ns) if lq and f"{ns}/{lq}" in self.cache.local_queues else ("", ns)

    def _pc(self, wl: dict) -> str:
        """The Workload's priority class when a WorkloadPriorityClass or PriorityClass of that name exists
        (the one its ``priorityClassRef`` names), else ""."""
        ref = (wl.get("spec") or {}).get("priorityClassRef") or {}
        name = str(ref.get("name") or "")
        if not name:
            return ""
        kinds = (
            ("PriorityClass",)
            if ref.get("kind") == "PriorityClass"
            else ("WorkloadPriorityClass", "PriorityClass")
        )
        store = self.cache.store
        return name if any(store.peek(k, name) is not None for k in kinds) else ""

    def evicted(self, wl: dict, cq: str, reason: str, cause: str) -> None:
        """``ReportEvictedWorkloads`` (and its LocalQueue twin) for an eviction Kueue made."""
        cq = self._cq(cq)
        if not cq:
            return
        pc = self._pc(wl)
        self.inc("evicted_workloads_total", (cq, reason, cause, pc))
        lq, ns = self._lq(wl)
        if lq:
            self.inc("local_queue_evicted_workloads_total", (lq, ns, reason, cause, pc))

    def _clear(self, label: str, matches: Any) -> None:
        """Drop every counter and histogram series whose ``label`` matches (``DeletePartialMatch``)."""
        for table, specs in ((self.counters, COUNTERS), (self.histograms, HISTOGRAMS)):
            for name, spec in specs.items():
                labels = spec[1]
                if label not in labels:
                    continue
                i = labels.index(label)
                series = table[name]
                for values in [v for v in series if matches(v, i)]:
                    del series[values]

    def on_event(self, ev: WatchEvent) -> None:
        """Follows Workload writes (a ``KueueCache`` hook) and records what each transition means; a deleted
        ClusterQueue or LocalQueue takes its series with it."""
        kind = ev.object.get("kind")
        if ev.type == "DELETED" and kind == "ClusterQueue":
            name = ev.object["metadata"]["name"]
            self._clear("cluster_queue", lambda v, i: v[i] == name)  # ClearClusterQueueMetrics
            self._clear("preempting_cluster_queue", lambda v, i: v[i] == name)
            return
        if ev.type == "DELETED" and kind == "LocalQueue":
            md = ev.object["metadata"]
            lq, ns = md["name"], md.get("namespace", "")
            self._clear("name", lambda v, i: v[i] == lq and v[i + 1] == ns)  # ClearLocalQueueMetrics
            return
        if ev.kind != "Workload" and kind != "Workload":
            return
        wl = ev.object
        k = key(wl)
        if ev.type == "DELETED":
            self._seen.pop(k, None)
            return
        st = wl.get("status") or {}
        # is_true of QuotaReserved, Admitted and Finished in one pass (the first condition of a type counts)
        seen_types: dict[str, bool] = {}
        for c in st.get("conditions") or ():
            seen_types.setdefault(c.get("type"), c.get("status") == "True")
        qr, adm, fin = (seen_types.get(t, False) for t in ("QuotaReserved", "Admitted", "Finished"))
        cq = (st.get("admission") or {}).get("clusterQueue", "")
        old = self._seen.get(k)
        self._seen[k] = (qr, adm, fin, cq)
        if old is None and (qr or adm or fin) and ev.type != "ADDED":
            old = (False, False, False, "")
        if old is None:
            return  # first sight of a workload (a restart): nothing new happened
        if not (qr and not old[0]) and not (adm and not old[1]) and not (fin and not old[2]):
            return  # no transition: nothing to record
        now = self.cache.now()
        pc = self._pc(wl)
        lq, ns = self._lq(wl)
        cq = self._cq(cq)
        if qr and not old[0] and cq:
            wait = queued_wait(wl, now)
            self.inc("quota_reserved_workloads_total", (cq, pc))
            self.observe("quota_reserved_wait_time_seconds", (cq, pc), wait)
            if lq:
                self.inc("local_queue_quota_reserved_workloads_total", (lq, ns, pc))
                self.observe("local_queue_quota_reserved_wait_time_seconds", (lq, ns, pc), wait)
        if adm and not old[1] and cq:
            wait = queued_wait(wl, now)
            qrc = find_condition(wl, "QuotaReserved")
            checks_wait = max(0.0, now - parse_ts(qrc["lastTransitionTime"])) if qrc else 0.0
            same_write = not old[0]  # reserved and admitted at once: the scheduler's path
            self.inc("admitted_workloads_total", (cq, pc))
            self.observe("admission_wait_time_seconds", (cq, pc), wait)
            if lq:
                self.inc("local_queue_admitted_workloads_total", (lq, ns, pc))
                self.observe("local_queue_admission_wait_time_seconds", (lq, ns, pc), wait)
            if not same_write or st.get("admissionChecks"):
                self.observe(
                    "admission_checks_wait_time_seconds", (cq, pc), 0.0 if same_write else checks_wait
                )
                if lq:
                    self.observe(
                        "local_queue_admission_checks_wait_time_seconds",
                        (lq, ns, pc),
                        0.0 if same_write else checks_wait,
                    )
        if fin and not old[2]:
            fcq = cq or self._cq(old[3] or self.cache.queues.local_queues.get(f"{ns}/{lq}", ""))
            if fcq:
                self.inc("finished_workloads_total", (fcq, pc))
            if lq:
                self.inc("local_queue_finished_workloads_total", (lq, ns, pc))

    # -- collecting -------------------------------------------------------------------------------------
    def describe(self) -> list[Metric]:
        return []  # collected on demand; no registration-time collection

    def collect(self) -> Iterator[Metric]:
        yield from self._counters()
        yield from self._histograms()
        yield from self._gauges()

    def _counters(self) -> Iterator[Metric]:
        for name, (help_, labels) in COUNTERS.items():
            fam = CounterMetricFamily("kueue_" + name, help_, labels=[*labels, "replica_role"])
            for values, v in sorted(self.counters[name].items()):
                fam.add_metric([*values, ROLE], v)
            yield fam

    def _histograms(self) -> Iterator[Metric]:
        for name, (help_, labels, _buckets) in HISTOGRAMS.items():
            fam = HistogramMetricFamily("kueue_" + name, help_, labels=[*labels, "replica_role"])
            for values, h in sorted(self.histograms[name].items()):
                buckets = [(_le(b), float(c)) for b, c in zip(h.buckets, h.counts, strict=True)]
                buckets.append(("+Inf", float(h.count)))
                fam.add_metric([*values, ROLE], buckets, h.sum)
            yield fam

    def _gauges(self) -> Iterator[Metric]:
        s = self.cache
        info = GaugeMetricFamily(
            "kueue_build_info",
            "Kueue build information. 1 labeled by git version, git "
            "commit, build date, go version, compiler, platform",
            labels=["git_version", "git_commit", "build_date", "go_version", "compiler", "platform"],
        )
        info.add_metric([KUEUE_VERSION, "flexq", "", "", "", ""], 1)
        yield info
        role = [ROLE]
        cq_names = sorted(s.cqs)
        pending = GaugeMetricFamily(
            "kueue_pending_workloads",
            "The number of pending workloads, per 'cluster_queue' and 'status'.",
            labels=["cluster_queue", "status", "replica_role"],
        )
        lq_pending = GaugeMetricFamily(
            "kueue_local_queue_pending_workloads",
            "The number of pending workloads, per 'local_queue' and 'status'.",
            labels=["name", "namespace", "status", "replica_role"],
        )
        lq_counts: dict[str, list[int]] = {k: [0, 0] for k in s.local_queues}
        for name in cq_names:
            q = s.queues.cluster_queues.get(name)
            active = len(q.items) if q else 0
            inadmissible = len(q.inadmissible) if q else 0
            pending.add_metric([name, "active", *role], active)
            pending.add_metric([name, "inadmissible", *role], inadmissible)
            if q:
                for i, table in enumerate((q.items, q.inadmissible)):
                    for info_ in table.values():
                        lqk = f"{info_.namespace}/{(info_.obj.get('spec') or {}).get('queueName', '')}"
                        if lqk in lq_counts:
                            lq_counts[lqk][i] += 1
        for lqk in sorted(lq_counts):
            ns, _, name = lqk.partition("/")
            lq_pending.add_metric([name, ns, "active", *role], lq_counts[lqk][0])
            lq_pending.add_metric([name, ns, "inadmissible", *role], lq_counts[lqk][1])
        yield pending
        yield lq_pending
        yield from self._workload_gauges(cq_names)
        yield from self._queue_gauges(cq_names)
        if s.config.enable_cluster_queue_resources:
            yield from self._resource_gauges(cq_names)

    def _workload_gauges(self, cq_names: list[str]) -> Iterator[Metric]:
        s, role = self.cache, [ROLE]
        reserving = dict.fromkeys(cq_names, 0)
        admitted = dict.fromkeys(cq_names, 0)
        finished = dict.fromkeys(cq_names, 0)
        lq_res: dict[str, int] = dict.fromkeys(s.local_queues, 0)
        lq_adm: dict[str, int] = dict.fromkeys(s.local_queues, 0)
        lq_fin: dict[str, int] = dict.fromkeys(s.local_queues, 0)
        unadmitted: dict[tuple[str, str, str], int] = {}
        lq_unadmitted: dict[tuple[str, str, str, str, str], int] = {}
        lq_usage: dict[tuple[str, str, str, str], list[float]] = {}
        for k, wl in s.workloads.items():
            md, spec = wl["metadata"], wl.get("spec") or {}
            ns, lqn = md.get("namespace", ""), spec.get("queueName", "")
            lqk = f"{ns}/{lqn}"
            cq = s.queues.local_queues.get(lqk, "")
            variant = any(r.get("kind") == "Workload" for r in md.get("ownerReferences") or [])
            if is_true(wl, "Finished"):
                if variant and s.config.gate("ConcurrentAdmission"):
                    continue  # AddFinishedWorkload: only Parents count (KEP-8691)
                if cq in finished:
                    finished[cq] += 1
                if lqk in lq_fin:
                    lq_fin[lqk] += 1
                continue
            if md.get("deletionTimestamp"):
                continue
            info_ = s.reserving.get(k)
            if info_ is not None:
                if info_.cluster_queue in reserving:
                    reserving[info_.cluster_queue] += 1
                adm = is_true(wl, "Admitted")
                if adm and info_.cluster_queue in admitted:
                    admitted[info_.cluster_queue] += 1
                if lqk in lq_res:
                    lq_res[lqk] += 1
                    lq_adm[lqk] += int(adm)
                    for (flv, res), v in info_.flavor_usage().items():
                        slot = lq_usage.setdefault((lqn, ns, flv, res), [0.0, 0.0])
                        slot[0] += _quantity(res, v)
                        if adm:
                            slot[1] += _quantity(res, v)
            if is_true(wl, "Admitted") or variant:  # getUnadmittedWorkloadStatus ignores Variants
                continue
            ac = find_condition(wl, "Admitted")
            reason = ac.get("reason", "") if ac else "NoReservation"
            qrc = find_condition(wl, "QuotaReserved")
            cause = (
                "PendingEvaluation"
                if qrc is None
                else ("" if qrc.get("status") == "True" else qrc.get("reason", ""))
            )
            if not cq:
                continue  # Kueue skips workloads whose ClusterQueue it cannot resolve
            unadmitted[(cq, reason, cause)] = unadmitted.get((cq, reason, cause), 0) + 1
            if lqk in s.local_queues:
                lk = (lqn, ns, cq, reason, cause)
                lq_unadmitted[lk] = lq_unadmitted.get(lk, 0) + 1
        for name, help_, table in (
            (
                "kueue_reserving_active_workloads",
                "The number of Workloads that are reserving quota, per 'cluster_queue'",
                reserving,
            ),
            (
                "kueue_admitted_active_workloads",
                "The number of admitted Workloads that are active, per 'cluster_queue'",
                admitted,
            ),
            ("kueue_finished_workloads", "The number of finished workloads per 'cluster_queue'.", finished),
        ):
            fam = GaugeMetricFamily(name, help_, labels=["cluster_queue", "replica_role"])
            for cq in cq_names:
                fam.add_metric([cq, *role], table[cq])
            yield fam
        for name, help_, table in (
            (
                "kueue_local_queue_reserving_active_workloads",
                "The number of Workloads that are reserving quota, per 'localQueue'",
                lq_res,
            ),
            (
                "kueue_local_queue_admitted_active_workloads",
                "The number of admitted Workloads that are active, per 'localQueue'",
                lq_adm,
            ),
            (
                "kueue_local_queue_finished_workloads",
                "The number of finished workloads, per 'local_queue'.",
                lq_fin,
            ),
        ):
            fam = GaugeMetricFamily(name, help_, labels=["name", "namespace", "replica_role"])
            for lqk in sorted(table):
                ns, _, lqn = lqk.partition("/")
                fam.add_metric([lqn, ns, *role], table[lqk])
            yield fam
        if not s.config.gate("UnadmittedWorkloadsObservability"):
            # "only emitted when UnadmittedWorkloadsObservability feature gate is enabled" (off in v0.19.2)
            unadmitted, lq_unadmitted = {}, {}
        fam = GaugeMetricFamily(
            "kueue_unadmitted_workloads",
            "The number of unadmitted workloads, per 'cluster_queue', 'reason', and 'underlying_cause'.",
            labels=["cluster_queue", "reason", "underlying_cause", "replica_role"],
        )
        for labels, n in sorted(unadmitted.items()):
            fam.add_metric([*labels, *role], n)
        yield fam
        fam = GaugeMetricFamily(
            "kueue_local_queue_unadmitted_workloads",
            "The number of unadmitted workloads, per "
            "'name', 'namespace', 'cluster_queue', 'reason', and 'underlying_cause'.",
            labels=["name", "namespace", "cluster_queue", "reason", "underlying_cause", "replica_role"],
        )
        for labels5, n in sorted(lq_unadmitted.items()):
            fam.add_metric([*labels5, *role], n)
        yield fam
        for i, (name, help_) in enumerate(
            (
                (
                    "kueue_local_queue_resource_reservation",
                    "Reports the localQueue's total resource reservation within all the flavors",
                ),
                (
                    "kueue_local_queue_resource_usage",
                    "Reports the localQueue's total resource usage within all the flavors",
                ),
            )
        ):
            fam = GaugeMetricFamily(
                name, help_, labels=["name", "namespace", "flavor", "resource", "replica_role"]
            )
            for labels4, vals in sorted(lq_usage.items()):
                fam.add_metric([*labels4, *role], vals[i])
            yield fam

    def _queue_gauges(self, cq_names: list[str]) -> Iterator[Metric]:
        s, role = self.cache, [ROLE]
        status = GaugeMetricFamily(
            "kueue_cluster_queue_status",
            "Reports 'cluster_queue' with its 'status' (with "
            "possible values 'pending', 'active' or 'terminated').",
            labels=["cluster_queue", "status", "replica_role"],
        )
        cq_info = GaugeMetricFamily(
            "kueue_cluster_queue_info",
            "Reports ClusterQueue hierarchy information. The "
            "metric has value 1 and can be joined using labels.",
            labels=["cluster_queue", "parent_cohort", "root_cohort", "replica_role"],
        )
        for name in cq_names:
            cq = s.cqs[name]
            if cq["metadata"].get("deletionTimestamp"):
                current = "terminating"
            else:
                current = "pending" if s.inactive_reason(name) is not None else "active"
            for st in CQ_STATUSES:
                status.add_metric([name, st, *role], 1 if st == current else 0)
            parent = (cq.get("spec") or {}).get("cohortName") or (cq.get("spec") or {}).get("cohort") or ""
            cq_info.add_metric([name, parent, self._root(parent) if parent else "", *role], 1)
        yield status
        yield cq_info
        coh = GaugeMetricFamily(
            "kueue_cohort_info",
            "Reports Cohort hierarchy information. The metric has value 1 and can be joined using labels.",
            labels=["cohort", "parent_cohort", "root_cohort", "replica_role"],
        )
        names = set(s.cohorts) | {
            (c.get("spec") or {}).get("cohortName") or (c.get("spec") or {}).get("cohort")
            for c in s.cqs.values()
        }
        for name in sorted(n for n in names if n):
            parent = ((s.cohorts.get(name) or {}).get("spec") or {}).get("parentName") or ""
            coh.add_metric([name, parent, self._root(name), *role], 1)
        yield coh
        lq_status = GaugeMetricFamily(
            "kueue_local_queue_status",
            "Reports 'localQueue' with its 'active' status "
            "(with possible values 'True', 'False', or 'Unknown').",
            labels=["name", "namespace", "active", "replica_role"],
        )
        for lqk in sorted(s.local_queues):
            lq = s.local_queues[lqk]
            c = find_condition(lq, "Active")
            current = (c or {}).get("status", "Unknown")
            for st in CONDITION_STATUSES:
                lq_status.add_metric(
                    [lq["metadata"]["name"], lq["metadata"].get("namespace", ""), st, *role],
                    1 if st == current else 0,
                )
        yield lq_status

    def _root(self, cohort: str) -> str:
        seen: set[str] = set()
        while cohort not in seen:
            seen.add(cohort)
            parent = ((self.cache.cohorts.get(cohort) or {}).get("spec") or {}).get("parentName")
            if not parent:
                break
            cohort = parent
        return cohort

    def _resource_gauges(self, cq_names: list[str]) -> Iterator[Metric]:
        s, role = self.cache, [ROLE]
        labels = ["cohort", "cluster_queue", "flavor", "resource", "replica_role"]
        fams = {n: GaugeMetricFamily("kueue_" + n, h, labels=labels) for n, h in RESOURCE_GAUGES.items()}
        snap = s.snapshot()
        for name in cq_names:
            cq = snap.cluster_queues.get(name)
            if cq is None:
                continue
            parent = cq.parent.name if cq.parent is not None else ""
            usage: dict[tuple[str, str], int] = {}
            for info_ in s.reserving.values():
                if info_.cluster_queue == name and is_true(info_.obj, "Admitted"):
                    for fr, v in info_.flavor_usage().items():
                        usage[fr] = usage.get(fr, 0) + v
            for (flv, res), q in sorted(cq.quotas.items()):
                base = [parent, name, flv, res, *role]
                fams["cluster_queue_nominal_quota"].add_metric(base, _quantity(res, q.nominal))
                fams["cluster_queue_borrowing_limit"].add_metric(
                    base, math.inf if q.borrowing_limit is None else _quantity(res, q.borrowing_limit)
                )
                fams["cluster_queue_lending_limit"].add_metric(
                    base, math.inf if q.lending_limit is None else _quantity(res, q.lending_limit)
                )
                fams["cluster_queue_resource_reservation"].add_metric(
                    base, _quantity(res, cq.usage.get((flv, res), 0))
                )
                fams["cluster_queue_resource_usage"].add_metric(
                    base, _quantity(res, usage.get((flv, res), 0))
                )
        yield from fams.values()


def _le(bound: float) -> str:
    """A bucket bound as Go's client writes it (``2.5``, ``10``, ``40960``)."""
    return repr(float(bound)) if not float(bound).is_integer() else str(int(bound))
