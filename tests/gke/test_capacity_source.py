"""The capacity model a GKE context uses is built once per profile version: a CapacityProfile change (seen
through a store watch) is picked up at once, and nothing else rebuilds it."""

from __future__ import annotations

from flexq.api.twin import tutorial_profile
from flexq.gke.project import CapacitySource
from flexq.twin import Twin


def test_the_model_is_kept_until_a_capacity_profile_changes() -> None:
    t = Twin(clock="virtual")
    try:
        project = t.core.project
        profile = {**tutorial_profile(), "metadata": {"name": "default"}}
        project.create(profile)
        source = CapacitySource(t.core.project_ctx)
        first = source.model()
        t.core.loop.run_until(t.now() + 60.0)
        assert source.model() is first  # same profile version: not rebuilt
        assert first.operation_seconds("create_node_pool") == 90.0

        stored = project.get("CapacityProfile", "default")
        stored["spec"]["operations"]["createNodePool"] = "30s"
        project.update(stored)
        second = source.model()
        assert second is not first and second.operation_seconds("create_node_pool") == 30.0
        assert source.model() is second

        project.delete("CapacityProfile", "default")
        assert source.model().operation_seconds("create_node_pool") != 30.0  # back to the built-in default
        source.close()
    finally:
        t.close()
