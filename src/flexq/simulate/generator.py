"""The seeded traffic generator of ``simulation.yaml`` (``generator:``): an arrival process (exponential gaps,
a fixed schedule, a diurnal and weekly shape), weighted mixes of job shapes with run-time distributions and
failure rates. The same seed gives the same jobs.

Must not import flexq.http.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flexq.api.base import check_dns1123_subdomain
from flexq.api.capacity_profile import Delay, parse_duration
from flexq.errors import InputError
from flexq.gke.capacity import sample_delay
from flexq.simulate.inputs import (
    MAX_JOBS,
    MAX_SECONDS,
    number,
    refuse_unknown,
    string,
    whole,
)
from flexq.simulate.jobs import JobSpec, _seconds
from flexq.simulate.trace import _job_from_row, _object_name

__all__ = ["generate", "GEN_KEYS", "MIX_KEYS"]


def _delay(value: Any, src: str, fld: str) -> Delay:
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        value = {"fixed": value}
    try:
        return Delay.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise InputError(err["msg"], source=src, field=f"{fld}.{where}" if where else fld) from None


def _sample(delay: Delay, start: float, rng: random.Random, src: str, fld: str) -> float | None:
    try:
        t = sample_delay(delay, start, 0.0, rng)
    except (ValueError, OverflowError, ZeroDivisionError) as exc:
        raise InputError(f"cannot draw from this distribution: {exc}", source=src, field=fld) from None
    if t is not None and not math.isfinite(t):
        raise InputError("the distribution drew an infinite time", source=src, field=fld)
    return t


def _mean_gap(delay: Delay) -> float | None:
    """The mean of a delay's draws, roughly (clipped by its min/max), or None when it has none (``at``,
    ``never``): used to refuse an arrival process that would draw too many jobs before drawing them."""
    try:
        if delay.fixed is not None:
            mean = parse_duration(delay.fixed)
        elif delay.uniform is not None:
            mean = (parse_duration(delay.uniform.min) + parse_duration(delay.uniform.max)) / 2
        elif delay.exponential is not None:
            mean = parse_duration(delay.exponential.mean)
        elif delay.normal is not None:
            mean = max(parse_duration(delay.normal.mean), parse_duration(delay.normal.stddev) / 2.5)
        elif delay.lognormal is not None:
            mean = parse_duration(delay.lognormal.median) * math.exp(min(delay.lognormal.sigma, 20) ** 2 / 2)
        else:
            return None
        if delay.min is not None:
            mean = max(mean, parse_duration(delay.min))
        if delay.max is not None:
            mean = min(mean, parse_duration(delay.max))
    except (ValueError, OverflowError):
        return None
    return mean


GEN_KEYS = {"seed", "duration", "arrivals", "mix", "count", "diurnal"}
DIURNAL_KEYS = {"busyHours", "busyFactor", "weekend"}
MIX_KEYS = {
    "weight",
    "kind",
    "queue",
    "namespace",
    "priority",
    "podsets",
    "template",
    "run",
    "failed",
    "class",
    "name",
}
MAX_DRAWS = 4 * MAX_JOBS  # arrivals drawn (kept or thinned away) by one generator


def generate(spec: dict[str, Any], seed: int, src: str, base: Path) -> list[JobSpec]:
    """Jobs drawn from a generator spec (seeded by the run's seed and the spec's own ``seed``)::

    duration: 7d                 # submissions stop here (or `count`)
    arrivals: {exponential: {mean: 2m}}          # inter-arrival time: any delay of a capacity profile
    diurnal: {busyHours: [8, 20], busyFactor: 3, weekend: 0.3}   # optional: more in working hours
    mix:
    - {weight: 3, kind: RayJob, template: rayjob.yaml, queue: user-queue, run: {lognormal: {median: 8m, sigma: 1}}}
    - {weight: 1, kind: Job, podsets: "main:1:cpu=4", queue: user-queue, run: 30m, failed: 0.05}

    ``arrivals: {at: [0, 10m, 1h]}`` submits one job at each listed time. At most ``MAX_JOBS`` jobs; an arrival
    process that would draw more (or keeps drawing the same instant without a ``count``) is refused."""
    if not isinstance(spec, dict):
        raise InputError("a generator is an object", source=src, field="generator")
    refuse_unknown(spec, GEN_KEYS, src, "generator")
    duration = _seconds(spec["duration"], src, None, "generator.duration") if "duration" in spec else None
    count = spec.get("count")
    if duration is None and count is None:
        raise InputError("a generator needs `duration` or `count`", source=src, field="generator")
    if count is not None:
        count = whole(count, src, "generator.count", 1, MAX_JOBS)
    if "arrivals" not in spec:
        raise InputError("an arrival process is required", source=src, field="generator.arrivals")
    arrivals = _delay(spec["arrivals"], src, "generator.arrivals")
    gap = _mean_gap(arrivals)
    if gap is not None and count is None and duration is not None and duration > 0:
        if gap <= 0:
            raise InputError(
                "the arrivals are all at one instant: without a `count` they never end; give a count or a "
                "positive inter-arrival time",
                source=src,
                field="generator.arrivals",
            )
        if duration / gap > MAX_JOBS:
            raise InputError(
                f"about {duration / gap:,.0f} arrivals over the duration, more than {MAX_JOBS:,} jobs: use a "
                "longer inter-arrival time, a shorter duration or a count",
                source=src,
                field="generator.arrivals",
            )
    mixes = spec.get("mix") or []
    if not isinstance(mixes, list) or not mixes:
        raise InputError("at least one job shape is required", source=src, field="generator.mix")
    diurnal = spec.get("diurnal") or {}
    if not isinstance(diurnal, dict):
        raise InputError(
            "diurnal is a mapping {busyHours, busyFactor, weekend}", source=src, field="generator.diurnal"
        )
    refuse_unknown(diurnal, DIURNAL_KEYS, src, "generator.diurnal")
    busy = diurnal.get("busyHours", [8, 20])
    if not isinstance(busy, list) or len(busy) != 2:
        raise InputError(
            "busyHours is [first hour, end hour]", source=src, field="generator.diurnal.busyHours"
        )
    busy = [number(h, src, f"generator.diurnal.busyHours[{i}]", 0, 24) for i, h in enumerate(busy)]
    busy_factor = number(diurnal.get("busyFactor", 1), src, "generator.diurnal.busyFactor", 0, 1000)
    weekend = number(diurnal.get("weekend", 1), src, "generator.diurnal.weekend", 0, 1000)
    cache: dict[str, tuple[str, str, Any]] = {}
    shapes: list[tuple[float, JobSpec, Delay, float]] = []
    for i, m in enumerate(mixes):
        fld = f"generator.mix[{i}]"
        if not isinstance(m, dict):
            raise InputError("a job shape is an object", source=src, field=fld)
        refuse_unknown(m, MIX_KEYS, src, fld)
        row = {k: m[k] for k in ("kind", "queue", "namespace", "priority", "template", "class") if k in m}
        row["podsets"] = m.get("podsets")
        row["submit"] = 0
        try:
            proto = _job_from_row(row, 0, src, 0, base, cache)
        except InputError as exc:
            if exc.source != src:  # a problem inside a file the shape names (its template)
                raise
            raise InputError(exc.message, source=src, field=f"{fld}.{exc.field}") from None
        weight = number(m.get("weight", 1), src, f"{fld}.weight", 0, 1e12)
        failed = number(m.get("failed", 0), src, f"{fld}.failed", 0, 1)
        prefix = string(m["name"], src, f"{fld}.name") if m.get("name") else proto.kind.lower()
        _object_name(f"{prefix}-00000", src, None, f"{fld}.name", check_dns1123_subdomain)
        shapes.append(
            (
                weight,
                replace(proto, extra={"prefix": prefix}),
                _delay(m.get("run", 60), src, f"{fld}.run"),
                failed,
            )
        )
    total_w = sum(s[0] for s in shapes)
    if total_w <= 0:
        raise InputError("the weights add up to zero", source=src, field="generator.mix")
    if "seed" in spec:
        whole(spec["seed"], src, "generator.seed", -(2**63), 2**63 - 1)
    rng = random.Random(f"flexq-simulate:{spec.get('seed', 0)}:{seed}")
    schedule: list[float] | None = None
    if arrivals.at is not None:  # a schedule: one arrival at each listed time
        schedule = sorted(
            _sample(Delay(at=[a]), 0.0, rng, src, "generator.arrivals.at") or 0.0 for a in arrivals.at
        )
    jobs: list[JobSpec] = []
    t = 0.0
    draws = 0
    while True:
        draws += 1
        if schedule is not None:
            if draws > len(schedule):
                break
            nxt: float | None = schedule[draws - 1]
        else:
            nxt = _sample(arrivals, t, rng, src, "generator.arrivals")
        if nxt is None:
            break
        if draws > MAX_DRAWS or (len(jobs) >= MAX_JOBS and count is None):
            raise InputError(
                f"the arrival process draws more than {MAX_JOBS:,} jobs before its duration ends: use a longer "
                "inter-arrival time, a shorter duration or a count",
                source=src,
                field="generator.arrivals",
            )
        t = nxt
        if duration is not None and t >= duration:
            break
        if t > MAX_SECONDS:
            raise InputError(
                f"an arrival falls after {MAX_SECONDS / 86400:g} days (the longest simulation): use a "
                "duration or a smaller count",
                source=src,
                field="generator.arrivals",
            )
        if diurnal:  # thinning: keep an arrival with probability rate(t) / peak rate
            hour, day = (t / 3600) % 24, int(t // 86400) % 7
            rate = busy_factor if busy[0] <= hour < busy[1] else 1.0
            rate *= weekend if day >= 5 else 1.0
            if rng.random() * max(busy_factor, 1.0) >= rate:
                continue
        pick = rng.random() * total_w
        chosen = len(shapes) - 1
        for i, shape in enumerate(shapes):
            pick -= shape[0]
            if pick < 0:
                chosen = i
                break
        _w, proto, run, failed = shapes[chosen]
        run_s = _sample(run, 0.0, rng, src, f"generator.mix[{chosen}].run") or 0.0
        if run_s > MAX_SECONDS:
            raise InputError(
                f"drew a run time of {run_s:g} s, more than {MAX_SECONDS / 86400:g} days",
                source=src,
                field=f"generator.mix[{chosen}].run",
            )
        outcome = "Failed" if failed and rng.random() < failed else "Succeeded"
        idx = len(jobs)
        jobs.append(
            replace(
                proto,
                index=idx,
                submit=round(t, 3),
                run=round(run_s, 3),
                outcome=outcome,
                name=f"{proto.extra['prefix']}-{idx:05d}",
                source=f"{src} (generator)",
                extra={},
            )
        )
        if count is not None and len(jobs) >= count:
            break
    return jobs


# -- Kueue's perf-harness generator.yaml -------------------------------------------------------------------------
