"""The explicit list of what flexq.kueue contributes to a twin (style rule 6: one list, no side effects).

``controllers(ctx)`` returns this package's controllers for one cluster, all sharing one ``KueueState``
(Kueue's cache and queue manager); ``bootstrap(store)`` seeds objects a fresh cluster has (idempotent);
``executors(settings)`` returns pod executors (none here).
"""

from __future__ import annotations

from typing import Any

from flexq.kueue.concurrent_admission import VariantController
from flexq.kueue.core_controllers import (
    ClusterQueueStatusController,
    LocalQueueStatusController,
    RequeuerController,
    SchedulerController,
)
from flexq.kueue.jobframework import JobController
from flexq.kueue.jobs import JOB_ADAPTERS
from flexq.kueue.metrics import KueueMetrics
from flexq.kueue.pods_ready import PodsScheduledTracker
from flexq.kueue.provisioning import ProvisioningCheckController, ProvisioningController
from flexq.kueue.state import KueueState
from flexq.kueue.workload_controller import WorkloadController
from flexq.runtime import Context, Controller, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.store import Store


class _StateStarter(Controller):
    """Starts the shared state after every controller has installed its hooks."""

    name = "kueue-cache"

    def __init__(self, ctx: Context, state: KueueState) -> None:
        super().__init__(ctx)
        self.state = state

    def start(self) -> None:
        self.state.start()

    def stop(self) -> None:
        self.state.stop()

    def reconcile(self, key: Any) -> None:
        return None


def controllers(ctx: Context) -> list[Controller]:
    """This package's controllers for one cluster."""
    state = KueueState(ctx.store, ctx.now)
    state.metrics = KueueMetrics(state, ctx.metrics)
    state.hooks.extra.append(state.metrics.on_event)
    out: list[Controller] = [
        SchedulerController(ctx, state),
        RequeuerController(ctx, state),
        WorkloadController(ctx, state),
        PodsScheduledTracker(ctx, state),
        ClusterQueueStatusController(ctx, state),
        LocalQueueStatusController(ctx, state),
    ]
    out += [ProvisioningCheckController(ctx, state), ProvisioningController(ctx, state)]
    out.append(VariantController(ctx, state))
    out += [JobController(ctx, state, adapter) for adapter in JOB_ADAPTERS.values()]
    out.append(_StateStarter(ctx, state))
    return out


def bootstrap(store: Store) -> None:
    """Objects every fresh cluster starts with (idempotent)."""


def executors(settings: TwinSettings) -> list[PodExecutor]:
    """Pod executors this package provides."""
    return []
