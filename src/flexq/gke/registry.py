"""The explicit list of what flexq.gke contributes to a twin (style rule 6: one list, no side effects).

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


# -- project level (the GKE API itself, one per twin) ---------------------------------------------
def project_kinds() -> list[Any]:
    """KindInfos of the project-level objects (GKE clusters, node pools, operations) kept in the project store."""
    return []


def project_controllers(ctx: Context) -> list[Controller]:
    """Controllers over the project store (e.g. long-running operations, cluster lifecycle)."""
    return []


def gke_api(ctx: Context, method: str, path: str, body: dict | None) -> tuple[int, dict]:
    """Serve one container.googleapis.com/v1 (and resource manager / service usage) REST call in-process.

    Returns (HTTP status, JSON body). Runs on the loop thread; ``ctx`` is the project context
    (``ctx.store`` is the project store).
    """
    return 404, {"error": {"code": 404, "message": f"{method} {path}: the GKE API is not available yet",
                           "status": "NOT_FOUND"}}


def cluster_of(obj: dict) -> tuple[str, dict] | None:
    """If ``obj`` (a project-store object) is a GKE cluster, its (name, settings) for the twin to build a
    Kubernetes cluster runtime from (settings: e.g. {"addons": ["RayOperator"]}); otherwise None."""
    return None
