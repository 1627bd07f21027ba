"""Label selectors, node selector requirements and required node affinity, as Kubernetes matches them.

Owns:
- ``requirement_matches``: one ``NodeSelectorRequirement`` against a label map, as
  ``nodeSelectorRequirementsAsSelector`` builds it and ``labels.Requirement.Matches`` answers (In, NotIn,
  Exists, DoesNotExist, Gt, Lt). A requirement that does not parse (an unknown operator, values where none are
  allowed or none where some are required, ``Gt``/``Lt`` without exactly one integer, an invalid label key or
  value) makes its term an error, and an erroring term matches nothing.
- ``node_selector_matches``: ``nodeaffinity.NodeSelector.Match`` (terms ORed, requirements ANDed, an empty term
  matches nothing, ``matchFields`` only on ``metadata.name`` with ``In``/``NotIn`` and exactly one value).
- ``pod_matches_node``: ``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`` — ``spec.nodeSelector`` (every
  pair equal) and the required node affinity.
- ``label_selector_matches``: ``metav1.LabelSelectorAsSelector(selector).Matches`` (``None`` matches nothing,
  ``{}`` everything, an unparsable selector nothing).
- ``flavor_matches_affinity``: Kueue's ``flavorSelector(...).Match`` — which ResourceFlavors a pod set's node
  selector and required affinity admit, only the flavor's own label keys counting (Kueue's flavor assigner and
  the fallback's promotion both ask it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import PydanticCustomError

from flexq.api.base import check_label_key, check_label_value
from flexq.api.wellknown import OBJECT_NAME_FIELD

__all__ = [
    "flavor_matches_affinity",
    "label_selector_matches",
    "node_selector_matches",
    "pod_matches_node",
    "requirement_matches",
    "required_node_selector",
]

_SET_OPS = ("In", "NotIn")
_EXIST_OPS = ("Exists", "DoesNotExist")
_NUMERIC_OPS = ("Gt", "Lt")


class _ParseError(Exception):
    """A requirement Kubernetes would refuse to build a selector from."""


def _valid(check: Any, value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        check(value)
    except PydanticCustomError:
        return False
    return True


def _parse_int(text: object) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``."""
    if not isinstance(text, str) or not text or not text.lstrip("+-").isdigit():
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


def _check(req: Mapping[str, Any], ops: Sequence[str]) -> tuple[str, str, list]:
    """``labels.NewRequirement``'s checks; raises ``_ParseError`` where it returns an error."""
    key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    if not isinstance(values, list) or op not in ops or not _valid(check_label_key, key):
        raise _ParseError
    if op in _SET_OPS and not values:
        raise _ParseError
    if op in _EXIST_OPS and values:
        raise _ParseError
    if op in _NUMERIC_OPS and (len(values) != 1 or _parse_int(values[0]) is None):
        raise _ParseError
    if op in _SET_OPS and not all(_valid(check_label_value, v) for v in values):
        raise _ParseError
    return key, op, values


def _matches(key: str, op: str, values: list, labels: Mapping[str, str]) -> bool:
    """``labels.Requirement.Matches`` for a requirement that parsed."""
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present:
        return False
    have, want = _parse_int(labels[key]), _parse_int(values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement``; an unparsable one matches nothing."""
    try:
        key, op, values = _check(req, _SET_OPS + _EXIST_OPS + _NUMERIC_OPS)
    except _ParseError:
        return False
    return _matches(key, op, values, labels)


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str], name: str | None) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term selects no objects
    try:
        parsed = [_check(e, _SET_OPS + _EXIST_OPS + _NUMERIC_OPS) for e in exprs]
        for f in fields:  # nodeSelectorRequirementsAsFieldSelector
            if (
                f.get("key") != OBJECT_NAME_FIELD
                or f.get("operator") not in _SET_OPS
                or len(f.get("values") or []) != 1
            ):
                raise _ParseError
    except _ParseError:
        return False
    if not all(_matches(k, op, vs, labels) for k, op, vs in parsed):
        return False
    for f in fields:
        equal = name is not None and name == f["values"][0]
        if equal != (f["operator"] == "In"):
            return False
    return True


def node_selector_matches(
    selector: Mapping[str, Any] | None, labels: Mapping[str, str], name: str | None = None
) -> bool:
    """``NodeSelector.Match``: any term matches (terms that do not parse are skipped)."""
    if selector is None:
        return False
    return any(
        _term_matches(t, labels, name)
        for t in selector.get("nodeSelectorTerms") or []
        if isinstance(t, Mapping)
    )


def required_node_selector(pod_spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``, or None."""
    affinity = pod_spec.get("affinity") or {}
    return (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")


def pod_matches_node(pod_spec: Mapping[str, Any], labels: Mapping[str, str], name: str | None = None) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: the nodeSelector, then the required node affinity."""
    for k, v in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = required_node_selector(pod_spec)
    return required is None or node_selector_matches(required, labels, name)


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    try:
        parsed = [_check(r, _SET_OPS + _EXIST_OPS) for r in selector.get("matchExpressions") or []]
    except _ParseError:
        return False
    return all(_matches(k, op, vs, labels) for k, op, vs in parsed)


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
