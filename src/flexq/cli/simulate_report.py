"""The terminal's report of ``flexq simulate``: the headline, the variants ranked (one column per figure of
``flexq.simulate.metrics``), the lost jobs, where the wait went, the causes with the change for each, and each
variant's detail — what ``flexq.simulate.report`` writes as ``report.html``, for a terminal (rich tables that drop
their least needed columns first when narrow)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.text import Text

from flexq.cli.views import FitTable as Table
from flexq.simulate.metrics import Metric, in_unit, table_metrics, time_unit
from flexq.simulate.records import WAIT_BUCKETS
from flexq.simulate.results import headline, ranking
from flexq.simulate.whatif import shown_change

__all__ = ["summary_tables", "duration"]


def duration(v: float | None) -> str:
    """A duration in seconds, short: 90.0s, 12.5m, 3.20h, 4.10d."""
    if v is None:
        return "-"
    v = float(v)
    if v < 120:
        return f"{v:.1f}s"
    if v < 7200:
        return f"{v / 60:.1f}m"
    if v < 3 * 86400:
        return f"{v / 3600:.2f}h"
    return f"{v / 86400:.2f}d"


def _ci(entry: dict[str, Any] | None, fmt: Any) -> str:
    if not entry:
        return "-"
    text = fmt(entry["mean"])
    if entry.get("ci95"):
        text += f" ±{fmt((entry['ci95'][1] - entry['ci95'][0]) / 2)}"
    return text


def _by_reason(per_cq: dict[str, dict[str, int]]) -> str:
    """Counts per reason, summed over ClusterQueues when there are many."""
    if len(per_cq) <= 3:
        return ", ".join(f"{cq}: {r} {n}" for cq, rs in per_cq.items() for r, n in rs.items()) or "none"
    total: dict[str, int] = {}
    for rs in per_cq.values():
        for r, n in rs.items():
            total[r] = total.get(r, 0) + n
    return ", ".join(f"{r} {n}" for r, n in sorted(total.items())) + f" (over {len(per_cq)} ClusterQueues)"


def _cell(m: Metric, entry: dict[str, Any] | None, units: dict[str, tuple[str, float]], total: int) -> str:
    """A figure of the variants table: mean ± half the 95 % CI, in its unit (a variant's jobs as "n of total")."""
    num = lambda x: f"{x:.1f}".rstrip("0").rstrip(".")  # noqa: E731
    if m.unit == "seconds":
        return _ci_in(entry, units[m.name][1])
    if m.unit == "ratio":
        return _ci(entry, lambda x: f"{100 * x:.1f}")
    if m.unit == "USD":
        return _ci(entry, lambda x: f"{x:,.2f}")
    return _ci(entry, num) + (f" of {total}" if m.unit == "jobs" else "")


def _ci_in(entry: dict[str, Any] | None, size: float) -> str:
    if not entry:
        return "-"
    text = in_unit(entry["mean"], size)
    if entry.get("ci95"):
        text += f" ±{in_unit((entry['ci95'][1] - entry['ci95'][0]) / 2, size)}"
    return text


LOST_ROWS = 15  # lost jobs shown per variant in the terminal (all of them are in jobs.csv)
WAIT_LABELS = {
    "quota": "quota",
    "dws": "provisioning: DWS / checks",
    "scaleUp": "provisioning: scale-up",
    "stockout": "provisioning: stock-out",
    "poolMax": "provisioning: pool at max",
    "pods": "pods starting",
    "podErrors": "pods cannot start",
    "evicted": "after evictions",
    "deactivated": "deactivated",
}


def summary_tables(docs: dict[str, dict[str, Any]], comparison: dict[str, Any] | None = None) -> list[Any]:
    """The terminal summary: the headline; the variants ranked (jobs lost first, then the censored wait, then
    cost) in one table with one unit per column; per variant its lost jobs, where the wait went and the causes
    with the change for each; then per variant its detail (replica 0 and CIs)."""
    tables: list[Any] = []
    order = ranking(docs) if comparison is None else [r["variant"] for r in comparison["ranking"]]
    tables.append(Text(comparison["headline"] if comparison is not None else headline(docs), style="bold"))
    # what the traffic did not do as asked (a count not reached)
    notes: list[str] = list((comparison or {}).get("notes") or [])
    notes = notes or next((list(d["notes"]) for d in docs.values() if d.get("notes")), [])
    tables += [Text(f"note: {n}") for n in notes]
    aggs = {n: docs[n]["aggregate"] for n in order}

    cols = table_metrics()
    units = {
        m.name: time_unit([(a.get(m.name) or {}).get("mean") for a in aggs.values()])
        for m in cols
        if m.unit == "seconds"
    }
    t = Table(
        title="Variants, best first (mean ± 95% CI half-width over replicas; in the censored columns a job "
        "that never started waits until the end)",
        title_justify="left",
    )
    heads = ["#", "variant", "runs", *(m.head(units.get(m.name, ("", 1.0))[0]) for m in cols)]
    for col in heads:
        t.add_column(col, justify="left" if col == "variant" else "right", no_wrap=col == "variant")
    # at 80 columns: what goes first
    t.drop = (heads[0], heads[2], *(h for m, h in zip(cols, heads[3:], strict=True) if m.narrow))
    for i, name in enumerate(order, start=1):
        a = aggs[name]
        total = docs[name]["replicas"][0]["jobs"]["total"]
        t.add_row(
            str(i), escape(name), str(a["replicas"]), *(_cell(m, a.get(m.name), units, total) for m in cols)
        )
    tables.append(t)
    for name in order:
        s = docs[name]["replicas"][0]
        lost = s["lostJobs"]
        if not lost["count"]:
            continue
        lt = Table(
            title=f"{escape(name)}: {lost['count']} job(s) lost, replica 0 (seed {s['seed']}); jobs.csv lists all",
            title_justify="left",
        )
        wunit, size = time_unit([j["waitedSeconds"] for j in lost["listed"]])
        for col in ("job", "outcome", "Kueue's reason", "cause (the run's evidence)", f"waited ({wunit})"):
            lt.add_column(
                col,
                justify="right" if col.startswith("waited") else "left",
                overflow="fold",
                no_wrap=col == "job",
            )
        for j in lost["listed"][:LOST_ROWS]:
            lt.add_row(
                escape(j["job"]),
                j["outcome"],
                escape(j["reason"] or "-"),
                escape(j["cause"] or "-"),
                in_unit(j["waitedSeconds"], size),
            )
        if lost["count"] > LOST_ROWS:
            lt.add_row(f"... {lost['count'] - LOST_ROWS} more", "", "", "", "")
        tables.append(lt)
    wt = Table(
        title="Where the wait went: minutes per job over every job, replica 0 (a job that never started "
        "waits until the end)",
        title_justify="left",
    )
    wt.add_column("variant", no_wrap=True)
    for b in WAIT_BUCKETS:
        wt.add_column(f"{WAIT_LABELS[b]} (min)", justify="right")
    for name in order:
        split = docs[name]["replicas"][0]["waitSplit"]
        wt.add_row(escape(name), *(f"{split[b]['meanMinutes']:,.1f}" for b in WAIT_BUCKETS))
    tables.append(wt)
    for name in order:
        found = docs[name].get("causes") or []
        if not found:
            continue
        ct = Table(
            title=f"{escape(name)}: what cost the most (replica 0), and the changes that helped when run on the "
            "same seeds (each lost job counted under one cause)",
            title_justify="left",
        )
        ct.add_column("#", justify="right")
        ct.add_column("cause", overflow="fold")
        ct.add_column("jobs lost", justify="right")
        ct.add_column("wait (job-h)", justify="right")
        ct.add_column("evidence → change (measured)", overflow="fold")
        for i, c in enumerate(found, start=1):
            change = shown_change(c)
            ct.add_row(
                str(i),
                escape(c["title"]),
                str(c["jobsLost"]),
                f"{c['waitHours']:,.1f}",
                escape(f"{c['evidence']}" + (f" → {change}" if change else "")),
            )
        tables.append(ct)
    for name in order:
        s = docs[name]["replicas"][0]
        rows: list[tuple[str, int, list[float | None]]] = []
        for label, key in (("priority", "byPriority"), ("queue", "byQueue")):
            groups = s["waitToAdmission"][key]
            if len(groups) > 8:  # Kueue's perf scenarios have dozens of queues: per queue in the JSON
                rows.append((f"{len(groups)} {label} groups (see JSON)", -1, [None] * 6))
                continue
            for g, st in groups.items():
                ss = s["waitToStart"][key].get(g, {})
                vals = [st.get(k) for k in ("mean", "p50", "p95", "max")] + [ss.get("mean"), ss.get("p95")]
                rows.append((f"{label} {g}", st["count"], vals))
        for g, st in s["timeToAdmissionByClass"].items():
            if g != "(none)":
                vals = [st.get(k) for k in ("mean", "p50", "p95", "max")] + [None, None]
                rows.append((f"class {g}", st["count"], vals))
        heads = ["wait→admission mean", "p50", "p95", "max", "wait→start mean", "p95"]
        col_units = [time_unit([r[2][i] for r in rows]) for i in range(len(heads))]
        w = Table(
            title=f"{escape(name)}: waits of the jobs admitted / started, replica 0 (seed {s['seed']})",
            title_justify="left",
        )
        w.add_column("group", justify="left", no_wrap=True)
        w.add_column("jobs", justify="right")
        for h, (u, _size) in zip(heads, col_units, strict=True):
            w.add_column(f"{h} ({u})", justify="right")
        for label, count, vals in rows:
            w.add_row(
                escape(label),
                "" if count < 0 else str(count),
                *(in_unit(v, size) for v, (_u, size) in zip(vals, col_units, strict=True)),
            )
        tables.append(w)
        o = Table(show_header=True, title_justify="left")
        o.add_column("what", justify="left")
        o.add_column("value", justify="left")
        jobs = s["jobs"]
        o.add_row(
            "jobs",
            f"{jobs['total']} total: {jobs['lost']} lost ({jobs['deactivated']} deactivated by Kueue, "
            f"{jobs['neverAdmitted']} never admitted, {jobs['admittedNeverStarted']} admitted but never started, "
            f"{jobs['failed'] - jobs['failedAsPlanned']} failed unplanned); {jobs['succeeded']} succeeded, "
            f"{jobs['failedAsPlanned']} failed as the trace planned, {jobs['stillRunning']} still running",
        )
        release = s.get("kueue") or {}
        if release.get("release"):
            converted = release.get("v1beta1Converted") or 0
            o.add_row(
                "Kueue",
                f"{release['release']}"
                + (
                    f" ({converted} kueue.x-k8s.io/v1beta1 objects of the manifests held as v1beta2, as a cluster "
                    "upgraded to this release keeps them; `flexq convert` writes them so for applying again)"
                    if converted
                    else ""
                ),
            )
        o.add_row("makespan", duration(s["makespanSeconds"]))
        gp = s["goodput"]
        if gp.get("ratio") is not None:
            o.add_row(
                "goodput",
                f"{100 * gp['ratio']:.1f}% ({gp['finishedHours']:,.1f} of {gp['askedHours']:,.1f} "
                f"{gp['resource']}-hours asked for ran to their end)",
            )
        used = {k: v for k, v in s["clusterQueueReservationPercent"].items() if v > 0}
        if len(used) > 6:  # many queues (Kueue's perf scenarios): the spread, the detail is in the JSON
            vals = sorted(used.values())
            usage = (
                f"{len(used)} queue/flavor/resource entries: mean {sum(vals) / len(vals):.1f}%, "
                f"min {vals[0]:.1f}%, max {vals[-1]:.1f}%"
            )
        else:
            usage = ", ".join(f"{k} {v:.1f}%" for k, v in used.items())
        o.add_row("ClusterQueue quota reserved", usage or "-")
        o.add_row("evictions (Kueue reason)", _by_reason(s["evictions"]))
        o.add_row("preemptions (Kueue reason)", _by_reason(s["preemptions"]))
        prs = s["provisioningRequests"]
        if prs.get("total"):
            o.add_row("ProvisioningRequests", ", ".join(f"{k} {v}" for k, v in prs.items()))
        o.add_row("node-hours", ", ".join(f"{k} {v:,.1f}" for k, v in s["nodeHours"].items()) or "-")
        o.add_row("cost USD", ", ".join(f"{k} {v:,.2f}" for k, v in s["costUSD"].items()))
        tables.append(o)
    return tables
