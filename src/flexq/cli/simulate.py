"""``flexq simulate``: a thin face over ``flexq.simulate``: a live progress bar per run, then a summary per
variant (rich tables), and where the files went.

Must not import flexq.http.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from flexq.errors import InputError

__all__ = ["add_parser", "run", "summary_tables"]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    sm = sub.add_parser(
        "simulate",
        help="capacity planning: your manifests, a trace, a capacity profile -> "
        "waits, usage and cost per variant, with plots",
    )
    sm.add_argument(
        "study",
        help="a simulation file, a directory holding simulation.yaml, or Kueue's perf-harness generator.yaml",
    )
    sm.add_argument("-o", "--out", default=None, help="output directory (default: <study directory>/results)")
    sm.add_argument("--replicas", type=int, default=None, help="replicas per variant (seeds seed..seed+N-1)")
    sm.add_argument("--seed", type=int, default=None, help="first seed (default: the study's, else 1)")
    sm.add_argument("--variant", action="append", default=[], help="run only this variant (repeatable)")
    sm.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="parallel processes (default: one per core; 1 = in this process)",
    )
    sm.add_argument(
        "--ray-address",
        default=None,
        help="run on an existing Ray cluster (e.g. auto, 127.0.0.1:6379, ray://host:10001)",
    )
    sm.add_argument(
        "--until",
        default=None,
        metavar="DURATION",
        help="submit only the jobs of this much traffic (e.g. 12h, 2d), then let them finish",
    )
    sm.add_argument(
        "--scale",
        type=float,
        default=None,
        help="Kueue generator.yaml: fraction of each workload set's count to create",
    )
    sm.add_argument("--no-plots", action="store_true", help="only jobs.csv and the JSON summaries")
    sm.add_argument("--no-progress", action="store_true", help="no live progress bar")
    return sm


def _dur(v: float | None) -> str:
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


def summary_tables(docs: dict[str, dict[str, Any]]) -> list[Table]:
    """The terminal summary: one comparison table, then per variant its detail (replica 0 and CIs)."""
    tables = []
    t = Table(title="Variants (mean ± 95% CI half-width over replicas)", title_justify="left")
    for col in (
        "variant",
        "runs",
        "succeeded",
        "failed",
        "never started",
        "wait→admission mean",
        "p95",
        "wait→start mean",
        "makespan",
        "cost USD",
        "evictions",
    ):
        t.add_column(col, justify="left" if col == "variant" else "right", no_wrap=col == "variant")
    num = lambda x: f"{x:g}"  # noqa: E731
    for name, d in docs.items():
        a = d["aggregate"]
        t.add_row(
            escape(name),
            str(a["replicas"]),
            _ci(a.get("succeeded"), num),
            _ci(a.get("failed"), num),
            _ci(a.get("neverStarted"), num),
            _ci(a.get("waitToAdmissionMean"), _dur),
            _ci(a.get("waitToAdmissionP95"), _dur),
            _ci(a.get("waitToStartMean"), _dur),
            _ci(a.get("makespanSeconds"), _dur),
            _ci(a.get("costUSD"), lambda x: f"{x:,.2f}"),
            _ci(a.get("evictions"), num),
        )
    tables.append(t)
    for name, d in docs.items():
        s = d["replicas"][0]
        w = Table(title=f"{escape(name)} — replica 0 (seed {s['seed']})", title_justify="left")
        for col in ("group", "jobs", "wait→admission mean", "p50", "p95", "max", "wait→start mean", "p95 "):
            # the group names a row ("class small", "queue team-a"): never split over lines on a narrow console
            w.add_column(col, justify="left" if col == "group" else "right", no_wrap=col == "group")
        for label, key in (("priority", "byPriority"), ("queue", "byQueue")):
            groups = s["waitToAdmission"][key]
            if len(groups) > 8:  # Kueue's perf scenarios have dozens of queues: per queue in the JSON
                w.add_row(f"{len(groups)} {label} groups", "see JSON", "", "", "", "", "", "")
                continue
            for g, st in groups.items():
                ss = s["waitToStart"][key].get(g, {})
                w.add_row(
                    escape(f"{label} {g}"),
                    str(st["count"]),
                    _dur(st.get("mean")),
                    _dur(st.get("p50")),
                    _dur(st.get("p95")),
                    _dur(st.get("max")),
                    _dur(ss.get("mean")),
                    _dur(ss.get("p95")),
                )
        classes = {k: v for k, v in s["timeToAdmissionByClass"].items() if k != "(none)"}
        for g, st in classes.items():
            w.add_row(
                escape(f"class {g}"),
                str(st["count"]),
                _dur(st.get("mean")),
                _dur(st.get("p50")),
                _dur(st.get("p95")),
                _dur(st.get("max")),
                "",
                "",
            )
        tables.append(w)
        o = Table(show_header=True, title_justify="left")
        o.add_column("what", justify="left")
        o.add_column("value", justify="left")
        jobs = s["jobs"]
        o.add_row(
            "jobs",
            f"{jobs['total']} total: {jobs['succeeded']} succeeded, {jobs['failed']} failed, "
            f"{jobs['neverStarted']} never started, {jobs['unfinished']} still running, "
            f"{jobs['deactivated']} deactivated by Kueue",
        )
        o.add_row("makespan", _dur(s["makespanSeconds"]))
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


def _error(err_console: Console, exc: Any) -> None:
    """One line on stderr, printed as is (a file name or value with ``[brackets]`` is not rich markup)."""
    err_console.print("[red]error:[/] ", end="")
    err_console.print(str(exc), markup=False, highlight=False, soft_wrap=True)


def _check_out(out: Path) -> None:
    """The output directory can be made (or is one) before anything is simulated."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot make the output directory {out}: {getattr(exc, 'strerror', None) or exc}", field="--out"
        ) from None
    if not out.is_dir():
        raise InputError(f"{out} is not a directory", field="--out")


def run(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    from flexq.clock import WallClock
    from flexq.simulate import simulate
    from flexq.simulate.study import load_study

    clock = WallClock()
    wall0 = clock.now()
    try:
        study = load_study(
            args.study,
            replicas=args.replicas,
            seed=args.seed,
            variants=args.variant or None,
            scale=args.scale,
        )
        if args.until is not None:
            from flexq.simulate.study import submit_window

            study.submit_until = submit_window(args.until, "--until")
        study_path = Path(args.study)
        out = (
            Path(args.out)
            if args.out
            else (study_path if study_path.is_dir() else study_path.parent) / "results"
        )
        _check_out(out)
    except InputError as exc:
        _error(err_console, exc)
        return 2
    runs = len(study.variants) * study.replicas
    console.print(
        f"[bold]flexq simulate[/] {escape(study.name)}: {len(study.variants)} variant(s) × {study.replicas} "
        f"replica(s) = {runs} run(s)" + (f" on Ray at {escape(args.ray_address)}" if args.ray_address else "")
    )
    show = not args.no_progress and console.is_terminal
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
        transient=False,
    )
    tasks: dict[tuple[str, int], Any] = {}
    last: dict[tuple[str, int], float] = {}

    def on_progress(p: dict[str, Any]) -> None:
        key = (p["variant"], p["replica"])
        now = clock.now()
        if not p.get("done") and now - last.get(key, 0.0) < 0.2 and p["time"] < p["horizon"]:
            return
        last[key] = now
        if key not in tasks:
            tasks[key] = progress.add_task(
                f"{p['variant']} #{p['replica']}", total=max(p["horizon"], 1.0), info=""
            )
        progress.update(
            tasks[key],
            completed=p["horizon"] if p.get("done") else min(p["time"], p["horizon"]),
            info=f"sim {_dur(p['time'])}, {p['finished']}/{p['total']} jobs done, {p['pending']} pending",
        )

    try:
        with progress:
            result = simulate(
                study,
                out=out,
                workers=args.jobs,
                ray_address=args.ray_address,
                plots=not args.no_plots,
                progress=on_progress,
            )
    except InputError as exc:
        _error(err_console, exc)
        return 2
    except OSError as exc:  # writing the results
        _error(err_console, f"cannot write the results in {out}: {exc.strerror or exc}")
        return 2
    for table in summary_tables(result.documents):
        console.print(table)
    wall = clock.now() - wall0
    jobs = sum(len(r.jobs) for r in result.runs)
    console.print(
        f"wall time {wall:.1f} s for {jobs} simulated jobs ({jobs / max(wall, 1e-9):.1f} per wall second, "
        f"{sum(r.steps for r in result.runs)} loop steps); files in {escape(str(out))}/: "
        + escape(", ".join(p.name for p in result.files))
    )
    return 0
