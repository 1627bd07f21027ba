"""The traffic of a simulation, in one place: jobs with a submit time, read from a trace or drawn by a generator.

The parts live in their own modules: ``jobs`` (``JobSpec``, pod sets, durations, the trace's columns), ``trace``
(the CSV / JSONL / JSON readers), ``generator`` (the seeded arrival process and job mixes), ``kueue_generator``
(Kueue's perf-harness ``generator.yaml``) and ``objects`` (``build_object``: a job as the object submitted).

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

from flexq.simulate.generator import generate
from flexq.simulate.jobs import (
    ANN_OUTCOME,
    ANN_RUN,
    CLASS_LABEL,
    COLUMNS,
    KINDS,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    JobSpec,
    PodSetSpec,
    parse_podsets,
    seconds,
)
from flexq.simulate.kueue_generator import is_kueue_generator, kueue_generator
from flexq.simulate.objects import build_object, substitute
from flexq.simulate.trace import read_trace

__all__ = [
    "PodSetSpec",
    "JobSpec",
    "read_trace",
    "generate",
    "is_kueue_generator",
    "kueue_generator",
    "build_object",
    "substitute",
    "seconds",
    "KINDS",
    "COLUMNS",
    "ANN_RUN",
    "ANN_OUTCOME",
    "CLASS_LABEL",
    "QUEUE_LABEL",
    "PRIORITY_LABEL",
    "parse_podsets",
]
