"""Tolerations and taints, as ``k8s.io/api/core/v1`` and the scheduler's TaintToleration plugin see them.

Owns: ``tolerates`` (``Toleration.ToleratesTaint``), ``untolerated_taint`` (``FindMatchingUntoleratedTaint``
restricted to the effects the caller filters on, NoSchedule and NoExecute by default) and ``taint_str`` (a taint
printed as Go prints a ``corev1.Taint``, as Kueue's messages quote it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["SCHEDULING_EFFECTS", "taint_str", "tolerates", "untolerated_taint"]

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``Toleration.ToleratesTaint``: the effect (empty tolerates every effect) and the key (empty tolerates every
    key) must agree; then ``Exists`` tolerates any value, ``Equal`` (the default) only an equal one."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taint(
    taints: Iterable[Mapping[str, Any]],
    tolerations: Iterable[Mapping[str, Any]],
    effects: Iterable[str] = SCHEDULING_EFFECTS,
) -> Mapping[str, Any] | None:
    """The first taint with one of ``effects`` that no toleration tolerates, or None."""
    tols = [t for t in tolerations if isinstance(t, Mapping)]
    wanted = tuple(effects)
    for taint in taints:
        if taint.get("effect") in wanted and not any(tolerates(t, taint) for t in tols):
            return taint
    return None


def taint_str(taint: Mapping[str, Any]) -> str:
    """``fmt.Sprintf("%s", corev1.Taint{...})``, e.g. ``{instance spot NoSchedule <nil>}``."""
    added = taint.get("timeAdded") or "<nil>"
    return f"{{{taint.get('key', '')} {taint.get('value', '')} {taint.get('effect', '')} {added}}}"
