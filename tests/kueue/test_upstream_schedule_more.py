"""More cases of Kueue v0.19.2 ``pkg/scheduler/scheduler_test.go`` ``TestSchedule`` (one cycle each), on the
fixture of ``upstream_schedule.py``; each test names its upstream case in ``@upstream(...)``."""

from __future__ import annotations

from .kueue_builders import cq, fq, ps, psa, rg
from .test_upstream_schedule import W, qr, upstream
from .upstream_schedule import lq, run_cycle


@upstream("prevent integer overflow in ResourceValue conversion to MilliValue")
def test_no_overflow_in_milli_value_conversion():
    q = cq("overflow-cq", rg(fq("default", cpu="10")))
    r = run_cycle(
        [W("vuln-wl", "default", ps("ps1", 1, cpu="9223372036854776"), queue="overflow-queue")],
        extra_cqs=[q],
        extra_lqs=[lq("overflow-queue", "default", "overflow-cq")],
    )
    assert qr(r, "default/vuln-wl") == (
        "False",
        "ExceedsMaxQuota",
        "couldn't assign flavors to pod set ps1: insufficient quota for cpu in flavor default, previously "
        "considered podsets requests (0) + current podset request (9223372036854775807m) > maximum capacity (10)",
    )
    assert r.condition("default/vuln-wl", "Admitted")["reason"] == "NoReservation"
    assert r.inadmissible() == {"overflow-cq": ["default/vuln-wl"]}
    assert r.assignments() == {}


@upstream("workload-slice fits in single clusterQueue")
def test_workload_slice_fits_in_single_cluster_queue():
    old = W(
        "foo-1",
        "sales",
        ps("one", 10, cpu="1"),
        queue="main",
        adm=("sales", psa("one", 10, cpu=("default", "10000m"))),
    )
    new = W("foo-2", "sales", ps("one", 15, cpu="1"), queue="main")
    new["metadata"]["annotations"] = {"kueue.x-k8s.io/workload-slice-replacement-for": "sales/foo-1"}
    r = run_cycle([old, new])
    got = r.assignments()
    assert got["sales/foo-2"] == ("sales", [("one", {"cpu": "default"}, 15)])
    assert r.usage("sales/foo-2") == [{"cpu": "15"}]
    fin = r.condition("sales/foo-1", "Finished")
    assert (fin["status"], fin["reason"]) == ("True", "WorkloadSliceReplaced")
    # Upstream's fake client leaves UIDs empty ("UID: , JobUID: "); the store assigns one. A missing job UID
    # label is written as nothing, not "UNKNOWN" (scheduler.go replaceWorkloadSlice).
    assert fin["message"] == (
        f"Replaced to accommodate a workload (UID: {r.uid('sales/foo-2')}, JobUID: ) due to workload slice "
        "aggregation"
    )
    assert qr(r, "sales/foo-2")[:2] == ("True", "QuotaReserved")
    assert r.condition("sales/foo-2", "QuotaReserved")["message"] == "Quota reserved in ClusterQueue sales"
