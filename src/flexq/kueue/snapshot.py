"""Quota snapshot: ClusterQueues and Cohorts as a tree of resource nodes, with Kueue's quota math.

Owns: ``ResourceQuota`` (nominal, borrowingLimit, lendingLimit as Kueue integers), resource groups,
the ``ClusterQueueSnapshot`` / ``CohortSnapshot`` nodes, and the functions of
``pkg/cache/scheduler/resource_node.go`` — ``local_quota``, ``available``, ``potential_available``,
``add_usage`` / ``remove_usage`` (usage past a node's local quota bubbles up to its cohort),
the subtree accumulation of cohort quota and usage, ``quantities_fit_in_quota``,
``is_within_nominal`` — plus ``find_height_of_lowest_subtree_that_fits`` (the borrowing level,
``preemption/classical``). ``build_snapshot`` turns v1beta2 ClusterQueue / Cohort / ResourceFlavor
dicts and the admitted ``WorkloadInfo`` s into a ``Snapshot``; ``Snapshot.clone`` gives the
per-cycle copy the scheduler mutates while it simulates admissions and preemptions.

Must not import anything in flexq but ``flexq.api.quantity`` and ``flexq.kueue`` pure modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flexq.kueue.resources import FlavorResource, resource_value
from flexq.kueue.workload import WorkloadInfo

__all__ = [
    "ClusterQueueSnapshot",
    "CohortSnapshot",
    "ResourceGroup",
    "ResourceQuota",
    "Snapshot",
    "available",
    "build_snapshot",
    "find_height_of_lowest_subtree_that_fits",
    "potential_available",
]


_LEGACY_FUNGIBILITY = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}  # v1beta1 values


@dataclass(frozen=True)
class ResourceQuota:
    """Quota of one (flavor, resource) at one node (Kueue integers; None = unset)."""

    nominal: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None


_ZERO = ResourceQuota()


@dataclass(frozen=True)
class ResourceGroup:
    """``spec.resourceGroups[i]``: resources that always share one flavor, flavors in preference order."""

    covered: tuple[str, ...]
    flavors: tuple[str, ...]


def parse_resource_groups(
    groups: Iterable[Mapping],
) -> tuple[list[ResourceGroup], dict[FlavorResource, ResourceQuota]]:
    """``resourceGroups`` → groups and per (flavor, resource) quotas (``createResourceQuotas``)."""
    rgs: list[ResourceGroup] = []
    quotas: dict[FlavorResource, ResourceQuota] = {}
    for g in groups or []:
        covered = tuple(g.get("coveredResources") or [])
        flavors = []
        for f in g.get("flavors") or []:
            flavors.append(f["name"])
            for r in f.get("resources") or []:
                name = r["name"]
                bl, ll = r.get("borrowingLimit"), r.get("lendingLimit")
                quotas[(f["name"], name)] = ResourceQuota(
                    resource_value(name, r.get("nominalQuota", 0)),
                    None if bl is None else resource_value(name, bl),
                    None if ll is None else resource_value(name, ll),
                )
        rgs.append(ResourceGroup(covered, tuple(flavors)))
    return rgs, quotas


class Node:
    """A resource node (``resourceNode``): quotas, subtree quota and usage per (flavor, resource)."""

    __slots__ = ("name", "parent", "quotas", "subtree_quota", "usage")

    def __init__(self, name: str, quotas: dict[FlavorResource, ResourceQuota]):
        self.name = name
        self.parent: CohortSnapshot | None = None
        self.quotas = quotas
        self.subtree_quota: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}

    def quota(self, fr: FlavorResource) -> ResourceQuota:
        """Quota for ``fr`` (zero when the node does not declare it)."""
        return self.quotas.get(fr, _ZERO)

    def local_quota(self, fr: FlavorResource) -> int:
        """Capacity kept for this subtree by its lendingLimit (0 without one)."""
        ll = self.quota(fr).lending_limit
        if ll is None:
            return 0
        return max(0, self.subtree_quota.get(fr, 0) - ll)

    def local_available(self, fr: FlavorResource) -> int:
        """``LocalAvailable``: unused local quota."""
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def path_parent_to_root(self) -> Iterable[CohortSnapshot]:
        """Ancestors, parent first."""
        a = self.parent
        while a is not None:
            yield a
            a = a.parent


class CohortSnapshot(Node):
    """A cohort: its own quota (Cohort ``spec.resourceGroups``) plus what its children lend."""

    __slots__ = ("child_cohorts", "child_cqs")

    def __init__(self, name: str, quotas: dict[FlavorResource, ResourceQuota]):
        super().__init__(name, quotas)
        self.child_cohorts: list[CohortSnapshot] = []
        self.child_cqs: list[ClusterQueueSnapshot] = []

    def root(self) -> CohortSnapshot:
        """The root of this cohort tree."""
        c = self
        while c.parent is not None:
            c = c.parent
        return c

    def borrowing_with(self, fr: FlavorResource, val: int) -> bool:
        """Usage + val exceeds the subtree quota."""
        return self.subtree_quota.get(fr, 0) < self.usage.get(fr, 0) + val

    def subtree_cluster_queues(self) -> list[ClusterQueueSnapshot]:
        """All ClusterQueues below this cohort."""
        out = list(self.child_cqs)
        for c in self.child_cohorts:
            out.extend(c.subtree_cluster_queues())
        return out

    def height(self) -> int:
        """``getNodeHeight``: distance to the furthest leaf."""
        h = min(len(self.child_cohorts) + len(self.child_cqs), 1)
        for c in self.child_cohorts:
            h = max(h, c.height() + 1)
        return h


class ClusterQueueSnapshot(Node):
    """A ClusterQueue in a snapshot: quotas, groups, policies and its admitted workloads."""

    __slots__ = (
        "spec",
        "resource_groups",
        "rg_by_resource",
        "workloads",
        "preemption",
        "fungibility",
        "admission_checks",
        "namespace_selector",
        "queueing_strategy",
        "generation",
        "all_flavors",
        "active",
        "stop_policy",
        "owns_workloads",
    )

    def __init__(self, cq: Mapping):
        spec = cq.get("spec") or {}
        rgs, quotas = parse_resource_groups(spec.get("resourceGroups") or [])
        super().__init__(cq["metadata"]["name"], quotas)
        self.spec = spec
        self.resource_groups = rgs
        self.rg_by_resource = {r: g for g in rgs for r in g.covered}
        self.workloads: dict[str, WorkloadInfo] = {}
        self.owns_workloads = (
            True  # False while ``workloads`` is shared with a clone (copied on first change)
        )
        p = spec.get("preemption") or {}
        bwc = p.get("borrowWithinCohort") or {}
        self.preemption: dict[str, Any] = {
            "withinClusterQueue": p.get("withinClusterQueue") or "Never",
            "reclaimWithinCohort": p.get("reclaimWithinCohort") or "Never",
            "borrowWithinCohort": bwc.get("policy") or "Never",
            "maxPriorityThreshold": bwc.get("maxPriorityThreshold"),
        }
        ff = spec.get("flavorFungibility") or {}
        self.fungibility = {
            "whenCanBorrow": _LEGACY_FUNGIBILITY.get(ff.get("whenCanBorrow") or "", ff.get("whenCanBorrow"))
            or "MayStopSearch",
            "whenCanPreempt": _LEGACY_FUNGIBILITY.get(
                ff.get("whenCanPreempt") or "", ff.get("whenCanPreempt")
            )
            or "TryNextFlavor",
            "preference": ff.get("preference"),
        }
        self.all_flavors = {f for g in rgs for f in g.flavors}
        checks: dict[str, frozenset[str]] = {}
        for name in spec.get("admissionChecks") or []:  # v1beta1 form, tolerated
            checks[name] = frozenset(self.all_flavors)
        for ac in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
            checks[ac["name"]] = frozenset(ac.get("onFlavors") or self.all_flavors)
        self.admission_checks = checks
        self.namespace_selector = spec.get("namespaceSelector")
        self.queueing_strategy = spec.get("queueingStrategy") or "BestEffortFIFO"
        self.stop_policy = spec.get("stopPolicy") or "None"
        self.generation = 0
        self.active = True
        for fr, q in quotas.items():
            self.subtree_quota[fr] = q.nominal

    def copy(self, parent: CohortSnapshot | None) -> ClusterQueueSnapshot:
        """A copy with its own usage (the workload set is shared until either side changes it)."""
        n = ClusterQueueSnapshot.__new__(ClusterQueueSnapshot)
        n.name, n.quotas, n.spec, n.resource_groups = self.name, self.quotas, self.spec, self.resource_groups
        n.rg_by_resource, n.preemption, n.fungibility = self.rg_by_resource, self.preemption, self.fungibility
        n.admission_checks, n.namespace_selector = self.admission_checks, self.namespace_selector
        n.queueing_strategy, n.generation, n.all_flavors = (
            self.queueing_strategy,
            self.generation,
            self.all_flavors,
        )
        n.active, n.stop_policy = self.active, self.stop_policy
        n.subtree_quota = self.subtree_quota  # fixed once the snapshot is built: shared
        n.usage = dict(self.usage)
        n.workloads = self.workloads
        n.owns_workloads = self.owns_workloads = False
        n.parent = parent
        return n

    def own_workloads(self) -> dict[str, WorkloadInfo]:
        """``workloads``, made private to this node before a change."""
        if not self.owns_workloads:
            self.workloads = dict(self.workloads)
            self.owns_workloads = True
        return self.workloads

    def has_parent(self) -> bool:
        """Member of a cohort."""
        return self.parent is not None

    def borrowing_with(self, fr: FlavorResource, val: int) -> bool:
        """Usage + val exceeds nominal quota."""
        return self.quota(fr).nominal < self.usage.get(fr, 0) + val

    def borrowing(self, fr: FlavorResource) -> bool:
        """Currently above nominal."""
        return self.borrowing_with(fr, 0)

    def available(self, fr: FlavorResource) -> int:
        """``Available``: capacity usable now, never negative."""
        return max(0, available(self, fr))

    def potential_available(self, fr: FlavorResource) -> int:
        """``PotentialAvailable``: the most this CQ could ever get for ``fr``."""
        return potential_available(self, fr)

    def fits(self, usage: Mapping[FlavorResource, int]) -> bool:
        """Every (flavor, resource) of ``usage`` is available."""
        return all(self.available(fr) >= q for fr, q in usage.items())

    def add_usage(self, usage: Mapping[FlavorResource, int]) -> None:
        """Charge ``usage`` to this CQ (bubbling up)."""
        for fr, q in usage.items():
            add_usage(self, fr, q)

    def remove_usage(self, usage: Mapping[FlavorResource, int]) -> None:
        """Release ``usage``."""
        for fr, q in usage.items():
            remove_usage(self, fr, q)


def available(node: Node, fr: FlavorResource) -> int:
    """``available``: may be negative when over-admitted."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(node.parent, fr)
    bl = node.quota(fr).borrowing_limit
    if bl is not None:
        lq = node.local_quota(fr)
        stored_in_parent = node.subtree_quota.get(fr, 0) - lq
        used_in_parent = max(0, node.usage.get(fr, 0) - lq)
        parent_available = min(stored_in_parent - used_in_parent + bl, parent_available)
    return node.local_available(fr) + parent_available


def potential_available(node: Node, fr: FlavorResource) -> int:
    """``potentialAvailable``: capacity assuming no usage, bounded by borrowing limits."""
    if node.parent is None:
        return node.subtree_quota.get(fr, 0)
    avail = node.local_quota(fr) + potential_available(node.parent, fr)
    bl = node.quota(fr).borrowing_limit
    if bl is not None:
        avail = min(node.subtree_quota.get(fr, 0) + bl, avail)
    return avail


def add_usage(node: Node, fr: FlavorResource, val: int) -> None:
    """``addUsage``: usage beyond local available capacity is also charged to the parent."""
    local = node.local_available(fr)
    node.usage[fr] = node.usage.get(fr, 0) + val
    if node.parent is not None and val > local:
        add_usage(node.parent, fr, val - local)


def remove_usage(node: Node, fr: FlavorResource, val: int) -> None:
    """``removeUsage``: releases what this node was storing in its parent first."""
    stored = node.usage.get(fr, 0) - node.local_quota(fr)
    node.usage[fr] = node.usage.get(fr, 0) - val
    if stored <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(val, stored))


def _update_cohort(cohort: CohortSnapshot) -> None:
    """``updateCohortResourceNode``: subtree quota and usage from the children, recursively."""
    cohort.subtree_quota = {fr: q.nominal for fr, q in cohort.quotas.items()}
    cohort.usage = {}
    children: list[Node] = []
    for c in cohort.child_cohorts:
        _update_cohort(c)
        children.append(c)
    for cq in cohort.child_cqs:
        cq.subtree_quota = {fr: q.nominal for fr, q in cq.quotas.items()}
        children.append(cq)
    for child in children:
        for fr, sq in child.subtree_quota.items():
            cohort.subtree_quota[fr] = cohort.subtree_quota.get(fr, 0) + sq - child.local_quota(fr)
        for fr, u in child.usage.items():
            cohort.usage[fr] = cohort.usage.get(fr, 0) + max(0, u - child.local_quota(fr))


def quantities_fit_in_quota(
    node: Node, requests: Mapping[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    """``QuantitiesFitInQuota``: whether requests fit this node, and what remains for its parent."""
    fits = True
    remaining = {}
    for fr, v in requests.items():
        if node.subtree_quota.get(fr, 0) < node.usage.get(fr, 0) + v:
            fits = False
        remaining[fr] = max(0, v - node.local_available(fr))
    return fits, remaining


def is_within_nominal(node: Node, frs: Iterable[FlavorResource]) -> bool:
    """``IsWithinNominalInResources``: usage ≤ subtree quota for every ``fr``."""
    sq, usage = node.subtree_quota, node.usage
    for fr in frs:  # noqa: SIM110 (a loop: twice as fast as all() over a generator, on a hot path)
        if sq.get(fr, 0) < usage.get(fr, 0):
            return False
    return True


def find_height_of_lowest_subtree_that_fits(
    cq: ClusterQueueSnapshot, fr: FlavorResource, val: int
) -> tuple[int, bool]:
    """Borrowing level of ``val`` more ``fr`` (0 = none) and whether that subtree is below the root."""
    if not cq.borrowing_with(fr, val) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = val - cq.local_available(fr)
    for node in cq.path_parent_to_root():
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining -= node.local_available(fr)
    return cq.parent.root().height(), False


@dataclass
class Snapshot:
    """Everything one scheduling cycle reads: CQs, cohorts, flavors (and inactive CQs)."""

    cluster_queues: dict[str, ClusterQueueSnapshot] = field(default_factory=dict)
    cohorts: dict[str, CohortSnapshot] = field(default_factory=dict)
    resource_flavors: dict[str, dict] = field(default_factory=dict)
    inactive: set[str] = field(default_factory=set)
    # (epoch, root, version) of a ClusterQueue's cohort tree as the snapshot was taken (the cache's versions:
    # ``preemption.TreeMemo``); None outside a cache's snapshots
    tree_key: Callable[[ClusterQueueSnapshot], tuple] | None = None
    # a partial copy (``clone_trees``): the snapshot its other cohort trees are copied from when first asked for
    # (its owner copies a tree here before it changes it there, so a copy is always as of this snapshot)
    source: Snapshot | None = field(default=None, repr=False, compare=False)
    generations: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def cq(self, name: str) -> ClusterQueueSnapshot | None:
        """ClusterQueue by name."""
        c = self.cluster_queues.get(name)
        if c is None and self.source is not None:
            c = self.materialize(name)
        return c

    def release(self) -> None:
        """The cycle that read this copy is over: each copied cohort unlinked from its children (the reference
        cycles of a copy: a child's ``parent`` and its parent's child lists), so the copy goes by reference
        counting when it is dropped instead of waiting for the collector. A cycle copies the cohort trees of its
        heads: thousands of nodes a cycle at 2,000 ClusterQueues, every young collection walking them."""
        for c in self.cohorts.values():
            c.child_cohorts = []
            c.child_cqs = []

    def materialize(self, cq_name: str) -> ClusterQueueSnapshot | None:
        """Copy the cohort tree of ``cq_name`` from ``source`` if this partial copy does not hold it yet."""
        src = self.source
        if src is None:
            return self.cluster_queues.get(cq_name)
        got = self.cluster_queues.get(cq_name)
        if got is not None:
            return got
        base = src.cluster_queues.get(cq_name)
        if base is None:
            return None
        if base.parent is None:
            self._copy_cq(base, None)
        else:
            self._copy_cohort(base.parent.root(), None)
        return self.cluster_queues.get(cq_name)

    def _copy_cq(self, q: ClusterQueueSnapshot, parent: CohortSnapshot | None) -> ClusterQueueSnapshot:
        n = q.copy(parent)
        if self.generations is not None:
            n.generation = self.generations.get(q.name, 0)
        self.cluster_queues[q.name] = n
        return n

    def _copy_cohort(self, c: CohortSnapshot, parent: CohortSnapshot | None) -> None:
        """``clone`` of one cohort and everything below it (children in the source's order)."""
        n = CohortSnapshot(c.name, c.quotas)
        n.subtree_quota = c.subtree_quota  # fixed once the snapshot is built: shared
        n.usage = dict(c.usage)
        n.parent = parent
        self.cohorts[c.name] = n
        if parent is not None:
            parent.child_cohorts.append(n)
        for child in c.child_cohorts:
            self._copy_cohort(child, n)
        for q in c.child_cqs:
            n.child_cqs.append(self._copy_cq(q, n))

    def clone_trees(self, cq_names: Iterable[str], generations: dict[str, int]) -> Snapshot:
        """``clone`` of the cohort trees of ``cq_names`` only (the heads of a cycle); any other tree is copied
        when first asked for (``cq``). ``generations``: each ClusterQueue's generation as of now. A cycle then
        costs the trees it schedules, not every ClusterQueue of the cluster."""
        out = Snapshot(resource_flavors=self.resource_flavors, inactive=set(self.inactive))
        out.source, out.generations = self, generations
        for name in cq_names:
            out.materialize(name)
        return out

    def add_workload(self, info: WorkloadInfo) -> None:
        """Account an admitted workload to its ClusterQueue."""
        cq = self.cq(info.cluster_queue)
        if cq is None:
            return
        cq.own_workloads()[info.key] = info
        cq.add_usage(info.flavor_usage())

    def remove_workload(self, info: WorkloadInfo) -> None:
        """Release an admitted workload."""
        cq = self.cq(info.cluster_queue)
        if cq is None or info.key not in cq.workloads:
            return
        del cq.own_workloads()[info.key]
        cq.remove_usage(info.flavor_usage())

    def clone(self) -> Snapshot:
        """A copy whose usage and workload sets may be mutated independently."""
        out = Snapshot(resource_flavors=self.resource_flavors, inactive=set(self.inactive))
        for name, c in self.cohorts.items():
            n = CohortSnapshot(name, c.quotas)
            n.subtree_quota = c.subtree_quota  # fixed once the snapshot is built: shared
            n.usage = dict(c.usage)
            out.cohorts[name] = n
        for name, c in self.cohorts.items():
            n = out.cohorts[name]
            if c.parent is not None:
                n.parent = out.cohorts[c.parent.name]
            n.child_cohorts = [out.cohorts[x.name] for x in c.child_cohorts]
        for name, q in self.cluster_queues.items():
            cqn = q.copy(out.cohorts[q.parent.name] if q.parent is not None else None)
            if cqn.parent is not None:
                cqn.parent.child_cqs.append(cqn)
            out.cluster_queues[name] = cqn
        return out


def build_snapshot(
    cluster_queues: Iterable[Mapping],
    cohorts: Iterable[Mapping] = (),
    resource_flavors: Iterable[Mapping] = (),
    admitted: Iterable[WorkloadInfo] = (),
    inactive: Iterable[str] = (),
) -> Snapshot:
    """Build a snapshot from API objects and the workloads holding quota."""
    snap = Snapshot(
        resource_flavors={f["metadata"]["name"]: dict(f) for f in resource_flavors}, inactive=set(inactive)
    )
    cohort_objs = {c["metadata"]["name"]: c for c in cohorts}

    def cohort(name: str) -> CohortSnapshot:
        if name not in snap.cohorts:
            obj = cohort_objs.get(name) or {}
            _, quotas = parse_resource_groups((obj.get("spec") or {}).get("resourceGroups") or [])
            snap.cohorts[name] = CohortSnapshot(name, quotas)
        return snap.cohorts[name]

    for name in sorted(cohort_objs):
        cohort(name)
    for name in sorted(cohort_objs):
        parent = ((cohort_objs[name].get("spec") or {}).get("parentName")) or ""
        if parent:
            snap.cohorts[name].parent = cohort(parent)
    cyclic = set()
    for name, c in snap.cohorts.items():
        seen = {name}
        p = c.parent
        while p is not None:
            if p.name in seen:
                cyclic.add(name)
                break
            seen.add(p.name)
            p = p.parent
    for name in cyclic:
        snap.cohorts[name].parent = None
    for name in sorted(snap.cohorts):
        c = snap.cohorts[name]
        if c.parent is not None:
            c.parent.child_cohorts.append(c)
    for obj in sorted(cluster_queues, key=lambda o: o["metadata"]["name"]):
        cq = ClusterQueueSnapshot(obj)
        cname = (obj.get("spec") or {}).get("cohortName") or (obj.get("spec") or {}).get("cohort") or ""
        if cname:
            cq.parent = cohort(cname)
            cq.parent.child_cqs.append(cq)
            if cname in cyclic:
                snap.inactive.add(cq.name)
        snap.cluster_queues[cq.name] = cq
    for info in admitted:
        holder = snap.cluster_queues.get(info.cluster_queue)
        if holder is None:
            continue
        holder.own_workloads()[info.key] = info
        for fr, q in info.flavor_usage().items():
            holder.usage[fr] = holder.usage.get(fr, 0) + q
    for c in snap.cohorts.values():
        if c.parent is None:
            _update_cohort(c)
    return snap
