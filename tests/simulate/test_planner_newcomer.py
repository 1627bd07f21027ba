"""What a team meets in its planner's second hour (issue 50): a generator's ``count`` not reached is said in the
summary; the sweep's progress counter counts the runs of the changes the base's causes suggest; among points as
good as each other the sweep recommends the smallest change from the base, and ``best.yaml`` says why and the TPU
chips each point needs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml

from flexq.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _week(tmp_path: Path, **generator: object) -> Path:
    """examples/tutorial-week, its tutorial variant only, with the generator's fields replaced."""
    dst = tmp_path / "week"
    shutil.copytree(ROOT / "examples" / "tutorial-week", dst)
    doc = yaml.safe_load((dst / "simulation.yaml").read_text())
    doc["generator"].update(generator)
    doc["variants"] = [v for v in doc["variants"] if v["name"] == "tutorial"]
    (dst / "simulation.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst


def test_a_generator_count_not_reached_is_said_in_the_summary(tmp_path, capsys) -> None:
    study = _week(tmp_path, count=200, duration="1d")
    out = tmp_path / "out"
    argv = [
        "simulate",
        str(study),
        "-j",
        "1",
        "--no-progress",
        "--no-what-if",
        "--no-plots",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    doc = json.loads((out / "tutorial.json").read_text())
    n = doc["replicas"][0]["jobs"]["total"]
    assert 0 < n < 200
    want = f"the generator's count asks for 200 jobs, but its duration (1d) ended the arrivals first: {n} in replica 0"
    assert f"note: {want}" in text, text
    assert any(want in note for note in json.loads((out / "comparison.json").read_text())["notes"])
    assert any(want in note for note in doc["notes"])
    # a count the arrivals reach says nothing
    study2 = _week(tmp_path / "b", count=5, duration="7d")
    out2 = tmp_path / "out2"
    flags = ["-j", "1", "--no-progress", "--no-what-if", "--no-plots", "--out", str(out2)]
    assert main(["simulate", str(study2), *flags]) == 0
    assert "generator's count" not in capsys.readouterr().out
    assert "notes" not in json.loads((out2 / "comparison.json").read_text())


def test_the_sweep_counter_counts_the_runs_of_the_suggested_changes(tmp_path) -> None:
    """In a terminal, the sweep's counter said "24/18 runs done": the runs of the changes the base's causes
    suggest were not in its total. Now they are, announced when they are planned."""
    import os
    import pty
    import select
    import sys
    import time

    study = tmp_path / "lost"
    shutil.copytree(Path(__file__).with_name("data") / "lost", study)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "base": "dws-tight",
                "knobs": [
                    {"name": "dws-max", "kind": "poolMax", "pool": "dws-pool", "values": [2, 8]},
                    {"name": "retries", "kind": "retryLimit", "config": "dws-config", "values": [1, 6]},
                ],
            }
        )
    )
    argv = [
        "simulate",
        str(study),
        "--sweep",
        str(sweep),
        "-j",
        "1",
        "--no-plots",
        "--out",
        str(tmp_path / "o"),
    ]
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=os.pathsep.join(sys.path), TERM="xterm-256color")
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "flexq.cli", *argv], env)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 1.0)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    assert os.waitstatus_to_exitcode(status) == 0, text
    counts = [(int(a), int(b)) for a, b in re.findall(r"(\d+)/(\d+) runs done", text)]
    more = re.search(r"then (\d+) run\(s\) of the changes the base's causes suggest", text)
    assert more, text  # this sweep's base has causes whose changes no grid point is
    assert counts and all(a <= b for a, b in counts), counts
    assert counts[-1][0] == counts[-1][1] == 5 + int(more.group(1)), (
        counts
    )  # the base and 4 points, then those


def test_the_headline_says_what_the_started_jobs_lived(tmp_path, capsys) -> None:
    """Beside each variant's censored wait, the headline gives its started jobs' mean wait and its evictions (a
    variant that loses no job can still make its started jobs wait 13.7 h against 0.9 h and evict them 956 times
    against 183), each from that variant's own figures."""
    out = tmp_path / "out"
    argv = ["simulate", str(ROOT / "examples" / "tutorial-week"), "--until", "2d", "-j", "1"]
    assert main([*argv, "--no-progress", "--no-what-if", "--no-plots", "--out", str(out)]) == 0
    headline = json.loads((out / "comparison.json").read_text())["headline"]
    assert " ".join(capsys.readouterr().out.split()).count(headline.split(":")[0]) >= 1
    for variant in ("tutorial", "dws-pool-16"):
        agg = json.loads((out / f"{variant}.json").read_text())["aggregate"]
        wait, ev = agg["waitToStartMean"]["mean"], agg["evictions"]["mean"]
        mins = (
            f"{wait:.0f} s"
            if wait < 120
            else f"{wait / 60:.0f} min"
            if wait < 7200
            else f"{wait / 3600:.1f} h"
        )
        lived = f"jobs that started waited {mins}, {ev:,.4g} eviction{'s' if ev != 1 else ''}"
        part = headline.split(f"{variant} ranks first:" if headline.startswith(variant) else f" {variant}: ")[
            1
        ]
        assert lived in part.split(". ")[0], (variant, lived, headline)


def test_ties_go_to_the_smallest_change_and_best_yaml_says_why_and_the_chips(tmp_path) -> None:
    """Pool sizes that all lose no job tie (the pool never fills past the smallest of them): the sweep
    recommends the smallest change from the base, not the first or the largest, and best.yaml says why, names
    the points it beat on that rule, and states the TPU chips each point needs (per region, TPU family and
    quota); sweep.csv carries both."""
    from flexq.simulate import load_study, run_sweep
    from flexq.simulate.sweep.results import tied

    study = tmp_path / "lost"
    shutil.copytree(Path(__file__).with_name("data") / "lost", study)
    sweep = {
        "base": "dws-tight",
        "knobs": [{"name": "dws-max", "kind": "poolMax", "pool": "dws-pool", "values": [512, 64, 16, 12, 2]}],
    }
    res = run_sweep(load_study(study), sweep, out=tmp_path / "out", workers=1, plots=False)
    rows = {r["point"]: r for r in res.rows}
    by_max = {r["dws-max"]: r for r in res.rows if r["dws-max"] is not None}
    best = rows[res.recommended]
    assert best["jobsLost"] == 0
    peers = [r for r in res.rows if tied(r, best)]
    # the recommended point is the smallest change among the points as good as it
    assert best["changeFromBase"] == min(r["changeFromBase"] for r in peers)
    assert {12, 16, 64, 512} <= {r["dws-max"] for r in peers}, [(r["point"], r["dws-max"]) for r in peers]
    assert best["dws-max"] == 12 and res.overall == res.recommended  # the first listed is 512: not taken
    # a pool's max 2 -> 16 is a change of 3 (log2), 2 -> 512 of 8
    changes = [by_max[m]["changeFromBase"] for m in (16, 512, 2)]
    assert changes == [3, 8, 0], changes
    text = (tmp_path / "out" / "best.yaml").read_text()
    assert text.startswith("# The changes, whole objects: kubectl apply -f best.yaml\n# Why ")
    assert "As good within noise, but a larger change from the base" in text
    for r in peers:
        if r is not best:
            assert f"{r['point']} ({r['changeFromBase']:g} against {best['changeFromBase']:g})" in text
    # chips: the on-demand pool (2 VMs x 4 chips) and the DWS pool (flex-start: the preemptible quota)
    assert f"#   {res.recommended} <- this file: us-east5 v6e: 8 on-demand + 48 preemptible chips" in text
    assert (
        f"#   {by_max[512]['point']}: us-east5 v6e: 8 on-demand + 2048 preemptible chips (more than the base)"
        in text
    )
    assert f"#   {res.base} (base): us-east5 v6e: 8 on-demand + 8 preemptible chips" in text
    assert "--max-nodes 12" in text
    table = (tmp_path / "out" / "sweep.csv").read_text().splitlines()
    assert table[0].endswith(",changeFromBase,tpuChips")
