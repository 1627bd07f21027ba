"""The trace readers: CSV, JSONL or one JSON array of records, streamed and bounded, each row checked into a
``JobSpec`` with messages naming the file, the line (or record) and the column; a row's ``template`` is a
manifest file relative to the trace, parsed and checked once.

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
Every error names the file, the line and the field.

Must not import flexq.http.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from pydantic_core import PydanticCustomError

from flexq.api.base import check_dns1123_label, check_dns1123_subdomain
from flexq.errors import InputError
from flexq.simulate.inputs import (
    INT32,
    MAX_JOBS,
    MAX_PODS,
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
from flexq.simulate.jobs import COLUMNS, KINDS, JobSpec, parse_podsets, seconds

__all__ = ["read_trace"]


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


def job_from_row(
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
    submit = seconds(row.get("submit"), src, line, "submit")
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
    run = seconds(row.get("run") if row.get("run") not in (None, "") else 60, src, line, "run")
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
    check_object_name(name, src, line, "name", check_dns1123_subdomain)
    check_object_name(ns, src, line, "namespace", check_dns1123_label)
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


def check_object_name(value: str, src: str, line: int | None, fld: str, check: Any) -> None:
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
        jobs.append(job_from_row(row, len(jobs), where, n, p.parent, cache))

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
