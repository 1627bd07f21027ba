"""The fallback policy as a controller of the twin (``Twin(fallback=True)``, ``flexq up --fallback``).

Owns nothing of its own: it runs ``FallbackPolicy`` over the cluster's store through ``StoreAPI`` — exactly the
code ``flexq fallback`` runs against a real cluster — when a Workload, a LocalQueue, a Node or a capacity event
changes (one pass for every change within ``BATCH_SECONDS``, as the Job controller batches its syncs), when
something the last pass saw comes due (a backoff ends, a grace period runs out, a rescue's backoff ends), and
every ``RESYNC_SECONDS`` at least. Its counters are on the cluster's ``/metrics`` (``flexq.fallback.metrics``).
"""

from __future__ import annotations

from typing import Any

from flexq.fallback.api import CAPACITY_EVENT_REASONS, StoreAPI
from flexq.fallback.metrics import FallbackMetrics
from flexq.fallback.model import FallbackConfig
from flexq.fallback.policy import FallbackPolicy
from flexq.runtime import Context, Controller, Result, TwinSettings, Watch
from flexq.store import WatchEvent

RESYNC_SECONDS = 300.0
BATCH_SECONDS = 1.0
_ALL = "all"


def _capacity_event(ev: WatchEvent) -> list[Any]:
    return [_ALL] if ev.object.get("reason") in CAPACITY_EVENT_REASONS else []


class FallbackController(Controller):
    """Runs one policy pass per wake-up (see the module docstring)."""

    name = "flexq-fallback"

    def __init__(self, ctx: Context, config: FallbackConfig | None = None) -> None:
        super().__init__(ctx)
        self.api = StoreAPI(ctx.store, self.events, ctx.project, ctx.cluster)
        self.policy = FallbackPolicy(self.api, config)
        self.metrics = FallbackMetrics(ctx.metrics) if ctx.metrics is not None else None
        self.actions: list = []  # every action taken, for tests and the SDK

    def watches(self) -> list[Watch]:
        return [
            Watch("Workload", lambda ev: [_ALL], delay=BATCH_SECONDS),
            Watch("LocalQueue", lambda ev: [_ALL], delay=BATCH_SECONDS),
            Watch("Node", lambda ev: [_ALL], delay=BATCH_SECONDS),
            Watch("Event", _capacity_event, delay=BATCH_SECONDS),
        ]

    def start(self) -> None:
        self.enqueue(_ALL)

    def reconcile(self, key: Any) -> Result | None:
        actions = self.policy.run_once()
        self.actions += actions
        if self.metrics is not None:
            self.metrics.observe(self.policy, actions)
        now = self.ctx.now()
        wake = self.policy.next_wakeup(now)
        delay = RESYNC_SECONDS if wake is None else min(RESYNC_SECONDS, max(0.001, wake - now))
        return Result(requeue_after=delay)


def config_from_settings(settings: TwinSettings) -> FallbackConfig | None:
    """``settings.fallback``: True (defaults), a dict of ``FallbackConfig`` fields, or off."""
    value = settings.fallback
    if not value:
        return None
    if value is True or value == "true":
        return FallbackConfig()
    if isinstance(value, dict):
        return FallbackConfig(**value)
    if isinstance(value, FallbackConfig):
        return value
    raise ValueError(f"fallback: expected true or a mapping of FallbackConfig fields, got {value!r}")
