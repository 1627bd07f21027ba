"""What flexq.fallback contributes to a twin: the fallback controller, when the twin's ``fallback`` setting is on.

Off by default: the twin is the tutorial's system, and flexq's own policy is something a user turns on
(``Twin(fallback=True)``, ``flexq up --fallback``, or a ``flexq simulate`` variant), then opts queues in with the
``fallback.flexq.dev/enabled: "true"`` label on their LocalQueues.
"""

from __future__ import annotations

from flexq.fallback.controller import FallbackController, config_from_settings
from flexq.runtime import Context, Controller, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.store import Store


def controllers(ctx: Context) -> list[Controller]:
    config = config_from_settings(ctx.settings)
    return [FallbackController(ctx, config)] if config is not None else []


def bootstrap(store: Store) -> None:
    """Nothing: the state ConfigMap is written on the first stock-out."""


def executors(settings: TwinSettings) -> list[PodExecutor]:
    return []
