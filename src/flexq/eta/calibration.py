"""The ETA's interval, corrected online from what the cluster did: adaptive conformal inference per class.

Owns ``Calibration``: for each class of job (its LocalQueue and ``flexq.dev/class``, as the run-time history
groups jobs) one miscoverage level ``alpha``, updated as starts are observed (Gibbs & Candès, "Adaptive Conformal
Inference Under Distribution Shift", NeurIPS 2021): an interval that missed raises the interval's width for
that class, one that covered narrows it, ``alpha <- alpha + gamma * (target_miss - miss)``, so over time the
share of starts inside the interval holds at ``target`` (80 %) whatever the forward runs get wrong — a capacity
model that is off, a run-time prior that is too long. The forward runs' quantiles ``alpha / 2`` and
``1 - alpha / 2`` then make the interval (``quantiles``); a class never observed uses the target's.

It keeps the predictions not yet resolved (one per waiting job: the first made since its last one resolved)
and resolves them from later states: the job started (its ``PodsReady`` time) inside or outside the interval,
or the interval's upper end passed without a start (a miss known before the start), or the horizon passed
with the interval open-ended (covered). ``record`` takes a forecast's predictions, ``observe`` a state (or the
starts, as the calibration benchmark gives them). ``to_dict`` / ``from_dict`` / ``load`` / ``save``: plain
JSON, so the state survives the process (the background service keeps it beside the twin; ``flexq eta`` keeps
it per cluster under ``$FLEXQ_HOME``).

Pure but for ``load`` / ``save`` (a file the caller names).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flexq.clock import parse_time_or_none
from flexq.semantics.conditions import find_condition

__all__ = ["Calibration", "Prediction", "TARGET", "GAMMA"]

TARGET = 0.8  # the coverage the interval states
GAMMA = 0.05  # ACI's step: how fast a class's level follows its misses
MIN_ALPHA, MAX_ALPHA = 0.0, 0.98


def _pct(x: float, digits: int) -> str:
    """``0.8`` -> ``80 %`` (the house writes a space before the sign)."""
    return f"{x * 100:.{digits}f} %"


@dataclass
class Prediction:
    """One prediction waiting for its outcome: seconds from ``at`` (``high`` None: beyond the horizon)."""

    key: str
    klass: str
    at: float
    low: float | None
    high: float | None
    horizon: float

    def miss(self, start: float) -> bool:
        wait = start - self.at
        return (self.low is not None and wait < self.low) or (self.high is not None and wait > self.high)


@dataclass
class Calibration:
    """See the module docstring."""

    target: float = TARGET
    gamma: float = GAMMA
    alpha: dict[str, float] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)  # observations per class
    covered: dict[str, int] = field(default_factory=dict)  # of which inside the interval
    pending: dict[str, Prediction] = field(default_factory=dict)  # workload key -> its open prediction

    # -- the interval ------------------------------------------------------------------------------------------
    def level(self, klass: str) -> float:
        """The miscoverage level the class's interval is drawn at (``1 - target`` before any observation)."""
        return self.alpha.get(klass, 1.0 - self.target)

    def quantiles(self, klass: str) -> tuple[float, float]:
        """(low, high) quantiles of the forward runs' starts that make the class's interval."""
        a = min(MAX_ALPHA, max(MIN_ALPHA, self.level(klass)))
        return a / 2.0, 1.0 - a / 2.0

    def describe(self, klass: str) -> str:
        """The correction of one class, in words (with the observations it rests on)."""
        n = self.seen.get(klass, 0)
        lo, hi = self.quantiles(klass)
        target = _pct(self.target, 0)
        if not n:
            return (
                f"{target} interval: the forward runs' {_pct(lo, 0)}-{_pct(hi, 0)} quantiles (no start of its "
                "class observed yet: not corrected)"
            )
        return (
            f"{target} interval corrected online (adaptive conformal inference) from {n} observed start(s) of "
            f"its class, {_pct(self.covered.get(klass, 0) / n, 0)} of them inside their interval: drawn at the "
            f"forward runs' {_pct(lo, 1)}-{_pct(hi, 1)} quantiles"
        )

    # -- learning ----------------------------------------------------------------------------------------------
    def update(self, klass: str, miss: bool) -> None:
        a = self.level(klass) + self.gamma * ((1.0 - self.target) - (1.0 if miss else 0.0))
        self.alpha[klass] = a
        self.seen[klass] = self.seen.get(klass, 0) + 1
        self.covered[klass] = self.covered.get(klass, 0) + (0 if miss else 1)

    def record(self, predictions: list[Prediction]) -> None:
        """Keep each job's prediction unless one of its is still open."""
        for p in predictions:
            self.pending.setdefault(p.key, p)

    def resolve(
        self, now: float, starts: Mapping[str, float | None], gone: set[str] | frozenset = frozenset()
    ) -> int:
        """Resolve open predictions as of ``now``: ``starts`` maps a workload key to its start (None: not started
        yet; a key absent: not known); ``gone``: keys that will not start (deleted, deactivated) — dropped.
        Returns how many were resolved."""
        done = 0
        for key, p in list(self.pending.items()):
            start = starts.get(key)
            if key in gone:
                del self.pending[key]
                continue
            if start is not None and start >= p.at:
                self.update(p.klass, p.miss(start))
            elif p.high is not None and now - p.at > p.high:
                self.update(p.klass, True)  # its interval ended without a start: a miss, known now
            elif p.high is None and now - p.at > p.horizon:
                self.update(p.klass, False)  # said "not within the horizon", and it did not start
            else:
                continue
            del self.pending[key]
            done += 1
        return done

    def observe(self, workloads: list[dict], now: float) -> int:
        """Resolve from a state's Workloads (their ``PodsReady`` times)."""
        starts: dict[str, float | None] = {}
        gone = set(self.pending)
        for wl in workloads:
            md = wl.get("metadata") or {}
            key = f"{md.get('namespace', '')}/{md.get('name', '')}"
            gone.discard(key)
            c = find_condition(wl, "PodsReady")
            started = (
                parse_time_or_none(c.get("lastTransitionTime")) if c and c.get("status") == "True" else None
            )
            if started is None:
                fin = find_condition(wl, "Finished")
                if (
                    fin is not None
                    and fin.get("status") == "True"
                    and (fin.get("reason") or "") != "Succeeded"
                ):
                    gone.add(key)
                if (wl.get("spec") or {}).get("active") is False:
                    gone.add(key)
            starts[key] = started
        return self.resolve(now, starts, gone)

    # -- persistence -----------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "gamma": self.gamma,
            "alpha": dict(self.alpha),
            "seen": dict(self.seen),
            "covered": dict(self.covered),
            "pending": [vars(p) for p in self.pending.values()],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Calibration:
        out = cls(target=float(d.get("target", TARGET)), gamma=float(d.get("gamma", GAMMA)))
        out.alpha = {str(k): float(v) for k, v in (d.get("alpha") or {}).items()}
        out.seen = {str(k): int(v) for k, v in (d.get("seen") or {}).items()}
        out.covered = {str(k): int(v) for k, v in (d.get("covered") or {}).items()}
        for p in d.get("pending") or []:
            pred = Prediction(**p)
            out.pending[pred.key] = pred
        return out

    @classmethod
    def load(cls, path: Path) -> Calibration:
        """The calibration kept at ``path``; a fresh one when there is none (or it cannot be read)."""
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError, KeyError):
            return cls()

    def save(self, path: Path) -> None:
        """Write atomically (a crash leaves the previous version)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict()))
        os.replace(tmp, path)
