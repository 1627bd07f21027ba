"""What the fallback's own choices add to each priority class's bill: the budget of the hedge back to plan A.

A hedge back (a job waiting on plan B sent back to plan A the moment plan A can take it) and a probe back trade
money for time: plan A (on demand) costs about twice what DWS's flex-start does, so a class whose jobs the
fallback keeps sending back pays more per chip-hour than without the fallback — the urgent class first, since it
goes back first. A move off a stocked-out plan A to DWS does the opposite. ``CostLedger`` keeps, per priority,
pass after pass, what the class's running jobs cost (``spend``: pods on nodes x the flavor's relative price x
time) and what the fallback's moves changed in it against where each job would have run without the fallback
(``extra``: for a job Kueue put on plan B that the fallback sent back, running on plan A, the price difference; for
a job it moved or steered off a stocked-out plan A, running on plan B, that difference taken off; a moved job sent
back runs where it would have anyway). A hedge back or probe back of a class is made only while its ``extra`` is within
``FallbackConfig.hedge_cost_budget`` of what it would have spent without them (``affordable``): the fallback may
make a class dearer per chip-hour by that much, never more, to make it wait less.

Prices are relative to on demand for the same machine type (``flexq.api.gke_catalog``: the node's model — spot,
flex-start — from its labels); a flavor with no node seen yet is priced as its kind: a flavor behind a DWS
admission check as flex-start, a spot flavor as spot, anything else as on demand. The ledger is the process's own
memory: a restarted fallback starts a fresh one (it then sends back as if nothing had been spent yet, as before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.fallback.records import move_state
from flexq.fallback.view import ClusterView, WorkloadView

__all__ = ["CostLedger", "relative_price"]

_DEFAULT_FLEX = 0.5  # flex-start / on-demand, when no node of the flavor says its machine type
_DEFAULT_SPOT = 0.4


def _model(labels: Mapping[str, str]) -> catalog.ProvisioningModel:
    if labels.get(catalog.LABEL_SPOT) == "true":
        return catalog.SPOT
    if labels.get(catalog.LABEL_FLEX_START) == "true" or labels.get("cloud.google.com/gke-queued") == "true":
        return catalog.FLEX_START
    return catalog.ON_DEMAND


def relative_price(view: ClusterView, flavor: str, dws: bool) -> float | None:
    """The flavor's price relative to on demand, from a node of it (None: no node says)."""
    for node in view.nodes_of(flavor):
        labels = node["metadata"].get("labels") or {}
        name = labels.get("node.kubernetes.io/instance-type") or labels.get(
            "beta.kubernetes.io/instance-type"
        )
        if not name or not catalog.is_known_machine_type(name):
            continue
        mt = catalog.machine_type(name)
        model = _model(labels)
        if dws and model == catalog.ON_DEMAND:
            model = catalog.FLEX_START  # queued provisioning bills as flex-start
        od = float(catalog.price_per_hour(mt, catalog.ON_DEMAND))
        price = mt.prices.for_model(model)
        if od > 0 and price is not None:
            return float(catalog.price_per_hour(mt, model)) / od
    return None


class CostLedger:
    """Per priority: what its running jobs cost and what the fallback's moves added (see the module docstring)."""

    def __init__(self) -> None:
        self.spend: dict[int, float] = {}  # priority -> relative price x pod-seconds
        self.extra: dict[
            int, float
        ] = {}  # priority -> what the fallback's moves added to that (or saved: < 0)
        self.prices: dict[str, float] = {}  # flavor -> relative price, as last seen
        self._rates: dict[int, tuple[float, float]] = {}  # priority -> (spend, extra) per second, last pass
        self._at: float | None = None

    def price(self, view: ClusterView, flavor: str, dws_flavors: set[str]) -> float:
        if flavor in self.prices:
            return self.prices[flavor]  # a flavor's nodes keep their machine type and model
        seen = relative_price(view, flavor, flavor in dws_flavors)
        if seen is not None:
            self.prices[flavor] = seen
            return seen
        if flavor in dws_flavors:
            return _DEFAULT_FLEX
        labels = view.flavors.get(flavor) or {}
        return _DEFAULT_SPOT if labels.get(catalog.LABEL_SPOT) == "true" else 1.0

    def update(self, view: ClusterView, dws_flavors: set[str]) -> None:
        """Add what was spent since the last pass (at the last pass's rates), then take this pass's rates."""
        now = view.now
        if self._at is not None and now > self._at:
            dt = now - self._at
            for p, (spend, extra) in self._rates.items():
                self.spend[p] = self.spend.get(p, 0.0) + spend * dt
                self.extra[p] = self.extra.get(p, 0.0) + extra * dt
        self._at = now
        rates: dict[int, tuple[float, float]] = {}
        for w in view.workloads:
            if not w.admitted or w.job is None:
                continue
            running = _running_pods(view, w)
            if not running:
                continue
            job = view.job(w)
            move = move_state(job) if job is not None else {}
            spend = extra = 0.0
            for flavor, pods in running.items():
                p_here = self.price(view, flavor, dws_flavors)
                spend += pods * p_here
                other = _came_from(move, flavor)
                if other is not None:
                    extra += pods * (p_here - self.price(view, other, dws_flavors))
            s0, e0 = rates.get(w.priority, (0.0, 0.0))
            rates[w.priority] = (s0 + spend, e0 + extra)
        self._rates = rates

    def affordable(self, priority: int, budget: float) -> bool:
        """Whether the fallback may send another job of this priority back to a dearer flavor: what its moves
        added to the class's bill is within ``budget`` of what the class would have spent without them."""
        extra = self.extra.get(priority, 0.0)
        base = self.spend.get(priority, 0.0) - extra
        return extra <= budget * max(base, 0.0)

    def describe(self, priority: int) -> str:
        extra = self.extra.get(priority, 0.0)
        base = self.spend.get(priority, 0.0) - extra
        share = extra / base if base > 0 else 0.0
        return f"the fallback's moves have made priority {priority}'s running jobs {share:+.1%} dearer so far"


def _running_pods(view: ClusterView, w: WorkloadView) -> dict[str, int]:
    """Flavor -> the workload's pods running there now."""
    out: dict[str, int] = {}
    for pod in w.pods:
        if (pod.get("status") or {}).get("phase") != "Running" or not (pod.get("spec") or {}).get("nodeName"):
            continue
        flavor = view.pod_flavor(w, pod)
        if flavor is not None:
            out[flavor] = out.get(flavor, 0) + 1
    return out


def _came_from(move: Mapping[str, Any], flavor: str) -> str | None:
    """The flavor the job would have run on without the fallback, when its moves made that differ from the one it
    runs on (None: the same, as far as its record says). A job the fallback moved or steered off a stocked-out plan
    A would have waited for plan A and run there: on plan B it runs cheaper, and sent back it runs where it would
    have anyway. A job Kueue itself put on plan B (its quota in use: the hedge's ``hedged`` record) would have run
    on plan B: sent back to plan A it runs dearer — unless the fallback's own quota cap put it there (``capped``):
    then it would have waited for plan A, as a moved job."""
    step, src, dst = move.get("step"), move.get("from"), move.get("to")
    if not src or not dst or move.get("kept"):
        return None
    kueues = move.get("hedged") and not move.get("capped")  # plan B was Kueue's choice, not the fallback's
    if step == "returned" and flavor == src and kueues:
        return str(dst)
    if step == "moved" and flavor == dst and not kueues:
        return str(src)
    return None
