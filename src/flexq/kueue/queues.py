"""Pending-workload queues: LocalQueue → ClusterQueue routing over one ``PendingQueue`` per ClusterQueue.

Owns: ``QueueManager`` (``manager.go``): LocalQueue → ClusterQueue routing, one head per active ClusterQueue per
cycle, requeue and the "flush the inadmissible workloads of this ClusterQueue or of its whole cohort tree"
operation, and which queues may have a head or changed in a cycle. Each ClusterQueue's heap and parked set are
``flexq.kueue.pending.PendingQueue``.

Pure data structures; time is an argument. Must not import store, runtime, loop or clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flexq.kueue.pending import PendingQueue
from flexq.kueue.workload import WorkloadInfo

__all__ = ["QueueManager", "REQUEUE_BATCH_PERIOD"]

# pkg/cache/queue requeueBatchPeriod: capacity freed in a ClusterQueue moves its cohort tree's inadmissible workloads
# back to their heaps this long after the first change of a batch (the twin's requeuer, the fast forecast)
REQUEUE_BATCH_PERIOD = 1.0


class QueueManager:
    """LocalQueues → ClusterQueues → pending heaps (Kueue ``queue.Manager``)."""

    def __init__(self, requeuing_timestamp: str = "Eviction"):
        self.cluster_queues: dict[str, PendingQueue] = {}
        self.local_queues: dict[str, str] = {}  # "ns/lq" -> cq name
        self.workload_cq: dict[str, str] = {}  # key -> cq
        self.cohort_parent: dict[str, str] = {}
        self.requeuing_timestamp = requeuing_timestamp
        self.priority_sorting = True  # gate PrioritySortingWithinCohort (the queue-order timestamp)
        self._order: list[str] | None = None  # sorted ClusterQueue names, dropped when the set changes
        # queues that may have a workload in their heap (every push adds its queue; ``heads`` drops the empty)
        self._ready: set[str] = set()
        # between ``begin_shape`` and ``shape_changed``: each changed queue's sizes before its first change
        self._touched: dict[str, tuple[int, int]] | None = None
        self._queues_changed = False
        # settled cohort trees (``settle``): their ready queues, kept out of ``_ready`` until something changes
        self._settled: dict[str, set[str]] = {}
        self._settled_root: dict[str, str] = {}  # queue -> its settled tree
        self.on_wake: Callable[[list[PendingQueue]], None] = lambda queues: None
        self.tree_of: Callable[[str], str | None] = lambda name: None  # a queue's cohort tree (the cache's)

    # what the queues tell (``flexq.kueue.pending.QueueWatcher``)
    def queue_changing(self, q: PendingQueue) -> None:
        """Before a change of ``q``'s heap or parked set: its sizes as they were, for ``shape_changed``; a queue
        of a settled cohort tree wakes its tree (``settle``)."""
        if self._touched is not None and q.name not in self._touched:
            self._touched[q.name] = q.sizes
        if self._settled:  # any queue of a settled tree (settled or not) wakes the tree
            tree = self._settled_root.get(q.name) or self.tree_of(q.name)
            if tree is not None and tree in self._settled:
                self.wake(tree)

    def queue_ready(self, name: str) -> None:
        self._ready.add(name)

    # configuration
    def add_or_update_cluster_queue(self, cq: dict) -> PendingQueue:
        """Register or refresh a ClusterQueue."""
        name = cq["metadata"]["name"]
        q = self.cluster_queues.get(name)
        if q is None:
            q = self.cluster_queues[name] = PendingQueue(name, _mgr=self)
            self._order = None
            self._queues_changed = True
        tree = self._settled_root.get(name) or (self.tree_of(name) if self._settled else None)
        if tree is not None and tree in self._settled:
            self.wake(tree)
        q.update(cq)
        if q.items:
            self._ready.add(name)
        return q

    def delete_cluster_queue(self, name: str) -> None:
        """Drop a ClusterQueue and its pending workloads."""
        q = self.cluster_queues.pop(name, None)
        self._order = None
        self._queues_changed = True
        self._ready.discard(name)
        if name in self._settled_root:
            self.wake(self._settled_root[name])
        if q is not None:
            for k in list(q.items) + list(q.inadmissible):
                self.workload_cq.pop(k, None)

    def set_cohorts(self, cohorts: Iterable[dict]) -> None:
        """Cohort parents, for finding the root cohort to flush."""
        self.cohort_parent = {
            c["metadata"]["name"]: (c.get("spec") or {}).get("parentName") or "" for c in cohorts
        }

    def add_or_update_local_queue(self, lq: dict) -> None:
        """Register a LocalQueue."""
        md = lq["metadata"]
        self.local_queues[f"{md.get('namespace', '')}/{md['name']}"] = (lq.get("spec") or {}).get(
            "clusterQueue", ""
        )

    def delete_local_queue(self, namespace: str, name: str) -> None:
        """Forget a LocalQueue (its workloads leave the heaps)."""
        lq = f"{namespace}/{name}"
        self.local_queues.pop(lq, None)
        for k, cqn in list(self.workload_cq.items()):
            if k.startswith(namespace + "/"):
                q = self.cluster_queues.get(cqn)
                info = (q.items.get(k) or q.inadmissible.get(k)) if q is not None else None
                if (
                    q is not None
                    and info is not None
                    and (info.obj.get("spec") or {}).get("queueName") == name
                ):
                    q.delete(k)
                    del self.workload_cq[k]

    def cluster_queue_for(self, wl: dict) -> str | None:
        """ClusterQueue a workload's LocalQueue points at."""
        ns = wl["metadata"].get("namespace", "")
        return self.local_queues.get(f"{ns}/{(wl.get('spec') or {}).get('queueName', '')}")

    # workloads
    def add_or_update_workload(self, wl: dict, now: float, info: WorkloadInfo | None = None) -> bool:
        """Queue a pending workload (returns False when its queue does not exist). ``info``: its
        ``WorkloadInfo`` when the caller already has one of ``wl`` for this queue, read the same way."""
        cqn = self.cluster_queue_for(wl)
        if info is None or info.obj is not wl or info.cluster_queue != (cqn or ""):
            info = WorkloadInfo.from_obj(wl, cqn or "", self.requeuing_timestamp, self.priority_sorting)
        old = self.workload_cq.get(info.key)
        if old is not None and old != cqn and old in self.cluster_queues:
            self.cluster_queues[old].delete(info.key)
            del self.workload_cq[info.key]
        q = self.cluster_queues.get(cqn or "")
        if q is None:
            return False
        prev = q.items.get(info.key) or q.inadmissible.get(info.key)
        if prev is not None and prev.obj.get("spec") == wl.get("spec"):
            info.last_assignment = prev.last_assignment
        self.workload_cq[info.key] = q.name
        q.push_or_update(info, now)
        return True

    def delete_workload(self, key: str) -> None:
        """Remove a workload from every queue."""
        cqn = self.workload_cq.pop(key, None)
        if cqn and cqn in self.cluster_queues:
            self.cluster_queues[cqn].delete(key)

    def shape(self) -> tuple:
        """Heap and inadmissible sizes of every ClusterQueue (a cycle that changes none made no progress)."""
        sizes = [q.sizes for q in self.cluster_queues.values()]
        return tuple(h for h, _ in sizes) + tuple(p for _, p in sizes)

    def begin_shape(self) -> None:
        """Start watching for a change of ``shape()``: only the queues changed from now on are compared by
        ``shape_changed`` (the others have the sizes they had), so a cycle costs what it touched, not the
        number of ClusterQueues."""
        self._touched = {}
        self._queues_changed = False

    def shape_changed(self) -> bool:
        """Whether ``shape()`` differs from what it was at ``begin_shape`` (which it ends)."""
        touched, self._touched = self._touched, None
        if self._queues_changed or touched is None:
            return True
        queues = self.cluster_queues
        for name, sizes in touched.items():
            q = queues.get(name)
            if q is None or q.sizes != sizes:
                return True
        return False

    def ready_queues(self) -> list[PendingQueue]:
        """The queues ``heads`` would pop (active, with a workload in their heap), sorted by name."""
        out = []
        queues = self.cluster_queues
        for name in sorted(self._ready):
            q = queues.get(name)
            if q is not None and q.active and q.items:
                out.append(q)
        return out

    def settle(self, tree: str, names: Iterable[str]) -> None:
        """Keep the ready queues ``names`` of cohort tree ``tree`` out of ``heads`` until ``wake``: the scheduler
        found that a cycle over them changed nothing and nothing they read has changed since."""
        for n in names:
            self._ready.discard(n)
            self._settled_root[n] = tree
            self._settled.setdefault(tree, set()).add(n)

    def wake(self, tree: str) -> None:
        """Something the settled tree's scheduling reads changed: its queues are popped again."""
        names = self._settled.pop(tree, None)
        if not names:
            return
        woken = []
        for n in sorted(names):
            self._settled_root.pop(n, None)
            q = self.cluster_queues.get(n)
            if q is not None:
                if q.items:
                    self._ready.add(n)
                woken.append(q)
        self.on_wake(woken)

    def wake_all(self) -> None:
        for tree in sorted(self._settled):
            self.wake(tree)

    def heads(self) -> list[WorkloadInfo]:
        """Pop one head per active ClusterQueue (sorted by name for determinism). Only the queues that may have
        a workload in their heap are visited (``_ready``): an empty queue's pop would find nothing (its pop
        cycle counter, which upstream also advances on an empty pop, is only compared after a pop, so leaving
        it alone changes no decision)."""
        out = []
        queues = self.cluster_queues
        ready = self._ready
        for name in sorted(ready):
            q = queues.get(name)
            if q is None or not q.items:
                ready.discard(name)
                continue
            if not q.active:
                continue
            info = q.pop()
            if info is not None:
                info.cluster_queue = name
                out.append(info)
            if not q.items:
                ready.discard(name)
        return out

    def requeue_workload(self, info: WorkloadInfo, reason: str, now: float) -> bool:
        """Return a popped head that was not admitted."""
        q = self.cluster_queues.get(info.cluster_queue)
        if q is None or self.workload_cq.get(info.key) != q.name:
            return False
        return q.requeue(info, reason, now)

    def forget_head(self, info: WorkloadInfo) -> None:
        """A popped head got admitted: it no longer belongs to any queue."""
        if self.workload_cq.get(info.key) == info.cluster_queue:
            del self.workload_cq[info.key]
        q = self.cluster_queues.get(info.cluster_queue)
        if q is not None and q.sticky == info.key:
            q.sticky = None

    def root_of(self, cq_name: str) -> str:
        """Root cohort of a ClusterQueue ("" without a cohort)."""
        q = self.cluster_queues.get(cq_name)
        c = q.cohort if q is not None else ""
        seen = set()
        while c and self.cohort_parent.get(c) and c not in seen:
            seen.add(c)
            c = self.cohort_parent[c]
        return c

    def flush_targets(self, cq_names: Iterable[str]) -> set[str]:
        """ClusterQueues a capacity change in ``cq_names`` must flush (their whole cohort trees)."""
        roots = {self.root_of(n) for n in cq_names if n in self.cluster_queues}
        direct = {n for n in cq_names if n in self.cluster_queues and not self.root_of(n)}
        out = set(direct)
        for n in self.cluster_queues:
            r = self.root_of(n)
            if r and r in roots:
                out.add(n)
        return out

    def flush(
        self, cq_names: Iterable[str], now: float, namespace_labels: Callable[[str], dict | None]
    ) -> int:
        """Move inadmissible workloads of these ClusterQueues back to their heaps."""
        return sum(
            self.cluster_queues[n].flush(now, namespace_labels)
            for n in sorted(cq_names)
            if n in self.cluster_queues
        )

    def pending(self, cq_name: str) -> int:
        """Pending workloads (heap + inadmissible) of a ClusterQueue."""
        q = self.cluster_queues.get(cq_name)
        return len(q) if q else 0

    def pending_in_local_queue(self, namespace: str, name: str) -> int:
        """Pending workloads of one LocalQueue."""
        cqn = self.local_queues.get(f"{namespace}/{name}")
        q = self.cluster_queues.get(cqn or "")
        if q is None:
            return 0
        return q.lq_pending.get(f"{namespace}/{name}", 0)
