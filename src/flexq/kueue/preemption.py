"""Classical preemption: which admitted workloads a pending one may evict, as Kueue picks them.

Owns: the preemption policies (``withinClusterQueue`` Never / LowerPriority /
LowerOrNewerEqualPriority, ``reclaimWithinCohort`` Never / LowerPriority / Any,
``borrowWithinCohort`` with ``maxPriorityThreshold``), candidate classification and ordering
(evicted first, other ClusterQueues first, lower priority first, most recently reserved first,
UID), hierarchical reclaim over the cohort tree, the two attempts with and without borrowing,
fill-back of unnecessary targets, and the preemption oracle the flavor assigner consults.
Mirrors ``pkg/scheduler/preemption/{preemption,preemption_oracle}.go``,
``classical/{candidate_generator,hierarchical_preemption}.go`` and ``common/*``. Fair sharing is not
modelled.

Pure over a per-cycle ``Snapshot`` that it mutates only temporarily (every removal is restored).
Must not import store, runtime, loop or clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flexq.api.wellknown import JOB_UID_LABEL
from flexq.kueue.flavorassigner import Assignment
from flexq.kueue.released import Released, ReleasedOne, released_for
from flexq.kueue.resources import FlavorResource
from flexq.kueue.snapshot import (
    ClusterQueueSnapshot,
    CohortSnapshot,
    Node,
    Snapshot,
    find_height_of_lowest_subtree_that_fits,
    is_within_nominal,
    quantities_fit_in_quota,
)
from flexq.kueue.workload import WorkloadInfo

__all__ = [
    "Target",
    "TreeMemo",
    "compares_queue_order",
    "get_targets",
    "make_oracle",
    "preemption_message",
    "satisfies_policy",
]

REASONS = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}

NEVER, WITHIN_CQ, HIERARCHICAL, RECLAIM_NO_BORROW, RECLAIM_WHILE_BORROWING = range(5)
_VARIANT_REASON = {
    WITHIN_CQ: "InClusterQueue",
    HIERARCHICAL: "InCohortReclamation",
    RECLAIM_NO_BORROW: "InCohortReclamation",
    RECLAIM_WHILE_BORROWING: "InCohortReclaimWhileBorrowing",
}


@dataclass
class Target:
    """A workload to preempt and why (``Preempted`` condition reason)."""

    info: WorkloadInfo
    reason: str
    cluster_queue: str


def satisfies_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    """``SatisfiesPreemptionPolicy``."""
    lower = preemptor.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        return lower or (preemptor.priority == candidate.priority and preemptor.order_ts < candidate.order_ts)
    return policy == "Any"


def preemption_message(preemptor: WorkloadInfo, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    """The ``Preempted`` / ``Evicted`` condition message Kueue writes on the victim."""
    md = preemptor.obj.get("metadata") or {}
    job_uid = (md.get("labels") or {}).get(JOB_UID_LABEL) or "UNKNOWN"
    return (
        f"Preempted to accommodate a workload (UID: {md.get('uid') or 'UNKNOWN'}, JobUID: {job_uid}) "
        f"due to {REASONS.get(reason, 'UNKNOWN')}; preemptor path: {preemptor_path or 'UNKNOWN'}; "
        f"preemptee path: {preemptee_path or 'UNKNOWN'}"
    )


def cq_path(cq: ClusterQueueSnapshot) -> str:
    """``/root/.../parent/cq`` (``buildCQPath``)."""
    parts = [cq.name] + [a.name for a in cq.path_parent_to_root()]
    return "/" + "/".join(reversed(parts))


@dataclass(slots=True)
class _Elem:
    info: WorkloadInfo
    lca: CohortSnapshot | None
    variant: int
    cq: ClusterQueueSnapshot  # the snapshot's ClusterQueue of ``info`` (the one it was collected from)


class _Ctx:
    def __init__(
        self,
        snapshot: Snapshot,
        preemptor: WorkloadInfo,
        cq: ClusterQueueSnapshot,
        frs: set[FlavorResource],
        requests: dict[FlavorResource, int],
        now: float,
    ):
        self.snapshot, self.preemptor, self.cq, self.frs, self.requests, self.now = (
            snapshot,
            preemptor,
            cq,
            frs,
            requests,
            now,
        )
        self.used_now = False  # a candidate without quota reserved was ordered by ``now``
        self.released: Released | None = None  # the usage the candidates taken so far release

    def from_cq(self, cq: ClusterQueueSnapshot, lca: CohortSnapshot | None, adv: bool) -> list[_Elem]:
        """The candidates of ``cq``, each classified as ``candidate_generator.go`` does: not a candidate when it
        uses none of the flavor-resources or the policy (``withinClusterQueue`` in the preemptor's own queue,
        ``reclaimWithinCohort`` elsewhere) refuses it; then within the queue, hierarchical (the preemptor's
        quota along the tree would hold it), reclaim without borrowing (``borrowWithinCohort`` Never, or the
        candidate at or above the preemptor's priority or the threshold), or reclaim while borrowing. What depends
        only on the queue is read once: a search reads every workload of every queue above its nominal quota."""
        p = self.cq.preemption
        same = cq.name == self.cq.name
        policy = p["withinClusterQueue"] if same else p["reclaimWithinCohort"]
        if policy == "Never":
            return []
        frs, pre = self.frs, self.preemptor
        prio = pre.priority
        if same:
            fixed: int | None = WITHIN_CQ
        elif adv:
            fixed = HIERARCHICAL
        elif p["borrowWithinCohort"] == "Never":
            fixed = RECLAIM_NO_BORROW
        else:
            fixed = None
        threshold = p["maxPriorityThreshold"]
        out = []
        for wl in cq.workloads.values():
            if wl.flavor_resources.isdisjoint(frs):
                continue
            if not satisfies_policy(pre, wl, policy):
                continue
            wp = wl.priority
            if fixed is not None:
                v = fixed
            elif wp >= prio or (threshold is not None and wp > threshold):
                v = RECLAIM_NO_BORROW
            else:
                v = RECLAIM_WHILE_BORROWING
            out.append(_Elem(wl, lca, v, cq))
        return out

    def hierarchical(self) -> tuple[list[_Elem], list[_Elem]]:
        hier: list[_Elem] = []
        prio: list[_Elem] = []
        if self.cq.parent is None or self.cq.preemption["reclaimWithinCohort"] == "Never":
            return hier, prio
        prev = None
        adv, remaining = quantities_fit_in_quota(self.cq, self.requests)
        for root in self.cq.path_parent_to_root():
            self._collect(root, root, prev, adv, hier if adv else prio)
            fits, remaining = quantities_fit_in_quota(root, remaining)
            adv = adv or fits
            prev = root
        return hier, prio

    def _collect(
        self, cur: CohortSnapshot, subtree_root: CohortSnapshot, skip, adv: bool, out: list[_Elem]
    ) -> None:
        frs = self.frs
        for child in cur.child_cohorts:
            if child is skip or is_within_nominal(child, frs):
                continue
            self._collect(child, subtree_root, skip, adv, out)
        own = self.cq
        if len(frs) == 1:  # one flavor-resource (most searches): ``is_within_nominal`` written out
            (fr,) = frs
            for cq in cur.child_cqs:
                if cq is not own and cq.usage.get(fr, 0) > cq.subtree_quota.get(fr, 0):
                    out.extend(self.from_cq(cq, subtree_root, adv))
            return
        for cq in cur.child_cqs:
            if cq is not own and not is_within_nominal(cq, frs):
                out.extend(self.from_cq(cq, subtree_root, adv))

    def order_key(self, e: _Elem) -> tuple:
        """``order`` as a sort key (each candidate's parts computed once, not once per comparison): evicted
        first, then workloads of other ClusterQueues, lower priority, later quota reservation, smaller uid."""
        info = e.info
        return (
            not info.evicted,
            info.cluster_queue == self.cq.name,
            info.priority,
            -self._reserved_at(info),
            info.uid,
        )

    def order(self, a: _Elem, b: _Elem) -> int:
        """``CandidatesOrdering``."""
        ea, eb = a.info.evicted, b.info.evicted
        if ea != eb:
            return -1 if ea else 1
        sa, sb = a.info.cluster_queue == self.cq.name, b.info.cluster_queue == self.cq.name
        if sa != sb:
            return -1 if sb else 1
        if a.info.priority != b.info.priority:
            return -1 if a.info.priority < b.info.priority else 1
        ta, tb = self._reserved_at(a.info), self._reserved_at(b.info)
        if ta != tb:
            return -1 if ta > tb else 1
        return (a.info.uid > b.info.uid) - (a.info.uid < b.info.uid)

    def _reserved_at(self, wl: WorkloadInfo) -> float:
        at = wl.quota_reserved_at
        if at is None:
            self.used_now = True
            return self.now
        return at

    def valid(self, e: _Elem, borrow: bool) -> bool:
        """``candidateIsValid``."""
        if e.variant == WITHIN_CQ:  # a workload of the preemptor's own ClusterQueue
            return True
        if borrow and e.variant == RECLAIM_NO_BORROW:
            return False
        cq = e.cq
        if self._within_nominal(cq):
            return False
        node = cq.parent
        while node is not None and node is not e.lca:
            if self._within_nominal(node):
                return False
            node = node.parent
        return True

    def fits(self, allow_borrowing: bool) -> bool:
        """The preemptor's requests fit its ClusterQueue (without borrowing, unless allowed), with the usage the
        candidates taken so far release (``released``; none: the snapshot as it is)."""
        r = self.released
        for fr, v in self.requests.items():
            if r is None:
                if not allow_borrowing and self.cq.borrowing_with(fr, v):
                    return False
                if v > self.cq.available(fr):
                    return False
                continue
            if not allow_borrowing and self.cq.quota(fr).nominal < r.usage(self.cq, fr) + v:
                return False
            if v > max(0, r.available(self.cq, fr)):
                return False
        return True

    def _within_nominal(self, node: Node) -> bool:
        r = self.released
        if r is None:
            return is_within_nominal(node, self.frs)
        sq = node.subtree_quota
        for fr in self.frs:  # noqa: SIM110 (a loop: faster than all() over a generator, on a hot path)
            if sq.get(fr, 0) < r.usage(node, fr):
                return False
        return True


def _classical(ctx: _Ctx) -> list[Target]:
    same = [] if ctx.cq.preemption["withinClusterQueue"] == "Never" else ctx.from_cq(ctx.cq, None, False)
    hier, prio = ctx.hierarchical()
    key = ctx.order_key  # sorts as cmp_to_key(ctx.order) would (a stable sort, the same total order)
    same.sort(key=key)
    prio.sort(key=key)
    hier.sort(key=key)

    def split(lst: list[_Elem]) -> tuple[list[_Elem], list[_Elem]]:
        n = 0
        while n < len(lst) and lst[n].info.evicted:
            n += 1
        return lst[:n], lst[n:]

    (eh, nh), (ep, np_), (es, ns) = split(hier), split(prio), split(same)
    candidates = eh + ep + es + nh + np_ + ns
    bwc_forbidden = ctx.cq.preemption["borrowWithinCohort"] == "Never"
    under_nominal = all(ctx.cq.quota(fr).nominal > ctx.cq.usage.get(fr, 0) for fr in ctx.frs)
    if (not hier and not prio) or (bwc_forbidden and not under_nominal):
        attempts = [True]
    elif bwc_forbidden and not hier:
        attempts = [False, True]
    else:
        attempts = [True, False]
    # the candidates are taken out of the usage beside the snapshot (``Released``), which stays as it is
    tracked = set(ctx.frs) | set(ctx.requests)
    try:
        for borrow in attempts:
            taken: list[_Elem] = []
            rel = ctx.released = released_for(tracked)
            fits, valid = _fits_of(ctx, rel), _valid_of(ctx, rel)
            for e in candidates:
                if not valid(e, borrow):
                    continue
                rel.remove(e.info, e.cq)
                taken.append(e)
                if fits(borrow):
                    return _fill_back(fits, rel, taken, borrow)
        return []
    finally:
        ctx.released = None


def _fits_of(ctx: _Ctx, rel: Released) -> Callable[[bool], bool]:
    """``ctx.fits`` over ``rel``; for one request of the one flavor-resource ``ReleasedOne`` tracks, written out
    (the search asks it after each candidate it takes and each it puts back)."""
    if type(rel) is not ReleasedOne or len(ctx.requests) != 1:
        return ctx.fits
    ((fr, v),) = ctx.requests.items()
    cq = ctx.cq
    nominal, usage, released, available = cq.quota(fr).nominal, cq.usage, rel.n, rel.available

    def fits(allow_borrowing: bool) -> bool:
        if not allow_borrowing and nominal < usage.get(fr, 0) - released.get(cq, 0) + v:
            return False
        return v <= max(0, available(cq, fr))

    return fits


def _valid_of(ctx: _Ctx, rel: Released) -> Callable[[_Elem, bool], bool]:
    """``ctx.valid`` over ``rel``; for a search of the one flavor-resource ``ReleasedOne`` tracks, written out
    (``_within_nominal`` inline: asked of each candidate's ClusterQueue and cohorts up to the common one)."""
    if type(rel) is not ReleasedOne or ctx.frs != rel.frs:
        return ctx.valid
    fr, released = rel.fr, rel.n

    def valid(e: _Elem, borrow: bool) -> bool:
        variant = e.variant
        if variant == WITHIN_CQ:
            return True
        if borrow and variant == RECLAIM_NO_BORROW:
            return False
        node: Node | None = e.cq
        lca = e.lca
        first = True
        while node is not None and (first or node is not lca):
            if node.subtree_quota.get(fr, 0) >= node.usage.get(fr, 0) - released.get(node, 0):
                return False  # within its nominal quota
            node, first = node.parent, False
        return True

    return valid


def _fill_back(fits: Callable[[bool], bool], rel: Released, taken: list[_Elem], borrow: bool) -> list[Target]:
    """``fillBackWorkloads``: put back every target that is not needed, newest decision first."""
    i = len(taken) - 2
    while i >= 0:
        e = taken[i]
        rel.add(e.info, e.cq)
        if fits(borrow):
            taken[i] = taken[-1]
            taken.pop()
        else:
            rel.remove(e.info, e.cq)
        i -= 1
    return [Target(e.info, _VARIANT_REASON[e.variant], e.info.cluster_queue) for e in taken]


class TreeMemo:
    """Preemption searches kept across scheduling cycles, per cohort tree and its version.

    ``_classical`` reads only the preemptor's ClusterQueue and the cohort tree it belongs to (the candidates
    of every ClusterQueue of the tree, their usage and the quotas along the tree), the preemptor's priority
    (and queue-order timestamp under ``LowerOrNewerEqualPriority``), the flavor-resources and quantities asked
    for, and ``now`` only to order a candidate without quota reserved. The cache bumps a tree's version on every
    change of a workload holding quota in it and starts a new epoch whenever the quota structure is rebuilt,
    so a search asked again of an unchanged tree (a head that waits on preemption is nominated again in every
    cycle, most cycles being caused by other trees) answers what it answered before, without searching again.
    Targets are kept by workload key and resolved in the asking snapshot. One table per tree, replaced when its
    version moves: the memory follows the trees, not the cycles."""

    __slots__ = ("_epoch", "_by_root", "hits", "misses")

    def __init__(self) -> None:
        self._epoch: object = None
        self._by_root: dict[object, tuple[object, dict]] = {}
        self.hits = self.misses = 0

    def table(self, tree: tuple | None) -> dict | None:
        """The table of answers for ``tree`` (``Snapshot.tree_key``: (epoch, root, version)), or None."""
        if tree is None:
            return None
        epoch, root, version = tree
        if epoch != self._epoch:
            self._epoch, self._by_root = epoch, {}
        cur = self._by_root.get(root)
        if cur is None or cur[0] != version:
            cur = (version, {})
            self._by_root[root] = cur
        return cur[1]


def compares_queue_order(cq: ClusterQueueSnapshot) -> bool:
    """Whether a preemption search of ``cq`` reads the preemptor's queue-order timestamp (a policy
    ``LowerOrNewerEqualPriority``), not only its priority."""
    p = cq.preemption
    return "LowerOrNewerEqualPriority" in (p["withinClusterQueue"], p["reclaimWithinCohort"])


def _sub_key(own: ClusterQueueSnapshot, info: WorkloadInfo) -> tuple:
    return (own.name, info.priority, info.order_ts if compares_queue_order(own) else None)


def _remember(table: dict, key: tuple, ctx: _Ctx, targets: list[Target], extra: object = None) -> None:
    table[key] = (
        ctx.now if ctx.used_now else None,
        tuple((t.info.key, t.info.cluster_queue, t.reason, t.cluster_queue) for t in targets),
        extra,
    )


def _recall(table: dict, key: tuple, snapshot: Snapshot, now: float) -> tuple[list[Target], Any] | None:
    hit = table.get(key)
    if hit is None or (hit[0] is not None and hit[0] != now):
        return None
    out = []
    for wkey, wcq, reason, tcq in hit[1]:
        cq = snapshot.cq(wcq)
        info = cq.workloads.get(wkey) if cq is not None else None
        if info is None:
            return None
        out.append(Target(info, reason, tcq))
    return out, hit[2]


def _tree(snapshot: Snapshot, cq: ClusterQueueSnapshot) -> tuple | None:
    return snapshot.tree_key(cq) if snapshot.tree_key is not None else None


def get_targets(
    snapshot: Snapshot,
    info: WorkloadInfo,
    assignment: Assignment,
    now: float,
    memo: dict | None = None,
    trees: TreeMemo | None = None,
) -> list[Target]:
    """``Preemptor.GetTargets`` for a workload whose assignment is in Preempt mode. ``memo``: the one
    ``make_oracle`` was given for the same workload and snapshot (see there); ``trees``: answers kept across
    cycles (``TreeMemo``)."""
    cq = snapshot.cq(info.cluster_queue)
    if cq is None:
        return []
    frs, requests = assignment.flavor_resources_need_preemption(), assignment.total_requests_for(info)
    if memo is not None:
        hit = memo.get((info.key, cq.name, frozenset(frs), frozenset(requests.items())))
        if hit is not None:
            return list(hit)
    table = trees.table(_tree(snapshot, cq)) if trees is not None else None
    key = ("targets", *_sub_key(cq, info), frozenset(frs), frozenset(requests.items()))
    if table is not None:
        kept = _recall(table, key, snapshot, now)
        if kept is not None:
            assert trees is not None
            trees.hits += 1
            return kept[0]
        assert trees is not None
        trees.misses += 1
    ctx = _Ctx(snapshot, info, cq, frs, requests, now)
    targets = _classical(ctx)
    if table is not None:
        _remember(table, key, ctx, targets)
    return targets


def make_oracle(snapshot: Snapshot, now: float, memo: dict | None = None, trees: TreeMemo | None = None):
    """``PreemptionOracle.SimulatePreemption`` bound to a snapshot. With ``memo`` (one per workload's
    assignment, dropped before the snapshot changes) the targets it found are kept by workload, ClusterQueue,
    flavor-resources and requests: ``get_targets`` asked the same (a workload of one pod set and one resource
    in one flavor) on the same snapshot answers the same (the candidates are sorted by a total order, uids
    being unique), so it is not searched twice. With ``trees`` (``TreeMemo``) the answer is kept across cycles
    for the tree's version."""

    def oracle(
        cq: ClusterQueueSnapshot, info: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[str, int]:
        own = snapshot.cq(info.cluster_queue) or cq
        table = trees.table(_tree(snapshot, own)) if trees is not None else None
        key = ("oracle", *_sub_key(own, info), cq.name, fr, quantity)
        kept = _recall(table, key, snapshot, now) if table is not None else None
        answer: tuple[str, int]
        if kept is not None:
            assert trees is not None
            trees.hits += 1
            targets, answer = kept  # what _remember stored beside them: _possibility's answer
        else:
            if trees is not None:
                trees.misses += 1
            ctx = _Ctx(snapshot, info, own, {fr}, {fr: quantity}, now)
            targets = _classical(ctx)
            answer = _possibility(snapshot, cq, fr, quantity, targets)
            if table is not None:
                _remember(table, key, ctx, targets, answer)
        if memo is not None:
            memo[(info.key, own.name, frozenset((fr,)), frozenset(((fr, quantity),)))] = list(targets)
        return answer

    return oracle


def _possibility(
    snapshot: Snapshot, cq: ClusterQueueSnapshot, fr: FlavorResource, quantity: int, targets: list[Target]
) -> tuple[str, int]:
    if not targets:
        return "NoCandidates", find_height_of_lowest_subtree_that_fits(cq, fr, quantity)[0]
    for t in targets:
        snapshot.remove_workload(t.info)
    borrow = find_height_of_lowest_subtree_that_fits(cq, fr, quantity)[0]
    for t in targets:
        snapshot.add_workload(t.info)
    if any(t.cluster_queue == cq.name for t in targets):
        return "Preempt", borrow
    return "Reclaim", borrow
