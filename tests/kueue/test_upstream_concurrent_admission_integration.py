"""Kueue's integration specs ``Concurrent Admission`` (test/integration/singlecluster/controller/concurrentadmission/
concurrent_admission_test.go, v0.19.2) ported by name onto the virtual twin.

Upstream runs Kueue's controllers and webhooks on envtest with the ``ConcurrentAdmission`` gate on, creates
Workloads directly (``ParentVariant()``: the Parent label) and plays the job's part itself:
``util.FinishEvictionForWorkloads`` unsets an evicted Parent's quota reservation as a job's reconciler would
once the job stopped. Here the same objects go through the twin's API (``Twin.apply``, ``Twin.patch``) and
every ``Eventually`` is a wait on the virtual clock (``Twin.advance``) followed by the assertion;
``Consistently`` asserts at every step of a wait. Issue 26: re-applying the ClusterQueue in the migration
specs made the scheduler evict the same Variant again and again at one virtual instant, so ``Twin.advance``
never returned; ``test_migration_advance_returns_in_bounded_wall_time`` keeps that shape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from flexq import Twin
from flexq.kueue.workload import is_admitted, is_evicted, unset_quota_reservation

GATE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    featureGates:
      ConcurrentAdmission: true
"""
NS = "concurrent-1"
PARENT_LABEL = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED = "kueue.x-k8s.io/workload-allowed-resource-flavors"
PREEMPTION_GATE = "kueue.x-k8s.io/concurrent-admission"
TIMEOUT = 10.0  # util.Timeout is 10 s of wall time upstream; here virtual seconds
CONSISTENT = 1.0  # util.ConsistentDuration
SHORT = 0.01  # util.ShortInterval


# -- the harness: upstream's builders and test/util helpers over the twin ---------------------------------
def flavor_quotas(name: str, cpu: str) -> dict[str, Any]:
    """``MakeFlavorQuotas(name).Resource(cpu, q)``."""
    return {"name": name, "resources": [{"name": "cpu", "nominalQuota": cpu}]}


def cluster_queue(
    name: str,
    flavors: list[dict[str, Any]],
    mode: str = "TryPreferredFlavors",
    last: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    preemption: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``MakeClusterQueue(name).ConcurrentAdmissionPolicy(mode)[.LastAcceptableFlavorName(last)]...``."""
    migration: dict[str, Any] = {"mode": mode}
    if last is not None:
        migration["constraints"] = {"lastAcceptableFlavorName": last}
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "concurrentAdmissionPolicy": {"migration": migration},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
    }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    if preemption:
        spec["preemption"] = preemption
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def setup(cq: dict[str, Any], flavors: list[str], before: Callable[[Twin], None] | None = None) -> Twin:
    """``BeforeEach``: the gate, the ResourceFlavors, the ClusterQueue and LocalQueue ``lq`` (both active);
    ``before`` creates what the ClusterQueue refers to (an AdmissionCheck)."""
    t = Twin(clock="virtual")
    t.apply(GATE)
    t.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    if before is not None:
        before(t)
    for f in flavors:
        t.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}})
    t.apply(cq)
    t.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": NS},
            "spec": {"clusterQueue": cq["metadata"]["name"]},
        }
    )
    eventually(t, lambda: active(t, "ClusterQueue", cq["metadata"]["name"]))
    eventually(t, lambda: active(t, "LocalQueue", "lq", NS))
    return t


def active(t: Twin, kind: str, name: str, ns: str | None = None) -> bool:
    obj = t.get(kind, name, ns)
    return any(
        c["type"] == "Active" and c["status"] == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def workload(name: str, cpu: str, parent: bool = True, priority: int | None = None) -> dict[str, Any]:
    """``MakeWorkload(name, ns).Request(cpu, q).Queue("lq")[.Priority(p)][.ParentVariant()]``."""
    spec: dict[str, Any] = {
        "queueName": "lq",
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
                        ],
                    }
                },
            }
        ],
    }
    if priority is not None:
        spec["priority"] = priority
    md: dict[str, Any] = {"name": name, "namespace": NS}
    if parent:
        md["labels"] = {PARENT_LABEL: "true"}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": md, "spec": spec}


def eventually(t: Twin, check: Callable[[], Any], timeout: float = TIMEOUT) -> None:
    """``gomega.Eventually(...).Should(Succeed())``: the check holds within ``timeout`` on the virtual clock."""
    waited = 0.0
    while True:
        try:
            if check() is not False:
                return
            err: AssertionError | None = None
        except AssertionError as exc:
            err = exc
        if waited >= timeout:
            raise AssertionError(f"not within {timeout}s of virtual time") from err
        t.advance(0.25)
        waited += 0.25


def consistently(t: Twin, check: Callable[[], Any], duration: float = CONSISTENT) -> None:
    """``gomega.Consistently``: the check holds at every ``ShortInterval`` over ``duration``."""
    waited = 0.0
    while waited < duration:
        assert check() is not False
        t.advance(SHORT * 10)
        waited += SHORT * 10
    assert check() is not False


def wl(t: Twin, name: str) -> dict[str, Any]:
    return t.get("Workload", name, NS)


def admitted_flavor(w: dict[str, Any]) -> str | None:
    adm = (w.get("status") or {}).get("admission")
    if not adm or not adm.get("podSetAssignments"):
        return None
    return adm["podSetAssignments"][0]["flavors"]["cpu"]


def variant_by_flavor(t: Twin, parent: str, flavor: str) -> dict[str, Any] | None:
    """``getVariantByFlavor``."""
    for item in t.list("Workload", NS):
        if item["metadata"]["name"] == parent:
            continue
        for owner in item["metadata"].get("ownerReferences") or []:
            if owner["name"] == parent and (item["metadata"].get("annotations") or {}).get(ALLOWED) == flavor:
                return item
    return None


def is_active(w: dict[str, Any]) -> bool:
    return w["spec"].get("active", True) is not False


def has_open_gate(w: dict[str, Any]) -> bool:
    """``workload.HasOpenPreemptionGate``."""
    return any(
        g.get("name") == PREEMPTION_GATE and g.get("position") == "Open"
        for g in (w.get("status") or {}).get("preemptionGates") or []
    )


def update_cq(t: Twin, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Get, change, ``k8sClient.Update``."""
    cq = t.get("ClusterQueue", name)
    change(cq)
    t.apply(cq)


def set_quota(index: int, cpu: str) -> Callable[[dict[str, Any]], None]:
    def change(cq: dict[str, Any]) -> None:
        cq["spec"]["resourceGroups"][0]["flavors"][index]["resources"][0]["nominalQuota"] = cpu

    return change


def finish_eviction(t: Twin, name: str) -> None:
    """``util.FinishEvictionForWorkloads``: wait for Evicted, then unset the quota reservation ("By test")."""
    eventually(t, lambda: is_evicted(wl(t, name)))
    cur = wl(t, name)
    if (cur.get("status") or {}).get("admission") is None:
        return
    unset_quota_reservation(cur, "Pending", "By test", t.now())
    status = dict(cur["status"])
    status.setdefault("admission", None)
    t.patch("Workload", name, {"status": status}, NS, subresource="status")


def parent_on(t: Twin, name: str, flavor: str) -> None:
    w = wl(t, name)
    assert is_admitted(w), w.get("status")
    assert admitted_flavor(w) == flavor


# -- Should assign flavors with respect to constraints ------------------------------------------------------
def constraints_twin() -> Twin:
    return setup(
        cluster_queue("cq-constraints", [flavor_quotas("reservation", "5"), flavor_quotas("spot", "5")]),
        ["reservation", "spot"],
    )


def test_creates_variants_for_all_flavors_in_the_cluster_queue():
    """upstream: "Creates variants for all flavors in the ClusterQueue"."""
    t = constraints_twin()
    t.create(workload("parent-wl-constraints", "1"))

    def both() -> None:
        assert variant_by_flavor(t, "parent-wl-constraints", "reservation") is not None
        assert variant_by_flavor(t, "parent-wl-constraints", "spot") is not None

    eventually(t, both)


def test_should_not_count_variant_workloads_in_unadmitted_workload_metrics():
    """upstream: "Should not count variant workloads in unadmitted workload metrics" (the twin models v0.19's
    default of ``UnadmittedWorkloadsObservability``, on)."""
    t = constraints_twin()
    t.create(workload("parent-wl-metrics", "100"))
    eventually(
        t,
        lambda: (
            variant_by_flavor(t, "parent-wl-metrics", "reservation") is not None
            and variant_by_flavor(t, "parent-wl-metrics", "spot") is not None
        ),
    )
    labels = {
        "cluster_queue": "cq-constraints",
        "reason": "NoReservation",
        "underlying_cause": "PendingEvaluation",
    }
    eventually(t, lambda: t.metric("kueue_unadmitted_workloads", labels) == 1.0)


# -- Should migrate to a target flavor if quota is released -------------------------------------------------
def test_should_migrate_to_the_preferred_flavor_when_it_becomes_available():
    """upstream: "should migrate to the preferred flavor when it becomes available"."""
    t = setup(
        cluster_queue("cq-migrate", [flavor_quotas("reservation", "0"), flavor_quotas("spot", "5")]),
        ["reservation", "spot"],
    )
    t.create(workload("parent-wl-migrate", "1"))
    eventually(t, lambda: parent_on(t, "parent-wl-migrate", "spot"))
    # Releasing quota on reservation
    update_cq(t, "cq-migrate", set_quota(0, "5"))
    finish_eviction(t, "parent-wl-migrate")
    eventually(t, lambda: parent_on(t, "parent-wl-migrate", "reservation"))

    def spot_deactivated() -> None:
        spot = variant_by_flavor(t, "parent-wl-migrate", "spot")
        assert spot is not None, "Variant for spot not found"
        assert not is_active(spot), "Variant for spot should be inactive"

    eventually(t, spot_deactivated)


# -- Should not migrate to a flavor below min target --------------------------------------------------------
def test_should_only_migrate_to_flavors_at_or_above_the_minimum_preferred_flavor():
    """upstream: "should only migrate to flavors at or above the minimum preferred flavor"."""
    t = setup(
        cluster_queue(
            "cq-no-migrate",
            [flavor_quotas("reservation", "0"), flavor_quotas("on-demand", "0"), flavor_quotas("spot", "5")],
            last="reservation",
        ),
        ["reservation", "on-demand", "spot"],
    )
    name = "parent-wl-no-migrate"
    t.create(workload(name, "1"))
    eventually(t, lambda: parent_on(t, name, "spot"))

    def on_demand_deactivated() -> None:
        od = variant_by_flavor(t, name, "on-demand")
        assert od is not None, "Variant for on-demand not found"
        assert not is_active(od), "Variant for on-demand should be inactive"

    eventually(t, on_demand_deactivated)
    # Releasing quota on on-demand: below lastAcceptableFlavorName, no migration
    update_cq(t, "cq-no-migrate", set_quota(1, "5"))
    consistently(t, lambda: admitted_flavor(wl(t, name)) == "spot")
    # Releasing quota on reservation
    update_cq(t, "cq-no-migrate", set_quota(0, "5"))
    finish_eviction(t, name)
    eventually(t, lambda: parent_on(t, name, "reservation"))


# -- ClusterQueue uses RetainFirstAdmission mode --------------------------------------------------------------
def test_should_not_migrate_to_a_preferred_flavor_when_it_becomes_available():
    """upstream: "should not migrate to a preferred flavor when it becomes available"."""
    t = setup(
        cluster_queue(
            "cq-hold",
            [flavor_quotas("reservation", "0"), flavor_quotas("spot", "5")],
            mode="RetainFirstAdmission",
        ),
        ["reservation", "spot"],
    )
    name = "parent-wl-hold"
    t.create(workload(name, "1"))
    eventually(t, lambda: parent_on(t, name, "spot"))

    def reservation_inactive() -> None:
        r = variant_by_flavor(t, name, "reservation")
        assert r is not None, "Variant for reservation not found"
        assert not is_active(r), "Variant for reservation should be inactive"

    eventually(t, reservation_inactive)
    update_cq(t, "cq-hold", set_quota(0, "5"))

    def stays() -> None:
        assert admitted_flavor(wl(t, name)) == "spot"
        reservation_inactive()

    consistently(t, stays)


# -- ClusterQueue has admission checks ----------------------------------------------------------------------
def admission_check(t: Twin) -> None:
    """``MakeAdmissionCheck("ac").ControllerName("ac-controller")`` and ``util.SetAdmissionCheckActive``."""
    t.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": "ac"},
            "spec": {"controllerName": "ac-controller"},
        }
    )
    conds = [
        {
            "type": "Active",
            "status": "True",
            "reason": "ByTest",
            "message": "by test",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    t.patch("AdmissionCheck", "ac", {"status": {"conditions": conds}}, subresource="status")


def test_should_wait_for_variant_admission_checks_before_admitting_parent_workload():
    """upstream: "Should wait for variant admission checks before admitting parent workload"."""
    t = setup(
        cluster_queue(
            "cq-ac",
            [flavor_quotas("reservation", "0"), flavor_quotas("provreq-flavor", "5")],
            checks=[{"name": "ac", "onFlavors": ["provreq-flavor"]}],
        ),
        ["reservation", "provreq-flavor"],
        before=admission_check,
    )
    name = "parent-wl-ac"
    t.create(workload(name, "1"))

    def reserved_not_admitted() -> None:
        v = variant_by_flavor(t, name, "provreq-flavor")
        assert v is not None, "Variant for provreq-flavor not found"
        assert (v.get("status") or {}).get("admission") is not None
        assert not is_admitted(v)

    eventually(t, reserved_not_admitted)
    consistently(t, lambda: not is_admitted(wl(t, name)))
    # Simulating Admission Check success on variant
    v = variant_by_flavor(t, name, "provreq-flavor")
    assert v is not None
    checks = [
        {
            "name": "ac",
            "state": "Ready",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "message": "Admission check succeeded",
        }
    ]
    t.patch(
        "Workload", v["metadata"]["name"], {"status": {"admissionChecks": checks}}, NS, subresource="status"
    )
    eventually(t, lambda: is_admitted(wl(t, v["metadata"]["name"])))

    def parent_admitted() -> None:
        p = wl(t, name)
        assert is_admitted(p)
        assert not (p.get("status") or {}).get("admissionChecks")
        assert admitted_flavor(p) == "provreq-flavor"

    eventually(t, parent_admitted)


# -- Variants require preemption to be admitted ---------------------------------------------------------------
def test_should_open_the_preemption_gate_for_only_the_most_preferred_variant_at_a_time():
    """upstream: "should open the preemption gate for only the most-preferred variant at a time"."""
    t = setup(
        cluster_queue(
            "cq-preemption-gate",
            [flavor_quotas("reservation", "1"), flavor_quotas("spot", "1")],
            mode="RetainFirstAdmission",
            preemption={"withinClusterQueue": "LowerPriority"},
        ),
        ["reservation", "spot"],
    )
    for i in range(2):
        t.create(workload(f"low-{i}", "1", parent=False, priority=0))
        eventually(t, lambda i=i: (wl(t, f"low-{i}").get("status") or {}).get("admission") is not None)
    name = "parent-wl-preemption-gate"
    t.create(workload(name, "1", priority=100))

    def reservation_open() -> None:
        r = variant_by_flavor(t, name, "reservation")
        assert r is not None, "Variant for reservation not found"
        assert has_open_gate(r), "reservation variant should have an open preemption gate"

    eventually(t, reservation_open)

    def spot_closed() -> None:
        s = variant_by_flavor(t, name, "spot")
        assert s is not None, "Variant for spot not found"
        assert not has_open_gate(s), (
            "spot variant gate must stay closed until the reservation variant's timeout"
        )

    consistently(t, spot_closed)


# -- Should react to changes in the ClusterQueue's resource flavors ------------------------------------------
def test_creates_a_variant_for_a_flavor_added_to_the_cluster_queue():
    """upstream: "creates a variant for a flavor added to the ClusterQueue"."""
    t = setup(
        cluster_queue("cq-resourceflavors", [flavor_quotas("reservation", "0"), flavor_quotas("spot", "0")]),
        ["reservation", "spot", "on-demand"],
    )
    name = "parent-wl-add"
    t.create(workload(name, "1"))
    eventually(
        t,
        lambda: (
            variant_by_flavor(t, name, "reservation") is not None
            and variant_by_flavor(t, name, "spot") is not None
        ),
    )
    update_cq(
        t,
        "cq-resourceflavors",
        lambda cq: cq["spec"]["resourceGroups"][0]["flavors"].append(flavor_quotas("on-demand", "0")),
    )
    eventually(t, lambda: variant_by_flavor(t, name, "on-demand") is not None)


# -- Should evict the parent when the admitted variant's flavor is removed -----------------------------------
def test_re_admits_the_parent_on_a_remaining_flavor():
    """upstream: "re-admits the parent on a remaining flavor"."""
    t = setup(
        cluster_queue("cq-evict", [flavor_quotas("reservation", "5"), flavor_quotas("spot", "0")]),
        ["reservation", "spot"],
    )
    name = "parent-wl-evict"
    t.create(workload(name, "1"))
    eventually(t, lambda: parent_on(t, name, "reservation"))

    def only_spot(cq: dict[str, Any]) -> None:
        cq["spec"]["resourceGroups"][0]["flavors"] = [flavor_quotas("spot", "5")]

    update_cq(t, "cq-evict", only_spot)
    eventually(t, lambda: variant_by_flavor(t, name, "reservation") is None)
    finish_eviction(t, name)
    eventually(t, lambda: parent_on(t, name, "spot"))


# -- issue 26: the migration scenario returns ----------------------------------------------------------------
def test_migration_advance_returns_in_bounded_wall_time():
    """The scenario of "should migrate to the preferred flavor when it becomes available" up to the quota
    change, then ``Twin.advance(1)`` with nobody finishing the Parent's eviction (the spec's job): it returns
    (on today's tree it never did: the scheduler re-evicted the spot Variant at one virtual instant), the
    spot Variant is evicted once for the migration and the Parent waits, evicted, on spot."""
    t = setup(
        cluster_queue("cq-migrate", [flavor_quotas("reservation", "0"), flavor_quotas("spot", "5")]),
        ["reservation", "spot"],
    )
    t.create(workload("parent-wl-migrate", "1"))
    eventually(t, lambda: parent_on(t, "parent-wl-migrate", "spot"))
    update_cq(t, "cq-migrate", set_quota(0, "5"))
    done = threading.Event()
    worker = threading.Thread(target=lambda: (t.advance(1), done.set()), daemon=True)
    worker.start()
    worker.join(60)  # a bound on a hang, not a speed target: a working tree returns in milliseconds
    if not done.is_set():
        pytest.fail("Twin.advance(1) did not return: the loop spins at one virtual instant")
    spot = variant_by_flavor(t, "parent-wl-migrate", "spot")
    assert spot is not None
    evictions = spot["status"]["schedulingStats"]["evictions"]
    assert evictions == [{"reason": "FlavorMigration", "underlyingCause": "", "count": 1}]
    parent = wl(t, "parent-wl-migrate")
    assert is_evicted(parent) and admitted_flavor(parent) == "spot"
