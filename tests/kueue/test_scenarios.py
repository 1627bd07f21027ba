"""Declarative scenarios of Kueue semantics: tests/kueue/scenarios/*.yaml, each traced to upstream."""

from __future__ import annotations

import pytest

from .scenario_runner import Runner, all_scenarios

SCENARIOS = all_scenarios()


def test_there_are_at_least_80_scenarios_each_traced_upstream():
    assert len(SCENARIOS) >= 80, len(SCENARIOS)
    for name, s, _ in SCENARIOS:
        assert s.get("upstream"), f"{name} does not name the upstream test or source it reproduces"


@pytest.mark.parametrize(
    ("scenario", "fixtures"), [(s, f) for _, s, f in SCENARIOS], ids=[n for n, _, _ in SCENARIOS]
)
def test_scenario(scenario: dict, fixtures: dict) -> None:
    Runner(scenario, fixtures).run()
