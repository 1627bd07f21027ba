"""What a sweep found (``SweepResult``), the Pareto front of (jobs lost, censored mean wait, cost) and the
budget rule of the recommendation (cost per unit of finished work when the base itself lost work)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flexq.simulate.run_result import RunResult
from flexq.simulate.study import Variant
from flexq.simulate.sweep.spec import SweepSpec


@dataclass
class SweepResult:
    spec: SweepSpec
    base: str
    rows: list[dict[str, Any]]  # one per point (the base first): knob values and figures
    recommended: str  # the point that ranks first at no more than the base's cost (see within_budget)
    overall: str  # the point that ranks first whatever its cost
    diff: str  # the recommended point's manifests and cluster against the base's
    apply: str = ""  # best.yaml: the objects the recommended point changes or adds, whole (kubectl apply -f)
    variants: dict[str, Variant] = field(default_factory=dict)  # every point, the base first
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: list[RunResult] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    headline: str = ""


def pareto(rows: list[dict[str, Any]]) -> set[str]:
    """The points no other point beats on all of (jobs lost, censored mean wait, cost) and strictly on one."""
    keys = {r["point"]: (r["jobsLost"], r["waitCensoredMeanSeconds"], r["costUSD"]) for r in rows}
    front = set()
    for p, a in keys.items():
        if not any(
            all(x <= y for x, y in zip(b, a, strict=True)) and any(x < y for x, y in zip(b, a, strict=True))
            for q, b in keys.items()
            if q != p
        ):
            front.add(p)
    return front


def cost_per_work(row: dict[str, Any]) -> float:
    """Cost per unit of work that ran to its end (cost / goodput): a point that loses jobs is not cheap."""
    g = row.get("goodput")
    return row["costUSD"] / g if g else (row["costUSD"] if g is None else float("inf"))


def within_budget(row: dict[str, Any], base: dict[str, Any]) -> bool:
    """No dearer than the base: its cost at most the base's, or, when the base lost work, its cost per unit of
    finished work (cost / goodput) at most the base's (a base that loses jobs is cheap for that reason)."""
    if row["costUSD"] <= base["costUSD"] * (1 + 1e-9):
        return True
    return (base.get("goodput") or 1.0) < 1.0 and cost_per_work(row) <= cost_per_work(base) * (1 + 1e-9)


WAIT_TOLERANCE = 0.01  # a censored mean wait within 1 % (or a second) of another's is the same wait
COST_TOLERANCE = 0.01  # a cost within 1 % of another's is the same cost


def tied(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two points as good as each other: the same jobs lost, and their censored mean waits and costs within
    noise (``WAIT_TOLERANCE``, ``COST_TOLERANCE``). Among tied points the sweep recommends the smallest change
    from the base (``run``)."""
    wa, wb = a["waitCensoredMeanSeconds"], b["waitCensoredMeanSeconds"]
    ca, cb = a["costUSD"], b["costUSD"]
    return (
        abs(a["jobsLost"] - b["jobsLost"]) < 1e-9
        and abs(wa - wb) <= max(1.0, WAIT_TOLERANCE * max(wa, wb))
        and abs(ca - cb) <= COST_TOLERANCE * max(ca, cb)
    )
