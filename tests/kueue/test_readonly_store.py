"""Kueue's controllers read stored objects without copying them (``Store.peek``, watch events): they must
never change them in place. Every declarative scenario and a slice of the baseline bench run here with the
store's ``check_readonly`` on, which fails on the first stored version found changed."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

from flexq.testing.minimal_kueue import MinimalKueue

from . import scenario_runner
from .scenario_runner import Runner, all_scenarios

SCENARIOS = all_scenarios()
BENCH = Path(__file__).resolve().parents[2] / "bench" / "kueue_baseline.py"


@pytest.mark.parametrize(
    ("scenario", "fixtures"), [(s, f) for _, s, f in SCENARIOS], ids=[n for n, _, _ in SCENARIOS]
)
def test_scenario_leaves_stored_objects_untouched(scenario: dict, fixtures: dict, monkeypatch) -> None:
    monkeypatch.setattr(scenario_runner, "MinimalKueue", functools.partial(MinimalKueue, check_readonly=True))
    r = Runner(scenario, fixtures)
    assert r.k.store.check_readonly
    r.run()
    r.k.store.verify_readonly()


def test_baseline_bench_slice_leaves_stored_objects_untouched() -> None:
    spec = importlib.util.spec_from_file_location("kueue_baseline_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    k = MinimalKueue(check_readonly=True)
    r = bench.Runner(k, bench.setup(k), 0.02)
    r.schedule()
    while r.finished < r.total and k.loop.run_until_idle(600):
        pass
    assert r.finished == r.total and r.admissions >= r.total
    assert not k.loop.errors
    k.store.verify_readonly()
