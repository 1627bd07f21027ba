"""A harness after Kueue's ``pkg/scheduler/preemption/preemption_test.go`` ``TestPreemption`` (and
``preemption_hierarchical_test.go``).

Upstream's table loads ClusterQueues, Cohorts and admitted workloads into a cache, asks
``Preemptor.GetTargets`` for an incoming workload with a given flavor assignment (pod sets, flavors in
``Preempt`` mode, counts), issues the preemptions, and compares the number preempted and every workload
afterwards (``Evicted`` / ``Preempted`` conditions with their reasons and messages); the snapshot must be
left as it was. ``run_preemption`` does the same against flexq's ``KueueCache``, ``get_targets`` and the
scheduler's ``_issue_preemptions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.kueue.cache import KueueCache
from flexq.kueue.flavorassigner import Assignment, FlavorAssignment, Mode, PodSetAssignment, Status
from flexq.kueue.preemption import get_targets
from flexq.kueue.scheduler import Entry, Scheduler
from flexq.kueue.workload import WorkloadInfo
from flexq.semantics.conditions import find_condition
from flexq.store import Store

from .upstream_wrappers import NOW, fake_client_create


@dataclass
class Outcome:
    preempted: int
    conditions: dict[str, dict[str, tuple[str, str]]]  # workload -> type -> (reason, message)
    usage_before: dict
    usage_after: dict


def _assignment(spec: dict) -> Assignment:
    a = Assignment()
    for p in spec["PodSets"]:
        flavors = {
            res: FlavorAssignment(f["Name"], Mode[f["Mode"].upper()]) for res, f in p["Flavors"].items()
        }
        a.podsets.append(PodSetAssignment(p["Name"], flavors, Status(), {}, p.get("Count", 0)))
    return a


def _usage(snap) -> dict:
    out = {n: dict(c.usage) for n, c in snap.cluster_queues.items()}
    out.update({f"cohort/{n}": dict(c.usage) for n, c in snap.cohorts.items()})
    return {k: {fr: v for fr, v in u.items() if v} for k, u in out.items()}


def run_preemption(case: dict, flavors: list[dict], default_cqs: list[dict] = ()) -> Outcome:
    """One table case: ``clusterQueues``, ``cohorts``, ``admitted``, ``incoming``, ``targetCQ``, ``assignment``."""
    clock = VirtualClock(NOW)
    # upstream's fake client holds objects no API server admits ("Admitted-Workload-1"), and so do the Events
    # recorded about them: the writes are not checked (``check_writes``)
    store = Store(
        default_registry(), clock, name="upstream", rng=Random(0), namespaces=("default",), check_writes=False
    )
    objs = [
        *flavors,
        *case.get("cohorts", []),
        *case.get("clusterQueues", default_cqs),
        *case.get("admitted", []),
    ]
    for o in objs:
        fake_client_create(
            store, o, keep_status=True
        )  # upstream's fake client keeps names such as "a_standard"
    cache = KueueCache(store, clock.now)
    cache.start()
    snap = cache.snapshot()
    before = _usage(snap)
    info = WorkloadInfo.from_obj(case["incoming"], cluster_queue=case["targetCQ"])
    targets = get_targets(snap, info, _assignment(case["assignment"]), NOW)
    after = _usage(snap)
    sched = Scheduler(cache, store, cache.events)
    n, failed = sched._issue_preemptions(Entry(info, snap.cq(case["targetCQ"])), targets, snap, NOW)
    assert failed == 0, "Reported failed preemptions, want 0"
    conds = {}
    for w in store.list("Workload"):
        got = {}
        for t in ("Evicted", "Preempted"):
            c = find_condition(w, t)
            if c is not None:
                got[t] = (c.get("reason", ""), c.get("message", ""))
        conds[w["metadata"]["name"]] = got
    return Outcome(n, conds, before, after)


def want_conditions(workloads: list[dict]) -> dict[str, dict[str, tuple[str, str]]]:
    """``wantWorkloads`` reduced to their ``Evicted`` / ``Preempted`` conditions."""
    out = {}
    for w in workloads:
        got = {}
        for c in (w.get("status") or {}).get("conditions") or []:
            if c["type"] in ("Evicted", "Preempted"):
                got[c["type"]] = (c.get("reason", ""), c.get("message", ""))
        out[w["metadata"]["name"]] = got
    return out


def check(case: dict, flavors: list[dict], default_cqs: list[dict] = ()) -> None:
    """Run a case and compare as upstream does."""
    out = run_preemption(case, flavors, default_cqs)
    assert out.conditions == want_conditions(case["wantWorkloads"])
    assert out.preempted == case.get("wantPreempted", 0)
    assert out.usage_after == out.usage_before, "snapshot was modified"
