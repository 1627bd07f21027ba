"""Pure queue and preemption cores: pkg/cache/queue/cluster_queue_test.go and
pkg/scheduler/preemption/preemption_test.go behaviours, without controllers."""

from __future__ import annotations

from flexq.kueue.flavorassigner import FlavorAssigner, Mode
from flexq.kueue.pending import PendingQueue, backoff_expired
from flexq.kueue.preemption import get_targets, make_oracle, satisfies_policy
from flexq.kueue.queues import QueueManager
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo, backoff_seconds
from flexq.semantics.workloads import queue_order_timestamp

from .kueue_builders import admit, cq, fq, ps, psa, rf, rg, wl

NOW = 1767225600.0


def info(
    name: str, prio: int = 0, created: str = "2026-01-01T00:00:00Z", uid: str | None = None, **kw
) -> WorkloadInfo:
    return WorkloadInfo.from_obj(
        wl(name, ps(cpu=kw.pop("cpu", "1")), priority=prio, created=created, uid=uid), "cq"
    )


def test_heap_orders_by_priority_then_timestamp_then_uid():
    q = PendingQueue("cq")
    q.push_or_update(info("late-high", 10, "2026-01-01T00:00:05Z"), NOW)
    q.push_or_update(info("early-low", 1, "2026-01-01T00:00:00Z"), NOW)
    q.push_or_update(info("early-high-b", 10, "2026-01-01T00:00:01Z", uid="b"), NOW)
    q.push_or_update(info("early-high-a", 10, "2026-01-01T00:00:01Z", uid="a"), NOW)
    order = [q.pop().key for _ in range(4)]
    assert order == ["default/early-high-a", "default/early-high-b", "default/late-high", "default/early-low"]
    assert q.pop() is None


def test_best_effort_parks_no_fit_and_strict_requeues_immediately():
    be, strict = PendingQueue("cq"), PendingQueue("cq", strategy="StrictFIFO")
    for q in (be, strict):
        q.push_or_update(info("w"), NOW)
        w = q.pop()
        q.requeue(w, "NoFit", NOW)
    assert list(be.inadmissible) == ["default/w"] and not be.items
    assert list(strict.items) == ["default/w"] and not strict.inadmissible


def test_flush_after_pop_sends_the_popped_workload_back_to_the_heap():
    q = PendingQueue("cq", namespace_selector={})
    q.push_or_update(info("w"), NOW)
    w = q.pop()
    q.flush(NOW, lambda ns: {})  # capacity changed while w was being scheduled
    q.requeue(w, "NoFit", NOW)
    assert list(q.items) == ["default/w"]


def test_flush_moves_inadmissible_back_unless_backing_off():
    q = PendingQueue("cq", namespace_selector={})
    q.push_or_update(info("a"), NOW)
    q.requeue(q.pop(), "NoFit", NOW)
    b = info("b")
    b.obj["status"]["requeueState"] = {"requeueAt": "2026-01-01T00:01:00Z"}
    q.push_or_update(b, NOW)
    assert set(q.inadmissible) == {"default/a", "default/b"}
    assert q.flush(NOW, lambda ns: {}) == 1
    assert list(q.items) == ["default/a"] and list(q.inadmissible) == ["default/b"]
    assert q.flush(NOW + 60, lambda ns: {}) == 1


def test_namespace_selector_gates_the_flush():
    q = PendingQueue("cq", namespace_selector={"matchLabels": {"team": "x"}})
    q.push_or_update(info("a"), NOW)
    q.requeue(q.pop(), "NamespaceMismatch", NOW)
    assert q.flush(NOW, lambda ns: {"team": "y"}) == 0
    assert q.flush(NOW, lambda ns: {"team": "x"}) == 1


def test_requeued_false_keeps_a_workload_inadmissible():
    w = info("w")
    w.obj["status"]["conditions"] = [{"type": "Requeued", "status": "False", "reason": "AdmissionCheck"}]
    assert not backoff_expired(w, NOW)


def test_pending_preemption_makes_the_preemptor_sticky_in_best_effort():
    q = PendingQueue("cq")
    q.push_or_update(info("pre", 1), NOW)
    q.push_or_update(info("other", 5), NOW)
    pre = q.pop()
    assert pre.key == "default/other"
    q.requeue(pre, "PendingPreemption", NOW)
    q.push_or_update(info("newer", 9), NOW)
    assert q.pop().key == "default/other"  # the sticky preemptor stays at the head


def test_manager_pops_one_head_per_active_cluster_queue():
    m = QueueManager()
    for name in ("cq1", "cq2", "off"):
        obj = cq(name, rg(fq("f", cpu="1")), active=name != "off")
        m.add_or_update_cluster_queue(obj)
        m.add_or_update_local_queue(
            {"metadata": {"name": name, "namespace": "default"}, "spec": {"clusterQueue": name}}
        )
    for i, q in enumerate(["cq1", "cq1", "cq2", "off"]):
        m.add_or_update_workload(wl(f"w{i}", queue=q), NOW)
    heads = m.heads()
    assert sorted(h.key for h in heads) == ["default/w0", "default/w2"] or sorted(h.key for h in heads) == [
        "default/w1",
        "default/w2",
    ]
    assert {h.cluster_queue for h in heads} == {"cq1", "cq2"}


def test_flush_targets_cover_the_whole_cohort_tree():
    m = QueueManager()
    m.set_cohorts(
        [
            {"metadata": {"name": "child"}, "spec": {"parentName": "root"}},
            {"metadata": {"name": "root"}, "spec": {}},
        ]
    )
    for name, cohort in (("a", "child"), ("b", "root"), ("c", "")):
        m.add_or_update_cluster_queue(cq(name, rg(fq("f", cpu="1")), cohort=cohort or None))
    assert m.root_of("a") == "root" and m.root_of("c") == ""
    assert m.flush_targets({"a"}) == {"a", "b"}
    assert m.flush_targets({"c"}) == {"c"}


def test_queue_order_timestamp_uses_eviction_time_after_admission_check_eviction():
    w = wl("w", created="2026-01-01T00:00:00Z")
    assert queue_order_timestamp(w) == NOW
    w["status"]["conditions"] = [
        {
            "type": "Evicted",
            "status": "True",
            "reason": "AdmissionCheck",
            "lastTransitionTime": "2026-01-01T00:10:00Z",
        }
    ]
    assert queue_order_timestamp(w) == NOW + 600
    w["status"]["conditions"][0]["reason"] = "PodsReadyTimeout"
    assert queue_order_timestamp(w, "Creation") == NOW


def test_backoff_doubles_and_caps():
    assert [backoff_seconds(60, 1800, n) for n in range(1, 7)] == [60, 120, 240, 480, 960, 1800]
    assert backoff_seconds(60, 3600, 7) == 3600


def test_policies():
    hi, lo = info("hi", 10), info("lo", 1)
    older_eq, newer_eq = info("o", 1, "2026-01-01T00:00:00Z"), info("n", 1, "2026-01-01T00:01:00Z")
    assert satisfies_policy(hi, lo, "LowerPriority") and not satisfies_policy(lo, hi, "LowerPriority")
    assert not satisfies_policy(older_eq, newer_eq, "LowerPriority")
    assert satisfies_policy(older_eq, newer_eq, "LowerOrNewerEqualPriority")
    assert not satisfies_policy(newer_eq, older_eq, "LowerOrNewerEqualPriority")
    assert satisfies_policy(lo, hi, "Any") and not satisfies_policy(hi, lo, "Never")


def _preempt(queue, admitted, incoming, cqs=()):
    """The assignment and targets, found twice: without and with the memo the scheduler shares between the
    oracle and ``get_targets`` (which must then find the same targets without searching again)."""
    found = []
    for memo in (None, {}):
        snap = build_snapshot([queue, *cqs], [], [rf("f")], [WorkloadInfo.from_obj(a) for a in admitted])
        inc = WorkloadInfo.from_obj(incoming, queue["metadata"]["name"])
        a = FlavorAssigner(
            inc, snap.cq(queue["metadata"]["name"]), snap.resource_flavors, make_oracle(snap, NOW, memo)
        ).assign()
        found.append((a, get_targets(snap, inc, a, NOW, memo), memo))
    (_, plain, _), (a, targets, memo) = found
    assert [(t.info.key, t.reason) for t in targets] == [(t.info.key, t.reason) for t in plain]
    if a.representative_mode() == Mode.PREEMPT:
        assert memo  # the oracle's search was kept for get_targets
    return a, targets


def test_preempts_lowest_priority_most_recent_first_and_only_as_many_as_needed():
    q = cq("cq", rg(fq("f", cpu="6")), preemption={"withinClusterQueue": "LowerPriority"})
    admitted = [
        admit(wl("low-old", ps(cpu="2"), priority=1), "cq", psa(cpu=("f", "2")), at="2026-01-01T00:00:00Z"),
        admit(wl("low-new", ps(cpu="2"), priority=1), "cq", psa(cpu=("f", "2")), at="2026-01-01T00:05:00Z"),
        admit(wl("mid", ps(cpu="2"), priority=5), "cq", psa(cpu=("f", "2"))),
    ]
    a, targets = _preempt(q, admitted, wl("hi", ps(cpu="2"), priority=10))
    assert a.representative_mode() == Mode.PREEMPT
    assert [(t.info.key, t.reason) for t in targets] == [("default/low-new", "InClusterQueue")]


def test_reclaim_takes_from_the_borrowing_queue_only():
    owner = cq("owner", rg(fq("f", cpu="4")), cohort="co", preemption={"reclaimWithinCohort": "Any"})
    borrower = cq("borrower", rg(fq("f", cpu="4")), cohort="co")
    admitted = [
        admit(wl("b1", ps(cpu="3")), "borrower", psa(cpu=("f", "3"))),
        admit(wl("b2", ps(cpu="3")), "borrower", psa(cpu=("f", "3"))),
    ]
    a, targets = _preempt(owner, admitted, wl("o", ps(cpu="3")), [borrower])
    assert [t.reason for t in targets] == ["InCohortReclamation"]
    assert len(targets) == 1


def test_no_candidates_when_the_other_queue_is_within_nominal():
    owner = cq("owner", rg(fq("f", cpu="4")), cohort="co", preemption={"reclaimWithinCohort": "Any"})
    other = cq("other", rg(fq("f", cpu="4")), cohort="co")
    admitted = [
        admit(wl("x", ps(cpu="4")), "other", psa(cpu=("f", "4"))),
        admit(wl("y", ps(cpu="4")), "owner", psa(cpu=("f", "4"))),
    ]
    a, targets = _preempt(owner, admitted, wl("o", ps(cpu="1")), [other])
    assert targets == []
    assert a.podsets[0].attempts[0].possibility == "NoCandidates"


def test_candidate_order_key_sorts_as_upstreams_comparator():
    """``_Ctx.order_key`` (the sort key the preemptor uses) orders candidates exactly as ``CandidatesOrdering``
    (``_Ctx.order``) through ``cmp_to_key``: evicted first, other ClusterQueues, lower priority, later
    reservation, smaller uid; ties (same uid) keep their order."""
    import functools
    import random

    from flexq.kueue.preemption import _Ctx, _Elem

    rng = random.Random(7)
    snap = build_snapshot(
        [cq("cq", rg(fq("default", cpu="10"))), cq("other", rg(fq("default", cpu="10")))], [], [rf("default")]
    )
    ctx = _Ctx(snap, info("preemptor"), snap.cq("cq"), set(), {}, NOW)
    elems = []
    for i in range(300):
        w = wl(f"w{i}", ps(cpu="1"), priority=rng.choice([0, 1, 5]), uid=rng.choice(["a", "b", "c", f"u{i}"]))
        if rng.random() < 0.7:
            admit(w, "cq", psa(cpu=("default", "1")), at=f"2026-01-01T00:00:0{rng.randint(0, 3)}Z")
        if rng.random() < 0.2:
            w["status"]["conditions"] = [{"type": "QuotaReserved", "status": "False", "reason": "x"}]
        if rng.random() < 0.2:
            w["status"].setdefault("conditions", []).append(
                {"type": "Evicted", "status": "True", "reason": "x"}
            )
        home = rng.choice(["cq", "other"])
        q = snap.cq(home)
        assert q is not None
        elems.append(_Elem(WorkloadInfo.from_obj(w, home), None, 0, q))
    by_cmp = sorted(elems, key=functools.cmp_to_key(ctx.order))
    assert [id(e) for e in sorted(elems, key=ctx.order_key)] == [id(e) for e in by_cmp]
