"""Kueue's flavor selector: which ResourceFlavors a pod set's node affinity admits.

Owns: ``flavor_matches_affinity`` (Kueue ``flavorSelector(...).Match``, only the flavor's own label keys count).
Label selectors, node selector requirements and taints are ``flexq.semantics`` (one implementation each, one
door: Kueue's code imports them from there).
Must not import anything in flexq but ``flexq.semantics``.
"""

from __future__ import annotations

from collections.abc import Mapping

from flexq.semantics.selectors import requirement_matches

__all__ = ["flavor_matches_affinity"]


def flavor_matches_affinity(pod_spec: Mapping, flavor_labels: Mapping[str, str]) -> bool:
    """Kueue ``flavorSelector(...).Match(node with the flavor's labels)``.

    Only the flavor's own label keys count: other nodeSelector entries and match expressions are
    dropped; if a required-affinity term becomes empty the whole affinity is dropped (terms are
    ORed, so an empty term matches everything). ``matchFields`` are ignored.
    """
    keys = flavor_labels.keys()
    for k, v in (pod_spec.get("nodeSelector") or {}).items():
        if k in keys and flavor_labels.get(k) != v:
            return False
    na = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = []
    for t in required.get("nodeSelectorTerms") or []:
        exprs = [e for e in t.get("matchExpressions") or [] if e.get("key") in keys]
        if not exprs:
            return True
        terms.append(exprs)
    if not terms:
        return True
    return any(all(requirement_matches(e, flavor_labels) for e in exprs) for exprs in terms)
