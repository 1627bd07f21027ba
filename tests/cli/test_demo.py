"""``flexq demo --simulated``: the tutorial's story end to end, in process and as the command."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from flexq.cli import tutorial
from flexq.cli.demo import NEXT_STEPS, DemoOptions, run_demo
from flexq.cli.ray_output import training_lines

DATA = Path(__file__).parent / "data"


def _console(terminal: bool = False) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=220, force_terminal=terminal, color_system=None), buf


@pytest.mark.parametrize("live", [False, True], ids=["transitions", "live-view"])
def test_simulated_demo_tells_the_tutorials_story(live: bool) -> None:
    console, buf = _console(terminal=live)
    result = run_demo(DemoOptions(simulated=True, live=live), console)
    out = buf.getvalue()
    assert result.error == ""
    assert [(j.name, j.flavor, j.state) for j in result.jobs] == [
        ("rayjob-tpu-v6e-dws-1", "on-demand", "Succeeded"),
        ("rayjob-tpu-v6e-dws-2", "dws", "Succeeded"),
    ]
    assert result.story_holds
    one, two = result.jobs
    assert two.waited > one.waited, "job 2 waits for DWS capacity"
    assert "-dws-prov-1: Provisioned" in two.provisioning and one.provisioning == ""
    assert 0 < two.cost < one.cost, "flex-start is billed below on-demand for the same run time"
    for j in result.jobs:
        assert "Succeeded" in j.output, j.output
    assert 'get(config.flexStart)": True' in out
    assert "plan A (on-demand)" in out and "plan B (DWS flex-start)" in out
    assert "As in the tutorial" in out
    assert "QuotaReserved" in out and "dws-prov: Pending" in out  # job 2 was seen waiting for its check
    # issue 28 item 7: the demo ends with what to try next
    assert out.rstrip().endswith(NEXT_STEPS.splitlines()[-1].rstrip())
    for step in (
        "flexq tutorial init",
        "flexq up",
        "flexq simulate examples/tutorial-week",
        "flexq dashboard",
    ):
        assert step in out, step


def test_demo_reports_a_broken_story() -> None:
    """With the on-demand quota removed, job 1 cannot land on plan A: the demo says so and fails."""
    original = tutorial.queue_yaml

    def no_on_demand(env: dict | None = None, api: str = "v1beta1") -> str:
        docs = list(yaml.safe_load_all(original(env, api)))
        for d in docs:
            if d["kind"] == "ClusterQueue":
                flavors = d["spec"]["resourceGroups"][0]["flavors"]
                d["spec"]["resourceGroups"][0]["flavors"] = [f for f in flavors if f["name"] != "on-demand"]
        return yaml.safe_dump_all(docs)

    console, buf = _console()
    tutorial.queue_yaml = no_on_demand  # type: ignore[assignment]
    try:
        result = run_demo(DemoOptions(simulated=True, live=False), console)
    finally:
        tutorial.queue_yaml = original  # type: ignore[assignment]
    assert not result.story_holds
    assert [j.flavor for j in result.jobs] == ["dws", "dws"]
    assert "did not tell the tutorial's story" in buf.getvalue()


def test_flexq_demo_simulated_command_exits_0() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "demo", "--simulated", "--no-live"],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "As in the tutorial" in proc.stdout


@pytest.mark.parametrize(
    "opts, least_wait",
    [
        (DemoOptions(simulated=True, live=False, dws_wait=300), 300),
        (DemoOptions(simulated=True, live=False, capacity="tutorial"), 60),
    ],
    ids=["dws-wait-300s", "tutorial-capacity"],
)
def test_capacity_choices_change_job_2s_wait(opts: DemoOptions, least_wait: float) -> None:
    console, _ = _console()
    result = run_demo(opts, console)
    assert result.story_holds, result
    assert result.jobs[1].waited >= least_wait > result.jobs[0].waited


def test_tutorial_capacity_needs_the_virtual_clock() -> None:
    with pytest.raises(ValueError, match="--simulated"):
        run_demo(
            DemoOptions(simulated=False, capacity="tutorial"),
            _console()[0],
            make_twin=lambda **kw: pytest.fail("no twin should be built"),
        )


def test_training_lines_pick_what_train_py_and_ray_say() -> None:
    from flexq.cli.ray_output import training_lines

    log = "\n".join(
        [
            "(pid=, ip=10.68.3.4) 5] XLA::TPU program HBM usage: 52.5K / 31.25G",
            "(RayTrainWorker pid=542, ip=10.68.6.4) Epoch 40: Loss 0.0000 [repeated 3x across cluster]",
            "(RayTrainWorker pid=542, ip=10.68.6.4) Training Complete! [repeated 3x across cluster]",
            "2026-03-20 03:59:51,008 SUCC cli.py:65 -- ------------------------------------------",
            "2026-03-20 03:59:51,008 SUCC cli.py:66 -- Job 'rayjob-tpu-v6e-dws-1-498t6' succeeded",
        ]
    )
    lines, title = training_lines(log, 12)
    assert lines == log.splitlines()[1:3] + log.splitlines()[4:] and title == "training lines, 5 lines in all"
    assert training_lines("a\nb\n\nc", 2) == (["b", "c"], "last 2 lines")


def test_the_log_panel_shows_rank_0s_training_in_order() -> None:
    """Issue 28 item 7. ``demo-rayjob-1.log`` is job 1's log from a real-Ray ``flexq demo`` (2026-12-04, with
    ``RAY_DEDUP_LOGS=0``): four workers print the same lines, each worker's lines twice. The panel shows the
    rank-0 worker's lines once each, in the order train.py printed them, then the result and Ray's verdict."""
    lines, title = training_lines((DATA / "demo-rayjob-1.log").read_text(), 12)
    worker = "(RayTrainWorker pid=20316) "  # world_rank=0 in the TrainController's table
    assert [ln.removeprefix(worker) for ln in lines[2:-1]] == [
        "Local Devices: [CpuDevice(id=0)]",
        "Starting training...",
        *(
            f"Epoch {e}: Loss {loss}"
            for e, loss in ((0, "9.6865"), (10, "0.1206"), (20, "0.0017"), (30, "0.0000"), (40, "0.0000"))
        ),
        "Training Complete!",
        "Run Result: None",
    ]
    assert lines[0].startswith("[flexq] runtime_env pip 'jax[tpu]==0.8.2'")
    assert lines[-1].endswith("Job 'rayjob-tpu-v6e-dws-1-942ff' succeeded")
    assert title == "rank-0 worker's training lines, 126 lines in all"
    short, _ = training_lines((DATA / "demo-rayjob-1.log").read_text(), 6)
    assert len(short) == 6 and short[-2] == "…" and short[-1] == lines[-1]  # the verdict is always shown


def test_the_demos_jobs_run_without_ray_log_deduplication() -> None:
    """Ray folds lines that differ only in numbers ("Epoch 20", "Epoch 30") into one "[repeated Nx across
    cluster]" line printed after the run's result; the demo's RayJobs turn that off in their runtime env."""
    import yaml

    from flexq import Twin

    made: list[Twin] = []

    def make(**kw: object) -> Twin:
        made.append(Twin(**kw))  # type: ignore[arg-type]
        return made[-1]

    console, _ = _console()
    assert run_demo(DemoOptions(simulated=True, live=False), console, make_twin=make).story_holds
    jobs = made[0].list("RayJob", "default")
    assert len(jobs) == 2
    for job in jobs:
        runtime_env = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
        assert runtime_env["env_vars"] == {"RAY_DEDUP_LOGS": "0"}
        assert runtime_env["pip"] == ["jax[tpu]==0.8.2", "pandas==2.3.3"]  # the tutorial's, kept
