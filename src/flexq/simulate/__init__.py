"""``flexq simulate``: the Kueue + GKE capacity simulator. The simulation is the twin itself.

    import flexq
    result = flexq.simulate("examples/tutorial-week", out="results", replicas=4)
    result.comparison["headline"]     # the variants compared: jobs lost first, then censored waits, then cost
    result.documents["tutorial"]["aggregate"]["waitCensoredMean"]   # mean and 95 % CI over replicas

A study (``flexq.simulate.study``: a simulation file, or Kueue's perf-harness ``generator.yaml``) names the
GKE cluster, the Kubernetes/Kueue manifests, a capacity profile, the traffic (a CSV/JSONL trace or a seeded
generator) and the variants to compare. Each (variant, replica) run is a fresh ``Twin(clock="virtual")``
with the simulated executor (``flexq.simulate.engine``); the runs fan out over the machine's cores or a Ray
cluster (``flexq.simulate.fanout``); figures come out as ``jobs.csv``, one ``<variant>.json`` summary per
variant (``flexq.simulate.results``), PNG plots and ``report.html`` (``flexq.simulate.report``).

The package itself is callable (``flexq.simulate(...)`` is ``flexq.simulate.simulate(...)``).
Must not import flexq.http.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flexq.errors import InputError, require_extra
from flexq.simulate import whatif as wi
from flexq.simulate.engine import run_one
from flexq.simulate.fanout import default_workers, run_all
from flexq.simulate.outputs import claim, output_dir, record
from flexq.simulate.preflight import preflight
from flexq.simulate.report import write_html, write_plots
from flexq.simulate.results import (
    comparison_document,
    summarize,
    traffic_notes,
    variant_document,
    write_csv,
    write_json,
)
from flexq.simulate.run_result import RunResult
from flexq.simulate.study import Study, given_over, load_study, submit_window
from flexq.simulate.sweep import SweepResult, load_sweep, run_sweep

__all__ = [
    "simulate",
    "SimulationResult",
    "Study",
    "load_study",
    "run_one",
    "preflight",
    "RunResult",
    "InputError",
    "default_workers",
    "run_sweep",
    "load_sweep",
    "SweepResult",
]


@dataclass
class SimulationResult:
    """What ``simulate`` returns: the runs, one summary document per variant, and the files written."""

    study: Study
    runs: list[RunResult]
    documents: dict[str, dict[str, Any]]
    comparison: dict[str, Any] = field(default_factory=dict)  # the variants ranked, and the headline
    files: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # the preflight's (flexq.simulate.configcheck)


def simulate(
    study: str | Path | Study,
    *,
    out: str | Path | None = None,
    replicas: int | None = None,
    seed: int | None = None,
    variants: list[str] | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    plots: bool = True,
    scale: float | None = None,
    until: str | float | None = None,
    progress: Any = None,
    check: bool = True,
    whatif: bool = True,
    force: bool = False,
) -> SimulationResult:
    """Run every variant x replica of ``study`` and (with ``out``) write ``jobs.csv``, ``<variant>.json``,
    the PNG plots and ``report.html`` there. Bad input raises ``flexq.errors.InputError`` (naming the file,
    line and field) before anything is simulated. ``workers``: processes (default: one per core);
    ``ray_address``: run on that Ray cluster instead (``"auto"``, ``"ray://host:10001"``, ...); ``until``:
    simulate only the jobs submitted before this duration (``"12h"``, seconds), as ``--until``; ``whatif``:
    run every change the causes suggest on the same seeds and show only those that help
    (``flexq.simulate.whatif``; off, the causes keep their evidence and show no change); ``force``: write into
    an ``out`` folder that holds other files (``flexq.simulate.outputs.claim``)."""
    if not isinstance(study, Study):
        study = load_study(study, replicas=replicas, seed=seed, variants=variants, scale=scale)
    else:
        if (
            scale is not None
        ):  # the traffic is drawn when the study is loaded: a loaded one cannot be rescaled
            raise InputError(
                "scale applies when the study is loaded: pass the study's path, or load_study(path, scale=...)",
                source=study.source,
                field="scale",
            )
        given_over(study, seed=seed, replicas=replicas, variants=variants)
    if until is not None:
        study.submit_until = submit_window(until)
    if out is not None and plots:
        require_extra("plots", "flexq simulate's plots (or plots=False)")  # before the runs, not after them
    if out is not None:
        claim(Path(out), "simulation", force=force, field="out")
    warnings = preflight(study) if check else []
    runs = run_all(study, workers=workers, ray_address=ray_address, progress=progress)
    docs = {}
    for v in study.variants:
        sums = [summarize(r) for r in runs if r.variant == v.name]
        docs[v.name] = variant_document(study.name, v.name, v.description, sums)
    _test_causes(study, docs, whatif, workers=workers, ray_address=ray_address, progress=progress)
    comparison = comparison_document(study.name, docs)
    notes = traffic_notes(study.generator, runs, study.submit_until)
    if notes:  # said in the summary: comparison.json, each variant's JSON, the terminal
        comparison["notes"] = notes
        for d in docs.values():
            d["notes"] = notes
    result = SimulationResult(study, runs, docs, comparison, warnings=warnings)
    if out is not None:
        out_dir = output_dir(Path(out), field="out")
        write_csv(out_dir / "jobs.csv", runs)
        result.files.append(out_dir / "jobs.csv")
        write_json(out_dir / "comparison.json", result.comparison)
        result.files.append(out_dir / "comparison.json")
        for name, doc in docs.items():
            write_json(out_dir / f"{name}.json", doc)
            result.files.append(out_dir / f"{name}.json")
        if plots:
            images = write_plots(out_dir, runs, [v.name for v in study.variants])
            result.files += images
            result.files.append(
                write_html(out_dir, study.name, list(docs.values()), images, result.comparison)
            )
        record(out_dir, "simulation", result.files)
    return result


def _test_causes(
    study: Study,
    docs: dict[str, dict[str, Any]],
    whatif: bool,
    *,
    workers: int | None,
    ray_address: str | None,
    progress: Any,
    known: list[Any] | None = None,
) -> list[Any]:
    """Each variant's causes with every suggested change run on the same seeds (``flexq.simulate.whatif``);
    without ``whatif``, the causes keep their evidence and show no change. Returns the what-if variants run."""
    import copy

    plans = []
    new: list[Any] = []
    for v in study.variants:
        causes = docs[v.name]["causes"]
        if not whatif:
            docs[v.name]["causes"] = [{**c, "change": "", "knobs": [], "untested": True} for c in causes]
            continue
        trials, more = wi.plan(
            study, v, causes, f"{v.name[:48]}.whatif", [*study.variants, *new, *(known or [])]
        )
        new += more
        plans.append((v, causes, trials))
    if not plans:
        return []
    found: dict[str, dict[str, Any]] = dict(docs)
    if new:
        trial_study = copy.copy(study)
        trial_study.variants = new
        runs = run_all(trial_study, workers=workers, ray_address=ray_address, progress=progress)
        for v in new:
            sums = [summarize(r) for r in runs if r.variant == v.name]
            found[v.name] = variant_document(study.name, v.name, v.description, sums)
    for v, causes, trials in plans:
        docs[v.name]["causes"] = wi.attach(causes, trials, docs[v.name], found, v)
    return new


class _CallableModule(types.ModuleType):
    """Lets ``flexq.simulate(...)`` call ``simulate`` while ``flexq.simulate`` stays the package."""

    def __call__(self, *args: Any, **kwargs: Any) -> SimulationResult:
        return simulate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
