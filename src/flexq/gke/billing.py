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

from flexq.api import gke_catalog as catalog
from flexq.api.quantity import parse_quantity
from flexq.errors import NotFound
from flexq.gke.cache import GkeCache
from flexq.gke.nodes import ANN_CREATED_AT, cluster_names, pools_of
from flexq.gke.storage import BILLING, cluster_key, envelope
from flexq.runtime import Controller, Result, Watch
from flexq.semantics.pods import is_terminal
from flexq.semantics.resources import pod_requests

__all__ = ["BillingController", "totals", "job_of", "billing_of", "flush_billing"]

KEY = "billing"


def _money(x: Fraction) -> float:
    return round(float(x), 6)


def job_of(pod: dict[str, Any], rayclusters: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The job a pod works for: ``RayJob/<ns>/<name>``, ``Job/<ns>/<name>``, else its owner or itself. A RayJob's
    submitter pod (KubeRay labels it ``ray.io/originated-from-crd: RayJob``) works for the RayJob, as its Ray
    cluster's pods do: one job, one entry."""
    meta = pod["metadata"]
    ns, labels = meta.get("namespace", "default"), meta.get("labels") or {}
    if labels.get("ray.io/originated-from-crd") == "RayJob" and labels.get("ray.io/originated-from-cr-name"):
        return f"RayJob/{ns}/{labels['ray.io/originated-from-cr-name']}"
    rc = labels.get("ray.io/cluster")
    if rc:
        owner = ((rayclusters.get((ns, rc)) or {}).get("metadata", {}).get("labels") or {}).get(
            "ray.io/originated-from-cr-name"
        )
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
    req = pod_requests(pod.get("spec") or {})  # exact: a share of the node, as the bill is
    for res in (catalog.RESOURCE_TPU, catalog.RESOURCE_GPU, "cpu"):
        if alloc.get(res):
            return min(Fraction(1), req.get(res, Fraction(0)) / alloc[res])
    return Fraction(0)


def totals(ledger: dict[str, Any], now: float, flavors: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """Costs (USD) per pool, model, flavor and job, plus node-hours, with open records valued up to ``now``."""
    out: dict[str, Any] = {
        "total": Fraction(0),
        "nodeHours": Fraction(0),
        "pools": {},
        "provisioningModels": {},
        "flavors": {},
        "jobs": {},
    }
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
    return {
        "total": _money(out["total"]),
        "nodeHours": _money(out["nodeHours"]),
        **{
            g: {k: _money(v) for k, v in sorted(out[g].items())}
            for g in ("pools", "provisioningModels", "flavors", "jobs")
        },
    }


def billing_of(
    project_store: Any,
    project: str,
    location: str,
    cluster: str,
    now: float,
    flavors: Iterable[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Current totals of a cluster (valued at ``now``), for the SDK and the CLI."""
    obj = project_store.try_get(BILLING, cluster_key(project, location, cluster))
    return totals((obj or {}).get("status") or {}, now, flavors)


FLUSH = 60.0  # seconds: pod records reach the stored ledger at most this late (node records at once)


class _Sums:
    """Costs of closed records, per group (exact), so a write values only the open records."""

    def __init__(self) -> None:
        self.total, self.hours = Fraction(0), Fraction(0)
        self.groups: dict[str, dict[str, Fraction]] = {"pools": {}, "provisioningModels": {}, "jobs": {}}
        self.closed_nodes: list[dict[str, Any]] = []
        self.flavor_sig: tuple | None = None
        self.flavor_list: list[tuple[str, dict[str, str]]] = []
        self.flavors: dict[str, Fraction] = {}
        self.jobs_money: dict[str, float] = {}

    def add(self, group: str, key: str, cost: Fraction) -> None:
        g = self.groups[group]
        g[key] = g.get(key, Fraction(0)) + cost
        if group == "jobs":
            self.jobs_money[key] = _money(g[key])


_PRICES: dict[str, Fraction] = {}


def _price_of(text: str) -> Fraction:
    """``Fraction(text)`` of a ledger price or pod share, parsed once per distinct text (there are few)."""
    price = _PRICES.get(text)
    if price is None:
        if len(_PRICES) > 4096:
            _PRICES.clear()
        price = _PRICES[text] = Fraction(text)
    return price


def _exact_sum(values: list[float]) -> Fraction:
    """``sum(Fraction(v) for v in values)``, exactly, in integers (floats are dyadic fractions)."""
    num, den = 0, 1
    for v in values:
        n, d = v.as_integer_ratio()
        if d == den:
            num += n
        elif d < den:
            num += n * (den // d)
        else:
            num = num * (d // den) + n
            den = d
    return Fraction(num, den)


def _node_cost(rec: dict[str, Any], now: float) -> tuple[Fraction, Fraction]:
    end = rec["deleted"] if rec.get("deleted") is not None else now
    hours = Fraction(max(0.0, end - rec["created"])) / 3600
    return hours, hours * _price_of(rec["pricePerHour"])


def _pod_cost(rec: dict[str, Any], price: Fraction, now: float) -> Fraction:
    end = rec["end"] if rec.get("end") is not None else now
    return Fraction(max(0.0, end - rec["start"])) / 3600 * price * _price_of(rec["share"])


def _flavor_list(flavors: Iterable[dict[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    return [(f["metadata"]["name"], (f.get("spec") or {}).get("nodeLabels") or {}) for f in flavors]


def _flavors_of(rec: dict[str, Any], flavor_list: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [
        name
        for name, labels in flavor_list
        if labels and all(rec.get("labels", {}).get(k) == v for k, v in labels.items())
    ]


def _record_inputs(pod: dict[str, Any]) -> tuple:
    """What of a pod ``_sync_pod`` reads to open or close its record: its node, whether it ended, its uid."""
    return ((pod.get("spec") or {}).get("nodeName"), is_terminal(pod), pod["metadata"].get("uid"))


class BillingController(Controller):
    """Keeps the cluster's billing ledger in step with its nodes and pods; the only writer of GkeBilling.

    The ledger is kept in memory and changed record by record, from the event that changed it (a pod's
    record opens when it is bound to a billed node and closes when it ends or goes, at that instant),
    so each event costs O(1); closed records' costs are summed once. The stored ``GkeBilling`` is written
    at once when node records change and otherwise at most ``FLUSH`` seconds after a pod record changed
    (and when the controller stops, and before ``Twin.billing`` reads it): its ``status.asOf`` says as of
    when. Stored versions share unchanged records with the previous one (records are never changed in
    place), so a write does not copy the ledger record by record."""

    name = "gke-billing"

    def __init__(self, ctx: Any, cache: GkeCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self._loaded = False
        self._nodes: dict[str, dict[str, Any]] = {}
        self._pods: dict[str, dict[str, Any]] = {}
        self._shared = True  # the two record maps belong to a stored version: copy before changing
        self._open_nodes: set[str] = set()
        self._open_pods: dict[str, dict[str, Any]] = {}  # record key -> record
        self._pod_record: dict[tuple[str, str], str] = {}  # (namespace, pod) -> its open record's key
        self._on_node: dict[str, set[str]] = {}  # node -> open pod record keys
        self._sums = _Sums()
        self._flavor_memo: dict[str, tuple[dict[str, Any], tuple, tuple[str, ...]]] = {}
        self._dirty = False
        self._due: float | None = None  # when pending pod-record changes must be written at the latest
        self._written = False
        self._resync = True

    def watches(self) -> list[Watch]:
        return [Watch("Node", self._node_keys), Watch("Pod", self._pod_keys)]

    def _node_keys(self, ev: Any) -> list[Any]:
        """A Node's create and delete; an update only of a node whose record is not open yet (an open record
        keeps what it read when it opened: the ledger's node pass skips it, and a Ready condition or an
        annotation changes nothing there)."""
        if ev.type == "MODIFIED" and ev.object["metadata"]["name"] in self._open_nodes:
            return []
        return [KEY]

    def _pod_keys(self, ev: Any) -> list[Any]:
        """A pod on a node, or one with an open record; an update of a pod with an open record only when what
        its record is keyed by (``_record_inputs``) changed: a running pod's status writes change nothing."""
        md = ev.object["metadata"]
        key = (md.get("namespace") or "default", md["name"])
        if (
            ev.type == "MODIFIED"
            and ev.old is not None
            and key in self._pod_record
            and _record_inputs(ev.old) == _record_inputs(ev.object)
        ):
            return []
        if (ev.object.get("spec") or {}).get("nodeName") or key in self._pod_record:
            return [("pod", *key)]
        return []

    def start(self) -> None:
        self.enqueue(KEY)

    def stop(self) -> None:
        if self._dirty and self.ctx.project is not None:
            with contextlib.suppress(NotFound):
                self._write(self.ctx.now())

    def flush_loaded(self) -> None:
        """``flush`` once the ledger is loaded (a scrape or ``Twin.billing`` may come before the first reconcile)."""
        if self._loaded:
            self.flush()

    def flush(self) -> None:
        """Write what changed now (for readers that need the ledger as of now)."""
        if self._dirty:
            self._write(self.ctx.now())

    # -- the ledger in memory -------------------------------------------------------------------------
    def _name(self) -> tuple[str, str, str, str]:
        project, location, cluster = cluster_names(self.ctx)
        return cluster_key(project, location, cluster), project, location, cluster

    def _load(self) -> None:
        assert self.ctx.project is not None
        self._loaded = True
        obj = self.ctx.project.peek(BILLING, self._name()[0])
        ledger = (obj or {}).get("status") or {}
        self._nodes = ledger.get("nodes") or {}
        self._pods = ledger.get("pods") or {}
        self._shared = True
        for name, rec in self._nodes.items():
            if rec.get("deleted") is None:
                self._open_nodes.add(name)
            else:
                self._close_node_sums(rec)
        for key, rec in self._pods.items():
            if rec.get("end") is None:
                self._track_open(key, rec)
            else:
                self._close_pod_sums(rec)

    def _own(self) -> None:
        if self._shared:
            self._nodes, self._pods, self._shared = dict(self._nodes), dict(self._pods), False
        self._dirty = True

    def _track_open(self, key: str, rec: dict[str, Any]) -> None:
        ns, name, _uid = key.split("/", 2)
        self._open_pods[key] = rec
        self._pod_record[(ns, name)] = key
        self._on_node.setdefault(rec["node"], set()).add(key)

    def _close_node_sums(self, rec: dict[str, Any]) -> None:
        hours, cost = _node_cost(rec, 0.0)
        s = self._sums
        s.total += cost
        s.hours += hours
        s.add("pools", rec["pool"], cost)
        s.add("provisioningModels", rec["model"], cost)
        s.closed_nodes.append(rec)
        if s.flavor_sig is not None:  # flavor sums kept for the current flavors: add this one (exact)
            for fname in _flavors_of(rec, s.flavor_list):
                s.flavors[fname] = s.flavors.get(fname, Fraction(0)) + cost

    def _price(self, node: str) -> Fraction:
        rec = self._nodes.get(node)
        return _price_of(rec["pricePerHour"]) if rec is not None else Fraction(0)

    def _close_pod_sums(self, rec: dict[str, Any]) -> None:
        self._sums.add("jobs", rec["job"], _pod_cost(rec, self._price(rec["node"]), 0.0))

    def _open_pod(self, key: str, pod: dict[str, Any], now: float) -> None:
        node = pod["spec"]["nodeName"]
        rcs: dict[tuple[str, str], dict[str, Any]] = {}
        rc_name = (pod["metadata"].get("labels") or {}).get("ray.io/cluster")
        if rc_name:
            with contextlib.suppress(NotFound):  # RayCluster not served (no RayOperator addon)
                rc = self.store.peek("RayCluster", rc_name, pod["metadata"].get("namespace"))
                if rc is not None:
                    rcs[(pod["metadata"].get("namespace", "default"), rc_name)] = rc
        self._own()
        rec = {
            "job": job_of(pod, rcs),
            "node": node,
            "share": str(_share(pod, self._nodes[node])),
            "start": now,
            "end": None,
        }
        self._pods[key] = rec
        self._track_open(key, rec)

    def _close_pod(self, key: str, now: float) -> None:
        rec = self._open_pods.pop(key)
        ns, name, _uid = key.split("/", 2)
        if self._pod_record.get((ns, name)) == key:
            del self._pod_record[(ns, name)]
        on = self._on_node.get(rec["node"])
        if on is not None:
            on.discard(key)
            if not on:
                del self._on_node[rec["node"]]
        self._own()
        closed = {**rec, "end": now}
        self._pods[key] = closed
        self._close_pod_sums(closed)

    def _sync_pod(self, ns: str, name: str, now: float) -> bool:
        """Open or close the record of one pod; True if it changed."""
        pod = self.cache.pods.get((ns, name))
        key = None
        if pod is not None:
            node = (pod.get("spec") or {}).get("nodeName")
            if node in self._open_nodes and not is_terminal(pod):
                key = f"{ns}/{name}/{pod['metadata'].get('uid', '')}"
        cur = self._pod_record.get((ns, name))
        changed = False
        if cur is not None and cur != key:
            self._close_pod(cur, now)
            changed = True
        if key is not None and key not in self._pods:
            assert pod is not None
            self._open_pod(key, pod, now)
            changed = True
        return changed

    def _sync_nodes(self, now: float) -> bool:
        present = {n["metadata"]["name"]: n for n in self.cache.node_list()}
        pools: dict[str, dict[str, Any]] | None = None
        changed, opened = False, []
        for name, node in present.items():
            if name in self._open_nodes:
                continue
            if name in self._nodes and self._nodes[name].get("deleted") is None:
                continue
            if pools is None:
                pools = {p["spec"]["name"]: p for p in pools_of(self.ctx)}
            labels = node["metadata"].get("labels") or {}
            pool = pools.get(labels.get(catalog.LABEL_NODEPOOL, ""))
            if pool is None:
                continue
            mt = catalog.machine_type(pool["spec"]["config"]["machineType"])
            model = pool["status"]["provisioningModel"]
            self._own()
            self._nodes[name] = {
                "pool": pool["spec"]["name"],
                "machineType": mt.name,
                "model": model,
                "pricePerHour": str(catalog.price_per_hour(mt, model)),
                "zone": pool["status"]["zone"],
                "labels": labels,
                "allocatable": (node.get("status") or {}).get("allocatable", {}),
                "created": float(node["metadata"].get("annotations", {}).get(ANN_CREATED_AT, now)),
                "deleted": None,
            }
            self._open_nodes.add(name)
            opened.append(name)
            changed = True
        for name in sorted(self._open_nodes - set(present)):
            for key in sorted(self._on_node.get(name, ())):
                self._close_pod(key, now)
            self._own()
            rec = {**self._nodes[name], "deleted": now}
            self._nodes[name] = rec
            self._open_nodes.discard(name)
            self._flavor_memo.pop(name, None)
            self._close_node_sums(rec)
            changed = True
        for name in opened:  # pods already bound to a node billed from now on
            for pod in self.store.peek_list("Pod", index=("spec.nodeName", name)):
                md = pod["metadata"]
                self._sync_pod(md.get("namespace") or "default", md["name"], now)
        return changed

    def _open_flavors(
        self, name: str, rec: dict[str, Any], flavor_list: list[tuple[str, dict[str, str]]], sig: tuple
    ) -> tuple[str, ...]:
        """``_flavors_of`` an open node's record, remembered while the flavors (``sig``) and the record stay."""
        hit = self._flavor_memo.get(name)
        if hit is not None and hit[0] is rec and hit[1] == sig:
            return hit[2]
        out = tuple(_flavors_of(rec, flavor_list))
        self._flavor_memo[name] = (rec, sig, out)
        return out

    def _totals(self, now: float, flavor_list: list[tuple[str, dict[str, str]]]) -> dict[str, Any]:
        s = self._sums
        total, hours = s.total, s.hours
        groups: dict[str, dict[str, Fraction]] = {g: dict(v) for g, v in s.groups.items() if g != "jobs"}
        sig = tuple((n, tuple(sorted(lb.items()))) for n, lb in flavor_list)
        if s.flavor_sig != sig:
            s.flavors = {}
            for rec in s.closed_nodes:
                cost = _node_cost(rec, now)[1]
                for fname in _flavors_of(rec, flavor_list):
                    s.flavors[fname] = s.flavors.get(fname, Fraction(0)) + cost
            s.flavor_sig, s.flavor_list = sig, flavor_list
        flavors = dict(s.flavors)
        # Open nodes alike (pool, model, price, flavors) are valued together: the sum of their exact
        # durations times the price is the sum of their costs (exact arithmetic: the same totals).
        buckets: dict[tuple[str, str, str, tuple[str, ...]], list[float]] = {}
        for name in self._open_nodes:
            rec = self._nodes[name]
            end = rec["deleted"] if rec.get("deleted") is not None else now
            bkey = (
                rec["pool"],
                rec["model"],
                rec["pricePerHour"],
                self._open_flavors(name, rec, flavor_list, sig),
            )
            buckets.setdefault(bkey, []).append(max(0.0, end - rec["created"]))
        for (pool, model, price, fnames), durations in buckets.items():
            h = _exact_sum(durations) / 3600
            cost = h * _price_of(price)
            total += cost
            hours += h
            for group, key in (("pools", pool), ("provisioningModels", model)):
                groups[group][key] = groups[group].get(key, Fraction(0)) + cost
            for fname in fnames:
                flavors[fname] = flavors.get(fname, Fraction(0)) + cost
        pod_buckets: dict[tuple[str, Fraction, str], list[float]] = {}
        for rec in self._open_pods.values():
            end = rec["end"] if rec.get("end") is not None else now
            pkey = (rec["job"], self._price(rec["node"]), rec["share"])
            pod_buckets.setdefault(pkey, []).append(max(0.0, end - rec["start"]))
        open_jobs: dict[str, Fraction] = {}
        for (job, price_f, share), durations in pod_buckets.items():
            cost = _exact_sum(durations) / 3600 * price_f * _price_of(share)
            open_jobs[job] = open_jobs.get(job, Fraction(0)) + cost
        # every job's money, in the order the jobs first cost something (deterministic for a seed; readers
        # that print it sort it): re-sorting every job's name on each write made the writes grow with the jobs
        jobs = dict(s.jobs_money)  # a new dict: the ledger keeps it while the sums go on
        for job, cost in open_jobs.items():
            jobs[job] = _money(s.groups["jobs"].get(job, Fraction(0)) + cost)
        out = {
            "total": _money(total),
            "nodeHours": _money(hours),
            **{
                g: {k: _money(v) for k, v in sorted(groups[g].items())}
                for g in ("pools", "provisioningModels")
            },
            "flavors": {k: _money(v) for k, v in sorted(flavors.items())},
            "jobs": jobs,
        }
        return out

    def _write(self, now: float) -> None:
        assert self.ctx.project is not None
        name, project, location, cluster = self._name()
        try:
            flavors = self.store.peek_list("ResourceFlavor")
        except NotFound:  # a twin without Kueue kinds
            flavors = []
        ledger = {
            "nodes": self._nodes,
            "pods": self._pods,
            "totals": self._totals(now, _flavor_list(flavors)),
            "asOf": now,
        }
        self._shared, self._dirty, self._due = True, False, None
        cur = self.ctx.project.peek(BILLING, name)
        if cur is None:
            self.ctx.project.create(
                envelope(
                    BILLING, name, {"cluster": cluster, "project": project, "location": location}, ledger
                ),
            )
        else:
            obj = dict(cur)
            obj["metadata"] = dict(cur["metadata"])
            obj["status"] = ledger
            self.ctx.project.update(obj, take=True)
        self._written = True

    def reconcile(self, key: Any) -> Result | None:
        assert self.ctx.project is not None
        if not self._loaded:
            self._load()
        now = self.ctx.now()
        if key != KEY:
            if self._sync_pod(key[1], key[2], now):
                if self._due is None:
                    self._due = now + FLUSH
                self.enqueue_after(KEY, self._due - now)
            return None
        changed = self._sync_nodes(now)
        if not self._written and self.ctx.project.peek(BILLING, self._name()[0]) is None:
            changed = True
        if self._resync:  # records of pods that went while the controller was not running
            self._resync = False
            for rkey in sorted(self._open_pods):
                ns, pname, _uid = rkey.split("/", 2)
                if rkey in self._open_pods and self._sync_pod(ns, pname, now):
                    changed = True
        # node records go out at once; pod records when their FLUSH is due (a Node event that changes no
        # record, e.g. an autoscaler annotation, does not write the whole ledger again)
        if changed or (self._dirty and (self._due is None or now >= self._due)):
            self._write(now)
        elif self._dirty and self._due is not None:
            self.enqueue_after(KEY, self._due - now)
        return None


def flush_billing(controllers: Iterable[Any]) -> None:
    """Bring the stored ledger of the cluster whose controllers are ``controllers`` up to now (if its billing
    controller runs and has loaded its ledger)."""
    for ctrl in controllers:
        if isinstance(ctrl, BillingController):
            ctrl.flush_loaded()
