"""Resource math (k8s PodRequests) and quota math (Kueue pkg/cache/scheduler/resource_node.go)."""

from __future__ import annotations

from flexq.kueue.resources import admitted_requests, podset_total_requests
from flexq.kueue.snapshot import build_snapshot, find_height_of_lowest_subtree_that_fits
from flexq.kueue.workload import WorkloadInfo
from flexq.semantics.resources import pod_request_values

from .kueue_builders import admit, cohort, cq, fq, ps, psa, rg, wl


def c(name, requests=None, limits=None, restart=None):
    out = {"name": name, "resources": {}}
    if requests:
        out["resources"]["requests"] = requests
    if limits:
        out["resources"]["limits"] = limits
    if restart:
        out["restartPolicy"] = restart
    return out


def test_requests_default_to_limits():
    spec = {"containers": [c("a", {"cpu": "500m"}, {"cpu": "1", "memory": "1Gi", "google.com/tpu": "4"})]}
    assert pod_request_values(spec) == {"cpu": 500, "memory": 1 << 30, "google.com/tpu": 4}


def test_init_containers_are_a_running_max_and_overhead_adds():
    spec = {
        "containers": [c("a", {"cpu": "1"}), c("b", {"cpu": "500m", "memory": "1Gi"})],
        "initContainers": [c("i1", {"cpu": "2"}), c("i2", {"memory": "3Gi"})],
        "overhead": {"cpu": "100m"},
    }
    assert pod_request_values(spec) == {"cpu": 2100, "memory": 3 << 30}


def test_sidecar_init_containers_add_to_steady_state_and_later_inits():
    spec = {
        "containers": [c("a", {"cpu": "1"})],
        "initContainers": [c("side", {"cpu": "500m"}, restart="Always"), c("i", {"cpu": "1"})],
    }
    # steady: 1 + 0.5 ; init peak: 1 + 0.5 sidecar
    assert pod_request_values(spec) == {"cpu": 1500}


def test_podset_totals_multiply_by_count_and_honor_reclaimable():
    w = wl("w", ps("a", 4, cpu="250m"), ps("b", 2, nvidia_com_gpu="1"))
    w["status"]["reclaimablePods"] = [{"name": "a", "count": 1}]
    t = podset_total_requests(w)
    assert [(p.name, p.count, p.requests) for p in t] == [
        ("a", 3, {"cpu": 750}),
        ("b", 2, {"nvidia.com/gpu": 2}),
    ]


def test_admitted_requests_from_admission():
    w = admit(wl("w", ps("a", 4, cpu="1")), "cq", psa("a", 4, cpu=("f", "4")))
    w["status"]["reclaimablePods"] = [{"name": "a", "count": 2}]
    [p] = admitted_requests(w)
    assert (p.count, p.requests, p.flavors) == (2, {"cpu": 2000}, {"cpu": "f"})


def _tree():
    cqs = [
        cq("a", rg(fq("f", cpu=("10", "5", "4"))), cohort="left"),
        cq("b", rg(fq("f", cpu="10")), cohort="left"),
        cq("c", rg(fq("f", cpu="10")), cohort="right"),
        cq("solo", rg(fq("f", cpu="3"))),
    ]
    cohorts = [
        cohort("left", parent="root"),
        cohort("right", parent="root"),
        cohort("root", rg(fq("f", cpu="6"))),
    ]
    return cqs, cohorts


def test_subtree_quota_accounts_lending_limits():
    cqs, cohorts = _tree()
    s = build_snapshot(cqs, cohorts)
    fr = ("f", "cpu")
    # a lends 4 of 10 (keeps 6 local): left = 4 + 10; root = 6 + 14 + 10
    assert s.cohorts["left"].subtree_quota[fr] == 14_000
    assert s.cohorts["root"].subtree_quota[fr] == 30_000
    assert s.cq("a").local_quota(fr) == 6_000


def test_available_and_potential_with_borrowing_limit():
    cqs, cohorts = _tree()
    s = build_snapshot(cqs, cohorts)
    fr = ("f", "cpu")
    a = s.cq("a")
    # potential: min(10 + 5, 6 + root 30) = 15
    assert a.potential_available(fr) == 15_000
    assert a.available(fr) == 15_000
    assert s.cq("solo").available(fr) == 3_000 and s.cq("solo").potential_available(fr) == 3_000


def test_usage_bubbles_past_local_quota_and_back():
    cqs, cohorts = _tree()
    b = admit(wl("wb", ps(cpu="13")), "b", psa(cpu=("f", "13")))
    s = build_snapshot(cqs, cohorts, admitted=[WorkloadInfo.from_obj(b)])
    fr = ("f", "cpu")
    assert s.cohorts["left"].usage[fr] == 13_000
    assert s.cohorts["root"].usage[fr] == 13_000
    a = s.cq("a")
    # a: local 6 + min(parent avail, stored(4) - used(0) + borrowingLimit 5 = 9)
    # parent avail: left local 0 + root avail (30-13=17) = 17 -> a = 6 + 9 = 15
    assert a.available(fr) == 15_000
    a.add_usage({fr: 8_000})
    assert a.usage[fr] == 8_000 and s.cohorts["left"].usage[fr] == 15_000  # 2 past local quota bubble up
    a.remove_usage({fr: 8_000})
    assert s.cohorts["left"].usage[fr] == 13_000 and s.cohorts["root"].usage[fr] == 13_000


def test_borrowing_level_is_height_of_lowest_fitting_subtree():
    cqs, cohorts = _tree()
    s = build_snapshot(cqs, cohorts)
    fr = ("f", "cpu")
    assert find_height_of_lowest_subtree_that_fits(s.cq("b"), fr, 5_000) == (0, True)
    assert find_height_of_lowest_subtree_that_fits(s.cq("b"), fr, 12_000) == (1, True)  # fits in "left"
    assert find_height_of_lowest_subtree_that_fits(s.cq("b"), fr, 20_000) == (2, False)  # needs root


def test_clone_is_independent():
    cqs, cohorts = _tree()
    s = build_snapshot(cqs, cohorts)
    t = s.clone()
    fr = ("f", "cpu")
    t.cq("b").add_usage({fr: 12_000})
    assert s.cohorts["left"].usage.get(fr, 0) == 0
    assert t.cohorts["left"].usage[fr] == 12_000  # no lendingLimit: all usage is stored in the cohort
    assert t.cq("b").parent is t.cohorts["left"] and t.cohorts["left"].parent is t.cohorts["root"]


def test_cohort_cycle_makes_queues_inactive():
    s = build_snapshot(
        [cq("x", rg(fq("f", cpu="1")), cohort="p")], [cohort("p", parent="q"), cohort("q", parent="p")]
    )
    assert "x" in s.inactive
