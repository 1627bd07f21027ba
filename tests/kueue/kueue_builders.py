"""Builders for Kueue objects in tests (after Kueue's pkg/util/testing/v1beta2/wrappers.go).

Plain v1beta2 dicts, with defaults as the API server would set them.
"""

from __future__ import annotations

from typing import Any


def rf(
    name: str, labels: dict | None = None, taints: list | None = None, tolerations: list | None = None
) -> dict:
    """ResourceFlavor."""
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = labels
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def fq(name: str, **resources: Any) -> dict:
    """FlavorQuotas: value "4" or ("4", borrowingLimit, lendingLimit) (None to omit)."""
    out = []
    for r, v in resources.items():
        r = {"nvidia_com_gpu": "nvidia.com/gpu", "google_com_tpu": "google.com/tpu"}.get(r, r)
        if isinstance(v, tuple):
            q: dict[str, Any] = {"name": r, "nominalQuota": v[0]}
            if len(v) > 1 and v[1] is not None:
                q["borrowingLimit"] = v[1]
            if len(v) > 2 and v[2] is not None:
                q["lendingLimit"] = v[2]
        else:
            q = {"name": r, "nominalQuota": v}
        out.append(q)
    return {"name": name, "resources": out}


def rg(*flavors: dict) -> dict:
    """ResourceGroup from FlavorQuotas (covered resources from the first flavor)."""
    return {"coveredResources": [r["name"] for r in flavors[0]["resources"]], "flavors": list(flavors)}


def cq(
    name: str,
    *groups: dict,
    cohort: str | None = None,
    preemption: dict | None = None,
    fungibility: dict | None = None,
    checks: list | None = None,
    strategy: str = "BestEffortFIFO",
    selector: dict | None = None,
    active: bool = True,
) -> dict:
    """ClusterQueue (v1beta2) with the API defaults."""
    spec: dict[str, Any] = {
        "resourceGroups": list(groups),
        "queueingStrategy": strategy,
        "namespaceSelector": {} if selector is None else selector,
        "flavorFungibility": {
            "whenCanBorrow": "MayStopSearch",
            "whenCanPreempt": "TryNextFlavor",
            **(fungibility or {}),
        },
        "preemption": {
            "withinClusterQueue": "Never",
            "reclaimWithinCohort": "Never",
            "borrowWithinCohort": {"policy": "Never"},
            **(preemption or {}),
        },
    }
    if cohort:
        spec["cohortName"] = cohort
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }
    if active:
        obj["status"] = {
            "conditions": [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Ready",
                    "message": "Can admit new workloads",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",  # metav1.Condition requires it
                }
            ]
        }
    return obj


def cohort(name: str, *groups: dict, parent: str | None = None) -> dict:
    """Cohort (v1beta2)."""
    spec: dict[str, Any] = {"resourceGroups": list(groups)}
    if parent:
        spec["parentName"] = parent
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": spec,
    }


def ps(
    name: str = "main",
    count: int = 1,
    tolerations: list | None = None,
    node_selector: dict | None = None,
    affinity: list | None = None,
    limits: dict | None = None,
    **requests: str,
) -> dict:
    """PodSet with one container; ``affinity`` = list of nodeSelectorTerms' matchExpressions lists."""
    requests = {
        {"nvidia_com_gpu": "nvidia.com/gpu", "google_com_tpu": "google.com/tpu"}.get(k, k): v
        for k, v in requests.items()
    }
    res: dict[str, Any] = {"requests": requests}
    if limits:
        res["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause", "resources": res}]}
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in affinity]
                }
            }
        }
    return {"name": name, "count": count, "template": {"spec": spec}}


def wl(
    name: str,
    *podsets: dict,
    ns: str = "default",
    queue: str = "lq",
    priority: int | None = None,
    created: str = "2026-01-01T00:00:00Z",
    uid: str | None = None,
    annotations: dict | None = None,
) -> dict:
    """Workload (v1beta2)."""
    spec: dict[str, Any] = {"podSets": list(podsets) or [ps()], "queueName": queue, "active": True}
    if priority is not None:
        spec["priority"] = priority
    md: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "creationTimestamp": created,
        "uid": uid or f"uid-{name}",
        "generation": 1,
    }
    if annotations:
        md["annotations"] = annotations
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": md,
        "spec": spec,
        "status": {},
    }


def admit(w: dict, cq_name: str, *assignments: dict, at: str = "2026-01-01T00:00:00Z") -> dict:
    """Mark a workload as holding quota: assignments are {name, flavors, resourceUsage, count}."""
    w["status"]["admission"] = {"clusterQueue": cq_name, "podSetAssignments": list(assignments)}
    w["status"]["conditions"] = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "",
            "lastTransitionTime": at,
        },
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "", "lastTransitionTime": at},
    ]
    return w


def psa(name: str = "main", count: int = 1, **usage: tuple[str, str]) -> dict:
    """PodSetAssignment: usage as resource=(flavor, quantity)."""
    usage = {
        {"nvidia_com_gpu": "nvidia.com/gpu", "google_com_tpu": "google.com/tpu"}.get(k, k): v
        for k, v in usage.items()
    }
    return {
        "name": name,
        "count": count,
        "flavors": {r: v[0] for r, v in usage.items()},
        "resourceUsage": {r: v[1] for r, v in usage.items()},
    }


def one_queue(stop_policy: str | None = None, preemption: dict | None = None, **quota: str) -> list[dict]:
    """What a user applies for one queue: ResourceFlavor ``default``, ClusterQueue ``cq`` (``quota`` per resource,
    e.g. ``cpu="4"``; its ``stopPolicy`` and ``preemption`` when given) and LocalQueue ``lq`` in ``default``."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(quota),
                "flavors": [
                    {
                        "name": "default",
                        "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
                    }
                ],
            }
        ],
    }
    if stop_policy is not None:
        spec["stopPolicy"] = stop_policy
    if preemption is not None:
        spec["preemption"] = preemption
    v = "kueue.x-k8s.io/v1beta2"
    return [
        {"apiVersion": v, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": v, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec},
        {
            "apiVersion": v,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
    ]
