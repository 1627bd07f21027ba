"""The cluster autoscaler's node-group backoff for pools bound to a custom ComputeClass (``utils/backoff``'s
exponential backoff, and GKE's flex-start wait): after a failed scale-up an option is skipped for about 5 minutes,
doubling to 30 with failures in a row (the streak resets after 3 h); a flex-start rule first waits
``capacityCheckWaitTimeSeconds`` for capacity before the next rule is tried. ``until`` holds, per pool, the time
before which no scale-up is attempted (the autoscaler's failed scale-up back-off writes it too).
"""

from __future__ import annotations

from typing import Any

from flexq.gke.compute_class import BACKOFF_RESET_SECONDS, backoff_after, flex_wait, rule_index, rules

__all__ = ["NodeGroupBackoff"]


class NodeGroupBackoff:
    """See the module docstring."""

    __slots__ = ("until", "flex_waiting", "fail_streak")

    def __init__(self) -> None:
        self.until: dict[str, float] = {}  # pool -> no scale-up attempt before this time
        self.flex_waiting: dict[
            str, float
        ] = {}  # flex-start ComputeClass pool -> when its capacity wait began
        self.fail_streak: dict[str, tuple[int, float]] = {}  # ComputeClass pool -> (failures in a row, last)

    def reset(self, name: str) -> None:
        """The pool scaled up: its backoff, wait and streak are over."""
        self.until.pop(name, None)
        self.flex_waiting.pop(name, None)
        self.fail_streak.pop(name, None)

    def after_failure(
        self, cc: dict[str, Any] | None, pool: dict[str, Any], retry: float, now: float
    ) -> float | None:
        """Backoff after a failed scale-up of a pool of ComputeClass ``cc``: until when the option is skipped
        (then retried from the top); None while a flex-start rule still waits ``capacityCheckWaitTimeSeconds``
        for capacity (keep waiting on this rule, lower rules are not tried)."""
        name = pool["spec"]["name"]
        idx = rule_index(cc, pool) if cc is not None else None
        rule = rules(cc)[idx] if cc is not None and idx is not None and idx < len(rules(cc)) else None
        wait = flex_wait(rule)
        if wait > 0:
            started = self.flex_waiting.setdefault(name, now)
            if now < started + wait:
                self.until[name] = min(retry, started + wait)
                return None
            self.flex_waiting.pop(name, None)
        return now + self.streak(name, now)

    def streak(self, name: str, now: float) -> float:
        """Seconds to skip a ComputeClass option after a failed scale-up (exponential, reset after 3 h)."""
        streak, last = self.fail_streak.get(name, (0, now))
        if now - last > BACKOFF_RESET_SECONDS:
            streak = 0
        self.fail_streak[name] = (streak + 1, now)
        return backoff_after(streak + 1)
