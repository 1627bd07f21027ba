"""flexq simulate end to end: determinism (byte-identical files), Kueue's generator.yaml through the command,
bad input stopped before simulating with the file, line and field named."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import flexq
from flexq.cli.main import main
from flexq.errors import InputError

ROOT = Path(__file__).resolve().parents[2]

CLUSTER = {
    "project": "p",
    "location": "us-central1-a",
    "name": "c1",
    "nodePools": [
        {
            "name": "default-pool",
            "machineType": "n2-standard-8",
            "nodes": 1,
            "autoscaling": {"min": 1, "max": 3},
        }
    ],
}


def small_study(study_dir, **extra):
    return study_dir(
        {
            "name": "small",
            "seed": 5,
            "cluster": CLUSTER,
            "capacity": "tutorial",
            "generator": {
                "count": 25,
                "arrivals": {"exponential": {"mean": "2m"}},
                "mix": [
                    {
                        "kind": "Job",
                        "podsets": "main:1:cpu=3",
                        "queue": "q",
                        "run": {"exponential": {"mean": "5m"}},
                        "failed": 0.1,
                    },
                    {
                        "kind": "Workload",
                        "podsets": "main:2:cpu=1",
                        "queue": "q",
                        "run": "3m",
                        "class": "bare",
                    },
                ],
            },
            **extra,
        },
        quota=6,
    )


def test_same_inputs_and_seeds_give_identical_bytes(study_dir, tmp_path) -> None:
    study = small_study(study_dir)
    a = flexq.simulate(study, out=tmp_path / "a", workers=1, plots=False)
    flexq.simulate(study, out=tmp_path / "b", workers=1, plots=False)
    for name in ("jobs.csv", "default.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    rows = a.runs[0].jobs
    assert len(rows) == 25 and {r["kind"] for r in rows} == {"Job", "Workload"}
    assert all(r["outcome"] in ("Succeeded", "Failed") for r in rows)
    doc = a.documents["default"]["replicas"][0]
    assert doc["costUSD"]["total"] > 0 and doc["nodeHours"]["on-demand"] > 0
    names = {m["name"] for m in doc["metrics"]}
    assert {"kueue_admission_wait_time_seconds", "kueue_admitted_workloads_total"} <= names
    c = flexq.simulate(study, out=tmp_path / "c", workers=1, plots=False, seed=6)
    assert (tmp_path / "c" / "jobs.csv").read_bytes() != (tmp_path / "a" / "jobs.csv").read_bytes()
    assert c.runs[0].seed == 6


def test_kueue_generator_yaml_reports_time_to_admission_per_class(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    rc = main(
        [
            "simulate",
            str(ROOT / "examples/kueue-baseline/generator.yaml"),
            "--scale",
            "0.02",
            "-j",
            "1",
            "--no-plots",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "class small" in text and "class large" in text
    import json

    from rich.console import Console

    from flexq.cli.simulate_report import summary_tables

    # on a narrow console (a CI log) the rows' names stay whole
    narrow = Console(width=80, record=True, color_system=None, file=io.StringIO())
    for t in summary_tables({"default": json.loads((out / "default.json").read_text())}):
        narrow.print(t)
    shown = narrow.export_text()
    assert "class small" in shown and "class large" in shown
    doc = json.loads((out / "default.json").read_text())["replicas"][0]
    classes = doc["timeToAdmissionByClass"]
    assert set(classes) == {"small", "medium", "large"}
    # 5 cohorts x 6 queues x (7 small + 2 medium + 1 large)
    assert sum(c["count"] for c in classes.values()) == 300 == doc["jobs"]["succeeded"]
    # Kueue's rangespec thresholds for the baseline (ms): small 260 s, medium 90 s, large 23 s
    assert classes["small"]["mean"] < 260 and classes["medium"]["mean"] < 90 and classes["large"]["mean"] < 23
    usage = doc["clusterQueueReservationPercent"]
    assert len(usage) == 30 and min(usage.values()) > 0


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "trace, message, where",
    [
        ("submit,queue,podsets,colour\n0,q,main:1:cpu=1,red\n", "unknown column 'colour'", "trace.csv:1"),
        (
            "submit,queue,podsets\n10,q,main:1:cpu=1\n-5,q,main:1:cpu=1\n",
            "must not be negative",
            "trace.csv:3 (submit)",
        ),
        (
            "submit,queue,podsets\n0,q,main:1:cpu=1\n5,nope,main:1:cpu=1\n",
            "no LocalQueue 'nope'",
            "trace.csv:3 (queue)",
        ),
        (
            '{"submit": 0, "queue": "q", "podsets": [{"name": "m", "count": 0}]}\n',
            "must be at least 1, got 0",
            "trace.jsonl:1 (podsets[0].count)",
        ),
    ],
)
def test_bad_trace_stops_before_simulating(study_dir, trace, message, where) -> None:
    name = "trace.jsonl" if trace.startswith("{") else "trace.csv"
    study = study_dir({"name": "bad", "trace": name}, files={name: trace})
    with pytest.raises(InputError) as err:
        flexq.simulate(study, workers=1, plots=False)
    assert message in str(err.value) and where in str(err.value), str(err.value)


def test_a_manifest_the_api_refuses_is_named(study_dir, tmp_path) -> None:
    bad = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: broken}\n"
        "spec: {queueingStrategy: Sideways}\n"
    )
    study = study_dir(
        {"name": "bad", "manifests": ["queues.yaml", "broken.yaml"], "trace": "trace.csv"},
        files={"broken.yaml": bad, "trace.csv": "submit,queue,podsets\n0,q,main:1:cpu=1\n"},
    )
    with pytest.raises(InputError) as err:
        flexq.simulate(study, workers=1, plots=False)
    assert "broken.yaml:5 (document 2)" in str(err.value) and "ClusterQueue/broken" in str(err.value)


def test_cli_reports_bad_input_with_status_2(study_dir, capsys) -> None:
    study = study_dir({"name": "bad", "trace": "t.csv", "colour": "red"}, files={"t.csv": "submit,queue\n"})
    assert main(["simulate", str(study), "--no-progress"]) == 2
    assert "unknown field 'colour'" in capsys.readouterr().err


@pytest.mark.slow
def test_tutorial_week_example_runs(tmp_path, capsys) -> None:
    """The shipped example, whole: a team's week of the tutorial's RayJobs on the tutorial's cluster, plan A /
    plan B through DWS ProvisioningRequests; the tutorial's one-slice DWS pool loses jobs to NodepoolSizeReached,
    and the variant with a larger pool ranks first; every output file."""
    out = tmp_path / "out"
    assert (
        main(
            ["simulate", str(ROOT / "examples/tutorial-week"), "-j", "1", "--no-progress", "--out", str(out)]
            + ["--no-what-if"]  # the what-ifs of this week: bench/planner_family.py
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "dws-pool-16 ranks first" in text and "ProvisioningRequests" in text
    import json

    tutorial = json.loads((out / "tutorial.json").read_text())["replicas"][0]
    bigger = json.loads((out / "dws-pool-16.json").read_text())["replicas"][0]
    assert 80 <= tutorial["jobs"]["total"] == bigger["jobs"]["total"] <= 130
    assert tutorial["jobs"]["lost"] > bigger["jobs"]["lost"]
    assert tutorial["causes"][0]["code"] == "NodepoolSizeReached"
    assert tutorial["provisioningRequests"]["Provisioned"] >= 1 and tutorial["costUSD"]["flex-start"] > 0
    assert {p.name for p in out.iterdir()} >= {
        "jobs.csv",
        "comparison.json",
        "outcomes.png",
        "wait-split.png",
        "wait-cdf.png",
        "cost.png",
        "report.html",
        "timeline-tutorial.png",
        "timeline-dws-pool-16.png",
    }


def test_stress_week_example_runs(tmp_path, capsys) -> None:
    """The stress study, its first hour of traffic: both variants, every output file."""
    out = tmp_path / "out"
    argv = [
        "simulate",
        str(ROOT / "examples/stress-week"),
        "--until",
        "1h",
        "-j",
        "1",
        "--no-progress",
        "--out",
    ]
    assert main([*argv, str(out)]) == 0
    text = capsys.readouterr().out
    assert "tutorial" in text and "dws-only" in text
    import json

    for variant in ("tutorial", "dws-only"):
        doc = json.loads((out / f"{variant}.json").read_text())["replicas"][0]
        assert doc["jobs"]["total"] >= 5
        assert doc["jobs"]["succeeded"] + doc["jobs"]["failed"] == doc["jobs"]["total"]
        assert doc["provisioningRequests"]["Provisioned"] >= 1 and doc["costUSD"]["flex-start"] > 0


def test_scale_is_never_silently_ignored(study_dir) -> None:
    """``scale`` sizes Kueue's generator.yaml when a study is loaded. With flexq's generator (or a trace) it would
    change nothing, and with an already loaded ``Study`` it could not apply: both refused, naming the field."""
    path = small_study(study_dir)
    with pytest.raises(InputError) as err:
        flexq.simulate(path, workers=1, plots=False, scale=0.5)
    assert "(--scale)" in str(err.value) and "Kueue's generator.yaml only" in str(err.value), str(err.value)
    assert main(["simulate", str(path), "--scale", "0.5", "--no-progress"]) == 2
    flexq.simulate(path, workers=1, plots=False, scale=1.0)  # the default, said aloud, is fine
    study = flexq.simulate.load_study(path)
    with pytest.raises(InputError) as err:
        flexq.simulate(study, workers=1, plots=False, scale=0.5)
    assert "(scale)" in str(err.value) and "load_study(path, scale=...)" in str(err.value), str(err.value)
