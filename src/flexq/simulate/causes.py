"""What cost one simulation run the most, with the run's evidence and the change that addresses each cause.

Owns ``causes(run)``: a pure reading of a ``RunResult`` (the jobs' rows with their wait split and lost-job
evidence, the node pools' sizes over time, the ClusterQueues' quota reserved over time, Kueue's evictions) that
returns the few causes that lost the most jobs or cost the most wait, most costly first. Each cause is a plain
dict::

    {"code": "NodepoolSizeReached", "title": ..., "jobsLost": 4, "jobsDelayed": 9, "waitHours": 61.2,
     "evidence": "4 jobs deactivated by Kueue after ... dws-pool sat at its max of 16 nodes for 31.0 h while
                  12 more were asked for",
     "change": "raise dws-pool's max nodes to >= 28, or raise ProvisioningRequestConfig dws-config's
                retryStrategy.backoffLimitCount (3 now)",
     "knobs": [{"kind": "poolMax", "pool": "dws-pool", "value": 28},
               {"kind": "retryLimit", "config": "dws-config", "value": 6}]}

``knobs`` use the vocabulary of ``flexq simulate --sweep`` (``flexq.simulate.sweep``), so a cause's change can
be tried as is. The causes read:

- ``NodepoolSizeReached``: ProvisioningRequests failed because the (DWS) node pool was at its maximum;
- ``RequeuingLimit``/``PodsReadyTimeout``: Kueue's waitForPodsReady evicted jobs whose pods did not start in
  time (and deactivated those past the requeuing limit);
- ``StockOut``: admitted jobs whose pods the cloud refused capacity (a stock-out, or GCE quota);
- ``IdlePreferredFlavor``: jobs waited for a later flavor's provisioning (DWS) while the first flavor's quota
  had room for them (Kueue does not move a job back once it has reserved quota elsewhere);
- ``QuotaWait``: jobs waited for ClusterQueue quota (Kueue's own message names the flavor and resource);
- ``QuotaOverPool``: a flavor's accelerator quota is more than its node pool can hold, so admitted jobs wait
  for nodes the pool cannot add;
- ``DWSQueue``: the rest of the wait for DWS provisioning, the cloud's queue;
- ``RetryHoldsQuota`` (Kueue 0.19) / ``RetryLimitKept`` (Kueue 0.20.7): what the Kueue release does with an
  admission check in ``Retry`` (kueue#18785): 0.19 waits out the back-off holding the quota, and a check that
  applies to some flavors only (the tutorial's ``onFlavors: [dws]``) is dropped with the quota, so its retry
  count starts again and ``backoffLimitCount`` never ends the job; 0.20.7 releases the quota at once and the
  count survives the back-off, so a job whose requests keep failing is deactivated after the limit.

Must not import flexq.http.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from flexq.simulate.engine import RunResult
from flexq.simulate.recorder import TPU, WAIT_BUCKETS

__all__ = ["causes", "MAX_CAUSES"]

MAX_CAUSES = 5
NODEPOOL_GKE_LABEL = "cloud.google.com/gke-nodepool"


def _h(seconds: float) -> float:
    return round(seconds / 3600, 1)


def _plural(n: int | float, word: str) -> str:
    return f"{n:g} {word}{'' if n == 1 else 's'}"


def _pool_of_flavor(run: RunResult, flavor: str) -> str:
    return (run.flavors.get(flavor) or {}).get(NODEPOOL_GKE_LABEL, "")


def _flavor_of_pool(run: RunResult, pool: str) -> str:
    return next(
        (f for f, labels in sorted(run.flavors.items()) if labels.get(NODEPOOL_GKE_LABEL) == pool), ""
    )


def _nodes_over_time(run: RunResult, pool: str) -> list[tuple[float, int]]:
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


def _time_at_least(points: Sequence[tuple[float, float]], level: float, end: float) -> float:
    total = 0.0
    for (t, v), (t2, _v) in zip(points, [*points[1:], (end, 0)], strict=False):
        if v >= level:
            total += max(0.0, min(t2, end) - t)
    return total


def _peak_overlap(intervals: list[tuple[float, float, int]]) -> int:
    """The largest sum of weights of intervals [start, end) open at one instant."""
    edges = sorted(
        [(s, w) for s, _e, w in intervals] + [(e, -w) for _s, e, w in intervals], key=lambda x: (x[0], x[1])
    )
    cur = peak = 0
    for _t, w in edges:
        cur += w
        peak = max(peak, cur)
    return peak


def _round_up(n: int, step: int) -> int:
    step = max(1, step)
    return -(-n // step) * step


def _check_for_flavor(run: RunResult, cq: str, flavor: str) -> tuple[str, dict[str, Any]] | None:
    checks = (run.queues.get(cq) or {}).get("checks") or {}
    for name, flavors in sorted(checks.items()):
        if not flavors or flavor in flavors:
            detail = run.checks.get(name)
            if detail and detail.get("config"):
                return name, detail
    return None


def _first_flavors(run: RunResult, resource: str) -> dict[str, list[str]]:
    """ClusterQueue -> its flavors, in order, of the resource group covering ``resource``."""
    out = {}
    for cq, q in run.queues.items():
        for g in q.get("groups") or []:
            if resource in (g.get("resources") or []):
                out[cq] = list(g.get("flavors") or [])
    return out


def _nodepool_size_reached(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    hit = [r for r in rows if "NodepoolSizeReached" in (r.get("cause") or "") or r.get("refusals")]
    if not hit:
        return None
    per_pool: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    failures = 0
    for r in hit:
        refusals = r.get("refusals") or []
        failures += len(refusals)
        if not refusals:
            continue
        pool = refusals[0][1]
        start = min(t for t, _p, _n in refusals)
        end = r["started"] if r["started"] is not None else run.horizon
        per_pool[pool].append((start, max(start, end), max(n for _t, _p, n in refusals)))
    if not per_pool:
        return None
    pool = max(per_pool, key=lambda p: (len(per_pool[p]), p))
    info = run.pools.get(pool) or {}
    m = int(info.get("max") or 0)
    hosts = int(info.get("hosts") or 1)
    k = _peak_overlap(per_pool[pool])
    at_max = _time_at_least(_nodes_over_time(run, pool), max(1, m - hosts + 1), run.horizon)
    lost = [r for r in hit if r["lost"]]
    wait = sum(r["wait_censored"] for r in hit)
    target = _round_up(m + k, hosts)
    flavor = _flavor_of_pool(run, pool)
    cq = next((r["cluster_queue"] for r in hit if r["cluster_queue"]), "")
    check = _check_for_flavor(run, cq, flavor) if flavor else None
    knobs: list[dict[str, Any]] = [{"kind": "poolMax", "pool": pool, "value": target}]
    change = f"raise {pool}'s max nodes from {m} to >= {target}"
    if check is not None:
        limit = check[1].get("retry", {}).get("backoffLimitCount")
        limit = 3 if limit is None else int(limit)
        knobs.append({"kind": "retryLimit", "config": check[1]["config"], "value": max(limit * 2, limit + 3)})
        change += (
            f", or raise ProvisioningRequestConfig {check[1]['config']}'s retryStrategy.backoffLimitCount "
            f"(now {limit}) so Kueue keeps retrying until the pool has room"
        )
    lost_text = (
        f"{_plural(len(lost), 'job')} deactivated by Kueue after their ProvisioningRequests failed with "
        f"NodepoolSizeReached ({failures} failures in all)"
        + (f", {len(hit) - len(lost)} more delayed by it" if len(hit) > len(lost) else "")
        if lost
        else f"{_plural(len(hit), 'job')} delayed by ProvisioningRequests failed with NodepoolSizeReached"
    )
    return {
        "code": "NodepoolSizeReached",
        "title": f"{pool} full: DWS ProvisioningRequests refused",
        "jobsLost": len(lost),
        "jobsDelayed": len(hit) - len(lost),
        "waitHours": _h(wait),
        "evidence": (
            f"{lost_text}; {pool} sat at its max of {m} nodes "
            f"for {_h(at_max)} h while up to {k} more nodes were asked for"
        ),
        "change": change,
        "knobs": knobs,
    }


def _pods_ready(run: RunResult, rows: list[dict[str, Any]], kueue: dict[str, Any]) -> dict[str, Any] | None:
    evicted = sum(reasons.get("PodsReadyTimeout", 0) for reasons in run.evictions.values())
    limited = [r for r in rows if r["lost"] and "RequeuingLimitExceeded" in (r.get("reason") or "")]
    if not evicted and not limited:
        return None
    victims = [r for r in rows if r["evictions"] and (r["wait_evicted"] > 0 or r["lost"])]
    wait = sum(r["wait_evicted"] + r["wait_deactivated"] for r in victims)
    timeout = float(kueue.get("podsReadyTimeout") or 0)
    # how long pods take to be ready once admitted when the cloud gives the nodes (no stock-out on the way)
    ready = sorted(
        r["wait_scaleUp"] + r["wait_pods"]
        for r in rows
        if r["started"] is not None and r["wait_stockout"] == 0
    )
    p95 = ready[int(0.95 * (len(ready) - 1))] if ready else 0.0
    stock = sum(1 for r in victims if r["wait_stockout"] > 0)
    knobs: list[dict[str, Any]] = []
    changes = []
    if timeout and p95 * 1.5 > timeout:
        want = math.ceil(p95 * 1.5 / 300) * 300
        knobs.append({"kind": "podsReadyTimeout", "value": f"{int(want // 60)}m"})
        changes.append(
            f"raise Kueue's waitForPodsReady.timeout from {int(timeout // 60)}m to >= {int(want // 60)}m"
        )
    if stock:
        knobs.append({"kind": "fallback", "value": True})
        changes.append(
            "move the jobs off the stocked-out flavor (flexq fallback) instead of evicting and re-admitting them "
            "on it"
        )
    change = (
        ", or ".join(changes)
        or "raise Kueue's waitForPodsReady.timeout or requeuingStrategy.backoffLimitCount"
    )
    return {
        "code": "PodsReadyTimeout",
        "title": "waitForPodsReady evictions",
        "jobsLost": len(limited),
        "jobsDelayed": len(victims) - len(limited),
        "waitHours": _h(wait),
        "evidence": (
            f"Kueue evicted {_plural(evicted, 'workload')} with PodsReadyTimeout (timeout {int(timeout // 60)}m)"
            + (f" and deactivated {_plural(len(limited), 'job')} past the requeuing limit" if limited else "")
            + f"; {stock} of the evicted jobs were waiting on refused capacity; where the cloud gave the nodes, "
            f"pods were ready {p95 / 60:.0f} min (p95) after admission"
        ),
        "change": change,
        "knobs": knobs,
    }


def _stockout(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    hit = [r for r in rows if r["wait_stockout"] > 0]
    if not hit:
        return None
    wait = sum(r["wait_stockout"] for r in hit)
    if wait < 60:
        return None
    per_pool: dict[str, float] = defaultdict(float)
    for r in hit:
        per_pool[r.get("refused_pool") or ""] += r["wait_stockout"]
    pool = max(per_pool, key=lambda p: (per_pool[p], p))
    flavor = _flavor_of_pool(run, pool) or "its flavor"
    pool = pool or "its node pool"
    lost = [r for r in hit if r["lost"]]
    if run.fallback:
        change = (
            "flexq's fallback is on here: what is left is the grace period before it acts (grace_seconds) and "
            f"jobs it found no headroom to move; a capacity-checking ProvisioningRequest check on {flavor} "
            "makes Kueue try the next flavor at admission"
        )
        knobs: list[dict[str, Any]] = [{"kind": "fallback", "value": {"grace_seconds": 30}}]
    else:
        change = (
            "turn on flexq's fallback (settings: {fallback: true}, LocalQueue label "
            'fallback.flexq.dev/enabled: "true") to move waiting jobs to the next flavor, or put a '
            f"capacity-checking ProvisioningRequest check on {flavor} so Kueue tries the next flavor itself"
        )
        knobs = [{"kind": "fallback", "value": True}]
    return {
        "code": "StockOut",
        "title": f"stock-outs on {flavor}",
        "jobsLost": len(lost),
        "jobsDelayed": len(hit) - len(lost),
        "waitHours": _h(wait),
        "evidence": (
            f"{_plural(len(hit), 'admitted job')} waited {_h(wait)} h in all with pods the cloud refused capacity "
            f"on {flavor} ({pool}: a stock-out or GCE quota); Kueue keeps a job on the flavor it admitted it on"
        ),
        "change": change,
        "knobs": knobs,
    }


def _idle_preferred(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Job-hours spent waiting on a later flavor's admission check while the first flavor had room."""
    firsts = _first_flavors(run, TPU)
    if not firsts or not run.waiting or not run.reserved:
        return None
    sizes = sorted(r["size"] for r in rows if r["size"] > 0)
    if not sizes:
        return None
    size = sizes[len(sizes) // 2]
    dws = WAIT_BUCKETS.index("dws")
    best = None
    for cq, flavors in sorted(firsts.items()):
        # the preferred flavor: the first one that has quota for the accelerator
        first = next((f for f in flavors if run_usage_nominal(run, f"{cq}/{f}/{TPU}") > 0), "")
        later = flavors[flavors.index(first) + 1 :] if first else []
        if not later:
            continue
        key = f"{cq}/{first}/{TPU}"
        series = run.reserved.get(key)
        usage = min(run_usage_nominal(run, key), _pool_chips(run, first))  # what its quota and pool hold
        if not series or not usage:
            continue
        # merge the two step functions: jobs waiting on admission checks, and free quota on the first flavor
        times = sorted({t for t, _ in run.waiting} | {t for t, _ in series} | {run.horizon})
        wi = si = 0
        n_wait, reserved = 0, 0.0
        hours = 0.0
        peak = 0
        for i, t in enumerate(times[:-1]):
            while wi < len(run.waiting) and run.waiting[wi][0] <= t:
                n_wait = run.waiting[wi][1][dws]
                wi += 1
            while si < len(series) and series[si][0] <= t:
                reserved = series[si][1]
                si += 1
            room = int(max(0.0, usage - reserved) // size)
            fit = min(n_wait, room)
            peak = max(peak, fit)
            hours += fit * (times[i + 1] - t) / 3600
        if hours >= 0.5 and (best is None or hours > best[1]):
            best = (cq, hours, peak, first)
    if best is None:
        return None
    cq, hours, peak, flavor = best
    return {
        "code": "IdlePreferredFlavor",
        "title": f"{flavor} quota idle while jobs waited for provisioning elsewhere",
        "jobsLost": 0,
        "jobsDelayed": peak,
        "waitHours": round(hours, 1),
        "evidence": (
            f"jobs waited {hours:.1f} job-hours for a later flavor's provisioning (DWS) while {cq}'s {flavor} "
            f"quota had room for them (up to {peak} at once): Kueue does not move a job back once it holds "
            "quota on a later flavor"
        ),
        "change": (
            f"let waiting jobs go back to {flavor} when it frees: flexq's fallback (settings: {{fallback: true}}, "
            "it hedges back when the flavor's nodes can take the job) or Kueue's ConcurrentAdmission with "
            "migration TryPreferredFlavors"
        ),
        "knobs": [{"kind": "fallback", "value": True}],
    }


def run_usage_nominal(run: RunResult, key: str) -> float:
    entry = run.usage.get(key) or {}
    return float(entry.get("nominal") or 0.0)


def _quota(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    per_key: dict[str, float] = defaultdict(float)
    jobs: dict[str, int] = defaultdict(int)
    for r in rows:
        for k, v in (r.get("quota_waits") or {}).items():
            per_key[k] += v
            jobs[k] += 1
    if not per_key:
        return None
    key = max(per_key, key=lambda k: (per_key[k], k))
    wait = per_key[key]
    if wait < 600:
        return None
    flavor, resource = key.split("/", 1)
    cq = next((r["cluster_queue"] for r in rows if r["cluster_queue"]), "") or next(iter(run.queues), "")
    nominal = run_usage_nominal(run, f"{cq}/{flavor}/{resource}")
    sizes = sorted(r["size"] for r in rows if r["size"] > 0) if resource == TPU else []
    step = sizes[len(sizes) // 2] if sizes else max(1.0, nominal * 0.25)
    quota_idx = WAIT_BUCKETS.index("quota")
    evicted_idx = WAIT_BUCKETS.index("evicted")
    waiting = sorted(c[quota_idx] + c[evicted_idx] for _t, c in run.waiting) or [0]
    p95 = waiting[int(0.95 * (len(waiting) - 1))]
    add = max(step, math.ceil(max(1, p95) / 2) * step)
    target = nominal + add
    knobs: list[dict[str, Any]] = [
        {
            "kind": "nominalQuota",
            "clusterQueue": cq,
            "flavor": flavor,
            "resource": resource,
            "value": _num(target),
        }
    ]
    change = f"raise {cq}'s {flavor} {resource} nominalQuota from {_num(nominal)} to {_num(target)}"
    pool = _pool_of_flavor(run, flavor)
    info = run.pools.get(pool) or {}
    if resource == TPU and info.get("chipsPerNode"):
        nodes = _round_up(int(math.ceil(target / info["chipsPerNode"])), int(info.get("hosts") or 1))
        if nodes > int(info.get("max") or 0):
            knobs.append({"kind": "poolMax", "pool": pool, "value": nodes})
            change += f" and {pool}'s max nodes from {info.get('max')} to {nodes}"
    lost = [
        r
        for r in rows
        if r["lost"] and r["outcome"] == "NeverAdmitted" and key in (r.get("quota_waits") or {})
    ]
    return {
        "code": "QuotaWait",
        "title": f"waiting for {flavor} {resource} quota",
        "jobsLost": len(lost),
        "jobsDelayed": jobs[key] - len(lost),
        "waitHours": _h(wait),
        "evidence": (
            f"{_plural(jobs[key], 'job')} waited {_h(wait)} h in all for quota: Kueue said insufficient quota for "
            f"{resource} in flavor {flavor} ({cq} nominal {_num(nominal)}); up to {p95} jobs waited at once (p95)"
        ),
        "change": change,
        "knobs": knobs,
    }


def _quota_over_pool(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A flavor whose accelerator quota is more than its node pool can hold: Kueue admits jobs there that wait
    for nodes the pool cannot add (and, with waitForPodsReady, are evicted and admitted there again)."""
    hit = [r for r in rows if r["wait_poolMax"] > 0]
    worst = None
    for cq, flavors in sorted(_first_flavors(run, TPU).items()):
        for flavor in flavors:
            nominal = run_usage_nominal(run, f"{cq}/{flavor}/{TPU}")
            pool = _pool_of_flavor(run, flavor)
            info = run.pools.get(pool) or {}
            if nominal <= 0 or not info.get("chipsPerNode") or info.get("queued"):
                continue
            holds = int(info.get("max") or 0) * int(info["chipsPerNode"])
            if nominal > holds and (worst is None or nominal - holds > worst[3] - worst[4]):
                worst = (cq, flavor, pool, nominal, holds, info)
    if worst is None:
        return None
    cq, flavor, pool, nominal, holds, info = worst
    mine = [r for r in hit if r.get("refused_pool") in ("", pool)]
    wait = sum(r["wait_poolMax"] for r in mine)
    lost = [r for r in mine if r["lost"]]
    nodes = _round_up(int(math.ceil(nominal / info["chipsPerNode"])), int(info.get("hosts") or 1))
    return {
        "code": "QuotaOverPool",
        "title": f"{flavor} quota larger than {pool}",
        "jobsLost": len(lost),
        "jobsDelayed": len(mine) - len(lost),
        "waitHours": _h(wait),
        "evidence": (
            f"{cq}'s {flavor} {TPU} quota is {_num(nominal)} but {pool} holds at most {holds} "
            f"({info.get('max')} nodes x {info['chipsPerNode']} chips): {_plural(len(mine), 'job')} admitted there "
            f"waited {_h(wait)} h in all for nodes the pool could not add (max node group size reached)"
        ),
        "change": (
            f"lower {cq}'s {flavor} {TPU} nominalQuota to {holds} (Kueue then sends the rest to the next flavor), "
            f"or raise {pool}'s max nodes to {nodes}"
        ),
        "knobs": [
            {"kind": "nominalQuota", "clusterQueue": cq, "flavor": flavor, "resource": TPU, "value": holds},
            {"kind": "poolMax", "pool": pool, "value": nodes},
        ],
    }


def _pool_chips(run: RunResult, flavor: str) -> float:
    info = run.pools.get(_pool_of_flavor(run, flavor)) or {}
    if not info.get("chipsPerNode") or info.get("queued"):
        return math.inf
    return float(int(info.get("max") or 0) * int(info["chipsPerNode"]))


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 3)


def _dws_queue(run: RunResult, rows: list[dict[str, Any]], taken: float) -> dict[str, Any] | None:
    hit = [r for r in rows if r["wait_dws"] > 0]
    wait = sum(r["wait_dws"] for r in hit) - taken * 3600
    if not hit or wait < 3600:
        return None
    return {
        "code": "DWSQueue",
        "title": "the DWS queue",
        "jobsLost": 0,
        "jobsDelayed": len(hit),
        "waitHours": _h(wait),
        "evidence": (
            f"{_plural(len(hit), 'job')} waited {_h(sum(r['wait_dws'] for r in hit))} h in all for their "
            "ProvisioningRequests to be provisioned (the cloud's queue for flex-start capacity)"
        ),
        "change": (
            "more plan-A capacity shortens it (the on-demand flavor's nominalQuota and node pool max), at "
            "on-demand prices; the DWS wait itself is the cloud's"
        ),
        "knobs": [],
    }


def _retry_check(run: RunResult, rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any], list[str]] | None:
    """The admission check with a ProvisioningRequestConfig that the run's jobs retried on (name, detail, the
    flavors it applies to)."""
    for cq in sorted({r["cluster_queue"] for r in rows if r["cluster_queue"]} | set(run.queues)):
        for name, flavors in sorted(((run.queues.get(cq) or {}).get("checks") or {}).items()):
            detail = run.checks.get(name) or {}
            if detail.get("config"):
                return name, detail, list(flavors)
    return None


def _release(run: RunResult, rows: list[dict[str, Any]], kueue: dict[str, Any]) -> dict[str, Any] | None:
    """What the run's Kueue release did with checks in Retry (see the module docstring; kueue#18785)."""
    release = str(kueue.get("release") or run.kueue.get("release") or "")
    found = _retry_check(run, rows)
    if not release or found is None:
        return None
    check, detail, on = found
    limit = detail.get("retry", {}).get("backoffLimitCount")
    limit = 3 if limit is None else int(limit)
    where = f"flavor {', '.join(on)} only" if on else "every flavor"
    if release.startswith("0.19"):
        held = [r for r in rows if r.get("retry_hold", 0) > 0]
        if not held:
            return None
        hours = sum(r["retry_hold"] for r in held)
        flavors = sorted({f for r in held for f in r.get("retry_hold_flavors") or []})
        # evicted by the check more often than its limit allows, and not deactivated: the count started again
        retried = [r for r in held if r.get("check_evictions", 0) > limit and not r["lost"]]
        lost = [r for r in held if r["lost"]]
        return {
            "code": "RetryHoldsQuota",
            "title": f"Kueue {release}: quota held through {check}'s retry back-off",
            "jobsLost": len(lost),
            "jobsDelayed": len(held) - len(lost),
            "waitHours": _h(hours),
            "evidence": (
                f"{_plural(len(held), 'job')} held {'/'.join(flavors) or 'their'} quota for {_h(hours)} h in all "
                f"while {check} waited out its retry back-off: Kueue {release} keeps the quota until the "
                f"back-off ends, then evicts. The check applies to {where}, so it goes with the quota unless the "
                f"job is admitted again at once, and its retry count starts again: {_plural(len(retried), 'job')} "
                f"were evicted for it more than backoffLimitCount ({limit}) times and kept retrying"
                + (f"; {len(lost)} still reached the limit" if lost else "")
            ),
            "change": (
                "Kueue 0.20.7 releases the quota at once (kueue#18785) and keeps the retry count through the "
                f"back-off, so after {limit} failed retries a job is deactivated: before upgrading, raise "
                f"ProvisioningRequestConfig {detail['config']}'s retryStrategy.backoffLimitCount (or the pool's "
                "max nodes) if these jobs must keep retrying"
            ),
            "knobs": [],
        }
    lost = [
        r
        for r in rows
        if r["lost"] and r.get("reason") == "DeactivatedDueToAdmissionCheck" and r.get("pr_failures", 0) > 0
    ]
    if not lost:
        return None
    return {
        "code": "RetryLimitKept",
        "title": f"Kueue {release}: {check}'s retry limit ends jobs",
        "jobsLost": len(lost),
        "jobsDelayed": 0,
        "waitHours": _h(sum(r["wait_censored"] for r in lost)),
        "evidence": (
            f"{_plural(len(lost), 'job')} deactivated after {check} used up backoffLimitCount ({limit}): Kueue "
            f"{release} evicts at once on a Retry (kueue#18785) and keeps the check, with its retry count, through "
            f"the back-off spent without quota. Kueue 0.19 holds the quota through each back-off instead, and the "
            f"check, which applies to {where}, is dropped with its count whenever a job gives the quota back and "
            "is not admitted again at once (a `kueue: 0.19.2` variant shows how many more would keep retrying)"
        ),
        "change": (
            f"raise ProvisioningRequestConfig {detail['config']}'s retryStrategy.backoffLimitCount (now {limit}) or "
            "its backoffBaseSeconds so the retries outlast the pool's busy spells, or raise the node pool's max"
        ),
        "knobs": [{"kind": "retryLimit", "config": detail["config"], "value": max(limit * 2, limit + 3)}],
    }


def causes(run: RunResult, kueue: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The causes that lost the most jobs or cost the most wait in ``run``, most costly first (at most
    ``MAX_CAUSES``)."""
    rows = run.jobs
    found = [
        c
        for c in (
            _nodepool_size_reached(run, rows),
            _pods_ready(run, rows, kueue or {}),
            _stockout(run, rows),
            _idle_preferred(run, rows),
            _quota(run, rows),
            _quota_over_pool(run, rows),
            _release(run, rows, kueue or {}),
        )
        if c is not None
    ]
    idle = next((c["waitHours"] for c in found if c["code"] == "IdlePreferredFlavor"), 0.0)
    dws = _dws_queue(run, rows, idle)
    if dws is not None:
        found.append(dws)
    found.sort(key=lambda c: (-c["jobsLost"], -c["waitHours"], c["code"]))
    return found[:MAX_CAUSES]
