"""Causes of capacity: the DWS node pool at its maximum (``NodepoolSizeReached``), the cloud's stock-outs, a first
flavor left idle while jobs waited for a later one's provisioning, and the rest of the wait in DWS's queue.
Must not import flexq.http."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from flexq.simulate.causes.configuration import fallback_idle
from flexq.simulate.causes.evidence import (
    FALLBACK_ON,
    check_for_flavor,
    first_flavors,
    flavor_of_pool,
    nodes_over_time,
    option,
    peak_overlap,
    plural,
    pool_chips,
    primary,
    retry_limit,
    round_up,
    run_usage_nominal,
    time_at_least,
    to_hours,
)
from flexq.simulate.records import TPU, WAIT_BUCKETS
from flexq.simulate.run_result import RunResult


def nodepool_size_reached(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
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
    k = peak_overlap(per_pool[pool])
    at_max = time_at_least(nodes_over_time(run, pool), max(1, m - hosts + 1), run.horizon)
    lost = [r for r in hit if primary(r) == "NodepoolSizeReached"]
    wait = sum(r["wait_censored"] for r in hit)
    target = round_up(m + k, hosts)
    flavor = flavor_of_pool(run, pool)
    cq = next((r["cluster_queue"] for r in hit if r["cluster_queue"]), "")
    check = check_for_flavor(run, cq, flavor) if flavor else None
    options = [
        option(
            f"raise {pool}'s max nodes from {m} to {target}",
            {"kind": "poolMax", "pool": pool, "value": target},
        )
    ]
    if check is not None:
        limit, where_set = retry_limit(check[1])
        more = max(limit * 2, limit + 3)
        options.append(
            option(
                f"raise {where_set} from {limit} to {more}, so Kueue keeps retrying until the pool has room",
                {"kind": "retryLimit", "config": check[1]["config"], "value": more},
            )
        )
    lost_text = (
        f"{plural(len(lost), 'job')} deactivated by Kueue after their ProvisioningRequests failed with "
        f"NodepoolSizeReached ({failures} failures in all)"
        + (f", {len(hit) - len(lost)} more delayed by it" if len(hit) > len(lost) else "")
        if lost
        else f"{plural(len(hit), 'job')} delayed by ProvisioningRequests failed with NodepoolSizeReached"
    )
    return {
        "code": "NodepoolSizeReached",
        "title": f"{pool} full: DWS ProvisioningRequests refused",
        "jobsLost": len(lost),
        "jobsDelayed": len(hit) - len(lost),
        "waitHours": to_hours(wait),
        "evidence": (
            f"{lost_text}; {pool} sat at its max of {m} nodes "
            f"for {to_hours(at_max)} h while up to {k} more nodes were asked for"
        ),
        "options": options,
    }


def stockout(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
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
    flavor = flavor_of_pool(run, pool) or "its flavor"
    pool = pool or "its node pool"
    lost = [r for r in hit if primary(r) == "StockOut"]
    if run.fallback:
        used = {f"{r['namespace']}/{r['queue']}" for r in hit}
        if not run.fallback_all_queues and not any(run.local_queues.get(q) for q in used):
            # on, but it cannot act: no LocalQueue these jobs use opted in (the preflight says so too)
            return fallback_idle(run, hit, lost, wait, flavor)
        options = [
            option(
                "let flexq's fallback act sooner on refused capacity (grace_seconds 60 -> 30)",
                {"kind": "setting", "path": "fallback.grace_seconds", "value": 30},
            )
        ]
    else:
        options = [
            option(
                f"move jobs waiting on {flavor} to the next flavor: " + FALLBACK_ON,
                {"kind": "fallback", "value": True},
            )
        ]
    return {
        "code": "StockOut",
        "title": f"stock-outs on {flavor}",
        "jobsLost": len(lost),
        "jobsDelayed": len(hit) - len(lost),
        "waitHours": to_hours(wait),
        "evidence": (
            f"{plural(len(hit), 'admitted job')} waited {to_hours(wait)} h in all with pods the cloud refused capacity "
            f"on {flavor} ({pool}: a stock-out or GCE quota); Kueue keeps a job on the flavor it admitted it on"
            + (
                f"; flexq's fallback was on and acted {sum(run.fallback_actions.values())} times"
                if run.fallback
                else ""
            )
        ),
        "options": options,
    }


def idle_preferred(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Job-hours spent waiting on a later flavor's admission check while the first flavor had room."""
    firsts = first_flavors(run, TPU)
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
        usage = min(run_usage_nominal(run, key), pool_chips(run, first))  # what its quota and pool hold
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
        "options": []
        if run.fallback
        else [
            option(
                f"let waiting jobs go back to {flavor} when it frees (the fallback hedges back when the flavor's "
                "nodes can take the job): " + FALLBACK_ON,
                {"kind": "fallback", "value": True},
            )
        ],
    }


def dws_queue(run: RunResult, rows: list[dict[str, Any]], taken: float) -> dict[str, Any] | None:
    hit = [r for r in rows if r["wait_dws"] > 0]
    wait = sum(r["wait_dws"] for r in hit) - taken * 3600
    if not hit or wait < 3600:
        return None
    return {
        "code": "DWSQueue",
        "title": "the DWS queue",
        "jobsLost": 0,
        "jobsDelayed": len(hit),
        "waitHours": to_hours(wait),
        "evidence": (
            f"{plural(len(hit), 'job')} waited {to_hours(sum(r['wait_dws'] for r in hit))} h in all for their "
            "ProvisioningRequests to be provisioned (the cloud's queue for flex-start capacity)"
        ),
        "note": "the DWS wait itself is the cloud's: more plan-A capacity shortens it, at on-demand prices",
        "options": [],
    }
