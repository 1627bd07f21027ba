"""``flexq simulate`` writes only where it should and reads only regular files (issue 27, item 5).

A study folder is often someone else's. Its ``results/`` may ship a symbolic link where a result goes, or a named
pipe where the trace is; a template may hold 200,000 placeholders. Each is refused with the project's error naming
the file, before anything is written or any run starts, and nothing outside the output folder changes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import flexq
from flexq.cli.main import main
from flexq.errors import InputError
from flexq.simulate import load_study, preflight
from flexq.simulate.outputs import write_file

from .test_fuzz_inputs import JOB_TEMPLATE, deadline, make, refused


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    with deadline(60):
        rc = main(["simulate", *argv, "--no-plots", "--no-progress"])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_results_link_shipped_with_the_study_is_refused_and_its_target_untouched(tmp_path, capsys) -> None:
    study = make(tmp_path / "s")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (study / "results").mkdir()
    os.symlink("../../victim.txt", study / "results" / "jobs.csv")
    rc, out, err = _cli(capsys, str(study))
    assert rc == 2, (out, err)
    assert "jobs.csv" in err and "symbolic link" in err, err
    assert "run(s)" not in out  # refused before the runs, not after them
    assert victim.read_text() == "precious\n"
    # the Python API refuses it as well (it writes the same files)
    with pytest.raises(InputError, match="symbolic link"):
        flexq.simulate(study, workers=1, plots=False, out=study / "results")
    assert victim.read_text() == "precious\n"


def test_a_link_in_place_of_the_output_folder_is_refused(tmp_path, capsys) -> None:
    study = make(tmp_path / "s")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, study / "results")
    rc, _, err = _cli(capsys, str(study))
    assert rc == 2 and "symbolic link" in err and "--out" in err, err
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "dir"])
def test_a_result_that_is_not_a_regular_file_is_refused_by_name(tmp_path, capsys, kind) -> None:
    study = make(tmp_path / "s")
    out = tmp_path / "out"
    out.mkdir()
    target = out / "comparison.json"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    rc, _, err = _cli(capsys, str(study), "--out", str(out))
    assert rc == 2, err
    assert "comparison.json" in err and ("named pipe" in err or "directory" in err), err


def test_results_are_written_whole_and_replace_the_old_ones(tmp_path, capsys) -> None:
    study = make(tmp_path / "s")
    out = tmp_path / "out"
    rc, _, err = _cli(capsys, str(study), "--out", str(out))
    assert rc == 0, err
    (out / "jobs.csv").write_text("old\n")
    (out / "gone.json").write_text("{}")  # a variant an earlier run had, listed as that run's
    mark = json.loads((out / ".flexq-simulate.json").read_text())
    mark["files"].append("gone.json")
    (out / ".flexq-simulate.json").write_text(json.dumps(mark))
    rc, _, err = _cli(capsys, str(study), "--out", str(out))
    assert rc == 0, err
    text = (out / "jobs.csv").read_text()
    assert text.startswith("variant,") or "variant" in text.splitlines()[0]
    assert not (out / "gone.json").exists()  # the earlier run's file this one did not write: removed
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind


def test_a_folder_of_other_files_or_of_another_kind_of_run_is_refused_without_force(tmp_path, capsys) -> None:
    study = make(tmp_path / "s")
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    rc, out_text, err = _cli(capsys, str(study), "--out", str(out))
    assert rc == 2 and "notes.txt" in err and "--force" in err and "run(s)" not in out_text, err
    rc, _, err = _cli(capsys, str(study), "--out", str(out), "--force")
    assert rc == 0, err
    assert (out / "notes.txt").read_text() == "mine\n"  # --force writes beside it, never removes it
    # a sweep into a plain run's folder: refused, naming what is there
    (study / "sweep.yaml").write_text(
        "knobs: [{kind: nominalQuota, clusterQueue: cq, flavor: default, resource: cpu, values: [2, 4]}]\n"
    )
    rc, _, err = _cli(capsys, str(study), "--out", str(out), "--sweep", str(study / "sweep.yaml"))
    assert rc == 2 and "a simulation's results" in err and "jobs.csv" in err, err
    # with --force the sweep replaces them: the plain run's files do not stay beside the sweep's
    rc, _, err = _cli(capsys, str(study), "--out", str(out), "--sweep", str(study / "sweep.yaml"), "--force")
    assert rc == 0, err
    names = {p.name for p in out.iterdir()}
    assert {"sweep.csv", "best.diff", "best.yaml", "notes.txt"} <= names
    assert "comparison.json" not in names, names


def test_write_file_replaces_a_link_swapped_in_after_the_check_without_following_it(tmp_path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = tmp_path / "r.json"
    os.symlink(victim, path)
    with pytest.raises(InputError, match="symbolic link"):
        write_file(path, "{}")
    assert victim.read_text() == "precious"
    os.unlink(path)
    write_file(path, "{}")
    assert path.read_text() == "{}" and not path.is_symlink()


@pytest.mark.parametrize("what", ["trace.csv", "job.yaml", "simulation.yaml", "queues.yaml"])
def test_a_fifo_as_an_input_is_refused_at_once(tmp_path, what) -> None:
    study = make(tmp_path / "s", {}, {"trace.csv": "submit,queue,kind,template\n0,q,Job,job.yaml\n"})
    (study / what).unlink()
    os.mkfifo(study / what)  # no writer: opening it blocking would wait forever
    with deadline(10), pytest.raises(InputError) as err:
        preflight(load_study(study))
    assert what in str(err.value) and "named pipe" in str(err.value), err.value


def test_a_device_as_the_trace_is_refused(tmp_path) -> None:
    study = make(tmp_path / "s")
    (study / "trace.csv").unlink()
    os.symlink("/dev/zero", study / "trace.csv")  # inside the study by name; a device by kind
    with deadline(10), pytest.raises(InputError) as err:
        preflight(load_study(study))
    assert "outside" in str(err.value) or "character device" in str(err.value), err.value


def test_a_template_of_200k_placeholders_cannot_ask_for_gigabytes(tmp_path) -> None:
    name = "n" * 253  # the longest name an object may have
    many = "${NAME}" * 200_000  # 1.4 MB of placeholders: 50 MB once substituted
    template = JOB_TEMPLATE.replace('team: "${QUEUE}"', f'team: "{many}"')
    files = {"trace.csv": f"submit,queue,kind,name,template\n0,q,Job,{name},job.yaml\n", "job.yaml": template}
    err = refused(make(tmp_path / "s", {}, files), "job.yaml", "MiB once its placeholders are substituted")
    assert "8 MiB" in str(err)


def test_a_130000_character_name_is_refused_on_its_trace_line(tmp_path) -> None:
    files = {"trace.csv": f"submit,queue,kind,name,template\n0,q,Job,{'a' * 130_000},job.yaml\n"}
    refused(make(tmp_path / "s", {}, files), "trace.csv:2", "(name)", "253 characters")


def test_namespace_is_substituted_whole_not_as_name_plus_space(tmp_path) -> None:
    from flexq.simulate.objects import substitute

    env = {"NAME": "job-1", "NAMESPACE": "team-a", "QUEUE": "q", "JOB_ID": "1"}
    got = substitute({"a": "$NAMESPACE/$NAME", "b": "${NAMESPACE}-${JOB_ID}", "c": "$HOME $NAMEX"}, env, "t")
    assert got == {"a": "team-a/job-1", "b": "team-a-1", "c": "$HOME $NAMEX"}


def test_a_study_of_many_runs_is_announced_before_it_starts(tmp_path, capsys, monkeypatch) -> None:
    import flexq.cli.simulate as cli

    monkeypatch.setattr(cli, "LARGE_STUDY_RUNS", 1)  # 2 replicas: over the line without running thousands
    study = make(tmp_path / "s", {"replicas": 2})
    rc, _, err = _cli(capsys, str(study), "--out", str(tmp_path / "out"))
    assert rc == 0
    assert "warning: 2 runs" in err and "--replicas" in err, err


def test_a_million_runs_are_refused_up_front_unless_allowed(tmp_path, capsys) -> None:
    """100 variants × 10,000 replicas (issue 36): refused before anything runs, naming the flag to go beyond."""
    variants = [{"name": f"v{i}"} for i in range(100)]
    study = make(tmp_path / "s", {"replicas": 10_000, "variants": variants})
    rc, out, err = _cli(capsys, str(study), "--out", str(tmp_path / "out"))
    assert rc == 2 and "flexq simulate" not in out, out
    assert (
        "error: 100 variant(s) × 10000 replica(s) = 1,000,000 runs, more than --max-runs 10,000" in err
        and "allow it with --max-runs 1000000" in err
    ), err
    assert not list((tmp_path / "out").iterdir())  # nothing simulated
    # within a raised bound the same study is only announced (two runs of it, to keep the test short)
    rc, _, err = _cli(
        capsys,
        str(study),
        "--out",
        str(tmp_path / "out"),
        "--replicas",
        "1",
        "--variant",
        "v1",
        "--max-runs",
        "1",
    )
    assert rc == 0, err


def test_write_file_keeps_the_umask(tmp_path) -> None:
    path = write_file(tmp_path / "x.json", b"{}")
    assert Path(path).stat().st_mode & 0o777 == 0o644 & ~_umask()


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m
