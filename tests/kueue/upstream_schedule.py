"""A one-cycle harness after Kueue's ``pkg/scheduler/scheduler_test.go`` ``TestSchedule``.

Upstream's table runs exactly one ``scheduler.schedule`` over a cache and queue manager fed with the
test's objects, then compares the admissions written, the workloads left in the active heaps
(``wantLeft``) and in the inadmissible lists (``wantInadmissibleLeft``), the preempted workloads and
the condition messages. ``run_cycle`` does the same against flexq's ``KueueCache`` and ``Scheduler``:
the objects go into a store, the cache loads them, one ``Scheduler.cycle`` runs, and a ``Result``
reads the outcome back.

The shared fixture is upstream's: flavors ``default``, ``on-demand``, ``spot``, ``model-a``,
``spot-tainted`` (key=val:NoSchedule), ``spot-tainted-2`` (key=val2:NoSchedule); ClusterQueues
``sales``, ``eng-alpha``, ``eng-beta`` (cohort ``eng``), ``flavor-nonexistent-cq``, ``lend-a``,
``lend-b`` (cohort ``lend``) and their LocalQueues; namespaces labelled ``dep``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from random import Random
from typing import Any

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.kueue.cache import KueueCache
from flexq.kueue.scheduler import Scheduler
from flexq.semantics.conditions import find_condition
from flexq.store import Store

from .kueue_builders import cq, fq, rf, rg
from .upstream_wrappers import fake_client_create

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
TAINT = {"key": "key", "value": "val", "effect": "NoSchedule"}
TAINT2 = {"key": "key", "value": "val2", "effect": "NoSchedule"}


def sel(dep: str) -> dict:
    """``namespaceSelector`` dep In [dep]."""
    return {"matchExpressions": [{"key": "dep", "operator": "In", "values": [dep]}]}


def lq(name: str, ns: str, cq_name: str) -> dict:
    """LocalQueue."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq_name},
    }


FLAVORS = [
    rf("default"),
    rf("on-demand"),
    rf("spot"),
    rf("model-a"),
    rf("spot-tainted", taints=[TAINT]),
    rf("spot-tainted-2", taints=[TAINT2]),
]
ANY_LOWER = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
CLUSTER_QUEUES = [
    cq("sales", rg(fq("default", cpu=("50", "0"))), selector=sel("sales"), strategy="StrictFIFO"),
    cq(
        "eng-alpha",
        rg(fq("on-demand", cpu=("50", "50")), fq("spot", cpu=("100", "0"))),
        cohort="eng",
        selector=sel("eng"),
        strategy="StrictFIFO",
    ),
    cq(
        "eng-beta",
        rg(fq("on-demand", cpu=("50", "10")), fq("spot", cpu=("0", "100"))),
        rg(fq("model-a", **{"example.com/gpu": ("20", "0")})),
        cohort="eng",
        selector=sel("eng"),
        strategy="StrictFIFO",
        preemption=ANY_LOWER,
    ),
    cq("flavor-nonexistent-cq", rg(fq("nonexistent-flavor", cpu="50")), strategy="StrictFIFO"),
    cq("lend-a", rg(fq("default", cpu=("3", None, "2"))), cohort="lend", selector=sel("lend")),
    cq("lend-b", rg(fq("default", cpu=("2", None, "2"))), cohort="lend", selector=sel("lend")),
]
LOCAL_QUEUES = [
    lq("main", "sales", "sales"),
    lq("blocked", "sales", "eng-alpha"),
    lq("main", "eng-alpha", "eng-alpha"),
    lq("main", "eng-beta", "eng-beta"),
    lq("flavor-nonexistent-queue", "sales", "flavor-nonexistent-cq"),
    lq("cq-nonexistent-queue", "sales", "nonexistent-cq"),
    lq("lend-a-queue", "lend", "lend-a"),
    lq("lend-b-queue", "lend", "lend-b"),
]
NAMESPACES = {"sales": "sales", "eng-alpha": "eng", "eng-beta": "eng", "eng-gamma": "eng", "lend": "lend"}


@dataclass
class Result:
    """What one cycle left behind."""

    store: Store
    cache: KueueCache
    sched: Scheduler

    def wl(self, ref: str) -> dict:
        ns, name = ref.split("/", 1)
        return self.store.get("Workload", name, ns)

    def assignments(self) -> dict[str, tuple[str, list[tuple[str, dict[str, str], int]]]]:
        """``wantAssignments``: ns/name -> (ClusterQueue, [(podset, {resource: flavor}, count)])."""
        out = {}
        for w in self.store.list("Workload"):
            adm = (w.get("status") or {}).get("admission")
            c = find_condition(w, "QuotaReserved")
            if adm and c is not None and c["status"] == "True":
                key = f"{w['metadata']['namespace']}/{w['metadata']['name']}"
                out[key] = (
                    adm["clusterQueue"],
                    [(p["name"], p["flavors"], p.get("count", 1)) for p in adm["podSetAssignments"]],
                )
        return out

    def usage(self, ref: str) -> list[dict[str, str]]:
        """``resourceUsage`` of each pod set assignment."""
        return [p["resourceUsage"] for p in self.wl(ref)["status"]["admission"]["podSetAssignments"]]

    def left(self) -> dict[str, list[str]]:
        """``wantLeft``: workloads in the active heaps, per ClusterQueue."""
        return {n: sorted(q.items) for n, q in self.cache.queues.cluster_queues.items() if q.items}

    def inadmissible(self) -> dict[str, list[str]]:
        """``wantInadmissibleLeft``."""
        return {
            n: sorted(q.inadmissible) for n, q in self.cache.queues.cluster_queues.items() if q.inadmissible
        }

    def preempted(self) -> set[str]:
        """``wantPreempted``: workloads with Evicted=True by preemption."""
        return {
            f"{w['metadata']['namespace']}/{w['metadata']['name']}"
            for w in self.store.list("Workload")
            if (find_condition(w, "Preempted") or {}).get("status") == "True"
        }

    def condition(self, ref: str, ctype: str = "QuotaReserved") -> dict | None:
        return find_condition(self.wl(ref), ctype)

    def uid(self, ref: str) -> str:
        return self.wl(ref)["metadata"]["uid"]


def run_cycle(
    workloads: list[dict] = (),
    *,
    extra_cqs: list[dict] = (),
    extra_lqs: list[dict] = (),
    cohorts: list[dict] = (),
    replace_cqs: bool = False,
    extra_flavors: list[dict] = (),
    created: dict[str, float] | None = None,
    cycles: int = 1,
) -> Result:
    """Load upstream's fixture plus the case's objects and run ``cycles`` scheduling cycles at ``NOW``.

    Workloads are created in ``created`` order (seconds relative to ``NOW``, default 0) so that
    creation timestamps are as the case states; ``replace_cqs`` drops the shared ClusterQueues."""
    clock = VirtualClock(NOW)
    # upstream's fake client holds objects no API server admits ("Admitted-Workload-1"), and so do the Events
    # recorded about them: the writes are not checked (``check_writes``)
    store = Store(
        default_registry(), clock, name="upstream", rng=Random(0), namespaces=("default",), check_writes=False
    )
    for ns, dep in NAMESPACES.items():
        fake_client_create(
            store, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"dep": dep}}}
        )
    objs: list[dict[str, Any]] = [
        *FLAVORS,
        *extra_flavors,
        *cohorts,
        *([] if replace_cqs else CLUSTER_QUEUES),
        *extra_cqs,
        *LOCAL_QUEUES,
        *extra_lqs,
    ]
    for o in objs:
        # Upstream's unit tests write through a fake client, without the webhooks: names such as
        # "ClusterQueueA" or "cq_a", and reclaimWithinCohort=Never with borrowWithinCohort, are kept.
        fake_client_create(store, _without_lone_borrowing_limit(o), keep_status=True)
    created = created or {}
    order = sorted(workloads, key=lambda w: created.get(w["metadata"]["name"], 0.0))
    for w in order:
        clock.set(NOW + created.get(w["metadata"]["name"], 0.0) - 10)
        fake_client_create(store, w, keep_status=True)  # as above: "Admitted-Workload-1", "admitted_a"
    clock.set(NOW)
    state = KueueCache(store, clock.now)
    state.start()
    sched = Scheduler(state, store, state.events)
    for _ in range(cycles):
        sched.cycle(clock.now())
    return Result(store, state, sched)


def _without_lone_borrowing_limit(obj: dict) -> dict:
    """Upstream's unit tests bypass the webhook, which refuses a borrowingLimit without a cohort; such a
    limit has no effect (nothing to borrow from), so it is dropped here."""
    spec = obj.get("spec") or {}
    if obj["kind"] != "ClusterQueue" or spec.get("cohortName"):
        return obj
    obj = copy.deepcopy(obj)
    for g in obj["spec"]["resourceGroups"]:
        for f in g["flavors"]:
            for r in f["resources"]:
                r.pop("borrowingLimit", None)
    return obj


def summary(r: Result) -> dict[str, str]:
    """Admissions as ``"<cq> <podset>[<res>=<flavor>,...]x<count> ..."`` per workload (compact wantAssignments)."""
    out = {}
    for ref, (cqn, psas) in r.assignments().items():
        parts = [
            f"{name}[{','.join(f'{k}={v}' for k, v in sorted(flv.items()))}]x{count}"
            for name, flv, count in psas
        ]
        out[ref] = " ".join([cqn, *parts])
    return out
