"""``flexq simulate`` against hostile and unusual input: every bad file stops before simulating with
``flexq.errors.InputError`` naming the file and the line or field (exit status 2 and one line, no traceback, on
the command line); valid-but-unusual input runs; nothing hangs (each case runs under an alarm).

Table-driven cases for each input (simulation file, CSV/JSONL trace, job template, generator, Kueue's
``generator.yaml``, cluster, capacity profile, manifests), then seeded random mutations of valid examples."""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexq
from flexq.cli.main import main
from flexq.errors import InputError
from flexq.simulate import load_study, preflight
from flexq.simulate.generator import generate
from flexq.simulate.jobs import COLUMNS
from flexq.simulate.trace import read_trace

from .conftest import write_study

ROOT = Path(__file__).resolve().parents[2]


class CaseTimeout(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail the case (instead of hanging the suite) when it spends ``seconds`` of CPU, or six times as long in
    wall time (a case that waits: a read on a FIFO). CPU time, not wall time, for the first: on two cores shared
    by six workers a case of 0.35 s once ran past 10 s of wall time."""

    def fire(*_: Any) -> None:
        raise CaseTimeout(f"ran past {seconds} s of CPU or {6 * seconds} s")

    old = {sig: signal.signal(sig, fire) for sig in (signal.SIGALRM, signal.SIGPROF)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.alarm(6 * seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        for sig, handler in old.items():
            signal.signal(sig, handler)


JOB_TEMPLATE = """apiVersion: batch/v1
kind: Job
metadata: {name: x, labels: {team: "${QUEUE}"}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
"""
TRACE = "submit,queue,kind,podsets,run,class\n0,q,Job,main:1:cpu=1,30,a\n5,q,Workload,main:2:cpu=1,1m,b\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
DEEP = "a: " + "[" * 5000 + "]" * 5000 + "\n"


def make(root: Path, doc: dict[str, Any] | None = None, files: dict[str, str | bytes] | None = None) -> Path:
    """A small study (one ClusterQueue of 4 cpu, LocalQueue `q`, no cluster: fast) with ``doc`` merged in."""
    texts = {"trace.csv": TRACE, "job.yaml": JOB_TEMPLATE}
    d = write_study(
        root, {"name": "fuzz", "seed": 1, "until": "1h", "trace": "trace.csv", **(doc or {})}, 4, texts
    )
    for k, v in (files or {}).items():  # after write_study: a case may replace simulation.yaml itself
        if isinstance(v, bytes):
            (d / k).write_bytes(v)
        else:
            (d / k).write_text(v, encoding="utf-8")
    return d


def refused(study: Path | str, *where: str, run: bool = False, seconds: int = 20) -> InputError:
    """Loading (and preflighting, or running) ``study`` raises InputError naming every part of ``where``."""
    with deadline(seconds), pytest.raises(InputError) as err:
        if run:
            flexq.simulate(study, workers=1, plots=False)
        else:
            preflight(load_study(study))
    text = str(err.value)
    for w in where:
        assert w in text, text
    assert len(text) < 2000 and "\n" not in text.strip(), text
    return err.value


# -- bad input: each refused with the file and the line or field --------------------------------------------------
STUDY_CASES = [
    ({"seed": "abc"}, "simulation.yaml (seed)", "whole number"),
    ({"seed": float("nan")}, "simulation.yaml (seed)", ""),
    ({"replicas": 10**9}, "simulation.yaml (replicas)", "at most"),
    ({"replicas": 0}, "simulation.yaml (replicas)", "at least 1"),
    ({"replicas": [1]}, "simulation.yaml (replicas)", ""),
    ({"until": 10**12}, "simulation.yaml (until)", "366 days"),
    ({"until": float("nan")}, "simulation.yaml", "until"),
    ({"until": "forever"}, "simulation.yaml (until)", "invalid duration"),
    ({"scale": "big"}, "simulation.yaml (scale)", "finite number"),
    ({"scale": -1}, "simulation.yaml (scale)", "at least"),
    ({"keepFinished": "no"}, "simulation.yaml (keepFinished)", "true or false"),
    ({"colour": "red"}, "simulation.yaml (colour)", "unknown field"),
    ({1: "x"}, "simulation.yaml (1)", "unknown field"),
    ({"name": {"a": 1}}, "simulation.yaml (name)", "must be text"),
    ({"trace": "../../../etc/passwd"}, "simulation.yaml (trace)", "outside the study"),
    ({"trace": "/etc/hostname"}, "simulation.yaml (trace)", "relative"),
    ({"trace": None}, "simulation.yaml (trace)", "file name"),
    ({"manifests": ["../queues.yaml"]}, "simulation.yaml (manifests[0])", "outside"),
    ({"manifests": ["nope.yaml"]}, "simulation.yaml (manifests[0])", "cannot read manifest"),
    ({"capacity": "../x.yaml"}, "simulation.yaml (capacity)", "outside"),
    ({"capacity": "nonsense"}, "simulation.yaml (capacity)", "neither a named profile"),
    ({"capacity": {"rules": [{"available": -1}]}}, "simulation.yaml (capacity", "negative"),
    ({"capacity": {"defaults": {"queueWait": {"lognormal": {"median": 1, "sigma": 1e300}}}}}, "capacity", ""),
    ({"capacity": {"defaults": {"queueWait": {"fixed": "9" * 400 + "d"}}}}, "capacity", "too large"),
    ({"settings": {"turbo": True}}, "simulation.yaml (settings.turbo)", "unknown setting"),
    (
        {"settings": {"fallback": {"grace_seconds": "abc"}}},
        "(settings.fallback.grace_seconds)",
        "finite number",
    ),
    (
        {"settings": {"fallback": {"backoff_seconds": -1}}},
        "(settings.fallback.backoff_seconds)",
        "at least 0",
    ),
    ({"settings": {"fallback": {"all_queues": 1}}}, "(settings.fallback.all_queues)", "true or false"),
    (
        {"settings": {"fallback": {"pool_limits": {"dws-pool": -4}}}},
        "(settings.fallback.pool_limits.dws-pool)",
        "",
    ),
    ({"variants": [{"name": "a", "settings": {"fallback": "yes"}}]}, "(variants[0].settings.fallback)", ""),
    ({"variants": [{"name": "a", "capacity": "nope"}]}, "(variants[0].capacity)", "named profile"),
    ({"cluster": "cl.yaml"}, "simulation.yaml (cluster)", "cannot read cluster file"),
    (
        {
            "cluster": {"nodePools": [{"name": "p", "machineType": "n2-standard-8"}]},
            "capacity": {"operations": {"createCluster": "300d"}},
        },
        "(cluster (request 1: POST",
        "did not finish in 14 simulated hours",
    ),
    ({"variants": [{"name": "../../x"}]}, "simulation.yaml (variants[0].name)", "output files"),
    ({"variants": [{"name": "a"}, {"name": "a"}]}, "simulation.yaml (variants[1].name)", "duplicate"),
    ({"variants": [{"name": "a"}] * 101}, "simulation.yaml (variants)", "more than 100"),
    (
        {"cluster": {"nodePools": [{"name": "p", "machineType": "n2-standard-8", "nodes": 10**9}]}},
        "nodes",
        "at most",
    ),
    ({"cluster": {"nodePools": [{"name": "p", "machineType": "n2-standard-8", "nodes": "x"}]}}, "nodes", ""),
    (
        {
            "cluster": {
                "nodePools": [
                    {"name": "p", "machineType": "n2-standard-8", "autoscaling": {"min": 5, "max": 2}}
                ]
            }
        },
        "autoscaling.max",
        "below min",
    ),
    (
        {"cluster": {"nodePools": [{"name": "p", "machineType": "n2-standard-8", "autoscaling": 3}]}},
        "autoscaling",
        "",
    ),
    (
        {"cluster": {"nodePools": [{"name": "p", "machineType": "n2-standard-8", "spot": "yes"}]}},
        "spot",
        "true or false",
    ),
    ({"cluster": {"addons": "RayOperator"}}, "cluster.addons", "list"),
    (
        {"cluster": {"requests": [{"path": "/v1/projects/p/locations/l/clusters", "body": {"cluster": 5}}]}},
        "request 1",
        "",
    ),
    ({"cluster": {"requests": [{"path": "x"}]}}, "cluster.requests[0]", "absolute path"),
]


@pytest.mark.parametrize("doc, where, message", STUDY_CASES, ids=[str(i) for i in range(len(STUDY_CASES))])
def test_bad_simulation_file_fields_are_named(tmp_path, doc, where, message) -> None:
    refused(make(tmp_path / "s", doc), where, message)


FILE_CASES = {
    # the simulation file itself
    "study-empty": ("simulation.yaml", "", ["simulation.yaml", "YAML mapping"]),
    "study-binary": ("simulation.yaml", b"name: \xff\xfe\n", ["simulation.yaml:1", "not UTF-8"]),
    "study-bomb": ("simulation.yaml", BOMB, ["simulation.yaml", "larger than the limit"]),
    "study-deep": ("simulation.yaml", DEEP, ["simulation.yaml", ""]),
    "study-dup-key": (
        "simulation.yaml",
        "trace: trace.csv\ntrace: other.csv\n",
        ["simulation.yaml:2", "already set"],
    ),
    "study-two-docs": (
        "simulation.yaml",
        "trace: trace.csv\n---\nname: x\n",
        ["simulation.yaml", "not valid YAML"],
    ),
    "study-bad-yaml": ("simulation.yaml", "trace: [trace.csv\n", ["simulation.yaml", "not valid YAML"]),
    "study-list": ("simulation.yaml", "- trace: trace.csv\n", ["simulation.yaml", "YAML mapping"]),
    "study-50MB": (
        "simulation.yaml",
        "name: " + "a" * (9 * 1024 * 1024) + "\n",
        ["simulation.yaml", "larger than 8 MiB"],
    ),
    # the trace
    "csv-empty": ("trace.csv", "", ["trace.csv:1", "header"]),
    "csv-header-only": ("trace.csv", "submit,queue,podsets\n", ["trace.csv", "no jobs"]),
    # a line of commas is a record whose cells are empty, not a blank line (hypothesis found it read as "no jobs")
    "csv-empty-cells": ("trace.csv", "submit,queue,podsets\n,,\n", ["trace.csv:2 (submit)"]),
    "csv-unknown-column": (
        "trace.csv",
        "submit,queue,podsets,colour\n0,q,main:1:cpu=1,red\n",
        ["trace.csv:1 (colour)"],
    ),
    "csv-duplicate-column": (
        "trace.csv",
        "submit,queue,submit\n0,q,1\n",
        ["trace.csv:1 (submit)", "duplicate column"],
    ),
    "csv-missing-queue": (
        "trace.csv",
        "submit,podsets\n0,main:1:cpu=1\n",
        ["trace.csv:1 (queue)", "missing required"],
    ),
    "csv-missing-submit": (
        "trace.csv",
        "queue,podsets\nq,main:1:cpu=1\n",
        ["trace.csv:1 (submit)", "missing required"],
    ),
    "csv-binary": ("trace.csv", b"submit,queue,podsets\n0,q,\xff\n", ["trace.csv:2", "not UTF-8"]),
    "csv-50MB-line": (
        "trace.csv",
        "submit,queue,name\n0,q," + "a" * (50 * 1024 * 1024) + "\n",
        ["trace.csv:2", "longer than"],
    ),
    "csv-200KB-field": (
        "trace.csv",
        "submit,queue,name\n0,q," + "a" * 200_000 + "\n",
        ["trace.csv:2", "CSV"],
    ),
    "csv-extra-values": (
        "trace.csv",
        "submit,queue,podsets\n0,q,main:1:cpu=1,x\n",
        ["trace.csv:2", "4 values"],
    ),
    "csv-negative": (
        "trace.csv",
        "submit,queue,podsets\n-5,q,main:1:cpu=1\n",
        ["trace.csv:2 (submit)", "negative"],
    ),
    "csv-nan": ("trace.csv", "submit,queue,podsets\nnan,q,main:1:cpu=1\n", ["trace.csv:2 (submit)"]),
    "csv-huge-time": (
        "trace.csv",
        "submit,queue,podsets\n1000000000000,q,main:1:cpu=1\n",
        ["trace.csv:2 (submit)", "366 days"],
    ),
    "csv-huge-run": (
        "trace.csv",
        "submit,queue,podsets,run\n0,q,main:1:cpu=1,99999999999999999999d\n",
        ["trace.csv:2 (run)"],
    ),
    "csv-1e9-pods": (
        "trace.csv",
        "submit,queue,podsets\n0,q,main:1000000000:cpu=1\n",
        ["trace.csv:2 (podsets[0].count)"],
    ),
    "csv-bad-quantity": (
        "trace.csv",
        "submit,queue,podsets\n0,q,main:1:cpu=1e400x\n",
        ["trace.csv:2 (podsets[0].requests.cpu)"],
    ),
    "csv-negative-quantity": (
        "trace.csv",
        "submit,queue,podsets\n0,q,main:1:cpu=-1\n",
        ["trace.csv:2 (podsets[0].requests.cpu)"],
    ),
    "csv-no-queue-obj": (
        "trace.csv",
        "submit,queue,podsets\n0,nope,main:1:cpu=1\n",
        ["trace.csv:2 (queue)", "no LocalQueue"],
    ),
    "csv-no-priority": (
        "trace.csv",
        "submit,queue,podsets,priority\n0,q,main:1:cpu=1,gold\n",
        ["trace.csv:2 (priority)", "gold"],
    ),
    "csv-priority-int64": (
        "trace.csv",
        "submit,queue,kind,podsets,priority\n0,q,Workload,m:1:cpu=1,9999999999\n",
        ["trace.csv:2 (priority)"],
    ),
    "csv-bad-name": (
        "trace.csv",
        "submit,queue,podsets,name\n0,q,main:1:cpu=1,Bad_Name\n",
        ["trace.csv:2 (name)", "Bad_Name"],
    ),
    "csv-dup-name": (
        "trace.csv",
        "submit,queue,podsets,name\n0,q,m:1:cpu=1,a\n1,q,m:1:cpu=1,a\n",
        ["trace.csv:3 (name)", "twice"],
    ),
    "csv-bad-class": (
        "trace.csv",
        "submit,queue,podsets,class\n0,q,main:1:cpu=1,équipe\n",
        ["trace.csv:2 (class)", "label value"],
    ),
    "csv-bad-kind": (
        "trace.csv",
        "submit,queue,kind,podsets\n0,q,Pod,main:1:cpu=1\n",
        ["trace.csv:2 (kind)"],
    ),
    "csv-bad-outcome": (
        "trace.csv",
        "submit,queue,podsets,outcome\n0,q,main:1:cpu=1,Maybe\n",
        ["trace.csv:2 (outcome)"],
    ),
    "csv-rayjob-one-podset": (
        "trace.csv",
        "submit,queue,kind,podsets\n0,q,RayJob,head:1:cpu=1\n",
        ["trace.csv:2 (podsets)"],
    ),
    "jsonl-nan": (
        "trace.jsonl",
        '{"submit": NaN, "queue": "q", "podsets": "m:1:cpu=1"}\n',
        ["trace.jsonl:1", "not JSON"],
    ),
    "jsonl-dup-key": (
        "trace.jsonl",
        '{"submit": 0, "submit": 1, "queue": "q"}\n',
        ["trace.jsonl:1", "twice"],
    ),
    "jsonl-deep": ("trace.jsonl", '{"podsets": ' + "[" * 100_000 + "]" * 100_000 + "}\n", ["trace.jsonl:1"]),
    "jsonl-not-object": ("trace.jsonl", "\n[1, 2]\n", ["trace.jsonl:2", "JSON object"]),
    "jsonl-wrong-types": (
        "trace.jsonl",
        '{"submit": 0, "queue": {"a": 1}}\n',
        ["trace.jsonl:1 (queue)", "text"],
    ),
    "jsonl-inf-count": (
        "trace.jsonl",
        '{"submit": 0, "queue": "q", "podsets": [{"count": 1e400}]}\n',
        ["trace.jsonl:1 (podsets[0].count)"],
    ),
    "jsonl-bool-quantity": (
        "trace.jsonl",
        '{"submit": 0, "queue": "q", "podsets": [{"requests": {"cpu": true}}]}\n',
        ["(podsets[0].requests.cpu)"],
    ),
    "jsonl-empty": ("trace.jsonl", "", ["trace.jsonl", "no jobs"]),
    "json-array-bad-record": (
        "trace.json",
        '[\n  {"submit": 0, "queue": "q", "podsets": "m:1:cpu=1"},\n  {"submit": -1, "queue": "q"}\n]\n',
        ["trace.json [record 2] (submit)", "negative"],
    ),
    "json-array-not-json": ("trace.json", '[\n {"submit": 0,\n', ["trace.json", "not JSON"]),
    "json-object": ("trace.json", '{"submit": 0, "queue": "q"', ["trace.json:1", "not JSON"]),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_bad_files_are_named(tmp_path, case) -> None:
    name, text, where = FILE_CASES[case]
    doc = {"trace": name} if name.startswith("trace.") else {}
    study = make(tmp_path / "s", doc, {name: text})
    refused(study, *where)


TEMPLATE_CASES = {
    "missing": ("missing.yaml", None, ["trace.csv:2 (template)", "cannot read template"]),
    "traversal": ("../../../etc/passwd", None, ["trace.csv:2 (template)", "outside"]),
    "absolute": ("/etc/hostname", None, ["trace.csv:2 (template)", "relative"]),
    "directory": (".", None, ["trace.csv:2 (template)"]),
    "bad-yaml": ("t.yaml", "a: [\n", ["t.yaml:2", "not valid YAML"]),
    "list": ("t.yaml", "- a\n", ["t.yaml", "one object"]),
    "empty": ("t.yaml", "", ["t.yaml", "empty"]),
    "wrong-kind": (
        "t.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {}\n",
        ["trace.csv:2 (template)", "'Pod'"],
    ),
    "no-pod-template": (
        "t.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {}\n",
        ["t.yaml (spec.template)"],
    ),
    "metadata-int": ("t.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: 5\n", ["t.yaml (metadata)"]),
    "labels-list": (
        "t.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {labels: [1]}\n",
        ["t.yaml (metadata.labels)"],
    ),
    "alias-bomb": ("t.yaml", "apiVersion: batch/v1\nkind: Job\n" + BOMB, ["t.yaml", "larger than the limit"]),
    "deep": ("t.yaml", "apiVersion: batch/v1\nkind: Job\n" + DEEP, ["t.yaml"]),
    "1e9-pods": (
        "t.yaml",
        JOB_TEMPLATE.replace("spec:\n  template:", "spec:\n  parallelism: 1000000000\n  template:"),
        ["t.yaml (spec.parallelism)"],
    ),
    "api-refuses": (
        "t.yaml",
        JOB_TEMPLATE.replace("restartPolicy: Never", "restartPolicy: Sometimes"),
        ["t.yaml (template)", "refused"],
    ),
}


@pytest.mark.parametrize("case", list(TEMPLATE_CASES))
def test_bad_templates_are_named(tmp_path, case) -> None:
    ref, text, where = TEMPLATE_CASES[case]
    files: dict[str, str | bytes] = {"trace.csv": f"submit,queue,kind,template\n0,q,Job,{ref}\n"}
    if text is not None:
        files["t.yaml"] = text
    refused(make(tmp_path / "s", {}, files), *where)


GEN = {
    "count": 5,
    "arrivals": {"exponential": {"mean": "1m"}},
    "mix": [{"kind": "Job", "podsets": "main:1:cpu=1", "queue": "q", "run": "1m"}],
}
GENERATOR_CASES = [
    ({"count": 10**9}, "generator.count", "at most"),
    ({"count": 0}, "generator.count", "at least 1"),
    ({"count": True}, "generator.count", ""),
    ({"count": None, "duration": "1h", "arrivals": {"fixed": 0}}, "generator.arrivals", "one instant"),
    ({"count": None, "duration": "1h", "arrivals": {"exponential": {"mean": 0}}}, "generator.arrivals", ""),
    (
        {"count": None, "duration": "300d", "arrivals": {"exponential": {"mean": "0.001"}}},
        "generator.arrivals",
        "more than",
    ),
    ({"arrivals": {"exponential": {"mean": -5}}}, "generator.arrivals.exponential.mean", "negative"),
    ({"arrivals": {"lognormal": {"median": "1m", "sigma": float("inf")}}}, "generator.arrivals", ""),
    ({"arrivals": {"gamma": 1}}, "generator.arrivals", ""),
    ({"duration": 10**12}, "generator.duration", "366 days"),
    ({"diurnal": [1]}, "generator.diurnal", "mapping"),
    ({"diurnal": {"busyFactor": float("nan")}}, "generator.diurnal.busyFactor", ""),
    ({"diurnal": {"weekend": -1}}, "generator.diurnal.weekend", "at least"),
    ({"diurnal": {"busyHours": [8]}}, "generator.diurnal.busyHours", ""),
    ({"seed": [1]}, "generator.seed", ""),
    ({"rate": 5}, "generator.rate", "unknown field"),
    ({"mix": []}, "generator.mix", "at least one"),
    ({"mix": [5]}, "generator.mix[0]", "object"),
    ({"mix": [{**GEN["mix"][0], "weight": 0}]}, "generator.mix", "add up to zero"),
    ({"mix": [{**GEN["mix"][0], "weight": -1}]}, "generator.mix[0].weight", "at least"),
    ({"mix": [{**GEN["mix"][0], "weight": "heavy"}]}, "generator.mix[0].weight", ""),
    ({"mix": [{**GEN["mix"][0], "failed": 2}]}, "generator.mix[0].failed", "at most 1"),
    (
        {"mix": [{**GEN["mix"][0], "run": {"lognormal": {"median": "300d", "sigma": 3}}}]},
        "generator.mix[0].run",
        "",
    ),
    ({"mix": [{**GEN["mix"][0], "queue": ["q"]}]}, "generator.mix[0].queue", "text"),
    ({"mix": [{**GEN["mix"][0], "name": "Bad_Prefix"}]}, "generator.mix[0].name", "Bad_Prefix"),
    ({"mix": [{**GEN["mix"][0], "template": "../x.yaml"}]}, "generator.mix[0].template", "outside"),
]


@pytest.mark.parametrize(
    "over, where, message", GENERATOR_CASES, ids=[str(i) for i in range(len(GENERATOR_CASES))]
)
def test_bad_generators_are_named(tmp_path, over, where, message) -> None:
    gen = {**copy.deepcopy(GEN), **over}
    gen = {k: v for k, v in gen.items() if v is not None}
    study = make(tmp_path / "s", {"generator": gen, "trace": None} | {})
    doc = yaml.safe_load((study / "simulation.yaml").read_text())
    doc.pop("trace")
    (study / "simulation.yaml").write_text(yaml.safe_dump(doc))
    refused(study, "simulation.yaml", where, message)


KUEUE = {
    "cohorts": [
        {
            "className": "cohort",
            "count": 1,
            "queuesSets": [
                {
                    "className": "cq",
                    "count": 2,
                    "nominalQuota": 20,
                    "workloadsSets": [
                        {
                            "count": 3,
                            "creationIntervalMs": 100,
                            "workloads": [
                                {"className": "small", "runtimeMs": 200, "priority": 50, "request": 1}
                            ],
                        }
                    ],
                }
            ],
        }
    ]
}
QS = ("cohorts", 0, "queuesSets", 0)
WS = (*QS, "workloadsSets", 0)
WL = (*WS, "workloads", 0)
KUEUE_CASES = [
    (("cohorts",), [], "cohorts", "at least one cohort"),
    (("cohorts", 0), 5, "cohorts[0]", "mapping"),
    (("cohorts", 0, "count"), 10**9, "cohorts[0].count", "at most"),
    (("cohorts", 0, "count"), "x", "cohorts[0].count", ""),
    (("cohorts", 0, "extra"), 1, "cohorts[0].extra", "unknown field"),
    ((*QS, "count"), -1, "queuesSets[0].count", "at least 0"),
    ((*QS, "nominalQuota"), [1], "queuesSets[0].nominalQuota", "text"),
    ((*QS, "nominalQuota"), "lots", "generator.yaml", "ClusterQueue"),
    ((*WS, "count"), 10**9, "workloadsSets[0].count", ""),
    ((*WS, "creationIntervalMs"), float("nan"), "creationIntervalMs", ""),
    ((*WS, "creationIntervalMs"), 10**12, "creationIntervalMs", "days"),
    ((*WS, "workloads"), {"a": 1}, "workloadsSets[0].workloads", "list"),
    ((*WL, "runtimeMs"), -5, "workloads[0].runtimeMs", "at least"),
    ((*WL, "priority"), 2**40, "workloads[0].priority", "at most"),
    ((*WL, "podCount"), 10**9, "workloads[0].podCount", "at most"),
    ((*WL, "request"), {"cpu": 1}, "workloads[0].request", "text"),
    ((*WL, "tasLevel"), "rack", "workloads[0]", "TAS"),
    (("topology",), {"levels": []}, "topology", ""),
]


@pytest.mark.parametrize(
    "path, value, where, message", KUEUE_CASES, ids=[str(i) for i in range(len(KUEUE_CASES))]
)
def test_bad_kueue_generator_yaml_is_named(tmp_path, path, value, where, message) -> None:
    doc: Any = copy.deepcopy(KUEUE)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "generator.yaml").write_text(yaml.safe_dump(doc))
    refused(tmp_path / "generator.yaml", "generator.yaml", where, message)


MANIFEST_CASES = {
    "refused-by-api": (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: b}\nspec: {queueingStrategy: Sideways}\n",
        ["m.yaml:1 (document 1)", "ClusterQueue/b"],
    ),
    "scalar": ("just text\n", ["m.yaml", "expected an object"]),
    "unknown-kind": ("apiVersion: foo/v1\nkind: Bar\nmetadata: {name: x}\n", ["m.yaml:1 (document 1)"]),
    "duplicate-key": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nmetadata: {name: y}\n",
        ["m.yaml:4", "already set"],
    ),
    "alias-bomb": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n"
        + "".join("  " + line + "\n" for line in BOMB.splitlines()),
        ["m.yaml", "limit"],
    ),
    "priority-out-of-range": (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\nmetadata: {name: hi}\nvalue: 99999999999\n",
        ["m.yaml:1 (document 1)"],
    ),
    "kueue-config-unreadable": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\n"
        "data:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n"
        "    kind: Configuration\n    waitForPodsReady: {enable: true, timeout: -5m}\n",
        ["m.yaml:1 (document 1)", "Kueue cannot read its configuration"],
    ),
}


@pytest.mark.parametrize("case", list(MANIFEST_CASES))
def test_bad_manifests_are_named(tmp_path, case) -> None:
    text, where = MANIFEST_CASES[case]
    refused(make(tmp_path / "s", {"manifests": ["queues.yaml", "m.yaml"]}, {"m.yaml": text}), *where)


# -- valid but unusual input runs -----------------------------------------------------------------------------------
CLUSTER = {
    "project": "p",
    "location": "us-central1-a",
    "name": "c1",
    "nodePools": [
        {
            "name": "default-pool",
            "machineType": "n2-standard-8",
            "nodes": 1,
            "autoscaling": {"min": 1, "max": 2},
        }
    ],
}
UNUSUAL = {
    "bom-crlf-csv": ({}, {"trace.csv": "\ufeff" + TRACE.replace("\n", "\r\n")}, {"Succeeded"}),
    "quoted-csv-blank-lines": (
        {},
        {
            "trace.csv": '\nsubmit,queue,podsets,class\n\n"0",q,"main:1:cpu=1,memory=0",a\n\n"1m",q,"m:1:cpu=500m",b\n'
        },
        {"Succeeded"},
    ),
    "jsonl-blank-lines-bom-crlf": (
        {"trace": "t.jsonl"},
        {
            "t.jsonl": '\ufeff\r\n{"submit": "90s", "queue": "q", "podsets": [{"name": "m", "count": 2, "requests": {"cpu": "1"}}]}\r\n\r\n'
        },
        {"Succeeded"},
    ),
    "json-array": (
        {"trace": "t.json"},
        {
            "t.json": '\ufeff[\n  {"submit": 0, "queue": "q", "podsets": "m:1:cpu=1"},\n  {"submit": "2m", "queue": "q",\n   "podsets": [{"name": "m", "count": 1, "requests": {"cpu": "1"}}]}\n]\n'
        },
        {"Succeeded"},
    ),
    "time-units": (
        {},
        {
            "trace.csv": "submit,queue,podsets,run\n30m,q,m:1:cpu=1,2m\n90s,q,m:1:cpu=1,0.5\n0.25,q,m:1:cpu=1,1m30s\n1e2,q,m:1:cpu=1,1.5e1\n"
        },
        {"Succeeded"},
    ),
    "all-at-zero": ({}, {"trace.csv": "submit,queue,podsets\n" + "0,q,m:1:cpu=1\n" * 12}, {"Succeeded"}),
    "single-job": ({}, {"trace.csv": "submit,queue,podsets\n0,q,m:1:cpu=1\n"}, {"Succeeded"}),
    "never-fits": (
        {"until": None},
        {"trace.csv": "submit,queue,podsets\n0,q,m:1:cpu=1000\n5,q,m:1:cpu=1\n"},
        {"NeverAdmitted", "Succeeded"},
    ),
    "zero-window": ({"until": 0}, {}, {"NeverAdmitted"}),
    "template-job": (
        {},
        {"trace.csv": "submit,queue,kind,template,class\n0,q,Job,job.yaml,x\n"},
        {"Succeeded"},
    ),
    "generator-at-schedule": (
        {"generator": {"count": 10, "arrivals": {"at": [0, "10s", "1m"]}, "mix": GEN["mix"]}},
        {},
        {"Succeeded"},
    ),
    "generator-zero-gap-count": ({"generator": {**GEN, "arrivals": {"fixed": 0}}}, {}, {"Succeeded"}),
    "unicode-text": (
        {
            "name": "étude — 研究",
            "description": "Kubernetes ✓",
            "variants": [{"name": "équipe", "description": "ü"}],
        },
        {},
        {"Succeeded"},
    ),
    "capacity-never-grants": (
        {"until": None, "capacity": {"defaults": {"available": 0}}},
        {"trace.csv": "submit,queue,podsets\n0,q,m:1:cpu=1\n"},
        {"NotStarted"},
    ),
}


@pytest.mark.parametrize("case", list(UNUSUAL))
def test_unusual_but_valid_input_runs(tmp_path, case) -> None:
    doc, files, outcomes = UNUSUAL[case]
    doc = dict(doc)
    if "generator" in doc:
        doc["trace"] = None
    doc = {"cluster": CLUSTER, "capacity": "fast", **doc}
    study = make(tmp_path / "s", doc, files)
    raw = yaml.safe_load((study / "simulation.yaml").read_text())
    raw = {k: v for k, v in raw.items() if v is not None}
    (study / "simulation.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    with deadline(40):  # "never-fits" drains a week of simulated time: bounded, never a hang
        result = flexq.simulate(study, out=tmp_path / "out", workers=1, plots=case == "unicode-text")
    got = {row["outcome"] for run in result.runs for row in run.jobs}
    assert got == outcomes, (case, got)
    assert (tmp_path / "out" / "jobs.csv").exists()
    for name in result.documents:
        json.loads((tmp_path / "out" / f"{name}.json").read_text())  # finite numbers: valid JSON


# -- seeded random mutations of valid inputs ------------------------------------------------------------------------
HOSTILE: list[Any] = [
    None,
    "",
    0,
    -1,
    1.5,
    10**9,
    10**12,
    2**63,
    float("nan"),
    float("inf"),
    True,
    "abc",
    [],
    {},
    [1],
    {"a": 1},
    "é",
    "x" * 300,
    "../../etc/passwd",
    "/etc/passwd",
    "1e400",
    "-0",
    "\x00",
    "９",
]
CSV_VALUES = [
    "",
    "-1",
    "0",
    "1e308",
    "nan",
    "inf",
    "１",
    "x" * 300,
    "é",
    "99999999999999999999d",
    "1e12",
    "a:b:c",
    "main:1000000000:cpu=1",
    "main:1:cpu=1e400",
    "main:1:cpu=-1",
    "m:1:cpu=nan",
    "../../../etc/passwd",
    "/etc/passwd",
    "job.yaml",
    "Bad_Name",
    "RayJob",
    "Workload",
    "2147483648",
    "Failed",
    "a,b",
    'q"q',
    "\x00",
    "m:0:cpu=1",
]
VALID_DOC = {
    "name": "fuzz",
    "seed": 3,
    "replicas": 1,
    "until": "1h",
    "keepFinished": False,
    "capacity": "tutorial",
    "variants": [{"name": "one"}],
    "settings": {"fallback": False},
}


def _mutate_doc(rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = copy.deepcopy(VALID_DOC)
    target = rng.choice(["top", "top", "variant", "settings", "generator", "mix"])
    value = copy.deepcopy(rng.choice(HOSTILE))
    if target == "top":
        doc[rng.choice([*VALID_DOC, "trace", "manifests", "cluster", "scale", "description"])] = value
    elif target == "variant":
        doc["variants"][0][
            rng.choice(["name", "capacity", "settings", "description", "manifests", "cluster"])
        ] = value
    elif target == "settings":
        doc["settings"] = {"fallback": value} if rng.random() < 0.7 else value
    else:
        gen = copy.deepcopy(GEN)
        if target == "generator":
            gen[rng.choice(["count", "duration", "arrivals", "seed", "diurnal", "mix"])] = value
        else:
            gen["mix"][0][
                rng.choice(
                    ["weight", "kind", "queue", "podsets", "run", "failed", "class", "name", "priority"]
                )
            ] = value
        doc["generator"] = gen
    return doc


def _check_outcome(study: Path, fn: Any) -> str:
    """Either a clean preflight or an InputError naming a file; never another exception; bounded."""
    try:
        with deadline(20):
            fn()
    except InputError as exc:
        assert exc.source, str(exc)
        assert exc.field or exc.line is not None or exc.message, str(exc)
        assert len(str(exc)) < 2000
        return "refused"
    return "ok"


def test_random_mutations_of_the_simulation_file(tmp_path) -> None:
    rng = random.Random(14)
    seen = {"ok": 0, "refused": 0}
    for i in range(60):
        doc = _mutate_doc(rng)
        if "generator" in doc and "trace" not in doc:
            doc["trace"] = None
        study = make(tmp_path / f"m{i}", {})
        raw = {**yaml.safe_load((study / "simulation.yaml").read_text()), **doc}
        raw = {k: v for k, v in raw.items() if not (k == "trace" and v is None and "generator" in raw)}
        (study / "simulation.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
        seen[_check_outcome(study, lambda s=study: preflight(load_study(s)))] += 1
    assert seen["refused"] > 20 and seen["ok"] > 0, seen


def test_random_mutations_of_traces(tmp_path) -> None:
    rng = random.Random(1414)
    cols = [
        "submit",
        "queue",
        "kind",
        "podsets",
        "run",
        "priority",
        "class",
        "name",
        "namespace",
        "outcome",
        "template",
    ]
    good = ["0", "q", "Job", "main:1:cpu=1", "30", "", "a", "j1", "default", "Succeeded", ""]
    seen = {"ok": 0, "refused": 0}
    for i in range(70):
        row = list(good)
        for _ in range(rng.choice([1, 1, 2])):
            row[rng.randrange(len(cols))] = rng.choice(CSV_VALUES)
        if rng.random() < 0.5:
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator=rng.choice(["\n", "\r\n"]))
            w.writerow(cols)
            w.writerow(row)
            name, text = "trace.csv", buf.getvalue()
        else:
            obj: dict[str, Any] = {c: v for c, v in zip(cols, row, strict=True) if v != ""}
            if rng.random() < 0.5:  # a JSON value of another type
                obj[rng.choice(cols)] = copy.deepcopy(rng.choice(HOSTILE))
            try:
                line = json.dumps(obj, allow_nan=True)
            except (ValueError, TypeError):
                continue
            name, text = "trace.jsonl", "\n" + line + "\n\n"
        study = make(tmp_path / f"t{i}", {"trace": name}, {name: text})
        seen[_check_outcome(study, lambda s=study: preflight(load_study(s)))] += 1
    assert seen["refused"] > 20 and seen["ok"] > 0, seen


# -- the command line: exit status 2, one line, no traceback ----------------------------------------------------------
CLI_CASES = [
    (["--replicas", "0"], {}, "(--replicas)"),
    (["--seed", "99999999999999999999999"], {}, "(--seed)"),
    (["--scale", "nan"], {}, "(--scale)"),
    (["--until", "forever"], {}, "--until: invalid duration"),
    (["--until", "1000000000000"], {}, "--until: '1000000000000' is more than 366 days"),
    (["--until", "0"], {}, "--until: must be a positive duration, not '0'"),
    (
        ["--until", "5s"],
        {"trace.csv": TRACE.replace("\n0,q", "\n9,q")},
        "(--until): no job is submitted before 5 s",
    ),
    (["--variant", "nope"], {}, "no variant named 'nope'"),
    ([], {"trace.csv": "submit,queue,podsets\n0,q,m:1:cpu=1\n[red]x,q,m:1:cpu=1\n"}, "trace.csv:3 (submit)"),
    ([], {"simulation.yaml": "a: &a [x, *a]\n"}, "simulation.yaml"),
    ([], {"simulation.yaml": BOMB}, "simulation.yaml"),
]


@pytest.mark.parametrize("args, files, where", CLI_CASES, ids=[str(i) for i in range(len(CLI_CASES))])
def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys, args, files, where) -> None:
    study = make(tmp_path / "s", {}, files)
    with deadline(20):
        rc = main(["simulate", str(study), "--no-progress", "-j", "1", "--no-plots", *args])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert where in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_cli_output_directory_that_cannot_be_made(tmp_path, capsys) -> None:
    study = make(tmp_path / "s")
    (tmp_path / "file").write_text("x")
    assert main(["simulate", str(study), "--no-progress", "--out", str(tmp_path / "file" / "out")]) == 2
    err = capsys.readouterr().err
    assert "--out: cannot make the output directory" in err and "Traceback" not in err, err


def test_cli_process_prints_no_traceback(tmp_path) -> None:
    """The real process: a hostile trace, exit status 2, the message on stderr, no traceback anywhere."""
    study = make(tmp_path / "s", {}, {"trace.csv": "submit,queue,podsets\n0,q," + "a" * 200_000 + "\n"})
    proc = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "simulate", str(study), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    assert "trace.csv:2" in proc.stderr and "Traceback" not in proc.stderr + proc.stdout, proc.stderr


# -- property-based: any trace row and any generator spec parse or are refused by name ------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
CELL = st.sampled_from(CSV_VALUES) | st.text(max_size=30)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=st.dictionaries(st.sampled_from(COLUMNS), CELL, min_size=1))
def test_any_csv_row_parses_or_is_refused_by_line(tmp_path, row) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(list(row))
    w.writerow(list(row.values()))
    (tmp_path / "t.csv").write_text(buf.getvalue(), encoding="utf-8")
    (tmp_path / "job.yaml").write_text(JOB_TEMPLATE)
    with deadline(10):
        try:
            jobs = read_trace(tmp_path / "t.csv")
        except InputError as exc:
            assert "t.csv" in str(exc) and (exc.line is not None or exc.field), str(exc)
        else:
            assert all(0 <= j.submit <= 366 * 86400 and j.queue for j in jobs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(["count", "duration", "arrivals", "seed", "diurnal", "mix"]), value=JSONISH)
def test_any_generator_field_draws_or_is_refused_by_field(tmp_path, key, value) -> None:
    spec = {**copy.deepcopy(GEN), key: value}
    with deadline(10):
        try:
            jobs = generate(spec, 1, "gen.yaml", tmp_path)
        except InputError as exc:
            assert exc.source == "gen.yaml" and exc.field.startswith("generator"), str(exc)
        else:
            assert len(jobs) <= 1_000_000


def test_yaml_merge_key_overrides_are_not_duplicates(tmp_path) -> None:
    """``<<: *anchor`` then the same key again overrides the merged value (YAML's merge key; the fallback study's
    scenarios use it for a variant's cluster); a key written twice in one map is still refused."""
    study = make(tmp_path / "s")
    text = (study / "simulation.yaml").read_text()
    (study / "simulation.yaml").write_text(
        text + "variants:\n- &v {name: a, description: one}\n- {<<: *v, name: b}\n", encoding="utf-8"
    )
    assert [v.name for v in load_study(study).variants] == ["a", "b"]
    (study / "simulation.yaml").write_text(text + "seed: 2\n", encoding="utf-8")
    refused(study, "simulation.yaml:", "already set")


def test_a_study_object_is_checked_too(tmp_path) -> None:
    study = load_study(make(tmp_path / "s"))
    with pytest.raises(InputError, match=r"\(replicas\): must be at most"):
        flexq.simulate(study, replicas=10**9, workers=1, plots=False)
    with pytest.raises(InputError, match=r"\(seed\): must be a whole number"):
        flexq.simulate(study, seed="x", workers=1, plots=False)  # type: ignore[arg-type]


def test_a_huge_trace_is_refused_without_reading_it(tmp_path) -> None:
    """A trace past 256 MiB (a billion jobs would be tens of GB) is refused from its size, at once."""
    study = make(tmp_path / "s")
    with (study / "trace.csv").open("r+b") as f:
        f.truncate(300 * 1024 * 1024)  # sparse: no disk used
    refused(study, "trace.csv", "larger than 256 MiB", seconds=5)


def test_too_many_jobs_are_refused_at_the_limit(tmp_path, monkeypatch) -> None:
    from flexq.simulate import trace

    monkeypatch.setattr(trace, "MAX_JOBS", 50)
    study = make(tmp_path / "s", {}, {"trace.csv": "submit,queue,podsets\n" + "0,q,m:1:cpu=1\n" * 60})
    refused(study, "trace.csv:52", "more than 50 jobs")


def test_cli_prints_names_as_text_not_markup(tmp_path, capsys) -> None:
    """A study name with console markup in it (``[/bold]``) is printed as is, not taken for markup."""
    study = make(tmp_path / "s", {"name": "[/bold] team [red]", "trace": "trace.csv"})
    with deadline(30):
        rc = main(
            [
                "simulate",
                str(study),
                "--no-progress",
                "-j",
                "1",
                "--no-plots",
                "--out",
                str(tmp_path / "o[x]"),
            ]
        )
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "[/bold] team [red]" in out.out and "o[x]" in out.out and "Traceback" not in out.err


@pytest.mark.parametrize("address", ["nonsense", "ray://:10001", "CLOSED"])
def test_cli_ray_address_nobody_listens_on_exits_2_at_once(tmp_path, capsys, address) -> None:
    """Ray keeps retrying an address nobody listens on for minutes; the simulator checks it first."""
    import socket

    if address == "CLOSED":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            address = f"127.0.0.1:{s.getsockname()[1]}"  # closed when the block ends
    study = make(tmp_path / "s")
    with deadline(30):
        rc = main(["simulate", str(study), "--no-progress", "--no-plots", "--ray-address", address])
    err = capsys.readouterr().err
    assert rc == 2 and "--ray-address" in err and "Traceback" not in err, err


def test_the_python_api_takes_until_as_the_cli_does(tmp_path) -> None:
    study = make(tmp_path / "s")
    with pytest.raises(InputError) as err:
        flexq.simulate(study, workers=1, plots=False, until="0s")
    assert str(err.value).startswith("until: must be a positive duration"), err.value
    result = flexq.simulate(study, workers=1, plots=False, until="3s")  # the trace's jobs come at 0 s and 5 s
    assert [row["submit"] for run in result.runs for row in run.jobs] == [0.0]
