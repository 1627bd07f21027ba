"""The explicit list of what flexq.kueue contributes to a twin (style rule 6: one list, no side effects).

``controllers(ctx)`` returns this package's controllers for one cluster, all sharing one ``KueueCache``
(Kueue's cache and queue manager, holding the twin's Kueue release: ``ctx.settings.kueue``); ``bootstrap(store)`` seeds objects a fresh cluster has (idempotent);
``executors(settings)`` returns pod executors (none here).
"""

from __future__ import annotations

from typing import Any

from flexq.kueue.cache import KueueCache
from flexq.kueue.concurrent_admission import VariantController
from flexq.kueue.job_adapters import JOB_ADAPTERS
from flexq.kueue.jobframework import JobController
from flexq.kueue.metrics import KueueMetrics
from flexq.kueue.pods_ready import PodsScheduledTracker
from flexq.kueue.provisioning import ProvisioningController
from flexq.kueue.provisioning_check import ProvisioningCheckController
from flexq.kueue.queue_controllers import (
    ClusterQueueStatusController,
    LocalQueueStatusController,
    RequeuerController,
    SchedulerController,
)
from flexq.kueue.workload_controller import WorkloadController
from flexq.runtime import Context, Controller, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.store import Store


class _CacheStarter(Controller):
    """Starts the shared cache after every controller has installed its hooks."""

    name = "kueue-cache"

    def __init__(self, ctx: Context, cache: KueueCache) -> None:
        super().__init__(ctx)
        self.cache = cache

    def start(self) -> None:
        self.cache.start()

    def stop(self) -> None:
        self.cache.stop()

    def reconcile(self, key: Any) -> None:
        return None


def controllers(ctx: Context) -> list[Controller]:
    """This package's controllers for one cluster."""
    cache = KueueCache(ctx.store, ctx.now, ctx.settings.kueue, ctx.recorder("kueue-admission"))
    cache.metrics = KueueMetrics(cache, ctx.metrics)
    cache.hooks.extra.append(cache.metrics.on_event)
    out: list[Controller] = [
        SchedulerController(ctx, cache),
        RequeuerController(ctx, cache),
        WorkloadController(ctx, cache),
        PodsScheduledTracker(ctx, cache),
        ClusterQueueStatusController(ctx, cache),
        LocalQueueStatusController(ctx, cache),
    ]
    out += [ProvisioningCheckController(ctx, cache), ProvisioningController(ctx, cache)]
    out.append(VariantController(ctx, cache))
    out += [JobController(ctx, cache, adapter) for adapter in JOB_ADAPTERS.values()]
    out.append(_CacheStarter(ctx, cache))
    return out


def bootstrap(store: Store) -> None:
    """Objects every fresh cluster starts with (idempotent)."""


def executors(settings: TwinSettings) -> list[PodExecutor]:
    """Pod executors this package provides."""
    return []
