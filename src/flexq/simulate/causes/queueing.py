"""Causes of Kueue: waitForPodsReady's evictions and requeuing limit, the wait for ClusterQueue quota, a quota
larger than its node pool holds, and what the Kueue release does with an admission check in ``Retry``
(kueue#18785). Must not import flexq.http."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.errors import Invalid
from flexq.simulate.causes.evidence import (
    FALLBACK_ON,
    first_flavors,
    num,
    option,
    plural,
    pool_of_flavor,
    primary,
    retry_limit,
    retrying,
    round_up,
    run_usage_nominal,
    to_hours,
)
from flexq.simulate.records import TPU, WAIT_BUCKETS
from flexq.simulate.run_result import RunResult


def pods_ready(run: RunResult, rows: list[dict[str, Any]], kueue: dict[str, Any]) -> dict[str, Any] | None:
    evicted = sum(reasons.get("PodsReadyTimeout", 0) for reasons in run.evictions.values())
    limited = [r for r in rows if primary(r) == "PodsReadyTimeout"]
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
    options = []
    if timeout and p95 * 1.5 > timeout:
        want = math.ceil(p95 * 1.5 / 300) * 300
        options.append(
            option(
                f"raise Kueue's waitForPodsReady.timeout from {int(timeout // 60)}m to {int(want // 60)}m",
                {"kind": "podsReadyTimeout", "value": f"{int(want // 60)}m"},
            )
        )
    if stock and not run.fallback:
        options.append(
            option(
                "move the jobs off the stocked-out flavor instead of evicting and re-admitting them on it: "
                + FALLBACK_ON,
                {"kind": "fallback", "value": True},
            )
        )
    return {
        "code": "PodsReadyTimeout",
        "title": "waitForPodsReady evictions",
        "jobsLost": len(limited),
        "jobsDelayed": len(victims) - len(limited),
        "waitHours": to_hours(wait),
        "evidence": (
            f"Kueue evicted {plural(evicted, 'workload')} with PodsReadyTimeout (timeout {int(timeout // 60)}m)"
            + (f" and deactivated {plural(len(limited), 'job')} past the requeuing limit" if limited else "")
            + f"; {stock} of the evicted jobs were waiting on refused capacity; where the cloud gave the nodes, "
            f"pods were ready {p95 / 60:.0f} min (p95) after admission"
        ),
        "options": options,
    }


def _queue_of(run: RunResult, r: dict[str, Any]) -> str:
    """The ClusterQueue a job waited in: the one that reserved its quota, else its LocalQueue's."""
    return str(r["cluster_queue"] or run.queue_cq.get(f"{r['namespace']}/{r['queue']}", ""))


def _at_once_p95(rows: list[dict[str, Any]], horizon: float) -> int:
    """How many of ``rows`` waited at once, p95 over the changes: each from its submission to its first
    admission (the end, never admitted)."""
    edges = sorted(
        [(r["submit"], 1) for r in rows]
        + [(r["admitted"] if r["admitted"] is not None else max(horizon, r["submit"]), -1) for r in rows]
    )
    n, counts = 0, []
    for _t, d in edges:
        n += d
        counts.append(n)
    counts.sort()
    return counts[int(0.95 * (len(counts) - 1))] if counts else 0


def quota(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ClusterQueue, flavor and resource whose quota its jobs waited for longest in all (Kueue's message
    names the flavor and resource; the job's ClusterQueue says whose quota), and how much more would have let
    them in: the change is made to that ClusterQueue, sized by its own jobs."""
    per_key: dict[tuple[str, str], float] = defaultdict(float)
    waited: dict[tuple[str, str], dict[int, dict[str, Any]]] = defaultdict(dict)  # the jobs, by id
    unkeyed: dict[str, list[tuple[dict[str, Any], float]]] = defaultdict(list)
    for r in rows:
        cq = _queue_of(run, r)
        keyed = r.get("quota_waits") or {}
        for k, v in keyed.items():
            per_key[(cq, k)] += v
            waited[(cq, k)][id(r)] = r
        # time waited for quota before Kueue said which (a job behind its queue's head gets no message)
        rest = float(r["wait_quota"] or 0.0) - sum(keyed.values())
        if rest > 1e-9:
            unkeyed[cq].append((r, rest))
    for cq, waits in unkeyed.items():  # counted for the quota its ClusterQueue's jobs were told they lack
        told = [k for c, k in per_key if c == cq]
        if told:
            k = max(told, key=lambda k: (per_key[(cq, k)], k))
            for r, rest in waits:
                per_key[(cq, k)] += rest
                waited[(cq, k)][id(r)] = r
    if not per_key:
        return None
    cq, key = max(per_key, key=lambda k: (per_key[k], k))
    wait = per_key[(cq, key)]
    if wait < 600:
        return None
    mine = list(waited[(cq, key)].values())
    flavor, resource = key.split("/", 1)
    nominal = run_usage_nominal(run, f"{cq}/{flavor}/{resource}")
    sizes = sorted(r["size"] for r in mine if r["size"] > 0) if resource == TPU else []
    step = sizes[len(sizes) // 2] if sizes else max(1.0, nominal * 0.25)
    if all(_queue_of(run, r) == cq for r in rows if r.get("quota_waits") or r["wait_quota"]):
        # every job that waited for quota waited in this ClusterQueue: the run's own count of jobs waiting
        quota_idx, evicted_idx = WAIT_BUCKETS.index("quota"), WAIT_BUCKETS.index("evicted")
        waiting = sorted(c[quota_idx] + c[evicted_idx] for _t, c in run.waiting) or [0]
        p95 = waiting[int(0.95 * (len(waiting) - 1))]
    else:
        p95 = _at_once_p95(mine, run.horizon)
    add = max(step, math.ceil(max(1, p95) / 2) * step)
    target = nominal + add
    knobs: list[dict[str, Any]] = [
        {
            "kind": "nominalQuota",
            "clusterQueue": cq,
            "flavor": flavor,
            "resource": resource,
            "value": num(target),
        }
    ]
    change = f"raise {cq}'s {flavor} {resource} nominalQuota from {num(nominal)} to {num(target)}"
    pool = pool_of_flavor(run, flavor)
    info = run.pools.get(pool) or {}
    if resource == TPU and info.get("chipsPerNode"):
        nodes = round_up(int(math.ceil(target / info["chipsPerNode"])), int(info.get("hosts") or 1))
        if nodes > int(info.get("max") or 0):
            knobs.append({"kind": "poolMax", "pool": pool, "value": nodes})
            change += f" and {pool}'s max nodes from {info.get('max')} to {nodes}"
    lost = [r for r in mine if primary(r) == "QuotaWait"]
    others = len({c for c, k in per_key if k == key and c != cq and per_key[(c, k)] >= 600})
    return {
        "code": "QuotaWait",
        "title": f"waiting for {flavor} {resource} quota",
        "jobsLost": len(lost),
        "jobsDelayed": len(mine) - len(lost),
        "waitHours": to_hours(wait),
        "evidence": (
            f"{plural(len(mine), 'job')} of {cq} waited {to_hours(wait)} h in all for quota: Kueue said insufficient "
            f"quota for {resource} in flavor {flavor} ({cq} nominal {num(nominal)}); up to {p95} of them waited "
            "at once (p95)"
            + (f"; {plural(others, 'other ClusterQueue')} waited 10 min or more for it too" if others else "")
        ),
        "options": [{"change": change, "knobs": knobs}],
    }


def quota_over_pool(run: RunResult, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A flavor whose accelerator quota is more than its node pool can hold: Kueue admits jobs there that wait
    for nodes the pool cannot add (and, with waitForPodsReady, are evicted and admitted there again)."""
    hit = [r for r in rows if r["wait_poolMax"] > 0]
    worst = None
    for cq, flavors in sorted(first_flavors(run, TPU).items()):
        for flavor in flavors:
            nominal = run_usage_nominal(run, f"{cq}/{flavor}/{TPU}")
            pool = pool_of_flavor(run, flavor)
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
    lost = [r for r in mine if primary(r) == "QuotaOverPool"]
    nodes = round_up(int(math.ceil(nominal / info["chipsPerNode"])), int(info.get("hosts") or 1))
    return {
        "code": "QuotaOverPool",
        "title": f"{flavor} quota larger than {pool}",
        "jobsLost": len(lost),
        "jobsDelayed": len(mine) - len(lost),
        "waitHours": to_hours(wait),
        "evidence": (
            f"{cq}'s {flavor} {TPU} quota is {num(nominal)} but {pool} holds at most {holds} "
            f"({info.get('max')} nodes x {info['chipsPerNode']} chips): {plural(len(mine), 'job')} admitted there "
            f"waited {to_hours(wait)} h in all for nodes the pool could not add (max node group size reached)"
        ),
        "options": [
            option(
                f"lower {cq}'s {flavor} {TPU} nominalQuota from {num(nominal)} to {holds} (Kueue then sends the "
                "rest to the next flavor)",
                {
                    "kind": "nominalQuota",
                    "clusterQueue": cq,
                    "flavor": flavor,
                    "resource": TPU,
                    "value": holds,
                },
            ),
            option(
                f"raise {pool}'s max nodes from {info.get('max')} to {nodes}",
                {"kind": "poolMax", "pool": pool, "value": nodes},
            ),
        ],
    }


def retry_check(run: RunResult, rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any], list[str]] | None:
    """The admission check with a ProvisioningRequestConfig that the run's jobs retried on (name, detail, the
    flavors it applies to)."""
    for cq in sorted({r["cluster_queue"] for r in rows if r["cluster_queue"]} | set(run.queues)):
        for name, flavors in sorted(((run.queues.get(cq) or {}).get("checks") or {}).items()):
            detail = run.checks.get(name) or {}
            if retrying(detail):
                return name, detail, list(flavors)
    return None


def release(run: RunResult, rows: list[dict[str, Any]], kueue: dict[str, Any]) -> dict[str, Any] | None:
    """What the run's Kueue release did with checks in Retry (see the module docstring; kueue#18785)."""
    release = str(kueue.get("release") or run.kueue.get("release") or "")
    found = retry_check(run, rows)
    if not release or found is None:
        return None
    check, detail, on = found
    limit, where_set = retry_limit(detail)
    where = f"flavor {', '.join(on)} only" if on else "every flavor"
    try:
        at_once = resolve_kueue(release).retry_evicts_at_once
    except Invalid:  # a release the twin does not model: say nothing about it
        return None
    if not at_once:
        held = [r for r in rows if r.get("retry_hold", 0) > 0]
        if not held:
            return None
        hours = sum(r["retry_hold"] for r in held)
        flavors = sorted({f for r in held for f in r.get("retry_hold_flavors") or []})
        # evicted by the check more often than its limit allows, and not deactivated: the count started again
        retried = [r for r in held if r.get("check_evictions", 0) > limit and not r["lost"]]
        lost = [r for r in held if r["lost"] and not primary(r)]  # one cause per lost job: the unclaimed ones
        return {
            "code": "RetryHoldsQuota",
            "title": f"Kueue {release}: quota held through {check}'s retry back-off",
            "jobsLost": len(lost),
            "jobsDelayed": len(held) - len(lost),
            "waitHours": to_hours(hours),
            "evidence": (
                f"{plural(len(held), 'job')} held {'/'.join(flavors) or 'their'} quota for {to_hours(hours)} h in all "
                f"while {check} waited out its retry back-off: Kueue {release} keeps the quota until the "
                f"back-off ends, then evicts. The check applies to {where}, so it goes with the quota unless the "
                f"job is admitted again at once, and its retry count starts again: {plural(len(retried), 'job')} "
                f"were evicted for it more than backoffLimitCount ({limit}) times and kept retrying"
                + (f"; {len(lost)} still reached the limit" if lost else "")
            ),
            "change": (
                "Kueue 0.20.7 releases the quota at once (kueue#18785) and keeps the retry count through the "
                f"back-off, so after {limit} failed retries a job is deactivated: before upgrading, raise "
                f"{where_set} (or the pool's "
                "max nodes) if these jobs must keep retrying"
            ),
            "knobs": [],
        }
    ended = [
        r
        for r in rows
        if r["lost"] and r.get("reason") == "DeactivatedDueToAdmissionCheck" and r.get("pr_failures", 0) > 0
    ]
    if not ended:
        return None
    # one cause per lost job: a job whose requests failed for a reason of their own (NodepoolSizeReached) is
    # counted there; this cause counts the rest, and says how many in all the retry limit ended
    lost = [r for r in ended if not primary(r)]
    elsewhere = len(ended) - len(lost)
    return {
        "code": "RetryLimitKept",
        "title": f"Kueue {release}: {check}'s retry limit ends jobs",
        "jobsLost": len(lost),
        "jobsDelayed": 0,
        "waitHours": to_hours(sum(r["wait_censored"] for r in ended)),
        "evidence": (
            f"{plural(len(ended), 'job')} deactivated after {check} used up backoffLimitCount ({limit})"
            + (
                f" ({elsewhere} of them counted under the cause of their requests' failures)"
                if elsewhere
                else ""
            )
            + f": Kueue "
            f"{release} evicts at once on a Retry (kueue#18785) and keeps the check, with its retry count, through "
            f"the back-off spent without quota. Kueue 0.19 holds the quota through each back-off instead, and the "
            f"check, which applies to {where}, is dropped with its count whenever a job gives the quota back and "
            "is not admitted again at once (a `kueue: 0.19.2` variant shows how many more would keep retrying)"
        ),
        "change": (
            f"raise {where_set} (now {limit}) or "
            "its backoffBaseSeconds so the retries outlast the pool's busy spells, or raise the node pool's max"
        ),
        "knobs": [{"kind": "retryLimit", "config": detail["config"], "value": max(limit * 2, limit + 3)}],
    }
