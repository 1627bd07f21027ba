"""Issue 13, items 1 and 4, acceptance 1: Kueue Concurrent Admission and a ProvisioningRequest check on plan A,
on the virtual twin with the tutorial's cluster, pools and queue configuration plus each mechanism's manifests,
under (a) plan A available, (b) on-demand stocked out for 2 h then available, (c) on-demand stocked out for the
whole run. Two tutorial RayJobs, one hour each; DWS grants after 30 min. ``fallback_scenarios.py`` builds the
runs; ``docs/fallbacks.md`` (section 3) tabulates the same figures. Times are minutes after the first
submission.

What upstream's documentation and code say, and what these runs show:
- Concurrent Admission starts a job on whichever Variant is admitted first and, with ``TryPreferredFlavors``,
  migrates it to a preferred flavor when that Variant is admitted later (the job restarts); with
  ``RetainFirstAdmission`` it stays.
- A Variant is admitted on quota plus its flavor's admission checks. Without a check on ``on-demand``, the
  ``on-demand`` Variant wins on quota alone even when GCE has no VM, and the ``dws`` Variant is deactivated: a
  stock-out is not escaped (research kueue.md §3.8).
- With a ``best-effort-atomic-scale-up`` check on ``on-demand``, a stock-out leaves that check Pending
  (Provisioned=False ``CapacityIsNotFound``; the autoscaler retries with its 1-10 min backoff, no Failed
  condition, so Kueue has nothing to retry or evict): alone it makes the job wait on plan A for capacity; raced
  against ``dws`` by Concurrent Admission, plan B wins.
"""

from __future__ import annotations

from functools import cache

import pytest

from .fallback_scenarios import Run, queue_docs, run

M = 60


@cache
def _run(
    mechanism: str,
    case: str,
    mode: str = "TryPreferredFlavors",
    cls: str = "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
) -> Run:
    return run(mechanism, case, mode=mode, plan_a_class=cls)


def starts(r: Run, job: int) -> list[tuple[int, str]]:
    return [(s // M, f) for s, f in r.jobs[f"rayjob-tpu-v6e-dws-{job}"].starts]


def job(r: Run, n: int):
    return r.jobs[f"rayjob-tpu-v6e-dws-{n}"]


def finished_min(r: Run, n: int) -> int | None:
    f = job(r, n).finished
    return None if f is None else f // M


# -- the manifests ---------------------------------------------------------------------------------------
def test_concurrent_admission_manifests_are_the_tutorials_plus_the_policy():
    docs = {(d["kind"], d["metadata"]["name"]): d for d in queue_docs("race")}
    cq = docs[("ClusterQueue", "cluster-queue")]
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["spec"]["concurrentAdmissionPolicy"] == {"migration": {"mode": "TryPreferredFlavors"}}
    assert [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]] == ["on-demand", "dws"]
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "dws-prov", "onFlavors": ["dws"]},
        {"name": "on-demand-prov", "onFlavors": ["on-demand"]},
    ]
    assert (
        docs[("ProvisioningRequestConfig", "on-demand-config")]["spec"]["provisioningClassName"]
        == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    )
    assert ("ResourceFlavor", "default-cpu") not in docs


# -- Concurrent Admission with the tutorial's queue config verbatim -----------------------------------------
def test_verbatim_tutorial_queue_with_policy_admits_nothing():
    """One flavor per Variant for every pod set: the head (nodeSelector default-pool) never matches on-demand
    or dws, the TPU workers never fit default-cpu (0 chips)."""
    r = run("concurrent-verbatim", "available", horizon=3600)
    rep = job(r, 1)
    assert rep.starts == [] and rep.cost == 0
    assert set(rep.variants) == {"default-cpu", "on-demand", "dws"}
    for flavor in ("on-demand", "dws"):
        status, reason, msg = rep.variants[flavor]["conditions"]["QuotaReserved"]
        assert (status, reason) == ("False", "NoMatchingFlavor")
        assert msg.startswith(
            f"couldn't assign flavors to pod set head: flavor {flavor} doesn't match node affinity"
        )
        assert "skipping flavor default-cpu due to WorkloadAllowedResourceFlavorAnnotation annotation" in msg
    r.twin.close()


# -- Concurrent Admission alone (TryPreferredFlavors) ----------------------------------------------------------
@pytest.mark.slow
def test_concurrent_a_plan_a_available_job2_starts_on_dws_then_migrates_to_on_demand():
    r = _run("concurrent", "available")
    assert starts(r, 1)[-1] == (0, "on-demand") and finished_min(r, 1) == 62
    # job 2: the dws Variant is admitted after the 30 min DWS queue; when job 1 frees on-demand, the on-demand
    # Variant is admitted, the dws Variant is evicted (FlavorMigration) and the job restarts from scratch
    assert starts(r, 2) == [(31, "dws"), (61, "on-demand")]
    assert [s // M for s in job(r, 2).stops] == [61]
    assert finished_min(r, 2) == 122
    assert job(r, 2).pools == {"dws-pool", "on-demand-pool"}
    assert job(r, 2).cost > 2 * job(r, 1).cost * 0.6  # 30 min of DWS + 60 min of on-demand
    migrated = [m for o, reason, m in r.events("EvictedDueToFlavorMigration") if "dws-2-variant-dws" in o]
    assert migrated and "due to migration to more favorable resource flavor" in migrated[0]
    variants = job(r, 2).variants
    assert variants["dws"]["active"] is False
    assert variants["dws"]["conditions"]["Evicted"][1] == "FlavorMigration"
    assert (
        job(r, 2)
        .parent_conditions["Admitted"][2]
        .startswith("The variant rayjob-rayjob-tpu-v6e-dws-2-variant-on-demand-")
    )


@pytest.mark.slow
def test_concurrent_b_stockout_2h_job1_stays_on_on_demand_and_waits():
    r = _run("concurrent", "stockout-2h")
    # quota admits the on-demand Variant at once; its pods wait for VMs; the dws Variant is deactivated
    rep = job(r, 1)
    assert starts(r, 1)[0] == (0, "on-demand") and {f for _, f in rep.starts} == {"on-demand"}
    assert finished_min(r, 1) == 180 and rep.pools == {"on-demand-pool"}
    assert rep.variants["dws"]["active"] is False
    assert rep.variants["dws"]["conditions"]["QuotaReserved"][1] == "Deactivated"
    # waitForPodsReady evicts the Parent every 30 min (PodsReadyTimeout); the still-admitted on-demand Variant
    # re-admits it at once, so the job restarts in place (and only then: it starts once at 0; an extra stop and
    # start at 0 seen before came from the order two Variants created in one instant were processed in, which
    # followed their uid-derived names)
    assert [s // M for s in rep.stops][:3] == [30, 60, 90]
    assert starts(r, 2) == [(31, "dws")] and finished_min(r, 2) == 92


@pytest.mark.slow
def test_concurrent_c_stockout_job1_never_runs():
    r = _run("concurrent", "stockout")
    rep = job(r, 1)
    assert rep.finished is None and rep.cost == 0 and {f for _, f in rep.starts} == {"on-demand"}
    assert rep.variants["dws"]["active"] is False
    assert rep.variants["on-demand"]["conditions"]["Admitted"][0] == "True"
    assert finished_min(r, 2) == 92


# -- the ProvisioningRequest check on plan A alone ----------------------------------------------------------------
@pytest.mark.slow
def test_plan_a_check_a_available_scales_on_demand_through_a_provisioning_request():
    r = _run("plan-a-check", "available")
    assert starts(r, 1) == [(0, "on-demand")] and finished_min(r, 1) == 62
    assert starts(r, 2) == [(31, "dws")]
    names = {pr["metadata"]["name"]: pr for pr in r.twin.list("provisioningrequest", "default")}
    created = [
        m
        for o, _, m in r.events("ProvisioningRequestCreated")
        if o.startswith("rayjob-rayjob-tpu-v6e-dws-1-")
    ]
    assert created and "-on-demand-prov-1" in created[0]
    assert all(
        pr["spec"]["provisioningClassName"]
        in ("best-effort-atomic-scale-up.autoscaling.x-k8s.io", "queued-provisioning.gke.io")
        for pr in names.values()
    )


@pytest.mark.slow
def test_plan_a_check_b_stockout_2h_job1_holds_on_demand_quota_until_capacity():
    r = _run("plan-a-check", "stockout-2h")
    # the request stays Provisioned=False CapacityIsNotFound (no Failed condition): the check stays Pending,
    # the workload keeps its on-demand reservation, no pod is created, nothing is billed; the autoscaler's next
    # retry after the stock-out (backoff up to 10 min) scales the pool and the job starts on plan A
    assert starts(r, 1) == [(125, "on-demand")] and finished_min(r, 1) == 187
    assert job(r, 1).stops == []
    assert starts(r, 2) == [(31, "dws")] and finished_min(r, 2) == 92


def test_plan_a_check_c_stockout_job1_waits_with_a_pending_check():
    r = _run("plan-a-check", "stockout")
    rep = job(r, 1)
    assert rep.starts == [] and rep.cost == 0
    assert rep.parent_conditions["QuotaReserved"][0] == "True"
    assert rep.parent_conditions["Admitted"][:2] == ("False", "UnsatisfiedAdmissionChecks")
    pr = next(
        p
        for p in r.twin.list("provisioningrequest", "default")
        if p["spec"]["provisioningClassName"].startswith("best-effort")
    )
    conds = {c["type"]: (c["status"], c["reason"]) for c in pr["status"]["conditions"]}
    assert conds["Provisioned"] == ("False", "CapacityIsNotFound") and "Failed" not in conds
    wl = next(
        w
        for w in r.twin.list("workload", "default")
        if w["metadata"]["name"].startswith("rayjob-rayjob-tpu-v6e-dws-1-")
    )
    [check] = [c for c in wl["status"]["admissionChecks"] if c["name"] == "on-demand-prov"]
    assert check["state"] == "Pending"


@pytest.mark.slow
def test_plan_a_check_capacity_no_retry_is_retried_by_kueue_then_deactivated():
    """``check-capacity`` with ``noRetry: "true"`` fails at once: Kueue retries (60, 120, 240 s) and deactivates."""
    r = run(
        "plan-a-check",
        "available",
        plan_a_class="check-capacity.autoscaling.x-k8s.io",
        plan_a_params={"noRetry": "true"},
        horizon=3600,
    )
    rep = job(r, 1)
    assert rep.starts == []
    assert rep.parent_conditions["Evicted"][:2] == ("True", "DeactivatedDueToAdmissionCheck")
    assert len([1 for o, _, m in r.events("AdmissionCheckUpdated") if "dws-1-" in o and "to Retry" in m]) >= 1
    assert [m for o, _, m in r.events("AdmissionCheckRejected") if "dws-1-" in o][0].startswith(
        'Deactivated due to AdmissionCheck in Rejected state: "on-demand-prov"'
    )
    r.twin.close()


@pytest.mark.slow
def test_plan_a_check_capacity_class_never_scales_an_empty_pool():
    """``check-capacity`` only looks at existing nodes: the on-demand pool at 0 nodes never qualifies."""
    r = _run("plan-a-check", "available", cls="check-capacity.autoscaling.x-k8s.io")
    assert job(r, 1).starts == [] and starts(r, 2) == [(31, "dws")]


# -- the race: Concurrent Admission plus the plan-A check ------------------------------------------------------------
@pytest.mark.slow
def test_race_a_plan_a_available_job1_on_demand_job2_dws_then_migrates():
    r = _run("race", "available")
    assert starts(r, 1)[-1] == (0, "on-demand") and finished_min(r, 1) == 62
    assert starts(r, 2) == [(31, "dws"), (61, "on-demand")] and finished_min(r, 2) == 122


def test_race_b_stockout_2h_plan_b_wins_then_migration_restarts_job2():
    r = _run("race", "stockout-2h")
    assert starts(r, 1) == [(31, "dws")] and finished_min(r, 1) == 92
    assert job(r, 1).pools == {"dws-pool"}
    # job 1's on-demand Variant kept its reservation (check Pending) while job 1 ran on dws, and finished with it
    v = job(r, 1).variants["on-demand"]
    assert v["active"] is True and v["conditions"]["QuotaReserved"][0] == "True"
    assert v["conditions"]["Finished"][:2] == ("True", "Succeeded")
    # job 2 waits for the DWS pool (4 nodes, held by job 1) and then migrates when on-demand returns
    assert starts(r, 2) == [(103, "dws"), (126, "on-demand")] and finished_min(r, 2) == 189


def test_race_b_user_view_while_plan_a_is_stocked_out():
    """At 60 min: job 1 runs on its dws Variant; its on-demand Variant holds on-demand quota with the check
    Pending ("Capacity is not found, CA will try to find it later."), so job 2's on-demand Variant waits for quota."""
    r = run("race", "stockout-2h", horizon=3600)
    v = job(r, 1).variants
    assert v["dws"]["checks"] == [("dws-prov", "Ready", "Provisioning Request was successfully provisioned.")]
    assert v["on-demand"]["checks"] == [
        ("on-demand-prov", "Pending", "Capacity is not found, CA will try to find it later.")
    ]
    assert v["on-demand"]["conditions"]["Admitted"][:2] == ("False", "UnsatisfiedAdmissionChecks")
    assert (
        job(r, 1)
        .parent_conditions["Admitted"][2]
        .startswith("The variant rayjob-rayjob-tpu-v6e-dws-1-variant-dws-")
    )
    # (the reason alternates with the resumed flavor scan: WaitingForQuota on on-demand, then NoMatchingFlavor
    # "skipping flavor dws due to WorkloadAllowedResourceFlavorAnnotation annotation")
    status, reason, _ = job(r, 2).variants["on-demand"]["conditions"]["QuotaReserved"]
    assert status == "False" and reason in ("WaitingForQuota", "NoMatchingFlavor")
    assert any(
        "insufficient unused quota for google.com/tpu in flavor on-demand" in m
        for o, _, m in r.events("WaitingForQuota")
        if "dws-2-variant-on-demand" in o
    )
    r.twin.close()


def test_race_c_stockout_both_jobs_run_on_dws():
    r = _run("race", "stockout")
    assert starts(r, 1) == [(31, "dws")] and finished_min(r, 1) == 92
    assert starts(r, 2) == [(103, "dws")] and finished_min(r, 2) == 164
    assert {p for rep in r.jobs.values() for p in rep.pools} == {"dws-pool"}


@pytest.mark.slow
def test_race_pods_of_a_dws_variant_carry_no_provisioning_request_annotation():
    """v0.19.2: the job starts from the Parent, which has no admission checks (its Variant ran them), so the
    check's podSetUpdates (``autoscaling.x-k8s.io/consume-provisioning-request``) never reach the pods; they
    still land on the nodes provisioned for the Variant's request."""
    r = run("race", "stockout", horizon=2400)
    workers = [p for p in r.twin.list("pod", "default") if "-tpu-group-worker-" in p["metadata"]["name"]]
    assert len(workers) == 4
    for p in workers:
        assert p["spec"]["nodeName"].startswith("gke-tpu-cluster-dws-pool-")
        assert "autoscaling.x-k8s.io/consume-provisioning-request" not in (
            p["metadata"].get("annotations") or {}
        )
    r.twin.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "job1", "job2"),
    [
        ("available", (0, "on-demand"), [(31, "dws")]),
        ("stockout-2h", (31, "dws"), [(103, "dws")]),
        ("stockout", (31, "dws"), [(103, "dws")]),
    ],
)
def test_race_retain_first_admission_never_migrates(case, job1, job2):
    r = _run("race", case, mode="RetainFirstAdmission")
    assert starts(r, 1)[-1] == job1
    assert sorted(set(starts(r, 2))) == job2
    assert all(f == job2[0][1] for _, f in starts(r, 2))
    deact = [m for o, _, m in r.events("DeactivatedVariant") if "dws-2-" in o]
    assert deact and all(
        m.startswith("Variant Workload deactivated due to RetainFirstAdmission: another Variant")
        for m in deact
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", ["available", "stockout-2h", "stockout"])
def test_tutorial_baseline_for_comparison(case):
    """Without either mechanism (the tutorial as published): plan A on quota; in a stock-out job 1 is evicted by
    waitForPodsReady every 30 min plus backoff and comes back to on-demand (kueue#2560)."""
    r = _run("tutorial", case)
    assert {f for _, f in starts(r, 1)} == {"on-demand"}
    assert starts(r, 2) == [(31, "dws")]
    if case == "stockout":
        assert job(r, 1).finished is None and len(job(r, 1).stops) >= 5


@pytest.mark.slow
def test_deleting_the_job_deletes_parent_variants_and_their_requests():
    r = run("race", "stockout", horizon=600)
    t = r.twin
    assert len([w for w in t.list("workload", "default") if "-dws-1-" in w["metadata"]["name"]]) == 3
    t.delete("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    t.advance(60)
    assert [
        w["metadata"]["name"] for w in t.list("workload", "default") if "-dws-1-" in w["metadata"]["name"]
    ] == []
    assert [
        p["metadata"]["name"]
        for p in t.list("provisioningrequest", "default")
        if "-dws-1-" in p["metadata"]["name"]
    ] == []
    t.close()
