"""Billing: what the GKE nodes of a cluster cost, per node pool, provisioning model, Kueue flavor and job.

Owns the ``GkeBilling`` object of each cluster in the project store (named ``<project>.<location>.<cluster>``):
``status.nodes`` (one record per VM: pool, machine type, provisioning model, price per hour, labels, created,
deleted), ``status.pods`` (one record per pod placement: job, node, share of the node, start, end) and
``status.totals`` (USD, as of ``status.asOf``). A node is billed from its creation until its deletion
(research/cloud.md §3: VMs are billed while they exist, queued requests cost nothing) at the catalog's
price for its model (queued provisioning bills as flex-start). A job is charged, for each of its pods, the
time the pod was bound to a node × the node's price × the pod's share of the node's accelerator (TPU
chips, GPUs, else CPU). ``totals`` is a pure function of the ledger and ``now``.

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from flexq.api.quantity import parse_quantity
from flexq.errors import NotFound
from flexq.gke import catalog
from flexq.gke.cache import cache_for
from flexq.gke.fit import is_terminal, pod_requests
from flexq.gke.nodes import ANN_CREATED_AT, cluster_names, nodes_of, pools_of
from flexq.gke.storage import BILLING, cluster_key, envelope
from flexq.runtime import Controller, Result, Watch

__all__ = ["BillingController", "totals", "job_of", "billing_of"]

KEY = "billing"


def _money(x: Fraction) -> float:
    return round(float(x), 6)


def job_of(pod: dict[str, Any], rayclusters: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The job a pod works for: ``RayJob/<ns>/<name>``, ``Job/<ns>/<name>``, else its owner or itself."""
    meta = pod["metadata"]
    ns, labels = meta.get("namespace", "default"), meta.get("labels") or {}
    rc = labels.get("ray.io/cluster")
    if rc:
        owner = ((rayclusters.get((ns, rc)) or {}).get("metadata", {}).get("labels") or {}).get(
            "ray.io/originated-from-cr-name")
        return f"RayJob/{ns}/{owner}" if owner else f"RayCluster/{ns}/{rc}"
    job = labels.get("batch.kubernetes.io/job-name") or labels.get("job-name")
    if job:
        return f"Job/{ns}/{job}"
    owners = meta.get("ownerReferences") or []
    if owners:
        return f"{owners[0]['kind']}/{ns}/{owners[0]['name']}"
    return f"Pod/{ns}/{meta['name']}"


def _share(pod: dict[str, Any], node_record: dict[str, Any]) -> Fraction:
    alloc = {k: parse_quantity(v) for k, v in node_record.get("allocatable", {}).items()}
    req = pod_requests(pod)
    for res in (catalog.RESOURCE_TPU, catalog.RESOURCE_GPU, "cpu"):
        if alloc.get(res):
            return min(Fraction(1), req.get(res, Fraction(0)) / alloc[res])
    return Fraction(0)


def totals(ledger: dict[str, Any], now: float, flavors: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """Costs (USD) per pool, model, flavor and job, plus node-hours, with open records valued up to ``now``."""
    out: dict[str, Any] = {"total": Fraction(0), "nodeHours": Fraction(0), "pools": {}, "provisioningModels": {},
                           "flavors": {}, "jobs": {}}
    prices: dict[str, Fraction] = {}
    flavor_list = [(f["metadata"]["name"], (f.get("spec") or {}).get("nodeLabels") or {}) for f in flavors]
    for name, rec in sorted((ledger.get("nodes") or {}).items()):
        price = Fraction(rec["pricePerHour"])
        prices[name] = price
        end = rec["deleted"] if rec.get("deleted") is not None else now
        hours = Fraction(max(0.0, end - rec["created"])) / 3600
        cost = hours * price
        out["total"] += cost
        out["nodeHours"] += hours
        for group, key in (("pools", rec["pool"]), ("provisioningModels", rec["model"])):
            out[group][key] = out[group].get(key, Fraction(0)) + cost
        for fname, labels in flavor_list:
            if labels and all(rec.get("labels", {}).get(k) == v for k, v in labels.items()):
                out["flavors"][fname] = out["flavors"].get(fname, Fraction(0)) + cost
    for rec in (ledger.get("pods") or {}).values():
        end = rec["end"] if rec.get("end") is not None else now
        hours = Fraction(max(0.0, end - rec["start"])) / 3600
        cost = hours * prices.get(rec["node"], Fraction(0)) * Fraction(rec["share"])
        out["jobs"][rec["job"]] = out["jobs"].get(rec["job"], Fraction(0)) + cost
    return {"total": _money(out["total"]), "nodeHours": _money(out["nodeHours"]),
            **{g: {k: _money(v) for k, v in sorted(out[g].items())}
               for g in ("pools", "provisioningModels", "flavors", "jobs")}}


def billing_of(project_store: Any, project: str, location: str, cluster: str, now: float,
               flavors: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """Current totals of a cluster (valued at ``now``), for the SDK and the CLI."""
    obj = project_store.try_get(BILLING, cluster_key(project, location, cluster))
    return totals((obj or {}).get("status") or {}, now, flavors)


class BillingController(Controller):
    """Keeps the cluster's billing ledger in step with its nodes and pods; the only writer of GkeBilling."""

    name = "gke-billing"

    def watches(self) -> list[Watch]:
        return [Watch("Node", lambda ev: [KEY]), Watch("Pod", lambda ev: [KEY] if (ev.object.get("spec") or {})
                                                       .get("nodeName") else [])]

    def start(self) -> None:
        self.enqueue(KEY)

    def reconcile(self, key: Any) -> Result | None:
        assert self.ctx.project is not None
        project, location, cluster = cluster_names(self.ctx)
        name = cluster_key(project, location, cluster)
        obj = self.ctx.project.try_get(BILLING, name)
        ledger = dict((obj or {}).get("status") or {})
        now = self.ctx.now()
        changed = self._nodes(ledger, now) | self._pods(ledger, now)
        if obj is not None and not changed:
            return None
        try:
            flavors = self.store.list("ResourceFlavor")
        except NotFound:  # a twin without Kueue kinds
            flavors = []
        ledger["totals"] = totals(ledger, now, flavors)
        ledger["asOf"] = now
        if obj is None:
            self.ctx.project.create(envelope(BILLING, name, {"cluster": cluster, "project": project,
                                                             "location": location}, ledger), validate=False)
        else:
            obj["status"] = ledger
            self.ctx.project.update(obj, validate=False)
        return None

    def _nodes(self, ledger: dict[str, Any], now: float) -> bool:
        records = ledger.setdefault("nodes", {})
        pools = {p["spec"]["name"]: p for p in pools_of(self.ctx)}
        present = {n["metadata"]["name"]: n for n in nodes_of(self.ctx)}
        changed = False
        for name, node in present.items():
            if name in records and records[name].get("deleted") is None:
                continue
            labels = node["metadata"].get("labels") or {}
            pool = pools.get(labels.get(catalog.LABEL_NODEPOOL, ""))
            if pool is None:
                continue
            mt = catalog.machine_type(pool["spec"]["config"]["machineType"])
            model = pool["status"]["provisioningModel"]
            records[name] = {"pool": pool["spec"]["name"], "machineType": mt.name, "model": model,
                             "pricePerHour": str(catalog.price_per_hour(mt, model)), "zone": pool["status"]["zone"],
                             "labels": labels, "allocatable": (node.get("status") or {}).get("allocatable", {}),
                             "created": float(node["metadata"].get("annotations", {}).get(ANN_CREATED_AT, now)),
                             "deleted": None}
            changed = True
        for name, rec in records.items():
            if rec.get("deleted") is None and name not in present:
                rec["deleted"] = now
                changed = True
        return changed

    def _pods(self, ledger: dict[str, Any], now: float) -> bool:
        records = ledger.setdefault("pods", {})
        nodes = ledger.get("nodes") or {}
        rayclusters: dict[tuple[str, str], dict[str, Any]] = {}
        with contextlib.suppress(NotFound):  # RayCluster not served (no RayOperator addon)
            for rc in self.store.list("RayCluster"):
                rayclusters[(rc["metadata"]["namespace"], rc["metadata"]["name"])] = rc
        live = {}
        for p in cache_for(self.store).pod_list():
            node = (p.get("spec") or {}).get("nodeName")
            if node in nodes and nodes[node].get("deleted") is None and not is_terminal(p):
                live[f"{p['metadata']['namespace']}/{p['metadata']['name']}/{p['metadata'].get('uid', '')}"] = p
        changed = False
        for key, p in live.items():
            if key not in records:
                node = p["spec"]["nodeName"]
                records[key] = {"job": job_of(p, rayclusters), "node": node,
                                "share": str(_share(p, nodes[node])), "start": now, "end": None}
                changed = True
        for key, rec in records.items():
            if rec.get("end") is None and key not in live:
                rec["end"] = now
                changed = True
        return changed
