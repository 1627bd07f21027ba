"""Figures from simulation runs: per-run summaries, per-variant aggregates with confidence intervals over
replicas, Kueue-named metrics, and the stable machine-readable files (``jobs.csv``, ``<variant>.json``).

Stable means byte-identical for the same inputs and seeds: rows in a fixed order, keys sorted, numbers
rounded (times to the millisecond, money to the micro-dollar), no wall-clock figures in the files.
Pure functions over ``RunResult``; must not import flexq.http.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from flexq.simulate import metrics as metric_table
from flexq.simulate.causes import causes
from flexq.simulate.metrics import mean_of, sweep_metrics
from flexq.simulate.outputs import write_file
from flexq.simulate.records import WAIT_BUCKETS
from flexq.simulate.run_result import NEVER_RAN, RunResult

__all__ = [
    "stats",
    "summarize",
    "aggregate",
    "write_csv",
    "write_json",
    "CSV_COLUMNS",
    "ranking",
    "rank_key",
    "headline",
    "comparison_document",
    "percentile",
    "kueue_buckets",
    "time_average",
    "cost_curve",
    "node_curves",
]

CSV_COLUMNS = [
    "variant",
    "replica",
    "seed",
    "job",
    "outcome",
    "lost",
    "reason",
    "cause",
    "wait_censored",
    "wait_start",
    "wait_admission",
    *(f"wait_{b}" for b in WAIT_BUCKETS),
    "namespace",
    "kind",
    "class",
    "queue",
    "cluster_queue",
    "priority",
    "submit",
    "admitted",
    "started",
    "finished",
    "run",
    "size",
    "flavors",
    "evictions",
    "preemptions",
]
# every column is in seconds where it is a time: a job that never started waited until the run's horizon in
# wait_censored, and wait_<bucket> split that wait by what the job waited for (flexq.simulate.recorder)
# Student's t, two-sided 95 %, by degrees of freedom
_T95 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def _r(x: float, nd: int = 3) -> float:
    v = round(float(x), nd)
    return 0.0 if v == 0 else v


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def stats(values: list[float]) -> dict[str, Any]:
    v = sorted(values)
    if not v:
        return {"count": 0}
    return {
        "count": len(v),
        "mean": _r(sum(v) / len(v)),
        "p50": _r(percentile(v, 0.5)),
        "p95": _r(percentile(v, 0.95)),
        "max": _r(v[-1]),
    }


def kueue_buckets(n: int) -> list[float]:
    """``generateExponentialBuckets(n)`` of Kueue's metrics: [1] + 2.5 * 2^k, k = 0..n-2."""
    return [1.0] + [2.5 * 2**k for k in range(n - 1)]


def time_average(points: list[tuple[float, int]], end: float) -> float:
    """Mean of a step function given by (time, value after that time) over [0, end]."""
    if end <= 0 or not points:
        return 0.0
    area = 0.0
    for (t, n), (t2, _n2) in zip(points, [*points[1:], (end, 0)], strict=False):
        area += n * max(0.0, min(t2, end) - t)
    return area / end


def node_curves(run: RunResult) -> dict[str, list[tuple[float, int]]]:
    """Nodes per pool over time (step functions)."""
    events: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for n in run.node_records:
        events[n["pool"]].append((n["created"], 1))
        if n["deleted"] is not None:
            events[n["pool"]].append((n["deleted"], -1))
    out = {}
    for pool, evs in sorted(events.items()):
        cur, pts = 0, [(0.0, 0)]
        for t, d in sorted(evs):
            cur += d
            if pts[-1][0] == t:
                pts[-1] = (t, cur)
            else:
                pts.append((t, cur))
        out[pool] = pts
    return out


def cost_curve(run: RunResult, points: int = 200) -> list[tuple[float, float]]:
    """Cumulative cost (USD) at ``points`` evenly spaced times over the run."""
    end = max(run.duration, 1e-9)
    out = []
    for i in range(points + 1):
        t = end * i / points
        c = 0.0
        for n in run.node_records:
            stop = min(t, n["deleted"] if n["deleted"] is not None else end)
            if stop > n["created"]:
                c += (stop - n["created"]) / 3600 * n["pricePerHour"]
        out.append((t, c))
    return out


def summarize(run: RunResult) -> dict[str, Any]:
    """One run's figures (the JSON summary's per-replica entry)."""
    rows = run.jobs
    by_outcome: dict[str, int] = defaultdict(int)
    for r in rows:
        by_outcome[r["outcome"]] += 1
    waits_adm = [r["wait_admission"] for r in rows if r["wait_admission"] is not None]
    waits_start = [r["wait_start"] for r in rows if r["wait_start"] is not None]
    waits_censored = [r["wait_censored"] for r in rows]

    def grouped(col: str, metric: str) -> dict[str, Any]:
        groups: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            if r[metric] is not None:
                groups[r[col] or "(none)"].append(r[metric])
        return {k: stats(v) for k, v in sorted(groups.items())}

    finishes = [r["finished"] for r in rows if r["finished"] is not None]
    first = min((r["submit"] for r in rows), default=0.0)
    node_hours: dict[str, float] = defaultdict(float)
    cost: dict[str, float] = defaultdict(float)
    for n in run.node_records:
        end = n.get("billedUntil", n["deleted"] if n["deleted"] is not None else run.duration)
        h = max(0.0, end - n["created"]) / 3600
        node_hours[n["model"]] += h
        cost[n["model"]] += h * n["pricePerHour"]
    span = max(run.duration, 1e-9)
    usage = {
        k: _r(100 * v["reserved"] / (v["nominal"] * span), 2)
        for k, v in run.usage.items()
        if v["nominal"] > 0
    }
    # Kueue metrics (names and labels as in pkg/metrics/metrics.go)
    buckets = kueue_buckets(16)
    hist: dict[tuple[str, str], list[float]] = defaultdict(list)
    for cq, pc, w in run.admission_waits:
        hist[(cq, pc)].append(w)
    metrics: list[dict[str, Any]] = []
    for (cq, pc), ws in sorted(hist.items()):
        labels = {"cluster_queue": cq, "priority_class": pc}
        metrics.append(
            {
                "name": "kueue_admission_wait_time_seconds",
                "type": "histogram",
                "labels": labels,
                "count": len(ws),
                "sum": _r(sum(ws)),
                "buckets": {f"{b:g}": sum(1 for w in ws if w <= b) for b in buckets},
            }
        )
        metrics.append(
            {"name": "kueue_admitted_workloads_total", "type": "counter", "labels": labels, "value": len(ws)}
        )
    for metric, per_cq in (
        ("kueue_evicted_workloads_total", run.evictions),
        ("kueue_preempted_workloads_total", run.preemptions),
    ):
        for cq, reasons in per_cq.items():
            for reason, count in reasons.items():
                entry: dict[str, Any] = {
                    "name": metric,
                    "type": "counter",
                    "labels": {"cluster_queue": cq, "reason": reason},
                    "value": count,
                }
                metrics.append(entry)
    metrics.append(
        {
            "name": "kueue_pending_workloads",
            "type": "gauge",
            "labels": {"statistic": "time-average"},
            "value": _r(time_average(run.pending, run.duration)),
        }
    )
    lost = [r for r in rows if r["lost"]]
    return {
        "replica": run.replica,
        "seed": run.seed,
        "jobs": {
            "total": len(rows),
            "lost": len(lost),
            "succeeded": by_outcome.get("Succeeded", 0),
            "failed": by_outcome.get("Failed", 0),
            "failedAsPlanned": sum(
                1 for r in rows if r["outcome"] == "Failed" and r["planned_outcome"] == "Failed"
            ),
            "deactivated": by_outcome.get("Deactivated", 0),
            "neverAdmitted": by_outcome.get("NeverAdmitted", 0),
            "admittedNeverStarted": by_outcome.get("NotStarted", 0),
            "neverStarted": sum(by_outcome.get(o, 0) for o in NEVER_RAN),
            "stillRunning": by_outcome.get("Running", 0),
        },
        "lostJobs": lost_jobs(rows),
        "lostByCause": lost_by_cause(rows),
        "horizonSeconds": _r(run.horizon),
        "waitToStartCensored": stats(waits_censored),
        "waitSplit": wait_split(rows),
        "goodput": goodput(run),
        "causes": causes(run, run.kueue),
        "kueue": {  # the Kueue release the variant ran, and the v1beta1 objects it held as v1beta2
            "release": run.kueue.get("release"),
            "v1beta1Converted": len(run.kueue.get("converted") or []),
        },
        "simulatedSeconds": _r(run.duration),
        "makespanSeconds": _r(max(finishes) - first) if finishes else None,
        "waitToAdmission": {
            "all": stats(waits_adm),
            "byPriority": grouped("priority", "wait_admission"),
            "byQueue": grouped("queue", "wait_admission"),
        },
        "waitToStart": {
            "all": stats(waits_start),
            "byPriority": grouped("priority", "wait_start"),
            "byQueue": grouped("queue", "wait_start"),
        },
        "timeToAdmissionByClass": grouped("class", "wait_admission"),
        "clusterQueueReservationPercent": usage,
        "evictions": run.evictions,
        "preemptions": run.preemptions,
        "provisioningRequests": run.provisioning,
        "nodeHours": {k: _r(v) for k, v in sorted(node_hours.items())},
        "costUSD": {**{k: _r(v, 6) for k, v in sorted(cost.items())}, "total": _r(sum(cost.values()), 6)},
        "pendingWorkloadsMean": _r(time_average(run.pending, run.duration)),
        "metrics": metrics,
    }


MAX_LOST_LISTED = 100  # lost jobs listed in a summary (jobs.csv has them all)


def lost_jobs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The jobs that did not run (deactivated, never admitted, admitted but never started, failed unplanned),
    in trace order, with Kueue's reason and the evidence behind it."""
    lost = [r for r in rows if r["lost"]]
    return {
        "count": len(lost),
        "listed": [
            {
                "job": f"{r['kind']}/{r['namespace']}/{r['job']}",
                "outcome": r["outcome"],
                "reason": r["reason"],
                "cause": r["cause"],
                "submitSeconds": _r(r["submit"]),
                "waitedSeconds": _r(r["wait_censored"]),
            }
            for r in lost[:MAX_LOST_LISTED]
        ],
    }


def lost_by_cause(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Lost jobs counted by outcome, Kueue's reason and the first kind of evidence behind it."""
    out: dict[str, int] = defaultdict(int)
    for r in rows:
        if r["lost"]:
            head = f"{r['outcome']} ({r['reason']})" if r["reason"] else r["outcome"]
            out[f"{head}: {r['cause_kind']}" if r["cause_kind"] else head] += 1
    return dict(sorted(out.items()))


def wait_split(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the jobs' waits went (censored: a job that never started waits until the horizon): per bucket, the
    job-hours and the mean minutes per job over every job."""
    n = max(1, len(rows))
    out: dict[str, Any] = {}
    for b in WAIT_BUCKETS:
        total = sum(float(r.get(f"wait_{b}") or 0.0) for r in rows)
        out[b] = {"jobHours": _r(total / 3600), "meanMinutes": _r(total / n / 60)}
    return out


def goodput(run: RunResult) -> dict[str, Any]:
    """Resource-hours of the jobs that ran to their end over resource-hours asked for (each job's size x its
    run time); the resource is TPU chips when the study has TPU jobs, else CPUs."""
    asked = sum(float(r["size"]) * float(r["run"]) for r in run.jobs) / 3600
    done = (
        sum(
            float(r["size"]) * float(r["run"])
            for r in run.jobs
            if r["outcome"] == "Succeeded" or (r["outcome"] == "Failed" and not r["lost"])
        )
        / 3600
    )
    return {
        "resource": run.goodput_resource or "cpu",
        "askedHours": _r(asked),
        "finishedHours": _r(done),
        "ratio": _r(done / asked, 4) if asked > 0 else None,
    }


def _ci(values: list[float]) -> dict[str, Any]:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return {"mean": _r(mean), "ci95": None, "values": [_r(v) for v in values]}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = (_T95[n - 2] if n - 1 <= len(_T95) else 1.96) * sd / math.sqrt(n)
    # every figure summarised here is a count, a duration or money: the interval stops at 0
    return {
        "mean": _r(mean),
        "ci95": [_r(max(0.0, mean - half)), _r(mean + half)],
        "values": [_r(v) for v in values],
    }


def aggregate(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and 95 % confidence interval (Student's t) over replicas of every figure of ``metrics.METRICS``."""
    out: dict[str, Any] = {"replicas": len(summaries)}
    for m in metric_table.METRICS:
        name = m.name
        vals = [m.get(s) for s in summaries]
        vals = [float(v) for v in vals if v is not None]
        if vals:
            out[name] = _ci(vals)
    return out


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def csv_text(runs: list[RunResult]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for run in runs:
        # the jobs that did not finish first (lost, then still running), each part in trace order
        order = sorted(run.jobs, key=lambda r: 0 if r["lost"] else 1 if r["outcome"] == "Running" else 2)
        for row in order:
            full = {"variant": run.variant, "replica": run.replica, "seed": run.seed, **row}
            w.writerow([_fmt(full[c]) for c in CSV_COLUMNS])
    return buf.getvalue()


def write_csv(path: Path, runs: list[RunResult]) -> None:
    write_file(path, csv_text(runs))


def variant_document(study: str, variant: str, description: str, summaries: list[dict[str, Any]]) -> dict:
    """One variant's summary. Keys in reading order (the file is written in this order, not sorted): the
    jobs it lost first, then the figures over replicas, then each replica's detail."""
    agg = aggregate(summaries)
    return {
        "apiVersion": "sim.flexq.dev/v1alpha1",
        "kind": "SimulationSummary",
        "study": study,
        "variant": variant,
        "description": description,
        "jobsLost": agg.get("jobsLost"),
        "lostByCause": _merge_counts([s["lostByCause"] for s in summaries]),
        "waitCensoredMean": agg.get("waitCensoredMean"),
        # replica 0's causes, each suggested change run on the same seeds (flexq.simulate.whatif) when tested
        "causes": summaries[0].get("causes", []) if summaries else [],
        "aggregate": agg,
        "replicas": summaries,
    }


def _merge_counts(maps: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for m in maps:
        for k, v in m.items():
            out[k] += v
    return dict(sorted(out.items()))


def _mean(doc: dict[str, Any], name: str, default: float = 0.0) -> float:
    return mean_of(doc, name, default)


def rank_key(doc: dict[str, Any]) -> tuple[float, float, float]:
    """How variants are compared: fewer jobs lost first, then the lower censored mean wait (a job that never
    started waits until the end), then the lower cost. A variant that loses jobs never ranks above one that
    loses fewer, whatever its waits."""
    return (
        _mean(doc, "jobsLost"),
        _mean(doc, "waitCensoredMean", math.inf),
        _mean(doc, "costUSD", math.inf),
    )


def ranking(docs: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(docs, key=lambda name: (*rank_key(docs[name]), name))


def _mins(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _lost_text(doc: dict[str, Any]) -> str:
    n = _mean(doc, "jobsLost")
    if n == 0:
        return "no job lost"
    top = max(doc["lostByCause"].items(), key=lambda kv: (kv[1], kv[0]), default=None)
    why = f" ({top[0]})" if top else ""
    return f"{n:g} job{'s' if n != 1 else ''} lost{why}"


def _lived(doc: dict[str, Any]) -> str:
    """What the jobs that started lived, beside the censored wait: their own mean wait to start and the
    evictions (a variant can lose no job and still make its started jobs wait and be evicted far more)."""
    started = _mean(doc, "waitToStartMean", math.nan)
    ev = _mean(doc, "evictions", 0.0)
    wait = "no job started" if math.isnan(started) else f"jobs that started waited {_mins(started)}"
    return f"{wait}, {ev:,.4g} eviction{'s' if ev != 1 else ''}"


def headline(docs: dict[str, dict[str, Any]]) -> str:
    """One sentence comparing the variants on what users lose: jobs that never ran first, then the censored
    mean wait, then cost (means over replicas); beside the censored wait, what the jobs that started lived:
    their mean wait to start and the evictions."""
    order = ranking(docs)
    if not order:
        return ""
    best = docs[order[0]]
    text = (
        f"{order[0]} ranks first: {_lost_text(best)}, mean wait to start {_mins(_mean(best, 'waitCensoredMean'))} "
        f"(a job that never started counted until the end; {_lived(best)}), ${_mean(best, 'costUSD'):,.0f}."
    )
    for name in order[1:]:
        d = docs[name]
        w0, w = _mean(best, "waitCensoredMean"), _mean(d, "waitCensoredMean")
        ratio = f"{w / w0:.2f}x the wait" if w0 > 0 else f"wait {_mins(w)}"
        c0, c = _mean(best, "costUSD"), _mean(d, "costUSD")
        cost = f"{c / c0:.2f}x the cost" if c0 > 0 else f"${c:,.0f}"
        text += f" {name}: {_lost_text(d)}, {ratio} ({_lived(d)}), {cost}."
    return text


def comparison_document(study: str, docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``comparison.json``: the variants ranked (jobs lost, censored mean wait, cost) and the headline."""
    order = ranking(docs)
    return {
        "apiVersion": "sim.flexq.dev/v1alpha1",
        "kind": "SimulationComparison",
        "study": study,
        "headline": headline(docs),
        "ranking": [
            {"variant": name, **{m.key: _mean(docs[name], m.name) for m in sweep_metrics()}} for name in order
        ],
    }


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Keys in the document's own (deterministic) order: the summaries lead with the jobs lost."""
    write_file(path, json.dumps(doc, indent=2, allow_nan=False) + "\n")


def traffic_notes(generator: dict[str, Any] | None, runs: list[Any], until: float | None = None) -> list[str]:
    """What a run's traffic did not do as asked, in words: a generator's ``count`` is a maximum, and when the
    arrivals end first (its ``duration``, or ``--until``) fewer jobs are simulated than it names."""
    asked = (generator or {}).get("count")
    if generator is None or not asked or not runs:
        return []
    first = runs[0].variant
    short = sorted(
        {(r.replica, r.seed, len(r.jobs)) for r in runs if r.variant == first and len(r.jobs) < asked}
    )
    if not short:
        return []
    got = ", ".join(f"{n} in replica {rep} (seed {seed})" for rep, seed, n in short)
    ended = (
        f"--until ({until:g} s)"
        if until is not None
        else f"its duration ({generator.get('duration')})"
        if generator.get("duration") is not None
        else "the arrivals"
    )
    return [
        f"the generator's count asks for {asked} jobs, but {ended} ended the arrivals first: {got} simulated "
        "(count is a maximum: a longer duration or a shorter inter-arrival time reaches it)"
    ]
