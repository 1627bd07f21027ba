"""What the dashboard shows, read from one cluster's store, the project's node pools and the cluster's metrics
registry (the cost the GKE domain computes), as plain dicts for the templates.

Off the twin's loop: the stores' own objects are read by reference (``peek_list``: every stored version is
immutable, a write replaces it), each list taken under the store's lock for as long as it takes to collect the
references, never while rows are built, so the dashboard never holds a write back. Only the cost figures are
collected on the loop (``costs``), where the GKE domain's collector reads its ledger. What the rows join — a
workload's Events by namespace and pod-name prefix, its ProvisioningRequests by owner — comes from the cluster's
``StoreIndex``, kept current from the store's watch; the overview builds the rows of one page of workloads
(``PAGE_SIZE``) and the most recent ``TIMELINE_ROWS`` ProvisioningRequests: its cost follows the page, not the
cluster. Must not import domain packages: objects in,
view models out.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flexq.api.quantity import QuantityError, canonical_quantity, parse_quantity
from flexq.api.reasons import explain
from flexq.clock import format_time, parse_time_or_none
from flexq.errors import NotFound
from flexq.http.dashboard.index import StoreIndex
from flexq.http.seam import Forecasts
from flexq.semantics.conditions import by_type, is_true
from flexq.semantics.owners import controller_owner
from flexq.semantics.workloads import waited, workload_state

__all__ = ["Costs", "costs", "overview", "workload_page"]

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
MAIN_RESOURCES = ("google.com/tpu", "nvidia.com/gpu", "cpu")
PAGE_SIZE = 100  # workloads per page of the overview
TIMELINE_ROWS = 100  # ProvisioningRequests on the timeline: the most recent
CAPACITY_REASONS = ("FailedScaleUp", "Preempted")


_ts = parse_time_or_none


def _q(value: Any) -> Fraction:
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return Fraction(0)


def _fmt_q(value: Any) -> str:
    """A quantity as ``kubectl`` prints it: the API server's canonical form (``1G``, ``1000000000Gi``, ``500m``),
    never a float's ``1e+09``."""
    try:
        return canonical_quantity(value if isinstance(value, str | int) else str(value))
    except (QuantityError, ValueError, TypeError):
        return str(value)


def _job(wl: dict) -> str:
    ref = controller_owner(wl)
    return f"{ref.get('kind', '')}/{ref.get('name', '')}" if ref else ""


def _plan(wl: dict) -> list[dict[str, str]]:
    out = []
    for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        flavors = psa.get("flavors") or {}
        main = next((flavors[r] for r in MAIN_RESOURCES if r in flavors), next(iter(flavors.values()), ""))
        out.append({"podSet": psa.get("name", ""), "flavor": main, "count": psa.get("count", "")})
    return out


def _runtime(core: Any, cluster: str | None) -> Any:
    for _ in range(3):
        try:
            return core.current(cluster)
        except RuntimeError:  # the clusters dict changed while being read
            continue
    return core.current(cluster)


def _samples(registry: Any, name: str) -> list[tuple[dict[str, str], float]]:
    out: list[tuple[dict[str, str], float]] = []
    if registry is None:
        return out
    for fam in registry.collect():
        for s in fam.samples:
            if s.name == name:
                out.append((dict(s.labels), s.value))
    return out


def _peek(store: Any, kind: str, namespace: str | None = None) -> list[dict]:
    """The stored objects of ``kind`` themselves (read-only), none if this cluster does not serve it."""
    try:
        objs: list[dict] = store.peek_list(kind, namespace)
    except NotFound:
        return []
    return objs


def _pools(core: Any, cluster: str) -> list[dict]:
    project = getattr(core, "project", None)
    if project is None or not cluster:
        return []
    try:
        pools = project.peek_list("GkeNodePool")
    except Exception:  # a project without GKE kinds
        return []
    return [
        p for p in pools if (p["metadata"].get("labels") or {}).get("gke.twin.flexq.dev/cluster") == cluster
    ]


def _stockouts(pools: list[dict]) -> dict[str, str]:
    return {
        p["spec"]["name"]: c.get("message", "")
        for p in pools
        for c in p["spec"].get("conditions") or []
        if c.get("code") == "GCE_STOCKOUT"
    }


def _flavor_pools(flavors: list[dict]) -> dict[str, str]:
    return {
        f["metadata"]["name"]: ((f.get("spec") or {}).get("nodeLabels") or {}).get(NODEPOOL_LABEL, "")
        for f in flavors
    }


def _pod_events(index: StoreIndex, wl: dict) -> list[dict]:
    """The Events about the pods of the workload's job (named ``<job>-…``)."""
    job = _job(wl).partition("/")[2]
    if not job:
        return []
    return [
        e
        for e in index.events_about(wl["metadata"].get("namespace") or "", "", job + "-")
        if (e.get("involvedObject") or {}).get("kind") == "Pod"
    ]


def _workload_row(
    wl: dict,
    prs: list[dict],
    events: list[dict],  # the Events about the workload's pods (``_Index.events_of``)
    stockouts: dict[str, str],
    flavor_pools: dict[str, str],
    now: float,
) -> dict[str, Any]:
    plan = _plan(wl)
    mine = {flavor_pools.get(p["flavor"], "") for p in plan}
    stocked = {k: v for k, v in stockouts.items() if k in mine}
    why = explain(wl, prs, events, now, stocked)
    return {
        "namespace": wl["metadata"].get("namespace", ""),
        "name": wl["metadata"]["name"],
        "job": _job(wl),
        "queue": (wl.get("spec") or {}).get("queueName", ""),
        "clusterQueue": ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", ""),
        "plan": plan,
        "state": workload_state(wl),
        "waited": waited(wl, now),
        "why": why.as_dict() if why else None,
    }


def _cluster_queues(cqs: list[dict]) -> list[dict[str, Any]]:
    out = []
    for cq in sorted(cqs, key=lambda c: c["metadata"]["name"]):
        spec, st = cq.get("spec") or {}, cq.get("status") or {}
        used: dict[tuple[str, str], Any] = {}
        for f in st.get("flavorsReservation") or st.get("flavorsUsage") or []:
            for r in f.get("resources") or []:
                used[(f["name"], r["name"])] = r.get("total", 0)
        flavors = []
        for g in spec.get("resourceGroups") or []:
            for f in g.get("flavors") or []:
                bars = []
                for r in f.get("resources") or []:
                    raw_nominal, raw_used = r.get("nominalQuota", 0), used.get((f["name"], r["name"]), 0)
                    nominal, u = _q(raw_nominal), _q(raw_used)
                    pct = 0.0 if nominal <= 0 else min(100.0, float(u * 100 / nominal))
                    if nominal <= 0 and u > 0:
                        pct = 100.0
                    bars.append(
                        {
                            "resource": r["name"],
                            "used": _fmt_q(raw_used),
                            "nominal": _fmt_q(raw_nominal),
                            "pct": round(pct, 1),
                        }
                    )
                flavors.append({"name": f["name"], "bars": bars})
        active = by_type(cq).get("Active", {})
        out.append(
            {
                "name": cq["metadata"]["name"],
                "cohort": spec.get("cohortName") or spec.get("cohort") or "",
                "active": active.get("status", "Unknown"),
                "activeReason": active.get("reason", ""),
                "pending": st.get("pendingWorkloads", 0),
                "reserving": st.get("reservingWorkloads", 0),
                "admitted": st.get("admittedWorkloads", 0),
                "flavors": flavors,
                "checks": [
                    a if isinstance(a, str) else a.get("name", "")
                    for a in spec.get("admissionChecks")
                    or (spec.get("admissionChecksStrategy") or {}).get("admissionChecks")
                    or []
                ],
            }
        )
    return out


def _timeline(prs: list[dict], now: float) -> dict[str, Any]:
    rows = []
    ordered = sorted(prs, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
    hidden = max(0, len(ordered) - TIMELINE_ROWS)
    ordered = ordered[hidden:]  # the most recent
    start = min((_ts(p["metadata"].get("creationTimestamp")) or now for p in ordered), default=now)
    span = max(1.0, now - start)
    for pr in ordered:
        c = by_type(pr)
        created = _ts(pr["metadata"].get("creationTimestamp")) or now
        marks = [("Created", created)]
        for t in ("Accepted", "Provisioned", "BookingExpired", "CapacityRevoked", "Failed"):
            if c.get(t, {}).get("status") == "True":
                marks.append((t, _ts(c[t].get("lastTransitionTime")) or created))
        segments = []
        for i, (name, at) in enumerate(marks):
            until = marks[i + 1][1] if i + 1 < len(marks) else now
            segments.append(
                {
                    "state": name,
                    "left": round((at - start) * 100 / span, 2),
                    "width": round(max(0.5, (until - at) * 100 / span), 2),
                    "seconds": until - at,
                }
            )
        rows.append(
            {
                "name": pr["metadata"]["name"],
                "namespace": pr["metadata"].get("namespace", ""),
                "class": (pr.get("spec") or {}).get("provisioningClassName", ""),
                "state": marks[-1][0],
                "segments": segments,
            }
        )
    return {"rows": rows, "start": format_time(start), "span": span, "hidden": hidden}


@dataclass(frozen=True)
class Costs:
    """What the overview takes from the twin's loop: the clusters and the cost figures."""

    clusters: list[str]
    pools: dict[str, float]
    jobs: dict[tuple[str, str, str], float]  # (kind, namespace, name) -> cost


def costs(core: Any, cluster: str | None) -> Costs:
    """On the loop: the cluster's cost so far per node pool and per job (its metrics registry's ``flexq_`` cost
    families, which the GKE domain's collector computes from its ledger there)."""
    rt = _runtime(core, cluster)
    registry = getattr(rt, "metrics", None)
    pools: dict[str, float] = {}
    jobs: dict[tuple[str, str, str], float] = {}
    if registry is not None:
        for fam in registry.collect():
            if fam.name not in ("flexq_cost_usd", "flexq_job_cost_usd"):
                continue
            for sample in fam.samples:
                if sample.name == "flexq_cost_usd_total":
                    pools[sample.labels.get("pool", "")] = sample.value
                elif sample.name == "flexq_job_cost_usd_total":
                    key = tuple(sample.labels.get(k, "") for k in ("kind", "namespace", "name"))
                    jobs[(key[0], key[1], key[2])] = sample.value
    return Costs(sorted(c for c in core.clusters if c), pools, jobs)


def _eta(core: Any, cluster: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The Workload's ETA from the twin's forecasts (``flexq.http.seam.Forecasts``), when it has them."""
    forecasts: Forecasts | None = getattr(core, "forecasts", None)
    return forecasts.eta_of(cluster, namespace, name) if forecasts is not None else None


def overview(
    core: Any, cluster: str | None, figures: Costs, index: StoreIndex, page: int = 1
) -> dict[str, Any]:
    """The overview's view model, page ``page`` of the workloads (read off the loop, see the module docstring)."""
    rt = _runtime(core, cluster)
    store, now = rt.store, core.loop.now()
    pools = _pools(core, rt.name)
    stockouts = _stockouts(pools)
    fpools = _flavor_pools(_peek(store, "ResourceFlavor"))
    ordered = index.ordered_workloads()
    pages = max(1, -(-len(ordered) // PAGE_SIZE))
    page = min(max(1, page), pages)
    shown = ordered[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    rows = []
    for w in shown:
        capacity = [e for e in _pod_events(index, w) if e.get("reason") in CAPACITY_REASONS]
        rows.append(_workload_row(w, index.prs_of(w), capacity, stockouts, fpools, now))
    cost, job_cost = figures.pools, figures.jobs
    nodes_per_pool: dict[str, list[dict]] = {}
    for n in _peek(store, "Node"):
        nodes_per_pool.setdefault((n["metadata"].get("labels") or {}).get(NODEPOOL_LABEL, ""), []).append(n)
    pool_rows = []
    for p in sorted(pools, key=lambda p: p["spec"]["name"]):
        name = p["spec"]["name"]
        mine = nodes_per_pool.get(name, [])
        pool_rows.append(
            {
                "name": name,
                "model": (p.get("status") or {}).get("provisioningModel", ""),
                "queued": bool((p.get("status") or {}).get("queued")),
                "machineType": ((p["spec"].get("config") or {}).get("machineType", "")),
                "nodes": len(mine),
                "ready": sum(1 for n in mine if is_true(n, "Ready")),
                "stockout": stockouts.get(name, ""),
                "cost": cost.get(name, 0.0),
            }
        )
    for r in rows:  # one series per job (kind, namespace, name): a RayJob's submitter is part of the RayJob
        kind, _, name = r["job"].partition("/")
        r["cost"] = job_cost.get((kind, r["namespace"], name), 0.0)
        r["eta"] = _eta(core, rt.name, r["namespace"], r["name"])
    lqs = []
    for lq in sorted(
        _peek(store, "LocalQueue"), key=lambda q: (q["metadata"].get("namespace", ""), q["metadata"]["name"])
    ):
        st = lq.get("status") or {}
        lqs.append(
            {
                "namespace": lq["metadata"].get("namespace", ""),
                "name": lq["metadata"]["name"],
                "clusterQueue": (lq.get("spec") or {}).get("clusterQueue", ""),
                "pending": st.get("pendingWorkloads", 0),
                "admitted": st.get("admittedWorkloads", 0),
                "active": by_type(lq).get("Active", {}).get("status", "Unknown"),
            }
        )
    cqs = _cluster_queues(_peek(store, "ClusterQueue"))
    cohorts = sorted(
        {c["cohort"] for c in cqs if c["cohort"]} | {c["metadata"]["name"] for c in _peek(store, "Cohort")}
    )
    return {
        "cluster": rt.name,
        "clusters": figures.clusters,
        "now": format_time(now),
        "clusterQueues": cqs,
        "cohorts": cohorts,
        "localQueues": lqs,
        "workloads": rows,
        "paging": {
            "page": page,
            "pages": pages,
            "total": len(ordered),
            "first": (page - 1) * PAGE_SIZE + 1 if rows else 0,
            "last": (page - 1) * PAGE_SIZE + len(rows),
        },
        "timeline": _timeline(index.all_prs(), now),
        "pools": pool_rows,
        "cost": {"total": sum(cost.values()), "pools": cost},
    }


def workload_page(
    core: Any, cluster: str | None, index: StoreIndex, namespace: str, name: str
) -> dict[str, Any]:
    """One workload's page (off the loop too: its Events and requests from the index)."""
    rt = _runtime(core, cluster)
    store, now = rt.store, core.loop.now()
    wl = store.peek("Workload", name, namespace)
    if wl is None:
        raise NotFound(f'workloads.kueue.x-k8s.io "{name}" not found')
    pools = _pools(core, rt.name)
    row = _workload_row(
        wl,
        index.prs_of(wl),
        _pod_events(index, wl),
        _stockouts(pools),
        _flavor_pools(_peek(store, "ResourceFlavor")),
        now,
    )
    row["eta"] = _eta(core, rt.name, namespace, name)
    job = row["job"].partition("/")[2]
    related = index.events_about(namespace, name, job or None)
    related.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    return {
        "cluster": rt.name,
        "now": format_time(now),
        "w": row,
        "conditions": (wl.get("status") or {}).get("conditions") or [],
        "checks": (wl.get("status") or {}).get("admissionChecks") or [],
        "events": [
            {
                "time": e.get("lastTimestamp") or e.get("eventTime") or "",
                "type": e.get("type", ""),
                "reason": e.get("reason", ""),
                "object": f"{(e.get('involvedObject') or {}).get('kind', '')}/"
                f"{(e.get('involvedObject') or {}).get('name', '')}",
                "message": e.get("message", ""),
                "count": e.get("count", 1),
            }
            for e in related
        ],
    }
