"""Project-level GKE pieces: the project store's kinds, the backend bound to it, long-running operations,
and where controllers find the capacity profile.

Owns: ``PROJECT_KINDS`` (GkeCluster, GkeNodePool, GkeOperation, GkeBilling and the CapacityProfile, all
cluster-scoped objects of the project store), ``OperationsController`` (the only
writer that finishes GKE operations: it calls ``GkeBackend.settle`` when one is due), and
``CapacitySource`` (the ``CapacityModel`` of the profile in force: the cluster store's ``CapacityProfile``
if that kind is served there, else the project store's, else the built-in live default; the one named
``default`` wins, else the first by name; relative times count from the profile's creation; one per cluster,
made by the registry, its model kept until a CapacityProfile changes) and ``GkeProject`` (the project's own
``CapacitySource`` and the backend over the project store; one per twin, made by the assembly).

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

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
from flexq.store import Store, Subscription, WatchEvent

__all__ = ["PROJECT_KINDS", "CapacitySource", "GkeObject", "GkeProject", "OperationsController",
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


class CapacitySource:
    """The parsed capacity model in force for one context. The profile object is looked up again only after a
    CapacityProfile of the context's stores changed (a store watch drops it), and the model is rebuilt only
    when the profile's (uid, resourceVersion, origin) differs from the one it was built from."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._profile: dict[str, Any] | None = None
        self._key: tuple[Any, ...] | None = None
        self._model: CapacityModel | None = None
        self._subs: list[Subscription] = []
        stores: list[Store] = []
        for store in (ctx.store, ctx.project):
            if store is not None and all(store is not s for s in stores):
                stores.append(store)
        for store in stores:
            try:
                self._subs.append(store.watch(self._changed, ["CapacityProfile"]))
            except NotFound:
                continue  # that store has no such kind

    def _changed(self, ev: WatchEvent) -> None:
        self._profile = None

    def model(self) -> CapacityModel:
        if self._profile is None:
            self._profile = profile_object(self.ctx)
        obj = self._profile
        meta = obj.get("metadata") or {}
        created = meta.get("creationTimestamp")
        origin = parse_time(created) if created else self.ctx.now()
        key = (meta.get("uid"), meta.get("resourceVersion"), origin)
        if self._model is None or key != self._key:
            body = {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "spec")}
            body.setdefault("apiVersion", TWIN_API_VERSION)
            self._model, self._key = CapacityModel(body, origin=origin), key
        return self._model

    def close(self) -> None:
        for sub in self._subs:
            sub.cancel()


class GkeProject:
    """The twin's GKE project: its capacity source and the GKE backend over the project store."""

    def __init__(self, ctx: Context) -> None:
        assert ctx.project is not None
        self.ctx = ctx
        self.capacity = CapacitySource(ctx)

    def backend(self) -> GkeBackend:
        """The GKE backend over the project store; operation durations come from the capacity profile."""
        ctx = self.ctx
        assert ctx.project is not None
        rng: random.Random = ctx.rngs.get("gke/api")
        return GkeBackend(StoreStorage(ctx.project), rng, op_times=lambda op: self.capacity.model().operation_seconds(op),
                          server=lambda: (ctx.settings.kube_endpoint, ctx.settings.kube_ca_b64))


class OperationsController(Controller):
    """Finishes GKE operations when due (writes ``GkeOperation.spec.status/endTime`` and the resources'
    ``status`` transitions PROVISIONING/RECONCILING/STOPPING -> RUNNING or gone, through the backend)."""

    name = "gke-operations"

    def __init__(self, project: GkeProject) -> None:
        super().__init__(project.ctx)
        self.project = project

    def watches(self) -> list[Watch]:
        return [Watch(OPERATION, lambda ev: ["all"] if ev.type != "DELETED" else [], source="cluster")]

    def reconcile(self, key: Any) -> Result | None:
        nxt = self.project.backend().settle(self.ctx.now())
        return Result(requeue_after=max(0.0, nxt - self.ctx.now())) if nxt is not None else None
