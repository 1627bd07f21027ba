"""Everything a run would refuse, found before anything is simulated (``preflight``): for every variant the
cluster built and the manifests applied, every queue and priority class the traffic names, the mistakes of
configuration a run would only show as lost jobs (``flexq.simulate.configcheck``), each job's name as the API's
rule for its kind has it, and one object of each job shape taken by the API (``check_objects``). Must not import
flexq.http."""

from __future__ import annotations

from typing import Any

from flexq.api import scheme
from flexq.errors import ApiError, InputError
from flexq.simulate.configcheck import (
    PreflightError,
    fallback_findings,
    placeholder_findings,
    reference_findings,
)
from flexq.simulate.engine import Sim
from flexq.simulate.jobs import JobSpec
from flexq.simulate.objects import build_object
from flexq.simulate.study import Study, Variant
from flexq.simulate.teardown import free_closed

__all__ = ["preflight", "check_objects"]


def preflight(study: Study) -> list[str]:
    """Raise ``InputError`` for anything a run would refuse, and ``configcheck.PreflightError`` (every finding,
    each naming the file, the document and the field) for the mistakes of configuration a run would only show
    as lost jobs (``flexq.simulate.configcheck``), before simulating anything. Returns the warnings."""
    jobs = study.jobs(study.seed)
    if not jobs:
        raise InputError("the traffic has no jobs", source=study.source)
    findings: list[InputError] = []
    warnings: list[str] = []
    where: dict[str, list[str]] = {}  # a finding -> the variants it was found in
    for v in study.variants:
        findings += placeholder_findings(v.manifests, study.env)
    if not findings:
        used = {f"{j.namespace}/{j.queue}" for j in jobs}
        for v in study.variants:
            mine, warned, built = _check_variant(study, v, jobs, used)
            warnings += warned
            if built:  # a cluster that could not be built says so as it is, without the variants' names
                for f in mine:
                    where.setdefault(str(f), []).append(v.name)
            findings += mine
        free_closed()  # the checked twins, before the runs build theirs
    unique = list({str(f): f for f in findings}.values())
    for i, f in enumerate(unique):
        names = where.get(str(f), [])
        if names and len(names) < len(study.variants):
            unique[i] = InputError(
                f"{f.message} (variant{'s' if len(names) > 1 else ''} {', '.join(names)})",
                source=f.source,
                line=f.line,
                field=f.field,
            )
    if len(unique) == 1 and not isinstance(unique[0], PreflightError):
        raise unique[0]
    if unique:
        raise PreflightError(unique)
    return list(dict.fromkeys(warnings))


def _check_variant(
    study: Study, v: Variant, jobs: list[JobSpec], used: set[str]
) -> tuple[list[InputError], list[str], bool]:
    """The findings and warnings of one variant's cluster, built as a run builds it (then closed), and whether
    it was built (if not, the one finding is the refusal)."""
    sim = Sim(study, v, 0, jobs)
    try:
        try:
            sim.setup()
        except InputError as exc:
            return [exc], [], False
        mine = reference_findings(
            sim.twin,
            jobs,
            lambda j: build_object(j, sim.priorities, sim.pod_priorities, study.env),
        )
        refused, warned = fallback_findings(
            v.settings.get("fallback"), sim.local_queues, used, v.name, study.source
        )
        mine += refused
        if not mine:
            try:
                check_objects(sim)
            except InputError as exc:
                mine.append(exc)
        return mine, warned, True
    finally:
        sim.discard()


def check_objects(sim: Sim) -> None:
    """Check every job's name (the API's rule for its kind; no two jobs of one kind with one name in one
    namespace), and create one object of each job shape (kind, template, pod sets, namespace, queue,
    priority, class) to see the API take it."""
    seen: set[tuple[Any, ...]] = set()
    names: dict[tuple[str, str, str], str] = {}
    infos: dict[str, Any] = {}
    for job in sim.jobs:
        ident = (job.kind, job.namespace, job.name)
        if ident in names:
            raise InputError(
                f"{job.kind} {job.namespace}/{job.name} is submitted twice (also at {names[ident]})",
                source=job.source,
                field="name",
            )
        names[ident] = job.source
        if job.kind not in infos:
            try:
                infos[job.kind] = scheme.resolve_object(
                    sim.twin.store.registry,
                    build_object(job, sim.priorities, sim.pod_priorities, sim.study.env),
                )
            except ApiError as exc:
                raise InputError(
                    f"the API does not serve {job.kind}: {exc.message}", source=job.source, field="kind"
                ) from None
        causes = scheme.check_name(infos[job.kind], {"name": job.name})
        if causes:
            raise InputError(
                f"the API refuses this name: {causes[0].message}", source=job.source, field="name"
            )
        key = (
            job.kind,
            job.template_source,
            job.pod_sets,
            job.namespace,
            job.queue,
            job.priority_class,
            job.priority,
            job.klass,
        )
        if key in seen:
            continue
        seen.add(key)
        try:
            sim.twin.create(build_object(job, sim.priorities, sim.pod_priorities, sim.study.env))
        except ApiError as exc:
            raise InputError(
                f"the API refused this {job.kind}: {exc.message}",
                source=job.template_source or job.source,
                field="template" if job.template_source else "podsets",
            ) from None
