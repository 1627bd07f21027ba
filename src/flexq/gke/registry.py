"""The explicit list of what flexq.gke contributes to a twin (style rule 6: one list, no side effects).

``controllers(ctx)`` returns this package's controllers for one cluster; ``bootstrap(store)`` seeds objects a
fresh cluster has (idempotent); ``executors(settings)`` returns pod executors (kube, kuberay only).
Project level: ``project_kinds()``, ``project_controllers(ctx)``, ``gke_api(ctx, method, path, body)`` and
``cluster_of(obj)``.
"""

from __future__ import annotations

from typing import Any

from flexq.api.registry import KindInfo
from flexq.gke import api as gke_api_routes
from flexq.gke.autoscaler import Autoscaler
from flexq.gke.backend import cluster_settings
from flexq.gke.billing import BillingController
from flexq.gke.cache import cache_for
from flexq.gke.metrics import GkeMetrics, StockoutTracker
from flexq.gke.nodes import NodeLifecycle, PoolController
from flexq.gke.project import PROJECT_KINDS, OperationsController, backend_for
from flexq.gke.provisioning import ProvisioningRequestController
from flexq.gke.storage import CLUSTER
from flexq.runtime import Context, Controller
from flexq.store import Store


def controllers(ctx: Context) -> list[Controller]:
    """This package's controllers for one cluster (none for a twin's cluster without GKE)."""
    if not ctx.settings.get("gkeCluster") or ctx.project is None:
        return []
    cache_for(ctx.store)  # subscribe the shared cache before the controllers' own watches
    stockouts = StockoutTracker(ctx)
    GkeMetrics(ctx, stockouts, ctx.metrics)
    out: list[Controller] = [PoolController(ctx), NodeLifecycle(ctx), Autoscaler(ctx),
                             ProvisioningRequestController(ctx), BillingController(ctx), stockouts]
    return out


def bootstrap(store: Store) -> None:
    """Objects every fresh cluster starts with (idempotent): none; nodes come from the node pools."""


def executors(settings: dict[str, Any]) -> list[Any]:
    """Pod executors this package provides: none."""
    return []


# -- project level (the GKE API itself, one per twin) ---------------------------------------------
def project_kinds() -> list[KindInfo]:
    """KindInfos of the project-level objects (GKE clusters, node pools, operations, billing, capacity)."""
    return list(PROJECT_KINDS)


def project_controllers(ctx: Context) -> list[Controller]:
    """Controllers over the project store: long-running operations."""
    return [OperationsController(ctx)]


def gke_api(ctx: Context, method: str, path: str, body: dict | None) -> tuple[int, dict]:
    """Serve one container.googleapis.com/v1 REST call in-process. Returns (HTTP status, JSON body)."""
    return gke_api_routes.handle(backend_for(ctx), method, path, body, ctx.now())


def cluster_of(obj: dict) -> tuple[str, dict] | None:
    """If ``obj`` is a GKE cluster of the project store, its (name, settings) for the twin's cluster runtime."""
    if obj.get("kind") != CLUSTER:
        return None
    return obj["spec"]["name"], cluster_settings(obj)
