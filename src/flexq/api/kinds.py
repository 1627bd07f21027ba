"""The default registry: every kind flexq serves, gathered from each API group's module.

Explicit list, no import-time registration side effects (style rule 6).
"""

from __future__ import annotations

from flexq.api import autoscaling, computeclass, core, kueue, ray, twin
from flexq.api.registry import Registry


def default_registry() -> Registry:
    """A fresh Registry with all kinds."""
    return Registry([*core.KINDS, *kueue.KINDS, *autoscaling.KINDS, *ray.KINDS, *twin.KINDS,
                     *computeclass.KINDS])


REGISTRY = default_registry()
