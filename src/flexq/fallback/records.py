"""What the fallback wrote on a job, read back: its move record (``fallback.flexq.dev/move``) and whether the job
is suspended. Used by every step (moves, hedge-backs, steering, rescue, the priority rules)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flexq.fallback.model import ANN_MOVE

__all__ = ["move_state", "suspended"]


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
