"""The sweep file: its knobs, the search (grid or seeded random points) and the checks of each knob against
the study (``load_sweep``, ``points``)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from flexq.errors import InputError
from flexq.simulate.change import Knob
from flexq.simulate.inputs import Refused, parse_yaml, read_text
from flexq.simulate.schema import Doc, checked
from flexq.simulate.study import Study

MAX_POINTS = 1000


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
