"""The explicit list of what flexq.kube contributes to a twin (style rule 6: one list, no side effects).

``controllers(ctx)`` returns this package's controllers for one cluster; ``bootstrap(store)`` seeds objects a
fresh cluster has (idempotent); ``executors(settings)`` returns pod executors (kube, kuberay only).
"""

from __future__ import annotations

from typing import Any

from flexq.runtime import Context, Controller
from flexq.store import Store


def controllers(ctx: Context) -> list[Controller]:
    """This package's controllers for one cluster."""
    return []


def bootstrap(store: Store) -> None:
    """Objects every fresh cluster starts with (idempotent)."""


def executors(settings: dict[str, Any]) -> list[Any]:
    """Pod executors this package provides."""
    return []
