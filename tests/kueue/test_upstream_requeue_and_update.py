"""Kueue v0.19.2 ``TestRequeueAndUpdate`` (pkg/scheduler/scheduler_test.go), its five cases.

A ClusterQueue ``cq`` (no resource groups), a LocalQueue ``ns1/q1`` and a pending Workload ``ns1/w1`` with one
empty ``main`` pod set; the head is taken from the queue manager, ``requeue_and_update`` runs with the case's
entry, then the queue (active heap or inadmissible), the workload's status (conditions without times, the
``resourceRequests``) and the number of status writes are compared; a second call must write nothing.
"""

from __future__ import annotations

from random import Random

import pytest

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.kueue.cache import KueueCache
from flexq.kueue.scheduler import Entry, Scheduler
from flexq.store import Store

from .upstream_wrappers import NOW, MakeClusterQueue, MakeWorkload

NO_RESERVATION = ("Admitted", "False", "NoReservation", "The workload has no reservation")

CASES = {
    "workload didn't fit": (
        dict(status="", msg="didn't fit", reason="WaitingForQuota"),
        {},
        {"cq": ["ns1/w1"]},
        [("QuotaReserved", "False", "WaitingForQuota", "didn't fit"), NO_RESERVATION],
        1,
    ),
    "assumed": (dict(status="assumed", msg=""), {"cq": ["ns1/w1"]}, {}, [], 0),
    "nominated": (dict(status="nominated", msg="failed to admit workload"), {"cq": ["ns1/w1"]}, {}, [], 0),
    "skipped with summary": (
        dict(status="skipped", msg="cohort used in this cycle", reason="WaitingForQuota"),
        {"cq": ["ns1/w1"]},
        {},
        [("QuotaReserved", "False", "WaitingForQuota", "cohort used in this cycle"), NO_RESERVATION],
        1,
    ),
    "preemption gated": (
        dict(status="preemptionGated", msg="preemption gated", reason="AdmissionGated"),
        {"cq": ["ns1/w1"]},
        {},
        [
            ("QuotaReserved", "False", "AdmissionGated", "preemption gated"),
            ("BlockedOnPreemptionGates", "True", "PreemptionGated", "preemption gated"),
            NO_RESERVATION,
        ],
        1,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_requeue_and_update(name: str) -> None:
    entry, want_active, want_inadmissible, want_conditions, want_updates = CASES[name]
    clock = VirtualClock(NOW)
    store = Store(default_registry(), clock, name="requeue", rng=Random(0), namespaces=("default", "ns1"))
    q = MakeClusterQueue("cq").Obj()
    store.create(q, keep_status=True)
    store.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q1", "namespace": "ns1"},
            "spec": {"clusterQueue": "cq"},
        }
    )
    w = MakeWorkload("w1", "ns1").Obj()
    w["spec"]["queueName"] = "q1"
    store.create(w, keep_status=True)
    cache = KueueCache(store, clock.now)
    cache.start()
    heads = cache.queues.heads()
    assert [h.key for h in heads] == ["ns1/w1"]
    sched = Scheduler(cache, store, cache.events)
    rv = store.get("Workload", "w1", "ns1")["metadata"]["resourceVersion"]
    e = Entry(heads[0], **entry)
    sched.requeue_and_update(e, NOW)
    queues = cache.queues.cluster_queues
    assert {n: sorted(c.items) for n, c in queues.items() if c.items} == want_active
    assert {n: sorted(c.inadmissible) for n, c in queues.items() if c.inadmissible} == want_inadmissible
    got = store.get("Workload", "w1", "ns1")
    st = got.get("status") or {}
    conds = sorted(
        ((c["type"], c["status"], c["reason"], c["message"]) for c in st.get("conditions") or []),
        key=lambda c: c[0],
    )
    assert conds == sorted(want_conditions, key=lambda c: c[0])
    if want_conditions:
        assert st["resourceRequests"] == [{"name": "main"}]  # `resources,omitempty`: no requests, no field
    sched.requeue_and_update(e, NOW)  # a second call writes nothing more
    after = store.get("Workload", "w1", "ns1")["metadata"]["resourceVersion"]
    assert (int(after) - int(rv)) == want_updates
