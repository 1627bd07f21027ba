"""Plots (matplotlib, PNG) and the self-contained HTML report of a simulation study.

Owns ``write_plots`` (``wait-cdf.png``: wait to admission CDF per variant, all replicas pooled;
``timeline-<variant>.png``: pending workloads and nodes per pool over time, replica 0; ``cost.png``:
cumulative cost per variant, replica 0) and ``write_html`` (``report.html``: the summary tables and the plots
embedded as ``data:`` URIs, so the one file opens anywhere). Must not import flexq.http.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from flexq.simulate.engine import RunResult
from flexq.simulate.results import cost_curve, node_curves

__all__ = ["write_plots", "write_html"]


def _plt() -> Any:
    from flexq.errors import require_extra

    require_extra("plots", "flexq simulate's plots")  # matplotlib is the plots extra, not the core install
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "flexq"
    return plt


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    _plt().close(fig)


def _hours(t: float) -> float:
    return t / 3600


def write_plots(out: Path, runs: list[RunResult], variants: list[str]) -> list[Path]:
    """The PNG files, in report order."""
    plt = _plt()
    paths: list[Path] = []
    # wait CDF per variant
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for v in variants:
        waits = sorted(
            r["wait_admission"] / 60
            for run in runs
            if run.variant == v
            for r in run.jobs
            if r["wait_admission"] is not None
        )
        if waits:
            fractions = [(i + 1) / len(waits) for i in range(len(waits))]
            ax.step(waits, fractions, where="post", label=f"{v} (n={len(waits)})")
    ax.set_xlabel("wait to admission (minutes)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("Wait to admission, CDF per variant")
    ax.set_xscale("symlog", linthresh=1)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    paths.append(out / "wait-cdf.png")
    _save(fig, paths[-1])
    # timelines per variant (replica 0)
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
        a1.set_title(f"{v}: jobs waiting for quota, and nodes per pool (replica 0)")
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
        _save(fig, paths[-1])
    # cumulative cost
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
    _save(fig, paths[-1])
    return paths


def _fmt_s(v: Any) -> str:
    if v is None:
        return "-"
    v = float(v)
    if v < 120:
        return f"{v:.1f}s"
    if v < 7200:
        return f"{v / 60:.1f}m"
    return f"{v / 3600:.2f}h"


def _ci_text(entry: dict[str, Any] | None, fmt: Any = str) -> str:
    if not entry:
        return "-"
    text = fmt(entry["mean"])
    if entry.get("ci95"):
        lo, hi = entry["ci95"]
        text += f" [{fmt(lo)}, {fmt(hi)}]"
    return text


def write_html(out: Path, study: str, docs: list[dict[str, Any]], images: list[Path]) -> Path:
    """``report.html``: per variant the headline figures (mean and 95 % CI over replicas) and replica 0's
    detail tables, then every plot inline."""
    esc = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>flexq simulate: {esc(study)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;"
        "margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%;"
        "border:1px solid #eee;margin:0.5em 0}</style></head><body>",
        f"<h1>flexq simulate: {esc(study)}</h1>",
    ]
    heads = [
        "variant",
        "replicas",
        "succeeded",
        "failed",
        "never started",
        "wait to admission mean",
        "p95",
        "wait to start mean",
        "makespan",
        "cost (USD)",
        "evictions",
    ]
    parts.append(
        "<h2>Variants (mean [95% CI] over replicas)</h2><table><tr>"
        + "".join(f"<th>{h}</th>" for h in heads)
        + "</tr>"
    )
    for d in docs:
        a = d["aggregate"]
        cells = [
            d["variant"],
            str(a["replicas"]),
            _ci_text(a.get("succeeded"), lambda x: f"{x:g}"),
            _ci_text(a.get("failed"), lambda x: f"{x:g}"),
            _ci_text(a.get("neverStarted"), lambda x: f"{x:g}"),
            _ci_text(a.get("waitToAdmissionMean"), _fmt_s),
            _ci_text(a.get("waitToAdmissionP95"), _fmt_s),
            _ci_text(a.get("waitToStartMean"), _fmt_s),
            _ci_text(a.get("makespanSeconds"), _fmt_s),
            _ci_text(a.get("costUSD"), lambda x: f"{x:,.2f}"),
            _ci_text(a.get("evictions"), lambda x: f"{x:g}"),
        ]
        parts.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    parts.append("</table>")
    for d in docs:
        s = d["replicas"][0]
        parts.append(f"<h2>{esc(d['variant'])} (replica 0, seed {s['seed']})</h2>")
        if d.get("description"):
            parts.append(f"<p>{esc(d['description'])}</p>")
        parts.append(
            "<table><tr><th>wait to admission by priority</th><th>count</th><th>mean</th><th>p50</th>"
            "<th>p95</th><th>max</th></tr>"
        )
        for key, st in s["waitToAdmission"]["byPriority"].items():
            parts.append(
                f"<tr><td>{esc(key)}</td><td>{st['count']}</td>"
                + "".join(f"<td>{_fmt_s(st.get(k))}</td>" for k in ("mean", "p50", "p95", "max"))
                + "</tr>"
            )
        parts.append(
            "</table><table><tr><th>ClusterQueue/flavor/resource</th><th>quota reserved (time-average %"
            " of nominal)</th></tr>"
        )
        for key, pct in s["clusterQueueReservationPercent"].items():
            parts.append(f"<tr><td>{esc(key)}</td><td>{pct:.2f}</td></tr>")
        parts.append(
            "</table><table><tr><th>provisioning model</th><th>node-hours</th><th>cost (USD)</th></tr>"
        )
        for model, h in s["nodeHours"].items():
            parts.append(
                f"<tr><td>{esc(model)}</td><td>{h:,.1f}</td><td>{s['costUSD'].get(model, 0):,.2f}</td></tr>"
            )
        parts.append("</table>")
        ev = [(cq, r, n) for cq, rs in s["evictions"].items() for r, n in rs.items()]
        if ev:
            parts.append(
                "<table><tr><th>kueue_evicted_workloads_total</th><th>reason</th><th>count</th></tr>"
                + "".join(f"<tr><td>{esc(cq)}</td><td>{esc(r)}</td><td>{n}</td></tr>" for cq, r, n in ev)
                + "</table>"
            )
        if s["provisioningRequests"].get("total"):
            parts.append(
                "<table><tr><th>ProvisioningRequests</th><th>count</th></tr>"
                + "".join(
                    f"<tr><td>{esc(k)}</td><td>{v}</td></tr>" for k, v in s["provisioningRequests"].items()
                )
                + "</table>"
            )
    parts.append("<h2>Plots</h2>")
    for img in images:
        data = base64.b64encode(img.read_bytes()).decode("ascii")
        parts.append(
            f"<figure><img alt='{esc(img.stem)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{esc(img.name)}</figcaption></figure>"
        )
    parts.append("</body></html>\n")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
