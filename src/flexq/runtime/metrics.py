"""controller-runtime's metrics of a cluster's controllers, as Kueue's ``/metrics`` page carries them.

Owns: ``ControllerMetrics``, a collector on the cluster's Prometheus registry reading the manager's counts when
scraped: ``controller_runtime_reconcile_total{controller,result}`` (success, error, requeue, requeue_after),
``controller_runtime_reconcile_errors_total{controller}``, ``workqueue_depth{name,controller,priority}``,
``workqueue_adds_total{name,controller}`` and ``workqueue_retries_total{name,controller}``, with
controller-runtime's names, help texts and labels (``pkg/internal/controller/metrics``, ``pkg/metrics/workqueue.go``;
the queue's ``name`` and ``controller`` are both the controller's name, as there). Counting costs the reconcile
path one integer increment; the families are built only when scraped. Must not import domain packages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from flexq.runtime.manager import Manager


class ControllerMetrics:
    """Registers itself on ``registry``; reads ``manager.queue_stats()`` at each scrape."""

    def __init__(self, manager: Manager, registry: Any) -> None:
        self.manager = manager
        registry.register(self)

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        total = CounterMetricFamily(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            labels=["controller", "result"],
        )
        errors = CounterMetricFamily(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            labels=["controller"],
        )
        depth = GaugeMetricFamily(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            labels=["name", "controller", "priority"],
        )
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=["name", "controller"]
        )
        retries = CounterMetricFamily(
            "workqueue_retries", "Total number of retries handled by workqueue", labels=["name", "controller"]
        )
        for name, results, n_adds, n_retries, n_depth in sorted(self.manager.queue_stats()):
            for result, n in results.items():
                total.add_metric([name, result], n)
            errors.add_metric([name], results["error"])
            depth.add_metric([name, name, ""], n_depth)
            adds.add_metric([name, name], n_adds)
            retries.add_metric([name, name], n_retries)
        yield from (total, errors, depth, adds, retries)
