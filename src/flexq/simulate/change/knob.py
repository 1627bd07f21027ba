"""A knob: one thing a change to a study turns (a node pool's max, a quota, a retry limit, a flavor order,
Kueue's waitForPodsReady timeout, flexq's fallback, a setting, a field, a whole object, ...) and the values to try.
A sweep file lists knobs; a cause's options name them (``flexq.simulate.causes``) and ``flexq.simulate.whatif``
runs them. Must not import flexq.http."""

from __future__ import annotations

import json
import re
from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from flexq.simulate.inputs import Refused
from flexq.simulate.schema import Doc

__all__ = ["Knob", "KnobKind", "KINDS"]

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
