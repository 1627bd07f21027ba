"""Kueue's own perf-harness ``generator.yaml`` (``test/performance/scheduler/runner/generator``: cohorts x queue
sets x workload sets), accepted as is: the ResourceFlavor, ClusterQueues and LocalQueues it makes, and its
Workloads as traffic.

Must not import flexq.http.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainValidator

from flexq.errors import InputError
from flexq.simulate.inputs import INT32, MAX_JOBS, MAX_PODS, MAX_SECONDS, Refused, as_text, as_whole
from flexq.simulate.jobs import JobSpec, PodSetSpec
from flexq.simulate.schema import TEXT, Doc, checked, number_in, whole_in

__all__ = ["is_kueue_generator", "kueue_generator", "KueueGenerator"]


def is_kueue_generator(doc: Any) -> bool:
    return isinstance(doc, dict) and "cohorts" in doc and "mix" not in doc


MAX_QUEUES = 10_000  # ClusterQueues one generator.yaml may create


def _items(value: Any) -> Any:
    if value is None:
        return []
    if not isinstance(value, list):
        raise Refused("must be a list")
    return value


Items = BeforeValidator(_items)
ClassName = Annotated[str, PlainValidator(lambda v: "" if v in (None, "") else as_text(v))]  # "": the default
Text = Annotated[str, TEXT]


def _not_given(what: str) -> PlainValidator:
    """A field flexq simulate does not model: refused when set (to anything but an empty value)."""

    def check(value: Any) -> Any:
        if value:
            raise Refused(what)
        return value

    return PlainValidator(check)


class WorkloadTemplate(Doc):
    """One workload of a workload set: its class, run time, priority and cpu request (``podCount`` is read and,
    as upstream's runner does outside TAS, not used)."""

    tasLevel: Annotated[Any, _not_given("TAS/DRA workloads are not supported")] = None
    devices: Annotated[Any, _not_given("TAS/DRA workloads are not supported")] = None
    className: ClassName = ""
    runtimeMs: Annotated[float, number_in(0, MAX_SECONDS * 1000)] = 0.0
    priority: Annotated[int, whole_in(*INT32)] = 0
    podCount: Annotated[int, PlainValidator(lambda v: as_whole(v or 1, 1, MAX_PODS))] = 1
    request: Text = "1"
    tasConstraint: Any = None
    sliceSize: Any = None


class WorkloadsSet(Doc):
    count: Annotated[int, whole_in(0, MAX_JOBS)] = 1
    creationIntervalMs: Annotated[float, number_in(0, 1e12)] = 0.0
    workloads: Annotated[list[WorkloadTemplate], Items] = []


class QueuesSet(Doc):
    count: Annotated[int, whole_in(0, MAX_QUEUES)] = 1
    className: ClassName = ""
    nominalQuota: Text | None = None
    borrowingLimit: Text | None = None
    reclaimWithinCohort: Text | None = None
    withinClusterQueue: Text | None = None
    deviceNominalQuota: Annotated[Any, _not_given("DRA quotas are not supported")] = None
    deviceBorrowingLimit: Annotated[Any, _not_given("DRA quotas are not supported")] = None
    workloadsSets: Annotated[list[WorkloadsSet], Items] = []


class CohortSet(Doc):
    count: Annotated[int, whole_in(0, MAX_QUEUES)] = 1
    className: ClassName = ""
    queuesSets: Annotated[list[QueuesSet], Items] = []


def _cohorts(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise Refused("config must contain at least one cohort")
    return value


def _flavor(value: Any) -> str:
    rf = value or {}
    if not isinstance(rf, dict):
        raise Refused("must be a mapping {name}")
    if rf.get("name") in (None, ""):
        return "rf"
    try:
        return as_text(rf["name"])
    except Refused as exc:
        raise Refused(str(exc), at=("name",)) from None


class KueueGenerator(Doc):
    """Kueue's ``generator.yaml`` (``kueue_generator``'s docstring)."""

    topology: Annotated[
        Any, _not_given("topology (TAS/DRA) scenarios are not supported by flexq simulate")
    ] = None
    dra: Annotated[Any, _not_given("dra (TAS/DRA) scenarios are not supported by flexq simulate")] = None
    resourceFlavor: Annotated[str, PlainValidator(_flavor)] = "rf"
    cohorts: Annotated[list[CohortSet], BeforeValidator(_cohorts)] = Field(
        default=None, validate_default=True
    )


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
    if not isinstance(scale, int | float) or not math.isfinite(scale) or scale <= 0:
        raise InputError(f"scale must be a positive number, got {scale!r}", source=src, field="scale")
    gen = checked(KueueGenerator, doc, src)
    flavor, cohorts = gen.resourceFlavor, doc["cohorts"]
    # count what would be made, before making anything
    total_queues = total_jobs = 0
    for ci, cset in enumerate(gen.cohorts):
        for qsi, qset in enumerate(cset.queuesSets):
            fld = f"cohorts[{ci}].queuesSets[{qsi}]"
            total_queues += cset.count * qset.count
            if total_queues > MAX_QUEUES:
                raise InputError(
                    f"more than {MAX_QUEUES:,} ClusterQueues in all", source=src, field=f"{fld}.count"
                )
            for wsi, wset in enumerate(qset.workloadsSets):
                wfld = f"{fld}.workloadsSets[{wsi}]"
                rounds = max(1, int(wset.count * scale))
                total_jobs += cset.count * qset.count * rounds * len(wset.workloads)
                if total_jobs > MAX_JOBS:
                    raise InputError(
                        f"more than {MAX_JOBS:,} workloads in all (use --scale)",
                        source=src,
                        field=f"{wfld}.count",
                    )
                if rounds * len(wset.workloads) * wset.creationIntervalMs / 1000 > MAX_SECONDS:
                    raise InputError(
                        f"the workloads are created over more than {MAX_SECONDS / 86400:g} days",
                        source=src,
                        field=f"{wfld}.creationIntervalMs",
                    )
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
                        source = f"{src} ({wfld})"
                        # one pod set per template, shared by its jobs (frozen): a job's own copy was ~0.4 KB
                        pod_sets = [
                            (
                                PodSetSpec(
                                    "main",
                                    1,  # podCount is TAS-only upstream: outside TAS one pod
                                    (("cpu", str(wlt.get("request", "1"))),),
                                ),
                            )
                            for wlt in templates
                        ]
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
                                        pod_sets=pod_sets[wi],
                                        run=float(wlt.get("runtimeMs", 0)) / 1000,
                                        klass=cls,
                                        source=source,
                                    )
                                )
    jobs.sort(key=lambda j: (j.submit, j.namespace, j.name))
    return objs, [replace(j, index=i) for i, j in enumerate(jobs)]


# -- objects -----------------------------------------------------------------------------------------------------
