"""Condition lists as Kubernetes writes them (``meta.SetStatusCondition`` semantics) and a pod's QoS class.

``set_condition`` keeps ``lastTransitionTime`` unless the status flips, and reports whether anything
changed so callers can skip no-op writes. Pure; must not import the store, the runtime or domains.
"""

from __future__ import annotations

from flexq.clock import format_time


def get_condition(obj_or_status: dict, type_: str) -> dict | None:
    """The condition of ``type_`` in ``status.conditions`` (pass the object or its status)."""
    status = obj_or_status.get("status", obj_or_status) if "metadata" in obj_or_status else obj_or_status
    for c in (status or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def set_condition(conditions: list[dict], type_: str, status: str, reason: str | None, message: str | None,
                  now: float, *, probe: bool = False) -> bool:
    """Add or update the condition in place; True when something changed."""
    new: dict = {"type": type_, "status": status}
    if probe:
        new["lastProbeTime"] = None
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    for i, c in enumerate(conditions):
        if c.get("type") != type_:
            continue
        new["lastTransitionTime"] = c.get("lastTransitionTime") if c.get("status") == status else format_time(now)
        if c == new:
            return False
        conditions[i] = new
        return True
    new["lastTransitionTime"] = format_time(now)
    conditions.append(new)
    return True


def is_true(obj_or_status: dict, type_: str) -> bool:
    c = get_condition(obj_or_status, type_)
    return bool(c and c.get("status") == "True")


