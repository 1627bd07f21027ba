"""Plots (matplotlib, PNG) and the self-contained HTML report of a simulation study.

Owns ``write_plots`` and ``write_html``. The plots, in report order: ``outcomes.png`` (per variant, what became
of the jobs, lost ones first: deactivated, never admitted, admitted but never started, failed unplanned, then
still running and finished), ``wait-split.png`` (per variant, the jobs waiting over time by what they waited
for: quota, DWS / admission checks, scale-up, stock-out, a pool at its max, pods starting, after evictions,
deactivated; replica 0), ``wait-cdf.png`` (wait to start per variant, all replicas pooled, censored: a job that
never started sits at the horizon, so a curve that stops below 1 shows the jobs lost), ``timeline-<variant>.png``
(pending workloads and nodes per pool, replica 0) and ``cost.png`` (cumulative cost, replica 0); a sweep adds
``pareto.png`` (``flexq.simulate.sweep``). ``report.html`` leads with the headline sentence and the variants
ranked, then the lost jobs, where the wait went, the causes with the change for each, the detail tables and
every plot inline (``data:`` URIs, so the one file opens anywhere). Must not import flexq.http.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

from flexq.errors import require_extra
from flexq.simulate.inputs import open_regular
from flexq.simulate.metrics import Metric, in_unit, table_metrics, time_unit
from flexq.simulate.outputs import check_target, write_file
from flexq.simulate.records import WAIT_BUCKETS
from flexq.simulate.results import cost_curve, node_curves, ranking
from flexq.simulate.results import headline as make_headline
from flexq.simulate.run_result import RunResult
from flexq.simulate.whatif import shown_change

__all__ = ["write_plots", "write_html", "plt_module", "save_figure"]

WAIT_LABELS = {
    "quota": "waiting for quota",
    "dws": "provisioning: DWS / admission checks",
    "scaleUp": "provisioning: node scale-up",
    "stockout": "provisioning: stock-out",
    "poolMax": "provisioning: node pool at its max",
    "pods": "pods starting",
    "podErrors": "pods cannot start (kubelet errors)",
    "evicted": "after an eviction",
    "deactivated": "deactivated by Kueue",
}
WAIT_COLORS = {
    "quota": "#fdae6b",
    "dws": "#6baed6",
    "scaleUp": "#9ecae1",
    "stockout": "#e6550d",
    "poolMax": "#a50f15",
    "pods": "#74c476",
    "podErrors": "#c51b8a",
    "evicted": "#9e9ac8",
    "deactivated": "#252525",
}
OUTCOME_ORDER = [
    ("Deactivated", "deactivated (lost)", "#252525"),
    ("NeverAdmitted", "never admitted (lost)", "#636363"),
    ("NotStarted", "admitted, never started (lost)", "#969696"),
    ("FailedUnplanned", "failed, not planned (lost)", "#de2d26"),
    ("Running", "still running", "#fdae6b"),
    ("Failed", "failed as the trace planned", "#fcbba1"),
    ("Succeeded", "succeeded", "#74c476"),
]


def plt_module() -> Any:
    require_extra("plots", "flexq simulate's plots")  # matplotlib is the plots extra, not the core install
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "flexq"
    return plt


def save_figure(fig: Any, path: Path) -> None:
    check_target(path)  # before drawing: a link or FIFO in the output folder is refused, not written through
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format=path.suffix.lstrip(".") or "png", dpi=100, metadata={"Software": None})
    plt_module().close(fig)
    write_file(path, buf.getvalue())


def _hours(t: float) -> float:
    return t / 3600


def _outcome_key(row: dict[str, Any]) -> str:
    if row["outcome"] == "Failed" and row["lost"]:
        return "FailedUnplanned"
    return str(row["outcome"])


def _outcomes(plt: Any, out: Path, runs: list[RunResult], variants: list[str]) -> Path:
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.55 * max(2, len(variants))))
    for i, v in enumerate(variants):
        mine = [r for r in runs if r.variant == v]
        left = 0.0
        for key, label, color in OUTCOME_ORDER:
            n = sum(1 for run in mine for row in run.jobs if _outcome_key(row) == key) / max(1, len(mine))
            if n:
                ax.barh(i, n, left=left, color=color, label=label)
                if key in ("Deactivated", "NeverAdmitted", "NotStarted", "FailedUnplanned"):
                    ax.text(left + n / 2, i, f"{n:g}", ha="center", va="center", color="white", fontsize=8)
                left += n
    ax.set_yticks(range(len(variants)), variants)
    ax.invert_yaxis()
    ax.set_xlabel("jobs (mean over replicas)")
    ax.set_title("What became of the jobs: lost ones first")
    handles, labels = ax.get_legend_handles_labels()
    seen: dict[str, Any] = {}
    for h, lab in zip(handles, labels, strict=False):
        seen.setdefault(lab, h)
    ax.legend(seen.values(), seen.keys(), loc="lower right", fontsize="x-small")
    ax.grid(True, axis="x", alpha=0.3)
    path = out / "outcomes.png"
    save_figure(fig, path)
    return path


def _wait_split(plt: Any, out: Path, runs: list[RunResult], variants: list[str]) -> Path:
    shown = [(v, next((r for r in runs if r.variant == v and r.replica == 0), None)) for v in variants]
    shown = [(v, r) for v, r in shown if r is not None]
    fig, axes = plt.subplots(
        max(1, len(shown)), 1, figsize=(8, 0.5 + 2.3 * max(1, len(shown))), sharex=True, squeeze=False
    )
    for ax, (v, run) in zip(axes[:, 0], shown, strict=False):
        assert run is not None
        pts = run.waiting or [(0.0, [0] * len(WAIT_BUCKETS))]
        xs = [_hours(t) for t, _ in pts] + [_hours(run.horizon)]
        ys = [[float(c[i]) for _t, c in pts] + [float(pts[-1][1][i])] for i in range(len(WAIT_BUCKETS))]
        ax.stackplot(
            xs,
            ys,
            labels=[WAIT_LABELS[b] for b in WAIT_BUCKETS],
            colors=[WAIT_COLORS[b] for b in WAIT_BUCKETS],
            step="post",
        )
        ax.set_ylabel("jobs waiting")
        ax.set_title(f"{v}: jobs waiting to start, by what they wait for (replica 0)", fontsize="medium")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("simulated time (hours)")
    axes[0, 0].legend(loc="upper left", fontsize="x-small", ncol=2)
    path = out / "wait-split.png"
    save_figure(fig, path)
    return path


def _wait_cdf(plt: Any, out: Path, runs: list[RunResult], variants: list[str]) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for v in variants:
        rows = [r for run in runs if run.variant == v for r in run.jobs]
        waits = sorted(r["wait_censored"] / 60 for r in rows)
        if waits:
            lost = sum(1 for r in rows if r["started"] is None)
            fractions = [(i + 1) / len(waits) for i in range(len(waits) - lost)]
            ax.step(
                waits[: len(fractions)],
                fractions,
                where="post",
                label=f"{v} (n={len(waits)}, {lost} never started)",
            )
    ax.set_xlabel("wait to start (minutes)")
    ax.set_ylabel("fraction of all jobs started")
    ax.set_title("Wait to start, CDF per variant (a curve below 1 at the end: jobs that never started)")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    path = out / "wait-cdf.png"
    save_figure(fig, path)
    return path


def write_plots(out: Path, runs: list[RunResult], variants: list[str]) -> list[Path]:
    """The PNG files, in report order."""
    plt = plt_module()
    paths = [
        _outcomes(plt, out, runs, variants),
        _wait_split(plt, out, runs, variants),
        _wait_cdf(plt, out, runs, variants),
    ]
    for v in variants:
        run = next((r for r in runs if r.variant == v and r.replica == 0), None)
        if run is None:
            continue
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
        if run.pending:
            xs = [_hours(t) for t, _ in run.pending] + [_hours(run.duration)]
            ys = [float(n) for _, n in run.pending] + [float(run.pending[-1][1])]
            a1.step(xs, ys, where="post", color="tab:orange")
        a1.set_ylabel("pending workloads")
        a1.set_title(f"{v}: workloads without quota (Kueue's pending), and nodes per pool (replica 0)")
        a1.grid(True, alpha=0.3)
        for pool, pts in node_curves(run).items():
            xs = [_hours(t) for t, _ in pts] + [_hours(run.duration)]
            ys = [float(n) for _, n in pts] + [float(pts[-1][1])]
            a2.step(xs, ys, where="post", label=pool)
        a2.set_ylabel("nodes")
        a2.set_xlabel("simulated time (hours)")
        a2.grid(True, alpha=0.3)
        if run.node_records:
            a2.legend(loc="upper right", fontsize="small")
        paths.append(out / f"timeline-{v}.png")
        save_figure(fig, paths[-1])
    fig, ax = plt.subplots(figsize=(8, 4))
    for v in variants:
        run = next((r for r in runs if r.variant == v and r.replica == 0), None)
        if run is None:
            continue
        cost = cost_curve(run)
        ax.plot([_hours(t) for t, _ in cost], [c for _, c in cost], label=v)
    ax.set_xlabel("simulated time (hours)")
    ax.set_ylabel("cumulative cost (USD)")
    ax.set_title("Cumulative node cost per variant (replica 0)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    paths.append(out / "cost.png")
    save_figure(fig, paths[-1])
    return paths


def _cell(m: Metric, entry: dict[str, Any] | None, units: dict[str, tuple[str, float]], total: int) -> str:
    """A figure of the variants table: mean [95 % CI], in its unit (a variant's jobs as "n of total")."""
    if m.unit == "seconds":
        return _ci_text(entry, lambda x, size=units[m.name][1]: in_unit(x, size))
    if m.unit == "ratio":
        return _ci_text(entry, lambda x: f"{100 * x:.1f}")
    if m.unit == "USD":
        return _ci_text(entry, lambda x: f"{x:,.2f}")
    return _ci_text(entry, lambda x: f"{x:g}") + (f" of {total}" if m.unit == "jobs" else "")


def _ci_text(entry: dict[str, Any] | None, fmt: Any = str) -> str:
    if not entry:
        return "-"
    text = fmt(entry["mean"])
    if entry.get("ci95"):
        lo, hi = entry["ci95"]
        text += f" [{fmt(lo)}, {fmt(hi)}]"
    return text


def _table(heads: list[str], rows: list[list[str]], cls: str = "") -> str:
    esc = html.escape
    attr = f" class='{cls}'" if cls else ""
    return (
        f"<table{attr}><tr>"
        + "".join(f"<th>{esc(h)}</th>" for h in heads)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
        + "</table>"
    )


def write_html(
    out: Path,
    study: str,
    docs: list[dict[str, Any]],
    images: list[Path],
    comparison: dict[str, Any] | None = None,
    extra_html: str = "",
    headline: str | None = None,
) -> Path:
    """``report.html``: the headline, the variants ranked, the lost jobs, where the wait went, the causes and
    the change for each, the detail tables, then every plot inline."""
    esc = html.escape
    by_name = {d["variant"]: d for d in docs}
    order = [r["variant"] for r in comparison["ranking"]] if comparison else ranking(by_name)
    # one headline: a sweep's own (``headline``), else the variants compared
    line = (
        headline if headline is not None else comparison["headline"] if comparison else make_headline(by_name)
    )
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>flexq simulate: {esc(study)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1150px}table{border-collapse:collapse;"
        "margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top}"
        "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}table.text td{text-align:left}"
        "img{max-width:100%;border:1px solid #eee;margin:0.5em 0}p.headline{font-size:1.15em;"
        "font-weight:bold;background:#f6f8fa;padding:0.6em;border-left:4px solid #333}</style></head><body>",
        f"<h1>flexq simulate: {esc(study)}</h1>",
        f"<p class='headline' id='headline'>{esc(line)}</p>",
        extra_html,
    ]
    aggs = {n: by_name[n]["aggregate"] for n in order}
    cols = table_metrics()
    units = {
        m.name: time_unit([(a.get(m.name) or {}).get("mean") for a in aggs.values()])
        for m in cols
        if m.unit == "seconds"
    }
    heads = ["#", "variant", "replicas", *(m.head(units.get(m.name, ("", 1.0))[0]) for m in cols)]
    rows = []
    for i, n in enumerate(order, start=1):
        a = aggs[n]
        total = by_name[n]["replicas"][0]["jobs"]["total"]
        rows.append([str(i), n, str(a["replicas"]), *(_cell(m, a.get(m.name), units, total) for m in cols)])
    parts.append(
        "<h2>Variants, best first</h2><p>Ranked by jobs lost, then the censored mean wait to start (a job that "
        "never started waits until the end of the run), then cost; mean [95% CI] over replicas.</p>"
    )
    parts.append(_table(heads, rows))
    parts.append("<h2 id='lost'>Jobs lost (replica 0; jobs.csv lists every replica's)</h2>")
    for n in order:
        s = by_name[n]["replicas"][0]
        lost = s["lostJobs"]
        if not lost["count"]:
            parts.append(f"<p><b>{esc(n)}</b>: no job lost.</p>")
            continue
        u, size = time_unit([j["waitedSeconds"] for j in lost["listed"]])
        parts.append(f"<p><b>{esc(n)}</b>: {lost['count']} job(s) lost.</p>")
        parts.append(
            _table(
                ["job", "outcome", "Kueue's reason", "cause (the run's evidence)", f"waited ({u})"],
                [
                    [
                        j["job"],
                        j["outcome"],
                        j["reason"] or "-",
                        j["cause"] or "-",
                        in_unit(j["waitedSeconds"], size),
                    ]
                    for j in lost["listed"]
                ],
                "text lost",
            )
        )
    parts.append(
        "<h2 id='wait-split'>Where the wait went (minutes per job over every job, replica 0)</h2>"
        + _table(
            ["variant", *(f"{WAIT_LABELS[b]} (min)" for b in WAIT_BUCKETS)],
            [
                [
                    n,
                    *(
                        f"{by_name[n]['replicas'][0]['waitSplit'][b]['meanMinutes']:,.1f}"
                        for b in WAIT_BUCKETS
                    ),
                ]
                for n in order
            ],
        )
    )
    parts.append(
        "<h2 id='causes'>What cost the most (replica 0), and the changes that helped when run on the same "
        "seeds</h2><p>Each lost job is counted under one cause; a change is shown only when its run on the same "
        "seeds lost fewer jobs or waited less, with what it measured.</p>"
    )
    for n in order:
        found = by_name[n].get("causes") or []
        if not found:
            continue
        parts.append(f"<p><b>{esc(n)}</b></p>")
        parts.append(
            _table(
                ["#", "cause", "jobs lost", "wait (job-hours)", "evidence", "change (measured)"],
                [
                    [
                        str(i),
                        c["title"],
                        str(c["jobsLost"]),
                        f"{c['waitHours']:,.1f}",
                        c["evidence"],
                        shown_change(c),
                    ]
                    for i, c in enumerate(found, start=1)
                ],
                "text causes",
            )
        )
    for n in order:
        d = by_name[n]
        s = d["replicas"][0]
        parts.append(f"<h2>{esc(n)} (replica 0, seed {s['seed']})</h2>")
        if d.get("description"):
            parts.append(f"<p>{esc(d['description'])}</p>")
        groups = s["waitToAdmission"]["byPriority"]
        gu = {k: time_unit([st.get(k) for st in groups.values()]) for k in ("mean", "p50", "p95", "max")}
        parts.append(
            _table(
                [
                    "wait to admission by priority",
                    "count",
                    *(f"{k} ({gu[k][0]})" for k in ("mean", "p50", "p95", "max")),
                ],
                [
                    [
                        key,
                        str(st["count"]),
                        *(in_unit(st.get(k), gu[k][1]) for k in ("mean", "p50", "p95", "max")),
                    ]
                    for key, st in groups.items()
                ],
            )
        )
        parts.append(
            _table(
                ["ClusterQueue/flavor/resource", "quota reserved (time-average % of nominal)"],
                [[k, f"{pct:.2f}"] for k, pct in s["clusterQueueReservationPercent"].items()],
            )
        )
        parts.append(
            _table(
                ["provisioning model", "node-hours", "cost (USD)"],
                [[m, f"{h:,.1f}", f"{s['costUSD'].get(m, 0):,.2f}"] for m, h in s["nodeHours"].items()],
            )
        )
        ev = [[cq, r, str(c)] for cq, rs in s["evictions"].items() for r, c in rs.items()]
        if ev:
            parts.append(_table(["kueue_evicted_workloads_total", "reason", "count"], ev))
        if s["provisioningRequests"].get("total"):
            parts.append(
                _table(
                    ["ProvisioningRequests", "count"],
                    [[k, str(v)] for k, v in s["provisioningRequests"].items()],
                )
            )
    parts.append("<h2>Plots</h2>")
    for img in images:
        with open_regular(img, str(img), what="plot") as f:
            data = base64.b64encode(f.read()).decode("ascii")
        parts.append(
            f"<figure><img alt='{esc(img.stem)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{esc(img.name)}</figcaption></figure>"
        )
    parts.append("</body></html>\n")
    return write_file(out / "report.html", "\n".join(parts))
