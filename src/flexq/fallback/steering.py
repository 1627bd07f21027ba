"""Steering new jobs while a flavor is stocked out, and keeping its nodes.

- **Steer**: a pending workload (no quota yet) headed first for a stocked-out flavor gets the restriction before
  it is admitted, so Kueue admits it on the next flavor — only when that flavor can take it now (not stocked
  out, not full), and never a job Kueue is preempting for or could admit there by preempting lower-priority jobs
  (``priorities.may_preempt``); a steered job whose flavor is back has the restriction lifted (``unsteer``).
- **Caps**: Kueue reserves quota the moment a Workload is created, before a pass could steer it; so while a
  flavor's backoff runs, the ClusterQueue's nominal quota of that flavor is capped to what its nodes up hold
  (idle ones, and those running jobs that will leave them): a new job gets the flavor only if a node of it can
  take it, and otherwise goes straight to the next flavor. The ClusterQueues of a cohort share those nodes (each
  its part, by the admin's quotas), so the cohort's capped quotas add up to what the nodes hold. Not when the next flavor is full: then jobs stay
  where they lose nothing. The admin's figures wait in the ClusterQueue's ``fallback.flexq.dev/quota``
  annotation and are put back when the backoff ends or the breaker closes.
- **Keep**: during a stock-out a node of the flavor that empties cannot be replaced: it is kept from the cluster
  autoscaler's scale-down (``cluster-autoscaler.kubernetes.io/scale-down-disabled``) while busy and for
  ``keep_idle_seconds`` once idle, for the next job; released when that time is up or the stock-out is over.
  Nodes the policy did not annotate are never touched.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from typing import Any

from flexq.clock import format_duration
from flexq.fallback.affinity import restricted_flavors
from flexq.fallback.context import PassContext
from flexq.fallback.model import ANN_KEPT, ANN_MOVE, ANN_MOVED, ANN_QUOTA, SCALE_DOWN_DISABLED
from flexq.fallback.moves import probe
from flexq.fallback.priorities import may_preempt, preempting_for
from flexq.fallback.records import move_state, saved_quotas, suspended
from flexq.fallback.view import WorkloadView, quantity
from flexq.semantics.resources import pod_requests

__all__ = ["steer", "caps", "keep_nodes"]


def _first_flavors(ctx: PassContext, w: WorkloadView) -> list[str]:
    """The flavors the workload's pod sets would try first (Kueue scans a group's flavors in order)."""
    cq = ctx.view.cqs.get(w.cq) or {}
    out = []
    wants: set[str] = set()
    for ps in (w.obj.get("spec") or {}).get("podSets") or []:
        wants |= {r for r, q in pod_requests((ps.get("template") or {}).get("spec") or {}).items() if q > 0}
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        covered = set(rg.get("coveredResources") or [])
        if covered & wants and rg.get("flavors"):
            out.append(rg["flavors"][0].get("name"))
    return out


def steer(ctx: PassContext) -> None:
    view = ctx.view
    for w in view.workloads:
        if w.job is None or not w.current or w.job in ctx.touched or w.reserved or not w.active:
            continue
        job = view.job(w)
        if job is None or not suspended(job):
            continue
        restricted = restricted_flavors(job, view.flavors)
        back = sorted(f for f in restricted if f not in ctx.breakers)
        if back and move_state(job).get("steered"):
            _unsteer(ctx, w, job, back)
            continue
        for flavor in _first_flavors(ctx, w):
            b = ctx.breakers.get(flavor)
            if b is None or flavor in restricted:
                continue
            victims = may_preempt(ctx, w, flavor)
            if preempting_for(w) or victims:
                # Kueue admits it on the flavor by preempting lower-priority jobs (their nodes are its): never
                # sent to plan B instead
                names = ", ".join(sorted(x.key for x in victims)[:3]) or "lower-priority jobs"
                ctx.note(w, f"Kueue may admit it on {flavor} by preempting {names}: not steered to plan B")
                break
            if probe(ctx, flavor, w):
                continue
            pod_sets = [ps.get("name", "") for ps in (w.obj.get("spec") or {}).get("podSets") or []]
            target = ctx.next_flavor(w, {flavor}, sum(c for c, _t in w.pod_set_needs(pod_sets)))
            if target is None:
                continue  # every other plan is blocked: Kueue decides
            if not ctx.worth_moving(target, ctx.now - b.since, flavor):
                ctx.wakeups.append(_reconsider(ctx, target, ctx.now - b.since, flavor))
                continue  # the next plan is slower than the stock-out so far: Kueue decides
            msg = f"{flavor} stocked out ({b.code}) since {format_duration(ctx.now - b.since)} ago → steered to {target}"
            ctx.act("steer", w.key, msg)
            move = {
                "from": flavor,
                "to": target,
                "podSets": pod_sets,
                "step": "moved",
                "steered": True,
                "code": b.code,
                "since": b.since,
                "at": ctx.now,
            }
            if ctx.writer.restrict(
                job,
                view.flavors,
                flavor,
                pod_sets,
                {ANN_MOVE: json.dumps(move, sort_keys=True), ANN_MOVED: msg},
            ):
                ctx.writer.counts["steer"] += 1
                ctx.writer.delete_workload(w)
                ctx.writer.emit(job, "Normal", "FallbackSteered", msg)
            break


def _reconsider(ctx: PassContext, target: str, age: float, flavor: str) -> float:
    """When a move to ``target`` not worth it now (``PassContext.worth_moving``) is worth looking at again: once the
    stock-out has cost what ``target`` provisions in, or what is left of it by the past ones has passed."""
    expected = ctx.expected_wait.get(target, 0.0)
    if age < expected:
        return ctx.now - age + expected
    return ctx.now + ctx.stockout_left.get(flavor, 0.0)


def _unsteer(ctx: PassContext, w: WorkloadView, job: Any, flavors: list[str]) -> None:
    """A pending job steered away from flavors that are back: drop the restriction, let Kueue rescan."""
    msg = f"{', '.join(flavors)} has capacity again: restriction removed"
    ctx.act("unsteer", w.key, msg)
    if ctx.writer.unrestrict(job, ctx.view.flavors, flavors, {ANN_MOVE: None, ANN_MOVED: None}):
        ctx.writer.delete_workload(w)
        ctx.writer.emit(job, "Normal", "FallbackUnsteered", msg)


def _fmt(q: Fraction) -> str:
    """A quantity as Kubernetes writes it (whole numbers plain, the rest in milli-units, rounded down)."""
    if q.denominator == 1:
        return str(q.numerator)
    return f"{int(q * 1000)}m"


def _next_in_group(ctx: PassContext, rg: dict[str, Any], flavor: str) -> str | None:
    """The next flavor a capped job would go to: not stocked out, not full, and worth it for a stock-out this
    old (``PassContext.worth_moving``)."""
    names = [f.get("name") for f in rg.get("flavors") or []]
    b = ctx.breakers.get(flavor)
    age = ctx.now - b.since if b is not None else 0.0
    for f in names[names.index(flavor) + 1 :]:
        if f not in ctx.breakers and not ctx.full(f):
            if ctx.worth_moving(f, age, flavor):
                return f
            ctx.wakeups.append(_reconsider(ctx, f, age, flavor))
            return None
    return None


def _admin_quota(ctx: PassContext, cq_name: str, flavor: str) -> dict[str, Fraction]:
    """The admin's nominal quota of ``flavor`` in the ClusterQueue (what a cap saved, else what it says)."""
    cq = ctx.view.cqs.get(cq_name) or {}
    saved = saved_quotas(cq).get(flavor) or {}
    out: dict[str, Fraction] = {}
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        for f in rg.get("flavors") or []:
            if f.get("name") == flavor:
                for r in f.get("resources") or []:
                    out[r.get("name", "")] = Fraction(
                        quantity(saved.get(r.get("name", ""), r.get("nominalQuota")))
                    )
    return out


def _cohort_share(ctx: PassContext, cq_name: str, flavor: str, resource: str) -> Fraction:
    """The ClusterQueue's share of what a capped flavor's nodes hold: in a cohort (a ClusterQueue borrows its
    cohort's unused quota), its part of the in-scope members' quotas of the flavor, so the cohort's capped quotas
    add up to the nodes up; alone, all of it."""
    members = [m for m in ctx.view.cohort_members(cq_name) if m in set(ctx.view.queues.values())]
    if len(members) < 2:
        return Fraction(1)
    total = sum((_admin_quota(ctx, m, flavor).get(resource, Fraction(0)) for m in members), Fraction(0))
    mine = _admin_quota(ctx, cq_name, flavor).get(resource, Fraction(0))
    return mine / total if total > 0 else Fraction(1)


def caps(ctx: PassContext) -> None:
    """See the module docstring."""
    capacity: dict[str, dict[str, Any]] = {}
    for name in sorted(set(ctx.view.queues.values())):
        cq = ctx.view.cqs.get(name)
        if cq is None:
            continue
        saved = saved_quotas(cq)
        # read, not copied (every pass, every ClusterQueue): the ClusterQueue is copied once a write is due
        groups = (cq.get("spec") or {}).get("resourceGroups") or []
        changed: list[str] = []
        quotas: list[tuple[int, int, int, Any]] = []  # (group, flavor, resource) -> the nominal quota wanted
        for gi, rg in enumerate(groups):
            for fi, f in enumerate(rg.get("flavors") or []):
                flavor = f.get("name", "")
                b = ctx.breakers.get(flavor)
                capped = (
                    b is not None
                    and b.open(ctx.now)
                    and bool(ctx.view.flavors.get(flavor))
                    and _next_in_group(ctx, rg, flavor) is not None
                )
                orig = saved.get(flavor) or {}
                if not capped and not orig:
                    continue
                if flavor not in capacity and capped:
                    capacity[flavor] = ctx.view.capacity_of(flavor)
                for ri, r in enumerate(f.get("resources") or []):
                    rname = r.get("name", "")
                    if capped:
                        base = orig.get(rname, r.get("nominalQuota"))
                        cap = capacity[flavor].get(rname, Fraction(0)) * _cohort_share(
                            ctx, name, flavor, rname
                        )
                        want = base if quantity(base) <= cap else _fmt(Fraction(cap))
                        if rname not in orig:
                            orig[rname] = base
                    else:
                        want = orig.get(rname, r.get("nominalQuota"))
                    if str(r.get("nominalQuota")) != str(want):
                        quotas.append((gi, fi, ri, want))
                        changed.append(f"{flavor}/{rname} {want}")
                if capped:
                    saved[flavor] = orig
                else:
                    saved.pop(flavor, None)
        anns = dict(cq["metadata"].get("annotations") or {})
        before = anns.get(ANN_QUOTA)
        if saved:
            anns[ANN_QUOTA] = json.dumps(saved, sort_keys=True)
        else:
            anns.pop(ANN_QUOTA, None)
        if not changed and anns.get(ANN_QUOTA) == before:
            continue
        new = copy.deepcopy(dict(cq))
        new["metadata"]["annotations"] = anns
        for gi, fi, ri, want in quotas:
            new["spec"]["resourceGroups"][gi]["flavors"][fi]["resources"][ri]["nominalQuota"] = want
        if changed:
            ctx.act("quota", name, "nominal quota " + ", ".join(changed))
        out = ctx.writer.replace(new)
        if out is not None:
            ctx.view.cqs[name] = out


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def keep_nodes(ctx: PassContext) -> None:
    """See the module docstring."""
    view = ctx.view
    if not ctx.breakers and not any(ANN_KEPT in (n["metadata"].get("annotations") or {}) for n in view.nodes):
        return
    if ctx.breakers and ctx.cfg.keep_idle_seconds > 0:
        ctx.wakeups.append(ctx.now + ctx.cfg.keep_idle_seconds)  # a kept node's idle time may run out by then
    busy = view.busy_nodes
    for flavor, labels in sorted(view.flavors.items()):
        if not labels:
            continue
        out = flavor in ctx.breakers and ctx.cfg.keep_idle_seconds > 0
        for n in view.nodes_of(flavor):
            md = n["metadata"]
            ann = md.get("annotations") or {}
            kept = ann.get(ANN_KEPT)
            if kept is None and ann.get(SCALE_DOWN_DISABLED) == "true":
                continue  # the admin's own: never touched
            if not out:
                if kept is not None:
                    if kept != "released":
                        ctx.act("release", md["name"], "released to the cluster autoscaler's scale-down")
                    ctx.writer.annotate_node(md["name"], {ANN_KEPT: None, SCALE_DOWN_DISABLED: None})
                continue
            if md["name"] in busy:
                want: str | None = ""
            elif kept in (None, "released"):
                want = None if kept == "released" else repr(ctx.now)  # (released: idle, left to scale-down)
            else:
                want = kept or repr(ctx.now)
                if ctx.now - (_float(want) or ctx.now) >= ctx.cfg.keep_idle_seconds:
                    ctx.act("release", md["name"], "released to the cluster autoscaler's scale-down")
                    ctx.writer.annotate_node(md["name"], {ANN_KEPT: "released", SCALE_DOWN_DISABLED: None})
                    continue
            if want is not None and (kept != want or ann.get(SCALE_DOWN_DISABLED) != "true"):
                if kept in (None, "released"):
                    ctx.act("keep", md["name"], "stocked-out flavor: kept from scale-down")
                ctx.writer.annotate_node(md["name"], {ANN_KEPT: want, SCALE_DOWN_DISABLED: "true"})
