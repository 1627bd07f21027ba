"""Project-level GKE pieces: the project store's kinds, the backend bound to it, long-running operations,
and where controllers find the capacity profile.

Owns: ``PROJECT_KINDS`` (GkeCluster, GkeNodePool, GkeOperation, GkeBilling and the CapacityProfile, all
cluster-scoped objects of the project store), ``backend_for(ctx)``, ``OperationsController`` (the only
writer that finishes GKE operations: it calls ``GkeBackend.settle`` when one is due), and
``capacity_for(ctx)`` (the ``CapacityModel`` of the profile in force: the cluster store's ``CapacityProfile``
if that kind is served there, else the project store's, else the built-in live default; the one named
``default`` wins, else the first by name; relative times count from the profile's creation).

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

import json
import random
from typing import Any

from pydantic import ConfigDict

from flexq.api.registry import KindInfo, PrinterColumn
from flexq.api.twin import API_VERSION as TWIN_API_VERSION
from flexq.api.twin import KINDS as TWIN_KINDS
from flexq.api.twin import TwinModel, live_default_profile
from flexq.clock import parse_time
from flexq.errors import NotFound
from flexq.gke.backend import GkeBackend
from flexq.gke.capacity import CapacityModel
from flexq.gke.storage import BILLING, CLUSTER, GROUP, NODE_POOL, OPERATION, StoreStorage
from flexq.runtime import Context, Controller, Result, Watch

__all__ = ["PROJECT_KINDS", "GkeObject", "backend_for", "capacity_for", "OperationsController",
           "profile_object"]


class GkeObject(TwinModel):
    """Envelope of a project-store GKE object: ``spec`` is the GKE resource JSON, ``status`` twin bookkeeping."""

    model_config = ConfigDict(extra="forbid")

    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any]
    spec: dict[str, Any] = {}
    status: dict[str, Any] | None = None


PROJECT_KINDS: list[KindInfo] = [
    KindInfo(GROUP, CLUSTER, "gkeclusters", {"v1": GkeObject}, namespaced=False, status_subresource=False,
             printer_columns=[PrinterColumn("STATUS", ".spec.status"), PrinterColumn("LOCATION", ".spec.location")]),
    KindInfo(GROUP, NODE_POOL, "gkenodepools", {"v1": GkeObject}, namespaced=False, status_subresource=False,
             printer_columns=[PrinterColumn("STATUS", ".spec.status"),
                              PrinterColumn("MACHINE", ".spec.config.machineType")]),
    KindInfo(GROUP, OPERATION, "gkeoperations", {"v1": GkeObject}, namespaced=False, status_subresource=False,
             printer_columns=[PrinterColumn("TYPE", ".spec.operationType"), PrinterColumn("STATUS", ".spec.status")]),
    KindInfo(GROUP, BILLING, "gkebillings", {"v1": GkeObject}, namespaced=False, status_subresource=False),
    *TWIN_KINDS,
]


def profile_object(ctx: Context) -> dict[str, Any]:
    """The CapacityProfile in force (see the module docstring)."""
    for store in (ctx.store, ctx.project):
        if store is None:
            continue
        try:
            profiles = store.list("CapacityProfile")
        except NotFound:
            continue
        if profiles:
            return next((p for p in profiles if p["metadata"]["name"] == "default"), profiles[0])
    return live_default_profile()


_CACHE: dict[tuple[str, float], CapacityModel] = {}


def capacity_for(ctx: Context) -> CapacityModel:
    """The parsed capacity model in force, cached by the profile's content and origin."""
    obj = profile_object(ctx)
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    origin = parse_time(created) if created else ctx.now()
    body = {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "spec")}
    body.setdefault("apiVersion", TWIN_API_VERSION)
    key = (json.dumps(body, sort_keys=True), origin)
    model = _CACHE.get(key)
    if model is None:
        if len(_CACHE) > 64:
            _CACHE.clear()
        model = _CACHE[key] = CapacityModel(body, origin=origin)
    return model


def backend_for(ctx: Context) -> GkeBackend:
    """The GKE backend over the project store; operation durations come from the capacity profile."""
    assert ctx.project is not None
    rng: random.Random = ctx.rngs.get("gke/api")
    return GkeBackend(StoreStorage(ctx.project), rng, op_times=lambda op: capacity_for(ctx).operation_seconds(op),
                      server=lambda: (ctx.settings.get("kube_endpoint"), ctx.settings.get("kube_ca_b64")))


class OperationsController(Controller):
    """Finishes GKE operations when due (writes ``GkeOperation.spec.status/endTime`` and the resources'
    ``status`` transitions PROVISIONING/RECONCILING/STOPPING -> RUNNING or gone, through the backend)."""

    name = "gke-operations"

    def watches(self) -> list[Watch]:
        return [Watch(OPERATION, lambda ev: ["all"] if ev.type != "DELETED" else [], source="cluster")]

    def reconcile(self, key: Any) -> Result | None:
        nxt = backend_for(self.ctx).settle(self.ctx.now())
        return Result(requeue_after=max(0.0, nxt - self.ctx.now())) if nxt is not None else None
