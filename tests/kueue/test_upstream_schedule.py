"""Cases of Kueue ``pkg/scheduler/scheduler_test.go`` ``TestSchedule``, one cycle each.

Each test names its upstream case in ``@upstream(...)``; the fixture (flavors, ClusterQueues sales /
eng-alpha / eng-beta / lend-a / lend-b, LocalQueues, namespaces) is upstream's, in
``upstream_schedule.py``. Upstream compares the admissions in the cache (``wantAssignments``), the
heads left in the active heaps (``wantLeft``) and in the inadmissible lists
(``wantInadmissibleLeft``), and the workloads written (conditions and messages); so do these.
Upstream's ``UID("wl-preemptor")`` is replaced by the stored UID (the store assigns UIDs).
"""

from __future__ import annotations

from collections.abc import Callable

from .kueue_builders import admit, cohort, cq, fq, ps, psa, rg, wl
from .upstream_schedule import ANY_LOWER, lq, run_cycle, sel, summary

UPSTREAM: list[str] = []


def upstream(name: str) -> Callable:
    """Marks a test as the port of the TestSchedule case ``name``."""
    UPSTREAM.append(name)

    def wrap(fn: Callable) -> Callable:
        fn.upstream = name  # type: ignore[attr-defined]
        return fn

    return wrap


def W(
    name: str,
    ns: str,
    *podsets: dict,
    queue: str = "",
    prio: int | None = None,
    job_uid: str = "",
    adm: tuple | None = None,
    **req: str,
) -> dict:
    """MakeWorkload(name, ns): ``req`` is one ``main`` pod set of count 1; ``adm`` = (cq, psa...) reserves quota."""
    w = wl(name, *(podsets or [ps("main", 1, **req)]), ns=ns, queue=queue, priority=prio)
    if job_uid:
        w["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": job_uid}
    if not queue:
        w["spec"].pop("queueName")
    if adm is not None:
        admit(w, adm[0], *adm[1:])
    return w


def R(**res: str) -> dict:
    """Resource names with dots or slashes: R(**{"example.com/gpu": "1"})."""
    return res


def preempted_msg(uid: str, job: str, why: str, preemptor: str, preemptee: str) -> str:
    reason = {
        "cq": "prioritization in the ClusterQueue",
        "reclaim": "reclamation within the cohort",
        "borrow": "reclamation while borrowing",
    }[why]
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job}) due to {reason}; "
        f"preemptor path: {preemptor}; preemptee path: {preemptee}"
    )


def qr(r, ref: str) -> tuple[str, str, str]:
    c = r.condition(ref)
    return (c["status"], c["reason"], c["message"]) if c else ("", "", "")


# -- admission, messages ------------------------------------------------------------------------------------
@upstream("use second flavor when the first has no preemption candidates; WhenCanPreempt: MayStopSearch")
def test_second_flavor_when_first_has_no_candidates_may_stop_search():
    other = cq(
        "other-alpha",
        rg(fq("on-demand", cpu=("50", "50")), fq("spot", cpu=("100", "0"))),
        preemption={"withinClusterQueue": "LowerPriority"},
        fungibility={"whenCanPreempt": "MayStopSearch"},
    )
    r = run_cycle(
        [
            W(
                "admitted",
                "eng-alpha",
                queue="other",
                cpu="50",
                adm=("other-alpha", psa(cpu=("on-demand", "50"))),
            ),
            W("new", "eng-alpha", queue="other", cpu="20"),
        ],
        extra_cqs=[other],
        extra_lqs=[lq("other", "eng-alpha", "other-alpha")],
    )
    assert summary(r) == {
        "eng-alpha/admitted": "other-alpha main[cpu=on-demand]x1",
        "eng-alpha/new": "other-alpha main[cpu=spot]x1",
    }


@upstream("workload fits in single clusterQueue, with check state ready")
def test_fits_with_check_state_ready():
    w = W("foo", "sales", ps("one", 10, cpu="1"), queue="main")
    w["status"]["admissionChecks"] = [
        {"name": "check", "state": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
    r = run_cycle([w])
    assert summary(r) == {"sales/foo": "sales one[cpu=default]x10"}
    assert r.usage("sales/foo") == [{"cpu": "10"}]
    assert qr(r, "sales/foo") == ("True", "QuotaReserved", "Quota reserved in ClusterQueue sales")
    assert r.condition("sales/foo", "Admitted")["status"] == "True"
    reasons = [e["reason"] for e in r.store.list("Event", "sales")]
    assert reasons == ["QuotaReserved", "Admitted"]


@upstream("workload fits in single clusterQueue, with check state pending")
def test_fits_with_check_state_pending():
    w = W("foo", "sales", ps("one", 10, cpu="1"), queue="main")
    w["status"]["admissionChecks"] = [
        {"name": "check", "state": "Pending", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
    r = run_cycle([w])
    assert summary(r) == {"sales/foo": "sales one[cpu=default]x10"}
    assert qr(r, "sales/foo") == ("True", "QuotaReserved", "Quota reserved in ClusterQueue sales")
    adm = r.condition("sales/foo", "Admitted")
    assert (adm["status"], adm["reason"], adm["message"]) == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    assert [e["reason"] for e in r.store.list("Event", "sales")] == ["QuotaReserved"]


@upstream("skip workload with missing or deleted ClusterQueue (NoFit)")
def test_missing_cluster_queue_is_skipped():
    r = run_cycle([W("missing-cq-workload", "sales", ps("set", 1, cpu="1"), queue="non-existent-queue")])
    assert summary(r) == {} and r.left() == {} and r.inadmissible() == {}
    assert r.condition("sales/missing-cq-workload") is None
    assert r.store.list("Event", "sales") == []


@upstream("flavors with mixed misconfiguration and insufficient quota")
def test_mixed_taint_and_insufficient_quota_message():
    custom = cq(
        "custom-cq",
        rg(fq("spot-tainted", cpu=("20", "20")), fq("on-demand", cpu=("15", "15"))),
        strategy="StrictFIFO",
    )
    r = run_cycle(
        [
            W(
                "existing-on-demand-job",
                "sales",
                queue="custom-q",
                cpu="10",
                adm=("custom-cq", psa(cpu=("on-demand", "10"))),
            ),
            W("new-job", "sales", queue="custom-q", cpu="10"),
        ],
        extra_cqs=[custom],
        extra_lqs=[lq("custom-q", "sales", "custom-cq")],
    )
    assert qr(r, "sales/new-job") == (
        "False",
        "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 5 more needed, "
        "untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted",
    )
    assert r.left() == {"custom-cq": ["sales/new-job"]}
    assert r.wl("sales/new-job")["status"]["resourceRequests"] == [
        {"name": "main", "resources": {"cpu": "10"}}
    ]


@upstream("flavors with mixed taint mismatch and exceeding limits")
def test_mixed_taint_and_exceeding_limits_message():
    custom = cq(
        "custom-cq2",
        rg(fq("spot-tainted", cpu=("20", "20")), fq("on-demand", cpu=("5", "5"))),
        strategy="StrictFIFO",
    )
    r = run_cycle(
        [W("new-job2", "sales", queue="custom-q2", cpu="10")],
        extra_cqs=[custom],
        extra_lqs=[lq("custom-q2", "sales", "custom-cq2")],
    )
    assert qr(r, "sales/new-job2") == (
        "False",
        "ExceedsMaxQuota",
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor on-demand, previously considered "
        "podsets requests (0) + current podset request (10) > maximum capacity (5), "
        "untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted",
    )
    assert r.left() == {"custom-cq2": ["sales/new-job2"]}


@upstream("flavors are structurally incompatible")
def test_structurally_incompatible_flavors_message():
    custom = cq(
        "custom-cq3",
        rg(fq("spot-tainted", cpu=("20", "20")), fq("spot-tainted-2", cpu=("5", "5"))),
        strategy="StrictFIFO",
    )
    r = run_cycle(
        [W("new-job3", "sales", queue="custom-q3", cpu="1")],
        extra_cqs=[custom],
        extra_lqs=[lq("custom-q3", "sales", "custom-cq3")],
    )
    assert qr(r, "sales/new-job3") == (
        "False",
        "NoMatchingFlavor",
        "couldn't assign flavors to pod set main: untolerated taint {key val NoSchedule <nil>} in flavor spot-tainted, "
        "untolerated taint {key val2 NoSchedule <nil>} in flavor spot-tainted-2",
    )
    assert r.left() == {"custom-cq3": ["sales/new-job3"]}


@upstream("single clusterQueue full")
def test_single_cluster_queue_full():
    r = run_cycle(
        [
            W("new", "sales", ps("one", 11, cpu="1"), queue="main"),
            W(
                "assigned",
                "sales",
                ps("one", 40, cpu="1"),
                adm=("sales", psa("one", 40, cpu=("default", "40"))),
            ),
        ]
    )
    assert summary(r) == {"sales/assigned": "sales one[cpu=default]x40"}
    assert qr(r, "sales/new") == (
        "False",
        "WaitingForQuota",
        "couldn't assign flavors to pod set one: "
        "insufficient unused quota for cpu in flavor default, 1 more needed",
    )
    assert r.left() == {"sales": ["sales/new"]}


@upstream("failed to match clusterQueue selector")
def test_namespace_selector_mismatch():
    r = run_cycle([W("new", "sales", ps("one", 1, cpu="1"), queue="blocked")])
    assert summary(r) == {}
    assert qr(r, "sales/new")[2] == "workload namespace doesn't match ClusterQueue selector"
    assert r.inadmissible() == {"eng-alpha": ["sales/new"]} and r.left() == {}


@upstream("admit in different cohorts")
def test_admit_in_different_cohorts():
    r = run_cycle(
        [
            W("new", "sales", ps("one", 1, cpu="1"), queue="main"),
            W("new", "eng-alpha", ps("one", 51, cpu="1"), queue="main"),
        ]
    )
    assert summary(r) == {
        "sales/new": "sales one[cpu=default]x1",
        "eng-alpha/new": "eng-alpha one[cpu=on-demand]x51",
    }


@upstream("admit in same cohort with no borrowing")
def test_admit_in_same_cohort_no_borrowing():
    r = run_cycle(
        [
            W("new", "eng-alpha", ps("one", 40, cpu="1"), queue="main"),
            W("new", "eng-beta", ps("one", 40, cpu="1"), queue="main"),
        ]
    )
    assert summary(r) == {
        "eng-alpha/new": "eng-alpha one[cpu=on-demand]x40",
        "eng-beta/new": "eng-beta one[cpu=on-demand]x40",
    }


@upstream("assign multiple resources and flavors")
def test_assign_multiple_resources_and_flavors():
    r = run_cycle(
        [
            W(
                "new",
                "eng-beta",
                ps("one", 10, cpu="6", **R(**{"example.com/gpu": "1"})),
                ps("two", 40, cpu="1"),
                queue="main",
            )
        ]
    )
    assert summary(r) == {
        "eng-beta/new": "eng-beta one[cpu=on-demand,example.com/gpu=model-a]x10 two[cpu=spot]x40"
    }
    assert r.usage("eng-beta/new") == [{"cpu": "60", "example.com/gpu": "10"}, {"cpu": "40"}]


@upstream("cannot borrow if cohort was assigned and would result in overadmission")
def test_cannot_borrow_if_cohort_assigned_overadmission():
    r = run_cycle(
        [
            W("new", "eng-alpha", ps("one", 45, cpu="1"), queue="main"),
            W("new", "eng-beta", ps("one", 56, cpu="1"), queue="main"),
        ]
    )
    assert summary(r) == {"eng-alpha/new": "eng-alpha one[cpu=on-demand]x45"}
    assert qr(r, "eng-beta/new") == (
        "False",
        "WaitingForQuota",
        "Workload no longer fits after processing another workload",
    )
    assert r.left() == {"eng-beta": ["eng-beta/new"]}


@upstream("can borrow if cohort was assigned and will not result in overadmission")
def test_can_borrow_if_cohort_assigned_no_overadmission():
    r = run_cycle(
        [
            W("new", "eng-alpha", ps("one", 45, cpu="1"), queue="main"),
            W("new", "eng-beta", ps("one", 55, cpu="1"), queue="main"),
        ]
    )
    assert summary(r) == {
        "eng-alpha/new": "eng-alpha one[cpu=on-demand]x45",
        "eng-beta/new": "eng-beta one[cpu=on-demand]x55",
    }


@upstream("can borrow if needs reclaim from cohort in different flavor")
def test_can_borrow_if_needs_reclaim_in_different_flavor():
    r = run_cycle(
        [
            W("can-reclaim", "eng-alpha", queue="main", cpu="100"),
            W("needs-to-borrow", "eng-beta", queue="main", cpu="1"),
            W("user-on-demand", "eng-beta", cpu="50", adm=("eng-beta", psa(cpu=("on-demand", "50")))),
            W("user-spot", "eng-beta", cpu="1", adm=("eng-beta", psa(cpu=("spot", "1")))),
        ]
    )
    assert summary(r) == {
        "eng-beta/user-spot": "eng-beta main[cpu=spot]x1",
        "eng-beta/user-on-demand": "eng-beta main[cpu=on-demand]x1",
        "eng-beta/needs-to-borrow": "eng-beta main[cpu=on-demand]x1",
    }
    assert qr(r, "eng-alpha/can-reclaim")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 50 more needed, "
        "insufficient unused quota for cpu in flavor spot, 1 more needed"
    )
    assert r.left() == {"eng-alpha": ["eng-alpha/can-reclaim"]}


@upstream("workload exceeds lending limit when borrow in cohort")
def test_exceeds_lending_limit_when_borrowing():
    r = run_cycle(
        [
            W("a", "lend", cpu="2", adm=("lend-b", psa(cpu=("default", "2")))),
            W("b", "lend", queue="lend-b-queue", cpu="3"),
        ]
    )
    assert summary(r) == {"lend/a": "lend-b main[cpu=default]x1"}
    assert (
        qr(r, "lend/b")[2]
        == "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed"
    )
    assert r.inadmissible() == {"lend-b": ["lend/b"]}


def _hier(lending: str) -> dict:
    return dict(
        cohorts=[cohort("root"), cohort("child", parent="root")],
        extra_cqs=[
            cq(
                "cq-lender",
                rg(fq("on-demand", cpu=("10", None, lending))),
                cohort="child",
                selector=sel("eng"),
            ),
            cq("cq-borrower", rg(fq("on-demand", cpu=("5", "10"))), cohort="child", selector=sel("eng")),
        ],
        extra_lqs=[lq("lq-lender", "eng-alpha", "cq-lender"), lq("lq-borrower", "eng-alpha", "cq-borrower")],
    )


@upstream("hierarchical cohort respects lending limit when borrowing")
def test_hierarchical_cohort_respects_lending_limit():
    r = run_cycle(
        [
            W("wl-existing", "eng-alpha", cpu="5", adm=("cq-borrower", psa(cpu=("on-demand", "5")))),
            W("wl-pending", "eng-alpha", queue="lq-borrower", cpu="4"),
        ],
        **_hier("3"),
    )
    assert summary(r) == {"eng-alpha/wl-existing": "cq-borrower main[cpu=on-demand]x1"}
    assert qr(r, "eng-alpha/wl-pending")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota "
        "for cpu in flavor on-demand, 1 more needed"
    )
    assert r.inadmissible() == {"cq-borrower": ["eng-alpha/wl-pending"]}


@upstream("hierarchical cohort allows borrowing up to lending limit")
def test_hierarchical_cohort_borrows_up_to_lending_limit():
    r = run_cycle(
        [
            W("wl-existing", "eng-alpha", cpu="5", adm=("cq-borrower", psa(cpu=("on-demand", "5")))),
            W("wl-borrowing", "eng-alpha", queue="lq-borrower", cpu="5"),
        ],
        **_hier("5"),
    )
    assert summary(r) == {
        "eng-alpha/wl-existing": "cq-borrower main[cpu=on-demand]x1",
        "eng-alpha/wl-borrowing": "cq-borrower main[cpu=on-demand]x1",
    }


@upstream("cannot borrow resource not listed in clusterQueue")
def test_resource_not_listed_in_cluster_queue():
    r = run_cycle([W("new", "eng-alpha", queue="main", **R(**{"example.com/gpu": "1"}))])
    assert (
        qr(r, "eng-alpha/new")[2]
        == "couldn't assign flavors to pod set main: resource example.com/gpu unavailable in ClusterQueue"
    )
    assert r.left() == {"eng-alpha": ["eng-alpha/new"]}


@upstream("not enough resources to borrow, fallback to next flavor; WhenCanPreempt: TryNextFlavor")
def test_not_enough_to_borrow_falls_back_to_next_flavor():
    r = run_cycle(
        [
            W("new", "eng-alpha", ps("one", 60, cpu="1"), queue="main"),
            W(
                "existing",
                "eng-beta",
                ps("one", 45, cpu="1"),
                adm=("eng-beta", psa("one", 45, cpu=("on-demand", "45"))),
            ),
        ]
    )
    assert summary(r) == {
        "eng-alpha/new": "eng-alpha one[cpu=spot]x60",
        "eng-beta/existing": "eng-beta one[cpu=on-demand]x45",
    }


@upstream("workload should not fit in nonexistent clusterQueue")
def test_nonexistent_cluster_queue():
    r = run_cycle([W("foo", "sales", queue="cq-nonexistent-queue", cpu="1")])
    assert summary(r) == {} and r.left() == {} and r.inadmissible() == {}


@upstream("workload should not fit in clusterQueue with nonexistent flavor")
def test_cluster_queue_with_nonexistent_flavor():
    r = run_cycle([W("foo", "sales", queue="flavor-nonexistent-queue", cpu="1")])
    assert summary(r) == {}
    assert r.left() == {"flavor-nonexistent-cq": ["sales/foo"]}


@upstream("no overadmission while borrowing")
def test_no_overadmission_while_borrowing():
    gamma = cq(
        "eng-gamma",
        rg(fq("on-demand", cpu=("50", "10")), fq("spot", cpu=("0", "100"))),
        cohort="eng",
        preemption=ANY_LOWER,
    )
    existing = W(
        "existing",
        "eng-gamma",
        ps("borrow-on-demand", 51, cpu="1"),
        ps("use-all-spot", 100, cpu="1"),
        adm=(
            "eng-gamma",
            psa("borrow-on-demand", 51, cpu=("on-demand", "51")),
            psa("use-all-spot", 100, cpu=("spot", "100")),
        ),
    )
    r = run_cycle(
        [
            W("new", "eng-beta", ps("one", 50, cpu="1"), queue="main"),
            W("new-alpha", "eng-alpha", ps("one", 1, cpu="1"), queue="main"),
            W("new-gamma", "eng-gamma", ps("one", 50, cpu="1"), queue="main"),
            existing,
        ],
        extra_cqs=[gamma],
        extra_lqs=[lq("main", "eng-gamma", "eng-gamma")],
        created={"new": -2, "new-alpha": -1, "new-gamma": 0, "existing": -3},
    )
    assert summary(r) == {
        "eng-gamma/existing": "eng-gamma borrow-on-demand[cpu=on-demand]x51 use-all-spot[cpu=spot]x100",
        "eng-beta/new": "eng-beta one[cpu=on-demand]x50",
        "eng-alpha/new-alpha": "eng-alpha one[cpu=on-demand]x1",
    }
    assert qr(r, "eng-gamma/new-gamma")[2] == (
        "couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor on-demand, 41 more needed, "
        "insufficient unused quota for cpu in flavor spot, 50 more needed"
    )
    assert r.inadmissible() == {"eng-gamma": ["eng-gamma/new-gamma"]}
    assert r.preempted() == set()


@upstream("partial admission disabled, multiple variable pod sets")
def test_multiple_pod_sets_exceed_max_capacity_message():
    r = run_cycle(
        [
            W(
                "new",
                "sales",
                ps("one", 20, cpu="1"),
                ps("two", 30, cpu="1"),
                ps("three", 15, cpu="1"),
                queue="main",
            )
        ]
    )
    assert qr(r, "sales/new")[2] == (
        "couldn't assign flavors to pod set three: insufficient quota for cpu in flavor default, "
        "previously considered podsets requests (50) + current podset request (15) "
        "> maximum capacity (50)"
    )
    assert r.left() == {"sales": ["sales/new"]}


def _co3() -> dict:
    q = rg(fq("default", r1=("10", "10"), r2=("10", "10")))
    return dict(
        extra_cqs=[cq(n, q, cohort="co", preemption=ANY_LOWER) for n in ("cq1", "cq2", "cq3")],
        extra_lqs=[lq(f"lq{i}", "sales", f"cq{i}") for i in (1, 2, 3)],
    )


@upstream("two workloads can borrow different resources from the same flavor in the same cycle")
def test_two_workloads_borrow_different_resources_same_cycle():
    r = run_cycle(
        [W("wl1", "sales", queue="lq1", prio=-1, r1="16"), W("wl2", "sales", queue="lq2", prio=-2, r2="16")],
        **_co3(),
    )
    assert summary(r) == {"sales/wl1": "cq1 main[r1=default]x1", "sales/wl2": "cq2 main[r2=default]x1"}


@upstream(
    "two workloads can borrow the same resources from the same flavor in the same cycle if fits in the cohort quota"
)
def test_two_workloads_borrow_same_resource_when_cohort_fits():
    r = run_cycle(
        [W("wl1", "sales", queue="lq1", prio=-1, r1="16"), W("wl2", "sales", queue="lq2", prio=-2, r1="14")],
        **_co3(),
    )
    assert summary(r) == {"sales/wl1": "cq1 main[r1=default]x1", "sales/wl2": "cq2 main[r1=default]x1"}


@upstream(
    "only one workload can borrow one resources from the same flavor in the same cycle if cohort quota cannot fit"
)
def test_only_one_workload_borrows_when_cohort_cannot_fit():
    r = run_cycle(
        [W("wl1", "sales", queue="lq1", prio=-1, r1="16"), W("wl2", "sales", queue="lq2", prio=-2, r1="16")],
        **_co3(),
    )
    assert summary(r) == {"sales/wl1": "cq1 main[r1=default]x1"}
    assert qr(r, "sales/wl2")[2] == "Workload no longer fits after processing another workload"
    assert r.left() == {"cq2": ["sales/wl2"]}


@upstream("not enough resources")
def test_not_enough_resources():
    r = run_cycle([W("new", "sales", ps("one", 1, cpu="100"), queue="main")])
    assert qr(r, "sales/new") == (
        "False",
        "ExceedsMaxQuota",
        "couldn't assign flavors to pod set one: insufficient quota for cpu in flavor default, "
        "previously considered podsets requests (0) + current podset request (100) > maximum capacity (50)",
    )
    assert r.left() == {"sales": ["sales/new"]}


@upstream("admit workload with zero-quantity request for resource not in ClusterQueue")
def test_zero_quantity_request_for_resource_not_in_cluster_queue():
    r = run_cycle([W("zero-resource-wl", "sales", queue="main", cpu="1", **R(**{"example.com/gpu": "0"}))])
    assert summary(r) == {"sales/zero-resource-wl": "sales main[cpu=default]x1"}


@upstream("pending admission check with nofit and fit flavors")
def test_pending_check_with_nofit_and_fit_flavors():
    w = W("pending-check", "eng-beta", queue="main", cpu="80")
    w["status"]["admissionChecks"] = [
        {"name": "check", "state": "Pending", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
    r = run_cycle([w])
    assert summary(r) == {"eng-beta/pending-check": "eng-beta main[cpu=spot]x1"}


@upstream("admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor")
def test_second_flavor_when_first_needs_preemption_try_next():
    q = cq(
        "preempt-attempts-cq",
        rg(fq("on-demand", cpu="1"), fq("spot", cpu="1")),
        preemption={"withinClusterQueue": "LowerPriority"},
        fungibility={"whenCanPreempt": "TryNextFlavor"},
    )
    r = run_cycle(
        [
            W(
                "blocker",
                "eng-alpha",
                queue="preempt-attempts-lq",
                cpu="1",
                prio=50,
                adm=("preempt-attempts-cq", psa(cpu=("on-demand", "1"))),
            ),
            W("test-wl", "eng-alpha", queue="preempt-attempts-lq", cpu="1", prio=100),
        ],
        extra_cqs=[q],
        extra_lqs=[lq("preempt-attempts-lq", "eng-alpha", "preempt-attempts-cq")],
    )
    assert summary(r) == {
        "eng-alpha/test-wl": "preempt-attempts-cq main[cpu=spot]x1",
        "eng-alpha/blocker": "preempt-attempts-cq main[cpu=on-demand]x1",
    }
    assert r.preempted() == set()


@upstream("prevent integer overflow when sum of requests over podsets exceeds MaxInt64")
def test_no_overflow_when_summing_pod_sets():
    q = cq("overflow-cq", rg(fq("default", cpu="10000")))
    r = run_cycle(
        [
            W(
                "vuln-wl",
                "default",
                ps("ps1", 1, cpu="1000000m"),
                ps("ps2", 1, cpu="9223372036854775000m"),
                queue="overflow-queue",
            )
        ],
        extra_cqs=[q],
        extra_lqs=[lq("overflow-queue", "default", "overflow-cq")],
    )
    assert qr(r, "default/vuln-wl")[2] == (
        "couldn't assign flavors to pod set ps2: insufficient quota for cpu in flavor default, previously considered "
        "podsets requests (1k) + current podset request (9223372036854775) > maximum capacity (10k)"
    )
    assert r.inadmissible() == {"overflow-cq": ["default/vuln-wl"]}


# -- preemption ---------------------------------------------------------------------------------------------
def victim_msg(r, ref: str) -> str:
    return r.condition(ref, "Preempted")["message"]


def S(
    name: str,
    ns: str,
    cq_name: str,
    flavor: str,
    res: str,
    qty: str,
    prio: int | None = None,
    queue: str = "",
) -> dict:
    """``SimpleReserveQuota``: one ``main`` pod set holding ``qty`` of ``res`` in ``flavor``."""
    return W(name, ns, queue=queue, prio=prio, adm=(cq_name, psa(**{res: (flavor, qty)})), **{res: qty})


@upstream("preempt workloads in ClusterQueue and cohort")
def test_preempt_in_cluster_queue_and_cohort():
    r = run_cycle(
        [
            W("preemptor", "eng-beta", queue="main", cpu="20", job_uid="job-preemptor"),
            S("use-all-spot", "eng-alpha", "eng-alpha", "spot", "cpu", "100"),
            S("low-1", "eng-beta", "eng-beta", "on-demand", "cpu", "30", prio=-1),
            S("low-2", "eng-beta", "eng-beta", "on-demand", "cpu", "10", prio=-2),
            S("borrower", "eng-alpha", "eng-alpha", "on-demand", "cpu", "60"),
        ]
    )
    uid = r.uid("eng-beta/preemptor")
    assert r.preempted() == {"eng-beta/low-2", "eng-alpha/borrower"}
    assert victim_msg(r, "eng-alpha/borrower") == preempted_msg(
        uid, "job-preemptor", "reclaim", "/eng/eng-beta", "/eng/eng-alpha"
    )
    assert victim_msg(r, "eng-beta/low-2") == preempted_msg(
        uid, "job-preemptor", "cq", "/eng/eng-beta", "/eng/eng-beta"
    )
    assert qr(r, "eng-beta/preemptor") == (
        "False",
        "WaitingForPreemptedWorkloads",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 20 more needed, "
        "insufficient unused quota for cpu in flavor spot, 20 more needed. Pending the preemption of 2 workload(s)",
    )
    assert r.left() == {"eng-beta": ["eng-beta/preemptor"]}
    assert set(summary(r)) == {
        "eng-alpha/use-all-spot",
        "eng-beta/low-1",
        "eng-beta/low-2",
        "eng-alpha/borrower",
    }


@upstream("multiple CQs need preemption")
def test_multiple_cluster_queues_need_preemption():
    r = run_cycle(
        [
            W("preemptor", "eng-beta", queue="other", prio=-1, cpu="1", job_uid="job-preemptor"),
            W("pending", "eng-alpha", queue="other", prio=1, cpu="1"),
            S("use-all", "eng-alpha", "other-alpha", "on-demand", "cpu", "100"),
        ],
        extra_cqs=[
            cq("other-alpha", rg(fq("on-demand", cpu=("50", "50"))), cohort="other"),
            cq("other-beta", rg(fq("on-demand", cpu=("50", "10"))), cohort="other", preemption=ANY_LOWER),
        ],
        extra_lqs=[lq("other", "eng-alpha", "other-alpha"), lq("other", "eng-beta", "other-beta")],
    )
    assert r.preempted() == {"eng-alpha/use-all"}
    assert victim_msg(r, "eng-alpha/use-all") == preempted_msg(
        r.uid("eng-beta/preemptor"), "job-preemptor", "reclaim", "/other/other-beta", "/other/other-alpha"
    )
    assert qr(r, "eng-alpha/pending")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu "
        "in flavor on-demand, 1 more needed"
    )
    assert qr(r, "eng-beta/preemptor")[2].endswith("1 more needed. Pending the preemption of 1 workload(s)")
    assert r.left() == {"other-beta": ["eng-beta/preemptor"]}
    assert r.inadmissible() == {"other-alpha": ["eng-alpha/pending"]}


def _other3() -> dict:
    return dict(
        extra_cqs=[
            cq("other-alpha", rg(fq("on-demand", cpu="2")), cohort="other", preemption=ANY_LOWER),
            cq("other-beta", rg(fq("on-demand", cpu="2")), cohort="other"),
            cq("other-gamma", rg(fq("on-demand", cpu="2")), cohort="other"),
        ],
        extra_lqs=[
            lq("other", "eng-alpha", "other-alpha"),
            lq("other", "eng-beta", "other-beta"),
            lq("other", "eng-gamma", "other-gamma"),
        ],
    )


@upstream("minimal preemptions when target queue is exhausted")
def test_minimal_preemptions_when_target_queue_exhausted():
    wls = [
        S("a1", "eng-alpha", "other-alpha", "on-demand", "cpu", "1", prio=-2, queue="other"),
        S("a2", "eng-alpha", "other-alpha", "on-demand", "cpu", "1", prio=-2, queue="other"),
        S("a3", "eng-alpha", "other-alpha", "on-demand", "cpu", "1", prio=-1, queue="other"),
        *[
            S(f"b{i}", "eng-beta", "other-beta", "on-demand", "cpu", "1", prio=0, queue="other")
            for i in (1, 2, 3)
        ],
        W("incoming", "eng-alpha", queue="other", prio=0, cpu="2", job_uid="job-incoming"),
    ]
    r = run_cycle(wls, **_other3())
    assert r.preempted() == {"eng-alpha/a1", "eng-alpha/a2"}
    assert victim_msg(r, "eng-alpha/a1") == preempted_msg(
        r.uid("eng-alpha/incoming"), "job-incoming", "cq", "/other/other-alpha", "/other/other-alpha"
    )
    assert qr(r, "eng-alpha/incoming")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu "
        "in flavor on-demand, 2 more needed. Pending the preemption of 2 workload(s)"
    )
    assert r.left() == {"other-alpha": ["eng-alpha/incoming"]}


@upstream("A workload is only eligible to do preemptions if it fits fully within nominal quota")
def test_preemption_only_if_fits_within_nominal():
    r = run_cycle(
        [
            S("a1", "eng-alpha", "other-alpha", "on-demand", "cpu", "1", prio=-1, queue="other"),
            S("b1", "eng-beta", "other-beta", "on-demand", "cpu", "1", prio=-1, queue="other"),
            W("incoming", "eng-alpha", queue="other", prio=1, cpu="3"),
        ],
        extra_cqs=_other3()["extra_cqs"][:2],
        extra_lqs=_other3()["extra_lqs"][:2],
    )
    assert r.preempted() == set()
    assert qr(r, "eng-alpha/incoming")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu "
        "in flavor on-demand, 1 more needed"
    )
    assert r.inadmissible() == {"other-alpha": ["eng-alpha/incoming"]}


def _two_lower(alpha: str, beta: str, borrow: bool = False, bank: bool = False) -> dict:
    p = {"withinClusterQueue": "LowerPriority"}
    if borrow:
        p["borrowWithinCohort"] = {"policy": "LowerPriority"}
    cqs = [
        cq("other-alpha", rg(fq("default", cpu=alpha)), cohort="other", preemption=p),
        cq("other-beta", rg(fq("default", cpu=beta)), cohort="other", preemption=p),
    ]
    if bank:
        cqs.append(cq("resource-bank", rg(fq("default", cpu="1")), cohort="other"))
    return dict(
        extra_cqs=cqs,
        extra_lqs=[lq("other", "eng-alpha", "other-alpha"), lq("other", "eng-beta", "other-beta")],
    )


@upstream("multiple preemptions without borrowing")
def test_multiple_preemptions_without_borrowing():
    r = run_cycle(
        [
            S("a1", "eng-alpha", "other-alpha", "default", "cpu", "2", prio=0, queue="other"),
            S("b1", "eng-beta", "other-beta", "default", "cpu", "2", prio=0, queue="other"),
            W("preemptor", "eng-alpha", queue="other", prio=100, cpu="2", job_uid="job-preemptor"),
            W("preemptor", "eng-beta", queue="other", prio=100, cpu="2", job_uid="job-preemptor"),
        ],
        **_two_lower("2", "2"),
    )
    assert r.preempted() == {"eng-alpha/a1", "eng-beta/b1"}
    for ns, q in (("eng-alpha", "other-alpha"), ("eng-beta", "other-beta")):
        assert victim_msg(r, f"{ns}/{'a1' if ns == 'eng-alpha' else 'b1'}") == preempted_msg(
            r.uid(f"{ns}/preemptor"), "job-preemptor", "cq", f"/other/{q}", f"/other/{q}"
        )
        assert qr(r, f"{ns}/preemptor")[2] == (
            "couldn't assign flavors to pod set main: insufficient unused quota for "
            "cpu in flavor default, 2 more needed. Pending the preemption of 1 workload(s)"
        )
    assert r.left() == {"other-alpha": ["eng-alpha/preemptor"], "other-beta": ["eng-beta/preemptor"]}


@upstream("multiple preemptions preemption possible after earlier workload fits")
def test_preemption_possible_after_earlier_workload_fits():
    r = run_cycle(
        [
            S("b1", "eng-beta", "other-beta", "default", "cpu", "2", prio=0, queue="other"),
            W("fit", "eng-alpha", queue="other", prio=100, cpu="1"),
            W("preemptor", "eng-beta", queue="other", prio=99, cpu="2", job_uid="job-preemptor"),
        ],
        **_two_lower("1", "2"),
    )
    assert r.preempted() == {"eng-beta/b1"}
    assert summary(r)["eng-alpha/fit"] == "other-alpha main[cpu=default]x1"
    assert qr(r, "eng-beta/preemptor")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for "
        "cpu in flavor default, 1 more needed. Pending the preemption of 1 workload(s)"
    )
    assert r.left() == {"other-beta": ["eng-beta/preemptor"]}


@upstream("multiple preemptions skip preemption when shared limited resource")
def test_skip_preemption_when_shared_limited_resource():
    r = run_cycle(
        [
            S("a1", "eng-alpha", "other-alpha", "default", "cpu", "2", prio=0, queue="other"),
            S("b1", "eng-beta", "other-beta", "default", "cpu", "2", prio=0, queue="other"),
            W("preemptor", "eng-alpha", queue="other", prio=100, cpu="3", job_uid="job-preemptor"),
            W("pretending-preemptor", "eng-beta", queue="other", prio=99, cpu="3"),
        ],
        **_two_lower("2", "2", borrow=True, bank=True),
    )
    assert r.preempted() == {"eng-alpha/a1"}
    assert qr(r, "eng-alpha/preemptor")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for "
        "cpu in flavor default, 2 more needed. Pending the preemption of 1 workload(s)"
    )
    assert qr(r, "eng-beta/pretending-preemptor") == (
        "False",
        "WaitingForQuota",
        "Workload no longer fits after processing another workload",
    )
    assert r.left() == {
        "other-alpha": ["eng-alpha/preemptor"],
        "other-beta": ["eng-beta/pretending-preemptor"],
    }


def _gpu2(beta_preempts: bool) -> dict:
    p = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"}
    return dict(
        extra_cqs=[
            cq(
                "other-alpha",
                rg(fq("on-demand", gpu="10"), fq("spot", gpu="10")),
                cohort="other",
                preemption=p,
            ),
            cq(
                "other-beta",
                rg(fq("on-demand", gpu="0"), fq("spot", gpu="0")),
                cohort="other",
                preemption=p if beta_preempts else None,
            ),
        ],
        extra_lqs=[lq("other", "eng-alpha", "other-alpha"), lq("other", "eng-beta", "other-beta")],
    )


@upstream("prefer reclamation over cq priority based preemption")
def test_prefer_reclamation_over_cq_priority_preemption():
    r = run_cycle(
        [
            S("a1", "eng-alpha", "other-alpha", "on-demand", "gpu", "5", prio=50, queue="other"),
            S("b1", "eng-beta", "other-beta", "spot", "gpu", "5", prio=50, queue="other"),
            W("preemptor", "eng-alpha", queue="other", prio=100, gpu="6", job_uid="job-preemptor"),
        ],
        **_gpu2(True),
    )
    assert r.preempted() == {"eng-beta/b1"}
    assert victim_msg(r, "eng-beta/b1") == preempted_msg(
        r.uid("eng-alpha/preemptor"), "job-preemptor", "reclaim", "/other/other-alpha", "/other/other-beta"
    )
    assert qr(r, "eng-alpha/preemptor")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor on-demand, 1 more needed, "
        "insufficient unused quota for gpu in flavor spot, 1 more needed. Pending the preemption of 1 workload(s)"
    )


@upstream(
    "prefer first preemption flavor when second flavor requires both reclaim and cq priority preemption"
)
def test_prefer_first_flavor_when_second_needs_reclaim_and_cq_preemption():
    r = run_cycle(
        [
            S("a1", "eng-alpha", "other-alpha", "on-demand", "gpu", "5", prio=50, queue="other"),
            S("a2", "eng-alpha", "other-alpha", "spot", "gpu", "5", prio=50, queue="other"),
            S("b1", "eng-beta", "other-beta", "spot", "gpu", "5", prio=50, queue="other"),
            W("preemptor", "eng-alpha", queue="other", prio=100, gpu="6", job_uid="job-preemptor"),
        ],
        **_gpu2(False),
    )
    assert r.preempted() == {"eng-alpha/a1"}
    assert victim_msg(r, "eng-alpha/a1") == preempted_msg(
        r.uid("eng-alpha/preemptor"), "job-preemptor", "cq", "/other/other-alpha", "/other/other-alpha"
    )
    assert qr(r, "eng-alpha/preemptor")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor on-demand, 1 more needed, "
        "insufficient unused quota for gpu in flavor spot, 6 more needed. Pending the preemption of 1 workload(s)"
    )


@upstream("prefer first preemption flavor when second flavor also requires cq preemption")
def test_prefer_first_flavor_when_second_also_needs_cq_preemption():
    r = run_cycle(
        [
            S("a1", "eng-alpha", "other-alpha", "on-demand", "gpu", "6", prio=50, queue="other"),
            S("a2", "eng-alpha", "other-alpha", "spot", "gpu", "5", prio=50, queue="other"),
            S("b1", "eng-beta", "other-beta", "spot", "gpu", "5", prio=9001, queue="other"),
            W("preemptor", "eng-alpha", queue="other", prio=100, gpu="5", job_uid="job-preemptor"),
        ],
        **_gpu2(False),
    )
    assert r.preempted() == {"eng-alpha/a1"}
    assert qr(r, "eng-alpha/preemptor")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor on-demand, 1 more needed, "
        "insufficient unused quota for gpu in flavor spot, 5 more needed. Pending the preemption of 1 workload(s)"
    )


@upstream("workload requiring reclaimation prioritized over wl in another full cq")
def test_reclaiming_workload_prioritized_over_full_cq():
    r = run_cycle(
        [
            S("Admitted-Workload-1", "eng-alpha", "CQ1", "on-demand", "gpu", "5", queue="lq"),
            W("WL1", "eng-alpha", queue="lq", gpu="10"),
            W("WL2", "eng-beta", queue="lq", gpu="10", job_uid="job-WL2"),
            S("Admitted-Workload-2", "eng-gamma", "CQ3", "on-demand", "gpu", "5", prio=0, queue="lq"),
            S("Admitted-Workload-3", "eng-gamma", "CQ3", "on-demand", "gpu", "5", prio=1, queue="lq"),
        ],
        extra_cqs=[
            cq("CQ1", rg(fq("on-demand", gpu="10")), cohort="other"),
            cq(
                "CQ2",
                rg(fq("on-demand", gpu="10")),
                cohort="other",
                preemption={"reclaimWithinCohort": "Any"},
            ),
            cq("CQ3", rg(fq("on-demand", gpu="0")), cohort="other"),
        ],
        extra_lqs=[lq("lq", "eng-alpha", "CQ1"), lq("lq", "eng-beta", "CQ2"), lq("lq", "eng-gamma", "CQ3")],
        created={"WL1": 0, "WL2": 1},
    )
    assert r.preempted() == {"eng-gamma/Admitted-Workload-2"}
    assert victim_msg(r, "eng-gamma/Admitted-Workload-2") == preempted_msg(
        r.uid("eng-beta/WL2"), "job-WL2", "reclaim", "/other/CQ2", "/other/CQ3"
    )
    assert qr(r, "eng-alpha/WL1")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for gpu in "
        "flavor on-demand, 5 more needed"
    )
    assert qr(r, "eng-beta/WL2")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for gpu in "
        "flavor on-demand, 5 more needed. Pending the preemption of 1 workload(s)"
    )
    assert r.left() == {"CQ2": ["eng-beta/WL2"]}
    assert r.inadmissible() == {"CQ1": ["eng-alpha/WL1"]}


def _ab(policy: str) -> dict:
    return dict(
        extra_cqs=[
            cq(
                "ClusterQueueA",
                rg(fq("on-demand", gpu="2")),
                cohort="root",
                preemption={"reclaimWithinCohort": policy},
            ),
            cq("ClusterQueueB", rg(fq("on-demand", gpu="0")), cohort="root"),
        ],
        extra_lqs=[lq("lq", "eng-alpha", "ClusterQueueA"), lq("lq", "eng-beta", "ClusterQueueB")],
    )


def _ab_workloads() -> list[dict]:
    return [
        S("a1-admitted", "eng-alpha", "ClusterQueueA", "on-demand", "gpu", "1", queue="lq"),
        W("a2-pending", "eng-alpha", queue="lq", gpu="2"),
        W("b1-pending", "eng-beta", queue="lq", gpu="1"),
    ]


@upstream("capacity not blocked when lending clusterqueue can reclaim (ReclaimWithinCohort=Any)")
def test_capacity_not_blocked_when_lender_can_reclaim():
    r = run_cycle(_ab_workloads(), **_ab("Any"), created={"a2-pending": -1})
    assert summary(r) == {
        "eng-alpha/a1-admitted": "ClusterQueueA main[gpu=on-demand]x1",
        "eng-beta/b1-pending": "ClusterQueueB main[gpu=on-demand]x1",
    }
    assert qr(r, "eng-alpha/a2-pending")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for "
        "gpu in flavor on-demand, 1 more needed"
    )
    assert r.left() == {} and r.inadmissible() == {"ClusterQueueA": ["eng-alpha/a2-pending"]}


@upstream(
    "capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=LowerPriority)"
)
def test_capacity_blocked_when_lender_reclaims_lower_priority_only():
    r = run_cycle(_ab_workloads(), **_ab("LowerPriority"), created={"a2-pending": -1})
    assert summary(r) == {"eng-alpha/a1-admitted": "ClusterQueueA main[gpu=on-demand]x1"}
    assert qr(r, "eng-beta/b1-pending")[2] == "Workload no longer fits after processing another workload"
    assert r.left() == {"ClusterQueueB": ["eng-beta/b1-pending"]}
    assert r.inadmissible() == {"ClusterQueueA": ["eng-alpha/a2-pending"]}


@upstream("capacity blocked when lending clusterqueue not guaranteed to reclaim (ReclaimWithinCohort=Never)")
def test_capacity_blocked_when_lender_never_reclaims():
    r = run_cycle(_ab_workloads(), **_ab("Never"), created={"a2-pending": -1})
    assert summary(r) == {"eng-alpha/a1-admitted": "ClusterQueueA main[gpu=on-demand]x1"}
    assert qr(r, "eng-beta/b1-pending")[2] == "Workload no longer fits after processing another workload"
    assert r.left() == {"ClusterQueueB": ["eng-beta/b1-pending"]}
    assert r.inadmissible() == {"ClusterQueueA": ["eng-alpha/a2-pending"]}


@upstream("in a hierarchical cohort, workload borrowing less is scheduled first")
def test_hierarchical_cohort_borrowing_less_first():
    r = run_cycle(
        [
            W("guaranteed", "eng-alpha", ps("one", 1, cpu="4"), queue="lq-guaranteed", prio=0),
            W("best-effort", "eng-alpha", ps("one", 1, cpu="4"), queue="lq-best-effort", prio=3),
        ],
        cohorts=[cohort("root"), cohort("guaranteed", rg(fq("default", cpu="4")), parent="root")],
        extra_cqs=[
            cq("guaranteed", rg(fq("default", cpu="0")), cohort="guaranteed"),
            cq("best-effort", rg(fq("default", cpu="0")), cohort="root"),
        ],
        extra_lqs=[
            lq("lq-guaranteed", "eng-alpha", "guaranteed"),
            lq("lq-best-effort", "eng-alpha", "best-effort"),
        ],
    )
    assert summary(r) == {"eng-alpha/guaranteed": "guaranteed one[cpu=default]x1"}
    assert qr(r, "eng-alpha/best-effort")[2] == "Workload no longer fits after processing another workload"
    assert r.left() == {"best-effort": ["eng-alpha/best-effort"]}


@upstream("don't assign flavor if there are no candidates for preemption")
def test_no_flavor_without_preemption_candidates():
    cq1 = cq(
        "cq1",
        rg(fq("on-demand", cpu=("0", "1")), fq("spot", cpu=("0", "1"))),
        cohort="cohort",
        preemption={
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority"},
        },
        fungibility={"whenCanPreempt": "MayStopSearch", "whenCanBorrow": "MayStopSearch"},
    )
    cq2 = cq("cq2", rg(fq("on-demand", cpu="1"), fq("spot", cpu="1")), cohort="cohort")
    r = run_cycle(
        [
            S("admitted", "eng-alpha", "cq2", "on-demand", "cpu", "1", prio=0, queue="lq2"),
            W("new", "eng-alpha", queue="lq1", cpu="1", prio=100),
        ],
        extra_cqs=[cq1, cq2],
        extra_lqs=[lq("lq1", "eng-alpha", "cq1"), lq("lq2", "eng-alpha", "cq2")],
    )
    assert summary(r) == {
        "eng-alpha/new": "cq1 main[cpu=spot]x1",
        "eng-alpha/admitted": "cq2 main[cpu=on-demand]x1",
    }
    assert r.preempted() == set()


@upstream("preempt when workload requests zero of a resource not defined in ClusterQueue")
def test_preempt_with_zero_request_of_undefined_resource():
    q = cq(
        "preempt-zero-gpu-cq", rg(fq("default", cpu="4")), preemption={"withinClusterQueue": "LowerPriority"}
    )
    r = run_cycle(
        [
            W(
                "preemptor",
                "sales",
                queue="preempt-zero-gpu-lq",
                cpu="2",
                job_uid="job-preemptor",
                **R(**{"example.com/gpu": "0"}),
            ),
            S(
                "low-priority",
                "sales",
                "preempt-zero-gpu-cq",
                "default",
                "cpu",
                "4",
                prio=-1,
                queue="preempt-zero-gpu-lq",
            ),
        ],
        extra_cqs=[q],
        extra_lqs=[lq("preempt-zero-gpu-lq", "sales", "preempt-zero-gpu-cq")],
    )
    assert r.preempted() == {"sales/low-priority"}
    assert victim_msg(r, "sales/low-priority") == preempted_msg(
        r.uid("sales/preemptor"), "job-preemptor", "cq", "/preempt-zero-gpu-cq", "/preempt-zero-gpu-cq"
    )
    assert qr(r, "sales/preemptor")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
        "flavor default, 2 more needed. Pending the preemption of 1 workload(s)"
    )
    assert r.left() == {"preempt-zero-gpu-cq": ["sales/preemptor"]}


def _pref(name: str, preference: str) -> dict:
    return dict(
        extra_cqs=[
            cq(
                f"{name}-cq",
                rg(fq("on-demand", cpu=("5", "0")), fq("spot", cpu=("0", "5"))),
                cohort=f"{name}-cohort",
                preemption={"withinClusterQueue": "LowerPriority"},
                fungibility={
                    "whenCanBorrow": "TryNextFlavor",
                    "whenCanPreempt": "TryNextFlavor",
                    "preference": preference,
                },
            ),
            cq(f"{name}-lender", rg(fq("on-demand", cpu="0"), fq("spot", cpu="5")), cohort=f"{name}-cohort"),
        ],
        extra_lqs=[lq(f"{name}-queue", "default", f"{name}-cq")],
    )


@upstream("PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing in second")
def test_preemption_over_borrowing_preempts_in_first_flavor():
    r = run_cycle(
        [
            S("low-pob", "default", "pob-cq", "on-demand", "cpu", "5", prio=-1, queue="pob-queue"),
            W("high-pob", "default", queue="pob-queue", prio=0, cpu="5", job_uid="job-high-pob"),
        ],
        **_pref("pob", "PreemptionOverBorrowing"),
    )
    assert r.preempted() == {"default/low-pob"}
    assert victim_msg(r, "default/low-pob") == preempted_msg(
        r.uid("default/high-pob"), "job-high-pob", "cq", "/pob-cohort/pob-cq", "/pob-cohort/pob-cq"
    )
    assert qr(r, "default/high-pob")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu "
        "in flavor on-demand, 5 more needed. Pending the preemption of 1 workload(s)"
    )
    assert r.left() == {"pob-cq": ["default/high-pob"]}


@upstream("BorrowingOverPreemption preference: borrow in second flavor instead of preempting in first")
def test_borrowing_over_preemption_borrows_in_second_flavor():
    r = run_cycle(
        [
            S("low-bop", "default", "bop-cq", "on-demand", "cpu", "5", prio=-1, queue="bop-queue"),
            W("high-bop", "default", queue="bop-queue", prio=0, cpu="5"),
        ],
        **_pref("bop", "BorrowingOverPreemption"),
    )
    assert r.preempted() == set()
    assert summary(r) == {
        "default/low-bop": "bop-cq main[cpu=on-demand]x1",
        "default/high-bop": "bop-cq main[cpu=spot]x1",
    }


@upstream(
    "PreemptionOverBorrowing preference: select fitting second flavor over first flavor with no preemption candidates"
)
def test_preemption_over_borrowing_picks_fitting_flavor_over_no_candidates():
    r = run_cycle(
        [
            S("admitted-nopc", "default", "nopc-cq", "on-demand", "cpu", "5", prio=0, queue="nopc-queue"),
            W("pending-nopc", "default", queue="nopc-queue", prio=0, cpu="5"),
        ],
        cohorts=[
            cohort("nopc-root", rg(fq("on-demand", cpu="0"), fq("spot", cpu="5"))),
            cohort("nopc-mid", parent="nopc-root"),
        ],
        extra_cqs=[
            cq(
                "nopc-cq",
                rg(fq("on-demand", cpu=("5", "0")), fq("spot", cpu="0")),
                cohort="nopc-mid",
                preemption={"withinClusterQueue": "LowerPriority"},
                fungibility={
                    "whenCanBorrow": "TryNextFlavor",
                    "whenCanPreempt": "TryNextFlavor",
                    "preference": "PreemptionOverBorrowing",
                },
            ),
            cq("nopc-sibling", rg(fq("on-demand", cpu="5"), fq("spot", cpu="0")), cohort="nopc-mid"),
        ],
        extra_lqs=[lq("nopc-queue", "default", "nopc-cq")],
    )
    assert summary(r) == {
        "default/admitted-nopc": "nopc-cq main[cpu=on-demand]x1",
        "default/pending-nopc": "nopc-cq main[cpu=spot]x1",
    }


@upstream(
    "preemption while borrowing, workload waiting for preemption should not block a borrowing workload in another CQ"
)
def test_waiting_preemptor_does_not_block_borrower_in_other_cq():
    bwc = {"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": {"policy": "LowerPriority"}}
    r = run_cycle(
        [
            W("a", "eng-alpha", queue="lq_a", cpu="3"),
            W("b", "eng-beta", queue="lq_b", cpu="1"),
            W("admitted_a", "eng-alpha", queue="lq_a", cpu="2", adm=("cq_a", psa(cpu=("default", "2")))),
        ],
        extra_cqs=[
            cq("cq_shared", rg(fq("default", cpu=("4", "0"))), cohort="preemption-while-borrowing"),
            cq(
                "cq_a", rg(fq("default", cpu=("0", "3"))), cohort="preemption-while-borrowing", preemption=bwc
            ),
            cq("cq_b", rg(fq("default", cpu="0")), cohort="preemption-while-borrowing", preemption=bwc),
        ],
        extra_lqs=[lq("lq_a", "eng-alpha", "cq_a"), lq("lq_b", "eng-beta", "cq_b")],
        created={"admitted_a": -1, "a": 1, "b": 2},
    )
    assert summary(r) == {
        "eng-alpha/admitted_a": "cq_a main[cpu=default]x1",
        "eng-beta/b": "cq_b main[cpu=default]x1",
    }
    assert qr(r, "eng-alpha/a")[2] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
        "flavor default, 2 more needed"
    )
    assert r.inadmissible() == {"cq_a": ["eng-alpha/a"]}
    assert r.preempted() == set()
