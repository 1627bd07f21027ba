"""The sweep file: its knobs, the search (grid or seeded random points) and the checks of each knob against
the study (``load_sweep``, ``points``)."""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from flexq.errors import InputError
from flexq.simulate.inputs import Refused, parse_yaml, read_text
from flexq.simulate.schema import Doc, checked
from flexq.simulate.study import Study

MAX_POINTS = 1000
OPT_IN_LABEL = "fallback.flexq.dev/enabled"
KnobKind = Literal[
    "poolMax",
    "nominalQuota",
    "retryLimit",
    "flavorOrder",
    "podsReadyTimeout",
    "fallback",
    "setting",
    "field",
    "cluster",
    "variant",
    "manifests",
    "object",
]
KINDS: tuple[str, ...] = get_args(KnobKind)  # the knob kinds, in the order the docs list them
_REQUIRED = {
    "poolMax": ("pool",),
    "nominalQuota": ("clusterQueue", "flavor", "resource"),
    "retryLimit": ("config",),
    "flavorOrder": ("clusterQueue",),
    "setting": ("path",),
    "field": ("object", "path"),
    "cluster": ("path",),
}


class Knob(Doc):
    """One knob: what it turns (``kind`` and its target) and the values to try (each of the kind's shape)."""

    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][\w.\-]{0,40}$")
    kind: KnobKind
    pool: str | None = Field(default=None, max_length=100)
    clusterQueue: str | None = Field(default=None, max_length=253)
    flavor: str | None = Field(default=None, max_length=253)
    resource: str | None = Field(default=None, max_length=253)
    config: str | None = Field(default=None, max_length=253)
    object: str | None = Field(default=None, max_length=400, pattern=r"^[A-Za-z]+/[^/]+(/[^/]+)?$")
    path: str | None = Field(default=None, max_length=400)
    values: list[Any] = Field(min_length=1, max_length=100)

    @field_validator("values")
    @classmethod
    def plain_value(cls, values: list[Any]) -> list[Any]:
        for v in values:
            if len(json.dumps(v, default=str)) > 10_000:
                raise ValueError("a value is at most 10,000 characters of JSON")
        return values

    @model_validator(mode="after")
    def _complete(self) -> Knob:
        for attr in _REQUIRED.get(self.kind, ()):
            if not getattr(self, attr):
                raise Refused(f"a {self.kind} knob needs {attr!r}")
        for j, v in enumerate(self.values):
            problem = _value_problem(self.kind, v)
            if problem:
                raise Refused(problem, at=("values", j))
        return self

    def label(self) -> str:
        if self.name:
            return self.name
        target = self.pool or self.config or self.flavor or self.path or self.object or ""
        return f"{self.kind}:{target}" if target else self.kind


class Search(Doc):
    random: int = Field(ge=1, le=MAX_POINTS)
    seed: int = 1


class SweepSpec(Doc):
    """A sweep file (see the module docstring)."""

    shape = "a sweep file is a YAML mapping (base, replicas, search, knobs)"
    base: str | None = None
    replicas: int | None = Field(default=None, ge=1, le=64)
    search: Literal["grid"] | Search = "grid"
    knobs: list[Knob] = Field(min_length=1, max_length=20)

    @model_validator(mode="after")
    def _bounded(self) -> SweepSpec:
        names = set()
        for i, k in enumerate(self.knobs):
            if k.label() in names:
                raise Refused(f"two knobs are named {k.label()!r}: give one a name", at=("knobs", i, "name"))
            names.add(k.label())
        grid = 1
        for k in self.knobs:
            grid *= len(k.values)
        if self.search == "grid" and grid > MAX_POINTS:
            raise Refused(
                f"the grid has {grid:,} points, more than {MAX_POINTS:,}: use search: {{random: N}}",
                at=("search",),
            )
        return self


def load_sweep(path: str | Path | dict[str, Any], study: Study) -> SweepSpec:
    """Read and check a sweep file (or a mapping) against ``study``: unknown fields, a knob without its target,
    a target the study does not have, a grid too large: an ``InputError`` naming the file and the field."""
    if isinstance(path, dict):
        src, doc = "sweep", path
    else:
        p = Path(path)
        src = str(p)
        doc = parse_yaml(read_text(p, src, what="sweep file", field="--sweep"), src)
    spec = checked(SweepSpec, doc, src)
    if spec.base is not None:
        try:
            study.variant(spec.base)
        except InputError as exc:
            raise InputError(exc.message, source=src, field="base") from None
    for i, k in enumerate(spec.knobs):  # a variant knob's values name the study's variants
        for j, v in enumerate(k.values if k.kind == "variant" else ()):
            try:
                study.variant(str(v))
            except InputError as exc:
                raise InputError(exc.message, source=src, field=f"knobs[{i}].values[{j}]") from None
    return spec


def _value_problem(kind: str, v: Any) -> str:
    """What is wrong with ``v`` as a value of a ``kind`` knob ("" when nothing is)."""
    if kind in ("poolMax", "retryLimit") and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
        return f"must be a whole number >= 0, got {v!r}"
    if kind == "nominalQuota" and (isinstance(v, bool) or not isinstance(v, (int, float, str))):
        return f"must be a quantity (16, 1.5, 75Gi), got {v!r}"
    if kind == "podsReadyTimeout" and not (isinstance(v, str) and re.fullmatch(r"\d+(\.\d+)?(s|m|h)", v)):
        return f"must be a duration such as 10m, got {v!r}"
    if kind == "fallback" and not isinstance(v, (bool, dict)):
        return f"must be true, false or a mapping of fallback settings, got {v!r}"
    if kind == "flavorOrder" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
        return f"must be a list of flavor names, got {v!r}"
    if kind == "manifests" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
        return f"must be a list of manifest files, got {v!r}"
    if kind == "object" and not (
        isinstance(v, dict)
        and isinstance(v.get("kind"), str)
        and isinstance(v.get("apiVersion"), str)
        and isinstance(v.get("metadata"), dict)
        and isinstance(v["metadata"].get("name"), str)
    ):
        return "must be a whole object (apiVersion, kind, metadata.name, ...)"
    return ""


def points(spec: SweepSpec) -> list[dict[str, Any]]:
    """The points to run: every combination of the knobs' values (``grid``), or ``random`` of them drawn
    without repetition (seeded)."""
    labels = [k.label() for k in spec.knobs]
    combos = itertools.product(*(range(len(k.values)) for k in spec.knobs))
    if spec.search == "grid":
        picked = list(combos)
    else:
        assert isinstance(spec.search, Search)
        total = 1
        for k in spec.knobs:
            total *= len(k.values)
        n = min(spec.search.random, total)
        rng = random.Random(f"flexq-sweep:{spec.search.seed}")
        picked = []
        for flat in sorted(rng.sample(range(total), n)):
            idx = []
            for k in reversed(spec.knobs):
                flat, r = divmod(flat, len(k.values))
                idx.append(r)
            picked.append(tuple(reversed(idx)))
    return [{labels[i]: spec.knobs[i].values[j] for i, j in enumerate(p)} for p in picked]


# -- applying a point ------------------------------------------------------------------------------------------
