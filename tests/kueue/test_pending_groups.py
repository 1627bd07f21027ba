"""``PendingQueue`` keeps its workloads in groups of one scheduling hash and leaves parked workloads' heap entries
in place (so a deep queue's flush and bulk move cost what changed). Whatever the operations, it must answer as
the plain reading of Kueue's ``cluster_queue.go`` does: two dicts (heap, inadmissible), the head the minimum of
the heap by queue order, a bulk move that takes every heap workload of the failed head's hash. This test drives
both with random operation sequences and compares them after every step."""

from __future__ import annotations

import random

import pytest

from flexq.kueue.pending import IMMEDIATE_BEST_EFFORT, PendingQueue, backoff_expired, queue_relevant
from flexq.kueue.workload import WorkloadInfo
from flexq.kueue.workload import ts as format_ts
from flexq.semantics.selectors import label_selector_matches

from .kueue_builders import ps, wl

T0 = 1767225600.0
SELECTOR = {"matchLabels": {"team": "x"}}
REASONS = [
    "NoFit",
    "PreemptionNoCandidates",
    "PendingPreemption",
    "FailedAfterNomination",
    "NamespaceMismatch",
]


class Plain:
    """The plain reading: heap and inadmissible as dicts, the head found by a scan."""

    def __init__(self, strategy: str) -> None:
        self.strategy = strategy
        self.items: dict[str, WorkloadInfo] = {}
        self.inadmissible: dict[str, WorkloadInfo] = {}
        self.sticky: str | None = None
        self.bulk: set[str] = set()
        self.pop_cycle = 0
        self.flush_cycle = -1

    def push_or_update(self, info: WorkloadInfo, now: float) -> None:
        k = info.key
        old = self.inadmissible.get(k)
        if old is not None:
            if queue_relevant(old) == queue_relevant(info):
                self.inadmissible[k] = info
                return
            del self.inadmissible[k]
        equivalent_failed = self.strategy == "BestEffortFIFO" and info.scheduling_hash in self.bulk
        if k not in self.items and (not backoff_expired(info, now) or equivalent_failed):
            self.inadmissible[k] = info
        else:
            self.items[k] = info

    def delete(self, key: str) -> None:
        self.items.pop(key, None)
        self.inadmissible.pop(key, None)
        if self.sticky == key:
            self.sticky = None

    def pop(self) -> WorkloadInfo | None:
        self.pop_cycle += 1
        if self.sticky is not None and self.sticky in self.items:
            return self.items.pop(self.sticky)
        if not self.items:
            return None
        return self.items.pop(min(self.items, key=lambda k: self.items[k].heap_entry))

    def requeue(self, info: WorkloadInfo, reason: str, now: float) -> bool:
        strict = self.strategy == "StrictFIFO"
        immediate = reason != "NamespaceMismatch" if strict else reason in IMMEDIATE_BEST_EFFORT
        if reason in ("PendingPreemption", "PendingMigration"):
            self.sticky = None if strict else info.key
        k = info.key
        if backoff_expired(info, now) and (immediate or self.flush_cycle >= self.pop_cycle):
            if k in self.inadmissible:
                self.items[k] = self.inadmissible.pop(k)
                return True
            if k in self.items:
                return False
            self.items[k] = info
            return True
        if k in self.inadmissible or k in self.items:
            return False
        self.inadmissible[k] = info
        if not strict and reason in ("NoFit", "PreemptionNoCandidates"):
            h = info.scheduling_hash
            self.bulk.add(h)
            for kk in [kk for kk, i in self.items.items() if i.scheduling_hash == h]:
                self.inadmissible[kk] = self.items.pop(kk)
        return True

    def flush(self, now: float, labels) -> int:
        self.flush_cycle = self.pop_cycle
        self.bulk.clear()
        moving = [
            k
            for k, i in self.inadmissible.items()
            if labels(i.namespace) is not None
            and label_selector_matches(SELECTOR, labels(i.namespace))
            and backoff_expired(i, now)
        ]
        for k in moving:
            self.items[k] = self.inadmissible.pop(k)
        return len(moving)


def _labels(ns: str) -> dict | None:
    return {"ns-a": {"team": "x"}, "ns-b": {"team": "y"}, "ns-c": {"team": "x"}}.get(ns)


def _workload(rng: random.Random, name: str, now: float) -> WorkloadInfo:
    """A version of workload ``name``: two priorities, two shapes (two scheduling hashes each), three
    namespaces (ns-b never selected), sometimes a backoff gate."""
    ns = rng.choice(["ns-a", "ns-a", "ns-b", "ns-c"]) if name.endswith("0") else "ns-a"
    w = wl(
        name,
        ps(cpu=rng.choice(["1", "1", "2"])),
        ns=ns,
        priority=rng.choice([0, 0, 10]),
        created=format_ts(T0 + rng.randrange(0, 50)),
    )
    gate = rng.random()
    if gate < 0.1:
        w["status"]["conditions"] = [
            {"type": "Requeued", "status": "False", "reason": "Backoff", "message": ""}
        ]
    elif gate < 0.25:
        w["status"]["requeueState"] = {"requeueAt": format_ts(now + rng.choice([-30, 30, 120]))}
    return WorkloadInfo.from_obj(w, "cq")


def _same(q: PendingQueue, ref: Plain) -> None:
    assert {k: id(v) for k, v in q.items.items()} == {k: id(v) for k, v in ref.items.items()}
    assert {k: id(v) for k, v in q.inadmissible.items()} == {k: id(v) for k, v in ref.inadmissible.items()}
    assert len(q) == len(ref.items) + len(ref.inadmissible)
    assert q.sticky == ref.sticky
    head = q.peek()
    ref_head = (
        ref.items[ref.sticky]
        if ref.sticky in ref.items
        else min(ref.items.values(), key=lambda i: i.heap_entry, default=None)
    )
    assert head is ref_head


@pytest.mark.parametrize("strategy", ["BestEffortFIFO", "StrictFIFO"])
@pytest.mark.parametrize("seed", range(12))
def test_the_grouped_queue_answers_as_the_plain_one(strategy: str, seed: int) -> None:
    rng = random.Random(seed)
    q = PendingQueue("cq", strategy=strategy, namespace_selector=SELECTOR)
    ref = Plain(strategy)
    names = [f"w{i}" for i in range(14)]
    popped: dict[str, WorkloadInfo] = {}
    now = T0
    for _step in range(700):
        op = rng.random()
        if op < 0.35:
            name = rng.choice(names)
            if f"ns-a/{name}" in popped or any(k.endswith("/" + name) for k in popped):
                continue
            info = _workload(rng, name, now)
            stale = [k for k in (*ref.items, *ref.inadmissible) if k.endswith("/" + name) and k != info.key]
            for k in stale:  # the same name in another namespace: a different object, forget the old one
                q.delete(k)
                ref.delete(k)
            q.push_or_update(info, now)
            ref.push_or_update(info, now)
        elif op < 0.55:
            a, b = q.pop(), ref.pop()
            assert a is b
            if a is not None:
                popped[a.key] = a
        elif op < 0.75 and popped:
            k = rng.choice(sorted(popped))
            info = popped.pop(k)
            reason = rng.choice(REASONS)
            assert q.requeue(info, reason, now) == ref.requeue(info, reason, now)
        elif op < 0.8 and popped:
            popped.pop(rng.choice(sorted(popped)))  # admitted: it leaves the queue for good
        elif op < 0.9:
            assert q.flush(now, _labels) == ref.flush(now, _labels)
        elif op < 0.95:
            k = rng.choice([*ref.items, *ref.inadmissible] or ["ns-a/none"])
            q.delete(k)
            ref.delete(k)
        else:
            now += rng.choice([10, 60, 200])
        _same(q, ref)
        assert len(q.heap) <= 2 * len(q) + 64 + 2 * len(names)  # dead entries are compacted away
    drained, ref_drained = [], []
    while (i := q.pop()) is not None:
        drained.append(i)
    while (i := ref.pop()) is not None:
        ref_drained.append(i)
    assert [id(i) for i in drained] == [id(i) for i in ref_drained]


def test_a_deep_queues_bulk_move_and_flush_leave_the_heap_alone() -> None:
    """1,000 equivalent workloads: after the first flush, a NoFit head parks the 999 others and the next flush
    brings them back without a single push (their entries stayed, dormant)."""
    q = PendingQueue("cq", namespace_selector=SELECTOR)
    for i in range(1000):
        q.push_or_update(
            WorkloadInfo.from_obj(wl(f"w{i}", ps(cpu="1"), ns="ns-a", created=format_ts(T0 + i)), "cq"), T0
        )
    for _ in range(3):
        heap_before = list(q.heap)
        head = q.pop()
        assert head is not None
        q.requeue(head, "NoFit", T0)
        assert len(q.items) == 0 and len(q.inadmissible) == 1000
        assert q.flush(T0, _labels) == 1000
        assert len(q.items) == 1000 and q.peek() is head
        assert len(q.heap) <= len(heap_before)
