"""The ETA's interval, corrected online from what the cluster did: adaptive conformal inference per class.

Owns ``Calibration``: for each class of job (its LocalQueue and ``flexq.dev/class``, as the run-time history
groups jobs) one miscoverage level ``alpha``, updated as starts are observed (Gibbs & Candès, "Adaptive Conformal
Inference Under Distribution Shift", NeurIPS 2021): an interval that missed raises the interval's width for
that class, one that covered narrows it, ``alpha <- alpha + gamma * (target_miss - miss)``, so over time the
share of starts inside the interval holds at ``target`` (80 %) whatever the forward runs get wrong — a capacity
model that is off, a run-time prior that is too long. The forward runs' quantiles ``alpha / 2`` and
``1 - alpha / 2`` then make the interval (``quantiles``); a class never observed uses the target's. The median is
corrected the same way, as a quantile of its own (online quantile tracking, the one-sided case of the same
update): each class keeps the level ``mid`` of the forward runs' starts it reads its median at, lowered when a
start came at or before the median and raised when it came after, ``mid <- mid + gamma * (1[after] - 1/2)``, so
that half of the starts come before the median whatever the forward runs' shape gets wrong (``point``).

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
from flexq.eta.history import WatchedStockouts
from flexq.semantics.conditions import find_condition

__all__ = ["Calibration", "Prediction", "TARGET", "GAMMA"]

TARGET = 0.8  # the coverage the interval states
GAMMA = 0.05  # ACI's step: how fast a class's level follows its misses
MIN_ALPHA, MAX_ALPHA = 0.0, 0.98
MIN_MID, MAX_MID = 0.05, 0.95  # the median's level stays inside the forward runs' spread


def _pct(x: float, digits: int) -> str:
    """``0.8`` -> ``80 %`` (the house writes a space before the sign)."""
    return f"{x * 100:.{digits}f} %"


API_TIME_RESOLUTION = 1.0  # seconds: a condition's lastTransitionTime is whole seconds (RFC 3339, truncated)


@dataclass
class Prediction:
    """One prediction waiting for its outcome: seconds from ``at`` (``high`` None: beyond the horizon; ``median``
    None: beyond the horizon, or not recorded)."""

    key: str
    klass: str
    at: float
    low: float | None
    high: float | None
    horizon: float
    median: float | None = None
    mid_class: str = ""  # the median's class (its correction is kept apart: "" = ``klass``)

    @classmethod
    def of(
        cls,
        key: str,
        klass: str,
        at: float,
        low: float | None,
        median: float | None,
        high: float | None,
        horizon: float,
        mid_class: str = "",
    ) -> Prediction:
        """A forecast's prediction as the correction records it: an interval without a low end (no forward run
        started the job) says "not within the horizon", so its low end is the horizon."""
        return cls(key, klass, at, horizon if low is None else low, high, horizon, median, mid_class)

    def miss(self, start: float) -> bool:
        """Whether the start (a ``PodsReady`` time as the API records it: whole seconds, truncated) fell outside
        the interval: the job started somewhere in ``[start, start + 1)``, so it is below the low end only when
        all of that second is."""
        wait = start - self.at
        return (self.low is not None and wait + API_TIME_RESOLUTION <= self.low) or (
            self.high is not None and wait > self.high
        )

    def after_median(self, start: float | None) -> bool | None:
        """Did the start (None: not within the interval's end or the horizon) come after the median? None when
        there is no median to judge."""
        if self.median is None:
            return None
        return start is None or start - self.at > self.median


@dataclass
class Calibration:
    """See the module docstring."""

    target: float = TARGET
    gamma: float = GAMMA
    alpha: dict[str, float] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)  # observations per class
    covered: dict[str, int] = field(default_factory=dict)  # of which inside the interval
    mid: dict[str, float] = field(default_factory=dict)  # the level each class's median is read at
    mid_seen: dict[str, int] = field(default_factory=dict)  # medians judged per class
    mid_before: dict[str, int] = field(default_factory=dict)  # of which the start came at or before it
    pending: dict[str, Prediction] = field(default_factory=dict)  # workload key -> its open prediction
    # the stock-out episodes seen end while watching (flexq.eta.history), kept in the same file
    memory: WatchedStockouts = field(default_factory=WatchedStockouts)

    # -- the interval ------------------------------------------------------------------------------------------
    def level(self, klass: str) -> float:
        """The miscoverage level the class's interval is drawn at (``1 - target`` before any observation)."""
        return self.alpha.get(klass, 1.0 - self.target)

    def quantiles(self, klass: str) -> tuple[float, float]:
        """(low, high) quantiles of the forward runs' starts that make the class's interval."""
        a = min(MAX_ALPHA, max(MIN_ALPHA, self.level(klass)))
        return a / 2.0, 1.0 - a / 2.0

    def point(self, klass: str) -> float:
        """The quantile of the forward runs' starts that is the class's median (0.5 before any observation)."""
        return min(MAX_MID, max(MIN_MID, self.mid.get(klass, 0.5)))

    def describe(self, klass: str, mid_class: str = "") -> str:
        """The correction of one class's interval and of its median's class (default ``klass``), in words, with
        the observations each rests on."""
        n = self.seen.get(klass, 0)
        lo, hi = self.quantiles(klass)
        target = _pct(self.target, 0)
        if not n:
            out = (
                f"{target} interval: the forward runs' {_pct(lo, 0)}-{_pct(hi, 0)} quantiles (no start of its "
                "class observed yet: not corrected)"
            )
        else:
            out = (
                f"{target} interval corrected online (adaptive conformal inference) from {n} observed start(s) of "
                f"its class, {_pct(self.covered.get(klass, 0) / n, 0)} of them inside their interval: drawn at "
                f"the forward runs' {_pct(lo, 1)}-{_pct(hi, 1)} quantiles"
            )
        mc = mid_class or klass
        m = self.mid_seen.get(mc, 0)
        if not m:
            return out + "; median: the forward runs' 50 % quantile (not corrected yet)"
        return out + (
            f"; median corrected from {m} observed start(s) of jobs like it ({mc}), "
            f"{_pct(self.mid_before.get(mc, 0) / m, 0)} of them at or before their median: read at the forward "
            f"runs' {_pct(self.point(mc), 1)} quantile"
        )

    # -- learning ----------------------------------------------------------------------------------------------
    def update(self, klass: str, miss: bool, after_median: bool | None = None, mid_class: str = "") -> None:
        """One observation of the class: the interval ``miss``ed or not; the start came after the median or not
        (None: no median to judge), counted for the median's class ``mid_class`` (default ``klass``)."""
        a = self.level(klass) + self.gamma * ((1.0 - self.target) - (1.0 if miss else 0.0))
        self.alpha[klass] = a
        self.seen[klass] = self.seen.get(klass, 0) + 1
        self.covered[klass] = self.covered.get(klass, 0) + (0 if miss else 1)
        if after_median is not None:
            mc = mid_class or klass
            m = self.mid.get(mc, 0.5) + self.gamma * ((1.0 if after_median else 0.0) - 0.5)
            self.mid[mc] = min(MAX_MID, max(MIN_MID, m))
            self.mid_seen[mc] = self.mid_seen.get(mc, 0) + 1
            self.mid_before[mc] = self.mid_before.get(mc, 0) + (0 if after_median else 1)

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
                self.update(p.klass, p.miss(start), p.after_median(start), p.mid_class)
            elif p.high is not None and now - p.at > p.high:
                # its interval ended without a start: a miss, known now (and the start is after the median)
                self.update(p.klass, True, p.after_median(None), p.mid_class)
            elif p.high is None and now - p.at > p.horizon:
                # said "not within the horizon", and it did not start (nor by any median within it)
                self.update(p.klass, False, p.after_median(None), p.mid_class)
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
            "mid": dict(self.mid),
            "midSeen": dict(self.mid_seen),
            "midBefore": dict(self.mid_before),
            "pending": [vars(p) for p in self.pending.values()],
            "stockouts": self.memory.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Calibration:
        out = cls(target=float(d.get("target", TARGET)), gamma=float(d.get("gamma", GAMMA)))
        out.alpha = {str(k): float(v) for k, v in (d.get("alpha") or {}).items()}
        out.seen = {str(k): int(v) for k, v in (d.get("seen") or {}).items()}
        out.covered = {str(k): int(v) for k, v in (d.get("covered") or {}).items()}
        out.mid = {str(k): float(v) for k, v in (d.get("mid") or {}).items()}
        out.mid_seen = {str(k): int(v) for k, v in (d.get("midSeen") or {}).items()}
        out.mid_before = {str(k): int(v) for k, v in (d.get("midBefore") or {}).items()}
        out.memory = WatchedStockouts.from_dict(d.get("stockouts"))
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
