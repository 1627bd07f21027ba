"""``flexq up`` after a crash (a killed daemon left as a zombie, or one that does not answer) and the
owner-only state directory; quick tests in-process, then one end to end with ``flexq up``/``kill -9``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from flexq import Twin
from flexq.cli import lifecycle
from flexq.cli.lifecycle import Home

ORPHAN_KEEPER = """
import ctypes, os, sys, time
# PR_SET_CHILD_SUBREAPER: orphans of this process's children are re-parented here, and never reaped, as under
# an init that does not reap (a container's, a CI runner's)
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
os.waitpid(pid, 0)
print("done", flush=True)
time.sleep(600)
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def zombie() -> Iterator[int]:
    """A killed process that is nobody's reaped child: its parent lives on and never waits for it."""
    keeper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time\npid = os.fork()\nif pid == 0:\n    time.sleep(600)\n"
            "print(pid, flush=True)\nos.kill(pid, 9)\ntime.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert keeper.stdout is not None
    pid = int(keeper.stdout.readline())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield pid
    keeper.kill()
    keeper.wait()


def fake_server_json(home: Path, pid: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "server.json").write_text(
        json.dumps({"pid": pid, "url": "https://127.0.0.1:9", "ca": "/nonexistent"})
    )


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_zombie_daemon_is_not_running(tmp_path: Path, zombie: int) -> None:
    os.kill(zombie, 0)  # the kernel still knows the pid: signal 0 alone cannot tell
    fake_server_json(tmp_path, zombie)
    assert lifecycle.running(Home(tmp_path)) is None


def test_up_checks_that_a_live_daemon_answers_before_saying_it_runs(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """A process alive under the recorded pid that does not answer /readyz is not a running twin."""
    monkeypatch.setattr(lifecycle, "READY_GRACE", 1.0)
    hung = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "-m", "flexq.cli.daemon"])
    try:
        # until the child has exec'd, /proc/PID/cmdline is still this process's (a forked pytest worker): up would
        # rightly take the pid for another program's and start a twin (the flaky failure of a fresh-clone run)
        cmdline = Path(f"/proc/{hung.pid}/cmdline")
        deadline = time.monotonic() + 30
        while b"flexq.cli.daemon" not in cmdline.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        fake_server_json(tmp_path, hung.pid)
        code = lifecycle.up(Home(tmp_path), Console(width=200), executor="simulated")
        out = capsys.readouterr().out
        assert code == 1, out
        assert "already running" not in out and "does not answer" in out and "flexq down" in out
    finally:
        hung.kill()
        hung.wait()


def test_a_pid_reused_by_another_program_is_not_the_daemon(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        fake_server_json(tmp_path, other.pid)
        if Path(f"/proc/{other.pid}/cmdline").exists():
            assert lifecycle.running(Home(tmp_path)) is None
    finally:
        other.kill()
        other.wait()


def test_the_state_directory_is_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = os.umask(0o022)
    try:
        twin = Twin(clock="virtual", home=home)
        twin.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"k": "v"}})
        state = home / "state.db"
        assert mode(home) == 0o700
        for f in (state, Path(f"{state}-wal"), Path(f"{state}-shm")):
            assert f.exists() and mode(f) == 0o600, (f, oct(mode(f)))
        assert mode(home / "logs") == 0o700
        twin.close()
        # a home an older flexq left readable is tightened on the next start
        os.chmod(home, 0o755)
        os.chmod(state, 0o644)
        Twin(clock="virtual", home=home).close()
        assert mode(home) == 0o700 and mode(state) == 0o600
    finally:
        os.umask(old)


def test_gclouds_configuration_in_the_home_is_owner_only(tmp_path: Path) -> None:
    """CLOUDSDK_CONFIG (FLEXQ_HOME/gcloud) holds gcloud's credentials: made 0700 before gcloud writes it, and what
    gcloud wrote with its own umask (0755 / 0644) is tightened on the next start."""
    from flexq.http.server import Server

    home = tmp_path / "home"
    old = os.umask(0o022)
    try:
        twin = Twin(clock="virtual", home=home)
        server = Server(twin.core, home).start()
        try:
            info = server.write_files()
            assert info["env"]["CLOUDSDK_CONFIG"] == str(home / "gcloud") and mode(home / "gcloud") == 0o700
        finally:
            server.stop()
            twin.close()
        # as gcloud leaves it: its own folders and files, world-readable
        (home / "gcloud" / "configurations").mkdir(mode=0o755)
        (home / "gcloud" / "configurations" / "config_default").write_text("[core]\n")
        (home / "gcloud" / "access_tokens.db").write_text("")
        os.chmod(home / "gcloud", 0o755)
        Twin(clock="virtual", home=home).close()
        for path in [home / "gcloud", *(home / "gcloud").rglob("*")]:
            assert mode(path) == (0o700 if path.is_dir() else 0o600), (path, oct(mode(path)))
    finally:
        os.umask(old)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc and prctl")
def test_up_after_kill_9_starts_a_new_twin_and_keeps_state_private(tmp_path: Path) -> None:
    """End to end: `flexq up` under a parent that never reaps, `kill -9` of the daemon (a zombie now), `flexq up`
    again: a new daemon answers; every file of the home is owner-only."""
    home = tmp_path / "home"
    env = {**os.environ, "FLEXQ_HOME": str(home)}
    up = [sys.executable, "-m", "flexq.cli", "up", "--executor", "simulated", "--timeout", "150"]
    keeper = subprocess.Popen(
        [sys.executable, "-c", ORPHAN_KEEPER, *up],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    pids = []
    try:
        assert keeper.stdout is not None
        lines = []
        for line in keeper.stdout:
            if line.strip() == "done":
                break
            lines.append(line)
        assert any("flexq is up at" in line for line in lines), lines
        first = json.loads((home / "server.json").read_text())
        pids.append(first["pid"])
        os.kill(first["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{first['pid']}/stat").read_text().split(")")[-1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        res = subprocess.run(up, env=env, capture_output=True, text=True, timeout=200)
        assert res.returncode == 0 and "already running" not in res.stdout, res.stdout + res.stderr
        second = json.loads((home / "server.json").read_text())
        pids.append(second["pid"])
        assert second["pid"] != first["pid"] and "flexq is up at" in res.stdout
        assert lifecycle._ready(second)
        for path in [home, *home.rglob("*")]:
            want = 0o700 if path.is_dir() else 0o600
            assert mode(path) == want, (str(path.relative_to(home)), oct(mode(path)))
        assert (home / "state.db-wal").exists() and (home / "flexq.log").exists() and (home / "pki").is_dir()
        down = subprocess.run(
            [sys.executable, "-m", "flexq.cli", "down"], env=env, capture_output=True, text=True, timeout=120
        )
        assert down.returncode == 0, down.stdout + down.stderr
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        keeper.kill()
        keeper.wait()
