"""Scale-down of a GKE cluster's autoscaled pools (the cluster autoscaler's ``core/scaledown``): nodes with no
running pod are "unneeded"; after ``scale-down-unneeded-time`` (10 min, and ``scale-down-delay-after-add`` after
the newest member of its slice was made) a slice goes whole, down to the pool's min-nodes — never a slice with a
node annotated ``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"``, nor one a ProvisioningRequest
still books (``gke.provisioning.active_booking``; for the OSS classes, the existing nodes its pods would fill).
When a node became unneeded is kept in memory, as upstream's ``unneededNodes`` is (a restarted autoscaler starts
each idle node's 10 minutes afresh). Writes ``ScaleDown`` events and Node deletions (through ``NodeWriter``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.wellknown import CLUSTER_AUTOSCALER_SCALE_DOWN_DISABLED
from flexq.gke.cache import GkeCache
from flexq.gke.nodes import ANN_CREATED_AT, NodeWriter
from flexq.gke.pool_limits import min_nodes
from flexq.gke.provisioning import active_booking, booked_nodes
from flexq.gke.timing import SCALE_DOWN_DELAY_AFTER_ADD, SCALE_DOWN_UNNEEDED_SECONDS
from flexq.runtime.controller import EventRecorder
from flexq.semantics.nodefit import ANN_SLICE
from flexq.store.store import Store

__all__ = ["Layout", "ScaleDown"]


class Layout:
    """Nodes by pool (count, slice id -> members in name order), each node's (pool, slice), the names, and
    each slice's member names and earliest scale-down by age (``scale-down-delay-after-add`` after the
    newest member was created)."""

    __slots__ = ("pools", "slice_of", "names", "members", "not_before")

    def __init__(self) -> None:
        self.pools: dict[str, tuple[int, dict[str, list[dict[str, Any]]]]] = {}
        self.slice_of: dict[str, tuple[str, str]] = {}
        self.names: set[str] = set()
        self.members: dict[tuple[str, str], list[str]] = {}
        self.not_before: dict[tuple[str, str], float] = {}


class ScaleDown:
    """See the module docstring (the autoscaler's step 2)."""

    def __init__(
        self, store: Store, events: EventRecorder, clock: Callable[[], float], writer: NodeWriter
    ) -> None:
        self.store, self.events, self.clock, self.writer = store, events, clock, writer
        # the nodes' slices per pool, derived once per version of the cache's nodes (see _slices)
        self._layout: tuple[int, Layout] | None = None
        # node -> when it was first seen unneeded (cluster-autoscaler's in-memory ``unneededNodes``)
        self._unneeded: dict[str, float] = {}

    def _slices(self, nodes: list[dict[str, Any]], version: int) -> Layout:
        """``nodes`` grouped by pool and slice, kept while the cache's nodes do not change (most passes)."""
        if self._layout is not None and self._layout[0] == version:
            return self._layout[1]
        layout = Layout()
        for n in nodes:
            md = n["metadata"]
            name = md["name"]
            pool = md["labels"].get(catalog.LABEL_NODEPOOL, "")
            ann = md.get("annotations") or {}
            slice_id = ann.get(ANN_SLICE, name)
            count, slices = layout.pools.setdefault(pool, (0, {}))
            slices.setdefault(slice_id, []).append(n)
            layout.pools[pool] = (count + 1, slices)
            layout.slice_of[name] = (pool, slice_id)
        layout.names = set(layout.slice_of)
        for pool, (_, slices) in layout.pools.items():
            for slice_id, members in slices.items():
                layout.members[(pool, slice_id)] = [m["metadata"]["name"] for m in members]
                created = max(
                    float((m["metadata"].get("annotations") or {}).get(ANN_CREATED_AT, 0)) for m in members
                )
                layout.not_before[(pool, slice_id)] = created + SCALE_DOWN_DELAY_AFTER_ADD
        for name in [n for n in self._unneeded if n not in layout.names]:
            del self._unneeded[name]  # the node is gone
        self._layout = (version, layout)
        return layout

    def run(
        self, pools: list[dict[str, Any]], nodes: list[dict[str, Any]], cache: GkeCache, version: int
    ) -> float | None:
        """One pass over the idle slices (``version``: the cache's node version ``nodes`` are at); when the next
        one may go (None: none waits)."""
        now = self.clock()
        busy = cache.busy_nodes()
        busy |= booked_nodes(
            self.store, nodes, cache
        )  # OSS bookings hold existing nodes as if their pods ran
        layout = self._slices(nodes, version)
        # Only slices with a node that is idle, or still marked unneeded, can change or be removed: a slice
        # whose nodes are all busy and unmarked gives "busy" and changes nothing, so it is not looked at.
        unneeded = self._unneeded
        todo: dict[str, set[str]] = {}
        for name in (layout.names - busy).union(unneeded):
            pool_name, slice_id = layout.slice_of[name]
            todo.setdefault(pool_name, set()).add(slice_id)
        wake: float | None = None
        for pool in pools:
            pool_name = pool["spec"]["name"]
            look = todo.get(pool_name)
            if not look:
                continue
            remaining, slices = layout.pools[pool_name]
            for slice_id in sorted(look):
                members = slices[slice_id]
                if any(
                    (n["metadata"].get("annotations") or {}).get(CLUSTER_AUTOSCALER_SCALE_DOWN_DISABLED)
                    == "true"
                    for n in members
                ):
                    continue  # a node annotated scale-down-disabled is never removed (nor is its slice)
                since: list[float | None] = []
                for name in layout.members[(pool_name, slice_id)]:
                    if name in busy:
                        unneeded.pop(name, None)
                        since.append(None)
                    else:
                        since.append(unneeded.setdefault(name, now))  # first seen unneeded now
                if None in since:
                    continue
                deadline = max(
                    max(s for s in since if s is not None) + SCALE_DOWN_UNNEEDED_SECONDS,
                    layout.not_before[(pool_name, slice_id)],
                )
                if any(active_booking(self.store, n) for n in members) or remaining - len(
                    members
                ) < min_nodes(pool):
                    continue
                if deadline > now:
                    wake = deadline if wake is None else min(wake, deadline)
                    continue
                for n in members:
                    self.events.record(
                        n,
                        "Normal",
                        "ScaleDown",
                        "Node removed by cluster autoscaler: empty for "
                        f"{int(SCALE_DOWN_UNNEEDED_SECONDS // 60)} minutes",
                    )
                self.writer.shrink(members)
                remaining -= len(members)
        return wake
