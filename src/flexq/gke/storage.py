"""Where the GKE backend keeps its state: a tiny storage interface, an in-memory one, and one over a Store.

Owns: ``GkeStorage`` (get / put / delete / list of plain dicts by kind and name), the project-level kinds
(``GkeCluster``, ``GkeNodePool``, ``GkeOperation``, ``GkeBilling`` in ``gke.twin.flexq.dev/v1``), their
object envelope (``spec`` = the GKE resource JSON exactly as the API returns it, ``status`` = twin-only
bookkeeping) and their names (``<project>.<location>.<cluster>[.<pool>]``). The backend is written against
``GkeStorage`` only, so it runs the same over a dict (unit tests) or over the twin's project store.

Must not import flexq.runtime, other domain packages or flexq.http.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from flexq.api.jsoncopy import clone
from flexq.api.wellknown import GKE_NODE_POOL_KIND
from flexq.errors import NotFound

__all__ = [
    "GROUP",
    "API_VERSION",
    "CLUSTER",
    "NODE_POOL",
    "OPERATION",
    "BILLING",
    "GkeStorage",
    "MemoryStorage",
    "StoreStorage",
    "cluster_key",
    "pool_key",
    "envelope",
]

GROUP = "gke.twin.flexq.dev"
API_VERSION = f"{GROUP}/v1"
CLUSTER, NODE_POOL, OPERATION, BILLING = "GkeCluster", GKE_NODE_POOL_KIND, "GkeOperation", "GkeBilling"


def cluster_key(project: str, location: str, cluster: str) -> str:
    return f"{project}.{location}.{cluster}"


def pool_key(project: str, location: str, cluster: str, pool: str) -> str:
    return f"{project}.{location}.{cluster}.{pool}"


def envelope(
    kind: str,
    name: str,
    spec: dict[str, Any],
    status: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A project-store object wrapping one GKE resource."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec, "status": status or {}}


class GkeStorage(Protocol):
    """What the backend needs from a store: plain dicts with ``kind`` and ``metadata.name``."""

    def get(self, kind: str, name: str) -> dict[str, Any] | None: ...

    def put(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def delete(self, kind: str, name: str) -> None: ...

    def list(self, kind: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]: ...


def _labels_match(obj: dict[str, Any], labels: dict[str, str] | None) -> bool:
    have = obj.get("metadata", {}).get("labels") or {}
    return all(have.get(k) == v for k, v in (labels or {}).items())


class MemoryStorage:
    """A dict of dicts, for unit tests and tools."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        import copy

        obj = self.objects.get((kind, name))
        return copy.deepcopy(obj) if obj is not None else None

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        import copy

        self.objects[(obj["kind"], obj["metadata"]["name"])] = copy.deepcopy(obj)
        return obj

    def delete(self, kind: str, name: str) -> None:
        self.objects.pop((kind, name), None)

    def list(self, kind: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
        import copy

        return [
            copy.deepcopy(o)
            for (k, n), o in sorted(self.objects.items())
            if k == kind and _labels_match(o, labels)
        ]


class StoreStorage:
    """GkeStorage over a flexq Store (the twin's project store). Writes keep the object's resourceVersion
    checks: a stale put raises Conflict, which the controller runtime retries."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        obj: dict[str, Any] | None = self.store.try_get(kind, name)
        return obj

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        cur = self.store.try_get(obj["kind"], name)
        if cur is None:
            out: dict[str, Any] = clone(self.store.create(obj))  # the stored version is read-only
            return out
        new = dict(obj)
        meta = dict(cur["metadata"])
        meta["labels"] = obj["metadata"].get("labels") or meta.get("labels")
        new["metadata"] = meta
        out = clone(self.store.update(new))
        return out

    def delete(self, kind: str, name: str) -> None:
        with contextlib.suppress(NotFound):
            self.store.delete(kind, name)

    def list(self, kind: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or None
        out: list[dict[str, Any]] = self.store.list(kind, label_selector=selector)
        return out
