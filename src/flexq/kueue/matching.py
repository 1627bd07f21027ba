"""Label selectors, node affinity and taint toleration, with Kubernetes semantics.

Owns: ``metav1.LabelSelector`` matching (namespaceSelector), ``NodeSelectorRequirement`` matching
(In/NotIn/Exists/DoesNotExist/Gt/Lt), the required node affinity of a pod spec restricted to one
flavor's label keys (Kueue ``flavorSelector``), and ``FindMatchingUntoleratedTaint`` restricted to
the ``NoSchedule``/``NoExecute`` effects, with the taint printed as Go prints a ``corev1.Taint``.
Must not import anything in flexq.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "flavor_matches_affinity",
    "label_selector_matches",
    "requirement_matches",
    "taint_str",
    "tolerates",
    "untolerated_taint",
]


def requirement_matches(req: Mapping, labels: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement`` / ``LabelSelectorRequirement`` against a label map."""
    k, op, values = req.get("key", ""), req.get("operator", ""), list(req.get("values") or [])
    present = k in labels
    if op == "In":
        return present and labels[k] in values
    if op == "NotIn":
        return not present or labels[k] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            lv, rv = int(labels[k]), int(values[0])
        except ValueError:
            return False
        return lv > rv if op == "Gt" else lv < rv
    return False


def label_selector_matches(selector: Mapping | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(sel).Matches``; ``None`` matches nothing, ``{}`` everything."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    return all(requirement_matches(r, labels) for r in selector.get("matchExpressions") or [])


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
    na = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
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


def tolerates(toleration: Mapping, taint: Mapping) -> bool:
    """``Toleration.ToleratesTaint``."""
    eff = toleration.get("effect", "")
    if eff and eff != taint.get("effect", ""):
        return False
    tkey = toleration.get("key", "")
    if tkey and tkey != taint.get("key", ""):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return toleration.get("value", "") == taint.get("value", "")
    return False


def taint_str(taint: Mapping) -> str:
    """``fmt.Sprintf("%s", corev1.Taint{...})``, e.g. ``{instance spot NoSchedule <nil>}``."""
    added = taint.get("timeAdded") or "<nil>"
    return f"{{{taint.get('key', '')} {taint.get('value', '')} {taint.get('effect', '')} {added}}}"


def untolerated_taint(taints: Iterable[Mapping], tolerations: Iterable[Mapping]) -> Mapping | None:
    """First NoSchedule/NoExecute taint that no toleration tolerates, or None."""
    tols = list(tolerations)
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tols):
            return taint
    return None
