"""A harness after Kueue's ``pkg/controller/concurrentadmission/controller_test.go`` ``TestReconcile``.

Upstream's table writes a Parent and its Variants through a fake client, runs one ``Reconcile`` of the
variant reconciler at a fixed clock and compares the Parent, the Variants, the events and the result.
``reconcile_once`` does the same against flexq's store, ``KueueCache`` and ``VariantController``, with
upstream's five ClusterQueues (``cq``, ``cq-migration`` with ``lastAcceptableFlavorName: reservation``,
``cq-migration-no-constraint``, ``cq-hold`` with ``RetainFirstAdmission``, ``cq-spot-only``), their
LocalQueues and the ``ConcurrentAdmission`` gate on in ``kueue-manager-config``.

Two differences from the fake client, both because flexq's store behaves as an API server does: the
store assigns the Parent a UID, so the Variants' owner references carry it (upstream's carry ""), and
clearing a reservation removes ``status.admission`` (upstream's fake client keeps it through its apply
patch).
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random
from typing import Any

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.kueue.cache import KueueCache
from flexq.kueue.concurrent_admission import VariantController
from flexq.kueue.variants import PARENT_LABEL, PREEMPTION_GATE
from flexq.kueue.workload import ts
from flexq.loop.core import EventLoop
from flexq.loop.rng import Rngs
from flexq.runtime.controller import Context
from flexq.store import Store
from flexq.store.logs import PodLogs

from .kueue_builders import cq, fq, rg

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
GATES_CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
    "data": {
        "controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "featureGates:\n  ConcurrentAdmission: true\n"
    },
}


def _policy(mode: str = "TryPreferredFlavors", last: str | None = None) -> dict:
    mig: dict[str, Any] = {"mode": mode}
    if last:
        mig["constraints"] = {"lastAcceptableFlavorName": last}
    return {"migration": mig}


def _cq(name: str, flavors: list[str], policy: dict) -> dict:
    obj = cq(name, rg(*[fq(f, cpu="0") for f in flavors]))
    obj["spec"]["concurrentAdmissionPolicy"] = policy
    return obj


CLUSTER_QUEUES = [
    _cq("cq", ["on-demand", "spot"], _policy()),
    _cq("cq-migration", ["reservation", "on-demand", "spot"], _policy(last="reservation")),
    _cq("cq-migration-no-constraint", ["reservation", "on-demand", "spot"], _policy()),
    _cq("cq-hold", ["reservation", "on-demand", "spot"], _policy("RetainFirstAdmission")),
    _cq("cq-spot-only", ["spot"], _policy()),
]
LOCAL_QUEUES = {
    "lq": "cq",
    "lq-migration": "cq-migration",
    "lq-migration-no-constraint": "cq-migration-no-constraint",
    "lq-hold": "cq-hold",
    "lq-spot-only": "cq-spot-only",
}


def cond(type_: str, status: bool, reason: str, message: str) -> dict:
    return {"type": type_, "status": "True" if status else "False", "reason": reason, "message": message}


def blocked() -> dict:
    """``blockedOnPreemptionCondition``: what the scheduler writes on a gated Variant needing preemption."""
    return cond(
        "BlockedOnPreemptionGates", True, "PreemptionGated", "Workload requires preemption, but it's gated"
    )


def reserved(cq_name: str, flavor: str) -> tuple[dict, list[dict]]:
    """``SimpleReserveQuota(cq, flavor)`` + ``AdmittedAt(true)``: (admission, conditions)."""
    adm = {
        "clusterQueue": cq_name,
        "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": "1"}}
        ],
    }
    return adm, [
        cond("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {cq_name}"),
        cond("Admitted", True, "ByTest", f"Admitted by ClusterQueue {cq_name}"),
    ]


def W(
    name: str,
    queue: str = "lq",
    *,
    parent: bool = False,
    flavor: str | None = None,
    active: bool = True,
    gates: list[str] | None = None,
    gate: tuple[str, float] | None = None,
    conds: list[dict] = (),
    adm: tuple[dict, list[dict]] | None = None,
    request: bool = True,
) -> dict:
    """``MakeWorkload(name, "default")`` with the builder calls upstream's cases use."""
    res = {"requests": {"cpu": "1"}} if request else {}
    md: dict[str, Any] = {"name": name, "namespace": "default"}
    if parent:
        md["labels"] = {PARENT_LABEL: "true"}
    if flavor:
        md["annotations"] = {"kueue.x-k8s.io/workload-allowed-resource-flavors": flavor}
    spec: dict[str, Any] = {
        "queueName": queue,
        "active": active,
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {"spec": {"containers": [{"name": "c", "image": "pause", "resources": res}]}},
            }
        ],
    }
    if gates is None and flavor:
        gates = [PREEMPTION_GATE]
    if gates:
        spec["preemptionGates"] = [{"name": g} for g in gates]
    status: dict[str, Any] = {}
    all_conds = list(conds)
    if adm is not None:
        status["admission"] = adm[0]
        all_conds = adm[1] + all_conds
    if all_conds:
        status["conditions"] = [dict(c, lastTransitionTime=ts(NOW), observedGeneration=1) for c in all_conds]
    if gate is not None:
        status["preemptionGates"] = [
            {"name": PREEMPTION_GATE, "position": gate[0], "lastTransitionTime": ts(gate[1])}
        ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": md,
        "spec": spec,
        "status": status,
    }


def view(wl: dict) -> dict:
    """What upstream's cmp compares, in a form independent of timestamps and defaults."""
    st = wl.get("status") or {}
    out: dict[str, Any] = {
        "name": wl["metadata"]["name"],
        "active": (wl.get("spec") or {}).get("active", True) is not False,
        "labels": {k: v for k, v in (wl["metadata"].get("labels") or {}).items() if k == PARENT_LABEL},
        "flavor": (wl["metadata"].get("annotations") or {}).get(
            "kueue.x-k8s.io/workload-allowed-resource-flavors"
        ),
        "gates": [g["name"] for g in (wl.get("spec") or {}).get("preemptionGates") or []],
        "gate_states": sorted(
            (g["name"], g["position"], g["lastTransitionTime"]) for g in st.get("preemptionGates") or []
        ),
        "conditions": sorted(
            (c["type"], c["status"], c["reason"], c["message"]) for c in st.get("conditions") or []
        ),
    }
    adm = st.get("admission")
    out["admission"] = (
        None
        if adm is None
        else (
            adm["clusterQueue"],
            [
                (p["name"], p.get("flavors"), p.get("resourceUsage"))
                for p in adm.get("podSetAssignments") or []
            ],
        )
    )
    return out


@dataclass
class Outcome:
    store: Store
    result: Any
    parent_uid: str

    def parent(self, name: str = "wl-12345") -> dict:
        return view(self.store.get("Workload", name, "default"))

    def variants(self) -> list[dict]:
        wls = [
            w
            for w in self.store.list("Workload", "default")
            if any(r.get("kind") == "Workload" for r in w["metadata"].get("ownerReferences") or [])
        ]
        return sorted((view(w) for w in wls), key=lambda v: v["name"])

    def variant_objects(self) -> list[dict]:
        return [
            w
            for w in self.store.list("Workload", "default")
            if any(r.get("kind") == "Workload" for r in w["metadata"].get("ownerReferences") or [])
        ]

    def events(self) -> list[tuple[str, str, str, str]]:
        return sorted(
            (e["involvedObject"]["name"], e["type"], e["reason"], e["message"])
            for e in self.store.list("Event", "default")
        )


def want(*workloads: dict) -> list[dict]:
    """The expected Variants, viewed like the stored ones."""
    return sorted((view(w) for w in workloads), key=lambda v: v["name"])


def reconcile_once(parent: dict | None, variants: list[dict] = (), *, name: str | None = None) -> Outcome:
    """Store the objects, start Kueue's state, run one reconcile of the variant controller at ``NOW``."""
    clock = VirtualClock(NOW)
    store = Store(
        default_registry(), clock, name="upstream-ca", rng=Random(0), namespaces=("default", "kueue-system")
    )
    store.create(GATES_CONFIG)
    for obj in CLUSTER_QUEUES:
        store.create(obj, keep_status=True)
    for lq_name, cq_name in LOCAL_QUEUES.items():
        store.create(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": lq_name, "namespace": "default"},
                "spec": {"clusterQueue": cq_name},
            }
        )
    uid = ""
    if parent is not None:
        uid = store.create(parent, keep_status=True)["metadata"]["uid"]
    for v in variants:
        v = dict(
            v,
            metadata=dict(
                v["metadata"],
                ownerReferences=[
                    {
                        "apiVersion": "kueue.x-k8s.io/v1beta2",
                        "kind": "Workload",
                        "name": parent["metadata"]["name"],
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            ),
        )
        store.create(v, keep_status=True)
    loop = EventLoop(clock)
    ctx = Context(store=store, loop=loop, rngs=Rngs(0), logs=PodLogs(None))
    state = KueueCache(store, clock.now)
    state.start()
    ctrl = VariantController(ctx, state)
    key = ("default", name or (parent or {}).get("metadata", {}).get("name", "non-existing"))
    return Outcome(store, ctrl.reconcile(key), uid)
