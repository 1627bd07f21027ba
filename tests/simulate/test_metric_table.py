"""One table of the planner's figures (``flexq.simulate.metrics.METRICS``): a figure added as one row appears in
every output — the terminal's variants table, each variant's JSON aggregate, ``report.html``, a sweep's points
(``sweep.csv``), the sweep's table in the terminal and in its ``report.html`` — with no renderer touched."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from flexq.cli.main import main
from flexq.simulate import metrics

DATA = Path(__file__).with_name("data") / "lost"

NEW = metrics.Metric(
    "succeededShare",
    lambda s: s["jobs"]["succeeded"] / s["jobs"]["total"],
    "ratio",
    "jobs that succeeded",
    table=True,
    sweep=True,
    sweep_table=True,
    sweep_label="succeeded",
)


@pytest.fixture
def with_new_metric(monkeypatch):
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, NEW))
    monkeypatch.setenv("COLUMNS", "400")  # every column shown: none dropped for a narrow terminal


def _study(tmp_path: Path) -> Path:
    dst = tmp_path / "lost"
    shutil.copytree(DATA, dst)
    return dst


def test_a_new_metric_row_reaches_the_terminal_json_and_html(tmp_path, capsys, with_new_metric) -> None:
    out = tmp_path / "out"
    assert main(["simulate", str(_study(tmp_path)), "--out", str(out), "--replicas", "1", "-j", "1"]) == 0
    text = capsys.readouterr().out
    assert "jobs that succeeded (%)" in text
    for variant in ("on-demand", "dws-tight"):
        doc = json.loads((out / f"{variant}.json").read_text())
        jobs = doc["replicas"][0]["jobs"]
        assert doc["aggregate"]["succeededShare"]["mean"] == pytest.approx(jobs["succeeded"] / jobs["total"])
    comparison = json.loads((out / "comparison.json").read_text())
    assert all("succeededShare" in r for r in comparison["ranking"])
    html = (out / "report.html").read_text()
    assert "<th>jobs that succeeded (%)</th>" in html
    # the row's value, as the table shows a ratio: on-demand loses no job, so every one of its jobs succeeded
    assert "<td>100.0</td>" in html or "<td>100.0 [" in html


def test_a_new_metric_row_reaches_the_sweep(tmp_path, capsys, with_new_metric) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "base: dws-tight\nknobs:\n- {name: dws-max, kind: poolMax, pool: dws-pool, values: [2, 8]}\n"
    )
    out = tmp_path / "out"
    args = [
        "simulate",
        str(_study(tmp_path)),
        "--sweep",
        str(sweep),
        "--out",
        str(out),
        "--replicas",
        "1",
        "-j",
        "1",
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "succeeded (%)" in text
    rows = list(csv.DictReader(io.StringIO((out / "sweep.csv").read_text())))
    assert rows and all(0.0 <= float(r["succeededShare"]) <= 1.0 for r in rows)
    points = json.loads((out / "sweep.json").read_text())["points"]
    assert all("succeededShare" in p for p in points)
    assert "<th>succeeded (%)</th>" in (out / "report.html").read_text()
