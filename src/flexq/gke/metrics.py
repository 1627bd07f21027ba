"""The twin's own metrics of one GKE cluster, under the ``flexq_`` prefix (GKE exports nothing like them in
Prometheus format; Cloud Monitoring has its own names, so these say plainly what they count).

Owns: ``GkeMetrics`` — a collector on the cluster's registry (``Context.metrics``) — and ``StockoutTracker``,
the controller that times the node pools' stock-outs (the pool's ``GCE_STOCKOUT`` condition, set and cleared
by the pool controller). Series:

- ``flexq_nodes{pool, provisioning_model, ready}`` — nodes of each pool, by readiness;
- ``flexq_provisioning_requests{provisioning_class, state}`` — ProvisioningRequests by state (Pending,
  Accepted = queued, Provisioned, BookingExpired, CapacityRevoked, Failed);
- ``flexq_stockouts_total{pool}`` and ``flexq_stockout_seconds_total{pool}`` — stock-outs met on scale-up and
  how long the pool spent stocked out (the current one counted up to now);
- ``flexq_cost_usd_total{pool, provisioning_model}``, ``flexq_job_cost_usd_total{kind, namespace, name}`` (one
  series per job: a RayJob's submitter is part of the RayJob, so ``sum by (name)`` counts each job once; not a
  ``job`` label, which Prometheus gives every scraped series) and ``flexq_node_hours_total{pool,
  provisioning_model}`` — the billing ledger's totals (``flexq.gke.billing``), valued at the clock's now.
  A job's series lives as long as the job (kube-state-metrics' rule: a deleted object's series go), and at most
  ``MAX_JOB_SERIES`` of them are shown, the costliest: the ledger (``Twin.billing()``) keeps every job, and the
  pools' totals include them all.

Every value is read on the twin's clock. Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from flexq.api import gke_catalog as catalog
from flexq.gke.billing import BillingController, billing_of
from flexq.gke.cache import GkeCache
from flexq.gke.nodes import cluster_names, pools_of
from flexq.gke.storage import BILLING, NODE_POOL, cluster_key
from flexq.runtime import Context, Controller, Result, Watch

__all__ = ["GkeMetrics", "StockoutTracker", "provisioning_request_state"]

PR_STATES = ("Pending", "Accepted", "Provisioned", "BookingExpired", "CapacityRevoked", "Failed")
MAX_JOB_SERIES = 1000
SCALE_UP_REASONS = ("FailedScaleUp", "TriggeredScaleUp")  # the cluster autoscaler's Events these metrics read


def _true(obj: dict[str, Any], ctype: str) -> bool:
    return any(
        c.get("type") == ctype and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def provisioning_request_state(pr: dict[str, Any]) -> str:
    """The furthest state a ProvisioningRequest's conditions show (one of ``PR_STATES``)."""
    for state in ("Failed", "CapacityRevoked", "BookingExpired", "Provisioned", "Accepted"):
        if _true(pr, state):
            return state
    return "Pending"


class StockoutTracker(Controller):
    """Times each pool's stock-outs: from the moment its ``GCE_STOCKOUT`` condition appears until it clears.
    Writes nothing: it keeps ``episodes`` and ``closed`` (seconds) per pool and ``open`` (since when)."""

    name = "gke-stockout-metrics"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.episodes: dict[str, int] = {}
        self.closed: dict[str, float] = {}
        self.open: dict[str, float] = {}
        self.by_autoscaler: set[str] = set()  # open stock-outs the autoscaler's events opened

    def watches(self) -> list[Watch]:
        _, _, cluster = cluster_names(self.ctx)

        def pool_keys(ev: Any) -> list[str]:
            labels = ev.object["metadata"].get("labels") or {}
            return [ev.object["spec"]["name"]] if labels.get("gke.twin.flexq.dev/cluster") == cluster else []

        def scale_up_events(ev: Any) -> list[tuple[str, str]]:
            obj = ev.object
            if ev.type == "DELETED" or obj.get("reason") not in SCALE_UP_REASONS:
                return []
            return [("event", f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}")]

        # a pool's own GCE_STOCKOUT condition (its initial or minimum nodes), and the cluster autoscaler's
        # FailedScaleUp ("GCE out of resources") / TriggeredScaleUp events on the pods it scales up for
        return [Watch(NODE_POOL, pool_keys, source="project"), Watch("Event", scale_up_events)]

    def start(self) -> None:
        for pool in pools_of(self.ctx):
            self.enqueue(pool["spec"]["name"])

    def reconcile(self, key: Any) -> Result | None:
        if isinstance(key, tuple):
            self._scale_up_event(key[1])
            return None
        name = str(key)
        pool = next((p for p in pools_of(self.ctx) if p["spec"]["name"] == name), None)
        stocked_out = pool is not None and any(
            c.get("code") == "GCE_STOCKOUT" for c in pool["spec"].get("conditions") or []
        )
        now = self.ctx.now()
        if stocked_out and name not in self.open:
            self.open[name] = now
            self.episodes[name] = self.episodes.get(name, 0) + 1
        elif not stocked_out and name in self.open and name not in self.by_autoscaler:
            self.closed[name] = self.closed.get(name, 0.0) + now - self.open.pop(name)
        return None

    def _scale_up_event(self, ref: str) -> None:
        ns, _, name = ref.partition("/")
        ev = self.store.peek("Event", name, ns)  # read-only, as the pod
        if ev is None:
            return
        inv = ev.get("involvedObject") or {}
        pod = self.store.peek("Pod", inv.get("name", ""), inv.get("namespace") or ns)
        pool = ((pod or {}).get("spec") or {}).get("nodeSelector", {}).get(catalog.LABEL_NODEPOOL, "")
        if not pool:
            return
        now = self.ctx.now()
        if ev.get("reason") == "FailedScaleUp" and pool not in self.open:
            self.open[pool] = now
            self.episodes[pool] = self.episodes.get(pool, 0) + 1
            self.by_autoscaler.add(pool)
        elif ev.get("reason") == "TriggeredScaleUp" and pool in self.by_autoscaler and pool in self.open:
            self.by_autoscaler.discard(pool)
            self.closed[pool] = self.closed.get(pool, 0.0) + now - self.open.pop(pool)

    def seconds(self, now: float) -> dict[str, float]:
        out = dict(self.closed)
        for name, since in self.open.items():
            out[name] = out.get(name, 0.0) + max(0.0, now - since)
        return out


class GkeMetrics:
    """The ``flexq_`` metrics of one GKE cluster (a collector registered on ``registry``)."""

    def __init__(
        self,
        ctx: Context,
        stockouts: StockoutTracker,
        registry: Any,
        cache: GkeCache,
        billing: BillingController,
    ) -> None:
        self.ctx, self.stockouts, self.cache, self.billing = ctx, stockouts, cache, billing
        if registry is not None:
            registry.register(self)

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        now = self.ctx.now()
        pools = pools_of(self.ctx)
        model_of = {p["spec"]["name"]: p["status"].get("provisioningModel", "on-demand") for p in pools}
        nodes = GaugeMetricFamily(
            "flexq_nodes",
            "GKE nodes of the cluster, per node pool, provisioning model and readiness.",
            labels=["pool", "provisioning_model", "ready"],
        )
        counts: dict[tuple[str, str, str], int] = {}
        for p in pools:
            for ready in ("true", "false"):
                counts[(p["spec"]["name"], model_of[p["spec"]["name"]], ready)] = 0
        for n in self.cache.node_list():
            pool = (n["metadata"].get("labels") or {}).get(catalog.LABEL_NODEPOOL, "")
            ready = "true" if _true(n, "Ready") else "false"
            k = (pool, model_of.get(pool, ""), ready)
            counts[k] = counts.get(k, 0) + 1
        for labels, v in sorted(counts.items()):
            nodes.add_metric(list(labels), v)
        yield nodes
        prs = GaugeMetricFamily(
            "flexq_provisioning_requests",
            "ProvisioningRequests of the cluster, per provisioning class and state.",
            labels=["provisioning_class", "state"],
        )
        by_state: dict[tuple[str, str], int] = {}
        for pr in self.ctx.store.list("ProvisioningRequest"):
            k2 = ((pr.get("spec") or {}).get("provisioningClassName", ""), provisioning_request_state(pr))
            by_state[k2] = by_state.get(k2, 0) + 1
        for labels2, v in sorted(by_state.items()):
            prs.add_metric(list(labels2), v)
        yield prs
        episodes = CounterMetricFamily(
            "flexq_stockouts", "Stock-outs (GCE_STOCKOUT) a node pool met on scale-up.", labels=["pool"]
        )
        seconds = CounterMetricFamily(
            "flexq_stockout_seconds",
            "Seconds a node pool spent stocked out, the current stock-out counted up to now.",
            labels=["pool"],
        )
        secs = self.stockouts.seconds(now)
        for name in sorted(set(model_of) | set(secs)):
            episodes.add_metric([name], self.stockouts.episodes.get(name, 0))
            seconds.add_metric([name], secs.get(name, 0.0))
        yield episodes
        yield seconds
        yield from self._cost(now)

    def _cost(self, now: float) -> Iterator[Metric]:
        project, location, cluster = cluster_names(self.ctx)
        assert self.ctx.project is not None
        # the controller writes pod records at most FLUSH seconds late: a scrape (on the loop) wants them as of now
        self.billing.flush_loaded()
        ledger = (self.ctx.project.try_get(BILLING, cluster_key(project, location, cluster)) or {}).get(
            "status"
        ) or {}
        model_of = {rec["pool"]: rec["model"] for rec in (ledger.get("nodes") or {}).values()}
        totals = billing_of(self.ctx.project, project, location, cluster, now)
        cost = CounterMetricFamily(
            "flexq_cost_usd",
            "What the cluster's nodes cost so far (USD), per node pool and provisioning model.",
            labels=["pool", "provisioning_model"],
        )
        for pool, usd in sorted(totals["pools"].items()):
            cost.add_metric([pool, model_of.get(pool, "")], usd)
        yield cost
        jobs = CounterMetricFamily(
            "flexq_job_cost_usd",
            "What each job's pods cost so far (USD): bound time x node price x the pod's share of the node.",
            labels=["kind", "namespace", "name"],
        )
        live = []
        for job, usd in totals["jobs"].items():
            kind, _, rest = job.partition("/")
            ns, _, name = rest.partition("/")
            try:
                exists = self.ctx.store.peek(kind, name, ns) is not None
            except Exception:  # a kind this cluster does not serve (any more)
                exists = False
            if exists:
                live.append((usd, job))
        live.sort(key=lambda t: (-t[0], t[1]))
        for usd, job in sorted(live[:MAX_JOB_SERIES], key=lambda t: t[1]):
            kind, _, rest = job.partition("/")
            namespace, _, name = rest.partition("/")
            jobs.add_metric([kind, namespace, name], usd)
        yield jobs
        hours = CounterMetricFamily(
            "flexq_node_hours",
            "Node-hours billed so far, per node pool and provisioning model.",
            labels=["pool", "provisioning_model"],
        )
        node_hours: dict[tuple[str, str], Fraction] = {}
        for rec in (ledger.get("nodes") or {}).values():  # as billing.totals counts them, per pool
            end = rec["deleted"] if rec.get("deleted") is not None else now
            key = (rec["pool"], rec["model"])
            node_hours[key] = (
                node_hours.get(key, Fraction(0)) + Fraction(max(0.0, end - rec["created"])) / 3600
            )
        for (pool, model), h in sorted(node_hours.items()):
            hours.add_metric([pool, model], round(float(h), 6))
        yield hours
