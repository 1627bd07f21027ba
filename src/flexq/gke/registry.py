"""The explicit list of what flexq.gke contributes to a twin (style rule 6: one list, no side effects).

``controllers(ctx)`` returns this package's controllers for one cluster (with the cluster's one ``GkeCache``,
``CapacitySource`` and ``NodeWriter``, made here and handed to them); ``bootstrap(store)`` seeds objects a
fresh cluster has (idempotent); ``executors(settings)`` returns pod executors (kube, kuberay only).
Project level: ``project_kinds()``, ``project(ctx)`` (the twin's ``GkeProject``, made once by the assembly),
``project_controllers(project)``, ``gke_api(project, method, path, body)`` and
``cluster_of(obj)``.
"""

from __future__ import annotations

from flexq.api.registry import KindInfo
from flexq.gke import rest as gke_api_routes
from flexq.gke.autoscaler import Autoscaler
from flexq.gke.backend import cluster_settings
from flexq.gke.billing import BillingController
from flexq.gke.cache import GkeCache
from flexq.gke.metrics import GkeMetrics, StockoutTracker
from flexq.gke.nodes import NodeLifecycle, NodeWriter, PoolController
from flexq.gke.project import PROJECT_KINDS, CapacitySource, GkeProject, OperationsController
from flexq.gke.provisioning import ProvisioningRequestController
from flexq.gke.storage import CLUSTER
from flexq.runtime import ClusterSettings, Context, Controller, TwinSettings
from flexq.runtime.executor import PodExecutor
from flexq.store import Store


def controllers(ctx: Context) -> list[Controller]:
    """This package's controllers for one cluster (none for a twin's cluster without GKE)."""
    if not ctx.cluster_settings.gke_cluster or ctx.project is None:
        return []
    cache = GkeCache(ctx.store)  # subscribed before the controllers' own watches
    writer = NodeWriter(ctx, cache, CapacitySource(ctx))
    stockouts = StockoutTracker(ctx)
    billing = BillingController(ctx, cache)
    GkeMetrics(ctx, stockouts, ctx.metrics, cache, billing)
    out: list[Controller] = [
        PoolController(ctx, writer),
        NodeLifecycle(ctx, writer),
        Autoscaler(ctx, writer),
        ProvisioningRequestController(ctx, writer),
        billing,
        stockouts,
    ]
    return out


def bootstrap(store: Store) -> None:
    """Objects every fresh cluster starts with (idempotent): none; nodes come from the node pools."""


def executors(settings: TwinSettings) -> list[PodExecutor]:
    """Pod executors this package provides: none."""
    return []


# -- project level (the GKE API itself, one per twin) ---------------------------------------------
def project_kinds() -> list[KindInfo]:
    """KindInfos of the project-level objects (GKE clusters, node pools, operations, billing, capacity)."""
    return list(PROJECT_KINDS)


def project(ctx: Context) -> GkeProject:
    """The twin's GKE project over the project store (its capacity source and backend); one per twin."""
    return GkeProject(ctx)


def project_controllers(project: GkeProject) -> list[Controller]:
    """Controllers over the project store: long-running operations."""
    return [OperationsController(project)]


def gke_api(project: GkeProject, method: str, path: str, body: dict | None) -> tuple[int, dict]:
    """Serve one container.googleapis.com/v1 REST call in-process. Returns (HTTP status, JSON body)."""
    return gke_api_routes.handle(project.backend(), method, path, body, project.ctx.now())


def cluster_of(obj: dict) -> tuple[str, ClusterSettings] | None:
    """If ``obj`` is a GKE cluster of the project store, its (name, settings) for the twin's cluster runtime."""
    if obj.get("kind") != CLUSTER:
        return None
    return obj["spec"]["name"], ClusterSettings.from_mapping(cluster_settings(obj))
