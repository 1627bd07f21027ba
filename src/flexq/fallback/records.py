"""What the fallback wrote, read back: a job's move record (``fallback.flexq.dev/move``) and whether the job is
suspended; a ClusterQueue's capped quotas (``fallback.flexq.dev/quota``: the admin's figures, per flavor). Used by every step (moves, hedge-backs, steering, rescue, the priority rules)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flexq.fallback.model import ANN_MOVE, ANN_QUOTA

__all__ = ["move_state", "suspended", "saved_quotas"]


def move_state(job: Mapping[str, Any] | None) -> dict[str, Any]:
    """The job's move record (empty when it has none or it is unreadable)."""
    text = ((job or {}).get("metadata", {}).get("annotations") or {}).get(ANN_MOVE)
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def suspended(job: Mapping[str, Any]) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def saved_quotas(cq: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Flavor -> the admin's quota figures the fallback's cap saved on the ClusterQueue (empty: nothing capped)."""
    text = ((cq or {}).get("metadata", {}).get("annotations") or {}).get(ANN_QUOTA)
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {k: dict(v) for k, v in doc.items() if isinstance(v, dict)} if isinstance(doc, dict) else {}
