"""How a job is kept off a flavor: ``<label> NotIn [<value>]`` in the required node affinity of its pod templates.

Kueue builds a Workload's pod sets from the job's pod templates and matches them against each ResourceFlavor's
node labels; a template that excludes the flavor's node label makes Kueue assign the next flavor. The user's own
affinity terms and tolerations are kept (the expression is added to every term, and removed again exactly).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["pod_templates", "restrict", "unrestrict", "restricted_flavors", "flavor_label"]

NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"


def pod_templates(job: dict) -> dict[str, dict]:
    """Pod set name -> the job's pod template spec for it (what Kueue builds the Workload's pod sets from)."""
    kind, spec = job.get("kind"), job.get("spec") or {}
    if kind == "Job":
        return {"main": spec.setdefault("template", {}).setdefault("spec", {})}
    if kind in ("RayJob", "RayCluster"):
        rc = spec.get("rayClusterSpec") if kind == "RayJob" else spec
        if not isinstance(rc, dict):
            return {}
        out = {"head": rc.setdefault("headGroupSpec", {}).setdefault("template", {}).setdefault("spec", {})}
        for wg in rc.get("workerGroupSpecs") or []:
            out[str(wg.get("groupName", "")).lower()] = wg.setdefault("template", {}).setdefault("spec", {})
        return out
    return {}


def _terms(pod_spec: dict) -> list[dict]:
    aff = pod_spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    req = aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    return req.setdefault("nodeSelectorTerms", [])


def restrict(pod_spec: dict, key: str, value: str) -> bool:
    """Add ``key NotIn [value]`` to every required node-affinity term (one term if there is none)."""
    expr = {"key": key, "operator": "NotIn", "values": [value]}
    terms = _terms(pod_spec)
    if not terms:
        terms.append({"matchExpressions": [expr]})
        return True
    changed = False
    for t in terms:
        exprs = t.setdefault("matchExpressions", [])
        if expr not in exprs:
            exprs.append(expr)
            changed = True
    return changed


def unrestrict(pod_spec: dict, key: str, value: str) -> bool:
    """Remove what ``restrict`` added (and the affinity it created, if it is left empty)."""
    expr = {"key": key, "operator": "NotIn", "values": [value]}
    aff = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    req = aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    changed = False
    for t in req.get("nodeSelectorTerms") or []:
        if expr in (t.get("matchExpressions") or []):
            t["matchExpressions"].remove(expr)
            changed = True
    if changed:
        req["nodeSelectorTerms"] = [
            t for t in req["nodeSelectorTerms"] if t.get("matchExpressions") or t.get("matchFields")
        ]
        if not req["nodeSelectorTerms"]:
            aff.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
            if not aff:
                pod_spec["affinity"].pop("nodeAffinity", None)
                if not pod_spec["affinity"]:
                    pod_spec.pop("affinity")
    return changed


def restricted_flavors(job: Mapping[str, Any], flavors: Mapping[str, Mapping[str, str]]) -> set[str]:
    """The flavors the job's pod templates are restricted off (a ``NotIn`` of one value on a flavor label)."""
    out: set[str] = set()
    spec = job.get("spec") or {}
    if job.get("kind") == "Job":
        specs = [((spec.get("template") or {}).get("spec") or {})]
    else:
        rc = (spec.get("rayClusterSpec") if job.get("kind") == "RayJob" else spec) or {}
        specs = [((rc.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}]
        specs += [((wg.get("template") or {}).get("spec") or {}) for wg in rc.get("workerGroupSpecs") or []]
    for s in specs:
        req = ((s.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or {}
        for t in req.get("nodeSelectorTerms") or []:
            for e in t.get("matchExpressions") or []:
                if e.get("operator") != "NotIn" or len(e.get("values") or []) != 1:
                    continue
                out |= {f for f, labels in flavors.items() if labels.get(e["key"]) == e["values"][0]}
    return out


def flavor_label(flavors: Mapping[str, Mapping[str, str]], flavor: str) -> tuple[str, str] | None:
    """The node label that singles out the flavor's nodes (the GKE node pool label when it has one)."""
    labels = flavors.get(flavor) or {}
    if not labels:
        return None
    key = NODEPOOL_LABEL if NODEPOOL_LABEL in labels else sorted(labels)[0]
    return key, labels[key]
