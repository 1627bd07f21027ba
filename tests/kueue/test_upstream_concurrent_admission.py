"""Kueue's Concurrent Admission unit tests, ported case by case (Kueue v0.19.2, ff69552e):
``pkg/controller/concurrentadmission/controller_test.go`` (``TestReconcile``, ``TestFirstCandidateVariant``,
``TestClusterQueueFlavorsChanged``, ``TestParentsForClusterQueue``, ``TestCreateVariantsAlreadyExists``) and
``pkg/scheduler/scheduler_concurrent_admission_test.go`` (``TestScheduleConcurrentAdmission``).

Each test carries its upstream case name in ``@upstream``. ``TestReconcile`` runs every case twice upstream
(``UnadmittedWorkloadsObservability`` off and on); the twin models v0.19's default (on), so a reservation
cleared by the controller reads ``PendingEvaluation``. The harness (``upstream_concurrent_admission.py``)
says where flexq's store differs from upstream's fake client.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flexq.errors import Invalid
from flexq.kueue import concurrent_admission as ca
from flexq.kueue import variants
from flexq.kueue.workload import ts

from .upstream_concurrent_admission import (
    NOW,
    W,
    blocked,
    cond,
    reconcile_once,
    reserved,
    view,
    want,
)

UPSTREAM: list[str] = []
P = "wl-12345"
TIMEOUT = ca.PREEMPTION_TIMEOUT


def upstream(name: str) -> Callable:
    """Marks a test as the port of the upstream case ``name``."""
    UPSTREAM.append(name)

    def wrap(fn: Callable) -> Callable:
        fn.upstream = name  # type: ignore[attr-defined]
        return fn

    return wrap


def parent(queue: str = "lq", **kw) -> dict:
    return W(P, queue, parent=True, **kw)


def ev(obj: str, reason: str, message: str) -> tuple[str, str, str, str]:
    return (obj, "Normal", reason, message)


def created(name: str) -> tuple[str, str, str, str]:
    return ev(P, ca.REASON_CREATED, f'Variant Workload "default/{name}" created')


def ungated(name: str) -> tuple[str, str, str, str]:
    return ev(name, ca.REASON_UNGATED, f'Opened preemption gate for variant workload "default/{name}"')


def deactivated(name: str, why: str) -> tuple[str, str, str, str]:
    return ev(name, ca.REASON_DEACTIVATED, f"Variant Workload deactivated due to {why}")


def requeue(out) -> float | None:
    return None if out.result is None else out.result.requeue_after


def parent_admitted_on(cq_name: str, flavor: str, variant: str, *extra: dict) -> dict:
    adm = {
        "clusterQueue": cq_name,
        "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": "1"}}
        ],
    }
    return view(
        W(
            P,
            {
                "cq": "lq",
                "cq-migration": "lq-migration",
                "cq-migration-no-constraint": "lq-migration-no-constraint",
                "cq-hold": "lq-hold",
            }[cq_name],
            parent=True,
            adm=(
                adm,
                [
                    cond("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {cq_name}"),
                    cond("Admitted", True, "Admitted", f"The variant {variant} is admitted"),
                ],
            ),
            conds=list(extra),
        )
    )


# -- TestReconcile: creation and deletion -----------------------------------------------------------
@upstream("workload not found")
def test_workload_not_found():
    out = reconcile_once(None, name="non-existing")
    assert out.result is None and out.variants() == [] and out.events() == []


@upstream("workload is not parent or variant")
def test_workload_is_not_parent_or_variant():
    out = reconcile_once(W("wl", flavor=None), name="wl")
    assert out.parent("wl") == view(W("wl"))
    assert out.variants() == [] and out.events() == []


@upstream("parent workload without variants creates them")
def test_parent_without_variants_creates_them():
    out = reconcile_once(parent())
    spot, od = (variants.variant_name(P, out.parent_uid, f) for f in ("spot", "on-demand"))
    assert out.parent() == view(parent())
    assert out.variants() == want(W(spot, flavor="spot"), W(od, flavor="on-demand"))
    assert out.events() == sorted([created(spot), created(od)])
    for v in out.variant_objects():
        [ref] = v["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "name": P,
            "uid": out.parent_uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert variants.PARENT_LABEL not in (v["metadata"].get("labels") or {})
    # upstream's expected names come from a fake client that gives the Parent no UID and no GVK
    assert variants.variant_name(P, "", "spot", kind="", group="") == "wl-variant-spot-a2342"
    assert variants.variant_name(P, "", "on-demand", kind="", group="") == "wl-variant-on-demand-480a3"


@upstream("parent workload with missing variants; creates missing")
def test_parent_with_missing_variants_creates_missing():
    out = reconcile_once(parent(), [W("wl-variant-spot", flavor="spot")])
    od = variants.variant_name(P, out.parent_uid, "on-demand")
    assert out.variants() == want(W("wl-variant-spot", flavor="spot"), W(od, flavor="on-demand"))
    assert out.events() == [created(od)]


@upstream("flavor removed from ClusterQueue; variant is deleted")
def test_flavor_removed_variant_deleted():
    out = reconcile_once(
        parent(),
        [
            W("wl-variant-on-demand", flavor="on-demand"),
            W("wl-variant-spot", flavor="spot"),
            W("wl-variant-stale", flavor="stale"),
        ],
    )
    assert out.parent() == view(parent())
    assert out.variants() == want(
        W("wl-variant-on-demand", flavor="on-demand"), W("wl-variant-spot", flavor="spot")
    )
    assert out.events() == [
        ev(
            P,
            ca.REASON_DELETED,
            'Variant Workload "default/wl-variant-stale" deleted; flavor "stale" no longer in ClusterQueue',
        )
    ]


@upstream("admitted variant's flavor removed; variant deleted and parent evicted")
def test_admitted_variant_flavor_removed_parent_evicted():
    p = parent("lq-spot-only", adm=reserved("cq-spot-only", "on-demand"))
    out = reconcile_once(
        p,
        [
            W(
                "wl-variant-on-demand",
                "lq-spot-only",
                flavor="on-demand",
                adm=reserved("cq-spot-only", "on-demand"),
            ),
            W("wl-variant-spot", "lq-spot-only", flavor="spot"),
        ],
    )
    assert out.parent() == view(
        parent(
            "lq-spot-only",
            adm=reserved("cq-spot-only", "on-demand"),
            conds=[cond("Evicted", True, "ConcurrentAdmission", "No variant is running")],
        )
    )
    assert out.variants() == want(W("wl-variant-spot", "lq-spot-only", flavor="spot"))
    assert out.events() == [
        ev(
            P,
            ca.REASON_DELETED,
            'Variant Workload "default/wl-variant-on-demand" deleted; '
            'flavor "on-demand" no longer in ClusterQueue',
        )
    ]


# -- TestReconcile: preemption gates -----------------------------------------------------------------
@upstream("deleting the variant holding the open preemption gate opens the next one's gate")
def test_deleting_gate_holder_opens_next_gate():
    out = reconcile_once(
        parent("lq-spot-only"),
        [
            W(
                "wl-variant-on-demand",
                "lq-spot-only",
                flavor="on-demand",
                gate=("Open", NOW),
                conds=[blocked()],
            ),
            W("wl-variant-spot", "lq-spot-only", flavor="spot", conds=[blocked()]),
        ],
    )
    assert out.variants() == want(
        W("wl-variant-spot", "lq-spot-only", flavor="spot", gate=("Open", NOW), conds=[blocked()])
    )
    assert out.events() == sorted(
        [
            ev(
                P,
                ca.REASON_DELETED,
                'Variant Workload "default/wl-variant-on-demand" deleted; '
                'flavor "on-demand" no longer in ClusterQueue',
            ),
            ungated("wl-variant-spot"),
        ]
    )
    assert requeue(out) == TIMEOUT


@upstream("ungates the next-preferred variant once the open gate's preemption timeout elapses")
def test_ungates_next_after_timeout():
    od = W("wl-variant-on-demand", flavor="on-demand", gate=("Open", NOW - TIMEOUT), conds=[blocked()])
    out = reconcile_once(parent(), [od, W("wl-variant-spot", flavor="spot", conds=[blocked()])])
    assert out.variants() == want(
        od, W("wl-variant-spot", flavor="spot", gate=("Open", NOW), conds=[blocked()])
    )
    assert out.events() == [ungated("wl-variant-spot")]
    assert requeue(out) == TIMEOUT


@upstream("blocked variant has its preemption gate opened; non-blocked variant stays closed")
def test_blocked_variant_gate_opened():
    spot = W("wl-variant-spot", flavor="spot", gate=("Closed", NOW))
    out = reconcile_once(parent(), [W("wl-variant-on-demand", flavor="on-demand", conds=[blocked()]), spot])
    assert out.variants() == want(
        W("wl-variant-on-demand", flavor="on-demand", gate=("Open", NOW), conds=[blocked()]), spot
    )
    assert out.events() == [ungated("wl-variant-on-demand")]
    assert requeue(out) == TIMEOUT


@upstream("no variant requires preemption; no gate is opened")
def test_no_variant_requires_preemption():
    vs = [
        W("wl-variant-on-demand", flavor="on-demand", gate=("Closed", NOW)),
        W("wl-variant-spot", flavor="spot", gate=("Closed", NOW)),
    ]
    out = reconcile_once(parent(), vs)
    assert out.variants() == want(*vs) and out.events() == [] and requeue(out) is None


@upstream("waits for a more-preferred variant to be evaluated before ungating a lower-preference variant")
def test_waits_for_preferred_variant_evaluation():
    vs = [
        W("wl-variant-on-demand", flavor="on-demand"),
        W("wl-variant-spot", flavor="spot", conds=[blocked()]),
    ]
    out = reconcile_once(parent(), vs)
    assert out.variants() == want(*vs) and out.events() == [] and requeue(out) is None


@upstream("the most-preferred blocked variant is selected for ungating")
def test_most_preferred_blocked_selected():
    spot = W("wl-variant-spot", flavor="spot", conds=[blocked()])
    out = reconcile_once(parent(), [W("wl-variant-on-demand", flavor="on-demand", conds=[blocked()]), spot])
    assert out.variants() == want(
        W("wl-variant-on-demand", flavor="on-demand", gate=("Open", NOW), conds=[blocked()]), spot
    )
    assert out.events() == [ungated("wl-variant-on-demand")]
    assert requeue(out) == TIMEOUT


@upstream("a recently opened gate defers ungating the next variant until the timeout")
def test_recent_gate_defers_next():
    vs = [
        W("wl-variant-on-demand", flavor="on-demand", gate=("Open", NOW - 60)),
        W("wl-variant-spot", flavor="spot", conds=[blocked()]),
    ]
    out = reconcile_once(parent(), vs)
    assert out.variants() == want(*vs) and out.events() == []
    assert requeue(out) == TIMEOUT - 60


@upstream("the latest open-gate time among variants determines the wait")
def test_latest_open_gate_time_determines_wait():
    vs = [
        W(
            "wl-variant-reservation",
            "lq-migration-no-constraint",
            flavor="reservation",
            gate=("Open", NOW - 240),
        ),
        W("wl-variant-on-demand", "lq-migration-no-constraint", flavor="on-demand", gate=("Open", NOW - 60)),
        W("wl-variant-spot", "lq-migration-no-constraint", flavor="spot", conds=[blocked()]),
    ]
    out = reconcile_once(parent("lq-migration-no-constraint"), vs)
    assert out.variants() == want(*vs) and out.events() == []
    assert requeue(out) == TIMEOUT - 60


@upstream(
    "parent with a pre-existing preemption gate; created variants inherit it plus the ConcurrentAdmission gate"
)
def test_parent_gate_inherited():
    p = parent(gates=["other-gate"])
    out = reconcile_once(p)
    spot, od = (variants.variant_name(P, out.parent_uid, f) for f in ("spot", "on-demand"))
    assert out.parent() == view(p)
    assert out.variants() == want(
        W(spot, flavor="spot", gates=["other-gate", variants.PREEMPTION_GATE]),
        W(od, flavor="on-demand", gates=["other-gate", variants.PREEMPTION_GATE]),
    )
    assert out.events() == sorted([created(spot), created(od)])


# -- TestReconcile: aggregation and eviction ------------------------------------------------------------
@upstream("admitted variant syncs admission to parent")
def test_admitted_variant_syncs_admission_to_parent():
    vs = [
        W("wl-variant-spot", flavor="spot", adm=reserved("cq", "spot")),
        W("wl-variant-on-demand", flavor="on-demand"),
    ]
    out = reconcile_once(parent(), vs)
    assert out.parent() == parent_admitted_on("cq", "spot", "wl-variant-spot")
    assert out.variants() == want(*vs)


@upstream("no variant admitted; parent admitted; evict parent")
def test_no_variant_admitted_evicts_parent():
    vs = [W("wl-variant-spot", flavor="spot"), W("wl-variant-on-demand", flavor="on-demand")]
    out = reconcile_once(parent(adm=reserved("cq", "spot")), vs)
    assert out.parent() == view(
        parent(
            adm=reserved("cq", "spot"),
            conds=[cond("Evicted", True, "ConcurrentAdmission", "No variant is running")],
        )
    )
    assert out.variants() == want(*vs)


@upstream("admitted variant evicted; parent has quota; evict parent and wait")
def test_admitted_variant_evicted_parent_has_quota():
    preempted = cond("Evicted", True, "Preempted", "Evicted by preemption")
    vs = [
        W("wl-variant-spot", flavor="spot", adm=reserved("cq", "spot"), conds=[preempted]),
        W("wl-variant-on-demand", flavor="on-demand", active=False),
    ]
    out = reconcile_once(parent(adm=reserved("cq", "spot")), vs)
    assert out.parent() == view(
        parent(
            adm=reserved("cq", "spot"),
            conds=[cond("Evicted", True, "VariantEvicted", "Admitted variant was evicted")],
        )
    )
    assert out.variants() == want(*vs)
    assert out.events() == [] and requeue(out) is None


@upstream("admitted variant evicted; parent has no quota reservation; clear variant reservation")
def test_admitted_variant_evicted_parent_without_quota():
    preempted = cond("Evicted", True, "Preempted", "Evicted by preemption")
    vs = [
        W("wl-variant-spot", flavor="spot", adm=reserved("cq", "spot"), conds=[preempted]),
        W("wl-variant-on-demand", flavor="on-demand", active=False),
    ]
    out = reconcile_once(parent(), vs)
    assert out.parent() == view(parent())
    assert out.variants() == want(
        W(
            "wl-variant-spot",
            flavor="spot",
            conds=[
                cond("QuotaReserved", False, "PendingEvaluation", "Evicted by preemption"),
                cond("Admitted", False, "NoReservation", "The workload has no reservation"),
                preempted,
                cond("Requeued", True, "Preempted", "Evicted by preemption"),
            ],
        ),
        W("wl-variant-on-demand", flavor="on-demand"),
    )
    assert out.events() == [
        ev(
            "wl-variant-on-demand",
            ca.REASON_ACTIVATED,
            "Variant Workload activated due to no other Variant being admitted",
        )
    ]


# -- TestReconcile: migration policy -----------------------------------------------------------------------
def _three(queue: str, cq_name: str, admitted: str, inactive: tuple[str, ...] = ()) -> list[dict]:
    return [
        W(
            f"wl-variant-{f}",
            queue,
            flavor=f,
            active=f not in inactive,
            adm=reserved(cq_name, f) if f == admitted else None,
        )
        for f in ("reservation", "on-demand", "spot")
    ]


def _migration_case(queue: str, cq_name: str, admitted: str, inactive: tuple[str, ...], why: str):
    out = reconcile_once(parent(queue), _three(queue, cq_name, admitted))
    assert out.parent() == parent_admitted_on(cq_name, admitted, f"wl-variant-{admitted}")
    assert out.variants() == want(*_three(queue, cq_name, admitted, inactive))
    assert out.events() == sorted(deactivated(f"wl-variant-{f}", why) for f in inactive)


@upstream("with minTargetFlavor=reservation, variant admitted on spot, deactivate on-demand")
def test_min_target_reservation_admitted_spot():
    _migration_case(
        "lq-migration",
        "cq-migration",
        "spot",
        ("on-demand",),
        'being below lastAcceptableFlavor: "reservation" and another Variant admitted "default/wl-variant-spot"',
    )


@upstream("with minTargetFlavor=reservation, variant admitted on on-demand, deactivate spot")
def test_min_target_reservation_admitted_on_demand():
    _migration_case(
        "lq-migration",
        "cq-migration",
        "on-demand",
        ("spot",),
        'being below lastAcceptableFlavor: "reservation" and another Variant admitted '
        '"default/wl-variant-on-demand"',
    )


@upstream("with minTargetFlavor=reservation, variant admitted on reservation, deactivate spot and on-demand")
def test_min_target_reservation_admitted_reservation():
    _migration_case(
        "lq-migration",
        "cq-migration",
        "reservation",
        ("on-demand", "spot"),
        'being below lastAcceptableFlavor: "reservation" and another Variant admitted '
        '"default/wl-variant-reservation"',
    )


@upstream("without minTargetFlavor, variant admitted on spot, nothing deactivated")
def test_no_min_target_admitted_spot():
    _migration_case("lq-migration-no-constraint", "cq-migration-no-constraint", "spot", (), "")


@upstream("without minTargetFlavor, variant admitted on on-demand, deactivate spot")
def test_no_min_target_admitted_on_demand():
    _migration_case(
        "lq-migration-no-constraint",
        "cq-migration-no-constraint",
        "on-demand",
        ("spot",),
        'being lower priority than admitted Variant "default/wl-variant-on-demand"',
    )


@upstream("without minTargetFlavor, variant admitted on reservation, deactivate spot and on-demand")
def test_no_min_target_admitted_reservation():
    _migration_case(
        "lq-migration-no-constraint",
        "cq-migration-no-constraint",
        "reservation",
        ("on-demand", "spot"),
        'being lower priority than admitted Variant "default/wl-variant-reservation"',
    )


@upstream("RetainFirstAdmission, variant admitted on spot, deactivate reservation and on-demand")
def test_retain_first_admission():
    _migration_case(
        "lq-hold",
        "cq-hold",
        "spot",
        ("reservation", "on-demand"),
        'RetainFirstAdmission: another Variant "default/wl-variant-spot" is admitted',
    )


# -- TestReconcile: finished, deactivated, PodsReady -------------------------------------------------------
@upstream("parent marked finished, mark all variants finished")
def test_parent_finished_marks_variants():
    fin = cond("Finished", True, "Succeeded", "Job finished successfully")
    out = reconcile_once(
        parent(conds=[fin]),
        [W("wl-variant-on-demand", flavor="on-demand"), W("wl-variant-spot", flavor="spot")],
    )
    assert out.parent() == view(parent(conds=[fin]))
    assert out.variants() == want(
        W("wl-variant-on-demand", flavor="on-demand", conds=[fin]),
        W("wl-variant-spot", flavor="spot", conds=[fin]),
    )


@upstream("parent is not active, propagating deactivation to all variants")
def test_parent_not_active_deactivates_variants():
    out = reconcile_once(
        parent(active=False),
        [W("wl-variant-spot", flavor="spot"), W("wl-variant-on-demand", flavor="on-demand")],
    )
    assert out.parent() == view(parent(active=False))
    assert out.variants() == want(
        W("wl-variant-spot", flavor="spot", active=False),
        W("wl-variant-on-demand", flavor="on-demand", active=False),
    )
    why = 'Parent Workload "default/wl-12345" not active'
    assert out.events() == sorted(
        [deactivated("wl-variant-spot", why), deactivated("wl-variant-on-demand", why)]
    )


READY = cond("PodsReady", True, "PodsReady", "Pods are ready")
NOT_READY = cond("PodsReady", False, "PodsNotReady", "Pods are not ready")


@pytest.mark.parametrize(
    ("case", "before", "after"),
    [
        ("parent changes WaitForPodsReady from False to True, syncs to admitted variant", NOT_READY, READY),
        ("parent changes WaitForPodsReady from True to False, syncs to admitted variant", READY, NOT_READY),
    ],
)
def test_parent_pods_ready_syncs_to_admitted_variant(case, before, after):
    UPSTREAM.append(case) if case not in UPSTREAM else None
    p = parent(adm=reserved("cq", "spot"), conds=[after])
    out = reconcile_once(
        p,
        [
            W("wl-variant-spot", flavor="spot", adm=reserved("cq", "spot"), conds=[before]),
            W("wl-variant-on-demand", flavor="on-demand"),
        ],
    )
    assert out.parent() == view(p)
    assert out.variants() == want(
        W("wl-variant-spot", flavor="spot", adm=reserved("cq", "spot"), conds=[after]),
        W("wl-variant-on-demand", flavor="on-demand"),
    )


@upstream(
    "parent not admitted, variant admitted, parent changes WaitForPodsReady from True to False, syncs to "
    "variant and admits parent"
)
def test_parent_not_admitted_pods_ready_synced_and_parent_admitted():
    out = reconcile_once(
        parent(conds=[NOT_READY]),
        [
            W("wl-variant-spot", flavor="spot", adm=reserved("cq", "spot"), conds=[READY]),
            W("wl-variant-on-demand", flavor="on-demand"),
        ],
    )
    assert out.parent() == parent_admitted_on("cq", "spot", "wl-variant-spot", NOT_READY)
    assert out.variants() == want(
        W("wl-variant-spot", flavor="spot", adm=reserved("cq", "spot"), conds=[NOT_READY]),
        W("wl-variant-on-demand", flavor="on-demand"),
    )


# -- the other upstream tests of the package ----------------------------------------------------------------
@upstream("TestFirstCandidateVariant/waits when the preferred variant has no evaluation condition")
def test_first_candidate_waits_for_evaluation():
    blocked_v = W("blocked", flavor="spot", conds=[blocked()])
    assert ca.first_candidate_variant([W("preferred", flavor="on-demand"), blocked_v]) is None


@upstream("TestFirstCandidateVariant/skips a preferred variant with an existing quota reservation condition")
def test_first_candidate_skips_evaluated():
    blocked_v = W("blocked", flavor="spot", conds=[blocked()])
    evaluated = W(
        "preferred",
        flavor="on-demand",
        conds=[cond("QuotaReserved", False, "Pending", "Workload does not fit")],
    )
    assert ca.first_candidate_variant([evaluated, blocked_v]) is blocked_v


def _cq_event(old_flavors, new_flavors, *, quota="5", type_="MODIFIED"):
    from flexq.store.store import WatchEvent

    def obj(flavors, q):
        return {
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]} for f in flavors
                        ],
                    }
                ]
            },
        }

    first = obj(old_flavors, "5")
    return WatchEvent("ADDED", "ClusterQueue", first, 0), WatchEvent(
        type_, "ClusterQueue", obj(new_flavors, quota), 1, first if type_ == "MODIFIED" else None
    )


def _cq_keys(ctrl, ev):
    """The keys the controller's ClusterQueue watch (its predicate, then its mapper) enqueues for ``ev``."""
    (watch,) = [w for w in ctrl.watches() if w.kind == "ClusterQueue"]
    return watch.keys(ev)


@pytest.mark.parametrize(
    ("case", "new", "quota", "changed"),
    [
        ("flavor added", ["on-demand", "spot", "reservation"], "5", True),
        ("flavor removed", ["on-demand"], "5", True),
        ("flavors reordered", ["spot", "on-demand"], "5", True),
        ("flavors unchanged", ["on-demand", "spot"], "5", False),
        ("only quota changed", ["on-demand", "spot"], "99", False),
        ("only status changed", ["on-demand", "spot"], "5", False),
    ],
)
def test_cluster_queue_flavors_changed(case, new, quota, changed):
    """``TestClusterQueueFlavorsChanged``: only a change of the flavors' names or order requeues the Parents."""
    UPSTREAM.append(
        f"TestClusterQueueFlavorsChanged/{case}"
    ) if f"TestClusterQueueFlavorsChanged/{case}" not in UPSTREAM else None
    out = reconcile_once(parent())
    ctrl = _controller(out)
    first, second = _cq_event(["on-demand", "spot"], new, quota=quota)
    assert _cq_keys(ctrl, first) == []  # Create is ignored
    if case == "only status changed":
        second.object["status"] = {"pendingWorkloads": 5}
    assert (_cq_keys(ctrl, second) == [("default", P)]) is changed


@upstream("TestClusterQueueFlavorsChanged/Delete")
def test_cluster_queue_delete_is_ignored():
    out = reconcile_once(parent())
    ctrl = _controller(out)
    first, gone = _cq_event(["on-demand", "spot"], ["spot"], type_="DELETED")
    assert _cq_keys(ctrl, first) == [] and _cq_keys(ctrl, gone) == []


def _controller(out, release=None):
    from flexq.kueue.cache import KueueCache
    from flexq.loop.core import EventLoop
    from flexq.loop.rng import Rngs
    from flexq.runtime.controller import Context
    from flexq.store.logs import PodLogs

    state = KueueCache(out.store, lambda: NOW, release)
    state.start()
    ctx = Context(store=out.store, loop=EventLoop(), rngs=Rngs(0), logs=PodLogs(None))
    return ca.VariantController(ctx, state)


def _lq(name, ns, cq_name):
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq_name}}


def _wl(name, ns, lq, *, is_parent=False, variant=False):
    md = {"name": name, "namespace": ns, "labels": {variants.PARENT_LABEL: "true"} if is_parent else {}}
    if variant:
        md["ownerReferences"] = [
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "parent"}
        ]
        md["annotations"] = {variants.ALLOWED_FLAVORS_ANNOTATION: "spot"}
    return {"metadata": md, "spec": {"queueName": lq}}


@pytest.mark.parametrize(
    ("case", "lqs", "wls", "expected"),
    [
        (
            "multiple parents under one ClusterQueue",
            [_lq("lq", "default", "cq")],
            [
                _wl("parent-a", "default", "lq", is_parent=True),
                _wl("parent-b", "default", "lq", is_parent=True),
            ],
            [("default", "parent-a"), ("default", "parent-b")],
        ),
        (
            "parents across namespaces feeding the same ClusterQueue",
            [_lq("lq", "ns-a", "cq"), _lq("lq", "ns-b", "cq")],
            [_wl("parent-a", "ns-a", "lq", is_parent=True), _wl("parent-b", "ns-b", "lq", is_parent=True)],
            [("ns-a", "parent-a"), ("ns-b", "parent-b")],
        ),
        (
            "non-parent workloads are excluded",
            [_lq("lq", "default", "cq")],
            [
                _wl("parent", "default", "lq", is_parent=True),
                _wl("variant", "default", "lq", variant=True),
                _wl("plain", "default", "lq"),
            ],
            [("default", "parent")],
        ),
        (
            "workloads of other ClusterQueues are excluded",
            [_lq("lq", "default", "cq"), _lq("lq-other", "default", "cq-other")],
            [
                _wl("parent", "default", "lq", is_parent=True),
                _wl("parent-other", "default", "lq-other", is_parent=True),
            ],
            [("default", "parent")],
        ),
        ("no parents returns nothing", [_lq("lq", "default", "cq")], [_wl("plain", "default", "lq")], []),
    ],
)
def test_parents_for_cluster_queue(case, lqs, wls, expected):
    """``TestParentsForClusterQueue``."""
    UPSTREAM.append(
        f"TestParentsForClusterQueue/{case}"
    ) if f"TestParentsForClusterQueue/{case}" not in UPSTREAM else None
    assert sorted(ca.parents_for_cluster_queue(lqs, wls, "cq")) == sorted(expected)


@upstream("TestCreateVariantsAlreadyExists")
def test_create_variants_already_exists():
    out = reconcile_once(parent())
    ctrl = _controller(out)
    p = out.store.get("Workload", P, "default")
    existing = out.store.get("Workload", variants.variant_name(P, out.parent_uid, "spot"), "default")
    ctrl._create_variants(
        p, [], ["spot"]
    )  # no variants known: Create is attempted and AlreadyExists is a no-op
    assert (
        out.store.get("Workload", existing["metadata"]["name"], "default")["metadata"]["uid"]
        == existing["metadata"]["uid"]
    )


# -- the webhook (pkg/webhooks/clusterqueue_webhook.go validateConcurrentAdmissionPolicy) ---------------------------
def _cq_doc(policy: dict, groups: int = 1, flavors: int = 2, strategy: str = "BestEffortFIFO") -> dict:
    rgs = [
        {
            "coveredResources": [f"r{g}"],
            "flavors": [
                {"name": f"f{g}-{i}", "resources": [{"name": f"r{g}", "nominalQuota": 1}]}
                for i in range(flavors)
            ],
        }
        for g in range(groups)
    ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "new-cq"},
        "spec": {"resourceGroups": rgs, "queueingStrategy": strategy, "concurrentAdmissionPolicy": policy},
    }


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            _cq_doc({"migration": {"mode": "TryPreferredFlavors"}}, groups=2),
            "spec.resourceGroups: Invalid value: 2: must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is "
            "defined",
        ),
        (
            _cq_doc({"migration": {"mode": "TryPreferredFlavors"}}, flavors=17),
            "spec.resourceGroups[0].flavors: Invalid value: 17: cannot have more than 16 resource flavors in the "
            "ResourceGroup when ConcurrentAdmissionPolicy is defined",
        ),
        (
            _cq_doc(
                {
                    "migration": {
                        "mode": "RetainFirstAdmission",
                        "constraints": {"lastAcceptableFlavorName": "f0-0"},
                    }
                }
            ),
            "spec.concurrentAdmissionPolicy.migration.constraints: Forbidden: may only be set when migration.mode is "
            '"TryPreferredFlavors" (got "RetainFirstAdmission")',
        ),
        (
            _cq_doc(
                {
                    "migration": {
                        "mode": "TryPreferredFlavors",
                        "constraints": {"lastAcceptableFlavorName": "gold"},
                    }
                }
            ),
            'spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: Invalid value: "gold": must be '
            "one of the flavors defined in the ClusterQueue: [f0-0 f0-1]",
        ),
        (
            _cq_doc({"migration": {"mode": "TryPreferredFlavors"}}, strategy="StrictFIFO"),
            'spec.queueingStrategy: Invalid value: "StrictFIFO": StrictFIFO queueing strategy cannot be used when '
            "ConcurrentAdmissionPolicy is defined",
        ),
    ],
)
def test_webhook_refuses_with_upstream_message_while_gate_on(doc, message):
    """Upstream's v0.19.2 cases, on v0.19.2 (0.20 allows 32 flavors: ``tests/kueue/test_kueue_releases.py``)."""
    from flexq.api.kueue_versions import V0_19_2

    out = reconcile_once(None, name="x")
    _controller(out, V0_19_2)  # registers the webhook
    before = out.store.resource_version
    with pytest.raises(Invalid) as err:
        out.store.create(doc)
    assert message in str(err.value)
    assert out.store.resource_version == before and out.store.try_get("ClusterQueue", "new-cq") is None


def test_webhook_is_off_without_the_gate_and_policy_is_immutable():
    from flexq import Twin

    t = Twin(clock="virtual")
    t.apply(
        _cq_doc({"migration": {"mode": "TryPreferredFlavors"}}, groups=2)
    )  # gate off: accepted as upstream does
    with pytest.raises(Invalid) as err:
        t.apply(_cq_doc({"migration": {"mode": "RetainFirstAdmission"}}, groups=2))
    assert str(err.value).endswith(
        "spec.concurrentAdmissionPolicy: Invalid value: v1beta2.ConcurrentAdmissionPolicy{Migration:"
        'v1beta2.ConcurrentAdmissionMigration{Mode:"RetainFirstAdmission", Constraints:'
        "(*v1beta2.ConcurrentAdmissionConstraints)(nil)}}: field is immutable"
    )
    with pytest.raises(Invalid) as err:
        t.apply(_cq_doc({"migration": {"mode": "Sometimes"}}) | {"metadata": {"name": "other"}})
    assert 'spec.concurrentAdmissionPolicy.migration.mode: Unsupported value: "Sometimes"' in str(err.value)
    t.close()


def test_timestamps_helper_is_rfc3339():
    assert ts(NOW) == "2026-01-01T00:00:00Z"


# -- pkg/scheduler/scheduler_concurrent_admission_test.go: TestScheduleConcurrentAdmission ----------------------
def _schedule(workloads: list[dict], extra_cqs: list[dict] = (), extra_lqs: list[dict] = ()):
    """One scheduling cycle over upstream's fixture for this test: flavors reservation / on-demand / spot,
    ClusterQueue ``concurrent-cq`` (on-demand 10 cpu, spot 10 cpu, no policy) and LocalQueue ``concurrent-queue``
    in namespace ``eng-alpha`` (label dep=eng), with the ``ConcurrentAdmission`` gate on."""
    from random import Random

    from flexq.api.kinds import default_registry
    from flexq.clock import VirtualClock
    from flexq.kueue.cache import KueueCache
    from flexq.kueue.scheduler import Scheduler
    from flexq.store import Store

    from .kueue_builders import cq, fq, rf, rg
    from .upstream_concurrent_admission import GATES_CONFIG
    from .upstream_schedule import lq, sel

    clock = VirtualClock(NOW)
    store = Store(
        default_registry(), clock, name="upstream-sched-ca", rng=Random(0), namespaces=("kueue-system",)
    )
    store.create(GATES_CONFIG)
    store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "eng-alpha", "labels": {"dep": "eng"}}}
    )
    for obj in [
        rf("reservation"),
        rf("on-demand"),
        rf("spot"),
        cq("concurrent-cq", rg(fq("on-demand", cpu="10"), fq("spot", cpu="10")), selector=sel("eng")),
        *extra_cqs,
        lq("concurrent-queue", "eng-alpha", "concurrent-cq"),
        *extra_lqs,
    ]:
        store.create(obj, keep_status=True)
    # upstream's fake client has no garbage collector; flexq's store removes a Workload whose owner does not exist,
    # so the Parent is stored (without a queue: not scheduled) and its UID stands in for "parent-uid"
    from .kueue_builders import wl

    parent_wl = wl("parent-workload", ns="eng-alpha", queue="")
    parent_wl["spec"].pop("queueName")
    uid = store.create(parent_wl)["metadata"]["uid"]
    for w in workloads:
        for ref in w["metadata"].get("ownerReferences") or []:
            ref["uid"] = uid
        store.create(w, keep_status=True)
    state = KueueCache(store, clock.now)
    state.start()
    Scheduler(state, store, state.events).cycle(clock.now())
    return store, state


def _variant(name: str, flavor: str, queue: str = "concurrent-queue", admitted_cq: str | None = None) -> dict:
    from .kueue_builders import admit, ps, psa, wl

    w = wl(name, ps("main", 1, cpu="10"), ns="eng-alpha", queue=queue)
    w["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "name": "parent-workload",
            "uid": "parent-uid",
            "controller": True,
        }
    ]
    w["metadata"]["annotations"] = {variants.ALLOWED_FLAVORS_ANNOTATION: flavor}
    if admitted_cq:
        admit(w, admitted_cq, psa(cpu=(flavor, "10")))
    return w


def _conds(w: dict) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in (w.get("status") or {}).get("conditions") or []
    }


def _left(state) -> dict[str, list[str]]:
    return {n: sorted(q.items) for n, q in state.queues.cluster_queues.items() if q.items}


@upstream(
    "TestScheduleConcurrentAdmission/concurrent admission: more favorable variant evicts less favorable sibling"
)
def test_schedule_more_favorable_variant_evicts_less_favorable_sibling():
    store, state = _schedule(
        [
            _variant("sibling-less-favorable", "spot", admitted_cq="concurrent-cq"),
            _variant("candidate-more-favorable", "on-demand"),
        ]
    )
    cand = store.get("Workload", "candidate-more-favorable", "eng-alpha")
    sib = store.get("Workload", "sibling-less-favorable", "eng-alpha")
    assert _conds(cand) == {
        "QuotaReserved": (
            "False",
            "WaitingForPreemptedWorkloads",
            ". Pending the migration of 1 workload(s)",
        ),
        "Admitted": ("False", "NoReservation", "The workload has no reservation"),
    }
    assert cand["status"]["resourceRequests"] == [{"name": "main", "resources": {"cpu": "10"}}]
    assert _conds(sib)["Evicted"] == (
        "True",
        "FlavorMigration",
        "Evicted to accommodate a workload (UID: "
        f"{cand['metadata']['uid']}) due to migration to more favorable resource flavor",
    )
    assert sib["status"]["schedulingStats"]["evictions"] == [
        {"reason": "FlavorMigration", "underlyingCause": "", "count": 1}
    ]
    assert sib["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": "spot"}
    assert _left(state) == {"concurrent-cq": ["eng-alpha/candidate-more-favorable"]}


@upstream(
    "TestScheduleConcurrentAdmission/concurrent admission: less favorable variant is skipped when more "
    "favorable sibling is admitted"
)
def test_schedule_less_favorable_variant_skipped():
    store, state = _schedule(
        [
            _variant("sibling-more-favorable", "on-demand", admitted_cq="concurrent-cq"),
            _variant("candidate-less-favorable", "spot"),
        ]
    )
    cand = store.get("Workload", "candidate-less-favorable", "eng-alpha")
    assert _conds(cand) == {
        "QuotaReserved": ("False", "PendingEvaluation", "A more favorable variant is already admitted"),
        "Admitted": ("False", "NoReservation", "The workload has no reservation"),
    }
    sib = store.get("Workload", "sibling-more-favorable", "eng-alpha")
    assert "Evicted" not in _conds(sib)
    assert _left(state) == {"concurrent-cq": ["eng-alpha/candidate-less-favorable"]}


@upstream(
    "TestScheduleConcurrentAdmission/concurrent admission: migration is stopped when target flavor is below "
    "LastAcceptableFlavorName"
)
def test_schedule_migration_stopped_below_last_acceptable_flavor():
    from .kueue_builders import cq, fq, rg
    from .upstream_schedule import lq, sel

    min_pref = cq(
        "concurrent-cq-with-min-pref",
        rg(fq("reservation", cpu="10"), fq("on-demand", cpu="10"), fq("spot", cpu="10")),
        selector=sel("eng"),
    )
    min_pref["spec"]["concurrentAdmissionPolicy"] = {
        "migration": {
            "mode": "TryPreferredFlavors",
            "constraints": {"lastAcceptableFlavorName": "reservation"},
        }
    }
    store, state = _schedule(
        [
            _variant(
                "sibling-less-favorable",
                "spot",
                "concurrent-queue-new",
                admitted_cq="concurrent-cq-with-min-pref",
            ),
            _variant("candidate-more-favorable", "on-demand", "concurrent-queue-new"),
        ],
        extra_cqs=[min_pref],
        extra_lqs=[lq("concurrent-queue-new", "eng-alpha", "concurrent-cq-with-min-pref")],
    )
    cand = store.get("Workload", "candidate-more-favorable", "eng-alpha")
    assert _conds(cand) == {
        "QuotaReserved": ("False", "PendingEvaluation", "Target flavor is below LastAcceptableFlavorName"),
        "Admitted": ("False", "NoReservation", "The workload has no reservation"),
    }
    assert "Evicted" not in _conds(store.get("Workload", "sibling-less-favorable", "eng-alpha"))
    assert _left(state) == {"concurrent-cq-with-min-pref": ["eng-alpha/candidate-more-favorable"]}


def _gate_case(open_gate: bool):
    from .kueue_builders import admit, cq, fq, ps, psa, rg, wl
    from .upstream_schedule import lq, sel

    prio_cq = cq(
        "gated-cq",
        rg(fq("on-demand", cpu="10"), fq("spot", cpu="0")),
        selector=sel("eng"),
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    low = admit(
        wl("low", ps("main", 1, cpu="10"), ns="eng-alpha", queue="gated-queue", priority=0),
        "gated-cq",
        psa(cpu=("on-demand", "10")),
    )
    v = _variant("high-variant", "on-demand", "gated-queue")
    v["spec"]["priority"] = 100
    v["spec"]["preemptionGates"] = [{"name": variants.PREEMPTION_GATE}]
    if open_gate:
        v["status"]["preemptionGates"] = [
            {"name": variants.PREEMPTION_GATE, "position": "Open", "lastTransitionTime": ts(NOW)}
        ]
    return _schedule([low, v], extra_cqs=[prio_cq], extra_lqs=[lq("gated-queue", "eng-alpha", "gated-cq")])


def test_schedule_variant_needing_preemption_is_blocked_by_its_closed_gate():
    """``processEntry``: Preempt mode with candidates but a closed preemption gate (``markPreemptionGated``)."""
    store, _ = _gate_case(open_gate=False)
    v = store.get("Workload", "high-variant", "eng-alpha")
    assert _conds(v)["QuotaReserved"] == (
        "False",
        "AdmissionGated",
        "Workload requires preemption, but it's gated",
    )
    assert _conds(v)["BlockedOnPreemptionGates"] == (
        "True",
        "PreemptionGated",
        "Workload requires preemption, but it's gated",
    )
    assert "Evicted" not in _conds(store.get("Workload", "low", "eng-alpha"))


def test_schedule_variant_with_open_gate_preempts():
    store, _ = _gate_case(open_gate=True)
    assert _conds(store.get("Workload", "low", "eng-alpha"))["Evicted"][:2] == ("True", "Preempted")
    v = store.get("Workload", "high-variant", "eng-alpha")
    assert _conds(v)["QuotaReserved"][1] == "WaitingForPreemptedWorkloads"


def test_reapplying_a_v1beta1_cluster_queue_over_a_policy_is_refused():
    """The v1beta1 form has no policy (upstream's conversion drops it), so the update would remove it (on Kueue
    0.19, the last release serving v1beta1)."""
    from flexq import Twin

    t = Twin(clock="virtual", kueue="0.19.2")
    doc = _cq_doc({"migration": {"mode": "TryPreferredFlavors"}})
    t.apply(doc)
    v1 = t.get("clusterqueue", "new-cq", api_version="kueue.x-k8s.io/v1beta1")
    assert "concurrentAdmissionPolicy" not in v1["spec"]
    with pytest.raises(Invalid) as err:
        t.apply(
            {
                "apiVersion": v1["apiVersion"],
                "kind": "ClusterQueue",
                "metadata": {"name": "new-cq"},
                "spec": v1["spec"],
            }
        )
    assert str(err.value).endswith("spec.concurrentAdmissionPolicy: Invalid value: null: field is immutable")
    t.close()
