"""What the cluster says about each flavor's capacity, and what the policy remembers of it.

Two kinds of evidence, read from one ``ClusterView``, each classified by ``flexq.api.reasons.classify_capacity``
(the same reading ``flexq status`` shows):

- **Stock-outs** (a ``Breaker`` per flavor): the pods of a workload admitted on the flavor are unschedulable and
  the cluster autoscaler said why with a capacity refusal (a stock-out such as ``ZONE_RESOURCE_POOL_EXHAUSTED`` or
  GCE quota; its backoff message counts for a flavor already known to be out), or a capacity-checking
  provisioning admission check on the flavor (not DWS's queued provisioning) is Retry/Rejected. Evidence older
  than the grace period trips the flavor's breaker; a probe that fails doubles its backoff; the first node of the
  flavor created since the stock-out began closes it.
- **Headroom** (a ``Full`` per flavor): the flavor's node pool refused to grow because it is at its maximum
  size — a ProvisioningRequest failed with ``NodepoolSizeReached`` (Kueue quotes it in the admission check and in
  the Evicted or deactivation message) or the autoscaler said ``max node group size reached``. Nothing is moved,
  steered or rescued onto a full flavor until it has room again: a node of its pool went away (or, with a known
  maximum, the pool has room for the job).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from flexq.api.reasons import classify_capacity
from flexq.clock import format_duration, parse_time_or_none
from flexq.fallback.model import DWS_CLASS, Action, Breaker, FallbackConfig, Full
from flexq.fallback.view import ClusterView, WorkloadView

__all__ = ["Evidence", "gather", "update_breakers", "recoveries", "update_fulls", "has_room"]

_LIMIT = re.compile(r"maximum of (\d+) nodes")


@dataclass
class Evidence:
    """One pass's evidence."""

    # flavor -> earliest (time, code, message, workload) of a stock-out
    stockouts: dict[str, tuple[float, str, str, WorkloadView]] = field(default_factory=dict)
    # workload key -> flavors its own pods were refused capacity on
    stuck: dict[str, set[str]] = field(default_factory=dict)
    # workload key -> when its own pods were first refused capacity (since its admission)
    stuck_since: dict[str, float] = field(default_factory=dict)
    # flavor -> latest (time, message) of a refusal for the pool's size
    full: dict[str, tuple[float, str]] = field(default_factory=dict)


def gather(view: ClusterView, breakers: dict[str, Breaker], cfg: FallbackConfig) -> Evidence:
    ev = Evidence()
    now = view.now
    for w in view.workloads:
        _from_checks(view, w, ev, cfg)
        if not w.assigned or not w.reserved:
            continue
        admitted_at = (
            parse_time_or_none((w.condition("QuotaReserved") or {}).get("lastTransitionTime")) or now
        )
        unscheduled = [
            (pod, f)
            for pod in w.pods
            if not (pod.get("spec") or {}).get("nodeName") and (f := view.pod_flavor(w, pod)) is not None
        ]
        for pod, flavor in unscheduled:
            for event in view.capacity_events.get(pod["metadata"].get("uid") or "", []):
                msg = event.get("message") or ""
                refusal = classify_capacity(msg)
                if refusal is None:
                    continue
                when = (
                    parse_time_or_none(
                        event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
                    )
                    or now
                )
                if refusal.kind == "pool-max":
                    _note_full(ev, flavor, when, msg)
                    continue
                if not refusal.cannot_grow and not (refusal.kind == "backoff" and flavor in breakers):
                    continue
                first = (
                    parse_time_or_none(
                        event.get("firstTimestamp") or event.get("eventTime") or event.get("lastTimestamp")
                    )
                    or now
                )
                first = max(first, admitted_at)
                ev.stuck.setdefault(w.key, set()).add(flavor)
                ev.stuck_since[w.key] = min(ev.stuck_since.get(w.key, first), first)
                code = refusal.code or (breakers[flavor].code if flavor in breakers else "GCE_STOCKOUT")
                if flavor not in ev.stockouts or first < ev.stockouts[flavor][0]:
                    ev.stockouts[flavor] = (first, code, msg, w)
            if cfg.assume_after_seconds is not None and now - admitted_at >= cfg.assume_after_seconds:
                ev.stuck.setdefault(w.key, set()).add(flavor)
                if flavor not in ev.stockouts:
                    ev.stockouts[flavor] = (
                        admitted_at,
                        "Unschedulable",
                        "pods unscheduled since admission",
                        w,
                    )
    return ev


def _note_full(ev: Evidence, flavor: str, when: float, msg: str) -> None:
    if flavor not in ev.full or when > ev.full[flavor][0]:
        ev.full[flavor] = (when, msg)


def _flavors_of_check(view: ClusterView, w: WorkloadView, check: str) -> list[str]:
    cq = view.cqs.get(w.cq) or {}
    strategy = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    rule = next((r for r in strategy if r.get("name") == check), None)
    if rule is None or not rule.get("onFlavors"):
        return sorted({f for fs in w.assigned.values() for f in fs})
    return list(rule["onFlavors"])


def _provisioning_flavors(view: ClusterView, cq_name: str) -> list[str]:
    """The flavors a ClusterQueue runs a provisioning admission check on."""
    cq = view.cqs.get(cq_name) or {}
    strategy = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    out: list[str] = []
    for r in strategy:
        if view.check_classes.get(r.get("name", "")) is not None:
            out += [f for f in r.get("onFlavors") or [] if f not in out]
    return out


def _from_checks(view: ClusterView, w: WorkloadView, ev: Evidence, cfg: FallbackConfig) -> None:
    """The workload's admission checks, its Evicted and deactivation messages: capacity-checking provisioning
    refusals are stock-outs; a pool at its maximum size makes the check's flavors full."""
    now = view.now
    for chk in w.checks():
        msg = chk.get("message") or ""
        if chk.get("state") not in ("Retry", "Rejected") or not msg:
            continue
        refusal = classify_capacity(msg)
        name = chk.get("name", "")
        when = parse_time_or_none(chk.get("lastTransitionTime")) or now
        for flavor in _flavors_of_check(view, w, name):
            if refusal is not None and refusal.kind == "pool-max":
                _note_full(ev, flavor, when, msg)
            elif view.check_classes.get(name) not in (None, DWS_CLASS) and w.assigned:
                code = refusal.code if refusal is not None else "CapacityCheckFailed"
                ev.stuck.setdefault(w.key, set()).add(flavor)
                if flavor not in ev.stockouts:  # a failed capacity check is evidence at once
                    ev.stockouts[flavor] = (now - cfg.grace_seconds, code, msg, w)
    for ctype in ("Evicted", "DeactivationTarget"):
        c = w.condition(ctype)
        if c is None or c.get("status") != "True":
            continue
        refusal = classify_capacity(c.get("message") or "")
        if refusal is not None and refusal.kind == "pool-max":
            for flavor in _provisioning_flavors(view, w.cq):
                _note_full(
                    ev, flavor, parse_time_or_none(c.get("lastTransitionTime")) or now, c.get("message") or ""
                )


def update_breakers(
    view: ClusterView,
    ev: Evidence,
    breakers: dict[str, Breaker],
    cfg: FallbackConfig,
    actions: list[Action],
    wakeups: list[float],
) -> None:
    """Trip a breaker on evidence older than the grace period (evidence still within it: a wake-up when the
    grace period ends); a probe refused again backs the flavor off longer."""
    now = view.now
    for flavor, (first, code, msg, w) in sorted(ev.stockouts.items()):
        wakeups.append(
            first + cfg.grace_seconds
        )  # (passed already: dropped with every wake-up not after now)
        if now - first < cfg.grace_seconds:
            continue
        b = breakers.get(flavor)
        if b is None:
            breakers[flavor] = Breaker(
                since=min(first, now), until=now + cfg.backoff_seconds, code=code, message=msg[:500]
            )
            actions.append(
                Action(
                    "trip",
                    flavor,
                    f"{flavor} stocked out ({code}) since {format_duration(now - min(first, now))} ago; new jobs skip it "
                    f"for {format_duration(cfg.backoff_seconds)}",
                )
            )
        elif b.probe and b.probe == w.ident:
            b.failures += 1
            b.until = now + min(cfg.max_backoff_seconds, cfg.backoff_seconds * 2 ** (b.failures - 1))
            b.probe, b.code = "", code
            actions.append(
                Action(
                    "probe-failed",
                    flavor,
                    f"probe {w.key} found {flavor} still stocked out ({code}); backing off {format_duration(b.until - now)}",
                )
            )


def recoveries(
    view: ClusterView, breakers: dict[str, Breaker], actions: list[Action]
) -> list[tuple[str, Breaker, float]]:
    """A breaker closes on the first scale-up of its flavor that succeeds: a Node with the flavor's labels created
    after the stock-out began (whichever job asked for it). Returns the closed breakers, each with when that node
    was created (the stock-out was over by then)."""
    closed = []
    for flavor, b in sorted(breakers.items()):
        new = [
            n
            for n in view.nodes_of(flavor)
            if (parse_time_or_none(n["metadata"].get("creationTimestamp")) or 0.0) >= b.since
        ]
        if not new:
            continue
        del breakers[flavor]
        node = min(new, key=lambda n: (n["metadata"].get("creationTimestamp") or "", n["metadata"]["name"]))
        actions.append(
            Action(
                "recover",
                flavor,
                f"{flavor} has capacity again (node {node['metadata']['name']} created) after "
                f"{format_duration(view.now - b.since)}; new jobs use it",
            )
        )
        back = parse_time_or_none(node["metadata"].get("creationTimestamp")) or view.now
        closed.append((flavor, b, back))
    return closed


def update_fulls(
    view: ClusterView,
    ev: Evidence,
    fulls: dict[str, Full],
    cfg: FallbackConfig,
    actions: list[Action],
    wakeups: list[float],
) -> None:
    """Mark flavors whose pool refused to grow; clear those that have room again (a node of the pool went away
    since the refusal, or the pool is empty). A refusal older than the last clearing is spent evidence. While a
    flavor is full, it is looked at again every minute (a wake-up)."""
    now = view.now
    for flavor, (when, msg) in sorted(ev.full.items()):
        f = fulls.get(flavor)
        if f is not None and when <= (f.cleared if f.cleared is not None else f.since):
            continue
        m = _LIMIT.search(msg)
        pool = view.pool_of(flavor)
        limit = cfg.pool_limits.get(pool) if pool in cfg.pool_limits else (int(m.group(1)) if m else None)
        nodes = len(view.nodes_of(flavor))
        fulls[flavor] = Full(since=when, nodes=nodes, message=msg[:500], limit=limit)
        if f is None or not f.full:
            actions.append(
                Action(
                    "full",
                    flavor,
                    f"{flavor}'s node pool {pool or '?'} is at its maximum ({nodes} nodes"
                    f"{f' of {limit}' if limit else ''}): nothing is moved there until it has room",
                )
            )
    for flavor, f in sorted(fulls.items()):
        if not f.full:
            if now - (f.cleared or now) > 86400:
                del fulls[flavor]  # long spent
            continue
        if flavor in ev.full and ev.full[flavor][0] >= now - 1:
            continue  # refused just now
        nodes = len(view.nodes_of(flavor))
        if now - f.since >= 60.0 and (nodes < f.nodes or nodes == 0):
            f.cleared = now
            actions.append(Action("room", flavor, f"{flavor}'s node pool has room again ({nodes} nodes)"))
    if any(f.full for f in fulls.values()):
        wakeups.append(now + 60.0)


def has_room(view: ClusterView, fulls: dict[str, Full], flavor: str, nodes_needed: int = 0) -> bool:
    """Whether the flavor can take a job now as far as its pool's size goes."""
    f = fulls.get(flavor)
    if f is None or not f.full:
        return True
    if f.limit is not None and nodes_needed:
        return len(view.nodes_of(flavor)) + nodes_needed <= f.limit and view.now - f.since >= 60.0
    return False
