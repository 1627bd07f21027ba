"""The traffic of a simulation: jobs with a submit time, read from a trace or drawn by a generator.

Owns ``JobSpec`` (one job of the traffic), the trace readers (CSV and JSONL), the generator (an arrival
process and weighted mixes of job shapes, run times and outcomes, seeded), Kueue's own perf-harness
``generator.yaml`` (``test/performance/scheduler/runner/generator``: cohorts x queue sets x workload sets,
accepted as is) and ``build_object``, which turns a ``JobSpec`` into the Kubernetes object submitted to the
twin (a RayJob, a batch/v1 Job or a bare Kueue Workload). Every error names the file, the line and the field.

Trace columns (CSV header, or JSONL keys): ``submit`` (seconds or a duration such as ``90s``/``2h`` from the
start; required), ``queue`` (LocalQueue; required), ``kind`` (``RayJob``, ``Job`` or ``Workload``; default
``Job``), ``name``, ``namespace`` (default ``default``), ``priority`` (a WorkloadPriorityClass or
PriorityClass name; a bare number is a Workload's ``spec.priority``), ``podsets``, ``template``, ``run``
(run time; default 60 s), ``outcome`` (``Succeeded`` or ``Failed``), ``class`` (a label for reports).
``podsets`` is ``name:count:res=qty,res=qty;...`` in CSV (quoted when it holds commas:
``"head:1:cpu=2,memory=4Gi;workers:4:cpu=8"``) and a
list of ``{name, count, requests}`` in JSONL. ``template`` is a manifest file (relative to the trace) whose
``${NAME}``, ``${JOB_ID}``, ``${QUEUE}``, ``${NAMESPACE}`` are substituted.
A ``.json`` trace may also hold one JSON array of those objects (messages then name the record).

Must not import flexq.http.
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from flexq.api.base import check_dns1123_label, check_dns1123_subdomain
from flexq.api.capacity_profile import Delay, parse_duration
from flexq.errors import InputError
from flexq.gke.capacity import sample_delay
from flexq.simulate.inputs import (
    INT32,
    MAX_JOBS,
    MAX_PODS,
    MAX_SECONDS,
    number,
    open_regular,
    parse_yaml,
    read_lines,
    read_text,
    ref_path,
    show,
    string,
    unknown_key,
    whole,
)

__all__ = [
    "PodSetSpec",
    "JobSpec",
    "read_trace",
    "generate",
    "is_kueue_generator",
    "kueue_generator",
    "build_object",
    "KINDS",
    "ANN_RUN",
    "ANN_OUTCOME",
    "CLASS_LABEL",
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


@dataclass(frozen=True)
class PodSetSpec:
    name: str
    count: int
    requests: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
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
def _seconds(
    value: Any, src: str, line: int | None, fld: str, *, allow_zero: bool = True, limit: float = MAX_SECONDS
) -> float:
    if isinstance(value, bool) or value is None or value == "":
        raise InputError(
            "a time is required (seconds or a duration such as 90s, 30m, 2h)",
            source=src,
            line=line,
            field=fld,
        )
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
        raise InputError(
            msg if len(msg) < 300 else msg[:297] + "...", source=src, line=line, field=fld
        ) from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(
            f"must not be negative: {value}" if v < 0 else f"invalid time: {show(value)}",
            source=src,
            line=line,
            field=fld,
        )
    if v > limit:
        raise InputError(
            f"{show(value)} is more than {limit / 86400:g} days (a simulation covers at most {MAX_SECONDS / 86400:g} "
            "days)",
            source=src,
            line=line,
            field=fld,
        )
    return v


_NUMERAL = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")  # seconds as a number (1e3 too)


def seconds(value: Any, src: str, line: int | None, fld: str) -> float:
    """A time in seconds (a number or a duration such as ``90s``, ``2h``), between 0 and ``MAX_SECONDS``."""
    return _seconds(value, src, line, fld)


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
    from flexq.api.quantity import parse_quantity

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


def _template(
    path_text: Any, base: Path, src: str, line: int | None, cache: dict[str, tuple[str, str, Any]]
) -> tuple[str, str, Any]:
    """(text, name, parsed object) of a job manifest template, read and checked once per file name."""
    key = f"{base}\x00{path_text}"
    if isinstance(path_text, str) and key in cache:
        return cache[key]
    path = ref_path(base, path_text, src, "template", line)
    text = read_text(path, src, what="template", field="template", line=line)
    if not text.strip():
        raise InputError("the template is empty", source=str(path))
    # placeholders such as ${NAME} are substituted per job in the parsed object's strings
    obj = parse_yaml(text, str(path))
    if not isinstance(obj, dict):
        raise InputError("a template must hold one object", source=str(path))
    _check_template(obj, str(path))
    cache[key] = (text, str(path_text), obj)
    return cache[key]


def _check_template(obj: dict[str, Any], src: str) -> None:
    """The parts of a template the simulator fills in or reads must have their shapes (the API checks the rest):
    mappings where it adds labels and annotations, and pod counts within ``MAX_PODS``."""

    def mapping(value: Any, fld: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise InputError(f"must be a mapping, got {show(value)}", source=src, field=fld)
        return value

    meta = mapping(obj.get("metadata"), "metadata")
    mapping(meta.get("labels"), "metadata.labels")
    mapping(meta.get("annotations"), "metadata.annotations")
    spec = mapping(obj.get("spec"), "spec")
    if obj.get("kind") == "Job":
        if not isinstance(spec.get("template"), dict):
            raise InputError(
                "a Job template needs spec.template (the pod template)", source=src, field="spec.template"
            )
        tmeta = mapping(spec["template"].get("metadata"), "spec.template.metadata")
        mapping(tmeta.get("annotations"), "spec.template.metadata.annotations")
        for key in ("parallelism", "completions"):
            if spec.get(key) is not None:
                whole(spec[key], src, f"spec.{key}", 0, MAX_PODS)
    elif obj.get("kind") == "RayJob":
        cluster = mapping(spec.get("rayClusterSpec"), "spec.rayClusterSpec")
        groups = cluster.get("workerGroupSpecs") or []
        if not isinstance(groups, list):
            raise InputError("must be a list", source=src, field="spec.rayClusterSpec.workerGroupSpecs")
        for i, g in enumerate(groups):
            g = mapping(g, f"spec.rayClusterSpec.workerGroupSpecs[{i}]")
            for key in ("replicas", "minReplicas", "maxReplicas", "numOfHosts"):
                if g.get(key) is not None:
                    whole(g[key], src, f"spec.rayClusterSpec.workerGroupSpecs[{i}].{key}", 0, MAX_PODS)


def _job_from_row(
    row: dict[str, Any],
    index: int,
    src: str,
    line: int | None,
    base: Path,
    cache: dict[str, tuple[str, str, Any]],
) -> JobSpec:
    unknown = unknown_key(row, COLUMNS)
    if unknown:
        raise InputError(
            f"unknown column {unknown!r} (known: {', '.join(COLUMNS)})",
            source=src,
            line=line,
            field=unknown,
        )
    text = {
        k: string(row[k], src, k, line=line).strip()
        for k in ("queue", "kind", "name", "namespace", "priority", "template", "outcome", "class")
        if row.get(k) is not None
    }
    submit = _seconds(row.get("submit"), src, line, "submit")
    queue = text.get("queue", "")
    if not queue:
        raise InputError("a LocalQueue name is required", source=src, line=line, field="queue")
    raw_kind = text.get("kind") or "Job"
    kind = KINDS.get(raw_kind.lower())
    if kind is None:
        raise InputError(
            f"unknown kind {raw_kind[:80]!r} (RayJob, Job or Workload)", source=src, line=line, field="kind"
        )
    prio_class, prio_value = "", None
    if text.get("priority"):
        ptext = text["priority"]
        if ptext.lstrip("-+").isdecimal():
            if kind != "Workload":
                raise InputError(
                    "a number is a bare Workload's spec.priority; jobs take a priority class name",
                    source=src,
                    line=line,
                    field="priority",
                )
            prio_value = whole(ptext, src, "priority", *INT32, line=line)
        else:
            prio_class = ptext
    pod_sets = parse_podsets(row.get("podsets"), src, line)
    template, tsrc = "", ""
    for fld, value in (("class", text.get("class")), ("queue", queue), ("priority", prio_class)):
        if value and kind != "Workload" or fld == "class" and value:
            _label_value(value, src, line, fld)
    if text.get("template"):
        if kind == "Workload":
            raise InputError(
                "a bare Workload takes podsets, not a template", source=src, line=line, field="template"
            )
        template, tsrc, tobj = _template(text["template"], base, src, line, cache)
        if tobj.get("kind") != kind:
            raise InputError(
                f"the template {tsrc} is a {tobj.get('kind')!r}, this job is a {kind}",
                source=src,
                line=line,
                field="template",
            )
    elif not pod_sets:
        raise InputError("a job needs podsets or a template", source=src, line=line, field="podsets")
    if kind == "RayJob" and not template and len(pod_sets) < 2:
        raise InputError(
            "a RayJob without a template needs a head pod set and at least one worker pod set",
            source=src,
            line=line,
            field="podsets",
        )
    run = _seconds(row.get("run") if row.get("run") not in (None, "") else 60, src, line, "run")
    outcome = text.get("outcome") or "Succeeded"
    if outcome.lower() not in ("succeeded", "failed"):
        raise InputError(
            f"outcome must be Succeeded or Failed, got {outcome[:80]!r}",
            source=src,
            line=line,
            field="outcome",
        )
    ns = text.get("namespace") or "default"
    name = text.get("name") or f"{kind.lower()}-{index:05d}"
    _object_name(name, src, line, "name", check_dns1123_subdomain)
    _object_name(ns, src, line, "namespace", check_dns1123_label)
    return JobSpec(
        index=index,
        submit=submit,
        kind=kind,
        name=name,
        namespace=ns,
        queue=queue,
        priority_class=prio_class,
        priority=prio_value,
        pod_sets=pod_sets,
        template=template,
        template_source=tsrc,
        run=run,
        outcome=outcome.capitalize(),
        klass=text.get("class", ""),
        source=f"{src}:{line}" if line is not None else src,
    )


def _object_name(value: str, src: str, line: int | None, fld: str, check: Any) -> None:
    """``value`` names an object (or its namespace): Kubernetes' rule, checked before it is substituted."""
    try:
        check(value)
    except PydanticCustomError as exc:
        raise InputError(f"{show(value)}: {exc.message()}", source=src, line=line, field=fld) from None


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _label_value(value: str, src: str, line: int | None, fld: str) -> None:
    """``value`` goes into a label of the submitted object: Kubernetes' label value rule."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise InputError(
            f"{show(value)} is not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting "
            "and ending with a letter or digit)",
            source=src,
            line=line,
            field=fld,
        )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {k!r} given twice")
        out[k] = v
    return out


def _starts_with(path: Path, char: str) -> bool:
    """Whether the first character of ``path`` that is not white space (or a BOM) is ``char``."""
    try:
        with open_regular(path, str(path)) as f:
            head = f.read(4096)
    except (InputError, OSError):
        return False  # read_lines says why (a FIFO is refused there, not waited on here)
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(char.encode())


def _json_array(path: Path, src: str, field: str) -> list[Any]:
    text = read_text(path, src, what="trace", field=field, limit=64 * 1024 * 1024)
    try:
        data = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise InputError("not JSON: nested too deeply", source=str(path)) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"not JSON: {str(exc)[:200]}", source=str(path), line=line) from None
    if not isinstance(data, list):
        raise InputError(
            "a .json trace is one array of job objects (or one object per line)", source=str(path)
        )
    return data


def read_trace(path: str | Path, *, source: str = "", field: str = "trace") -> list[JobSpec]:
    """A CSV or JSONL trace (or a ``.json`` file holding one array of job objects, named by record in messages)
    -> jobs sorted by submit time (ties keep the file's order). CSV and JSONL are streamed: a line longer than
    1 MiB or more than ``MAX_JOBS`` jobs are refused as soon as they are seen."""
    p = Path(path)
    src = str(path)
    lines = read_lines(p, source or src, field=field)
    cache: dict[str, tuple[str, str, Any]] = {}
    jobs: list[JobSpec] = []

    def add(row: dict[str, Any], n: int | None, where: str = src) -> None:
        if len(jobs) >= MAX_JOBS:
            raise InputError(f"more than {MAX_JOBS:,} jobs in one trace", source=where, line=n)
        jobs.append(_job_from_row(row, len(jobs), where, n, p.parent, cache))

    if p.suffix.lower() == ".json" and _starts_with(p, "["):  # one JSON array of job objects
        records = _json_array(p, source or src, field)
        for i, row in enumerate(records):
            where = f"{src} [record {i + 1}]"
            if not isinstance(row, dict):
                raise InputError("each record must be a JSON object", source=where)
            add(row, None, where)
    elif p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        for n, raw in lines:
            if not raw.strip():
                continue
            try:
                row = json.loads(raw, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
            except RecursionError:
                raise InputError("not JSON: nested too deeply", source=src, line=n) from None
            except ValueError as exc:
                raise InputError(f"not JSON: {str(exc)[:200]}", source=src, line=n) from None
            if not isinstance(row, dict):
                raise InputError("each line must be a JSON object", source=src, line=n)
            add(row, n)
    else:
        reader = csv.reader(text + "\n" for _n, text in lines)
        try:
            header = next(reader, None)
            while header is not None and not any(c.strip() for c in header):
                header = next(reader, None)  # blank lines before the header
            if header is None:
                raise InputError("empty trace (a header line is required)", source=src, line=1)
            head_line = reader.line_num
            cols = [c.strip() for c in header]
            for col in cols:
                if col not in COLUMNS:
                    raise InputError(
                        f"unknown column {col[:80]!r} (known: {', '.join(COLUMNS)})",
                        source=src,
                        line=head_line,
                        field=col[:80],
                    )
                if cols.count(col) > 1:
                    raise InputError(f"duplicate column {col!r}", source=src, line=head_line, field=col)
            for col in ("submit", "queue"):
                if col not in cols:
                    raise InputError(
                        f"missing required column {col!r}", source=src, line=head_line, field=col
                    )
            for values in reader:
                if not values or (len(values) == 1 and not values[0].strip()):
                    continue  # a blank line (a line of commas is a record whose cells are empty)
                if len(values) > len(cols):
                    raise InputError(
                        f"{len(values)} values for {len(cols)} columns", source=src, line=reader.line_num
                    )
                clean = {k: v for k, v in zip(cols, values, strict=False) if v != ""}
                add(clean, reader.line_num)
        except csv.Error as exc:
            raise InputError(f"not valid CSV: {exc}", source=src, line=reader.line_num) from None
    if not jobs:
        raise InputError("the trace has no jobs", source=src)
    return sorted(jobs, key=lambda j: (j.submit, j.index))


# -- the generator -----------------------------------------------------------------------------------------------
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
    unknown = unknown_key(spec, GEN_KEYS)
    if unknown:
        raise InputError(
            f"unknown field {unknown!r} (known: {', '.join(sorted(GEN_KEYS))})",
            source=src,
            field=f"generator.{unknown}",
        )
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
    bad = unknown_key(diurnal, DIURNAL_KEYS)
    if bad:
        raise InputError(
            f"unknown field {bad!r} (known: {', '.join(sorted(DIURNAL_KEYS))})",
            source=src,
            field=f"generator.diurnal.{bad}",
        )
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
        bad = unknown_key(m, MIX_KEYS)
        if bad:
            raise InputError(
                f"unknown field {bad!r} (known: {', '.join(sorted(MIX_KEYS))})",
                source=src,
                field=f"{fld}.{bad}",
            )
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
def is_kueue_generator(doc: Any) -> bool:
    return isinstance(doc, dict) and "cohorts" in doc and "mix" not in doc


KUEUE_KEYS = {"cohorts", "resourceFlavor", "topology", "dra"}
COHORT_KEYS = {"className", "count", "queuesSets"}
QUEUES_KEYS = {
    "className",
    "count",
    "nominalQuota",
    "borrowingLimit",
    "reclaimWithinCohort",
    "withinClusterQueue",
    "deviceNominalQuota",
    "deviceBorrowingLimit",
    "workloadsSets",
}
WLSET_KEYS = {"count", "creationIntervalMs", "workloads"}
WLT_KEYS = {
    "className",
    "runtimeMs",
    "priority",
    "request",
    "podCount",
    "tasConstraint",
    "tasLevel",
    "sliceSize",
    "devices",
}
MAX_QUEUES = 10_000  # ClusterQueues one generator.yaml may create


def _section(value: Any, known: set[str], src: str, fld: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError("must be a mapping", source=src, field=fld)
    bad = unknown_key(value, known)
    if bad:
        raise InputError(
            f"unknown field {bad!r} (known: {', '.join(sorted(known))})", source=src, field=f"{fld}.{bad}"
        )
    return value


def _items(value: Any, src: str, fld: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError("must be a list", source=src, field=fld)
    return value


def _name_part(value: Any, default: str, src: str, fld: str) -> str:
    return default if value in (None, "") else string(value, src, fld)


def kueue_generator(doc: dict[str, Any], src: str, scale: float = 1.0) -> tuple[list[dict], list[JobSpec]]:
    """Kueue's ``generator.yaml`` (``test/performance/scheduler``), as upstream's runner reads it: a ResourceFlavor
    (``rf``), per cohort set ``count`` cohorts named ``<className>-<i>``, per queue set ``count`` ClusterQueues
    ``<className>-<setIdx>-<i>-<cohort>`` (cpu nominalQuota / borrowingLimit, the preemption policies), each with a
    Namespace and a LocalQueue of that name, and per workload set ``count`` rounds of its workloads, one every
    ``creationIntervalMs``, named ``<className>-<setIdx>-<round>-<i>``: bare Workloads with one pod set of
    one pod requesting ``request`` cpu (``podCount`` is read but, as upstream's runner does outside TAS, not used), ``spec.priority`` and the runtime label. ``scale`` shrinks
    every workload set's count (at least 1). TAS and DRA sections are refused; so are unknown fields, and a file
    that would create more than ``MAX_JOBS`` workloads or ``MAX_QUEUES`` ClusterQueues (counted before any is
    made)."""
    _section(doc, KUEUE_KEYS, src, "(top level)")
    for key in ("topology", "dra"):
        if doc.get(key):
            raise InputError(
                f"{key} (TAS/DRA) scenarios are not supported by flexq simulate", source=src, field=key
            )
    if not isinstance(scale, int | float) or not math.isfinite(scale) or scale <= 0:
        raise InputError(f"scale must be a positive number, got {scale!r}", source=src, field="scale")
    rf = doc.get("resourceFlavor") or {}
    if not isinstance(rf, dict):
        raise InputError("must be a mapping {name}", source=src, field="resourceFlavor")
    flavor = _name_part(rf.get("name"), "rf", src, "resourceFlavor.name")
    cohorts = doc.get("cohorts")
    if not isinstance(cohorts, list) or not cohorts:
        raise InputError("config must contain at least one cohort", source=src, field="cohorts")
    # check every field and count what would be made, before making anything
    total_queues = total_jobs = 0
    for ci, cset in enumerate(cohorts):
        cfld = f"cohorts[{ci}]"
        _section(cset, COHORT_KEYS, src, cfld)
        ccount = whole(cset.get("count", 1), src, f"{cfld}.count", 0, MAX_QUEUES)
        _name_part(cset.get("className"), "cohort", src, f"{cfld}.className")
        for qsi, qset in enumerate(_items(cset.get("queuesSets"), src, f"{cfld}.queuesSets")):
            fld = f"{cfld}.queuesSets[{qsi}]"
            _section(qset, QUEUES_KEYS, src, fld)
            qcount = whole(qset.get("count", 1), src, f"{fld}.count", 0, MAX_QUEUES)
            total_queues += ccount * qcount
            if total_queues > MAX_QUEUES:
                raise InputError(
                    f"more than {MAX_QUEUES:,} ClusterQueues in all", source=src, field=f"{fld}.count"
                )
            _name_part(qset.get("className"), "cq", src, f"{fld}.className")
            for key in ("nominalQuota", "borrowingLimit", "reclaimWithinCohort", "withinClusterQueue"):
                if qset.get(key) is not None:
                    string(qset[key], src, f"{fld}.{key}")
            for key in ("deviceNominalQuota", "deviceBorrowingLimit"):
                if qset.get(key):
                    raise InputError("DRA quotas are not supported", source=src, field=f"{fld}.{key}")
            for wsi, wset in enumerate(_items(qset.get("workloadsSets"), src, f"{fld}.workloadsSets")):
                wfld = f"{fld}.workloadsSets[{wsi}]"
                _section(wset, WLSET_KEYS, src, wfld)
                wcount = whole(wset.get("count", 1), src, f"{wfld}.count", 0, MAX_JOBS)
                interval = number(
                    wset.get("creationIntervalMs", 0), src, f"{wfld}.creationIntervalMs", 0, 1e12
                )
                templates = _items(wset.get("workloads"), src, f"{wfld}.workloads")
                rounds = max(1, int(wcount * scale))
                total_jobs += ccount * qcount * rounds * len(templates)
                if total_jobs > MAX_JOBS:
                    raise InputError(
                        f"more than {MAX_JOBS:,} workloads in all (use --scale)",
                        source=src,
                        field=f"{wfld}.count",
                    )
                if rounds * len(templates) * interval / 1000 > MAX_SECONDS:
                    raise InputError(
                        f"the workloads are created over more than {MAX_SECONDS / 86400:g} days",
                        source=src,
                        field=f"{wfld}.creationIntervalMs",
                    )
                for wi, wlt in enumerate(templates):
                    tfld = f"{wfld}.workloads[{wi}]"
                    _section(wlt, WLT_KEYS, src, tfld)
                    if wlt.get("tasLevel") or wlt.get("devices"):
                        raise InputError("TAS/DRA workloads are not supported", source=src, field=tfld)
                    _name_part(wlt.get("className"), "wl", src, f"{tfld}.className")
                    number(wlt.get("runtimeMs", 0), src, f"{tfld}.runtimeMs", 0, MAX_SECONDS * 1000)
                    whole(wlt.get("priority", 0), src, f"{tfld}.priority", *INT32)
                    whole(wlt.get("podCount") or 1, src, f"{tfld}.podCount", 1, MAX_PODS)
                    string(wlt.get("request", "1"), src, f"{tfld}.request")
    objs: list[dict] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}}
    ]
    jobs: list[JobSpec] = []
    for ci, cset in enumerate(cohorts):
        for c in range(int(cset.get("count", 1))):
            cohort = f"{cset.get('className') or 'cohort'}-{c}"
            for qsi, qset in enumerate(cset.get("queuesSets") or []):
                fld = f"cohorts[{ci}].queuesSets[{qsi}]"
                for q in range(int(qset.get("count", 1))):
                    name = f"{qset.get('className') or 'cq'}-{qsi}-{q}-{cohort}"
                    res: dict[str, Any] = {"name": "cpu", "nominalQuota": str(qset.get("nominalQuota", 0))}
                    if qset.get("borrowingLimit") not in (None, ""):
                        res["borrowingLimit"] = str(qset["borrowingLimit"])
                    pre = {k: qset[k] for k in ("reclaimWithinCohort", "withinClusterQueue") if qset.get(k)}
                    objs += [
                        {
                            "apiVersion": "kueue.x-k8s.io/v1beta2",
                            "kind": "ClusterQueue",
                            "metadata": {
                                "name": name,
                                "labels": {
                                    "kueue.x-k8s.io/performance-scheduler-class": str(
                                        qset.get("className") or "cq"
                                    )
                                },
                            },
                            "spec": {
                                "cohortName": cohort,
                                "namespaceSelector": {},
                                "preemption": pre,
                                "resourceGroups": [
                                    {
                                        "coveredResources": ["cpu"],
                                        "flavors": [{"name": flavor, "resources": [res]}],
                                    }
                                ],
                            },
                        },
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                        {
                            "apiVersion": "kueue.x-k8s.io/v1beta2",
                            "kind": "LocalQueue",
                            "metadata": {"name": name, "namespace": name},
                            "spec": {"clusterQueue": name},
                        },
                    ]
                    for wsi, wset in enumerate(qset.get("workloadsSets") or []):
                        wfld = f"{fld}.workloadsSets[{wsi}]"
                        interval = float(wset.get("creationIntervalMs", 0)) / 1000
                        templates = wset.get("workloads") or []
                        rounds = max(1, int(int(wset.get("count", 1)) * scale))
                        step = 0
                        for si in range(rounds):
                            for wi, wlt in enumerate(templates):
                                step += 1
                                cls = str(wlt.get("className") or "wl")
                                jobs.append(
                                    JobSpec(
                                        index=0,
                                        submit=round(step * interval, 6),
                                        kind="Workload",
                                        name=f"{cls}-{wsi}-{si}-{wi}",
                                        namespace=name,
                                        queue=name,
                                        priority=int(wlt.get("priority", 0)),
                                        pod_sets=(
                                            PodSetSpec(
                                                "main",
                                                1,  # podCount is TAS-only upstream: outside TAS one pod
                                                (("cpu", str(wlt.get("request", "1"))),),
                                            ),
                                        ),
                                        run=float(wlt.get("runtimeMs", 0)) / 1000,
                                        klass=cls,
                                        source=f"{src} ({wfld})",
                                    )
                                )
    jobs.sort(key=lambda j: (j.submit, j.namespace, j.name))
    return objs, [replace(j, index=i) for i, j in enumerate(jobs)]


# -- objects -----------------------------------------------------------------------------------------------------
def _container(name: str, requests: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    res = dict(requests)
    return {
        "name": name,
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": dict(res), "limits": dict(res)},
    }


_PLACEHOLDER = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
MAX_EXPANDED_BYTES = 8 * 1024 * 1024  # one object after its placeholders are substituted
MAX_VALUE_CHARS = 253  # a substituted value: an object name (a DNS subdomain) is the longest


class _Budget:
    """How many characters the substitution may still add to one object."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def _subst(text: str, env: dict[str, str], budget: _Budget) -> str:
    """``${VAR}`` and ``$VAR`` of ``env`` replaced (the longest name wins: ``$NAMESPACE`` is not ``$NAME`` +
    "SPACE"); other ``$`` words are left as they are (a shell line in a command keeps its ``$HOME``)."""

    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1) or m.group(2))
        if value is None:
            return m.group(0)
        budget.left -= len(value) - len(m.group(0))
        if budget.left < 0:
            raise OverflowError
        return value

    return _PLACEHOLDER.sub(one, text)


def _subst_obj(obj: Any, env: dict[str, str], budget: _Budget) -> Any:
    if isinstance(obj, str):
        return _subst(obj, env, budget) if "$" in obj else obj
    if isinstance(obj, dict):
        return {k: _subst_obj(v, env, budget) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_subst_obj(v, env, budget) for v in obj]
    return obj


def substitute(template: Any, env: dict[str, str], src: str) -> Any:
    """``template`` (a parsed object) with ``env`` substituted into its strings, on a copy. Every value is
    checked first (at most 253 characters, no control characters) and the object may grow to at most 8 MiB:
    a template of many placeholders cannot ask for gigabytes."""
    for key, value in env.items():
        if len(value) > MAX_VALUE_CHARS:
            raise InputError(
                f"the value substituted for ${{{key}}} is {len(value):,} characters long "
                f"(at most {MAX_VALUE_CHARS})",
                source=src,
                field=key,
            )
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise InputError(
                f"the value substituted for ${{{key}}} holds a control character", source=src, field=key
            )
    try:
        return _subst_obj(template, env, _Budget(MAX_EXPANDED_BYTES))
    except OverflowError:
        raise InputError(
            f"the template grows beyond {MAX_EXPANDED_BYTES // (1024 * 1024)} MiB once its placeholders "
            "are substituted",
            source=src,
        ) from None


_PARSED: dict[str, Any] = {}


def _parsed_template(text: str) -> Any:
    """The template parsed once (placeholders kept; substituted per job on a copy)."""
    if text not in _PARSED:
        if len(_PARSED) > 256:
            _PARSED.clear()
        _PARSED[text] = yaml.safe_load(text)
    return _PARSED[text]


def build_object(
    job: JobSpec, priorities: dict[str, int] | None = None, pod_priorities: dict[str, int] | None = None
) -> dict[str, Any]:
    """The object submitted for ``job``: queue and priority labels, the run time and outcome annotations the
    simulated executor reads (``twin.flexq.dev/run-seconds``, ``twin.flexq.dev/outcome``)."""
    ann = {ANN_RUN: f"{job.run:g}", ANN_OUTCOME: job.outcome}
    labels = {CLASS_LABEL: job.klass} if job.klass else {}
    if job.kind == "Workload":
        spec: dict[str, Any] = {
            "queueName": job.queue,
            "podSets": [
                {
                    "name": ps.name,
                    "count": ps.count,
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [_container("main", ps.requests)]}
                    },
                }
                for ps in job.pod_sets
            ],
        }
        if job.priority is not None:
            spec["priority"] = job.priority
        if job.priority_class and _is_pod_class(job.priority_class, priorities, pod_priorities):
            spec.update(
                priorityClassRef={
                    "group": "scheduling.k8s.io",
                    "kind": "PriorityClass",
                    "name": job.priority_class,
                },
                priority=(pod_priorities or {})[job.priority_class],
            )
        elif job.priority_class:  # v1beta2's reference (v1beta1: priorityClassName and priorityClassSource)
            spec.update(
                priorityClassRef={
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": job.priority_class,
                },
                priority=(priorities or {}).get(job.priority_class, 0),
            )
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": job.name, "namespace": job.namespace, "labels": labels, "annotations": ann},
            "spec": spec,
        }
    if job.template:
        env = {"NAME": job.name, "JOB_ID": str(job.index), "QUEUE": job.queue, "NAMESPACE": job.namespace}
        obj = substitute(_parsed_template(job.template), env, job.template_source or job.source)
        if not isinstance(obj, dict):
            raise InputError("a template must hold one object", source=job.template_source)
        if obj.get("kind") != job.kind:
            raise InputError(
                f"the template is a {obj.get('kind')!r}, the trace says {job.kind}",
                source=job.template_source,
                field="kind",
            )
    elif job.kind == "Job":
        ps = job.pod_sets[0]
        obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {},
            "spec": {
                "parallelism": ps.count,
                "completions": ps.count,
                "backoffLimit": 0,
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [_container("main", ps.requests)]}
                },
            },
        }
    else:
        head, workers = job.pod_sets[0], job.pod_sets[1:]
        obj = {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {},
            "spec": {
                "entrypoint": "python main.py",
                "shutdownAfterJobFinishes": True,
                "rayClusterSpec": {
                    "headGroupSpec": {
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [_container("ray-head", head.requests)]}},
                    },
                    "workerGroupSpecs": [
                        {
                            "groupName": w.name,
                            "replicas": w.count,
                            "minReplicas": w.count,
                            "maxReplicas": w.count,
                            "rayStartParams": {},
                            "template": {"spec": {"containers": [_container("ray-worker", w.requests)]}},
                        }
                        for w in workers
                    ],
                },
            },
        }
    meta = obj.setdefault("metadata", {})
    meta["name"] = job.name
    meta["namespace"] = job.namespace
    meta["labels"] = {**(meta.get("labels") or {}), **labels, QUEUE_LABEL: job.queue}
    if job.priority_class and _is_pod_class(job.priority_class, priorities, pod_priorities):
        for tmpl in _pod_templates(obj):  # Kueue takes the priority from the pods' PriorityClass
            tspec = tmpl.setdefault("spec", {})
            if isinstance(tspec, dict):
                tspec["priorityClassName"] = job.priority_class
    elif job.priority_class:
        meta["labels"][PRIORITY_LABEL] = job.priority_class
    meta["annotations"] = {**(meta.get("annotations") or {}), **ann}
    if job.kind == "Job":  # the simulated executor reads the pod's annotations
        tmeta = obj["spec"]["template"].setdefault("metadata", {})
        tmeta["annotations"] = {**(tmeta.get("annotations") or {}), **ann}
    return obj


def _is_pod_class(
    name: str, priorities: dict[str, int] | None, pod_priorities: dict[str, int] | None
) -> bool:
    """Whether ``priority`` names a scheduling.k8s.io PriorityClass rather than a WorkloadPriorityClass (a
    WorkloadPriorityClass of the same name wins, as Kueue's label does)."""
    return name in (pod_priorities or {}) and name not in (priorities or {})


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a Job or a RayJob (head and worker groups)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        tmpl = spec.get("template")
        return [tmpl] if isinstance(tmpl, dict) else []
    rc = spec.get("rayClusterSpec") or {}
    groups = [rc.get("headGroupSpec") or {}, *(rc.get("workerGroupSpecs") or [])]
    return [g["template"] for g in groups if isinstance(g, dict) and isinstance(g.get("template"), dict)]
