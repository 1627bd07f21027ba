"""GKE's ComputeClass active migration (``activeMigration.optimizeRulePriority``): a slice of a lower-priority
rule whose pods a higher-priority pool can take now gets a new slice there; the old slice is cordoned and its pods
evicted (their controllers recreate them and the scheduler binds them to the new nodes). Only once the class's
pending pods are placed (fallback first); a failed scale-up backs the target off as a scale-up's does
(``NodeGroupBackoff``). Writes Node cordons, Pod deletions and ``ActiveMigration`` events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.wellknown import UNSCHEDULABLE_TAINT
from flexq.errors import NotFound
from flexq.gke.cache import GkeCache
from flexq.gke.compute_class import class_of_pod, class_of_pool, rule_index
from flexq.gke.fit import pack, pool_shape
from flexq.gke.nodes import NodeWriter
from flexq.gke.pool_limits import hosts_per_slice, max_nodes
from flexq.gke.scaleup_backoff import NodeGroupBackoff
from flexq.runtime.controller import EventRecorder
from flexq.semantics.nodefit import ANN_SLICE
from flexq.semantics.pods import is_terminal
from flexq.store.store import Store, clone

__all__ = ["Migrator"]


class Migrator:
    """See the module docstring (the autoscaler's step 1b)."""

    def __init__(
        self,
        store: Store,
        events: EventRecorder,
        clock: Callable[[], float],
        writer: NodeWriter,
        backoff: NodeGroupBackoff,
    ) -> None:
        self.store, self.events, self.clock, self.writer, self.backoff = store, events, clock, writer, backoff

    def run(self, pools: list[dict[str, Any]], nodes: list[dict[str, Any]], cache: GkeCache) -> float | None:
        """``activeMigration.optimizeRulePriority``: a slice of a lower-priority rule whose pods a
        higher-priority pool can take gets a new slice there; the old one is cordoned and its pods evicted
        (their controllers recreate them, and the scheduler binds them to the new nodes)."""
        if not any(class_of_pool(p) for p in pools):
            return None  # no pool bound to a ComputeClass: nothing to migrate (the tutorial's case)
        now = self.clock()
        by_pool = {p["spec"]["name"]: p for p in pools}
        wake: float | None = None
        count: dict[str, int] = {}
        for n in nodes:
            name = n["metadata"]["labels"].get(catalog.LABEL_NODEPOOL, "")
            count[name] = count.get(name, 0) + 1
        if any(class_of_pod(p) for p in cache.pending()):
            return None  # fallback first: migrate only once the class's pending pods are placed
        live: list[dict[str, Any]] | None = None
        slices: dict[str, list[dict[str, Any]]] = {}
        for n in nodes:
            if (n.get("spec") or {}).get("unschedulable"):
                continue
            slices.setdefault(
                n["metadata"].get("annotations", {}).get(ANN_SLICE, n["metadata"]["name"]), []
            ).append(n)
        for members in slices.values():
            pool = by_pool.get(members[0]["metadata"]["labels"].get(catalog.LABEL_NODEPOOL, ""))
            cls = class_of_pool(pool) if pool is not None else None
            cc = self.store.peek("ComputeClass", cls) if cls else None
            migrate = ((cc or {}).get("spec") or {}).get("activeMigration") or {}
            if pool is None or cls is None or cc is None or not migrate.get("optimizeRulePriority"):
                continue
            if live is None:
                live = [
                    p
                    for p in cache.pod_list()
                    if (p.get("spec") or {}).get("nodeName")
                    and not is_terminal(p)
                    and not p["metadata"].get("deletionTimestamp")
                ]
            here = rule_index(cc, pool)
            names = {n["metadata"]["name"] for n in members}
            movers = [p for p in live if p["spec"]["nodeName"] in names and class_of_pod(p) == cls]
            if here is None or here == 0 or not movers:
                continue
            better: list[tuple[int, str, dict[str, Any]]] = []
            for p in pools:
                idx = rule_index(cc, p) if class_of_pool(p) == cls and not p["status"].get("queued") else None
                if idx is not None and idx < here:
                    better.append((idx, p["spec"]["name"], p))
            better.sort(key=lambda b: (b[0], b[1]))
            for _, target_name, target in better:
                if self.backoff.until.get(target_name, 0.0) > now:
                    wake = (
                        self.backoff.until[target_name]
                        if wake is None
                        else min(wake, self.backoff.until[target_name])
                    )
                    continue
                hosts = hosts_per_slice(target)
                room = (max_nodes(target) - count.get(target_name, 0)) // hosts * hosts
                n_nodes, placed = pack(movers, pool_shape(target), room) if room > 0 else (0, [])
                if len(placed) < len(movers):
                    continue
                n_nodes = min(room, -(-n_nodes // hosts) * hosts)
                got = self.writer.grow(target, n_nodes)
                if not got.ok:
                    self.backoff.until[target_name] = now + self.backoff.streak(target_name, now)
                    wake = (
                        self.backoff.until[target_name]
                        if wake is None
                        else min(wake, self.backoff.until[target_name])
                    )
                    continue
                count[target_name] = count.get(target_name, 0) + n_nodes
                self.backoff.fail_streak.pop(target_name, None)
                self._evict(members, movers, cls, target_name)
                break
        return wake

    def _evict(
        self, members: list[dict[str, Any]], movers: list[dict[str, Any]], cls: str, target: str
    ) -> None:
        for n in members:
            node = clone(n)
            node.setdefault("spec", {})["unschedulable"] = True
            taints = node["spec"].setdefault("taints", [])
            if not any(t.get("key") == UNSCHEDULABLE_TAINT for t in taints):
                taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
            self.store.update(node)
            self.events.record(
                n,
                "Normal",
                "ActiveMigration",  # [inferred wording]
                f"Node cordoned by cluster autoscaler: ComputeClass {cls} prefers node pool {target}",
            )
        for p in movers:
            self.events.record(
                p,
                "Normal",
                "ActiveMigration",  # [inferred wording]
                f"Pod evicted by cluster autoscaler to move it to a higher-priority node pool "
                f"{target} of ComputeClass {cls}",
            )
            with contextlib.suppress(NotFound):
                self.store.delete("Pod", p["metadata"]["name"], p["metadata"].get("namespace", "default"))
