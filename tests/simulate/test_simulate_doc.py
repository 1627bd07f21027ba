"""docs/simulate.md is enough to write a study (issue 33, acceptance 4): the studies it shows are built from its
own snippets, as a new user would copy them (and its recipe's commands run as written, with the real kubectl),
then simulated."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flexq.cli.main import main
from flexq.simulate.change import KINDS
from flexq.simulate.study_doc import STUDY_KEYS, VARIANT_KEYS

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulate.md"
_BLOCK = re.compile(r"<!-- (file: (?P<file>\S+)|recipe) -->\n```\w*\n(?P<body>.*?)```", re.S)


def _snippets() -> tuple[dict[str, str], list[str]]:
    files, recipe = {}, []
    for m in _BLOCK.finditer(DOC.read_text()):
        if m.group("file"):
            files[m.group("file")] = m.group("body")
        else:
            recipe += [ln for ln in m.group("body").splitlines() if ln.strip()]
    return files, recipe


def test_the_doc_names_every_key_and_knob() -> None:
    text = DOC.read_text()
    for key in sorted(STUDY_KEYS | VARIANT_KEYS):
        assert f"`{key}`" in text, key
    for kind in KINDS:
        assert f"kind: {kind}" in text, kind


def test_the_minimal_trace_study_runs_as_written(tmp_path, capsys) -> None:
    files, _ = _snippets()
    for name, body in files.items():
        if name.startswith("my-study/"):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(body)
    assert main(["simulate", str(tmp_path / "my-study"), "--no-plots", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "ranks first: no job lost" in out, out
    assert (tmp_path / "my-study" / "results" / "jobs.csv").read_text().count("\n") == 5  # four jobs


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="the recipe runs kubectl")
def test_the_recipe_from_the_tutorials_files_runs(tmp_path, capsys) -> None:
    files, recipe = _snippets()
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": "/dev/null",
    }
    script = "\n".join(recipe)  # as written, in one shell, from the folder the user is in
    r = subprocess.run(
        ["bash", "-ec", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, (script, r.stderr)
    study = tmp_path / "tutorial-study"
    assert yaml.safe_load((study / "train-script.yaml").read_text())["metadata"]["name"] == "jax-train-script"
    (study / "simulation.yaml").write_text(files["tutorial-study/simulation.yaml"])
    args = ["simulate", str(study), "--no-plots", "--no-progress", "--no-what-if"]
    assert main(args) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "tutorial" in out and "fallback" in out


def test_the_doc_says_what_t0_is_and_what_diurnal_does_and_both_hold() -> None:
    """docs/simulate.md says what t=0 is (a Monday, 00:00: stock-out windows depend on it) and how `diurnal`
    changes the arrival rate (issue 50); what it says holds for the generator."""
    from flexq.simulate.generator import generate

    text = " ".join(DOC.read_text().split())
    assert "**t=0 is a Monday at 00:00**" in text
    assert "Monday (day 0) to Sunday (day 6, days 5 and 6 are the weekend)" in text
    assert "rate(t) / max(`busyFactor`, 1)" in text and "thinning a Poisson process" in text
    mix = [{"weight": 1, "kind": "Job", "podsets": "main:1:cpu=1", "queue": "q", "run": "1m"}]
    spec = {"duration": "14d", "arrivals": {"exponential": {"mean": "2m"}}, "mix": mix}
    # weekend 0: nothing on days 5 and 6 of each week from t=0
    jobs = generate(
        {**spec, "diurnal": {"busyHours": [8, 20], "busyFactor": 1, "weekend": 0}}, 1, "d", Path()
    )
    days = {int(j.submit // 86400) % 7 for j in jobs}
    assert days == {0, 1, 2, 3, 4}, days
    jobs = generate(
        {**spec, "diurnal": {"busyHours": [8, 20], "busyFactor": 3, "weekend": 1}}, 1, "d", Path()
    )
    busy = sum(1 for j in jobs if 8 <= (j.submit / 3600) % 24 < 20)
    rest = len(jobs) - busy
    # the doc's rate: `arrivals` in busy hours, a third of it outside (both 12 hours a day here)
    assert 2.5 < busy / rest < 3.5, (busy, rest)
    assert abs(busy - 14 * 12 * 30) < 0.1 * 14 * 12 * 30  # 30 an hour at the busiest: the arrivals' own rate
