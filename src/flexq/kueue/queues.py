"""Pending-workload queues: one heap per ClusterQueue plus its inadmissible set, as Kueue keeps them.

Owns: ``PendingQueue`` (``pkg/cache/queue/cluster_queue.go``): heap order (sticky preemptor first
under BestEffortFIFO, then higher priority, earlier queue-order timestamp, UID), BestEffortFIFO vs
StrictFIFO requeue rules, inadmissible parking with backoff (``requeueState.requeueAt``,
``Requeued=False``), the pop/flush cycle counters that let a workload popped before a flush go
straight back to the heap, and ``QueueManager`` (``manager.go``): LocalQueue → ClusterQueue
routing, one head per active ClusterQueue per cycle, requeue and the "flush the inadmissible
workloads of this ClusterQueue or of its whole cohort tree" operation.

Pure data structures; time is an argument. Must not import store, runtime, loop or clock.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter

from flexq.kueue.workload import WorkloadInfo, parse_ts
from flexq.semantics.conditions import find_condition
from flexq.semantics.selectors import label_selector_matches

__all__ = ["PendingQueue", "QueueManager", "backoff_expired"]

IMMEDIATE_BEST_EFFORT = {"FailedAfterNomination", "PendingPreemption", "PendingMigration", "PreemptionFailed"}


def backoff_expired(info: WorkloadInfo, now: float) -> bool:
    """``backoffWaitingTimeExpired``: not Requeued=False and ``requeueAt`` reached."""
    held, at = info.backoff_gate
    return not held and (at is None or now >= at)


_ENTRY = attrgetter("heap_entry")
_NAMESPACE = attrgetter("namespace")
_CLEAR = attrgetter("backoff_clear")
_HASH = attrgetter("scheduling_hash")
_ITEMS = attrgetter("items")
_INADMISSIBLE = attrgetter("inadmissible")


def _local_queue(info: WorkloadInfo) -> str:
    """``<namespace>/<queueName>`` of a workload (the LocalQueue it was submitted to)."""
    return f"{info.namespace}/{(info.obj.get('spec') or {}).get('queueName', '')}"


def _sort_key(info: WorkloadInfo) -> tuple:
    return info.heap_entry


def _queue_relevant(info: WorkloadInfo) -> tuple:
    st = info.obj.get("status") or {}
    return (
        info.obj.get("spec"),
        st.get("reclaimablePods"),
        find_condition(info.obj, "Evicted"),
        find_condition(info.obj, "Requeued"),
    )


@dataclass
class PendingQueue:
    """Pending workloads of one ClusterQueue."""

    name: str
    strategy: str = "BestEffortFIFO"
    namespace_selector: dict | None = None
    active: bool = True
    cohort: str = ""
    heap: list = field(default_factory=list)
    items: dict[str, WorkloadInfo] = field(default_factory=dict)  # in the heap
    inadmissible: dict[str, WorkloadInfo] = field(default_factory=dict)
    pop_cycle: int = 0
    flush_cycle: int = -1
    sticky: str | None = None
    bulk_moved: dict[str, str] = field(default_factory=dict)  # SchedulingEquivalenceHashing: hash -> reason
    lq_pending: dict[str, int] = field(
        default_factory=dict
    )  # "ns/queueName" -> workloads in heap or inadmissible
    _counted: dict[str, str] = field(default_factory=dict)  # key -> the "ns/queueName" it is counted under
    # the manager that tracks which queues may have a head and which changed in a cycle (None alone)
    _mgr: QueueManager | None = field(default=None, repr=False, compare=False)

    def _touch(self) -> None:
        """Before a change of the heap or the parked set: the sizes as they were, for ``shape_changed``; a queue
        of a settled cohort tree wakes its tree (``QueueManager.settle``)."""
        m = self._mgr
        if m is not None:
            if m._touched is not None and self.name not in m._touched:
                m._touched[self.name] = (len(self.items), len(self.inadmissible))
            if m._settled:  # any queue of a settled tree (settled or not) wakes the tree
                tree = m._settled_root.get(self.name) or m.tree_of(self.name)
                if tree is not None and tree in m._settled:
                    m.wake(tree)

    def peek(self) -> WorkloadInfo | None:
        """The head ``pop`` would return, left in place (dead heap entries on top are dropped, as ``pop``
        would skip them)."""
        if self.sticky is not None and self.sticky in self.items:
            return self.items[self.sticky]
        heap, items = self.heap, self.items
        while heap:
            e = heap[0]
            top = items.get(e[4])
            if top is not None and top.serial == e[3]:
                return top
            heapq.heappop(heap)
        return None

    def update(self, cq: dict) -> None:
        """Take strategy, selector and the Active condition from a ClusterQueue object."""
        spec = cq.get("spec") or {}
        self.strategy = spec.get("queueingStrategy") or "BestEffortFIFO"
        self.namespace_selector = spec.get("namespaceSelector")
        self.cohort = spec.get("cohortName") or spec.get("cohort") or ""
        c = find_condition(cq, "Active")
        self.active = c is not None and c.get("status") == "True"

    # heap primitives. The heap holds ``WorkloadInfo.heap_entry`` tuples (queue order, serial, key) and
    # deletes lazily: an entry is live while ``items[key]`` is the info with that serial.
    def _push(self, info: WorkloadInfo) -> None:
        self.items[info.key] = info
        heapq.heappush(self.heap, info.heap_entry)
        if self._mgr is not None:
            self._mgr._ready.add(self.name)

    def _pop_live(self) -> WorkloadInfo | None:
        if self.sticky is not None and self.sticky in self.items:
            info = self.items.pop(self.sticky)
            return info
        heap, items = self.heap, self.items
        while heap:
            e = heapq.heappop(heap)
            top = items.get(e[4])
            if top is not None and top.serial == e[3]:
                del items[e[4]]
                return top
        return None

    def __len__(self) -> int:
        return len(self.items) + len(self.inadmissible)

    def _recount(self, key: str) -> None:
        """Keep ``lq_pending`` in step after ``key`` joined, left or changed in heap ∪ inadmissible."""
        info = self.items.get(key) or self.inadmissible.get(key)
        lq = None if info is None else _local_queue(info)
        old = self._counted.get(key)
        if old == lq:
            return
        if old is not None:
            n = self.lq_pending[old] - 1
            if n:
                self.lq_pending[old] = n
            else:
                del self.lq_pending[old]
        if lq is None:
            del self._counted[key]
        else:
            self._counted[key] = lq
            self.lq_pending[lq] = self.lq_pending.get(lq, 0) + 1

    def push_or_update(self, info: WorkloadInfo, now: float) -> None:
        """``PushOrUpdate``: a new or changed pending workload."""
        self._touch()
        self._push_or_update(info, now)
        self._recount(info.key)

    def _push_or_update(self, info: WorkloadInfo, now: float) -> None:
        old = self.inadmissible.get(info.key)
        if old is not None:
            if _queue_relevant(old) == _queue_relevant(info):
                self.inadmissible[info.key] = info
                return
            del self.inadmissible[info.key]
        if info.key not in self.items and not backoff_expired(info, now):
            self.inadmissible[info.key] = info
            return
        if (
            self.strategy == "BestEffortFIFO"
            and info.key not in self.items
            and info.scheduling_hash in self.bulk_moved
        ):
            self.inadmissible[info.key] = info  # an equivalent workload just failed: skip the evaluation
            return
        self._push(info)

    def delete(self, key: str) -> None:
        """Forget a workload."""
        self._touch()
        self.inadmissible.pop(key, None)
        self.items.pop(key, None)
        if self.sticky == key:
            self.sticky = None
        self._recount(key)

    def pop(self) -> WorkloadInfo | None:
        """Remove and return the head."""
        self._touch()
        self.pop_cycle += 1
        info = self._pop_live()
        if info is not None:
            self._recount(info.key)
        return info

    def requeue(self, info: WorkloadInfo, reason: str, now: float) -> bool:
        """``RequeueIfNotPresent``: back to the heap or parked as inadmissible."""
        self._touch()
        out = self._requeue(info, reason, now)
        self._recount(info.key)
        return out

    def _requeue(self, info: WorkloadInfo, reason: str, now: float) -> bool:
        if self.strategy == "StrictFIFO":
            immediate = reason != "NamespaceMismatch"
        else:
            immediate = reason in IMMEDIATE_BEST_EFFORT
        if reason in ("PendingPreemption", "PendingMigration"):
            self.sticky = info.key if self.strategy == "BestEffortFIFO" else None
        last = info.last_assignment
        pending = bool(last is not None and last.pending_flavors())
        if backoff_expired(info, now) and (immediate or self.flush_cycle >= self.pop_cycle or pending):
            if info.key in self.inadmissible:
                self._push(self.inadmissible.pop(info.key))
                return True
            if info.key in self.items:
                return False
            self._push(info)
            return True
        if info.key in self.inadmissible or info.key in self.items:
            return False
        self.inadmissible[info.key] = info
        if self.strategy == "BestEffortFIFO" and reason in ("NoFit", "PreemptionNoCandidates"):
            # SchedulingEquivalenceHashing (default on since v0.18): equivalent heap workloads would get
            # the same answer, so they are bulk-moved to inadmissible until the next flush.
            h = info.scheduling_hash
            self.bulk_moved[h] = reason
            items = self.items
            moved = dict(compress(items.items(), map(h.__eq__, map(_HASH, items.values()))))
            if moved:
                self.inadmissible.update(moved)
                if 2 * len(moved) > len(items):
                    self.items = items = dict(
                        compress(items.items(), map(h.__ne__, map(_HASH, items.values())))
                    )
                else:
                    for k in moved:
                        del items[k]
                if len(self.heap) > 2 * len(items) + 64:
                    self._compact()
        return True

    def _compact(self) -> None:
        """Rebuild the heap from the live items (drops the dead entries ``_pop_live`` would skip one by one)."""
        self.heap = list(map(_ENTRY, self.items.values()))
        heapq.heapify(self.heap)

    def flush(self, now: float, namespace_labels: Callable[[str], dict | None]) -> int:
        """``queueInadmissibleWorkloads``: move eligible inadmissible workloads back to the heap."""
        self._touch()
        self.flush_cycle = self.pop_cycle
        self.bulk_moved.clear()
        inad = self.inadmissible
        if not inad:
            return 0
        selected: dict[str, bool] = {}  # namespace -> matches the selector (asked once per flush)
        for ns in set(map(_NAMESPACE, inad.values())):
            labels = namespace_labels(ns)
            selected[ns] = labels is not None and label_selector_matches(self.namespace_selector, labels)
        if all(selected.values()) and all(map(_CLEAR, inad.values())):
            moving = dict(inad)  # the usual case: every parked workload goes back
            inad.clear()
        else:
            moving = {k: i for k, i in inad.items() if selected[i.namespace] and backoff_expired(i, now)}
            for k in moving:
                del inad[k]
        if len(moving) < 8:
            for info in moving.values():
                self._push(info)
        else:
            self.items.update(moving)
            self._compact()
            if self._mgr is not None:
                self._mgr._ready.add(self.name)
        return len(moving)

    def snapshot(self) -> list[WorkloadInfo]:
        """All pending workloads in queue order (visibility)."""
        allw = list(self.items.values()) + list(self.inadmissible.values())
        return sorted(allw, key=lambda i: (i.key != self.sticky, _sort_key(i)))

    def next_requeue_at(self) -> float | None:
        """Earliest ``requeueAt`` among parked workloads (when the controller should flush again)."""
        out = None
        for info in self.inadmissible.values():
            at = ((info.obj.get("status") or {}).get("requeueState") or {}).get("requeueAt")
            if at:
                t = parse_ts(at)
                out = t if out is None else min(out, t)
        return out


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
        qs = self.cluster_queues.values()
        return tuple(map(len, map(_ITEMS, qs))) + tuple(map(len, map(_INADMISSIBLE, qs)))

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
            if q is None or (len(q.items), len(q.inadmissible)) != sizes:
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
