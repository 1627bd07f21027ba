"""Issue 28 item 6: the ``flexq`` command's help, short options, version, time options, usage errors and shell
completion, as a user of kubectl and gcloud expects them."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flexq import __version__
from flexq.cli import completion
from flexq.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def commands(
    parser: argparse.ArgumentParser, path: str = "flexq"
) -> list[tuple[str, argparse.ArgumentParser]]:
    out = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out += commands(child, f"{path} {name}")
    return out


ALL = commands(build_parser())


@pytest.mark.parametrize("path, parser", ALL, ids=[p for p, _ in ALL])
def test_every_command_has_a_description_examples_and_help_for_each_option(
    path: str, parser: argparse.ArgumentParser
) -> None:
    assert parser.description and len(parser.description) > 20, path
    assert parser.epilog and parser.epilog.startswith("examples:\n  ") and "flexq" in parser.epilog, path
    text = parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        assert action.help, (path, action.option_strings or action.dest)
        d = action.default
        if action.option_strings and not (
            d is None or d is False or d == [] or d == argparse.SUPPRESS or isinstance(action.const, bool)
        ):
            # the default is in the help (submit's accelerator, topology and queue included; a 0 too), a time
            # with its unit
            helptext = " ".join(parser._get_formatter()._expand_help(action).split())
            if getattr(action.type, "__name__", "") == "duration":
                want = f"{d:g} s" if d < 120 or d % 60 else f"{d / 60:g} min"
            else:
                want = str(d)
            assert f"(default: {want}" in helptext, (path, action.option_strings, helptext)
    assert "examples:" in text
    assert "%%" not in text, path  # a description is printed as written: "80 %" (issue 50)


@pytest.mark.parametrize(
    "argv, meant",
    [
        (["status", "--namepsace", "x"], "did you mean --namespace? (see: flexq status --help)"),
        (["simulate", "--sweeep", "s.yaml"], "did you mean --sweep? (see: flexq simulate --help)"),
        (["eta", "--replica", "2", "--kubeconfg", "k"], "did you mean --kubeconfig?"),
        (["stauts"], "did you mean 'status'?"),
    ],
)
def test_a_misspelled_option_or_command_gets_a_did_you_mean(capsys, argv: list[str], meant: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert meant in err, err


def test_submits_defaults_show_in_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for shown in ("(default: tpu-v6e-slice)", "(default: 4x4)", "(default: user-queue)"):
        assert shown in text, shown


# simulate's -o/--out lives in cli/simulate.py, which this change does not touch (see the report to the lead)
ELSEWHERE: set[tuple[str, str]] = set()


def test_one_meaning_per_short_option() -> None:
    meaning: dict[str, set[str]] = {}
    for path, parser in ALL:
        for action in parser._actions:
            shorts = [o for o in action.option_strings if not o.startswith("--")]
            longs = [o for o in action.option_strings if o.startswith("--")]
            for short in shorts:
                if (path, short) in ELSEWHERE:
                    continue
                meaning.setdefault(short, set()).update(longs or [short])
    clashes = {s: ls for s, ls in meaning.items() if len(ls) > 1}
    assert not clashes, clashes
    assert (
        meaning["-o"] == {"--output"} and meaning["-n"] == {"--namespace"} and meaning["-V"] == {"--version"}
    )


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flexq.cli", flag], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == f"flexq {__version__}"


@pytest.mark.parametrize(
    "argv, field, says",
    [
        (["simulate", str(ROOT / "examples/tutorial-week"), "--until", "-1h"], "--until", "'-1h'"),
        (["simulate", str(ROOT / "examples/tutorial-week"), "--until", "6 hours"], "--until", "'6 hours'"),
        (["status", "--interval", "-1h"], "--interval", "must not be negative: '-1h'"),
        (["status", "--interval", "6 hours"], "--interval", "invalid duration '6 hours'"),
        (["logs", "x", "-f", "--pod-running-timeout", "soon"], "--pod-running-timeout", "invalid duration"),
        (["fallback", "--interval", "-15"], "--interval", "must not be negative"),
        (["up", "--timeout", "2 minutes"], "--timeout", "invalid duration '2 minutes'"),
    ],
    ids=[
        "until-negative",
        "until-words",
        "interval-negative",
        "interval-words",
        "logs-timeout",
        "fallback",
        "up",
    ],
)
def test_durations_get_one_clear_line(argv: list[str], field: str, says: str) -> None:
    """A bad time on the command line is one line naming the option and the value, exit status 2, as a bad
    study file is (``--until -1h`` used to be read as an unknown option, with the whole usage printed)."""
    out = subprocess.run(
        [sys.executable, "-m", "flexq.cli", *argv], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"error: {field}: ") and says in lines[0], lines[0]
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_times_take_durations() -> None:
    args = build_parser().parse_args(["status", "-w", "--interval", "1m30s"])
    assert args.interval == 90.0
    args = build_parser().parse_args(["fallback", "--grace", "2m", "--interval", "15"])
    assert (args.grace, args.interval) == (120.0, 15.0)


def _bash_complete(script: str, line: str) -> list[str]:
    words = line.split(" ")
    program = (
        script
        + "\nCOMP_WORDS=("
        + " ".join(f"'{w}'" for w in words)
        + f")\nCOMP_CWORD={len(words) - 1}\n_flexq\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    )
    out = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30, cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_walks_the_command_tree() -> None:
    script = completion.script(build_parser(), "bash")
    assert "complete -o filenames -F _flexq flexq" in script
    assert _bash_complete(script, "flexq st") == ["status"]
    assert set(_bash_complete(script, "flexq tutorial ")) >= {"init", "setup", "cleanup"}
    assert "manifests" in _bash_complete(script, "flexq fallback man")
    assert set(_bash_complete(script, "flexq status -o ")) == {"table", "wide", "json", "yaml"}
    assert {"--output", "--watch", "--all-namespaces", "--interval"} <= set(
        _bash_complete(script, "flexq status --")
    )
    assert set(_bash_complete(script, "flexq fallback manifests --")) >= {
        "--image",
        "--package",
        "--package-sha256",
    }
    assert set(_bash_complete(script, "flexq up --executor ")) == {"ray", "simulated"}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_command(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    if shell == "fish":
        assert "complete -c flexq -f -n __fish_use_subcommand -a status" in out
        assert (
            "complete -c flexq -n '__fish_seen_subcommand_from status' -s o -x -a 'table wide json yaml'"
            in out
        )
    else:
        assert "_flexq()" in out and (shell == "bash" or out.startswith("autoload -U +X bashcompinit"))
        checked = subprocess.run(
            ["bash", "-n"], input=out.split("\n", 1)[1] if shell == "zsh" else out, text=True
        )
        assert checked.returncode == 0


def test_a_mistyped_command_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["stauts"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "did you mean 'status'?" in err and err.count("\n") == 1, err


def test_zero_defaults_and_times_are_said_with_their_unit() -> None:
    (fb,) = [p for path, p in ALL if path == "flexq fallback"]
    text = " ".join(fb.format_help().split())
    assert "(0: never) (default: 0 s)" in text and "(0: off) (default: 0)" in text
    (up,) = [p for path, p in ALL if path == "flexq up"]
    assert "(default: 90 s)" in " ".join(up.format_help().split())


def test_flexq_version_license_and_changelog(capsys) -> None:
    """`flexq version` (as -V, then what it models and runs), a LICENSE that is the license pyproject names, and a
    CHANGELOG that has the version (issue 50)."""
    import tomllib

    from flexq.api.kueue_versions import DEFAULT, KNOWN

    assert main(["version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"flexq {__version__}"
    assert f"{DEFAULT.version} (default)" in lines[1] and all(v in lines[1] for v in KNOWN)
    assert any(line.startswith("Ray (real training): ") for line in lines)
    assert main(["version", "--short"]) == 0
    assert capsys.readouterr().out == f"flexq {__version__}\n"
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == {"text": "Apache-2.0"} and meta["version"] == __version__
    text = (ROOT / "LICENSE").read_text()
    assert (
        "Apache License" in text
        and "Version 2.0, January 2004" in text
        and "END OF TERMS AND CONDITIONS" in text
    )
    assert f"## {__version__}" in (ROOT / "CHANGELOG.md").read_text()
