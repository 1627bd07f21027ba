"""``run_sweep``: the base and every point on the same seeds, the base's causes' changes as points of their own,
ranked; the files written when asked."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from flexq.errors import InputError, require_extra
from flexq.simulate import whatif
from flexq.simulate.change import apply_point, apply_yaml, change_size, diff
from flexq.simulate.fanout import run_all
from flexq.simulate.metrics import mean_of, sweep_metrics
from flexq.simulate.outputs import claim
from flexq.simulate.preflight import preflight
from flexq.simulate.results import rank_key, summarize, variant_document
from flexq.simulate.study import Study, Variant
from flexq.simulate.sweep.quota import chips_text, tpu_chips
from flexq.simulate.sweep.report import RULE, headline, write_sweep
from flexq.simulate.sweep.results import SweepResult, pareto, tied, within_budget
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
    spec = sweep if isinstance(sweep, SweepSpec) else load_sweep(sweep, study)
    if out is not None and plots:
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
        claim(Path(out), "sweep", force=force, field="out")
    preflight(run)
    runs = run_all(run, workers=workers, ray_address=ray_address, progress=progress)
    docs = {}
    for v in variants:
        sums = [summarize(r) for r in runs if r.variant == v.name]
        docs[v.name] = variant_document(study.name, v.name, v.description, sums)
    # the base's causes, each suggested change run as a point of the sweep: the causes and the ranking read the
    # same runs (flexq.simulate.whatif)
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
                **{m.key: mean_of(d, m.name, m.missing) for m in sweep_metrics()},
                "changeFromBase": round(change_size(variants[0], v), 3),
                "tpuChips": tpu_chips(v.cluster),
            }
        )
    front = pareto(rows)
    for r in rows:
        r["pareto"] = r["point"] in front
    by_name = {v.name: v for v in all_variants}
    order = sorted(rows, key=lambda r: (*rank_key(docs[r["point"]]), r["changeFromBase"], r["point"]))
    affordable = [r for r in order if within_budget(r, rows[0])]
    # among the points as good as the first (the same jobs lost; wait and cost within noise: results.tied),
    # the one that changes least from the base: a pool's max 4 -> 16 rather than 4 -> 168 for the same jobs
    best = _least_change(affordable or order)
    overall = _least_change(order)
    recommended = best["point"]
    result = SweepResult(
        spec=spec,
        base=variants[0].name,
        rows=rows,
        recommended=recommended,
        overall=overall["point"],
        diff=diff(variants[0], by_name[recommended]),
        documents=docs,
        runs=runs,
        apply=apply_yaml(variants[0], by_name[recommended], why=_why(best, rows, affordable or order)),
        variants=by_name,
    )
    result.headline = headline(result)
    if out is not None:
        write_sweep(Path(out), result, plots=plots, variants=all_variants)
    return result


def _least_change(order: list[dict[str, Any]]) -> dict[str, Any]:
    """The first of ``order`` (ranked), or a point tied with it that changes less from the base."""
    peers = [r for r in order if tied(r, order[0])]
    return min(peers, key=lambda r: (r["changeFromBase"], order.index(r)))


def _why(best: dict[str, Any], rows: list[dict[str, Any]], order: list[dict[str, Any]]) -> list[str]:
    """``best.yaml``'s reasons, as comment lines: the rule, the figures against the base, the points as good
    that change more, and the TPU chips each point needs at its node pools' maximum."""
    base = rows[0]

    def figures(r: dict[str, Any]) -> str:
        return (
            f"{r['jobsLost']:g} jobs lost, censored mean wait {r['waitCensoredMeanSeconds'] / 60:,.1f} min, "
            f"${r['costUSD']:,.2f}"
        )

    out = [
        f"# Why {best['point']}: {RULE}.",
        f"#   {best['point']}: {figures(best)}; the base {base['point']}: {figures(base)}.",
    ]
    peers = [r for r in order if r is not best and tied(r, best)]
    if peers:
        out.append(
            "#   As good within noise, but a larger change from the base (ties go to the smallest change): "
            + ", ".join(
                f"{r['point']} ({r['changeFromBase']:g} against {best['changeFromBase']:g})" for r in peers
            )
            + "."
        )
    out.append(
        "# TPU chips at the node pools' maximum (GKE's TPU quota is per region and TPU family; flex-start and "
        "spot VMs use the preemptible quota): check the project's quota before applying a point that needs more "
        "than the base."
    )
    more = {k for r in rows for k, n in r["tpuChips"].items() if n > base["tpuChips"].get(k, 0)}
    for r in rows:
        flag = (
            " (more than the base)"
            if any(r["tpuChips"].get(k, 0) > base["tpuChips"].get(k, 0) for k in more)
            else ""
        )
        mark = " <- this file" if r is best else " (base)" if r is base else ""
        out.append(f"#   {r['point']}{mark}: {chips_text(r['tpuChips'])}{flag}")
    return out
