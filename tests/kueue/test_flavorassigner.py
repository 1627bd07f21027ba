"""Flavor assignment, ported from Kueue pkg/scheduler/flavorassigner/flavorassigner_test.go (TestAssignFlavors)."""

from __future__ import annotations

from flexq.kueue.flavorassigner import AssignmentState, FlavorAssigner, Mode, PMode, is_preferred
from flexq.kueue.preemption import make_oracle
from flexq.kueue.snapshot import build_snapshot
from flexq.kueue.workload import WorkloadInfo

from .kueue_builders import admit, cohort, cq, fq, ps, psa, rf, rg, wl

NOW = 1767225600.0  # 2026-01-01T00:00:00Z

FLAVORS = [
    rf("default"),
    rf("one", {"type": "one"}),
    rf("two", {"type": "two"}),
    rf("b_one", {"b_type": "one"}),
    rf("b_two", {"b_type": "two"}),
    rf("tainted", taints=[{"key": "instance", "value": "spot", "effect": "NoSchedule"}]),
    rf(
        "taint_and_toleration",
        taints=[{"key": "instance", "value": "spot", "effect": "NoSchedule"}],
        tolerations=[{"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}],
    ),
    rf("label-x-a", {"x": "a"}),
    rf("label-xy-b", {"x": "b", "y": "k"}),
]


def assign(workload, queue, *, cqs=(), cohorts=(), admitted=(), last=None):
    snap = build_snapshot([queue, *cqs], cohorts, FLAVORS, [WorkloadInfo.from_obj(a) for a in admitted])
    info = WorkloadInfo.from_obj(workload, queue["metadata"]["name"])
    info.last_assignment = last
    a = FlavorAssigner(
        info, snap.cq(queue["metadata"]["name"]), snap.resource_flavors, make_oracle(snap, NOW)
    ).assign()
    return a


def flavors(a):
    return [{r: f.name for r, f in p.flavors.items()} for p in a.podsets]


def test_single_flavor_fits():
    a = assign(wl("w", ps(cpu="1", memory="1Mi")), cq("cq", rg(fq("default", cpu="1", memory="2Mi"))))
    assert a.representative_mode() == Mode.FIT
    assert flavors(a) == [{"cpu": "default", "memory": "default"}]
    assert a.usage == {("default", "cpu"): 1000, ("default", "memory"): 1 << 20}
    assert a.podsets[0].flavors["cpu"].tried_flavor_idx == -1
    assert a.to_api() == [
        {
            "name": "main",
            "flavors": {"cpu": "default", "memory": "default"},
            "resourceUsage": {"cpu": "1", "memory": "1Mi"},
            "count": 1,
        }
    ]


def test_single_flavor_fits_tainted_flavor_with_pod_toleration():
    tol = [{"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}]
    a = assign(wl("w", ps(cpu="1", tolerations=tol)), cq("cq", rg(fq("tainted", cpu="4"))))
    assert a.representative_mode() == Mode.FIT


def test_single_flavor_fits_tainted_flavor_with_flavor_toleration():
    a = assign(wl("w", ps(cpu="1")), cq("cq", rg(fq("taint_and_toleration", cpu="4"))))
    assert a.representative_mode() == Mode.FIT


def test_untolerated_taint_message():
    a = assign(wl("w", ps(cpu="1")), cq("cq", rg(fq("tainted", cpu="4"))))
    assert a.representative_mode() == Mode.NO_FIT
    assert a.message() == (
        "couldn't assign flavors to pod set main: "
        "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"
    )
    assert a.no_fit_reason == "NoMatchingFlavor"


def test_used_resources_doesnt_fit_preempts_lower_priority():
    q = cq("cq", rg(fq("default", cpu="4")), preemption={"withinClusterQueue": "LowerPriority"})
    old = admit(wl("old", ps(cpu="3"), priority=0), "cq", psa(cpu=("default", "3")))
    a = assign(wl("w", ps(cpu="2"), priority=10), q, admitted=[old])
    assert a.representative_mode() == Mode.PREEMPT
    assert (
        a.message()
        == "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed"
    )
    assert a.podsets[0].attempts[0].possibility == "Preempt"


def test_used_resources_no_candidates_is_waiting_for_quota():
    q = cq("cq", rg(fq("default", cpu="4")))
    old = admit(wl("old", ps(cpu="3")), "cq", psa(cpu=("default", "3")))
    a = assign(wl("w", ps(cpu="2")), q, admitted=[old])
    assert a.representative_mode() == Mode.PREEMPT
    assert a.podsets[0].attempts[0].possibility == "NoCandidates"


def test_multiple_resource_groups_fits():
    q = cq(
        "cq",
        rg(fq("one", cpu="2"), fq("two", cpu="4")),
        rg(fq("b_one", memory="1Gi"), fq("b_two", memory="5Gi")),
    )
    a = assign(wl("w", ps(cpu="3", memory="10Mi")), q)
    assert a.representative_mode() == Mode.FIT
    assert flavors(a) == [{"cpu": "two", "memory": "b_one"}]
    assert a.podsets[0].flavors["cpu"].tried_flavor_idx == -1
    assert a.podsets[0].flavors["memory"].tried_flavor_idx == 0
    one = [x for x in a.podsets[0].attempts if x.flavor == "one"][0]
    assert one.reasons == [
        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) "
        "+ current podset request (3) > maximum capacity (2)"
    ]
    assert one.no_fit_reason == "ExceedsMaxQuota"


def test_multiple_resources_in_a_group_doesnt_fit():
    q = cq("cq", rg(fq("one", cpu="2", memory="1Gi"), fq("two", cpu="4", memory="5Mi")))
    a = assign(wl("w", ps(cpu="3", memory="10Mi")), q)
    assert a.representative_mode() == Mode.NO_FIT
    assert a.message() == (
        "couldn't assign flavors to pod set main: "
        "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2), "
        "insufficient quota for memory in flavor two, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (5Mi)"
    )
    assert a.no_fit_reason == "ExceedsMaxQuota"


def test_fits_while_skipping_tainted_flavor():
    q = cq("cq", rg(fq("tainted", cpu="4"), fq("two", cpu="4")))
    a = assign(wl("w", ps(cpu="3")), q)
    assert flavors(a) == [{"cpu": "two"}]
    assert a.representative_mode() == Mode.FIT


def test_fits_a_node_selector():
    q = cq("cq", rg(fq("one", cpu="4", memory="1Gi"), fq("two", cpu="4", memory="1Gi")))
    a = assign(wl("w", ps(cpu="1", memory="1Mi", node_selector={"type": "two", "ignored1": "foo"})), q)
    assert flavors(a) == [{"cpu": "two", "memory": "two"}]


def test_fits_with_node_affinity():
    q = cq("cq", rg(fq("one", cpu="4", memory="1Gi"), fq("two", cpu="4", memory="1Gi")))
    aff = [
        [
            {"key": "ignored2", "operator": "In", "values": ["bar"]},
            {"key": "type", "operator": "In", "values": ["two"]},
        ]
    ]
    a = assign(wl("w", ps(cpu="1", memory="1Mi", affinity=aff)), q)
    assert flavors(a) == [{"cpu": "two", "memory": "two"}]


def test_node_affinity_term_with_only_foreign_keys_matches_any_flavor():
    q = cq("cq", rg(fq("one", cpu="4"), fq("two", cpu="4")))
    aff = [
        [{"key": "ignored2", "operator": "In", "values": ["bar"]}],
        [{"key": "type", "operator": "In", "values": ["two"]}],
    ]
    a = assign(wl("w", ps(cpu="1", affinity=aff)), q)
    assert flavors(a) == [{"cpu": "one"}]


def test_selector_only_uses_flavors_own_keys():
    q = cq("cq", rg(fq("label-x-a", cpu="4"), fq("label-xy-b", cpu="4")))
    a = assign(wl("w", ps(cpu="1", node_selector={"y": "k"})), q)
    # "y" is not a key of label-x-a, so it matches
    assert flavors(a) == [{"cpu": "label-x-a"}]


def test_labelless_flavor_matches_labeled_selector():
    q = cq("cq", rg(fq("default", cpu="4"), fq("one", cpu="4")))
    a = assign(wl("w", ps(cpu="1", node_selector={"type": "one"})), q)
    assert flavors(a) == [{"cpu": "default"}]


def test_doesnt_fit_node_affinity_message():
    q = cq("cq", rg(fq("one", cpu="4"), fq("two", cpu="4")))
    aff = [[{"key": "type", "operator": "In", "values": ["three"]}]]
    a = assign(wl("w", ps(cpu="1", affinity=aff)), q)
    assert a.representative_mode() == Mode.NO_FIT
    assert a.message() == (
        "couldn't assign flavors to pod set main: flavor one doesn't match node affinity, "
        "flavor two doesn't match node affinity"
    )


def test_multiple_podsets_fit_different_flavors_with_assumed_usage():
    q = cq("cq", rg(fq("one", cpu="4"), fq("two", cpu="10")))
    a = assign(wl("w", ps("driver", 1, cpu="3"), ps("worker", 1, cpu="3")), q)
    assert flavors(a) == [{"cpu": "one"}, {"cpu": "two"}]
    assert a.usage == {("one", "cpu"): 3000, ("two", "cpu"): 3000}


def test_fits_borrowing():
    q = cq("cq", rg(fq("default", cpu=("2", "98"))), cohort="co")
    other = cq("other", rg(fq("default", cpu="100")), cohort="co")
    a = assign(wl("w", ps(cpu="10")), q, cqs=[other])
    assert a.representative_mode() == Mode.FIT
    assert a.borrowing == 1


def test_not_enough_space_to_borrow():
    q = cq("cq", rg(fq("one", cpu=("1", "1"))), cohort="co")
    other = cq("other", rg(fq("one", cpu="1")), cohort="co")
    a = assign(wl("w", ps(cpu="3")), q, cqs=[other])
    assert a.representative_mode() == Mode.NO_FIT
    assert "maximum capacity (2)" in a.message()


def test_resource_not_listed_in_cluster_queue():
    q = cq("cq", rg(fq("one", cpu="4")))
    a = assign(wl("w", ps(cpu="1", nvidia_com_gpu="1")), q)
    assert a.representative_mode() == Mode.NO_FIT
    assert (
        a.message()
        == "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue"
    )


def test_zero_request_not_in_cluster_queue_is_skipped():
    q = cq("cq", rg(fq("one", cpu="4")))
    a = assign(wl("w", ps(cpu="1", nvidia_com_gpu="0")), q)
    assert a.representative_mode() == Mode.FIT
    assert flavors(a) == [{"cpu": "one"}]


def test_num_pods_fit_and_dont_fit():
    q = cq("cq", rg(fq("default", cpu="10", pods="3")))
    ok = assign(wl("w", ps(count=3, cpu="1")), q)
    assert ok.representative_mode() == Mode.FIT
    assert ok.usage[("default", "pods")] == 3
    bad = assign(wl("w", ps(count=4, cpu="1")), q)
    assert bad.representative_mode() == Mode.NO_FIT
    assert "insufficient quota for pods in flavor default" in bad.message()


def test_reclaimable_pods_reduce_requests():
    w = wl("w", ps(count=5, cpu="1"))
    w["status"]["reclaimablePods"] = [{"name": "main", "count": 2}]
    a = assign(w, cq("cq", rg(fq("default", cpu="3"))))
    assert a.representative_mode() == Mode.FIT
    assert a.usage == {("default", "cpu"): 3000}


def _two_flavor_preempt(fungibility):
    q = cq(
        "cq",
        rg(fq("one", cpu="2"), fq("two", cpu="2")),
        preemption={"withinClusterQueue": "LowerPriority"},
        fungibility=fungibility,
    )
    low = admit(wl("low", ps(cpu="2"), priority=-1), "cq", psa(cpu=("one", "2")))
    return q, low


def test_preempt_try_next_flavor_default():
    q, low = _two_flavor_preempt(None)
    a = assign(wl("w", ps(cpu="2")), q, admitted=[low])
    assert flavors(a) == [{"cpu": "two"}]
    assert a.representative_mode() == Mode.FIT


def test_preempt_before_try_next_flavor_when_may_stop_search():
    q, low = _two_flavor_preempt({"whenCanPreempt": "MayStopSearch"})
    a = assign(wl("w", ps(cpu="2")), q, admitted=[low])
    assert flavors(a) == [{"cpu": "one"}]
    assert a.representative_mode() == Mode.PREEMPT
    assert a.podsets[0].flavors["cpu"].tried_flavor_idx == 0
    assert a.last_state.pending_flavors()


def test_preempt_when_no_flavor_fits_picks_best_preempting_flavor():
    q = cq(
        "cq", rg(fq("one", cpu="2"), fq("two", cpu="2")), preemption={"withinClusterQueue": "LowerPriority"}
    )
    l1 = admit(wl("l1", ps(cpu="2"), priority=-1), "cq", psa(cpu=("one", "2")))
    l2 = admit(wl("l2", ps(cpu="2"), priority=-1), "cq", psa(cpu=("two", "2")))
    a = assign(wl("w", ps(cpu="2")), q, admitted=[l1, l2])
    assert flavors(a) == [{"cpu": "one"}]
    assert a.representative_mode() == Mode.PREEMPT
    assert a.podsets[0].flavors["cpu"].tried_flavor_idx == -1


def _borrow_setup(fungibility):
    q = cq("cq", rg(fq("one", cpu=("2", None)), fq("two", cpu="10")), cohort="co", fungibility=fungibility)
    other = cq("other", rg(fq("one", cpu="10")), cohort="co")
    return q, other


def test_borrow_before_try_next_flavor_default():
    q, other = _borrow_setup(None)
    a = assign(wl("w", ps(cpu="5")), q, cqs=[other])
    assert flavors(a) == [{"cpu": "one"}]
    assert a.borrowing == 1


def test_borrow_try_next_flavor_found_second():
    q, other = _borrow_setup({"whenCanBorrow": "TryNextFlavor"})
    a = assign(wl("w", ps(cpu="5")), q, cqs=[other])
    assert flavors(a) == [{"cpu": "two"}]
    assert a.borrowing == 0


def test_borrow_try_next_flavor_falls_back_to_first_when_second_worse():
    q = cq(
        "cq",
        rg(fq("one", cpu=("2", None)), fq("two", cpu="1")),
        cohort="co",
        fungibility={"whenCanBorrow": "TryNextFlavor"},
    )
    other = cq("other", rg(fq("one", cpu="10")), cohort="co")
    a = assign(wl("w", ps(cpu="5")), q, cqs=[other])
    assert flavors(a) == [{"cpu": "one"}]
    assert a.borrowing == 1
    assert a.representative_mode() == Mode.FIT


def test_lending_limit_keeps_quota_local():
    q = cq("cq", rg(fq("one", cpu=("2", None, "0"))), cohort="co")
    other = cq("other", rg(fq("one", cpu=("10", None, "2"))), cohort="co")
    a = assign(wl("w", ps(cpu="5")), q, cqs=[other])
    # other lends only 2, cq has 2 (lends all): at most 4
    assert a.representative_mode() == Mode.NO_FIT
    assert "maximum capacity (4)" in a.message()


def test_missing_flavor_is_skipped():
    q = cq("cq", rg(fq("nonexistent", cpu="4"), fq("one", cpu="4")))
    a = assign(wl("w", ps(cpu="1")), q)
    assert flavors(a) == [{"cpu": "one"}]
    b = assign(wl("w", ps(cpu="1")), cq("cq", rg(fq("nonexistent", cpu="4"))))
    assert b.message() == "couldn't assign flavors to pod set main: flavor nonexistent not found"


def test_scan_resumes_after_last_tried_flavor():
    q = cq("cq", rg(fq("one", cpu="4"), fq("two", cpu="4")))
    a = assign(wl("w", ps(cpu="1")), q, last=AssignmentState([{"cpu": 0}]))
    assert flavors(a) == [{"cpu": "two"}]


def test_cohort_object_quota_is_borrowable():
    q = cq("cq", rg(fq("one", cpu="1")), cohort="root")
    a = assign(wl("w", ps(cpu="5")), q, cohorts=[cohort("root", rg(fq("one", cpu="10")))])
    assert a.representative_mode() == Mode.FIT
    assert a.borrowing == 1


def test_workload_slice_must_keep_original_flavor_and_only_charges_delta():
    q = cq("cq", rg(fq("one", cpu="4"), fq("two", cpu="4")))
    old = admit(wl("old", ps(count=2, cpu="1")), "cq", psa(count=2, cpu=("two", "2")))
    snap = build_snapshot([q], [], FLAVORS, [WorkloadInfo.from_obj(old)])
    info = WorkloadInfo.from_obj(wl("new", ps(count=4, cpu="1")), "cq")
    old_info = snap.cq("cq").workloads["default/old"]
    a = FlavorAssigner(
        info, snap.cq("cq"), snap.resource_flavors, make_oracle(snap, NOW), replace_slice=old_info
    ).assign()
    assert flavors(a) == [{"cpu": "two"}]
    assert a.usage == {("two", "cpu"): 2000}
    one = [x for x in a.podsets[0].attempts if x.flavor == "one"][0]
    assert "could not assign one flavor since the original workload is assigned: two" in one.reasons


def test_is_preferred_orders():
    ff = {}
    assert is_preferred((PMode.FIT, 0), (PMode.FIT, 1), ff)
    assert is_preferred((PMode.FIT, 1), (PMode.PREEMPT, 0), ff)
    assert is_preferred((PMode.NO_CANDIDATES, 0), (PMode.NO_FIT, 0), ff)
    assert not is_preferred((PMode.NO_CANDIDATES, 0), (PMode.PREEMPT, 3), ff)
    pob = {"preference": "PreemptionOverBorrowing"}
    assert is_preferred((PMode.PREEMPT, 0), (PMode.FIT, 1), pob)
    assert is_preferred((PMode.FIT, 1), (PMode.PREEMPT, 1), pob)


def test_considered_flavors_event_text():
    q = cq("cq", rg(fq("one", cpu="2"), fq("two", cpu="4")))
    a = assign(wl("w", ps(cpu="3")), q)
    assert a.considered_flavors() == (
        "main: one(NoFit;insufficient quota for cpu in flavor one, previously considered "
        "podsets requests (0) + current podset request (3) > maximum capacity (2))"
    )


# -- more TestAssignFlavors cases, each named as upstream names it ------------------------------------------
def test_upstream_multiple_resource_groups_one_could_fit_with_preemption_other_doesnt_fit():
    """TestAssignFlavors "multiple resource groups, one could fit with preemption, other doesn't fit"."""
    q = cq("cq", rg(fq("one", cpu="3")), rg(fq("b_one", memory="1Mi")))
    used = admit(wl("used", ps(cpu="1")), "cq", psa(cpu=("one", "1")))
    a = assign(wl("w", ps(cpu="3", memory="10Mi")), q, admitted=[used])
    assert a.representative_mode() == Mode.NO_FIT
    assert a.message() == (
        "couldn't assign flavors to pod set main: insufficient quota for memory in flavor b_one, "
        "previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (1Mi)"
    )
    attempts = {x.flavor: (x.mode, x.no_fit_reason) for x in a.podsets[0].attempts}
    assert attempts["b_one"] == (Mode.NO_FIT, "ExceedsMaxQuota")
    assert a.no_fit_reason == "ExceedsMaxQuota" and a.usage == {}


def test_upstream_can_only_preempt_flavors_that_match_affinity():
    """TestAssignFlavors "can only preempt flavors that match affinity" (the oracle: lower-priority victims)."""
    q = cq(
        "cq", rg(fq("one", cpu="4"), fq("two", cpu="4")), preemption={"withinClusterQueue": "LowerPriority"}
    )
    used = [admit(wl(f"u-{f}", ps(cpu="3"), priority=-1), "cq", psa(cpu=(f, "3"))) for f in ("one", "two")]
    a = assign(wl("w", ps(cpu="2", node_selector={"type": "two"})), q, admitted=used)
    assert a.representative_mode() == Mode.PREEMPT
    assert flavors(a) == [{"cpu": "two"}]
    assert a.podsets[0].flavors["cpu"].tried_flavor_idx == -1
    assert a.message() == (
        "couldn't assign flavors to pod set main: flavor one doesn't match node affinity, "
        "insufficient unused quota for cpu in flavor two, 1 more needed"
    )
    assert [(x.flavor, x.mode, x.possibility) for x in a.podsets[0].attempts] == [
        ("one", Mode.NO_FIT, None),
        ("two", Mode.PREEMPT, "Preempt"),
    ]
    assert a.usage == {("two", "cpu"): 2000}


def test_upstream_borrowing_limit_exceeds_quota_available_in_cohort():
    """TestAssignFlavors "when borrowing while preemption is needed, but borrowingLimit exceeds the quota
    available in the cohort"."""
    q = cq(
        "cq",
        rg(fq("one", cpu=("0", "12"))),
        cohort="test-cohort",
        preemption={
            "reclaimWithinCohort": "LowerPriority",
            "borrowWithinCohort": {"policy": "LowerPriority"},
        },
    )
    other = cq("test-secondary-clusterqueue", rg(fq("one", cpu="11")), cohort="test-cohort")
    used = admit(wl("used", ps(cpu="10")), "test-secondary-clusterqueue", psa(cpu=("one", "10")))
    a = assign(wl("w", ps(cpu="12")), q, cqs=[other], admitted=[used])
    assert a.representative_mode() == Mode.NO_FIT
    assert a.message() == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, "
        "previously considered podsets requests (0) + current podset request (12) > maximum capacity (11)"
    )
    assert a.no_fit_reason == "ExceedsMaxQuota"


def test_upstream_lend_try_next_flavor_found_the_second_flavor():
    """TestAssignFlavors "lend try next flavor, found the second flavor"."""
    q = cq(
        "cq",
        rg(fq("one", pods="10", cpu=("10", None, "1")), fq("two", pods="10", cpu=("10", None, "0"))),
        cohort="test-cohort",
        fungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
    )
    other = cq("test-secondary-clusterqueue", rg(fq("one", cpu="1")), cohort="test-cohort")
    used = admit(wl("used", ps(cpu="2")), "cq", psa(cpu=("one", "2")))
    a = assign(wl("w", ps(cpu="9")), q, cqs=[other], admitted=[used])
    assert a.representative_mode() == Mode.FIT
    assert flavors(a) == [{"cpu": "two", "pods": "two"}]
    assert [(x.flavor, x.mode, x.borrow) for x in a.podsets[0].attempts] == [
        ("one", Mode.FIT, 1),
        ("two", Mode.FIT, 0),
    ]
    assert a.usage == {("two", "cpu"): 9000, ("two", "pods"): 1}


def test_upstream_flavor_not_found():
    """TestAssignFlavors "flavor not found" (TestDeletedFlavors)."""
    a = assign(wl("w", ps(cpu="1")), cq("cq", rg(fq("deleted-flavor", cpu="4"))))
    assert a.representative_mode() == Mode.NO_FIT
    assert [(x.flavor, x.reasons, x.no_fit_reason) for x in a.podsets[0].attempts] == [
        ("deleted-flavor", ["flavor deleted-flavor not found"], "NoMatchingFlavor")
    ]
    assert a.no_fit_reason == "NoMatchingFlavor" and a.usage == {}
