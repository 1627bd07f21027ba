"""Every change a cause suggests is run before it is shown: the what-ifs of ``flexq simulate``.

``flexq.simulate.causes`` reads a run and gives each cause its options: the change in words and the knobs that
make it (``flexq.simulate.change``'s knobs). Here each option becomes a variant of the one it was found in
(``change.apply_point``), run on the same seeds as that variant (common random numbers: the same jobs, the same
draws); its figures are set beside the variant's. An option is shown only when it **helps**: fewer jobs lost,
or as many lost and a censored mean wait at least 1 % shorter; never one that loses more jobs. An option
whose variant is the variant itself (a knob at the value it already has) is not a change and is not shown.

Owns ``plan`` (options -> variants, one per distinct change), ``attach`` (the measured effects into the causes,
and the text shown) and ``helps``. A sweep (``run_sweep``) runs the base's options as points of its own, so the
causes of the base and the sweep's ranking are read off the same runs. Must not import flexq.http.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from flexq.simulate.change import Knob, apply_point, apply_yaml
from flexq.simulate.inputs import parse_yaml_all
from flexq.simulate.metrics import mean_of, ranked_metrics
from flexq.simulate.study import Study, Variant

__all__ = ["Trial", "plan", "attach", "helps", "same_variant", "effect_text", "shown_change", "WAIT_GAIN"]

WAIT_GAIN = (
    0.01  # with as many jobs lost, the censored mean wait must be this much shorter to count as a help
)


@dataclass
class Trial:
    """One option of one cause, and the variant that runs it (``variant`` None: not a change)."""

    cause: int
    option: int
    variant: Variant | None
    error: str = ""


def _docs(v: Variant) -> list[Any]:
    return [d for m in v.manifests for d in parse_yaml_all(m.text, m.source)]


def same_variant(a: Variant, b: Variant) -> bool:
    """Whether two variants run the same thing (the same cluster, settings, capacity and objects)."""
    if (a.cluster, a.settings, a.capacity) != (b.cluster, b.settings, b.capacity):
        return False
    return sorted(map(repr, _docs(a))) == sorted(map(repr, _docs(b)))


def _variant(study: Study, base: Variant, knobs: list[dict[str, Any]], name: str) -> Variant:
    objs, point = [], {}
    for i, k in enumerate(knobs):
        fields = {key: val for key, val in k.items() if key != "value"}
        knob = Knob(name=f"k{i}", values=[k["value"]], **fields)
        objs.append(knob)
        point[knob.label()] = k["value"]
    return apply_point(study, base, objs, point, name)


def plan(
    study: Study, base: Variant, causes: list[dict[str, Any]], prefix: str, known: list[Variant] | None = None
) -> tuple[list[Trial], list[Variant]]:
    """The trials of ``causes`` found in ``base`` (each option's variant) and the new variants to run: an option
    whose variant equals ``base`` is no change (variant None), one equal to a variant already run or planned
    (``known``: a sweep's points) reuses it."""
    trials: list[Trial] = []
    new: list[Variant] = []
    pool = list(known or [])
    for ci, c in enumerate(causes):
        for oi, o in enumerate(c.get("options") or []):
            try:
                v = _variant(study, base, o["knobs"], f"{prefix}{len(new) + 1}")
            except (ValueError, TypeError) as exc:  # a knob this variant cannot take (no such pool, ...)
                trials.append(Trial(ci, oi, None, f"cannot be made on this variant: {exc}"))
                continue
            if same_variant(v, base):
                trials.append(Trial(ci, oi, None, "no change: the variant already has it"))
                continue
            twin = next((p for p in pool if same_variant(p, v)), None)
            if twin is None:
                v.description = f"what-if of {base.name}: {o['change']}"
                new.append(v)
                pool.append(v)
                twin = v
            trials.append(Trial(ci, oi, twin))
    return trials, new


def figures(doc: dict[str, Any]) -> dict[str, float]:
    """The figures a change is judged by (jobs lost, censored mean wait, cost), as a sweep point names them."""
    return {m.key: mean_of(doc, m.name, 0.0) for m in ranked_metrics()}


def helps(base: dict[str, float], what: dict[str, float]) -> bool:
    """Fewer jobs lost; or as many, and a censored mean wait at least ``WAIT_GAIN`` shorter."""
    if what["jobsLost"] < base["jobsLost"] - 1e-9:
        return True
    if what["jobsLost"] > base["jobsLost"] + 1e-9:
        return False
    return what["waitCensoredMeanSeconds"] < base["waitCensoredMeanSeconds"] * (1 - WAIT_GAIN)


def _money(x: float) -> str:
    return f"${x:,.0f}"


def _minutes(s: float) -> str:
    return f"{s / 60:,.0f} min" if s >= 600 else f"{s / 60:,.1f} min"


def effect_text(base: dict[str, float], what: dict[str, float]) -> str:
    """The measured effect in words: jobs lost, censored mean wait and cost, before -> after."""
    return (
        f"measured on the same seeds: jobs lost {base['jobsLost']:g} -> {what['jobsLost']:g}, censored mean wait "
        f"{_minutes(base['waitCensoredMeanSeconds'])} -> {_minutes(what['waitCensoredMeanSeconds'])}, cost "
        f"{_money(base['costUSD'])} -> {_money(what['costUSD'])}"
    )


def attach(
    causes: list[dict[str, Any]],
    trials: list[Trial],
    base_doc: dict[str, Any],
    docs: dict[str, dict[str, Any]],
    base: Variant | None = None,
) -> list[dict[str, Any]]:
    """The causes with each option's measured effect (``tested``: with ``base``, the change as whole objects for
    ``kubectl apply -f``, as ``best.yaml`` has it), the options that help first (best first) as ``change`` (the
    text shown) and ``knobs``; options that do not help are kept in ``tried`` (JSON) and not shown."""
    base_figures = figures(base_doc)
    variant = base
    out = copy.deepcopy(causes)
    by_cause: dict[int, list[Trial]] = {}
    for t in trials:
        by_cause.setdefault(t.cause, []).append(t)
    for ci, c in enumerate(out):
        shown: list[dict[str, Any]] = []
        tried: list[dict[str, Any]] = []
        for t in by_cause.get(ci, []):
            o = dict(c["options"][t.option])
            if t.variant is None or t.variant.name not in docs:
                o["tested"] = {"result": t.error or "not run"}
                tried.append(o)
                continue
            what = figures(docs[t.variant.name])
            ok = helps(base_figures, what)
            o["tested"] = {
                "variant": t.variant.name,
                "base": base_figures,
                "whatIf": what,
                "helps": ok,
                "effect": effect_text(base_figures, what),
            }
            if variant is not None:
                o["tested"]["apply"] = apply_yaml(variant, t.variant, "FILE")
            (shown if ok else tried).append(o)
        shown.sort(
            key=lambda o: (
                o["tested"]["whatIf"]["jobsLost"],
                o["tested"]["whatIf"]["waitCensoredMeanSeconds"],
                o["tested"]["whatIf"]["costUSD"],
            )
        )
        c["options"] = shown
        c["tried"] = tried
        c["change"] = "; or ".join(f"{o['change']} ({o['tested']['effect']})" for o in shown)
        c["knobs"] = [k for o in shown[:1] for k in o["knobs"]]
    return out


def shown_change(c: dict[str, Any]) -> str:
    """What a cause's row says to change: each tested change that helps, with its measured effect (a mistake of
    configuration's fix first), or why there is none."""
    fix = "fix: " if c.get("fix") else ""
    if c.get("change") and not c.get("untested"):
        return fix + c["change"]
    if c.get("fix"):
        return fix + c["fix"]
    if c.get("untested"):
        return "(its changes were not run: --no-what-if)" if c.get("options") else c.get("note", "")
    if c.get("tried"):
        return (
            f"no change helps: {len(c['tried'])} tried on the same seeds, none lost fewer jobs or waited less "
            "(the JSON's tried)"
        )
    return str(c.get("note", ""))
