"""The default registry: every kind flexq serves, gathered from each API group's module.

Explicit list, no import-time registration side effects (style rule 6). ``default_registry(kueue)`` serves the
Kueue kinds as that Kueue release does (the assembly passes the twin's); without one, as v0.19.2 does
(v1beta2 and v1beta1).
"""

from __future__ import annotations

from dataclasses import replace

from flexq.api import (
    apiextensions,
    apps,
    autoscaling,
    capacity_profile,
    computeclass,
    coordination,
    core,
    kueue,
    policy,
    ray,
    rbac,
    scheduling,
)
from flexq.api.kueue_versions import V0_19_2, KueueVersion
from flexq.api.kueue_webhooks import JOB_KINDS, PRIORITY_DEFAULTING_GATE, default_priority_class
from flexq.api.registry import KindInfo, Registry


def _with_kueue_job_webhooks(infos: list[KindInfo], release: KueueVersion) -> list[KindInfo]:
    """The job kinds as ``release``'s job webhooks admit them (the priority-class defaulting, kueue#13719)."""
    admit = default_priority_class(bool(release.gates.get(PRIORITY_DEFAULTING_GATE, False)))
    return [
        replace(i, admission=admit) if (i.group, i.kind) in JOB_KINDS and i.admission is None else i
        for i in infos
    ]


def default_registry(kueue_release: KueueVersion | None = None) -> Registry:
    """A fresh Registry with all kinds (Kueue's as ``kueue_release`` serves them; v0.19.2's when None)."""
    release = kueue_release if kueue_release is not None else V0_19_2
    return Registry(
        [
            *_with_kueue_job_webhooks(core.KINDS, release),
            *(kueue.kinds(kueue_release) if kueue_release is not None else kueue.KINDS),
            *autoscaling.KINDS,
            *_with_kueue_job_webhooks(ray.KINDS, release),
            *capacity_profile.KINDS,
            *computeclass.KINDS,
            *rbac.KINDS,
            *apps.KINDS,
            *coordination.KINDS,
            *policy.KINDS,
            *scheduling.KINDS,
            *apiextensions.KINDS,
        ]
    )


REGISTRY = default_registry()
