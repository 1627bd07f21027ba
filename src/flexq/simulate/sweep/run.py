"""``run_sweep``: the base and every point on the same seeds, the base's causes' changes as points of their own,
ranked; the files written when asked."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from flexq.errors import InputError
from flexq.simulate.results import rank_key, summarize, variant_document
from flexq.simulate.study import Study, Variant
from flexq.simulate.sweep.apply import _diff, apply_point, apply_yaml
from flexq.simulate.sweep.report import _headline, write_sweep
from flexq.simulate.sweep.results import SweepResult, _mean, _within_budget, pareto
from flexq.simulate.sweep.spec import SweepSpec, load_sweep, points


def run_sweep(
    study: Study,
    sweep: str | Path | dict[str, Any] | SweepSpec,
    *,
    out: str | Path | None = None,
    replicas: int | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    plots: bool = True,
    progress: Any = None,
    force: bool = False,
) -> SweepResult:
    """Run the base variant and every point of the sweep on the same seeds, then the changes the base's causes
    suggest as points of their own (``flexq.simulate.whatif``); rank them all, find the Pareto front and the
    recommended point; with ``out`` (a folder of its own: ``outputs.claim``; ``force`` to share one), write
    the files."""
    from flexq.simulate.engine import preflight
    from flexq.simulate.fanout import run_all

    spec = sweep if isinstance(sweep, SweepSpec) else load_sweep(sweep, study)
    if out is not None and plots:
        from flexq.errors import require_extra

        require_extra("plots", "the sweep's plots (or plots=False)")
    base = study.variant(spec.base) if spec.base else study.variants[0]
    pts = points(spec)
    variants = [
        Variant(
            f"base-{base.name}"[:63], base.cluster, base.manifests, base.capacity, "the base", base.settings
        )
    ]
    width = max(2, len(str(len(pts) - 1)))
    for i, pt in enumerate(pts):
        try:
            variants.append(apply_point(study, base, spec.knobs, pt, f"p{i:0{width}d}"))
        except ValueError as exc:
            raise InputError(
                str(exc), source=str(sweep) if isinstance(sweep, (str, Path)) else "sweep", field="knobs"
            ) from None
    run = copy.copy(study)
    run.variants = variants
    if replicas is not None:
        run.replicas = replicas
    elif spec.replicas is not None:
        run.replicas = spec.replicas
    if out is not None:
        from flexq.simulate.outputs import claim

        claim(Path(out), "sweep", force=force, field="out")
    preflight(run)
    runs = run_all(run, workers=workers, ray_address=ray_address, progress=progress)
    docs = {}
    for v in variants:
        sums = [summarize(r) for r in runs if r.variant == v.name]
        docs[v.name] = variant_document(study.name, v.name, v.description, sums)
    # the base's causes, each suggested change run as a point of the sweep: the causes and the ranking read the
    # same runs (flexq.simulate.whatif)
    from flexq.simulate import whatif

    causes = docs[variants[0].name]["causes"]
    trials, extra = whatif.plan(run, variants[0], causes, "c", variants[1:])
    if extra:
        more = copy.copy(run)
        more.variants = extra
        if progress is not None:  # the runs now planned beyond the points: a counter's total grows by them
            progress({"more": len(extra) * run.replicas, "what": "the changes the base's causes suggest"})
        runs += run_all(more, workers=workers, ray_address=ray_address, progress=progress)
        for v in extra:
            sums = [summarize(r) for r in runs if r.variant == v.name]
            docs[v.name] = variant_document(study.name, v.name, v.description, sums)
    docs[variants[0].name]["causes"] = whatif.attach(
        causes, trials, docs[variants[0].name], docs, variants[0]
    )
    for v in variants[1:]:  # the points' own causes are not run: evidence only
        docs[v.name]["causes"] = [
            {**c, "change": "", "knobs": [], "untested": True} for c in docs[v.name]["causes"]
        ]
    from_cause = {t.variant.name: causes[t.cause]["code"] for t in trials if t.variant is not None}
    labels = [k.label() for k in spec.knobs]
    rows: list[dict[str, Any]] = []
    point_values: list[dict[str, Any] | None] = [None, *pts, *([None] * len(extra))]
    all_variants = [*variants, *extra]
    for v, p in zip(all_variants, point_values, strict=True):
        d = docs[v.name]
        rows.append(
            {
                "point": v.name,
                **{lab: (None if p is None else p[lab]) for lab in labels},
                "cause": from_cause.get(v.name),
                "jobsLost": _mean(d, "jobsLost") or 0.0,
                "waitCensoredMeanSeconds": _mean(d, "waitCensoredMean") or 0.0,
                "waitCensoredP95Seconds": _mean(d, "waitCensoredP95") or 0.0,
                "waitToStartMeanSeconds": _mean(d, "waitToStartMean"),
                "costUSD": _mean(d, "costUSD") or 0.0,
                "goodput": _mean(d, "goodput"),
            }
        )
    front = pareto(rows)
    for r in rows:
        r["pareto"] = r["point"] in front
    by_name = {v.name: v for v in all_variants}
    # among points that tie on (jobs lost, censored wait, cost), the one that changes least from the base first
    changes = {v.name: _diff(variants[0], v).count("\n+") for v in all_variants}
    order = sorted(rows, key=lambda r: (*rank_key(docs[r["point"]]), changes[r["point"]], r["point"]))
    affordable = [r for r in order if _within_budget(r, rows[0])]
    recommended = (affordable or order)[0]["point"]
    result = SweepResult(
        spec=spec,
        base=variants[0].name,
        rows=rows,
        recommended=recommended,
        overall=order[0]["point"],
        diff=_diff(variants[0], by_name[recommended]),
        documents=docs,
        runs=runs,
        apply=apply_yaml(variants[0], by_name[recommended]),
        variants=by_name,
    )
    result.headline = _headline(result)
    if out is not None:
        write_sweep(Path(out), result, plots=plots, variants=all_variants)
    return result
