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

from flexq.cli.views import FitTable as Table
from flexq.errors import InputError, Livelock

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    sm = sub.add_parser(
        "simulate",
        help="capacity planning: your manifests, a trace, a capacity profile -> "
        "waits, usage and cost per variant, with plots",
    )
    sm.add_argument(
        "study",
        nargs="?",
        help="a simulation file, a directory holding simulation.yaml, or Kueue's perf-harness generator.yaml",
    )
    sm.add_argument(
        "--from-cluster",
        default=None,
        metavar="DIR",
        help="write the kubeconfig's cluster as a study in DIR instead (its state, the capacity model fitted to "
        "its history, its jobs; read-only, as flexq eta reads it), to run with flexq simulate DIR",
    )
    sm.add_argument("--kubeconfig", default=None, help="--from-cluster: kubeconfig file")
    sm.add_argument("--context", default=None, help="--from-cluster: kubeconfig context")
    sm.add_argument(
        "--node-pools",
        default=None,
        metavar="FILE",
        help="--from-cluster: `gcloud container node-pools list "
        "--format=json` (default: the twin's GKE API, else inferred)",
    )
    sm.add_argument(
        "--out",
        default=None,
        help="output folder, one run's results only (default: <study directory>/results, or "
        "<study directory>/sweep-results with --sweep)",
    )
    sm.add_argument(
        "--force",
        action="store_true",
        help="write into an output folder that holds other files (another kind of run's results are replaced)",
    )
    sm.add_argument(
        "--no-what-if",
        action="store_true",
        help="do not run the changes the causes suggest (then no change is shown, only the evidence)",
    )
    sm.add_argument("--replicas", type=int, default=None, help="replicas per variant (seeds seed..seed+N-1)")
    sm.add_argument(
        "--max-runs",
        type=int,
        default=MAX_RUNS,
        metavar="N",
        help="refuse a study of more runs (variants x replicas, or sweep points x replicas) than this",
    )
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
    sm.add_argument(
        "--sweep",
        default=None,
        metavar="SWEEP.yaml",
        help="search knobs (pool sizes, quotas, flavor order, retries, timeouts, the fallback) for a better "
        "configuration: every point on the same seeds, the Pareto front of (jobs lost, censored wait, cost), "
        "the recommended point's diff and best.yaml to kubectl apply (the sweep file: docs/simulate.md)",
    )
    sm.add_argument("--no-plots", action="store_true", help="only jobs.csv and the JSON summaries")
    sm.add_argument("--no-progress", action="store_true", help="no live progress bar")
    return sm


def _run_sweep(
    args: argparse.Namespace,
    study: Any,
    out: Path,
    console: Console,
    err_console: Console,
    clock: Any,
    wall0: float,
) -> int:
    from rich.text import Text

    from flexq.simulate.sweep import load_sweep, points, run_sweep
    from flexq.simulate.sweep.report import sweep_table

    try:
        spec = load_sweep(args.sweep, study)
    except InputError as exc:
        _error(err_console, exc)
        return 2
    n = len(points(spec)) + 1
    reps = args.replicas or spec.replicas or study.replicas
    fewer = "--replicas, or fewer knob values or samples in the sweep file"
    if _too_many_runs(
        err_console, n * reps, args.max_runs, f"{n - 1} point(s) + the base × {reps} replica(s)", fewer
    ):
        return 2
    console.print(
        f"[bold]flexq simulate[/] {escape(study.name)} --sweep: {n - 1} point(s) + the base × {reps} replica(s) "
        f"= {n * reps} run(s)" + (f" on Ray at {escape(args.ray_address)}" if args.ray_address else "")
    )
    _warn_size(err_console, n * reps, "--replicas, or fewer knob values or samples in the sweep file")
    done = {"runs": 0, "total": n * reps}

    def on_progress(p: dict[str, Any]) -> None:
        if p.get("more"):  # the base's causes suggest changes: run as points too, counted from now on
            done["total"] += int(p["more"])
            console.print(f"then {p['more']} run(s) of {escape(str(p.get('what', 'more points')))}")
        if p.get("done"):
            done["runs"] += 1
            if not args.no_progress and console.is_terminal:
                console.print(f"  {done['runs']}/{done['total']} runs done", end="\r")

    try:
        res = run_sweep(
            study,
            spec,
            out=out,
            replicas=args.replicas,
            workers=args.jobs,
            ray_address=args.ray_address,
            plots=not args.no_plots,
            progress=on_progress,
            force=args.force,
        )
    except InputError as exc:
        _error(err_console, exc)
        return 2
    except Livelock as exc:
        _error(err_console, f"the simulation stopped: {exc.message}")
        return 1
    except OSError as exc:
        _error(err_console, f"cannot write the results in {out}: {exc.strerror or exc}")
        return 2
    console.print(Text(res.headline, style="bold"))
    t = Table(
        title="Sweep points: the Pareto front first, then the rest (means over replicas)",
        title_justify="left",
    )
    heads, cells, narrow = sweep_table(res)
    labels = [k.label() for k in spec.knobs]
    for h in heads:
        t.add_column(h, justify="left" if h in ("point", "a cause's change", *labels) else "right")
    t.drop = tuple(narrow)  # at 80 columns: what goes first
    for row in cells[:25]:
        t.add_row(*(escape(c) for c in row))
    if len(cells) > 25:
        t.add_row(f"... {len(cells) - 25} more in sweep.csv", "", *([""] * (len(heads) - 2)))
    console.print(t)
    from flexq.simulate.whatif import shown_change

    causes = res.documents[res.base].get("causes") or []
    if causes:
        ct = Table(
            title=f"{escape(res.base)}: what cost the most, and each change it suggests, run as a point above",
            title_justify="left",
        )
        for col in ("cause", "jobs lost", "evidence → change (measured)"):
            ct.add_column(col, overflow="fold", justify="right" if col == "jobs lost" else "left")
        for c in causes:
            change = shown_change(c)
            ct.add_row(
                escape(c["title"]),
                str(c["jobsLost"]),
                escape(c["evidence"] + (f" → {change}" if change else "")),
            )
        console.print(ct)
    if res.diff:
        console.print("[bold]The recommended point against the base[/] (best.diff):")
        console.print(res.diff, markup=False, highlight=False)
        console.print(
            f"To apply it: kubectl apply -f {escape(str(out / 'best.yaml'))} (node pools and settings: its comments)"
        )
    wall = clock.now() - wall0
    console.print(
        f"wall time {wall:.1f} s for {len(res.runs)} runs; files in {escape(str(out))}/: "
        + escape(", ".join(p.name for p in res.files))
    )
    return 0


LARGE_STUDY_RUNS = 1_000
MAX_RUNS = 10_000  # --max-runs: a million runs (100 variants × 10,000 replicas) is weeks of CPU


def _too_many_runs(err_console: Console, runs: int, limit: int, what: str, fewer: str) -> bool:
    """A study of more than ``--max-runs`` runs is refused before anything runs, saying how to go beyond."""
    if runs <= limit:
        return False
    _error(
        err_console,
        f"{what} = {runs:,} runs, more than --max-runs {limit:,}: each run simulates the whole study, so this "
        f"is days to weeks of CPU. Ask for fewer with {fewer}, or allow it with --max-runs {runs}.",
    )
    return True


def _warn_size(err_console: Console, runs: int, fewer: str) -> None:
    """A study of thousands of runs (up to ``--max-runs``) is said out loud before it starts: each run simulates
    the whole study, so this is hours to days of CPU. Ctrl-C stops it."""
    if runs <= LARGE_STUDY_RUNS:
        return
    err_console.print(
        f"warning: {runs:,} runs; each one simulates the whole study, so this can take hours or days "
        f"(Ctrl-C stops it). To try it first, ask for fewer runs with {fewer}.",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _error(err_console: Console, exc: Any) -> None:
    """One line on stderr, printed as is (a file name or value with ``[brackets]`` is not rich markup)."""
    err_console.print("[red]error:[/] ", end="")
    err_console.print(str(exc), markup=False, highlight=False, soft_wrap=True)


def _check_out(out: Path) -> None:
    """The output directory can be made (or is one) before anything is simulated."""
    from flexq.simulate.outputs import output_dir

    output_dir(out, field="--out")


def _from_cluster(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    """``--from-cluster DIR``: the cluster's state and fitted model as a study (``flexq.eta.files``)."""
    from flexq.cli import kubeclient
    from flexq.cli.eta import read_node_pools
    from flexq.cli.from_history import history_traffic, write_history_study
    from flexq.eta import EtaConfig, fit
    from flexq.eta.files import write_study
    from flexq.forecast.jobs import entries

    horizon = ""
    try:
        pools = read_node_pools(args.node_pools)
        api = kubeclient.connect(args.kubeconfig, args.context)
        state = kubeclient.fetch_cluster_state(api, pools)
        cfg = EtaConfig(seed=args.seed if args.seed is not None else 1)
        live = [e for e in entries(state) if e.role in ("running", "reserved", "pending")]
        history = [] if live else history_traffic(state)
        if not live and not history:
            err_console.print(
                "[red]error:[/] the cluster has no job running or waiting, and none finished to take as traffic: "
                "nothing to write a runnable study from. Run --from-cluster while jobs run or wait, or after "
                "some have finished, or write a study with a trace or a generator (docs/simulate.md)",
                highlight=False,
            )
            return 1
        model = fit(state, cfg)
        files = write_study(state, model, cfg, Path(args.from_cluster))
        if history:  # an idle cluster: its finished jobs are the traffic (flexq.cli.from_history)
            more, horizon = write_history_study(Path(args.from_cluster), state, model, history)
            files = list(dict.fromkeys([*files, *more]))
    except (ValueError, kubeclient.ClientError) as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    except InputError as exc:
        _error(err_console, exc)
        return 2
    what = (
        f"the {len(history)} job(s) the cluster finished, as its traffic"
        if history
        else f"the cluster at its state now ({len(state.workloads)} workloads)"
    )
    console.print(
        f"wrote {len(files)} files to {escape(args.from_cluster)}: {what}; run it with: "
        f"flexq simulate {escape(args.from_cluster)}",
        highlight=False,
    )
    if horizon:
        console.print(f"horizon and billing: {escape(horizon)}", highlight=False)
    for note in state.notes:
        console.print(f"note: {escape(note)}", highlight=False)
    return 0


def run(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    from flexq.cli.simulate_report import duration, summary_tables
    from flexq.clock import WallClock
    from flexq.simulate import simulate
    from flexq.simulate.study import load_study

    clock = WallClock()
    wall0 = clock.now()
    if getattr(args, "from_cluster", None):
        return _from_cluster(args, console, err_console)
    if not args.study:
        err_console.print("[red]error:[/] a study is required (or --from-cluster DIR)", highlight=False)
        return 2
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
            else (study_path if study_path.is_dir() else study_path.parent)
            / ("sweep-results" if args.sweep else "results")
        )
        _check_out(out)
        from flexq.simulate.outputs import claim

        claim(out, "sweep" if args.sweep else "simulation", force=args.force)
    except InputError as exc:
        _error(err_console, exc)
        return 2
    if args.sweep:
        return _run_sweep(args, study, out, console, err_console, clock, wall0)
    runs = len(study.variants) * study.replicas
    what = f"{len(study.variants)} variant(s) × {study.replicas} replica(s)"
    if _too_many_runs(err_console, runs, args.max_runs, what, "--replicas or --variant"):
        return 2
    console.print(
        f"[bold]flexq simulate[/] {escape(study.name)}: {len(study.variants)} variant(s) × {study.replicas} "
        f"replica(s) = {runs} run(s)" + (f" on Ray at {escape(args.ray_address)}" if args.ray_address else "")
    )
    _warn_size(err_console, runs, "--replicas or --variant")
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
            info=f"sim {duration(p['time'])}, {p['finished']}/{p['total']} jobs done, {p['pending']} pending",
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
                whatif=not args.no_what_if,
                force=args.force,
            )
    except InputError as exc:
        _error(err_console, exc)
        return 2
    except Livelock as exc:  # controllers that kept waking each other at one instant: a bug, said in one line
        _error(err_console, f"the simulation stopped: {exc.message}")
        return 1
    except OSError as exc:  # writing the results
        _error(err_console, f"cannot write the results in {out}: {exc.strerror or exc}")
        return 2
    for w in result.warnings:
        err_console.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
    for table in summary_tables(result.documents, result.comparison):
        console.print(table)
    wall = clock.now() - wall0
    jobs = sum(len(r.jobs) for r in result.runs)
    console.print(
        f"wall time {wall:.1f} s for {jobs} simulated jobs ({jobs / max(wall, 1e-9):.1f} per wall second, "
        f"{sum(r.steps for r in result.runs)} loop steps); files in {escape(str(out))}/: "
        + escape(", ".join(p.name for p in result.files))
    )
    return 0
