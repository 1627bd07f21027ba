"""A state file that is not a flexq database (or is damaged) stops the twin with an error naming the file, and
is left exactly as it was: never overwritten by a fresh, empty twin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flexq import Twin
from flexq.errors import InputError


def _damaged(home: Path) -> bytes:
    twin = Twin(clock="real", home=home, executor="simulated")
    twin.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}})
    twin.close()
    state = home / "state.db"
    with open(state, "r+b") as f:
        f.write(b"garbage!" * 16)  # the SQLite header
    return state.read_bytes()


def test_a_damaged_state_file_is_an_error_naming_it_and_is_left_as_it_was(tmp_path: Path) -> None:
    before = _damaged(tmp_path)
    with pytest.raises(InputError) as exc:
        Twin(clock="real", home=tmp_path, executor="simulated")
    assert str(tmp_path / "state.db") in str(exc.value) and "move it aside" in str(exc.value)
    assert (tmp_path / "state.db").read_bytes() == before


def test_the_daemon_says_so_in_one_line_and_exits(tmp_path: Path) -> None:
    before = _damaged(tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "flexq.cli.daemon", "--home", str(tmp_path), "--executor", "simulated"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and "cannot start the twin" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert (tmp_path / "state.db").read_bytes() == before
