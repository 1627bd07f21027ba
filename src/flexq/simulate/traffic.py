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

Must not import flexq.http.
"""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from flexq.api.capacity_profile import Delay, parse_duration
from flexq.errors import InputError
from flexq.gke.capacity import sample_delay

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
def _seconds(value: Any, src: str, line: int | None, fld: str, *, allow_zero: bool = True) -> float:
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
        else:
            text = str(value).strip()
            v = float(text) if text.lstrip("-").replace(".", "", 1).isdigit() else parse_duration(text)
    except ValueError as exc:
        raise InputError(str(exc), source=src, line=line, field=fld) from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(
            f"must not be negative: {value}" if v < 0 else f"invalid time: {value}",
            source=src,
            line=line,
            field=fld,
        )
    return v


def parse_podsets(value: Any, src: str, line: int | None) -> tuple[PodSetSpec, ...]:
    """``name:count:res=qty,...;...`` (CSV) or a list of ``{name, count, requests}`` (JSONL/YAML)."""
    if value in (None, "", []):
        return ()
    items: list[dict[str, Any]] = []
    if isinstance(value, str):
        for part in value.split(";"):
            part = part.strip()
            if not part:
                continue
            bits = part.split(":")
            if len(bits) != 3:
                raise InputError(
                    f"pod set {part!r} is not name:count:resource=quantity,...",
                    source=src,
                    line=line,
                    field="podsets",
                )
            reqs = {}
            for kv in bits[2].split(","):
                k, sep, v = kv.partition("=")
                if not sep or not k.strip() or not v.strip():
                    raise InputError(
                        f"request {kv!r} is not resource=quantity", source=src, line=line, field="podsets"
                    )
                reqs[k.strip()] = v.strip()
            items.append({"name": bits[0].strip(), "count": bits[1].strip(), "requests": reqs})
    elif isinstance(value, list):
        items = value
    else:
        raise InputError("must be a list of pod sets", source=src, line=line, field="podsets")
    from flexq.api.quantity import parse_quantity

    out = []
    for i, ps in enumerate(items):
        fld = f"podsets[{i}]"
        if not isinstance(ps, dict):
            raise InputError(
                "a pod set is an object {name, count, requests}", source=src, line=line, field=fld
            )
        unknown = sorted(set(ps) - {"name", "count", "requests"})
        if unknown:
            raise InputError(
                f"unknown field {unknown[0]!r} (known: name, count, requests)",
                source=src,
                line=line,
                field=fld,
            )
        try:
            count = int(ps.get("count", 1))
        except (TypeError, ValueError):
            raise InputError(
                f"count must be a whole number, got {ps.get('count')!r}",
                source=src,
                line=line,
                field=f"{fld}.count",
            ) from None
        if count < 1:
            raise InputError(
                f"count must be at least 1, got {count}", source=src, line=line, field=f"{fld}.count"
            )
        reqs = ps.get("requests") or {}
        if not isinstance(reqs, dict):
            raise InputError(
                "requests must be a map of resource to quantity",
                source=src,
                line=line,
                field=f"{fld}.requests",
            )
        for k, v in reqs.items():
            try:
                q = parse_quantity(str(v))
            except (ValueError, TypeError, Exception):
                raise InputError(
                    f"invalid quantity {v!r}", source=src, line=line, field=f"{fld}.requests.{k}"
                ) from None
            if q < 0:
                raise InputError(
                    f"quantity must not be negative: {v}", source=src, line=line, field=f"{fld}.requests.{k}"
                )
        out.append(
            PodSetSpec(
                str(ps.get("name") or f"ps{i}"),
                count,
                tuple(sorted((str(k), str(v)) for k, v in reqs.items())),
            )
        )
    return tuple(out)


def _template(
    path_text: str, base: Path, src: str, line: int | None, cache: dict[str, str]
) -> tuple[str, str]:
    path = (base / path_text).resolve() if not Path(path_text).is_absolute() else Path(path_text)
    key = str(path)
    if key not in cache:
        try:
            cache[key] = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot read template {path_text}: {exc.strerror}", source=src, line=line, field="template"
            ) from None
    return cache[key], path_text


def _job_from_row(
    row: dict[str, Any], index: int, src: str, line: int, base: Path, cache: dict[str, str]
) -> JobSpec:
    unknown = sorted(k for k in row if k not in COLUMNS)
    if unknown:
        raise InputError(
            f"unknown column {unknown[0]!r} (known: {', '.join(COLUMNS)})",
            source=src,
            line=line,
            field=unknown[0],
        )
    submit = _seconds(row.get("submit"), src, line, "submit")
    queue = str(row.get("queue") or "").strip()
    if not queue:
        raise InputError("a LocalQueue name is required", source=src, line=line, field="queue")
    raw_kind = str(row.get("kind") or "Job").strip()
    kind = KINDS.get(raw_kind.lower())
    if kind is None:
        raise InputError(
            f"unknown kind {raw_kind!r} (RayJob, Job or Workload)", source=src, line=line, field="kind"
        )
    prio = row.get("priority")
    prio_class, prio_value = "", None
    if prio not in (None, ""):
        text = str(prio).strip()
        if text.lstrip("-").isdigit():
            if kind != "Workload":
                raise InputError(
                    "a number is a bare Workload's spec.priority; jobs take a priority class name",
                    source=src,
                    line=line,
                    field="priority",
                )
            prio_value = int(text)
        else:
            prio_class = text
    pod_sets = parse_podsets(row.get("podsets"), src, line)
    template, tsrc = "", ""
    if row.get("template"):
        if kind == "Workload":
            raise InputError(
                "a bare Workload takes podsets, not a template", source=src, line=line, field="template"
            )
        template, tsrc = _template(str(row["template"]), base, src, line, cache)
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
    outcome = str(row.get("outcome") or "Succeeded").strip()
    if outcome.lower() not in ("succeeded", "failed"):
        raise InputError(
            f"outcome must be Succeeded or Failed, got {outcome!r}", source=src, line=line, field="outcome"
        )
    ns = str(row.get("namespace") or "default").strip()
    name = str(row.get("name") or "").strip() or f"{kind.lower()}-{index:05d}"
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
        klass=str(row.get("class") or ""),
        source=f"{src}:{line}",
    )


def read_trace(path: str | Path) -> list[JobSpec]:
    """A CSV or JSONL trace -> jobs sorted by submit time (ties keep the file's order)."""
    p = Path(path)
    src = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the trace: {exc.strerror}", source=src) from None
    cache: dict[str, str] = {}
    jobs: list[JobSpec] = []
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        for n, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError as exc:
                raise InputError(f"not JSON: {exc}", source=src, line=n) from None
            if not isinstance(row, dict):
                raise InputError("each line must be a JSON object", source=src, line=n)
            jobs.append(_job_from_row(row, len(jobs), src, n, p.parent, cache))
    else:
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames:
            raise InputError("empty trace (a header line is required)", source=src, line=1)
        for col in reader.fieldnames:
            if col.strip() not in COLUMNS:
                raise InputError(
                    f"unknown column {col!r} (known: {', '.join(COLUMNS)})", source=src, line=1, field=col
                )
        for row in reader:
            if None in row:
                raise InputError("more values than columns", source=src, line=reader.line_num)
            clean = {k.strip(): v for k, v in row.items() if v is not None and v != ""}
            if not clean:
                continue
            jobs.append(_job_from_row(clean, len(jobs), src, reader.line_num, p.parent, cache))
    if not jobs:
        raise InputError("the trace has no jobs", source=src)
    return sorted(jobs, key=lambda j: (j.submit, j.index))


# -- the generator -----------------------------------------------------------------------------------------------
def _delay(value: Any, src: str, fld: str) -> Delay:
    if isinstance(value, int | float | str):
        value = {"fixed": value}
    try:
        return Delay.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise InputError(err["msg"], source=src, field=f"{fld}.{where}" if where else fld) from None


GEN_KEYS = {"seed", "duration", "arrivals", "mix", "count"}
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


def generate(spec: dict[str, Any], seed: int, src: str, base: Path) -> list[JobSpec]:
    """Jobs drawn from a generator spec (seeded by the run's seed and the spec's own ``seed``)::

    duration: 7d                 # submissions stop here (or `count`)
    arrivals: {exponential: {mean: 2m}}          # inter-arrival time: any delay of a capacity profile
    diurnal: {busyHours: [8, 20], busyFactor: 3, weekend: 0.3}   # optional: more in working hours
    mix:
    - {weight: 3, kind: RayJob, template: rayjob.yaml, queue: user-queue, run: {lognormal: {median: 8m, sigma: 1}}}
    - {weight: 1, kind: Job, podsets: "main:1:cpu=4", queue: user-queue, run: 30m, failed: 0.05}
    """
    unknown = sorted(set(spec) - GEN_KEYS - {"diurnal"})
    if unknown:
        raise InputError(
            f"unknown field {unknown[0]!r} (known: {', '.join(sorted(GEN_KEYS | {'diurnal'}))})",
            source=src,
            field=f"generator.{unknown[0]}",
        )
    duration = _seconds(spec["duration"], src, None, "generator.duration") if "duration" in spec else None
    count = spec.get("count")
    if duration is None and count is None:
        raise InputError("a generator needs `duration` or `count`", source=src, field="generator")
    if count is not None and (not isinstance(count, int) or count < 1):
        raise InputError("count must be a positive whole number", source=src, field="generator.count")
    if "arrivals" not in spec:
        raise InputError("an arrival process is required", source=src, field="generator.arrivals")
    arrivals = _delay(spec["arrivals"], src, "generator.arrivals")
    mixes = spec.get("mix") or []
    if not isinstance(mixes, list) or not mixes:
        raise InputError("at least one job shape is required", source=src, field="generator.mix")
    diurnal = spec.get("diurnal") or {}
    cache: dict[str, str] = {}
    shapes: list[tuple[float, JobSpec, Delay, float]] = []
    for i, m in enumerate(mixes):
        fld = f"generator.mix[{i}]"
        if not isinstance(m, dict):
            raise InputError("a job shape is an object", source=src, field=fld)
        bad = sorted(set(m) - MIX_KEYS)
        if bad:
            raise InputError(
                f"unknown field {bad[0]!r} (known: {', '.join(sorted(MIX_KEYS))})",
                source=src,
                field=f"{fld}.{bad[0]}",
            )
        row = {k: m[k] for k in ("kind", "queue", "namespace", "priority", "template", "class") if k in m}
        row["podsets"] = m.get("podsets")
        row["submit"] = 0
        try:
            proto = _job_from_row(row, 0, src, 0, base, cache)
        except InputError as exc:
            raise InputError(exc.message, source=src, field=f"{fld}.{exc.field}") from None
        weight = float(m.get("weight", 1))
        if weight < 0:
            raise InputError("weight must not be negative", source=src, field=f"{fld}.weight")
        failed = float(m.get("failed", 0))
        if not 0 <= failed <= 1:
            raise InputError("failed is a probability between 0 and 1", source=src, field=f"{fld}.failed")
        shapes.append(
            (
                weight,
                replace(proto, extra={"prefix": m.get("name") or proto.kind.lower()}),
                _delay(m.get("run", 60), src, f"{fld}.run"),
                failed,
            )
        )
    total_w = sum(s[0] for s in shapes)
    if total_w <= 0:
        raise InputError("the weights add up to zero", source=src, field="generator.mix")
    rng = random.Random(f"flexq-simulate:{spec.get('seed', 0)}:{seed}")
    busy = diurnal.get("busyHours", [8, 20])
    busy_factor = float(diurnal.get("busyFactor", 1))
    weekend = float(diurnal.get("weekend", 1))
    jobs: list[JobSpec] = []
    t = 0.0
    while True:
        nxt = sample_delay(arrivals, t, 0.0, rng)
        if nxt is None:
            break
        t = nxt
        if duration is not None and t >= duration:
            break
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
        run_s = sample_delay(run, 0.0, 0.0, rng) or 0.0
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


def kueue_generator(doc: dict[str, Any], src: str, scale: float = 1.0) -> tuple[list[dict], list[JobSpec]]:
    """Kueue's ``generator.yaml`` (``test/performance/scheduler``), as upstream's runner reads it: a ResourceFlavor
    (``rf``), per cohort set ``count`` cohorts named ``<className>-<i>``, per queue set ``count`` ClusterQueues
    ``<className>-<setIdx>-<i>-<cohort>`` (cpu nominalQuota / borrowingLimit, the preemption policies), each with a
    Namespace and a LocalQueue of that name, and per workload set ``count`` rounds of its workloads, one every
    ``creationIntervalMs``, named ``<className>-<setIdx>-<round>-<i>``: bare Workloads with one pod set of
    ``podCount`` pods requesting ``request`` cpu, ``spec.priority`` and the runtime label. ``scale`` shrinks
    every workload set's count (at least 1). TAS and DRA sections are refused."""
    for key in ("topology", "dra"):
        if doc.get(key):
            raise InputError(
                f"{key} (TAS/DRA) scenarios are not supported by flexq simulate", source=src, field=key
            )
    flavor = ((doc.get("resourceFlavor") or {}).get("name")) or "rf"
    objs: list[dict] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}}
    ]
    jobs: list[JobSpec] = []
    cohorts = doc.get("cohorts")
    if not isinstance(cohorts, list) or not cohorts:
        raise InputError("config must contain at least one cohort", source=src, field="cohorts")
    for ci, cset in enumerate(cohorts):
        for c in range(int(cset.get("count", 1))):
            cohort = f"{cset.get('className', 'cohort')}-{c}"
            for qsi, qset in enumerate(cset.get("queuesSets") or []):
                fld = f"cohorts[{ci}].queuesSets[{qsi}]"
                for q in range(int(qset.get("count", 1))):
                    name = f"{qset.get('className', 'cq')}-{qsi}-{q}-{cohort}"
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
                                        qset.get("className", "cq")
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
                                if wlt.get("tasLevel") or wlt.get("devices"):
                                    raise InputError(
                                        "TAS/DRA workloads are not supported",
                                        source=src,
                                        field=f"{wfld}.workloads[{wi}]",
                                    )
                                cls = str(wlt.get("className", "wl"))
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
                                                int(wlt.get("podCount") or 1),
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


def _subst(text: str, env: dict[str, str]) -> str:
    for k, v in env.items():
        text = text.replace("${" + k + "}", v).replace("$" + k, v)
    return text


_PARSED: dict[str, Any] = {}


def _subst_obj(obj: Any, env: dict[str, str]) -> Any:
    if isinstance(obj, str):
        return _subst(obj, env) if "$" in obj else obj
    if isinstance(obj, dict):
        return {k: _subst_obj(v, env) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_subst_obj(v, env) for v in obj]
    return obj


def _parsed_template(text: str) -> Any:
    """The template parsed once (placeholders kept; substituted per job on a copy)."""
    if text not in _PARSED:
        if len(_PARSED) > 256:
            _PARSED.clear()
        _PARSED[text] = yaml.safe_load(text)
    return _PARSED[text]


def build_object(job: JobSpec, priorities: dict[str, int] | None = None) -> dict[str, Any]:
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
        if job.priority_class:
            spec.update(
                priorityClassName=job.priority_class,
                priorityClassSource="kueue.x-k8s.io/workloadpriorityclass",
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
        obj = _subst_obj(_parsed_template(job.template), env)
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
    if job.priority_class:
        meta["labels"][PRIORITY_LABEL] = job.priority_class
    meta["annotations"] = {**(meta.get("annotations") or {}), **ann}
    if job.kind == "Job":  # the simulated executor reads the pod's annotations
        tmeta = obj["spec"]["template"].setdefault("metadata", {})
        tmeta["annotations"] = {**(tmeta.get("annotations") or {}), **ann}
    return obj
