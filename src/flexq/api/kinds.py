"""The default registry: every kind flexq serves, gathered from each API group's module.

Explicit list, no import-time registration side effects (style rule 6).
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
from flexq.api.registry import Registry


def default_registry() -> Registry:
    """A fresh Registry with all kinds."""
    return Registry(
        [
            *core.KINDS,
            *kueue.KINDS,
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
