"""Status conditions as Kubernetes writes them.

Owns two kinds of condition, as upstream has two:
- ``metav1.Condition`` (Kueue's Workloads, ClusterQueues, ProvisioningRequests…): ``set_status_condition`` is
  ``apimeta.SetStatusCondition`` — ``lastTransitionTime`` moves only when the status changes, ``observedGeneration``
  is the object's generation, the message is truncated as ``api.TruncateConditionMessage`` does;
- core conditions (``PodCondition``, ``JobCondition``, ``NodeCondition``): ``set_core_condition`` keeps
  ``lastTransitionTime`` unless the status flips, omits empty reason/message, and can carry ``lastProbeTime``.
Both report whether anything changed, so callers skip no-op writes. ``find_condition``, ``is_true``,
``is_false`` and ``by_type`` (with ``true_in``) read either kind, from the object or from its ``status``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flexq.clock import format_time

__all__ = [
    "MAX_CONDITION_MESSAGE",
    "by_type",
    "find_condition",
    "is_false",
    "is_true",
    "remove_status_condition",
    "set_core_condition",
    "set_status_condition",
    "true_in",
]

MAX_CONDITION_MESSAGE = 32 * 1024  # api.TruncateConditionMessage


def find_condition(obj_or_status: Mapping[str, Any], ctype: str) -> dict | None:
    """The condition of that type in ``status.conditions`` (pass the object or its status), or None."""
    nested = "metadata" in obj_or_status or isinstance(obj_or_status.get("status"), Mapping)
    status = obj_or_status.get("status") if nested else obj_or_status
    for c in (status or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def by_type(obj_or_status: Mapping[str, Any]) -> dict[str, dict]:
    """Every condition by its type (for a reader that looks at several: one walk of the list)."""
    nested = "metadata" in obj_or_status or isinstance(obj_or_status.get("status"), Mapping)
    status = obj_or_status.get("status") if nested else obj_or_status
    return {c.get("type", ""): c for c in (status or {}).get("conditions") or []}


def true_in(conditions: Mapping[str, Mapping[str, Any]], ctype: str) -> bool:
    """Whether ``by_type``'s ``conditions`` hold ``ctype`` with status True."""
    c = conditions.get(ctype)
    return c is not None and c.get("status") == "True"


def is_true(obj_or_status: Mapping[str, Any], ctype: str) -> bool:
    """Whether the condition exists with status True."""
    c = find_condition(obj_or_status, ctype)
    return c is not None and c.get("status") == "True"


def is_false(obj_or_status: Mapping[str, Any], ctype: str) -> bool:
    """Whether the condition exists with status False."""
    c = find_condition(obj_or_status, ctype)
    return c is not None and c.get("status") == "False"


def set_status_condition(
    obj: dict, ctype: str, status: bool | str, reason: str, message: str, now: float
) -> bool:
    """``apimeta.SetStatusCondition`` on ``obj['status']['conditions']``."""
    st = status if isinstance(status, str) else ("True" if status else "False")
    gen = (obj.get("metadata") or {}).get("generation", 0)
    message = message[:MAX_CONDITION_MESSAGE]
    conds = obj.setdefault("status", {}).setdefault("conditions", [])
    for c in conds:
        if c.get("type") == ctype:
            changed = False
            if c.get("status") != st:
                c["status"] = st
                c["lastTransitionTime"] = format_time(now)
                changed = True
            for k, v in (("reason", reason), ("message", message), ("observedGeneration", gen)):
                if c.get(k) != v:
                    c[k] = v
                    changed = True
            return changed
    conds.append(
        {
            "type": ctype,
            "status": st,
            "reason": reason,
            "message": message,
            "observedGeneration": gen,
            "lastTransitionTime": format_time(now),
        }
    )
    return True


def remove_status_condition(obj: dict, ctype: str) -> bool:
    """``apimeta.RemoveStatusCondition``; True if one was there."""
    conds = (obj.get("status") or {}).get("conditions") or []
    kept = [c for c in conds if c.get("type") != ctype]
    if len(kept) != len(conds):
        obj["status"]["conditions"] = kept
        return True
    return False


def set_core_condition(
    conditions: list[dict],
    ctype: str,
    status: str,
    reason: str | None,
    message: str | None,
    now: float,
    *,
    probe: bool = False,
) -> bool:
    """Add or update a core (pod, job, node) condition in place; True when something changed."""
    new: dict = {"type": ctype, "status": status}
    if probe:
        new["lastProbeTime"] = None
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    for i, c in enumerate(conditions):
        if c.get("type") != ctype:
            continue
        new["lastTransitionTime"] = (
            c.get("lastTransitionTime") if c.get("status") == status else format_time(now)
        )
        if c == new:
            return False
        conditions[i] = new
        return True
    new["lastTransitionTime"] = format_time(now)
    conditions.append(new)
    return True
