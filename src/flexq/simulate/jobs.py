"""One job of a simulation's traffic (``JobSpec``, its pod sets) and the fields every source shares: the trace's
columns, the job kinds, the annotations and labels a submitted object carries, durations and ``podsets``.

Must not import flexq.http.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from flexq.api.capacity_profile import parse_duration
from flexq.api.quantity import parse_quantity
from flexq.errors import InputError
from flexq.simulate.inputs import (
    MAX_PODS,
    MAX_SECONDS,
    Refused,
    show,
    string,
    unknown_key,
    whole,
)

__all__ = [
    "PodSetSpec",
    "JobSpec",
    "KINDS",
    "COLUMNS",
    "ANN_RUN",
    "ANN_OUTCOME",
    "CLASS_LABEL",
    "QUEUE_LABEL",
    "PRIORITY_LABEL",
    "seconds",
    "parse_podsets",
]

KINDS = {"rayjob": "RayJob", "job": "Job", "workload": "Workload"}
COLUMNS = (
    "submit",
    "queue",
    "kind",
    "name",
    "namespace",
    "priority",
    "podsets",
    "template",
    "run",
    "outcome",
    "class",
)
ANN_RUN = "twin.flexq.dev/run-seconds"
ANN_OUTCOME = "twin.flexq.dev/outcome"
CLASS_LABEL = "sim.flexq.dev/class"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True, slots=True)
class PodSetSpec:
    name: str
    count: int
    requests: tuple[tuple[str, str], ...]


@dataclass(
    frozen=True, slots=True
)  # one per job of the traffic (60,000 in Kueue's large-scale file): no __dict__
class JobSpec:
    """One job of the traffic (times in seconds from the start of the traffic)."""

    index: int
    submit: float
    kind: str
    name: str
    namespace: str
    queue: str
    priority_class: str = ""
    priority: int | None = None
    pod_sets: tuple[PodSetSpec, ...] = ()
    template: str = ""  # manifest text (already read)
    template_source: str = ""  # where the template came from, for messages
    run: float = 60.0
    outcome: str = "Succeeded"
    klass: str = ""
    source: str = ""  # "file:line", for messages
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


# -- parsing helpers ---------------------------------------------------------------------------------------------
def as_seconds(value: Any, *, allow_zero: bool = True, limit: float = MAX_SECONDS) -> float:
    """A time in seconds (a number or a duration such as ``90s``, ``2h``) between 0 and ``limit``, else
    ``Refused``."""
    if isinstance(value, bool) or value is None or value == "":
        raise Refused("a time is required (seconds or a duration such as 90s, 30m, 2h)")
    try:
        if isinstance(value, int | float):
            v = float(value)
        elif isinstance(value, str):
            text = value.strip()
            v = float(text) if _NUMERAL.fullmatch(text) else parse_duration(text)
        else:
            raise ValueError(f"a time is a number of seconds or a duration such as 90s, 2h; got {value!r}")
    except (ValueError, OverflowError) as exc:
        msg = str(exc)
        raise Refused(msg if len(msg) < 300 else msg[:297] + "...") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise Refused(f"must not be negative: {value}" if v < 0 else f"invalid time: {show(value)}")
    if v > limit:
        raise Refused(
            f"{show(value)} is more than {limit / 86400:g} days (a simulation covers at most "
            f"{MAX_SECONDS / 86400:g} days)"
        )
    return v


_NUMERAL = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")  # seconds as a number (1e3 too)


def seconds(value: Any, src: str, line: int | None, fld: str) -> float:
    """A time in seconds (a number or a duration such as ``90s``, ``2h``), between 0 and ``MAX_SECONDS``; an
    ``InputError`` naming the source, line and field."""
    try:
        return as_seconds(value, limit=MAX_SECONDS)
    except Refused as exc:
        raise InputError(str(exc), source=src, line=line, field=fld) from None


def parse_podsets(value: Any, src: str, line: int | None) -> tuple[PodSetSpec, ...]:
    """``name:count:res=qty,...;...`` (CSV) or a list of ``{name, count, requests}`` (JSONL/YAML)."""
    if value in (None, "", []):
        return ()
    items: list[Any] = []
    if isinstance(value, str):
        for part in value.split(";"):
            part = part.strip()
            if not part:
                continue
            bits = part.split(":")
            if len(bits) != 3:
                raise InputError(
                    f"pod set {part[:80]!r} is not name:count:resource=quantity,...",
                    source=src,
                    line=line,
                    field="podsets",
                )
            reqs = {}
            for kv in bits[2].split(","):
                k, sep, v = kv.partition("=")
                if not sep or not k.strip() or not v.strip():
                    raise InputError(
                        f"request {kv[:80]!r} is not resource=quantity",
                        source=src,
                        line=line,
                        field="podsets",
                    )
                if k.strip() in reqs:
                    raise InputError(
                        f"resource {k.strip()!r} is requested twice", source=src, line=line, field="podsets"
                    )
                reqs[k.strip()] = v.strip()
            items.append({"name": bits[0].strip(), "count": bits[1].strip(), "requests": reqs})
    elif isinstance(value, list):
        items = value
    else:
        raise InputError("must be a list of pod sets", source=src, line=line, field="podsets")
    out = []
    names: set[str] = set()
    for i, ps in enumerate(items):
        fld = f"podsets[{i}]"
        if not isinstance(ps, dict):
            raise InputError(
                "a pod set is an object {name, count, requests}", source=src, line=line, field=fld
            )
        unknown = unknown_key(ps, {"name", "count", "requests"})
        if unknown:
            raise InputError(
                f"unknown field {unknown!r} (known: name, count, requests)",
                source=src,
                line=line,
                field=fld,
            )
        count = whole(ps.get("count", 1), src, f"{fld}.count", 1, MAX_PODS, line=line)
        reqs = ps.get("requests") or {}
        if not isinstance(reqs, dict):
            raise InputError(
                "requests must be a map of resource to quantity",
                source=src,
                line=line,
                field=f"{fld}.requests",
            )
        for k, v in reqs.items():
            if not isinstance(k, str) or not k:
                raise InputError(
                    f"a resource name is text, got {k!r}", source=src, line=line, field=f"{fld}.requests"
                )
            try:
                if isinstance(v, bool) or not isinstance(v, str | int | float) or len(str(v)) > 64:
                    raise ValueError(v)
                q = parse_quantity(str(v))
            except Exception:
                raise InputError(
                    f"invalid quantity {str(v)[:80]!r}", source=src, line=line, field=f"{fld}.requests.{k}"
                ) from None
            if q < 0:
                raise InputError(
                    f"quantity must not be negative: {v}", source=src, line=line, field=f"{fld}.requests.{k}"
                )
        name = string(ps.get("name") or f"ps{i}", src, f"{fld}.name", line=line)
        if name in names:
            raise InputError(f"duplicate pod set name {name!r}", source=src, line=line, field=f"{fld}.name")
        names.add(name)
        out.append(PodSetSpec(name, count, tuple(sorted((str(k), str(v)) for k, v in reqs.items()))))
    return tuple(out)
