"""Concurrent Admission's pure rules (KEP-8691, alpha gate ``ConcurrentAdmission``): Parent and Variant names,
labels and annotations, the predicates the scheduler, queues, cache and Workload controller read, the
ClusterQueue policy's fields, the preemption gates, and a Variant as ``generateVariant`` makes it
(``pkg/workload/concurrentadmission`` of Kueue v0.19.2). The controller is ``flexq.kueue.concurrent_admission``;
these names are imported from here.

Pure: a function of its arguments. Must not import store, runtime, loop or the other domains.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from flexq.kueue.workload import has_quota_reservation, is_active, is_finished, ts
from flexq.semantics.conditions import is_true

GATE = "ConcurrentAdmission"
PARENT_LABEL = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED_FLAVORS_ANNOTATION = "kueue.x-k8s.io/workload-allowed-resource-flavors"
PREEMPTION_GATE = "kueue.x-k8s.io/concurrent-admission"
WORKLOAD_API = "kueue.x-k8s.io/v1beta2"
PREEMPTION_TIMEOUT = 300.0  # preemptionTimeout = 5 * time.Minute
MAX_NAME, HASH_LEN = 253, 5

REASON_CREATED = "CreatedVariant"
REASON_DELETED = "DeletedVariant"
REASON_ACTIVATED = "ActivatedVariant"
REASON_DEACTIVATED = "DeactivatedVariant"
REASON_UNGATED = "PreemptionUngatedVariant"


# -- pkg/workload/concurrentadmission ------------------------------------------------------------


def is_parent(wl: Mapping | None) -> bool:
    """``IsParent``: the Parent label is ``"true"``."""
    return wl is not None and ((wl.get("metadata") or {}).get("labels") or {}).get(PARENT_LABEL) == "true"


def _parent_ref(wl: Mapping | None) -> dict | None:
    for ref in ((wl or {}).get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == "Workload" and ref.get("apiVersion") == WORKLOAD_API:
            return ref
    return None


def parent_name(wl: Mapping | None) -> str:
    """``GetParentWorkloadName``: the owner reference to a v1beta2 Workload."""
    ref = _parent_ref(wl)
    return (ref or {}).get("name", "")


def parent_uid(wl: Mapping | None) -> str:
    """``GetParentWorkloadUID``."""
    ref = _parent_ref(wl)
    return (ref or {}).get("uid", "") or ""


def is_variant(wl: Mapping | None) -> bool:
    """``IsVariant``: owned by a Workload."""
    return parent_name(wl) != ""


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def variant_flavor(wl: Mapping) -> str:
    """``GetVariantFlavor``: the first flavor of the allowed-flavors annotation."""
    flavors = _csv(((wl.get("metadata") or {}).get("annotations") or {}).get(ALLOWED_FLAVORS_ANNOTATION, ""))
    return flavors[0] if flavors else ""


def flavor_allowed(wl: Mapping, flavor: str, gate_on: bool) -> bool:
    """``IsFlavorAllowedForVariant``: without the gate or the annotation every flavor is allowed."""
    if not gate_on:
        return True
    ann = (wl.get("metadata") or {}).get("annotations") or {}
    if ALLOWED_FLAVORS_ANNOTATION not in ann:
        return True
    return flavor in _csv(ann[ALLOWED_FLAVORS_ANNOTATION])


def variant_name(
    parent: str, uid: str, flavor: str, kind: str = "Workload", group: str = "kueue.x-k8s.io"
) -> str:
    """``GetWorkloadNameForVariant``: the Parent's name without its hash, ``-variant-<flavor>``, and a hash of
    the Parent's kind, group, name, UID and the flavor."""
    prefix = f"{parent[: parent.rfind('-')]}-variant-{flavor}"
    h = hashlib.sha1()
    for part in (kind, "\n", group, "\n", parent, "\n", uid, "\n", flavor):
        h.update(part.encode())
    return f"{prefix[: MAX_NAME - 1 - HASH_LEN]}-{h.hexdigest()[:HASH_LEN]}"


def policy_of(cq: Mapping | None) -> dict | None:
    """``spec.concurrentAdmissionPolicy`` of a ClusterQueue."""
    return ((cq or {}).get("spec") or {}).get("concurrentAdmissionPolicy")


def migration_mode(cq: Mapping | None) -> str:
    """``migrationMode``: ``TryPreferredFlavors`` unless set."""
    return ((policy_of(cq) or {}).get("migration") or {}).get("mode") or "TryPreferredFlavors"


def last_acceptable_flavor(cq: Mapping | None) -> str | None:
    """``constraints.lastAcceptableFlavorName`` or None."""
    return (((policy_of(cq) or {}).get("migration") or {}).get("constraints") or {}).get(
        "lastAcceptableFlavorName"
    )


def cq_flavors(cq: Mapping) -> list[str]:
    """The flavors of the (single) resource group, most preferred first."""
    groups = (cq.get("spec") or {}).get("resourceGroups") or []
    return [f["name"] for f in (groups[0].get("flavors") or [])] if groups else []


# -- preemption gates (pkg/workload/workload.go) -------------------------------------------------


def gate_state(wl: Mapping, name: str = PREEMPTION_GATE) -> dict | None:
    """``FindPreemptionGate``: the gate's entry in ``status.preemptionGates``."""
    for g in (wl.get("status") or {}).get("preemptionGates") or []:
        if g.get("name") == name:
            return g
    return None


def has_open_gate(wl: Mapping, name: str = PREEMPTION_GATE) -> bool:
    """``HasOpenPreemptionGate``."""
    g = gate_state(wl, name)
    return g is not None and g.get("position") == "Open"


def has_closed_gate(wl: Mapping) -> bool:
    """``HasClosedPreemptionGate``: a gate of the spec without a status entry, or one marked Closed."""
    pos = {g.get("name"): g.get("position") for g in (wl.get("status") or {}).get("preemptionGates") or []}
    return any(
        pos.get(g.get("name"), "Closed") == "Closed"
        for g in (wl.get("spec") or {}).get("preemptionGates") or []
    )


def open_gate(wl: dict, now: float, name: str = PREEMPTION_GATE) -> bool:
    """``OpenPreemptionGate`` (``SetPreemptionGatePosition``): False when the spec has no such gate."""
    if not any(g.get("name") == name for g in (wl.get("spec") or {}).get("preemptionGates") or []):
        return False
    gates = wl.setdefault("status", {}).setdefault("preemptionGates", [])
    for g in gates:
        if g.get("name") == name:
            g["position"], g["lastTransitionTime"] = "Open", ts(now)
            return True
    gates.append({"name": name, "position": "Open", "lastTransitionTime": ts(now)})
    return True


def is_admissible(wl: Mapping) -> bool:
    """``IsAdmissible``: active, not finished, without a reservation (admission gates are not modelled)."""
    return (
        not is_finished(wl)
        and is_active(wl)
        and not has_quota_reservation(wl)
        and not is_true(wl, "WaitingForReplacementPods")
    )


def generate_variant(parent: Mapping, flavor: str) -> dict:
    """``generateVariant``: the Parent's labels (minus the Parent label), annotations and spec, restricted to one
    flavor and carrying the closed Concurrent Admission preemption gate."""
    md = parent["metadata"]
    labels = {k: v for k, v in (md.get("labels") or {}).items() if k != PARENT_LABEL}
    ann = dict(md.get("annotations") or {})
    ann[ALLOWED_FLAVORS_ANNOTATION] = flavor
    spec = dict(parent.get("spec") or {})
    gates = [dict(g) for g in spec.get("preemptionGates") or []]
    if not any(g.get("name") == PREEMPTION_GATE for g in gates):
        gates.append({"name": PREEMPTION_GATE})
    spec["preemptionGates"] = gates
    return {
        "apiVersion": WORKLOAD_API,
        "kind": "Workload",
        "metadata": {
            "name": variant_name(md["name"], md.get("uid", ""), flavor),
            "namespace": md["namespace"],
            "labels": labels,
            "annotations": ann,
            "ownerReferences": [
                {
                    "apiVersion": WORKLOAD_API,
                    "kind": "Workload",
                    "name": md["name"],
                    "uid": md.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }
