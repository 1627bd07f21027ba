"""The usage a preemption search releases, kept beside the cycle's snapshot instead of in it.

Owns ``Snapshot.remove_workload``/``add_workload``'s arithmetic (``removeUsage``/``addUsage`` along the cohort
tree, lending limits included) and ``available`` over those usages, for the flavor-resources a search reads;
for a search of one flavor-resource (most: a workload of one resource in one flavor), the same as plain numbers
(``ReleasedOne``). Pure; read by ``flexq.kueue.preemption`` only. Must not import store, runtime, loop or clock.
"""

from __future__ import annotations

from flexq.kueue.resources import FlavorResource
from flexq.kueue.snapshot import ClusterQueueSnapshot, Node
from flexq.kueue.workload import WorkloadInfo


class Released:
    """The usage a set of taken candidates releases, per node and flavor-resource, kept beside the snapshot
    instead of in it: ``remove``/``add`` follow ``Snapshot.remove_workload``/``add_workload``'s arithmetic
    (``removeUsage``/``addUsage`` along the tree, lending limits included) for the flavor-resources a search
    reads, so ``usage`` and ``available`` are what the snapshot would hold after the same removals, in the same
    order, without changing the snapshot and putting everything back (a search that takes dozens of candidates
    before one fits, then fills most of them back, did a dictionary copy and a walk up the tree for each)."""

    __slots__ = ("frs", "d")

    def __init__(self, frs: set[FlavorResource]) -> None:
        self.frs = frs
        self.d: dict[Node, dict[FlavorResource, int]] = {}

    def usage(self, node: Node, fr: FlavorResource) -> int:
        got = self.d.get(node)
        return node.usage.get(fr, 0) - (got.get(fr, 0) if got is not None else 0)

    def _release(self, node: Node, fr: FlavorResource, val: int) -> None:
        got = self.d.get(node)
        if got is None:
            got = self.d[node] = {}
        got[fr] = got.get(fr, 0) + val

    def remove(self, info: WorkloadInfo, cq: ClusterQueueSnapshot | None) -> None:
        """``Snapshot.remove_workload`` of ``info`` held by ``cq``: ``removeUsage`` releases what the node
        stored in its parent first."""
        if cq is None:
            return
        for fr, val in info.flavor_usage().items():
            if fr not in self.frs:
                continue
            node: Node = cq
            while True:
                stored = self.usage(node, fr) - node.local_quota(fr)
                self._release(node, fr, val)
                parent = node.parent
                if stored <= 0 or parent is None:
                    break
                val, node = min(val, stored), parent

    def add(self, info: WorkloadInfo, cq: ClusterQueueSnapshot | None) -> None:
        """``Snapshot.add_workload`` of ``info`` held by ``cq``: ``addUsage`` charges the parent what the local
        quota cannot hold."""
        if cq is None:
            return
        for fr, val in info.flavor_usage().items():
            if fr not in self.frs:
                continue
            node: Node = cq
            while True:
                local = max(0, node.local_quota(fr) - self.usage(node, fr))
                self._release(node, fr, -val)
                parent = node.parent
                if parent is None or val <= local:
                    break
                val, node = val - local, parent

    def local_quota(self, node: Node, fr: FlavorResource) -> int:
        """``node.local_quota(fr)`` (``ReleasedOne`` reads it once per search)."""
        return node.local_quota(fr)

    def available(self, node: Node, fr: FlavorResource) -> int:
        """``snapshot.available`` over these usages (may be negative)."""
        if node.parent is None:
            return node.subtree_quota.get(fr, 0) - self.usage(node, fr)
        parent_available = self.available(node.parent, fr)
        bl = node.quota(fr).borrowing_limit
        lq = self.local_quota(node, fr)
        usage = self.usage(node, fr)
        if bl is not None:
            stored_in_parent = node.subtree_quota.get(fr, 0) - lq
            used_in_parent = max(0, usage - lq)
            parent_available = min(stored_in_parent - used_in_parent + bl, parent_available)
        return max(0, lq - usage) + parent_available


class ReleasedOne(Released):
    """``Released`` for a search that reads one flavor-resource (most do: a workload of one resource in one
    flavor): the usage released per node as a plain number, each node's local quota read once per search. The
    same arithmetic, with ``fr`` always the one tracked."""

    __slots__ = ("fr", "n", "lq")

    def __init__(self, fr: FlavorResource) -> None:
        super().__init__({fr})
        self.fr = fr
        self.n: dict[Node, int] = {}
        self.lq: dict[Node, int] = {}

    def usage(self, node: Node, fr: FlavorResource) -> int:
        return node.usage.get(fr, 0) - self.n.get(node, 0)

    def _release(self, node: Node, fr: FlavorResource, val: int) -> None:
        n = self.n
        n[node] = n.get(node, 0) + val

    def local_quota(self, node: Node, fr: FlavorResource) -> int:
        lq = self.lq.get(node)
        if lq is None:
            lq = self.lq[node] = node.local_quota(self.fr)
        return lq

    def remove(self, info: WorkloadInfo, cq: ClusterQueueSnapshot | None) -> None:
        fr = self.fr
        val = info.flavor_usage().get(fr)
        if cq is None or val is None:
            return
        n = self.n
        node: Node = cq
        while True:
            released = n.get(node, 0)
            stored = node.usage.get(fr, 0) - released - self.local_quota(node, fr)
            n[node] = released + val
            parent = node.parent
            if stored <= 0 or parent is None:
                return
            val, node = min(val, stored), parent

    def add(self, info: WorkloadInfo, cq: ClusterQueueSnapshot | None) -> None:
        fr = self.fr
        val = info.flavor_usage().get(fr)
        if cq is None or val is None:
            return
        n = self.n
        node: Node = cq
        while True:
            released = n.get(node, 0)
            local = max(0, self.local_quota(node, fr) - (node.usage.get(fr, 0) - released))
            n[node] = released - val
            parent = node.parent
            if parent is None or val <= local:
                return
            val, node = val - local, parent


def released_for(frs: set[FlavorResource]) -> Released:
    """The usage beside the snapshot for a search reading ``frs``."""
    if len(frs) == 1:
        return ReleasedOne(next(iter(frs)))
    return Released(frs)
