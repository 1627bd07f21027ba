"""One pass's reading of the cluster: ``ClusterView``, read once through the ``ClusterAPI`` and then only looked at.

Like Kueue's scheduler with its snapshot, every step of a pass (evidence, moves, hedge-backs, rescue, steering)
works from the same view: the LocalQueues in scope and their ClusterQueues, the ResourceFlavors' node labels,
the admission checks' provisioning classes, the in-scope Workloads with their jobs and pods, and — read only when
a step needs them, once — Nodes, every Pod, the cluster autoscaler's capacity Events and ProvisioningRequests.
Against a real API server each is one list request per pass (per namespace where the kind is namespaced).

What a pass promises as it goes (free node room given to a job sent back) is kept in ``Promises``, never in the
view. Kubernetes rules come from ``flexq.semantics`` (conditions, a pod's effective requests, terminal pods,
kube-scheduler's node filters).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from flexq.api.quantity import QuantityError, parse_quantity
from flexq.clock import parse_time_or_none
from flexq.fallback.affinity import flavor_label, unrestrict
from flexq.fallback.api import ClusterAPI
from flexq.fallback.model import OPT_IN_LABEL, FallbackConfig
from flexq.semantics.conditions import find_condition, is_true
from flexq.semantics.nodefit import node_info, place_pods, pod_requests
from flexq.semantics.pods import is_terminal
from flexq.semantics.resources import pod_requests as spec_requests
from flexq.semantics.workloads import admission_order
from flexq.semantics.workloads import priority as workload_priority

__all__ = ["ClusterView", "WorkloadView", "Promises", "JOB_KINDS", "quantity"]

JOB_KINDS = ("RayJob", "RayCluster", "Job")
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
_TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"


def quantity(value: Any) -> Any:
    """A Kubernetes quantity as an exact number (0 when unreadable)."""
    from fractions import Fraction

    try:
        return parse_quantity(value if isinstance(value, (str, int, float)) else str(value))
    except (QuantityError, ValueError):
        return Fraction(0)


@dataclass
class WorkloadView:
    """One in-scope Workload as the pass sees it."""

    obj: Mapping[str, Any]
    key: str  # namespace/name
    cq: str
    job: tuple[str, str, str] | None  # (kind, namespace, name) of its controlling job
    assigned: dict[str, set[str]] = field(default_factory=dict)  # pod set -> flavors
    pods: list[Mapping[str, Any]] = field(default_factory=list)
    current: bool = True  # the job's newest active Workload (a job can briefly have an old, evicted one too)

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def ident(self) -> str:
        """The job it runs ("kind/namespace/name"; the workload's own key without a job): a probe is a job,
        whichever of its Workloads is current."""
        return "/".join(self.job) if self.job is not None else self.key

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid") or "")

    @property
    def active(self) -> bool:
        return (self.obj.get("spec") or {}).get("active") is not False

    @property
    def reserved(self) -> bool:
        return is_true(self.obj, "QuotaReserved")

    @property
    def admitted(self) -> bool:
        return is_true(self.obj, "Admitted")

    def checks(self) -> list[Mapping[str, Any]]:
        return list((self.obj.get("status") or {}).get("admissionChecks") or [])

    def later_placements(self, cq: Mapping[str, Any]) -> Iterator[tuple[str, list[str], list[str]]]:
        """Each flavor ``cur`` of a resource group of ``cq`` that this workload is assigned, with the group's
        flavors before it (Kueue's order) and the pod sets on it: where a move back to an earlier flavor starts
        (a hedge back, a promotion). In the groups' order, then the pod sets' and the flavors' names."""
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            names = [f.get("name") for f in rg.get("flavors") or []]
            for _ps, flavors in sorted(self.assigned.items()):
                for cur in sorted(flavors):
                    if cur in names:
                        sets = sorted(p for p, fs in self.assigned.items() if cur in fs)
                        yield cur, names[: names.index(cur)], sets

    def condition(self, ctype: str) -> Mapping[str, Any] | None:
        return find_condition(self.obj, ctype)

    @property
    def priority(self) -> int:
        return workload_priority(self.obj)

    @property
    def order(self) -> tuple[int, float, str]:
        """Kueue's order of admission (``semantics.workloads.admission_order``): higher priority, then the
        earlier queue-order timestamp, then the UID."""
        return admission_order(self.obj)

    @property
    def preempted(self) -> bool:
        """Kueue preempted this Workload (for a higher-priority one, or to reclaim quota in its cohort): its
        ``Preempted`` condition, which stays (False once re-admitted) on the same Workload."""
        return self.condition("Preempted") is not None

    def pod_set_needs(self, sets: list[str]) -> list[tuple[int, dict[str, Any]]]:
        """(count, a pod's template) of the named pod sets."""
        out = []
        for ps in (self.obj.get("spec") or {}).get("podSets") or []:
            if ps.get("name") in sets:
                out.append((int(ps.get("count") or 1), dict(ps.get("template") or {})))
        return out


def _rank(w: WorkloadView) -> tuple[bool, str, str]:
    md = w.obj["metadata"]
    return (w.active, md.get("creationTimestamp") or "", md["name"])


class Promises:
    """Node room a pass has promised to jobs it sends back (so no two jobs are promised the same nodes)."""

    def __init__(self) -> None:
        self.used: dict[str, dict[str, int]] = {}  # node -> requests promised
        self.pods: dict[str, int] = {}


class ClusterView:
    """The cluster as one pass reads it (see the module docstring)."""

    def __init__(self, api: ClusterAPI, cfg: FallbackConfig) -> None:
        self.api, self.cfg = api, cfg
        self.now = api.now()
        self.queues: dict[tuple[str, str], str] = {}
        self.localqueue_objs = api.list("LocalQueue")  # as read (the forecast's state takes them whole)
        self.flavor_objs: list[dict] = []
        for lq in self.localqueue_objs:
            md = lq["metadata"]
            if cfg.all_queues or (md.get("labels") or {}).get(OPT_IN_LABEL) == "true":
                self.queues[(md.get("namespace") or "", md["name"])] = (lq.get("spec") or {}).get(
                    "clusterQueue", ""
                )
        self.cqs: dict[str, Mapping[str, Any]] = {}
        self.flavors: dict[str, dict[str, str]] = {}
        self.workloads: list[WorkloadView] = []
        self.by_job: dict[tuple[str, str, str], WorkloadView] = {}
        self.uids_of_job: dict[tuple[str, str, str], set[str]] = {}
        if not self.queues:
            return
        self.cqs = {cq["metadata"]["name"]: cq for cq in api.list("ClusterQueue")}
        self.flavor_objs = api.list("ResourceFlavor")
        self.flavors = {
            rf["metadata"]["name"]: dict((rf.get("spec") or {}).get("nodeLabels") or {})
            for rf in self.flavor_objs
        }
        self._read_workloads()

    @property
    def in_scope(self) -> bool:
        return bool(self.queues)

    # -- workloads, their jobs and pods ------------------------------------------------------------------------
    def _read_workloads(self) -> None:
        for wl in sorted(
            self.api.list("Workload"),
            key=lambda w: (w["metadata"].get("namespace", ""), w["metadata"]["name"]),
        ):
            md = wl["metadata"]
            ns = md.get("namespace") or ""
            cq = self.queues.get((ns, (wl.get("spec") or {}).get("queueName", "")))
            if cq is None or is_true(wl, "Finished"):
                continue
            owner = next((r for r in md.get("ownerReferences") or [] if r.get("controller")), None)
            job = (owner["kind"], ns, owner["name"]) if owner and owner.get("kind") in JOB_KINDS else None
            w = WorkloadView(wl, f"{ns}/{md['name']}", cq, job)
            for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
                w.assigned[psa.get("name", "")] = set((psa.get("flavors") or {}).values())
            self.workloads.append(w)
            if job is not None:
                self.uids_of_job.setdefault(job, set()).add(w.uid)
                prev = self.by_job.get(job)
                if prev is None or _rank(w) > _rank(prev):
                    if prev is not None:
                        prev.current = False
                    self.by_job[job] = w
                else:
                    w.current = False
        namespaces = sorted({w.namespace for w in self.workloads})
        ray_clusters: dict[tuple[str, str], Mapping[str, Any]] = {}
        for ns in namespaces:
            for pod in self.api.list("Pod", ns):
                owner = self._owner_workload(pod, ray_clusters)
                if owner is not None:
                    owner.pods.append(pod)

    def _owner_workload(
        self, pod: Mapping[str, Any], ray_clusters: dict[tuple[str, str], Mapping[str, Any]]
    ) -> WorkloadView | None:
        """Climb the pod's controller references (Pod -> RayCluster -> RayJob, Pod -> Job) to a job with a
        Workload (RayClusters read once per namespace)."""
        ns = pod["metadata"].get("namespace") or ""
        obj: Mapping[str, Any] | None = pod
        for _ in range(3):
            assert obj is not None
            ref = next((r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None:
                return None
            w = self.by_job.get((ref.get("kind", ""), ns, ref.get("name", "")))
            if w is not None:
                return w
            if ref.get("kind") != "RayCluster":
                return None
            if (ns, "") not in ray_clusters:
                ray_clusters[(ns, "")] = {}
                for rc in self.api.list("RayCluster", ns):
                    ray_clusters[(ns, rc["metadata"]["name"])] = rc
            obj = ray_clusters.get((ns, ref.get("name", "")))
            if obj is None:
                return None
        return None

    @cached_property
    def jobs(self) -> dict[tuple[str, str, str], Mapping[str, Any]]:
        """The in-scope workloads' jobs (one list per kind and namespace)."""
        out: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        wanted = {w.job for w in self.workloads if w.job is not None}
        for kind, ns in sorted({(k, n) for k, n, _ in wanted}):
            for obj in self.api.list(kind, ns):
                key = (kind, ns, obj["metadata"]["name"])
                if key in wanted:
                    out[key] = obj
        return out

    def job(self, w: WorkloadView) -> Mapping[str, Any] | None:
        return self.jobs.get(w.job) if w.job is not None else None

    # -- admission checks --------------------------------------------------------------------------------------
    @cached_property
    def check_classes(self) -> dict[str, str | None]:
        """AdmissionCheck -> the provisioning class of its ProvisioningRequestConfig (None: not a provisioning
        check)."""
        prcs = {p["metadata"]["name"]: p for p in self.api.list("ProvisioningRequestConfig")}
        out: dict[str, str | None] = {}
        for ac in self.api.list("AdmissionCheck"):
            params = (ac.get("spec") or {}).get("parameters") or {}
            prc = (
                prcs.get(params.get("name", ""))
                if params.get("kind") == "ProvisioningRequestConfig"
                else None
            )
            out[ac["metadata"]["name"]] = ((prc or {}).get("spec") or {}).get("provisioningClassName")
        return out

    def checks_on(self, cq_name: str, flavor: str) -> list[str]:
        """The admission checks the ClusterQueue runs for ``flavor``."""
        cq = self.cqs.get(cq_name) or {}
        strategy = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
        names = [
            r.get("name", "") for r in strategy if not r.get("onFlavors") or flavor in r.get("onFlavors")
        ]
        names += list((cq.get("spec") or {}).get("admissionChecks") or [])
        return names

    # -- nodes, pods, events, provisioning requests (read when a step needs them) -------------------------------
    @cached_property
    def nodes(self) -> list[Mapping[str, Any]]:
        return list(self.api.list("Node"))

    @cached_property
    def all_pods(self) -> list[Mapping[str, Any]]:
        return list(self.api.list("Pod"))

    @cached_property
    def capacity_events(self) -> dict[str, list[Mapping[str, Any]]]:
        """The cluster autoscaler's FailedScaleUp / NotTriggerScaleUp Events about pods, by the pod's uid."""
        out: dict[str, list[Mapping[str, Any]]] = {}
        for ns in sorted({w.namespace for w in self.workloads}):
            for ev in self.api.capacity_events(ns):
                uid = (ev.get("involvedObject") or {}).get("uid") or ""
                out.setdefault(uid, []).append(ev)
        return out

    def provisioning_waits(self) -> dict[str, list[float]]:
        """Flavor -> how long the workloads admitted on it waited between quota and admission (their admission
        checks: for DWS, the ProvisioningRequest's queue), read from the Workloads in view."""
        out: dict[str, list[float]] = {}
        for w in self.workloads:
            if not w.admitted or not w.checks():
                continue
            qr, ad = w.condition("QuotaReserved"), w.condition("Admitted")
            t0, t1 = (
                parse_time_or_none((qr or {}).get("lastTransitionTime")),
                parse_time_or_none((ad or {}).get("lastTransitionTime")),
            )
            if t0 is None or t1 is None or t1 < t0:
                continue
            for fs in w.assigned.values():
                for f in fs:
                    out.setdefault(f, []).append(t1 - t0)
        return out

    def provisioning_waiting(self) -> dict[str, dict[str, float]]:
        """Flavor -> job -> how long its workload, still waiting on its admission checks there, has waited so far
        (quota reserved, not admitted): a wait that is at least that long, the censored half of
        ``provisioning_waits``."""
        out: dict[str, dict[str, float]] = {}
        for w in self.workloads:
            if w.admitted or not w.active or not w.reserved or not w.checks():
                continue
            t0 = parse_time_or_none((w.condition("QuotaReserved") or {}).get("lastTransitionTime"))
            if t0 is None or t0 > self.now:
                continue
            for fs in w.assigned.values():
                for f in fs:
                    out.setdefault(f, {})[w.ident] = self.now - t0
        return out

    def pool_of(self, flavor: str) -> str:
        return (self.flavors.get(flavor) or {}).get(NODEPOOL_LABEL, "")

    def nodes_of(self, flavor: str) -> list[Mapping[str, Any]]:
        labels = self.flavors.get(flavor) or {}
        if not labels:
            return []
        return [
            n
            for n in self.nodes
            if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
        ]

    def usable_nodes(self, flavor: str) -> list[Mapping[str, Any]]:
        """The flavor's nodes that can take pods: not being deleted, not cordoned, not being scaled down."""
        return [
            n
            for n in self.nodes_of(flavor)
            if not n["metadata"].get("deletionTimestamp")
            and not (n.get("spec") or {}).get("unschedulable")
            and not any(t.get("key") == _TO_BE_DELETED for t in (n.get("spec") or {}).get("taints") or [])
        ]

    @cached_property
    def _bound(self) -> dict[str, tuple[dict[str, int], int]]:
        """Node -> (requests of the pods on it, pods on it), the pods that hold a node (not terminal)."""
        out: dict[str, tuple[dict[str, int], int]] = {}
        for pod in self.all_pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or is_terminal(pod):
                continue
            used, count = out.get(node, ({}, 0))
            for r, v in pod_requests(dict(pod)).items():
                used[r] = used.get(r, 0) + v
            out[node] = (used, count + 1)
        return out

    @cached_property
    def busy_nodes(self) -> set[str]:
        return set(self._bound)

    # -- where a pod is, and what a flavor can hold ------------------------------------------------------------
    def pod_flavor(self, w: WorkloadView, pod: Mapping[str, Any]) -> str | None:
        """The flavor a pod was admitted on: the assigned flavor whose node labels are in its nodeSelector."""
        sel = (pod.get("spec") or {}).get("nodeSelector") or {}
        for _ps, flavors in sorted(w.assigned.items()):
            for f in sorted(flavors):
                labels = self.flavors.get(f) or {}
                if labels and all(sel.get(k) == v for k, v in labels.items()):
                    return f
        return None

    def started(self, w: WorkloadView, flavor: str, refused: bool = False) -> bool:
        """Its pods on the flavor run or were bound to a node (a job whose pods started is never moved).

        ``refused``: some of its pods on the flavor were refused capacity (a stock-out). A job whose pods are
        only partly placed there — some bound, the rest refused, the Workload not ``PodsReady`` — has not
        started: its pods are one gang (a TPU slice's hosts, a Ray cluster's workers), the bound ones hold their
        nodes (and are billed) while the job does nothing, and Kueue's ``waitForPodsReady`` evicts it at its
        timeout only to admit it on the same flavor again. Moving it loses nothing that ran."""
        if is_true(w.obj, "PodsReady"):
            return True
        bound = unbound = False
        for pod in w.pods:
            if self.pod_flavor(w, pod) != flavor:
                continue
            if (pod.get("status") or {}).get("phase") == "Running" or (pod.get("spec") or {}).get("nodeName"):
                bound = True
            elif not is_terminal(pod):
                unbound = True
        return bound and not (refused and unbound)

    def cohort_of(self, cq_name: str) -> str:
        """The cohort a ClusterQueue belongs to (``spec.cohortName``, v1beta1 ``spec.cohort``); a ClusterQueue
        without one is its own ("cq:<name>"). Kueue admits across a cohort in one order."""
        spec = (self.cqs.get(cq_name) or {}).get("spec") or {}
        return str(spec.get("cohortName") or spec.get("cohort") or f"cq:{cq_name}")

    def cohort_members(self, cq_name: str) -> list[str]:
        cohort = self.cohort_of(cq_name)
        return sorted(n for n in self.cqs if self.cohort_of(n) == cohort)

    def _quota(
        self, cq_name: str, flavor: str
    ) -> tuple[set[str], dict[str, Any], dict[str, Any], dict[str, Any]]:
        """(covered resources, nominal, borrowing limit, reserved) of ``flavor`` in the ClusterQueue."""
        cq = self.cqs.get(cq_name) or {}
        nominal: dict[str, Any] = {}
        limit: dict[str, Any] = {}
        covered: set[str] = set()
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            for f in rg.get("flavors") or []:
                if f.get("name") == flavor:
                    covered |= set(rg.get("coveredResources") or [])
                    for r in f.get("resources") or []:
                        nominal[r["name"]] = quantity(r.get("nominalQuota"))
                        if r.get("borrowingLimit") is not None:
                            limit[r["name"]] = quantity(r.get("borrowingLimit"))
        used: dict[str, Any] = {}
        for fu in (cq.get("status") or {}).get("flavorsReservation") or []:
            if fu.get("name") == flavor:
                for r in fu.get("resources") or []:
                    used[r["name"]] = quantity(r.get("total"))
        return covered, nominal, limit, used

    def reserved_by_workloads(self, cq_name: str, flavor: str) -> dict[str, Any]:
        """What the in-scope Workloads of the ClusterQueue that hold quota reserve of ``flavor`` (their admissions'
        ``resourceUsage``): what Kueue's cache holds, which the ClusterQueue's status shows only after its batch
        period (Kueue's ``UpdatesBatchPeriod``, 1 s) — a Workload admitted a moment ago is here already."""
        out: dict[str, Any] = {}
        for w in self.workloads:
            if w.cq != cq_name or not w.reserved:
                continue
            for psa in ((w.obj.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
                flavors = psa.get("flavors") or {}
                for r, q in (psa.get("resourceUsage") or {}).items():
                    if flavors.get(r) == flavor:
                        out[r] = out.get(r, 0) + quantity(q)
        return out

    def quota_free(
        self,
        cq_name: str,
        flavor: str,
        needs: list[tuple[int, dict[str, Any]]],
        seen: Mapping[str, Any] | None = None,
    ) -> bool:
        """The ClusterQueue can reserve ``needs`` of ``flavor`` now without preempting anything: within its
        nominal quota, or — in a cohort — within what the cohort's ClusterQueues hold in all and have not reserved
        (Kueue's ``Available``: a ClusterQueue borrows its cohort's unused quota up to its ``borrowingLimit``;
        every member's quota counted as lendable, a Cohort object's own quota not counted). ``seen``: what the
        queue is known to reserve besides its status (``reserved_by_workloads``): the larger of the two counts."""
        covered, nominal, limit, used = self._quota(cq_name, flavor)
        if not covered:
            return False
        for r, q in (seen or {}).items():
            used[r] = max(used.get(r, 0), q)
        total: dict[str, Any] = {}
        for count, template in needs:
            for r, q in spec_requests((template or {}).get("spec") or {}).items():
                if r in covered:
                    total[r] = total.get(r, 0) + q * count
        if all(used.get(r, 0) + q <= nominal.get(r, 0) for r, q in total.items()):
            return True
        members = self.cohort_members(cq_name)
        if len(members) < 2:
            return False
        pool: dict[str, Any] = {}
        for m in members:
            _c, mn, _l, mu = self._quota(m, flavor)
            for r in total:
                pool[r] = pool.get(r, 0) + mn.get(r, 0) - mu.get(r, 0)
        for r, q in total.items():
            if q > pool.get(r, 0):
                return False
            if r in limit and used.get(r, 0) + q > nominal.get(r, 0) + limit[r]:
                return False
        return True

    def capacity_of(self, flavor: str) -> dict[str, Any]:
        """What the flavor's usable nodes (up or coming up) hold in all (allocatable)."""
        out: dict[str, Any] = {}
        for n in self.usable_nodes(flavor):
            for r, v in ((n.get("status") or {}).get("allocatable") or {}).items():
                out[r] = out.get(r, 0) + quantity(v)
        return out

    def fits_free_nodes(
        self,
        flavor: str,
        w: WorkloadView,
        sets: list[str],
        promises: Promises,
    ) -> bool:
        """Whether the flavor's nodes up and idle can take the named pod sets of ``w`` now, as kube-scheduler
        would place them (``semantics.nodefit``: taints, node affinity — with the flavor's labels as Kueue
        injects them —, resources with sidecars, init containers and overhead), after the pods bound there,
        the rest of the workloads admitted on the flavor and what this pass promised already. On success the
        room is promised to ``w``."""
        nodes = [node_info(dict(n)) for n in self.usable_nodes(flavor)]
        if not nodes:
            return False
        used = {n.name: dict(self._bound.get(n.name, ({}, 0))[0]) for n in nodes}
        counts = {n.name: self._bound.get(n.name, ({}, 0))[1] for n in nodes}
        for node, req in promises.used.items():
            if node in used:
                for r, v in req.items():
                    used[node][r] = used[node].get(r, 0) + v
                counts[node] += promises.pods.get(node, 0)
        # pods still to come on the flavor: the unbound part of each workload admitted there
        for other in self.workloads:
            if other is w or not other.reserved or not other.active:
                continue
            osets = [ps for ps, fs in other.assigned.items() if flavor in fs]
            for count, template in other.pod_set_needs(osets):
                bound = sum(
                    1
                    for p in other.pods
                    if (p.get("spec") or {}).get("nodeName")
                    and not is_terminal(p)
                    and self.pod_flavor(other, p) == flavor
                )
                other_pod = self._pod_on(template, flavor)
                for _ in range(max(0, count - bound)):  # one at a time: as many as fit take their room
                    place_pods(other_pod, 1, nodes, used, counts)
        placed: list[tuple[str, dict[str, int]]] = []
        for count, template in w.pod_set_needs(sets):
            pod = self._pod_on(template, flavor, lift=True)
            where = place_pods(pod, count, nodes, used, counts)
            if where is None:
                return False
            placed += [(name, pod_requests(pod)) for name in where]
        for node, req in placed:
            p = promises.used.setdefault(node, {})
            for r, v in req.items():
                p[r] = p.get(r, 0) + v
            promises.pods[node] = promises.pods.get(node, 0) + 1
        return bool(placed)

    def _pod_on(self, template: Mapping[str, Any], flavor: str, lift: bool = False) -> dict[str, Any]:
        """The pod Kueue would make from ``template`` on ``flavor``: the flavor's node labels in its nodeSelector
        (``lift``: without the fallback's own restriction off the flavor, which a return removes)."""
        spec = copy.deepcopy(dict((template or {}).get("spec") or {}))
        if lift:
            label = flavor_label(self.flavors, flavor)
            if label is not None:
                unrestrict(spec, *label)
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **(self.flavors.get(flavor) or {})}
        return {"metadata": {"name": "planned"}, "spec": spec}
