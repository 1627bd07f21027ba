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
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from flexq.api.kueue_versions import resolve as resolve_kueue
from flexq.errors import Invalid
from flexq.kueue.checks import CheckController, check_controller
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


def _retrying(detail: dict[str, Any] | None) -> CheckController | None:
    """The controller of a check that asks for retries and has a parameters object to set them in (the
    ``retryLimit`` knob's target), from ``kueue.checks``; None for any other check."""
    ctl = check_controller((detail or {}).get("controller"))
    return ctl if ctl is not None and ctl.retries and (detail or {}).get("config") else None


def _retry_limit(detail: dict[str, Any]) -> tuple[int, str]:
    """The check's retry limit, as its controller reads its parameters (the run keeps their retryStrategy), and
    where it is set, in words: ``ProvisioningRequestConfig dws-config's retryStrategy.backoffLimitCount``."""
    ctl = _retrying(detail)
    assert ctl is not None, detail
    field = ".".join(ctl.retry_limit[1:])  # below spec
    return int(ctl.retry({"spec": {"retryStrategy": detail.get("retry")}}).limit), (
        f"{ctl.parameters} {detail['config']}'s {field}"
    )


def _check_for_flavor(run: RunResult, cq: str, flavor: str) -> tuple[str, dict[str, Any]] | None:
    checks = (run.queues.get(cq) or {}).get("checks") or {}
    for name, flavors in sorted(checks.items()):
        if not flavors or flavor in flavors:
            detail = run.checks.get(name)
            if detail and _retrying(detail):
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


OPT_IN_LABEL = "fallback.flexq.dev/enabled"
FALLBACK_ON = (
    "turn on flexq's fallback (settings: {fallback: true}; it acts on the LocalQueues labelled "
    f'{OPT_IN_LABEL}: "true")'
)
# causes that are mistakes of configuration, not of capacity: when one is found, no capacity cause is shown
CONFIG_CODES = ("FailedMount", "CreateContainerConfigError", "InvalidImageName", "FallbackNotOptedIn")
_MISSING = re.compile(r'(configmap|secret) "([^"]+)" not found')
_NO_KEY = re.compile(r"couldn't find key (\S+) in (ConfigMap|Secret) ([^/\s]+)/(\S+)")


def _option(change: str, *knobs: dict[str, Any]) -> dict[str, Any]:
    """One change a cause suggests: its words and the knobs (``flexq.simulate.sweep``'s vocabulary) that make
    it, turned together; ``flexq.simulate.whatif`` runs it before it is shown."""
    return {"change": change, "knobs": list(knobs)}


def _primary(r: dict[str, Any]) -> str:
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


def _pods_cannot_start(run: RunResult, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Jobs whose pods the kubelet could not start (a missing ConfigMap or Secret, an env reference, an image
    reference): one cause per thing missing, with the kubelet's own words and the fix."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("start_errors"):
            what = next(iter(sorted(r["start_errors"], key=lambda k: (-r["start_errors"][k], k))))
            groups[(what, r["namespace"])].append(r)
    out = []
    for (what, ns), hit in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        code, _, message = what.partition(": ")
        events = sum(sum(r["start_errors"].values()) for r in hit)
        lost = [r for r in hit if _primary(r) == code]
        evictions = sum(r["evictions"] for r in hit)
        state = "ContainerCreating" if code == "FailedMount" else code
        options: list[dict[str, Any]] = []
        missing, no_key = _MISSING.search(message), _NO_KEY.search(message)
        if missing is not None:
            kind = "ConfigMap" if missing.group(1) == "configmap" else "Secret"
            name = missing.group(2)
            how = (
                f"kubectl create configmap {name} --from-file=... --dry-run=client -o yaml"
                if kind == "ConfigMap"
                else f"kubectl create secret generic {name} --from-file=... --dry-run=client -o yaml"
            )
            title = f'pods never started: {kind.lower()} "{name}" not found'
            options.append(
                _option(
                    f"create {kind} {name} in namespace {ns}: add it to the study's manifests ({how} > "
                    f"{name}.yaml)",
                    {
                        "kind": "object",
                        "value": _stub(kind, name, ns, run.refs.get(f"{kind}/{ns}/{name}", [])),
                    },
                )
            )
        elif no_key is not None:
            kind, name = no_key.group(2), no_key.group(4)
            title = f"pods never started: {kind} {name} has no key {no_key.group(1)}"
            options.append(
                _option(
                    f"add the key {no_key.group(1)} to {kind} {name} in namespace {ns} (the study's manifests)",
                    {
                        "kind": "object",
                        "value": _stub(
                            kind,
                            name,
                            ns,
                            sorted({no_key.group(1), *run.refs.get(f"{kind}/{ns}/{name}", [])}),
                        ),
                    },
                )
            )
        else:
            title = f"pods never started: {code}"
        out.append(
            {
                "code": code,
                "title": title,
                "config": True,
                "jobsLost": len(lost),
                "jobsDelayed": len(hit) - len(lost),
                "waitHours": _h(sum(r["wait_censored"] for r in hit if r["started"] is None)),
                "evidence": (
                    f"{_plural(len(hit), 'job')}' pods stayed Pending ({state}): the kubelet reported {code}: "
                    f"{message} ({_plural(events, 'Event')})"
                    + (
                        f"; Kueue evicted them {evictions} times in all while they waited"
                        if evictions
                        else ""
                    )
                    + "; no capacity change can start them"
                ),
                "fix": options[0]["change"]
                if options
                else (
                    "fix the image reference in the jobs' template (the kubelet cannot parse it)"
                    if code == "InvalidImageName"
                    else "fix the jobs' template"
                ),
                "options": options,
            }
        )
    return out


def _stub(kind: str, name: str, ns: str, keys: list[str]) -> dict[str, Any]:
    """The smallest object of ``kind`` that lets the kubelet start the pods (a what-if's stand-in for yours)."""
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "data": dict.fromkeys(keys, ""),
    }


def _fallback_idle(
    run: RunResult, hit: list[dict[str, Any]], lost: list[dict[str, Any]], wait: float, flavor: str
) -> dict[str, Any]:
    """flexq's fallback is on in this variant but no LocalQueue the jobs use opted in: it never acted."""
    queues = sorted({f"{r['namespace']}/{r['queue']}" for r in hit})
    return {
        "code": "FallbackNotOptedIn",
        "title": "flexq's fallback is on but no LocalQueue opted in",
        "config": True,
        "jobsLost": len(lost),
        "jobsDelayed": len(hit) - len(lost),
        "waitHours": _h(wait),
        "evidence": (
            f"settings.fallback is on, yet it acted 0 times: it acts only on LocalQueues labelled {OPT_IN_LABEL}: "
            f'"true", and none of {", ".join(queues)} is; {_plural(len(hit), "job")} waited {_h(wait)} h on '
            f"refused capacity on {flavor}"
        ),
        "fix": f'label the LocalQueue(s) {", ".join(queues)} with {OPT_IN_LABEL}: "true"',
        "options": [
            _option(
                f'label the LocalQueue(s) {", ".join(queues)} with {OPT_IN_LABEL}: "true"',
                {"kind": "fallback", "value": True},
            )
        ],
    }


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
    lost = [r for r in hit if _primary(r) == "NodepoolSizeReached"]
    wait = sum(r["wait_censored"] for r in hit)
    target = _round_up(m + k, hosts)
    flavor = _flavor_of_pool(run, pool)
    cq = next((r["cluster_queue"] for r in hit if r["cluster_queue"]), "")
    check = _check_for_flavor(run, cq, flavor) if flavor else None
    options = [
        _option(
            f"raise {pool}'s max nodes from {m} to {target}",
            {"kind": "poolMax", "pool": pool, "value": target},
        )
    ]
    if check is not None:
        limit, where_set = _retry_limit(check[1])
        more = max(limit * 2, limit + 3)
        options.append(
            _option(
                f"raise {where_set} from {limit} to {more}, so Kueue keeps retrying until the pool has room",
                {"kind": "retryLimit", "config": check[1]["config"], "value": more},
            )
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
        "options": options,
    }


def _pods_ready(run: RunResult, rows: list[dict[str, Any]], kueue: dict[str, Any]) -> dict[str, Any] | None:
    evicted = sum(reasons.get("PodsReadyTimeout", 0) for reasons in run.evictions.values())
    limited = [r for r in rows if _primary(r) == "PodsReadyTimeout"]
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
            _option(
                f"raise Kueue's waitForPodsReady.timeout from {int(timeout // 60)}m to {int(want // 60)}m",
                {"kind": "podsReadyTimeout", "value": f"{int(want // 60)}m"},
            )
        )
    if stock and not run.fallback:
        options.append(
            _option(
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
        "waitHours": _h(wait),
        "evidence": (
            f"Kueue evicted {_plural(evicted, 'workload')} with PodsReadyTimeout (timeout {int(timeout // 60)}m)"
            + (f" and deactivated {_plural(len(limited), 'job')} past the requeuing limit" if limited else "")
            + f"; {stock} of the evicted jobs were waiting on refused capacity; where the cloud gave the nodes, "
            f"pods were ready {p95 / 60:.0f} min (p95) after admission"
        ),
        "options": options,
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
    lost = [r for r in hit if _primary(r) == "StockOut"]
    if run.fallback:
        used = {f"{r['namespace']}/{r['queue']}" for r in hit}
        if not run.fallback_all_queues and not any(run.local_queues.get(q) for q in used):
            # on, but it cannot act: no LocalQueue these jobs use opted in (the preflight says so too)
            return _fallback_idle(run, hit, lost, wait, flavor)
        options = [
            _option(
                "let flexq's fallback act sooner on refused capacity (grace_seconds 60 -> 30)",
                {"kind": "setting", "path": "fallback.grace_seconds", "value": 30},
            )
        ]
    else:
        options = [
            _option(
                f"move jobs waiting on {flavor} to the next flavor: " + FALLBACK_ON,
                {"kind": "fallback", "value": True},
            )
        ]
    return {
        "code": "StockOut",
        "title": f"stock-outs on {flavor}",
        "jobsLost": len(lost),
        "jobsDelayed": len(hit) - len(lost),
        "waitHours": _h(wait),
        "evidence": (
            f"{_plural(len(hit), 'admitted job')} waited {_h(wait)} h in all with pods the cloud refused capacity "
            f"on {flavor} ({pool}: a stock-out or GCE quota); Kueue keeps a job on the flavor it admitted it on"
            + (
                f"; flexq's fallback was on and acted {sum(run.fallback_actions.values())} times"
                if run.fallback
                else ""
            )
        ),
        "options": options,
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
        "options": []
        if run.fallback
        else [
            _option(
                f"let waiting jobs go back to {flavor} when it frees (the fallback hedges back when the flavor's "
                "nodes can take the job): " + FALLBACK_ON,
                {"kind": "fallback", "value": True},
            )
        ],
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
    lost = [r for r in rows if _primary(r) == "QuotaWait" and key in (r.get("quota_waits") or {})]
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
        "options": [{"change": change, "knobs": knobs}],
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
    lost = [r for r in mine if _primary(r) == "QuotaOverPool"]
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
        "options": [
            _option(
                f"lower {cq}'s {flavor} {TPU} nominalQuota from {_num(nominal)} to {holds} (Kueue then sends the "
                "rest to the next flavor)",
                {
                    "kind": "nominalQuota",
                    "clusterQueue": cq,
                    "flavor": flavor,
                    "resource": TPU,
                    "value": holds,
                },
            ),
            _option(
                f"raise {pool}'s max nodes from {info.get('max')} to {nodes}",
                {"kind": "poolMax", "pool": pool, "value": nodes},
            ),
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
        "note": "the DWS wait itself is the cloud's: more plan-A capacity shortens it, at on-demand prices",
        "options": [],
    }


def _retry_check(run: RunResult, rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any], list[str]] | None:
    """The admission check with a ProvisioningRequestConfig that the run's jobs retried on (name, detail, the
    flavors it applies to)."""
    for cq in sorted({r["cluster_queue"] for r in rows if r["cluster_queue"]} | set(run.queues)):
        for name, flavors in sorted(((run.queues.get(cq) or {}).get("checks") or {}).items()):
            detail = run.checks.get(name) or {}
            if _retrying(detail):
                return name, detail, list(flavors)
    return None


def _release(run: RunResult, rows: list[dict[str, Any]], kueue: dict[str, Any]) -> dict[str, Any] | None:
    """What the run's Kueue release did with checks in Retry (see the module docstring; kueue#18785)."""
    release = str(kueue.get("release") or run.kueue.get("release") or "")
    found = _retry_check(run, rows)
    if not release or found is None:
        return None
    check, detail, on = found
    limit, where_set = _retry_limit(detail)
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
        lost = [
            r for r in held if r["lost"] and not _primary(r)
        ]  # one cause per lost job: the unclaimed ones
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
    lost = [r for r in ended if not _primary(r)]
    elsewhere = len(ended) - len(lost)
    return {
        "code": "RetryLimitKept",
        "title": f"Kueue {release}: {check}'s retry limit ends jobs",
        "jobsLost": len(lost),
        "jobsDelayed": 0,
        "waitHours": _h(sum(r["wait_censored"] for r in ended)),
        "evidence": (
            f"{_plural(len(ended), 'job')} deactivated after {check} used up backoffLimitCount ({limit})"
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


def causes(run: RunResult, kueue: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The causes that lost the most jobs or cost the most wait in ``run``, most costly first (at most
    ``MAX_CAUSES``). A mistake of configuration (pods the kubelet cannot start; the fallback on with no
    queue opted in) comes alone: a run whose jobs cannot start says nothing about capacity."""
    rows = run.jobs
    config = _pods_cannot_start(run, rows)
    stock = _stockout(run, rows)
    if stock is not None and stock["code"] == "FallbackNotOptedIn":
        config.append(stock)
    if config:
        config.sort(key=lambda c: (-c["jobsLost"], -c["waitHours"], c["code"]))
        return config[:MAX_CAUSES]
    found = [
        c
        for c in (
            _nodepool_size_reached(run, rows),
            _pods_ready(run, rows, kueue or {}),
            stock,
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
