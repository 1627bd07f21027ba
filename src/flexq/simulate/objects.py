"""``build_object``: a ``JobSpec`` as the Kubernetes object submitted to the twin (a RayJob, a batch/v1 Job or a
bare Kueue Workload), its template's placeholders substituted within bounds, with the run time and outcome
annotations the simulated executor reads.

Must not import flexq.http.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from flexq.errors import InputError
from flexq.simulate.jobs import (
    ANN_OUTCOME,
    ANN_RUN,
    CLASS_LABEL,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    JobSpec,
)

__all__ = ["build_object", "substitute", "MAX_EXPANDED_BYTES", "MAX_VALUE_CHARS"]


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
    job: JobSpec,
    priorities: dict[str, int] | None = None,
    pod_priorities: dict[str, int] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The object submitted for ``job``: queue and priority labels, the run time and outcome annotations the
    simulated executor reads (``twin.flexq.dev/run-seconds``, ``twin.flexq.dev/outcome``); its template's
    ``${NAME}``s are the job's own (``NAME``, ``JOB_ID``, ``QUEUE``, ``NAMESPACE``) and the study's ``env``."""
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
        values = {
            **(env or {}),
            "NAME": job.name,
            "JOB_ID": str(job.index),
            "QUEUE": job.queue,
            "NAMESPACE": job.namespace,
        }
        obj = substitute(_parsed_template(job.template), values, job.template_source or job.source)
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
