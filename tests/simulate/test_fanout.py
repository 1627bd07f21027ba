"""A study's runs fan out over processes and over a Ray cluster with identical results."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import flexq
from flexq.simulate.results import csv_text

SRC = str(Path(__file__).resolve().parents[2] / "src")


def study(study_dir):
    return study_dir(
        {
            "name": "fan",
            "seed": 3,
            "replicas": 2,
            "generator": {
                "count": 60,
                "arrivals": {"exponential": {"mean": 60}},
                "mix": [
                    {
                        "kind": "Workload",
                        "podsets": "main:1:cpu=1",
                        "queue": "q",
                        "run": {"exponential": {"mean": 100}},
                    }
                ],
            },
            "variants": [{"name": "a"}, {"name": "b", "manifests": ["queues.yaml"]}],
        },
        quota=2,
    )


def test_processes_give_the_sequential_results(study_dir) -> None:
    s = study(study_dir)
    seq = flexq.simulate(s, workers=1, plots=False)
    seen: list[dict] = []
    par = flexq.simulate(s, workers=2, plots=False, progress=seen.append, whatif=False)
    seq_plain = flexq.simulate(s, workers=1, plots=False, whatif=False)
    # the worker processes report progress through the queue: every run ends with a "done" report
    assert sorted((p["variant"], p["replica"]) for p in seen if p["done"]) == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("b", 1),
    ]
    assert [(r.variant, r.replica) for r in par.runs] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert csv_text(par.runs) == csv_text(seq.runs) == csv_text(seq_plain.runs)
    assert par.documents == seq_plain.documents


@pytest.mark.slow
@pytest.mark.ray
def test_ray_cluster_gives_the_same_results(study_dir, tmp_path, monkeypatch) -> None:
    """A local Ray cluster owned by a helper process (shut down by it, so only its own processes go).
    Token auth is off on both sides (Ray 2.60 turns it on when ~/.ray/auth_token exists)."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    script = textwrap.dedent("""
        import sys, ray
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
                 runtime_env={"env_vars": {"PYTHONPATH": sys.argv[1]}})
        print(ray.get_runtime_context().gcs_address, flush=True)
        sys.stdin.read()
        ray.shutdown()
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script, SRC],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, "RAY_AUTH_MODE": "disabled"},
    )
    try:
        address = proc.stdout.readline().strip()
        assert address, "the Ray helper did not start"
        s = study(study_dir)
        seq = flexq.simulate(s, workers=1, plots=False)
        via_ray = flexq.simulate(s, ray_address=address, plots=False)
        assert csv_text(via_ray.runs) == csv_text(seq.runs)
        assert via_ray.documents == seq.documents
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)
