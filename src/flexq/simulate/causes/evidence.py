"""The evidence every cause reads from a run: node pools over time, flavors and their pools, admission checks that
retry (``kueue.checks``), a cause's options and figures. Pure functions of a ``RunResult``. Must not import
flexq.http."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from flexq.fallback.model import OPT_IN_LABEL
from flexq.kueue.checks import CheckController, check_controller
from flexq.simulate.run_result import RunResult

NODEPOOL_GKE_LABEL = "cloud.google.com/gke-nodepool"


def to_hours(seconds: float) -> float:
    return round(seconds / 3600, 1)


def plural(n: int | float, word: str) -> str:
    return f"{n:g} {word}{'' if n == 1 else 's'}"


def pool_of_flavor(run: RunResult, flavor: str) -> str:
    return (run.flavors.get(flavor) or {}).get(NODEPOOL_GKE_LABEL, "")


def flavor_of_pool(run: RunResult, pool: str) -> str:
    return next(
        (f for f, labels in sorted(run.flavors.items()) if labels.get(NODEPOOL_GKE_LABEL) == pool), ""
    )


def nodes_over_time(run: RunResult, pool: str) -> list[tuple[float, int]]:
    events: list[tuple[float, int]] = []
    for n in run.node_records:
        if n["pool"] == pool:
            events.append((n["created"], 1))
            if n["deleted"] is not None:
                events.append((n["deleted"], -1))
    cur, pts = 0, [(0.0, 0)]
    for t, d in sorted(events):
        cur += d
        if pts[-1][0] == t:
            pts[-1] = (t, cur)
        else:
            pts.append((t, cur))
    return pts


def time_at_least(points: Sequence[tuple[float, float]], level: float, end: float) -> float:
    total = 0.0
    for (t, v), (t2, _v) in zip(points, [*points[1:], (end, 0)], strict=False):
        if v >= level:
            total += max(0.0, min(t2, end) - t)
    return total


def peak_overlap(intervals: list[tuple[float, float, int]]) -> int:
    """The largest sum of weights of intervals [start, end) open at one instant."""
    edges = sorted(
        [(s, w) for s, _e, w in intervals] + [(e, -w) for _s, e, w in intervals], key=lambda x: (x[0], x[1])
    )
    cur = peak = 0
    for _t, w in edges:
        cur += w
        peak = max(peak, cur)
    return peak


def round_up(n: int, step: int) -> int:
    step = max(1, step)
    return -(-n // step) * step


def retrying(detail: dict[str, Any] | None) -> CheckController | None:
    """The controller of a check that asks for retries and has a parameters object to set them in (the
    ``retryLimit`` knob's target), from ``kueue.checks``; None for any other check."""
    ctl = check_controller((detail or {}).get("controller"))
    return ctl if ctl is not None and ctl.retries and (detail or {}).get("config") else None


def retry_limit(detail: dict[str, Any]) -> tuple[int, str]:
    """The check's retry limit, as its controller reads its parameters (the run keeps their retryStrategy), and
    where it is set, in words: ``ProvisioningRequestConfig dws-config's retryStrategy.backoffLimitCount``."""
    ctl = retrying(detail)
    assert ctl is not None, detail
    field = ".".join(ctl.retry_limit[1:])  # below spec
    return int(ctl.retry({"spec": {"retryStrategy": detail.get("retry")}}).limit), (
        f"{ctl.parameters} {detail['config']}'s {field}"
    )


def check_for_flavor(run: RunResult, cq: str, flavor: str) -> tuple[str, dict[str, Any]] | None:
    checks = (run.queues.get(cq) or {}).get("checks") or {}
    for name, flavors in sorted(checks.items()):
        if not flavors or flavor in flavors:
            detail = run.checks.get(name)
            if detail and retrying(detail):
                return name, detail
    return None


def first_flavors(run: RunResult, resource: str) -> dict[str, list[str]]:
    """ClusterQueue -> its flavors, in order, of the resource group covering ``resource``."""
    out = {}
    for cq, q in run.queues.items():
        for g in q.get("groups") or []:
            if resource in (g.get("resources") or []):
                out[cq] = list(g.get("flavors") or [])
    return out


FALLBACK_ON = (
    "turn on flexq's fallback (settings: {fallback: true}; it acts on the LocalQueues labelled "
    f'{OPT_IN_LABEL}: "true")'
)
# causes that are mistakes of configuration, not of capacity: when one is found, no capacity cause is shown


def option(change: str, *knobs: dict[str, Any]) -> dict[str, Any]:
    """One change a cause suggests: its words and the knobs (``flexq.simulate.sweep``'s vocabulary) that make
    it, turned together; ``flexq.simulate.whatif`` runs it before it is shown."""
    return {"change": change, "knobs": list(knobs)}


def primary(r: dict[str, Any]) -> str:
    """The one cause a lost job is counted under (so the causes' "jobs lost" never count a job twice): what
    stopped it first in the order Kueue and the kubelet decide: its pods could not start; Kueue deactivated it
    after its ProvisioningRequests failed, or past the requeuing limit; its pods met refused capacity; it
    never got quota."""
    if not r["lost"]:
        return ""
    if r.get("start_errors"):
        return next(iter(sorted(r["start_errors"], key=lambda k: (-r["start_errors"][k], k)))).split(":", 1)[
            0
        ]
    if "NodepoolSizeReached" in (r.get("cause") or ""):
        return "NodepoolSizeReached"
    if "RequeuingLimitExceeded" in (r.get("reason") or ""):
        return "PodsReadyTimeout"
    if r["wait_stockout"] > 0:
        return "StockOut"
    if r["wait_poolMax"] > 0:
        return "QuotaOverPool"
    if r["outcome"] == "NeverAdmitted" and r.get("quota_waits"):
        return "QuotaWait"
    return ""


def run_usage_nominal(run: RunResult, key: str) -> float:
    entry = run.usage.get(key) or {}
    return float(entry.get("nominal") or 0.0)


def pool_chips(run: RunResult, flavor: str) -> float:
    info = run.pools.get(pool_of_flavor(run, flavor)) or {}
    if not info.get("chipsPerNode") or info.get("queued"):
        return math.inf
    return float(int(info.get("max") or 0) * int(info["chipsPerNode"]))


def num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 3)
