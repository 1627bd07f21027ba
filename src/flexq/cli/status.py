"""``flexq status``'s core: one row per Kueue Workload, computed by a pure function over plain objects.

Owns: ``StatusSnapshot`` (the lists of Workloads, ProvisioningRequests, Nodes, ResourceFlavors a row needs, as plain
Kubernetes JSON dicts, Kueue v1beta1 or v1beta2 alike), ``WorkloadRow`` and ``workload_rows(snapshot, now)``:
job, queue, plan (flavor per pod set), state, time waited, why (Kueue's condition message, the admission
checks' states, the ProvisioningRequest's state) and cost so far; ``workload_cost`` (node-hour prices from
``flexq.api.gke_catalog`` times the share of a node each admitted pod takes, from admission to finish or now);
``fmt_cost`` (durations: ``flexq.clock.format_duration``). The same function feeds ``flexq status`` (objects read with the
``kubernetes`` client from the twin or a real cluster) and ``flexq demo``'s live view (objects from ``Twin``).

Must not import flexq.assembly, flexq.twin, flexq.http or any client library: objects in, rows out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.quantity import parse_quantity
from flexq.api.reasons import Explanation, explain
from flexq.api.wellknown import CONSUME_PROVISIONING_REQUEST
from flexq.clock import parse_time_or_none
from flexq.semantics.conditions import by_type, true_in
from flexq.semantics.owners import controller_owner
from flexq.semantics.workloads import FINISHED_STATES, workload_state
from flexq.semantics.workloads import waited as wait_of

__all__ = [
    "StatusSnapshot",
    "WorkloadRow",
    "fallback_note",
    "workload_rows",
    "workload_cost",
    "job_of",
    "provisioning_state",
    "fmt_cost",
    "rows_as_dicts",
]

_PR_ATTEMPT = re.compile(r"-(\d+)$")
_MODEL_OF_LABEL = {"standard": catalog.ON_DEMAND, "spot": catalog.SPOT, "flex-start": catalog.FLEX_START}


@dataclass(frozen=True)
class StatusSnapshot:
    """The objects rows are computed from (plain Kubernetes JSON dicts)."""

    workloads: list[dict] = field(default_factory=list)
    provisioning_requests: list[dict] = field(default_factory=list)
    nodes: list[dict] = field(default_factory=list)
    flavors: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)  # core Events about pods (FailedScaleUp, preemptions)
    stockouts: dict[str, str] = field(
        default_factory=dict
    )  # node pool -> GCE's stock-out message, when known
    jobs: list[dict] = field(default_factory=list)  # the workloads' jobs (RayJob, Job): the fallback's note


FALLBACK_MOVED = (
    "fallback.flexq.dev/moved"  # flexq.fallback.model.ANN_MOVED: what flexq's fallback did, one line
)


def fallback_note(wl: dict, jobs: list[dict]) -> str:
    """The one line flexq's fallback wrote on the workload's job (``on-demand stocked out (…) for 5m12s → moved
    to dws``), or ''."""
    kind, _, name = job_of(wl).partition("/")
    ns = (wl.get("metadata") or {}).get("namespace", "")
    for job in jobs:
        md = job.get("metadata") or {}
        if job.get("kind") == kind and md.get("name") == name and md.get("namespace", "") == ns:
            return (md.get("annotations") or {}).get(FALLBACK_MOVED, "")
    return ""


@dataclass(frozen=True)
class WorkloadRow:
    """What ``flexq status`` shows for one Workload."""

    namespace: str
    workload: str
    job: str  # "<Kind>/<name>" of the owning job ("" when it has none)
    queue: str  # LocalQueue
    cluster_queue: str  # "" until quota is reserved
    plan: tuple[tuple[str, str], ...]  # (pod set, flavor) in pod-set order; empty until quota is reserved
    state: str  # Pending, QuotaReserved, Admitted, Running, Succeeded, Failed, ...
    waited: float  # seconds from creation to admission (or to now / the end)
    why: str
    provisioning: str  # "<ProvisioningRequest>: <state>" or ""
    cost: float  # USD so far
    reason: Explanation | None = None  # the coded reason it waits (flexq.api.reasons), None when it does not
    note: str = ""  # what flexq's fallback did to its job (also leads ``why``)
    eta: str = ""  # when it starts (flexq eta: "in 1h05m (40m-2h10m)", "not within 7d", "never ...")
    eta_bucket: str = ""  # the ETA coarsely (what makes ``flexq status -w`` print the row again)

    @property
    def plan_text(self) -> str:
        return ", ".join(f"{ps}={fl}" for ps, fl in self.plan) or "-"

    def flavor_of(self, pod_set: str) -> str | None:
        return dict(self.plan).get(pod_set)


# -- small readers -------------------------------------------------------------------------------------------
def _when(cond: dict | None) -> float | None:
    return parse_time_or_none((cond or {}).get("lastTransitionTime"))


def _created(obj: dict) -> float | None:
    return parse_time_or_none((obj.get("metadata") or {}).get("creationTimestamp"))


def job_of(wl: dict) -> str:
    """``<Kind>/<name>`` of the workload's controller (the job Kueue made it for), else ''."""
    ref = controller_owner(wl)
    return f"{ref.get('kind', '')}/{ref.get('name', '')}" if ref else ""


def _plan(wl: dict) -> tuple[tuple[str, str], ...]:
    adm = (wl.get("status") or {}).get("admission") or {}
    out = []
    for psa in adm.get("podSetAssignments") or []:
        flavors = psa.get("flavors") or {}
        out.append((psa.get("name", ""), _main_flavor(flavors)))
    return tuple(out)


def _main_flavor(flavors: dict[str, str]) -> str:
    """The flavor that names a pod set's placement: its accelerator's, else cpu's, else any."""
    for res in (catalog.RESOURCE_TPU, catalog.RESOURCE_GPU, "cpu"):
        if res in flavors:
            return flavors[res]
    return next(iter(sorted(set(flavors.values()))), "")


def _attempt(pr: dict) -> int:
    m = _PR_ATTEMPT.search(pr["metadata"]["name"])
    return int(m.group(1)) if m else 0


def _requests_of(wl: dict, prs: Iterable[dict]) -> list[dict]:
    """The workload's ProvisioningRequests (owned by it, or named ``<workload>-<check>-<n>``), oldest first."""
    meta = wl["metadata"]
    uid, name, ns = meta.get("uid"), meta["name"], meta.get("namespace")
    mine = []
    for pr in prs:
        pm = pr.get("metadata") or {}
        if pm.get("namespace") != ns:
            continue
        owners = pm.get("ownerReferences") or []
        owned = any(
            o.get("kind") == "Workload" and (o.get("uid") == uid if uid else o.get("name") == name)
            for o in owners
        )
        if owned or (not owners and pm.get("name", "").startswith(f"{name}-")):
            mine.append(pr)
    return sorted(mine, key=lambda p: (_attempt(p), p["metadata"]["name"]))


def provisioning_state(pr: dict) -> tuple[str, str]:
    """(state, message) of a ProvisioningRequest, by the order Kueue reads its conditions."""
    c = by_type(pr)
    for ctype in ("Failed", "CapacityRevoked", "BookingExpired", "Provisioned"):
        if true_in(c, ctype):
            return ctype, c[ctype].get("message", "")
    if true_in(c, "Accepted"):
        return "Accepted", c.get("Provisioned", {}).get("message", "") or c["Accepted"].get("message", "")
    return "Created", ""


def _checks_text(wl: dict) -> str:
    parts = []
    for chk in (wl.get("status") or {}).get("admissionChecks") or []:
        msg = chk.get("message") or ""
        parts.append(f"{chk.get('name')}: {chk.get('state')}" + (f" ({msg})" if msg else ""))
    return "; ".join(parts)


def _why(wl: dict, state: str, pr: dict | None) -> str:
    c = by_type(wl)
    if state in FINISHED_STATES:
        return c["Finished"].get("message", "")
    if state == "Deactivated":
        for ctype in ("Evicted", "DeactivationTarget"):
            if ctype in c and c[ctype].get("message"):
                return c[ctype]["message"]
        return "spec.active is false"
    if state == "Admitted":
        return c.get("PodsReady", {}).get("message", "") or "waiting for pods"
    if state == "Running":
        return ""
    if state == "QuotaReserved":
        checks = _checks_text(wl) or c.get("Admitted", {}).get("message", "")
        pr_text = ""
        if pr is not None:  # the request's state, without repeating a message the check already carries
            pr_state, pr_msg = provisioning_state(pr)
            pr_text = f"ProvisioningRequest attempt {_attempt(pr)}: {pr_state}"
            pr_text += f" ({pr_msg})" if pr_msg and pr_msg not in checks else ""
        return "; ".join(p for p in (checks, pr_text) if p)
    parts = []
    for ctype in ("Requeued", "Evicted", "QuotaReserved"):
        cond = c.get(ctype)
        if cond and cond.get("message") and cond["message"] not in parts:
            if ctype == "Requeued" and cond.get("status") == "True":
                continue
            parts.append(cond["message"])
    return "; ".join(parts) or "waiting in the queue"


# -- cost ------------------------------------------------------------------------------------------------------
def _pod_requests(template: dict) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for ctr in (template.get("spec") or {}).get("containers") or []:
        res = ctr.get("resources") or {}
        req = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, q in req.items():
            total[name] = total.get(name, Fraction(0)) + parse_quantity(q)
    return total


def _matches(labels: dict[str, str], selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _machine_for(
    template: dict,
    flavor: dict | None,
    nodes: list[dict],
    queued: bool,
) -> tuple[catalog.MachineType, catalog.ProvisioningModel] | None:
    """The machine type and provisioning model a pod of this pod set runs on: from a matching node when one
    exists, else inferred from the pod set's TPU selector and chip request."""
    selector = {
        **((flavor or {}).get("spec", {}).get("nodeLabels") or {}),
        **((template.get("spec") or {}).get("nodeSelector") or {}),
    }
    for node in nodes:
        labels = node.get("metadata", {}).get("labels") or {}
        itype = labels.get("node.kubernetes.io/instance-type", "")
        if _matches(labels, selector) and catalog.is_known_machine_type(itype):
            return (
                catalog.machine_type(itype),
                _MODEL_OF_LABEL.get(labels.get(catalog.LABEL_PROVISIONING, ""), catalog.ON_DEMAND),
            )
    accel = selector.get(catalog.LABEL_TPU_ACCELERATOR)
    chips = _pod_requests(template).get(catalog.RESOURCE_TPU)
    if accel and chips:
        for mt in catalog.MACHINE_TYPES.values():
            if mt.tpu is not None and mt.tpu.accelerator_label == accel and mt.chips == chips:
                return mt, catalog.FLEX_START if queued else catalog.ON_DEMAND
    return None


def _share(mt: catalog.MachineType, req: dict[str, Fraction]) -> Fraction:
    """The fraction of a node one pod is billed for (its largest fraction of chips, GPUs or vCPUs)."""
    parts = [Fraction(0)]
    if mt.chips:
        parts.append(req.get(catalog.RESOURCE_TPU, Fraction(0)) / mt.chips)
    if mt.gpus:
        parts.append(req.get(catalog.RESOURCE_GPU, Fraction(0)) / mt.gpus)
    parts.append(req.get("cpu", Fraction(0)) / mt.vcpus)
    return min(Fraction(1), max(parts))


def _queued_pod_sets(wl: dict) -> set[str]:
    """Pod sets whose nodes came from a ProvisioningRequest: admission checks' podSetUpdates name them with
    ``autoscaling.x-k8s.io/consume-provisioning-request`` (Kueue keeps these after the job finishes)."""
    out = set()
    for chk in (wl.get("status") or {}).get("admissionChecks") or []:
        for upd in chk.get("podSetUpdates") or []:
            if CONSUME_PROVISIONING_REQUEST in (upd.get("annotations") or {}):
                out.add(upd.get("name", ""))
    return out


def workload_cost(wl: dict, snap: StatusSnapshot, now: float) -> float:
    """USD so far: for each admitted pod set, count x node price x share of the node, from the Admitted
    transition to Finished (or eviction, or ``now``). Pod sets on unknown machines add nothing."""
    c = by_type(wl)
    adm = (wl.get("status") or {}).get("admission") or {}
    start = _when(c.get("Admitted")) if true_in(c, "Admitted") or true_in(c, "Finished") else None
    if not adm or start is None:
        return 0.0
    end = now
    if true_in(c, "Finished"):
        end = _when(c["Finished"]) or now
    elif true_in(c, "Evicted"):
        end = _when(c["Evicted"]) or now
    hours = Fraction(max(0.0, end - start)) / 3600
    pod_sets = {ps.get("name", "main"): ps for ps in (wl.get("spec") or {}).get("podSets") or []}
    flavors = {f["metadata"]["name"]: f for f in snap.flavors}
    queued = _queued_pod_sets(wl)
    total = Fraction(0)
    for psa in adm.get("podSetAssignments") or []:
        ps = pod_sets.get(psa.get("name", ""), {})
        template = ps.get("template") or {}
        count = psa.get("count", ps.get("count", 1))
        found = _machine_for(
            template,
            flavors.get(_main_flavor(psa.get("flavors") or {})),
            snap.nodes,
            psa.get("name", "") in queued,
        )
        if found is None:
            continue
        mt, model = found
        try:
            price = catalog.price_per_hour(mt, model)
        except catalog.CatalogError:
            price = catalog.price_per_hour(mt, catalog.ON_DEMAND)
        total += price * _share(mt, _pod_requests(template)) * count * hours
    return float(total)


# -- rows ------------------------------------------------------------------------------------------------------
def _row(wl: dict, snap: StatusSnapshot, now: float) -> WorkloadRow:
    meta, spec, status = wl["metadata"], wl.get("spec") or {}, wl.get("status") or {}
    state = workload_state(wl)
    prs = _requests_of(wl, snap.provisioning_requests)
    pr_text = ""
    if prs:
        pr_state, pr_msg = provisioning_state(prs[-1])
        pr_text = f"{prs[-1]['metadata']['name']}: {pr_state}" + (f" ({pr_msg})" if pr_msg else "")
    waited = wait_of(wl, now)
    plan = _plan(wl)
    pools = {
        ((f.get("spec") or {}).get("nodeLabels") or {}).get(catalog.LABEL_NODEPOOL, "")
        for f in snap.flavors
        if f["metadata"]["name"] in {fl for _, fl in plan}
    }
    job = job_of(wl).partition("/")[2]
    pod_events = [
        e
        for e in snap.events
        if job
        and (e.get("involvedObject") or {}).get("kind") == "Pod"
        and e["metadata"].get("namespace") == meta.get("namespace")
        and (e.get("involvedObject") or {}).get("name", "").startswith(job + "-")
    ]
    note = fallback_note(wl, snap.jobs)
    reason = explain(
        wl,
        snap.provisioning_requests,
        pod_events,
        now,
        {k: v for k, v in snap.stockouts.items() if k in pools},
    )
    return WorkloadRow(
        namespace=meta.get("namespace", ""),
        workload=meta["name"],
        job=job_of(wl),
        queue=spec.get("queueName", ""),
        cluster_queue=(status.get("admission") or {}).get("clusterQueue", ""),
        plan=_plan(wl),
        state=state,
        waited=waited,
        why="; ".join(p for p in (note, _why(wl, state, prs[-1] if prs else None)) if p),
        provisioning=pr_text,
        cost=workload_cost(wl, snap, now),
        reason=reason,
        note=note,
    )


def workload_rows(snap: StatusSnapshot, now: float) -> list[WorkloadRow]:
    """One row per Workload, oldest first (creation time, then namespace and name)."""
    ordered = sorted(
        snap.workloads,
        key=lambda w: (_created(w) or 0.0, w["metadata"].get("namespace", ""), w["metadata"]["name"]),
    )
    return [_row(w, snap, now) for w in ordered]


# -- formatting ------------------------------------------------------------------------------------------------
def fmt_cost(usd: float) -> str:
    return f"${usd:,.2f}"


def rows_as_dicts(rows: Iterable[WorkloadRow]) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (``flexq status -o json``)."""
    return [
        {
            "namespace": r.namespace,
            "workload": r.workload,
            "job": r.job,
            "queue": r.queue,
            "clusterQueue": r.cluster_queue,
            "plan": dict(r.plan),
            "state": r.state,
            "waitedSeconds": round(r.waited, 3),
            "why": r.why,
            "reason": r.reason.as_dict() if r.reason else None,
            "provisioning": r.provisioning,
            "costUSD": round(r.cost, 4),
            **({"eta": r.eta} if r.eta else {}),
        }
        for r in rows
    ]
