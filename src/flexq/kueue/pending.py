"""The pending workloads of one ClusterQueue: its heap plus its inadmissible set, as Kueue keeps them.

Owns: ``PendingQueue`` (``pkg/cache/queue/cluster_queue.go``): heap order (sticky preemptor first
under BestEffortFIFO, then higher priority, earlier queue-order timestamp, UID), BestEffortFIFO vs
StrictFIFO requeue rules, inadmissible parking with backoff (``requeueState.requeueAt``,
``Requeued=False``), and the pop/flush cycle counters that let a workload popped before a flush go
straight back to the heap. ``flexq.kueue.queues`` routes workloads to these queues (``manager.go``).

A queue keeps its workloads in groups of one scheduling hash (BestEffortFIFO; one group under StrictFIFO), each
group in the heap or parked: the bulk move of SchedulingEquivalenceHashing and a flush move whole groups, and a
parked workload keeps its (dormant) heap entry, so a deep queue's flush-then-bulk-move per event costs what changed,
not the queue's length. ``items`` and ``inadmissible`` are read-only views of the two states.

Pure data structures; time is an argument. Must not import store, runtime, loop or clock.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Protocol

from flexq.kueue.workload import WorkloadInfo, parse_ts
from flexq.semantics.conditions import find_condition
from flexq.semantics.selectors import label_selector_matches

__all__ = ["PendingQueue", "QueueWatcher", "backoff_expired", "queue_relevant"]

IMMEDIATE_BEST_EFFORT = {"FailedAfterNomination", "PendingPreemption", "PendingMigration", "PreemptionFailed"}


def backoff_expired(info: WorkloadInfo, now: float) -> bool:
    """``backoffWaitingTimeExpired``: not Requeued=False and ``requeueAt`` reached."""
    held, at = info.backoff_gate
    return not held and (at is None or now >= at)


_ENTRY = attrgetter("heap_entry")


class QueueWatcher(Protocol):
    """What a queue tells the manager that owns it (``flexq.kueue.queues.QueueManager``)."""

    def queue_changing(self, q: PendingQueue) -> None:
        """``q``'s heap or parked set is about to change."""

    def queue_ready(self, name: str) -> None:
        """Queue ``name`` has a workload in its heap."""


def _local_queue(info: WorkloadInfo) -> str:
    """``<namespace>/<queueName>`` of a workload (the LocalQueue it was submitted to)."""
    return f"{info.namespace}/{(info.obj.get('spec') or {}).get('queueName', '')}"


def _sort_key(info: WorkloadInfo) -> tuple:
    return info.heap_entry


def queue_relevant(info: WorkloadInfo) -> tuple:
    """What of a parked workload an update must change to send it back through the heap (upstream's
    ``queueOrderingFunc`` inputs and the requeue state): its spec, reclaimable pods, Evicted and Requeued."""
    st = info.obj.get("status") or {}
    return (
        info.obj.get("spec"),
        st.get("reclaimablePods"),
        find_condition(info.obj, "Evicted"),
        find_condition(info.obj, "Requeued"),
    )


class _Group:
    """Queued workloads of one group key, all in one state (in the heap, or parked), with what a flush asks of
    them as a whole: their namespaces and how many carry a backoff gate."""

    __slots__ = ("gated", "members", "namespaces")

    def __init__(self) -> None:
        self.members: dict[str, WorkloadInfo] = {}
        self.namespaces: dict[str, int] = {}
        self.gated = 0  # members with a backoff gate (Requeued=False or requeueAt)

    def add(self, info: WorkloadInfo) -> None:
        """Add a workload not in the group."""
        self.members[info.key] = info
        ns = info.namespace
        self.namespaces[ns] = self.namespaces.get(ns, 0) + 1
        if not info.backoff_clear:
            self.gated += 1

    def discard(self, key: str) -> WorkloadInfo | None:
        info = self.members.pop(key, None)
        if info is not None:
            ns = info.namespace
            n = self.namespaces[ns] - 1
            if n:
                self.namespaces[ns] = n
            else:
                del self.namespaces[ns]
            if not info.backoff_clear:
                self.gated -= 1
        return info


def _merge(a: _Group | None, b: _Group) -> _Group:
    """One group with the members of both (the smaller one's members move)."""
    if a is None:
        return b
    big, small = (a, b) if len(a.members) >= len(b.members) else (b, a)
    for info in small.members.values():
        big.add(info)
    return big


class _StateView(Mapping[str, WorkloadInfo]):
    """The workloads of a queue in one state (the heap's, or the parked ones), by key; read-only."""

    __slots__ = ("_heap", "_q")

    def __init__(self, q: PendingQueue, heap: bool) -> None:
        self._q = q
        self._heap = heap

    def _groups(self) -> dict[str, _Group]:
        return self._q._heap_groups if self._heap else self._q._parked_groups

    def __len__(self) -> int:
        return self._q._n_heap if self._heap else self._q._n_parked

    def __getitem__(self, key: str) -> WorkloadInfo:
        info = self.get(key)
        if info is None:
            raise KeyError(key)
        return info

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def get(self, key: str, default: WorkloadInfo | None = None) -> WorkloadInfo | None:  # type: ignore[override]
        info = self._q._all.get(key)
        if info is not None:
            g = self._groups().get(self._q._gk(info))
            if g is not None and key in g.members:
                return info
        return default

    def __iter__(self) -> Iterator[str]:
        return iter([k for g in self._groups().values() for k in g.members])

    def values(self) -> list[WorkloadInfo]:  # type: ignore[override]
        return [info for g in self._groups().values() for info in g.members.values()]


@dataclass
class PendingQueue:
    """Pending workloads of one ClusterQueue."""

    name: str
    strategy: str = "BestEffortFIFO"
    namespace_selector: dict | None = None
    active: bool = True
    cohort: str = ""
    heap: list = field(default_factory=list)
    pop_cycle: int = 0
    flush_cycle: int = -1
    sticky: str | None = None
    bulk_moved: dict[str, str] = field(default_factory=dict)  # SchedulingEquivalenceHashing: hash -> reason
    lq_pending: dict[str, int] = field(
        default_factory=dict
    )  # "ns/queueName" -> workloads in heap or inadmissible
    _counted: dict[str, str] = field(default_factory=dict)  # key -> the "ns/queueName" it is counted under
    _all: dict[str, WorkloadInfo] = field(default_factory=dict, repr=False)  # every queued workload
    # group key (the scheduling hash under BestEffortFIFO, "" under StrictFIFO) -> group, per state
    _heap_groups: dict[str, _Group] = field(default_factory=dict, repr=False)
    _parked_groups: dict[str, _Group] = field(default_factory=dict, repr=False)
    _n_heap: int = 0
    _n_parked: int = 0
    _hashing: bool | None = None  # whether the groups are keyed by scheduling hash (set with the first group)
    # parked workloads without an entry in ``heap`` (parked before one was pushed, or theirs was popped while
    # dormant): the ones a flush must push
    _unheaped: dict[str, WorkloadInfo] = field(default_factory=dict, repr=False)
    # the manager that tracks which queues may have a head and which changed in a cycle (None alone)
    _mgr: QueueWatcher | None = field(default=None, repr=False, compare=False)

    # the two states, read-only
    @property
    def items(self) -> _StateView:
        """The workloads in the heap, by key."""
        return _StateView(self, True)

    @property
    def inadmissible(self) -> _StateView:
        """The parked (inadmissible) workloads, by key."""
        return _StateView(self, False)

    # groups
    def _gk(self, info: WorkloadInfo) -> str:
        return info.scheduling_hash if self._hashing else ""

    def _regroup(self) -> None:
        """Key the groups for the strategy (scheduling hash under BestEffortFIFO)."""
        hashing = self.strategy == "BestEffortFIFO"
        if hashing == self._hashing:
            return
        self._hashing = hashing
        for attr in ("_heap_groups", "_parked_groups"):
            old: dict[str, _Group] = getattr(self, attr)
            new: dict[str, _Group] = {}
            for g in old.values():
                for info in g.members.values():
                    k = self._gk(info)
                    ng = new.get(k)
                    if ng is None:
                        ng = new[k] = _Group()
                    ng.add(info)
            setattr(self, attr, new)

    def _state(self, key: str) -> tuple[WorkloadInfo, bool] | None:
        """The queued info of ``key`` and whether it is in the heap (else parked), or None."""
        info = self._all.get(key)
        if info is None:
            return None
        g = self._heap_groups.get(self._gk(info))
        return info, g is not None and key in g.members

    def _in_heap(self, key: str) -> WorkloadInfo | None:
        st = self._state(key)
        return st[0] if st is not None and st[1] else None

    def _add(self, info: WorkloadInfo, heap: bool, has_entry: bool = False) -> None:
        """Queue ``info`` (its key not queued) in the heap or parked; ``has_entry``: its heap entry is there."""
        if self._hashing is None:
            self._regroup()
        key = info.key
        self._all[key] = info
        groups = self._heap_groups if heap else self._parked_groups
        k = self._gk(info)
        g = groups.get(k)
        if g is None:
            g = groups[k] = _Group()
        g.add(info)
        if heap:
            self._n_heap += 1
            if not has_entry:
                heapq.heappush(self.heap, info.heap_entry)
            if self._mgr is not None:
                self._mgr.queue_ready(self.name)
        else:
            self._n_parked += 1
            if not has_entry:
                self._unheaped[key] = info

    def _remove(self, key: str) -> tuple[WorkloadInfo, bool, bool] | None:
        """Unqueue ``key``: (its info, whether it was in the heap, whether its heap entry is still there)."""
        info = self._all.pop(key, None)
        if info is None:
            return None
        k = self._gk(info)
        g = self._heap_groups.get(k)
        if g is not None and g.discard(key) is not None:
            self._n_heap -= 1
            if not g.members:
                del self._heap_groups[k]
            return info, True, True
        g = self._parked_groups[k]
        g.discard(key)
        self._n_parked -= 1
        if not g.members:
            del self._parked_groups[k]
        return info, False, self._unheaped.pop(key, None) is None

    def _live(self, e: tuple) -> WorkloadInfo | None:
        """The info a heap entry stands for, if it is in the heap now (else the entry is dead or dormant)."""
        info = self._all.get(e[4])
        if info is None or info.serial != e[3]:
            return None
        g = self._heap_groups.get(self._gk(info))
        return info if g is not None and e[4] in g.members else None

    def _drop_top(self) -> None:
        """Pop the heap's top entry, which is not live: a parked workload's entry goes to ``_unheaped``."""
        e = heapq.heappop(self.heap)
        info = self._all.get(e[4])
        if info is not None and info.serial == e[3]:
            self._unheaped[e[4]] = info

    def _touch(self) -> None:
        """Before a change of the heap or the parked set (``QueueWatcher.queue_changing``)."""
        if self._mgr is not None:
            self._mgr.queue_changing(self)

    @property
    def sizes(self) -> tuple[int, int]:
        """(workloads in the heap, parked)."""
        return self._n_heap, self._n_parked

    def peek(self) -> WorkloadInfo | None:
        """The head ``pop`` would return, left in place (entries on top that are not live are dropped, as
        ``pop`` would skip them)."""
        if self.sticky is not None:
            info = self._in_heap(self.sticky)
            if info is not None:
                return info
        if not self._n_heap:  # only dormant or dead entries: leave them for a flush to revive
            return None
        heap = self.heap
        while heap:
            top = self._live(heap[0])
            if top is not None:
                return top
            self._drop_top()
        return None

    def update(self, cq: dict) -> None:
        """Take strategy, selector and the Active condition from a ClusterQueue object."""
        spec = cq.get("spec") or {}
        self.strategy = spec.get("queueingStrategy") or "BestEffortFIFO"
        self.namespace_selector = spec.get("namespaceSelector")
        self.cohort = spec.get("cohortName") or spec.get("cohort") or ""
        c = find_condition(cq, "Active")
        self.active = c is not None and c.get("status") == "True"
        self._regroup()

    # heap primitives. The heap holds ``WorkloadInfo.heap_entry`` tuples (queue order, serial, key) and
    # deletes lazily: an entry is live while its key's queued info has that serial and is in the heap.
    def _push(self, info: WorkloadInfo) -> None:
        """Put ``info`` in the heap (replacing what is queued under its key)."""
        old = self._remove(info.key)
        self._add(info, True, has_entry=old is not None and old[0] is info and old[2])

    def _park(self, info: WorkloadInfo) -> None:
        """Park ``info`` (replacing what is queued under its key)."""
        old = self._remove(info.key)
        self._add(info, False, has_entry=old is not None and old[0] is info and old[2])

    def _pop_live(self) -> WorkloadInfo | None:
        if self.sticky is not None and self._in_heap(self.sticky) is not None:
            out = self._remove(self.sticky)
            return out[0] if out is not None else None
        if not self._n_heap:
            return None
        heap = self.heap
        while heap:
            top = self._live(heap[0])
            if top is not None:
                heapq.heappop(heap)
                self._remove(top.key)
                return top
            self._drop_top()
        return None

    def __len__(self) -> int:
        return self._n_heap + self._n_parked

    def _recount(self, key: str) -> None:
        """Keep ``lq_pending`` in step after ``key`` joined, left or changed in heap ∪ inadmissible."""
        info = self._all.get(key)
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
        if len(self.heap) > 2 * len(self) + 64:  # updates of pending workloads leave dead entries behind
            self._compact()

    def _push_or_update(self, info: WorkloadInfo, now: float) -> None:
        st = self._state(info.key)
        if st is not None and not st[1]:  # parked
            if queue_relevant(st[0]) == queue_relevant(info):
                self._park(info)
                return
            self._remove(info.key)
            st = None
        in_heap = st is not None
        if not in_heap and not backoff_expired(info, now):
            self._park(info)
            return
        if self.strategy == "BestEffortFIFO" and not in_heap and info.scheduling_hash in self.bulk_moved:
            self._park(info)  # an equivalent workload just failed: skip the evaluation
            return
        self._push(info)

    def delete(self, key: str) -> None:
        """Forget a workload."""
        self._touch()
        self._remove(key)
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
        st = self._state(info.key)
        if backoff_expired(info, now) and (immediate or self.flush_cycle >= self.pop_cycle or pending):
            if st is not None and not st[1]:  # parked: that version goes back to the heap
                self._push(st[0])
                return True
            if st is not None:
                return False
            self._push(info)
            return True
        if st is not None:
            return False
        self._add(info, False)
        if self.strategy == "BestEffortFIFO" and reason in ("NoFit", "PreemptionNoCandidates"):
            # SchedulingEquivalenceHashing (default on since v0.18): equivalent heap workloads would get
            # the same answer, so they are bulk-moved to inadmissible until the next flush: their group
            # is parked whole, their heap entries left in place (dormant).
            h = info.scheduling_hash
            self.bulk_moved[h] = reason
            g = self._heap_groups.pop(h, None)
            if g is not None:
                n = len(g.members)
                self._n_heap -= n
                self._n_parked += n
                self._parked_groups[h] = _merge(self._parked_groups.get(h), g)
        if len(self.heap) > 2 * len(self) + 64:
            self._compact()
        return True

    def _compact(self) -> None:
        """Rebuild the heap from the queued workloads (drops the dead entries ``_pop_live`` would skip one by
        one; a parked workload's entry is kept, dormant)."""
        self.heap = list(map(_ENTRY, self._all.values()))
        heapq.heapify(self.heap)
        self._unheaped.clear()

    def flush(self, now: float, namespace_labels: Callable[[str], dict | None]) -> int:
        """``queueInadmissibleWorkloads``: move eligible inadmissible workloads back to the heap."""
        self._touch()
        self.flush_cycle = self.pop_cycle
        self.bulk_moved.clear()
        if not self._n_parked:
            return 0
        selected: dict[str, bool] = {}  # namespace -> matches the selector (asked once per flush)
        for g in self._parked_groups.values():
            for ns in g.namespaces:
                if ns not in selected:
                    labels = namespace_labels(ns)
                    selected[ns] = labels is not None and label_selector_matches(
                        self.namespace_selector, labels
                    )
        moved = 0
        singles: list[WorkloadInfo] = []
        for k, g in list(self._parked_groups.items()):
            if g.gated == 0 and all(selected[ns] for ns in g.namespaces):
                # the usual case: the whole group goes back
                del self._parked_groups[k]
                n = len(g.members)
                moved += n
                self._n_parked -= n
                self._n_heap += n
                self._heap_groups[k] = _merge(self._heap_groups.get(k), g)
            else:
                singles.extend(
                    i for i in g.members.values() if selected[i.namespace] and backoff_expired(i, now)
                )
        for info in singles:
            self._push(info)
        moved += len(singles)
        if self._unheaped:  # the returned workloads that have no heap entry get one
            back = [i for i in self._unheaped.values() if self._in_heap(i.key) is i]
            for info in back:
                del self._unheaped[info.key]
            heap = self.heap
            if len(back) > 8 and len(back) * 4 > len(heap):
                heap.extend(map(_ENTRY, back))
                heapq.heapify(heap)
            else:
                for info in back:
                    heapq.heappush(heap, info.heap_entry)
        if moved and self._mgr is not None:
            self._mgr.queue_ready(self.name)
        return moved

    def snapshot(self) -> list[WorkloadInfo]:
        """All pending workloads in queue order (visibility)."""
        return sorted(self._all.values(), key=lambda i: (i.key != self.sticky, _sort_key(i)))

    def next_requeue_at(self) -> float | None:
        """Earliest ``requeueAt`` among parked workloads (when the controller should flush again)."""
        out = None
        for g in self._parked_groups.values():
            if not g.gated:
                continue
            for info in g.members.values():
                at = ((info.obj.get("status") or {}).get("requeueState") or {}).get("requeueAt")
                if at:
                    t = parse_ts(at)
                    out = t if out is None else min(out, t)
        return out
