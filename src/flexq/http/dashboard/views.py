"""What the dashboard shows, read from one cluster's store, the project's node pools and the cluster's metrics
registry (the cost the GKE domain computes), as plain dicts for the templates. Runs on the loop thread.
Must not import domain packages: objects in, view models out.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from flexq.api.quantity import QuantityError, parse_quantity
from flexq.api.reasons import explain, fmt_wait
from flexq.clock import format_time, parse_time
from flexq.errors import NotFound

__all__ = ["overview", "workload_page", "fmt_wait"]

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
MAIN_RESOURCES = ("google.com/tpu", "nvidia.com/gpu", "cpu")


def _conds(obj: dict) -> dict[str, dict]:
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or []}


def _true(obj: dict, t: str) -> bool:
    return _conds(obj).get(t, {}).get("status") == "True"


def _ts(value: str | None) -> float | None:
    try:
        return parse_time(value) if value else None
    except ValueError:
        return None


def _q(value: Any) -> Fraction:
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return Fraction(0)


def _fmt_q(resource: str, value: Fraction) -> str:
    if resource == "memory" and value >= 2**30:
        return f"{float(value) / 2**30:.0f}Gi"
    v = float(value)
    if v >= 1e6:
        return f"{v:.3g}"
    return f"{v:g}"


def state_of(wl: dict) -> str:
    c = _conds(wl)
    if c.get("Finished", {}).get("status") == "True":
        return {"Succeeded": "Succeeded", "Failed": "Failed"}.get(c["Finished"].get("reason", ""), "Finished")
    if (wl.get("spec") or {}).get("active") is False:
        return "Deactivated"
    if _true(wl, "Admitted"):
        return "Running" if _true(wl, "PodsReady") else "Admitted"
    if _true(wl, "QuotaReserved"):
        return "QuotaReserved"
    if _true(wl, "Evicted"):
        return "Evicted"
    return "Pending"


def _job(wl: dict) -> str:
    refs = wl["metadata"].get("ownerReferences") or []
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
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


def _pools(core: Any, cluster: str) -> list[dict]:
    project = getattr(core, "project", None)
    if project is None or not cluster:
        return []
    try:
        pools = project.list("GkeNodePool")
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


def _pod_events(events: list[dict], wl: dict) -> list[dict]:
    job = _job(wl).partition("/")[2]
    ns = wl["metadata"].get("namespace")
    if not job:
        return []
    return [
        e
        for e in events
        if (e.get("involvedObject") or {}).get("kind") == "Pod"
        and e["metadata"].get("namespace") == ns
        and (e.get("involvedObject") or {}).get("name", "").startswith(job + "-")
    ]


def _workload_row(
    wl: dict,
    prs: list[dict],
    events: list[dict],
    stockouts: dict[str, str],
    flavor_pools: dict[str, str],
    now: float,
) -> dict[str, Any]:
    plan = _plan(wl)
    mine = {flavor_pools.get(p["flavor"], "") for p in plan}
    stocked = {k: v for k, v in stockouts.items() if k in mine}
    why = explain(wl, prs, _pod_events(events, wl), now, stocked)
    created = _ts(wl["metadata"].get("creationTimestamp")) or now
    adm = _conds(wl).get("Admitted") if _true(wl, "Admitted") else None
    end = (_ts((adm or {}).get("lastTransitionTime")) if adm else None) or now
    return {
        "namespace": wl["metadata"].get("namespace", ""),
        "name": wl["metadata"]["name"],
        "job": _job(wl),
        "queue": (wl.get("spec") or {}).get("queueName", ""),
        "clusterQueue": ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", ""),
        "plan": plan,
        "state": state_of(wl),
        "waited": max(0.0, end - created),
        "why": why.as_dict() if why else None,
    }


def _cluster_queues(cqs: list[dict]) -> list[dict[str, Any]]:
    out = []
    for cq in sorted(cqs, key=lambda c: c["metadata"]["name"]):
        spec, st = cq.get("spec") or {}, cq.get("status") or {}
        used: dict[tuple[str, str], Fraction] = {}
        for f in st.get("flavorsReservation") or st.get("flavorsUsage") or []:
            for r in f.get("resources") or []:
                used[(f["name"], r["name"])] = _q(r.get("total", 0))
        flavors = []
        for g in spec.get("resourceGroups") or []:
            for f in g.get("flavors") or []:
                bars = []
                for r in f.get("resources") or []:
                    nominal = _q(r.get("nominalQuota", 0))
                    u = used.get((f["name"], r["name"]), Fraction(0))
                    pct = 0.0 if nominal <= 0 else min(100.0, float(u * 100 / nominal))
                    if nominal <= 0 and u > 0:
                        pct = 100.0
                    bars.append(
                        {
                            "resource": r["name"],
                            "used": _fmt_q(r["name"], u),
                            "nominal": _fmt_q(r["name"], nominal),
                            "pct": round(pct, 1),
                        }
                    )
                flavors.append({"name": f["name"], "bars": bars})
        active = _conds(cq).get("Active", {})
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
    start = min((_ts(p["metadata"].get("creationTimestamp")) or now for p in prs), default=now)
    span = max(1.0, now - start)
    for pr in sorted(
        prs, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"])
    ):
        c = _conds(pr)
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
    return {"rows": rows, "start": format_time(start), "span": span}


def overview(core: Any, cluster: str | None) -> dict[str, Any]:
    rt = _runtime(core, cluster)
    store, now = rt.store, core.loop.now()
    wls, prs = store.list("Workload"), store.list("ProvisioningRequest")
    events = [e for e in store.list("Event") if e.get("reason") in ("FailedScaleUp", "Preempted")]
    pools = _pools(core, rt.name)
    stockouts = _stockouts(pools)
    flavors = store.list("ResourceFlavor")
    fpools = _flavor_pools(flavors)
    rows = [
        _workload_row(w, prs, events, stockouts, fpools, now)
        for w in sorted(
            wls, key=lambda w: (w["metadata"].get("creationTimestamp") or "", w["metadata"]["name"])
        )
    ]
    registry = getattr(rt, "metrics", None)
    cost = {lab.get("pool", ""): v for lab, v in _samples(registry, "flexq_cost_usd_total")}
    job_cost = {
        (lab.get("kind"), lab.get("namespace"), lab.get("name")): v
        for lab, v in _samples(registry, "flexq_job_cost_usd_total")
    }
    nodes = store.list("Node")
    pool_rows = []
    for p in sorted(pools, key=lambda p: p["spec"]["name"]):
        name = p["spec"]["name"]
        mine = [n for n in nodes if (n["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == name]
        pool_rows.append(
            {
                "name": name,
                "model": (p.get("status") or {}).get("provisioningModel", ""),
                "queued": bool((p.get("status") or {}).get("queued")),
                "machineType": ((p["spec"].get("config") or {}).get("machineType", "")),
                "nodes": len(mine),
                "ready": sum(1 for n in mine if _true(n, "Ready")),
                "stockout": stockouts.get(name, ""),
                "cost": cost.get(name, 0.0),
            }
        )
    for r in rows:  # one series per job (kind, namespace, name): a RayJob's submitter is part of the RayJob
        kind, _, name = r["job"].partition("/")
        r["cost"] = job_cost.get((kind, r["namespace"], name), 0.0)
    lqs = []
    for lq in sorted(
        store.list("LocalQueue"), key=lambda q: (q["metadata"].get("namespace", ""), q["metadata"]["name"])
    ):
        st = lq.get("status") or {}
        lqs.append(
            {
                "namespace": lq["metadata"].get("namespace", ""),
                "name": lq["metadata"]["name"],
                "clusterQueue": (lq.get("spec") or {}).get("clusterQueue", ""),
                "pending": st.get("pendingWorkloads", 0),
                "admitted": st.get("admittedWorkloads", 0),
                "active": _conds(lq).get("Active", {}).get("status", "Unknown"),
            }
        )
    cohorts = sorted(
        {c["cohort"] for c in _cluster_queues(store.list("ClusterQueue")) if c["cohort"]}
        | {c["metadata"]["name"] for c in store.list("Cohort")}
    )
    return {
        "cluster": rt.name,
        "clusters": sorted(c for c in core.clusters if c),
        "now": format_time(now),
        "clusterQueues": _cluster_queues(store.list("ClusterQueue")),
        "cohorts": cohorts,
        "localQueues": lqs,
        "workloads": rows,
        "timeline": _timeline(prs, now),
        "pools": pool_rows,
        "cost": {"total": sum(cost.values()), "pools": cost},
    }


def workload_page(core: Any, cluster: str | None, namespace: str, name: str) -> dict[str, Any]:
    rt = _runtime(core, cluster)
    store, now = rt.store, core.loop.now()
    wl = store.try_get("Workload", name, namespace)
    if wl is None:
        raise NotFound(f'workloads.kueue.x-k8s.io "{name}" not found')
    prs = store.list("ProvisioningRequest", namespace)
    events = store.list("Event", namespace)
    pools = _pools(core, rt.name)
    row = _workload_row(wl, prs, events, _stockouts(pools), _flavor_pools(store.list("ResourceFlavor")), now)
    job = row["job"].partition("/")[2]
    related = [
        e
        for e in events
        if (e.get("involvedObject") or {}).get("name") == name
        or (job and (e.get("involvedObject") or {}).get("name", "").startswith(job))
    ]
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
