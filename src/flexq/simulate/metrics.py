"""The planner's figures, one row each: what a figure is called, how it is computed from one replica's summary,
its unit and how a reader sees it. Every renderer iterates ``METRICS``: the aggregate over replicas
(``results.aggregate``: ``summary.json``, ``comparison.json``), the variants table in the terminal
(``cli/simulate``) and in ``report.html`` (``report``), a sweep's points (``sweep.csv``, ``sweep.json``) and the
sweep's table (terminal and HTML). A new output is one row here.

Pure: imports nothing from flexq. Must not import flexq.http.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, overload

__all__ = [
    "Metric",
    "METRICS",
    "TIME_UNITS",
    "time_unit",
    "in_unit",
    "mean_of",
    "RANKED",
    "ranked_metrics",
    "table_metrics",
    "sweep_metrics",
    "sweep_table_metrics",
]

Unit = Literal["jobs", "count", "seconds", "ratio", "USD"]


@dataclass(frozen=True)
class Metric:
    """One figure of a run.

    ``name``: its key in a variant's aggregate (mean and 95 % CI over replicas); ``get``: how one replica's
    summary (``results.summarize``) gives it (None: the replica has none, e.g. no job started); ``unit``:
    ``jobs`` (a count of the variant's jobs: "n of total"), ``count``, ``seconds`` (shown in one unit per column,
    ``time_unit``), ``ratio`` (shown as %), ``USD``; ``label``: what a reader calls it (a column's head, before
    its unit). Where it is shown: ``table`` (the variants table, terminal and HTML; ``narrow``: dropped first
    from a narrow terminal), ``sweep`` (a column of every sweep point, as ``key``; ``missing``: its value when no
    replica has it) and ``sweep_table`` (the sweep's table, as ``sweep_label``)."""

    name: str
    get: Callable[[dict[str, Any]], Any]
    unit: Unit
    label: str
    table: bool = False
    narrow: bool = False
    sweep: bool = False
    missing: float | None = None
    sweep_table: bool = False
    sweep_label: str = ""

    @property
    def key(self) -> str:
        """The figure's key in a sweep point (and a comparison's ranking): seconds say so in the name."""
        return self.name + "Seconds" if self.unit == "seconds" else self.name

    def head(self, time_unit: str = "min", label: str | None = None) -> str:
        """The column's head: the label (or ``label``) and its unit (a duration's in ``time_unit``)."""
        suffix = {"seconds": f" ({time_unit})", "ratio": " (%)", "USD": " (USD)"}.get(self.unit, "")
        return (self.label if label is None else label) + suffix

    def plain(self, v: Any, size: float = 60.0) -> str:
        """One value as a table cell without an interval (a duration in units of ``size`` seconds)."""
        if v is None:
            return "-"
        if self.unit == "seconds":
            return f"{v / size:,.1f}"
        if self.unit == "ratio":
            return f"{100 * v:.1f}"
        if self.unit == "USD":
            return f"{v:,.2f}"
        return f"{v:g}"


METRICS: tuple[Metric, ...] = (
    # the variants table, in its order (a reader's: jobs lost first, then the waits, then money)
    Metric(
        "jobsLost",
        lambda s: s["jobs"]["lost"],
        "jobs",
        "jobs lost",
        table=True,
        sweep=True,
        missing=0.0,
        sweep_table=True,
        sweep_label="jobs lost",
    ),
    Metric(
        "waitCensoredMean",
        lambda s: s["waitToStartCensored"].get("mean"),
        "seconds",
        "wait to start, censored, mean",
        table=True,
        sweep=True,
        missing=0.0,
        sweep_table=True,
        sweep_label="censored mean wait",
    ),
    Metric(
        "waitCensoredP95",
        lambda s: s["waitToStartCensored"].get("p95"),
        "seconds",
        "censored p95",
        table=True,
        narrow=True,
        sweep=True,
        missing=0.0,
        sweep_table=True,
        sweep_label="censored p95",
    ),
    Metric(
        "waitToStartMean",
        lambda s: s["waitToStart"]["all"].get("mean"),
        "seconds",
        "wait to start, jobs that started",
        table=True,
        sweep=True,
    ),
    Metric(
        "waitToAdmissionMean",
        lambda s: s["waitToAdmission"]["all"].get("mean"),
        "seconds",
        "wait to admission",
        table=True,
        narrow=True,
    ),
    Metric(
        "goodput", lambda s: s["goodput"]["ratio"], "ratio", "goodput", table=True, narrow=True, sweep=True
    ),
    Metric(
        "costUSD",
        lambda s: s["costUSD"]["total"],
        "USD",
        "cost",
        table=True,
        sweep=True,
        missing=0.0,
        sweep_table=True,
        sweep_label="cost",
    ),
    Metric(
        "evictions",
        lambda s: sum(sum(r.values()) for r in s["evictions"].values()),
        "count",
        "evictions",
        table=True,
        narrow=True,
    ),
    # in the aggregate only (summary.json)
    Metric("succeeded", lambda s: s["jobs"]["succeeded"], "jobs", "succeeded"),
    Metric("failed", lambda s: s["jobs"]["failed"], "jobs", "failed"),
    Metric("deactivated", lambda s: s["jobs"]["deactivated"], "jobs", "deactivated"),
    Metric("neverStarted", lambda s: s["jobs"]["neverStarted"], "jobs", "never started"),
    Metric("stillRunning", lambda s: s["jobs"]["stillRunning"], "jobs", "still running"),
    Metric(
        "waitToAdmissionP95", lambda s: s["waitToAdmission"]["all"].get("p95"), "seconds", "admission p95"
    ),
    Metric("waitToStartP95", lambda s: s["waitToStart"]["all"].get("p95"), "seconds", "start p95"),
    Metric("makespanSeconds", lambda s: s["makespanSeconds"], "count", "makespan (s)"),
)


RANKED = (
    "jobsLost",
    "waitCensoredMean",
    "costUSD",
)  # what a variant is ranked by, in order (results.ranking)


def ranked_metrics() -> list[Metric]:
    """The figures a variant is ranked by (``RANKED``): what a change is judged by."""
    by = {m.name: m for m in METRICS}
    return [by[n] for n in RANKED]


def table_metrics() -> list[Metric]:
    """The columns of the variants table (terminal and HTML), in order."""
    return [m for m in METRICS if m.table]


def sweep_metrics() -> list[Metric]:
    """The figures of every sweep point (``sweep.csv``, ``sweep.json``), in order."""
    return [m for m in METRICS if m.sweep]


def sweep_table_metrics() -> list[Metric]:
    """The figures of the sweep's table (terminal and HTML), in order."""
    return [m for m in METRICS if m.sweep_table]


@overload
def mean_of(doc: dict[str, Any], name: str) -> float | None: ...
@overload
def mean_of(doc: dict[str, Any], name: str, default: float) -> float: ...
@overload
def mean_of(doc: dict[str, Any], name: str, default: float | None) -> float | None: ...
def mean_of(doc: dict[str, Any], name: str, default: float | None = None) -> float | None:
    """The mean over replicas of the figure ``name`` in a variant's document (``default`` when no replica has
    it)."""
    entry = doc["aggregate"].get(name)
    return float(entry["mean"]) if entry else default


TIME_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86400.0))


def time_unit(values: list[Any]) -> tuple[str, float]:
    """One unit for a column of durations (seconds): the largest in which its biggest value is at least 1.5, so
    every row of the column reads in the same unit."""
    top = max((abs(float(v)) for v in values if v is not None), default=0.0)
    name, size = TIME_UNITS[0]
    for n, sz in TIME_UNITS:
        if top >= 1.5 * sz:
            name, size = n, sz
    return name, size


def in_unit(v: Any, size: float) -> str:
    """A duration in a column's unit: whole numbers from 100 up, one decimal below ("-" for none)."""
    if v is None:
        return "-"
    x = float(v) / size
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}"
