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
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainValidator, model_validator

from flexq.api.base import check_dns1123_subdomain
from flexq.api.capacity_profile import Delay, parse_duration
from flexq.errors import InputError
from flexq.gke.capacity import sample_delay
from flexq.simulate.inputs import MAX_JOBS, MAX_SECONDS, Refused, as_text
from flexq.simulate.jobs import JobSpec
from flexq.simulate.schema import SECONDS, Doc, checked, keys_of, number_in, whole_in
from flexq.simulate.trace import check_object_name, job_from_row

__all__ = ["generate", "GeneratorSpec", "GEN_KEYS", "MIX_KEYS"]


def _as_delay(value: Any) -> Any:
    """A delay as a capacity profile writes it; a bare number or duration is ``{fixed: ...}``."""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return {"fixed": value}
    return value


AnyDelay = Annotated[Delay, BeforeValidator(_as_delay)]


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


def _prefix(value: Any) -> str:
    return as_text(value) if value else ""


def _busy_hours(value: Any) -> Any:
    if not isinstance(value, list) or len(value) != 2:
        raise Refused("busyHours is [first hour, end hour]")
    return value


def _shapes(value: Any) -> Any:
    if not value or not isinstance(value, list):
        raise Refused("at least one job shape is required")
    return value


def _no_diurnal(value: Any) -> Any:
    return value or None  # an empty diurnal is none: every arrival is kept


class Diurnal(Doc):
    """More arrivals in working hours (thinning: an arrival is kept with probability rate(t) / peak rate)."""

    shape = "diurnal is a mapping {busyHours, busyFactor, weekend}"
    busyHours: Annotated[list[Annotated[float, number_in(0, 24)]], BeforeValidator(_busy_hours)] = [8.0, 20.0]
    busyFactor: Annotated[float, number_in(0, 1000)] = 1.0
    weekend: Annotated[float, number_in(0, 1000)] = 1.0


class JobShape(Doc):
    """One job shape of the mix: a trace row's fields (checked as a trace's are), its weight, run time and
    failure rate."""

    shape = "a job shape is an object"
    weight: Annotated[float, number_in(0, 1e12)] = 1.0
    kind: Any = None
    queue: Any = None
    namespace: Any = None
    priority: Any = None
    podsets: Any = None
    template: Any = None
    klass: Any = Field(default=None, alias="class")
    run: AnyDelay = Field(default_factory=lambda: Delay.model_validate({"fixed": 60}))
    failed: Annotated[float, number_in(0, 1)] = 0.0
    name: Annotated[str, PlainValidator(_prefix)] = ""

    def row(self) -> dict[str, Any]:
        """The trace row this shape's jobs are made from (the fields it gives, as written)."""
        given = {f.alias or n for n, f in type(self).model_fields.items() if n in self.model_fields_set}
        row = {k: getattr(self, "klass" if k == "class" else k) for k in _ROW_KEYS if k in given}
        row["podsets"] = self.podsets
        row["submit"] = 0
        return row


_ROW_KEYS = ("kind", "queue", "namespace", "priority", "template", "class")


class GeneratorSpec(Doc):
    """A ``generator:`` (``generate``'s docstring)."""

    shape = "a generator is an object"
    duration: Annotated[float | None, SECONDS] = None  # given, it is a time (null is refused)
    count: Annotated[int, whole_in(1, MAX_JOBS)] | None = None
    arrivals: AnyDelay
    mix: Annotated[list[JobShape], BeforeValidator(_shapes)] = Field(default=None, validate_default=True)
    diurnal: Annotated[Diurnal | None, BeforeValidator(_no_diurnal)] = None
    seed: Annotated[int, whole_in(-(2**63), 2**63 - 1)] = 0  # its draws are seeded by the seed as written

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "duration" not in data and data.get("count") is None:
                raise Refused("a generator needs `duration` or `count`")
            if "arrivals" not in data:
                raise Refused("an arrival process is required", at=("arrivals",))
        return data

    @model_validator(mode="after")
    def _bounded(self) -> GeneratorSpec:
        gap = _mean_gap(self.arrivals)
        if gap is not None and self.count is None and self.duration is not None and self.duration > 0:
            if gap <= 0:
                raise Refused(
                    "the arrivals are all at one instant: without a `count` they never end; give a count or a "
                    "positive inter-arrival time",
                    at=("arrivals",),
                )
            if self.duration / gap > MAX_JOBS:
                raise Refused(
                    f"about {self.duration / gap:,.0f} arrivals over the duration, more than {MAX_JOBS:,} jobs: "
                    "use a longer inter-arrival time, a shorter duration or a count",
                    at=("arrivals",),
                )
        if sum(m.weight for m in self.mix) <= 0:
            raise Refused("the weights add up to zero", at=("mix",))
        return self


GEN_KEYS = keys_of(GeneratorSpec)
DIURNAL_KEYS = keys_of(Diurnal)
MIX_KEYS = keys_of(JobShape)
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
    gen = checked(GeneratorSpec, spec, src, field="generator")
    duration, count, arrivals, diurnal = gen.duration, gen.count, gen.arrivals, gen.diurnal
    cache: dict[str, tuple[str, str, Any]] = {}
    shapes: list[tuple[float, JobSpec, Delay, float]] = []
    for i, m in enumerate(gen.mix):
        fld = f"generator.mix[{i}]"
        try:
            proto = job_from_row(m.row(), 0, src, 0, base, cache)
        except InputError as exc:
            if exc.source != src:  # a problem inside a file the shape names (its template)
                raise
            raise InputError(exc.message, source=src, field=f"{fld}.{exc.field}") from None
        prefix = m.name or proto.kind.lower()
        check_object_name(f"{prefix}-00000", src, None, f"{fld}.name", check_dns1123_subdomain)
        shapes.append((m.weight, replace(proto, extra={"prefix": prefix}), m.run, m.failed))
    total_w = sum(s[0] for s in shapes)
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
        if diurnal is not None:  # thinning: keep an arrival with probability rate(t) / peak rate
            hour, day = (t / 3600) % 24, int(t // 86400) % 7
            busy = diurnal.busyHours
            rate = diurnal.busyFactor if busy[0] <= hour < busy[1] else 1.0
            rate *= diurnal.weekend if day >= 5 else 1.0
            if rng.random() * max(diurnal.busyFactor, 1.0) >= rate:
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
