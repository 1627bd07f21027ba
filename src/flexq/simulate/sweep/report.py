"""The sweep's headline and files: ``sweep.csv``/``sweep.json``, ``best.diff``, ``best.yaml``, the Pareto plot
and the report."""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path
from typing import Any

from flexq.simulate.metrics import sweep_metrics, sweep_table_metrics
from flexq.simulate.outputs import output_dir, record, write_file
from flexq.simulate.report import plt_module, save_figure, write_html, write_plots
from flexq.simulate.results import write_csv
from flexq.simulate.study import Variant
from flexq.simulate.sweep.quota import chips_text
from flexq.simulate.sweep.results import SweepResult, cost_per_work


def _fmt_min(s: float) -> str:
    return f"{s / 60:,.1f} min"


def _label(res: SweepResult, row: dict[str, Any]) -> str:
    """A point in words: its knob values, or the cause whose change it runs."""
    if row.get("cause"):
        doc = res.documents[res.base]
        for c in doc.get("causes") or []:
            for o in [*(c.get("options") or []), *(c.get("tried") or [])]:
                if (o.get("tested") or {}).get("variant") == row["point"]:
                    return f"the {c['code']} cause's change: {o['change']}"
        return f"the {row['cause']} cause's change"
    return ", ".join(f"{k}={plain_value(row[k])}" for k in (kn.label() for kn in res.spec.knobs))


def headline(res: SweepResult) -> str:
    rows = {r["point"]: r for r in res.rows}
    b, r = rows[res.base], rows[res.recommended]
    n_cause = sum(1 for x in res.rows if x.get("cause"))
    n = f"{len(res.rows) - 1 - n_cause} points" + (
        f" and {n_cause} change{'s' if n_cause != 1 else ''} its causes suggest" if n_cause else ""
    )
    text = (
        f"{n} around {res.base}: {res.recommended} ({_label(res, r)}) loses {r['jobsLost']:g} jobs "
        f"(base {b['jobsLost']:g}), waits {_fmt_min(r['waitCensoredMeanSeconds'])} on average counting jobs that "
        f"never started until the end (base {_fmt_min(b['waitCensoredMeanSeconds'])}) and costs "
        f"${r['costUSD']:,.0f} (base ${b['costUSD']:,.0f})"
    )
    if r["costUSD"] > b["costUSD"] * (1 + 1e-9):
        # dearer in dollars: recommended only by the rule for a base that loses work; said, with its figures
        text += (
            f": more dollars, for more finished work (goodput {100 * (r.get('goodput') or 0):.0f} % against "
            f"{100 * (b.get('goodput') or 0):.0f} %): ${cost_per_work(r):,.0f} per unit of finished work against "
            f"the base's ${cost_per_work(b):,.0f}. The rule: the best point that costs no more than the base, per "
            "unit of finished work when the base itself loses jobs."
        )
    else:
        text += "."
    if res.recommended == res.base:
        text = f"{n} around {res.base}: none does better at no more than its cost."
    if res.overall != res.recommended:
        o = rows[res.overall]
        text += (
            f" Whatever the cost, {res.overall} ranks first: {o['jobsLost']:g} jobs lost, "
            f"{_fmt_min(o['waitCensoredMeanSeconds'])}, ${o['costUSD']:,.0f}."
        )
    return text


def plain_value(v: Any) -> str:
    """A knob's value as a CSV cell or in words: text as is, true/false, numbers, JSON for lists and maps."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    return json.dumps(v, sort_keys=True)


def sweep_columns() -> list[str]:
    """The columns of ``sweep.csv`` (the knobs' come after the first two): the figures of ``metrics``."""
    return ["point", "pareto", "cause", *(m.key for m in sweep_metrics()), "changeFromBase", "tpuChips"]


def write_sweep(out: Path, res: SweepResult, *, plots: bool, variants: list[Variant]) -> None:
    output_dir(out)
    labels = [k.label() for k in res.spec.knobs]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    columns = sweep_columns()
    w.writerow([*columns[:2], *labels, *columns[2:]])
    for r in res.rows:
        cells = [r["point"], "true" if r["pareto"] else "false"]
        cells += [plain_value(r[lab]) for lab in labels]
        for c in columns[2:]:
            v = r[c]
            if c == "tpuChips":
                cells.append(chips_text(v))
                continue
            cells.append("" if v is None else f"{v:.6f}" if isinstance(v, float) else str(v))
        w.writerow(cells)
    write_file(out / "sweep.csv", buf.getvalue())
    doc = {
        "apiVersion": "sim.flexq.dev/v1alpha1",
        "kind": "SweepSummary",
        "headline": res.headline,
        "rule": RULE,
        "base": res.base,
        "recommended": res.recommended,
        "bestWhateverTheCost": res.overall,
        "knobs": [k.model_dump(exclude_none=True) for k in res.spec.knobs],
        "points": res.rows,
        "baseCauses": res.documents[res.base].get("causes", []),
        "recommendedCauses": res.documents[res.recommended].get("causes", []),
    }
    write_file(out / "sweep.json", json.dumps(doc, indent=2, allow_nan=False) + "\n")
    write_file(out / "best.diff", res.diff or "(the base itself: no change)\n")
    write_file(out / "best.yaml", res.apply)
    write_csv(out / "jobs.csv", res.runs)
    res.files += [
        out / "sweep.csv",
        out / "sweep.json",
        out / "best.diff",
        out / "best.yaml",
        out / "jobs.csv",
    ]
    if plots:
        png = _pareto_plot(out, res)
        shown = [res.base, res.recommended] + ([res.overall] if res.overall != res.recommended else [])
        shown = list(dict.fromkeys(shown))
        images = [png, *write_plots(out, [r for r in res.runs if r.variant in shown], shown)]
        res.files += images
        res.files.append(
            write_html(
                out,
                f"sweep around {res.base}",
                [res.documents[n] for n in shown],
                images,
                None,
                extra_html=_sweep_html(res),
                headline=res.headline,
            )
        )
    record(out, "sweep", res.files)


RULE = (
    "the recommended point ranks first (fewest jobs lost, then the shortest censored mean wait) among the points "
    "that cost no more than the base, or, when the base itself loses jobs, no more per unit of finished work "
    "(cost / goodput); of points as good within noise (the same jobs lost, wait and cost within 1 %), the "
    "smallest change from the base"
)


def _pareto_plot(out: Path, res: SweepResult) -> Path:
    plt = plt_module()
    fig, ax = plt.subplots(figsize=(8, 5))
    lost = sorted({r["jobsLost"] for r in res.rows})
    cmap = plt.get_cmap("viridis_r", max(2, len(lost)))
    for i, n in enumerate(lost):
        pts = [r for r in res.rows if r["jobsLost"] == n]
        ax.scatter(
            [r["waitCensoredMeanSeconds"] / 60 for r in pts],
            [r["costUSD"] for r in pts],
            color=cmap(i),
            label=f"{n:g} jobs lost",
            s=30,
            alpha=0.8,
        )
    front = sorted(
        (r for r in res.rows if r["pareto"]), key=lambda r: (r["jobsLost"], r["waitCensoredMeanSeconds"])
    )
    for n in lost:
        f = [r for r in front if r["jobsLost"] == n]
        if len(f) > 1:
            ax.plot(
                [r["waitCensoredMeanSeconds"] / 60 for r in f],
                [r["costUSD"] for r in f],
                color="#888",
                lw=0.8,
            )
    for name, marker, text in ((res.base, "s", "base"), (res.recommended, "*", "recommended")):
        r = next(x for x in res.rows if x["point"] == name)
        ax.scatter(
            [r["waitCensoredMeanSeconds"] / 60],
            [r["costUSD"]],
            marker=marker,
            s=160,
            facecolors="none",
            edgecolors="red",
        )
        ax.annotate(
            f"{text} ({name})",
            (r["waitCensoredMeanSeconds"] / 60, r["costUSD"]),
            textcoords="offset points",
            xytext=(8, 6),
            fontsize="small",
        )
    ax.set_xlabel("mean wait to start, censored (minutes; a job that never started waits until the end)")
    ax.set_ylabel("cost (USD)")
    ax.set_title("Sweep: every point, by jobs lost (Pareto front joined)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    path = out / "pareto.png"
    save_figure(fig, path)
    return path


def sweep_table(res: SweepResult) -> tuple[list[str], list[list[str]], list[str]]:
    """The sweep's table as the terminal and ``report.html`` show it: its heads, its rows (the Pareto front
    first, then the rest, each ranked), plain text; and the heads a narrow terminal drops first."""
    labels = [k.label() for k in res.spec.knobs]
    cols = sweep_table_metrics()
    heads = ["point", "Pareto", *labels, "a cause's change", *(m.head("min", m.sweep_label) for m in cols)]
    rows = sorted(
        res.rows, key=lambda r: (not r["pareto"], r["jobsLost"], r["waitCensoredMeanSeconds"], r["costUSD"])
    )
    cells = [
        [
            r["point"]
            + (
                " (recommended)"
                if r["point"] == res.recommended
                else " (base)"
                if r["point"] == res.base
                else ""
            ),
            "yes" if r["pareto"] else "",
            *(plain_value(r[lab]) for lab in labels),
            r.get("cause") or "",
            *(m.plain(r[m.key]) for m in cols),
        ]
        for r in rows
    ]
    narrow = [
        "Pareto",
        *(h for m, h in zip(cols, heads[-len(cols) :], strict=True) if m.narrow),
        "a cause's change",
    ]
    return heads, cells, narrow


def _sweep_html(res: SweepResult) -> str:
    esc = html.escape
    head, cells, _narrow = sweep_table(res)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in cells)
    return (
        f"<h2 id='sweep'>Sweep</h2><p>Every point on the same seeds; {esc(RULE)}.</p>"
        "<table class='sweep'><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + f"</tr>{body}</table>"
        f"<h3>The recommended point against the base (best.diff)</h3><pre id='best-diff'>{esc(res.diff or '(no change)')}</pre>"
        f"<h3>To apply it (best.yaml)</h3><pre id='best-yaml'>{esc(res.apply)}</pre>"
    )
