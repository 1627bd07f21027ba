"""Pod lifecycle facts every domain reads the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TERMINAL_PHASES", "is_terminal"]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodTerminal``: the pod's phase is Succeeded or Failed."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES
