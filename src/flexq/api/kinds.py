"""The default registry: every kind flexq serves, gathered from each API group's module.

Explicit list, no import-time registration side effects (style rule 6). ``default_registry(kueue)`` serves the
Kueue kinds as that Kueue release does (the assembly passes the twin's); without one, as v0.19.2 does
(v1beta2 and v1beta1).
"""

from __future__ import annotations

from flexq.api import (
    apiextensions,
    apps,
    autoscaling,
    capacity_profile,
    computeclass,
    coordination,
    core,
    kueue,
    ray,
    rbac,
    scheduling,
)
from flexq.api.kueue_versions import KueueVersion
from flexq.api.registry import Registry


def default_registry(kueue_release: KueueVersion | None = None) -> Registry:
    """A fresh Registry with all kinds (Kueue's as ``kueue_release`` serves them; v0.19.2's when None)."""
    return Registry(
        [
            *core.KINDS,
            *(kueue.kinds(kueue_release) if kueue_release is not None else kueue.KINDS),
            *autoscaling.KINDS,
            *ray.KINDS,
            *capacity_profile.KINDS,
            *computeclass.KINDS,
            *rbac.KINDS,
            *apps.KINDS,
            *coordination.KINDS,
            *scheduling.KINDS,
            *apiextensions.KINDS,
        ]
    )


REGISTRY = default_registry()
