"""The fallback study (examples/fallback-study, docs/fallback-study.md) kept honest at small scale, and the
``settings`` key that turns flexq's fallback on in a ``flexq simulate`` variant."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from flexq import simulate
from flexq.errors import InputError
from flexq.simulate.study import load_study

STUDY = Path(__file__).resolve().parents[2] / "examples" / "fallback-study"


def _copy(tmp_path: Path, edit) -> Path:
    d = tmp_path / f"study{len(list(tmp_path.iterdir()))}"
    shutil.copytree(STUDY, d, ignore=shutil.ignore_patterns("results*"))
    p = d / "scenario-b.yaml"
    doc = yaml.safe_load(p.read_text())
    edit(doc)
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def test_settings_reach_the_variant_and_unknown_keys_are_refused(tmp_path: Path) -> None:
    study = load_study(STUDY / "scenario-b.yaml")
    assert study.variant("flexq").settings == {"fallback": True}
    assert study.variant("tutorial").settings == {}

    def bad_key(doc):
        doc["variants"][-1]["settings"] = {"fallback": True, "turbo": 1}

    with pytest.raises(
        InputError, match=r"unknown setting 'turbo' \(known: fallback, kueue_cycle_seconds\)"
    ) as e:
        load_study(_copy(tmp_path, bad_key))
    assert e.value.field == "variants[4].settings.turbo"

    def bad_field(doc):
        doc["variants"][-1]["settings"] = {"fallback": {"grace_seconds": 30, "grace": 1}}

    with pytest.raises(InputError, match=r"unknown fallback field 'grace'") as e:
        load_study(_copy(tmp_path, bad_field))
    assert e.value.field == "variants[4].settings.fallback.grace"

    def bad_value(doc):
        doc["settings"] = {"fallback": "sometimes"}

    with pytest.raises(InputError, match="fallback is true, false or a mapping") as e:
        load_study(_copy(tmp_path, bad_value))
    assert e.value.field == "settings.fallback"

    def top_level(doc):
        doc["settings"] = {"fallback": {"grace_seconds": 30}}

    study = load_study(_copy(tmp_path, top_level))
    assert study.variant("tutorial").settings == {"fallback": {"grace_seconds": 30}}
    assert study.variant("flexq").settings == {"fallback": True}  # a variant's own settings win


def test_scenario_b_a_few_hours_flexq_waits_less_than_the_tutorial_config() -> None:
    """Eight hours of the study's traffic under 2 h on-demand stock-outs (01:00-03:00): flexq's fallback moves the
    jobs stuck on plan A to DWS, so they start sooner on average than with the tutorial's config, where Kueue's
    waitForPodsReady requeues them on plan A again."""
    study = load_study(STUDY / "scenario-b.yaml", variants=["tutorial", "flexq"])
    study.submit_until = 8 * 3600.0
    result = simulate(study, workers=1, plots=False)
    tut, fx = (result.documents[v]["aggregate"] for v in ("tutorial", "flexq"))
    assert tut["succeeded"]["mean"] == fx["succeeded"]["mean"] == len(study.jobs(study.seed))
    assert fx["waitToStartMean"]["mean"] < tut["waitToStartMean"]["mean"]
    ev = {r.variant: r.evictions for r in result.runs}
    assert ev["flexq"]["cluster-queue"].get("Deactivated", 0) > 0  # the policy moved jobs
    assert "Deactivated" not in ev["tutorial"].get("cluster-queue", {})
