"""Kueue's own perf-harness ``generator.yaml`` (``test/performance/scheduler/runner/generator``: cohorts x queue
sets x workload sets), accepted as is: the ResourceFlavor, ClusterQueues and LocalQueues it makes, and its
Workloads as traffic.

Must not import flexq.http.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from flexq.errors import InputError
from flexq.simulate.inputs import (
    INT32,
    MAX_JOBS,
    MAX_PODS,
    MAX_SECONDS,
    number,
    refuse_unknown,
    string,
    whole,
)
from flexq.simulate.jobs import JobSpec, PodSetSpec

__all__ = ["is_kueue_generator", "kueue_generator"]


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
    refuse_unknown(value, known, src, fld)
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
