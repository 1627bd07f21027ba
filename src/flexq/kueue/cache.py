"""Kueue's in-memory view of one cluster: the scheduler cache and the queue manager, fed by watches.

Owns: ``KueueCache`` — ClusterQueues, Cohorts, ResourceFlavors, AdmissionChecks, LocalQueues and
namespace labels as last seen; the workloads holding quota (``reserving``, as ``WorkloadInfo`` from
their admission); the pending queues (``QueueManager``); the manager configuration (ConfigMap
``kueue-manager-config``, read with the release's gate defaults); the twin's Kueue release (``profile``, a
``flexq.api.kueue_versions.KueueVersion`` the assembly chose: every controller reads its switches here);
ClusterQueue activeness (Kueue's ``Active`` condition rules: missing
flavors, missing or inactive admission checks, ``stopPolicy``); per-cycle snapshots; and
``Hooks`` the controllers register to be woken (scheduler cycle, inadmissible flush, status).
It never writes the store: it only reads watch events (objects it must treat as read-only).

Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube`` or ``flexq.http``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from flexq.api.kueue_versions import DEFAULT as DEFAULT_KUEUE
from flexq.api.kueue_versions import KueueVersion
from flexq.kueue.checks import check_controller
from flexq.kueue.config import CONFIG_NAME, CONFIG_NAMESPACE, KueueConfig
from flexq.kueue.preemption import TreeMemo
from flexq.kueue.queues import QueueManager
from flexq.kueue.snapshot import ClusterQueueSnapshot, Snapshot, build_snapshot
from flexq.kueue.workload import WorkloadInfo, has_quota_reservation, is_active, is_finished, is_on_hold, key
from flexq.runtime.controller import EventRecorder
from flexq.semantics.conditions import find_condition
from flexq.store.store import Store, Subscription, WatchEvent

__all__ = ["Hooks", "KueueCache"]
KINDS = [
    "Workload",
    "ClusterQueue",
    "Cohort",
    "ResourceFlavor",
    "AdmissionCheck",
    "LocalQueue",
    "Namespace",
    "ConfigMap",
]


@dataclass
class Hooks:
    """Callbacks the controllers install (all optional)."""

    schedule: Callable[[], None] = lambda: None  # wake the scheduler
    flush: Callable[[set[str]], None] = lambda names: None  # requeue inadmissible of these CQs (batched)
    cq_status: Callable[[str], None] = lambda name: None  # refresh a ClusterQueue's status
    lq_status: Callable[[str, str], None] = lambda ns, name: None  # refresh a LocalQueue's status
    extra: list[Callable[[WatchEvent], None]] = field(default_factory=list)


def _stop_policy(q: dict) -> str:
    return (q.get("spec") or {}).get("stopPolicy") or "None"


class KueueCache:
    """Cache + queue manager of one cluster."""

    def __init__(
        self,
        store: Store,
        now: Callable[[], float],
        profile: KueueVersion | None = None,
        events: EventRecorder | None = None,
    ) -> None:
        self.store, self.now = store, now
        self.profile = profile or DEFAULT_KUEUE  # the Kueue release this cluster runs
        self.config = KueueConfig.from_configmap(
            store.try_get("ConfigMap", CONFIG_NAME, CONFIG_NAMESPACE), self.profile.gates
        )
        self.cqs: dict[str, dict] = {}
        self.cohorts: dict[str, dict] = {}
        self.flavors: dict[str, dict] = {}
        self.checks: dict[str, dict] = {}
        self.local_queues: dict[str, dict] = {}
        self._lq_of_cq: dict[
            str, set[str]
        ] = {}  # ClusterQueue -> the LocalQueues (namespace/name) pointing to it
        self.namespaces: dict[str, dict] = {}
        self.reserving: dict[str, WorkloadInfo] = {}
        # ``reserving`` by ClusterQueue and by (namespace, LocalQueue): what the status controllers count
        self.reserving_by_cq: dict[str, dict[str, WorkloadInfo]] = {}
        self.reserving_by_lq: dict[tuple[str, str], dict[str, WorkloadInfo]] = {}
        self.workloads: dict[str, dict] = {}  # every workload as last seen (read-only)
        self.queues = QueueManager(self.config.requeuing_timestamp)
        self.queues.tree_of = self.tree_root
        self.queues.priority_sorting = self.config.gate("PrioritySortingWithinCohort")
        self.hooks = Hooks()
        self.metrics: Any = None  # flexq.kueue.metrics.KueueMetrics, installed by the registry
        self.cq_generation: dict[str, int] = {}
        # One recorder for every Kueue controller, the cluster's (``Context.recorder``: its correlator and dedup
        # index, the Events a simulation reads and no others, an expired Event forgotten); a bare one in tests
        self.events = events if events is not None else EventRecorder(store, "kueue-admission")
        self._base: Snapshot | None = None  # quota structure; rebuilt when queues, cohorts or flavors change
        # versions of the cohort trees of ``_base`` (root -> changes of the workloads holding quota in it), in
        # an epoch per ``_base``: what ``preemption.TreeMemo`` keeps its answers by
        self._epoch = 0
        self._tree_versions: dict[str, int] = {}
        # every change of a workload holding quota in a tree (not only what a preemption search reads), and of
        # what the scheduler reads beside the trees (namespaces, the configuration, queues' activeness): what a
        # settled tree's scheduling is keyed by (``tree_inputs``)
        self._tree_events: dict[str, int] = {}
        self._misc = 0
        self.trees = TreeMemo()
        self._inactive_names: set[str] | None = None  # inactive ClusterQueues, valid while _base is
        # the scheduler's partial snapshot of this cycle (``snapshot(heads)``): its trees not copied yet are copied
        # before ``_base`` changes them
        self._partial: weakref.ref[Snapshot] | None = None
        self._inactive: dict[str, tuple[str, str] | None] = {}  # valid while _base is
        self._sub: Subscription | None = None

    # -- wiring ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Load everything, then follow the store."""
        for kind in [
            "Namespace",
            "ResourceFlavor",
            "Cohort",
            "AdmissionCheck",
            "ClusterQueue",
            "LocalQueue",
            "Workload",
        ]:
            for obj in self.store.list(kind):
                self.on_event(WatchEvent("ADDED", kind, obj, 0), initial=True)
        self._sub = self.store.watch(self.on_event, KINDS)
        self.hooks.schedule()

    def stop(self) -> None:
        """Stop following the store."""
        if self._sub is not None:
            self._sub.cancel()
            self._sub = None

    # -- events ------------------------------------------------------------------------------------
    def on_event(self, ev: WatchEvent, initial: bool = False) -> None:
        """Update the view from one store change."""
        obj, deleted = ev.object, ev.type == "DELETED"
        kind = obj.get("kind", ev.kind)
        name = obj["metadata"]["name"]
        if kind != "Workload" and self._reads_beyond_trees(kind, obj, deleted):
            self._misc += 1
            self.queues.wake_all()
        if kind == "Workload":
            self._on_workload(obj, deleted)
        elif kind == "ClusterQueue":
            self._on_cq(obj, deleted)
        elif kind in ("Cohort", "ResourceFlavor", "AdmissionCheck"):
            table = {"Cohort": self.cohorts, "ResourceFlavor": self.flavors, "AdmissionCheck": self.checks}[
                kind
            ]
            self._base = None
            if deleted:
                table.pop(name, None)
            else:
                table[name] = obj
            if kind == "Cohort":
                self.queues.set_cohorts(self.cohorts.values())
            for cq in list(self.cqs):
                self.hooks.cq_status(cq)
            self.hooks.flush(set(self.cqs))
        elif kind == "LocalQueue":
            self._on_lq(obj, deleted, initial)
        elif kind == "Namespace":
            if deleted:
                self.namespaces.pop(name, None)
            else:
                self.namespaces[name] = obj
        elif (
            kind == "ConfigMap"
            and name == CONFIG_NAME
            and obj["metadata"].get("namespace") == CONFIG_NAMESPACE
        ):
            self.config = KueueConfig.from_configmap(None if deleted else obj, self.profile.gates)
            self.queues.requeuing_timestamp = self.config.requeuing_timestamp
            self.queues.priority_sorting = self.config.gate("PrioritySortingWithinCohort")
        for fn in self.hooks.extra:
            fn(ev)

    def _reads_beyond_trees(self, kind: str, obj: dict, deleted: bool) -> bool:
        """Whether a change of this object can change a scheduling cycle's outcome for any cohort tree: a
        ClusterQueue's spec or activeness, a LocalQueue's spec, a Cohort, ResourceFlavor or AdmissionCheck,
        a Namespace (selectors), the configuration. Status-only updates of the queues (their counts, every few
        admissions) cannot."""
        name = obj["metadata"]["name"]
        if kind == "ClusterQueue":
            old = self.cqs.get(name)
            return (
                deleted
                or old is None
                or old.get("spec") != obj.get("spec")
                or find_condition(old, "Active") != find_condition(obj, "Active")
            )
        if kind == "LocalQueue":
            old = self.local_queues.get(f"{obj['metadata'].get('namespace', '')}/{name}")
            return deleted or old is None or old.get("spec") != obj.get("spec")
        if kind == "ConfigMap":
            return name == CONFIG_NAME and obj["metadata"].get("namespace") == CONFIG_NAMESPACE
        return True

    def _on_cq(self, obj: dict, deleted: bool) -> None:
        name = obj["metadata"]["name"]
        self._base = (
            None if deleted or (self.cqs.get(name) or {}).get("spec") != obj.get("spec") else self._base
        )
        if deleted:
            self.cqs.pop(name, None)
            self.queues.delete_cluster_queue(name)
            return
        old = self.cqs.get(name)
        self.cqs[name] = obj
        self.queues.add_or_update_cluster_queue(obj)
        if old is None or old.get("spec") != obj.get("spec"):
            self.cq_generation[name] = self.cq_generation.get(name, 0) + 1
            # workloads of LocalQueues pointing here that arrived before the ClusterQueue (in the LocalQueues'
            # order; most ClusterQueues are created before any LocalQueue points to them)
            pointing = self._lq_of_cq.get(name)
            if pointing:
                for lqk, lq in list(self.local_queues.items()):
                    if lqk in pointing:
                        self._requeue_lq_workloads(lq)
            self.hooks.flush({name})
            self.hooks.cq_status(name)
        self.hooks.schedule()

    def _on_lq(self, obj: dict, deleted: bool, initial: bool) -> None:
        md = obj["metadata"]
        lqk = f"{md.get('namespace', '')}/{md['name']}"
        old = self.local_queues.get(lqk)
        was = ((old or {}).get("spec") or {}).get("clusterQueue")
        now = None if deleted else (obj.get("spec") or {}).get("clusterQueue")
        if was != now:
            if was is not None:
                self._lq_of_cq.get(was, set()).discard(lqk)
            if now is not None:
                self._lq_of_cq.setdefault(now, set()).add(lqk)
        if deleted:
            self.local_queues.pop(lqk, None)
            self.queues.delete_local_queue(md.get("namespace", ""), md["name"])
            return
        self.local_queues[lqk] = obj
        # A stopped LocalQueue (stopPolicy Hold or HoldAndDrain) is not in the queue manager, so its pending
        # workloads are not queued (localqueue_controller.go Create/Update: AddLocalQueue only when the policy
        # is None, DeleteLocalQueue when it stops, AddLocalQueue again when it restarts).
        queued = old is not None and _stop_policy(old) == "None"
        if _stop_policy(obj) != "None":
            if queued or (old is None and lqk in self.queues.local_queues):
                self.queues.delete_local_queue(md.get("namespace", ""), md["name"])
        else:
            self.queues.add_or_update_local_queue(obj)
            if (old is None or not queued) and not initial:
                self._requeue_lq_workloads(obj)
        self.hooks.lq_status(md.get("namespace", ""), md["name"])

    def _requeue_lq_workloads(self, lq: dict) -> None:
        ns, name = lq["metadata"].get("namespace", ""), lq["metadata"]["name"]
        for wl in list(self.workloads.values()):
            if wl["metadata"].get("namespace") == ns and (wl.get("spec") or {}).get("queueName") == name:
                self._on_workload(wl, False)

    def _on_workload(self, wl: dict, deleted: bool) -> None:
        k = key(wl)
        was = self.reserving.get(k)
        gone = deleted or is_finished(wl) or bool(wl["metadata"].get("deletionTimestamp"))
        if deleted:
            self.workloads.pop(k, None)
        else:
            self.workloads[k] = wl
        if gone:
            self.queues.delete_workload(k)
            self.reserving.pop(k, None)
        elif has_quota_reservation(wl) and (wl.get("status") or {}).get("admission"):
            self.queues.delete_workload(k)
            if self.concurrent_admission_parent(wl, wl["status"]["admission"].get("clusterQueue", "")):
                self.reserving.pop(k, None)  # a Parent's admission copies its Variant's: counted once, there
            else:
                self.reserving[k] = WorkloadInfo.from_obj(
                    wl, requeuing_timestamp=self.config.requeuing_timestamp
                )
        else:
            self.reserving.pop(k, None)
            if self.concurrent_admission_parent(wl, self.queues.cluster_queue_for(wl) or ""):
                self.queues.delete_workload(k)  # Parents are not queued: their Variants are
            elif is_active(wl) and not is_on_hold(wl):  # an on-hold workload waits for its job, not quota
                self.queues.add_or_update_workload(wl, self.now())
            else:
                self.queues.delete_workload(k)
        self._index_reserving(k, was, self.reserving.get(k))
        if was is not None and (
            k not in self.reserving or self.reserving[k].flavor_usage() != was.flavor_usage()
        ):
            # capacity freed: bump the generation and requeue the cohort's inadmissible workloads
            self.cq_generation[was.cluster_queue] = self.cq_generation.get(was.cluster_queue, 0) + 1
            self.hooks.flush({was.cluster_queue})
            self.hooks.cq_status(was.cluster_queue)
        if self._base is not None:
            now = self.reserving.get(k)
            for info in (was, now):
                if info is not None:  # a settled tree this workload holds quota in is woken
                    tree = self.tree_root(info.cluster_queue)
                    if tree is not None:
                        self._tree_events[tree] = self._tree_events.get(tree, 0) + 1
                        self.queues.wake(tree)
            partial = self._partial() if self._partial is not None else None
            if partial is not None and partial.source is self._base:
                for info in (was, now):
                    if info is not None:
                        partial.materialize(info.cluster_queue)  # as it was when the cycle began
            if was is not None:
                self._base.remove_workload(was)
            if now is not None:
                self._base.add_workload(now)
            # a change a preemption search can see: the tree has a new version (a condition such as Admitted or
            # PodsReady, or another status field, changes no search's answer)
            if was is None or now is None or was.preemption_signature != now.preemption_signature:
                if was is not None:
                    self._bump(was.cluster_queue)
                if now is not None:
                    self._bump(now.cluster_queue)
        if k in self.reserving and (was is None or was.flavor_usage() != self.reserving[k].flavor_usage()):
            self.hooks.cq_status(self.reserving[k].cluster_queue)
        ns = wl["metadata"].get("namespace", "")
        qn = (wl.get("spec") or {}).get("queueName", "")
        if qn:
            self.hooks.lq_status(ns, qn)
            cqn = self.queues.local_queues.get(f"{ns}/{qn}")
            if cqn:
                self.hooks.cq_status(cqn)
        self.hooks.schedule()

    def _index_reserving(self, k: str, was: WorkloadInfo | None, now: WorkloadInfo | None) -> None:
        """Keep ``reserving_by_cq`` and ``reserving_by_lq`` in step with ``reserving`` for workload ``k``."""
        if was is not None:
            _unfile(self.reserving_by_cq, was.cluster_queue, k)
            _unfile(self.reserving_by_lq, _local_queue_of(was), k)
        if now is not None:
            self.reserving_by_cq.setdefault(now.cluster_queue, {})[k] = now
            self.reserving_by_lq.setdefault(_local_queue_of(now), {})[k] = now

    def tree_root(self, cq_name: str) -> str | None:
        """The cohort tree of a ClusterQueue as the quota structure has it (None before there is one)."""
        base = self._base
        if base is None:
            return None
        cq = base.cluster_queues.get(cq_name)
        return _root_name(cq) if cq is not None else "queue/" + cq_name

    def tree_inputs(self, tree: str) -> tuple | None:
        """What a scheduling cycle over ``tree`` reads besides its heads: the quota structure's epoch, the
        changes of the workloads holding quota in the tree, and the rest (namespaces, configuration, queues)."""
        if self._base is None:
            return None
        return (self._epoch, self._tree_events.get(tree, 0), self._misc)

    def _bump(self, cq_name: str) -> None:
        """A workload holding quota in ``cq_name`` changed: its cohort tree has a new version."""
        assert self._base is not None
        cq = self._base.cluster_queues.get(cq_name)
        if cq is not None:
            root = _root_name(cq)
            self._tree_versions[root] = self._tree_versions.get(root, 0) + 1

    # -- derived -----------------------------------------------------------------------------------
    def concurrent_admission_enabled(self, cq_name: str) -> bool:
        """``ConcurrentAdmissionEnabled``: the gate is on and the ClusterQueue has a policy."""
        return (
            self.config.gate("ConcurrentAdmission")
            and ((self.cqs.get(cq_name) or {}).get("spec") or {}).get("concurrentAdmissionPolicy") is not None
        )

    def concurrent_admission_parent(self, wl: dict, cq_name: str) -> bool:
        """``IsConcurrentAdmissionParent``: a workload of such a ClusterQueue that is not a Variant (owned by a
        Workload) — a Parent even before the Workload controller labelled it."""
        if not cq_name or not self.concurrent_admission_enabled(cq_name):
            return False
        return not any(
            r.get("kind") == "Workload" and r.get("apiVersion") == "kueue.x-k8s.io/v1beta2"
            for r in wl["metadata"].get("ownerReferences") or []
        )

    def namespace_labels(self, ns: str) -> dict | None:
        """Labels of a namespace (None when it does not exist)."""
        obj = self.namespaces.get(ns)
        if obj is None:
            return None
        return dict(obj["metadata"].get("labels") or {}, **{"kubernetes.io/metadata.name": ns})

    def inactive_reason(self, name: str) -> tuple[str, str] | None:
        """Why a ClusterQueue is inactive ((reason, message)), or None when it can admit."""
        if self._base is None:
            self._inactive = {}
        if name not in self._inactive:
            self._inactive[name] = self._inactive_reason(name)
        return self._inactive[name]

    def _inactive_reason(self, name: str) -> tuple[str, str] | None:
        cq = self.cqs.get(name)
        if cq is None:
            return ("NotFound", "ClusterQueue not found")
        spec = cq.get("spec") or {}
        reasons: list[str] = []
        msgs: list[str] = []
        if (spec.get("stopPolicy") or "None") != "None":
            reasons.append("Stopped")
            msgs.append("is stopped")
        missing = sorted(
            {f["name"] for g in spec.get("resourceGroups") or [] for f in g.get("flavors") or []}
            - set(self.flavors)
        )
        if missing:
            reasons.append("FlavorNotFound")
            msgs.append("references missing ResourceFlavor(s): " + ",".join(missing))
        names = [a["name"] for a in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []]
        names += list(spec.get("admissionChecks") or [])
        absent = sorted(n for n in names if n not in self.checks)
        if absent:
            reasons.append("AdmissionCheckNotFound")
            msgs.append("references missing AdmissionCheck(s): " + ",".join(absent))
        inactive = sorted(n for n in names if n in self.checks and not _active(self.checks[n]))
        if inactive:
            reasons.append("AdmissionCheckInactive")
            msgs.append("references inactive AdmissionCheck(s): " + ",".join(inactive))
        if reasons:
            return reasons[0], "Can't admit new workloads: " + ", ".join(msgs) + "."
        return None

    def snapshot(self, heads: Iterable[str] | None = None) -> Snapshot:
        """A fresh per-cycle snapshot: the cached quota structure plus the usage of reserving workloads. With
        ``heads`` (the ClusterQueues of a cycle's heads) only their cohort trees are copied at once; any other tree
        is copied when first asked for, as it was when the snapshot was taken."""
        if self._base is None:
            self._inactive = {}
            self._inactive_names = None
            self._base = build_snapshot(
                self.cqs.values(), self.cohorts.values(), self.flavors.values(), self.reserving.values()
            )
            self._epoch += 1
            self._tree_versions = {}
        if self._inactive_names is None:
            self._inactive_names = {
                n for n in self.cqs if self.inactive_reason(n) is not None
            } | self._base.inactive
        if heads is None:
            snap = self._base.clone()
            for name, cq in snap.cluster_queues.items():
                cq.generation = self.cq_generation.get(name, 0)
        else:
            snap = self._base.clone_trees(sorted(set(heads)), dict(self.cq_generation))
            self._partial = weakref.ref(snap)
        snap.inactive = set(self._inactive_names)
        epoch, versions = self._epoch, dict(self._tree_versions)
        snap.tree_key = lambda cq: (epoch, _root_name(cq), versions.get(_root_name(cq), 0))
        return snap


def _local_queue_of(info: WorkloadInfo) -> tuple[str, str]:
    return (info.obj["metadata"].get("namespace") or "", (info.obj.get("spec") or {}).get("queueName") or "")


def _unfile(index: dict, bucket: object, k: str) -> None:
    got = index.get(bucket)
    if got is not None:
        got.pop(k, None)
        if not got:
            del index[bucket]


def _root_name(cq: ClusterQueueSnapshot) -> str:
    """The root of a ClusterQueue's cohort tree, as a name no cohort and no other queue has."""
    return "cohort/" + cq.parent.root().name if cq.parent is not None else "queue/" + cq.name


def _active(ac: dict) -> bool:
    c = find_condition(ac, "Active")
    if c is not None:
        return c.get("status") == "True"
    # Checks of controllers flexq does not run are reported active once they exist, as an
    # external controller would do; a controller of kueue.checks sets the condition itself.
    return check_controller((ac.get("spec") or {}).get("controllerName")) is None
