"""Issue 49: what a pod's processes cannot shed (``flexq.kuberay.podreaper``), without Ray.

A family of leavers — ``setsid env -i sleep``, a double fork that ``execve``s with an empty environment, a
``nohup`` in the background, a process that re-forks itself detached — each started by a pod's main process.
Under each holder this host offers (its own cgroup v2; the supervisor, everywhere), none of them outlives the
pod: neither when the main process ends by itself, nor when the pod is stopped (SIGTERM, then the grace
period). And a pod's ``/dev/shm`` is its own, bounded, and gone with it.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexq.kuberay import podreaper

LEAVERS = {
    "setsid-env-i": 'setsid env -i /bin/sleep "600.$1" </dev/null >/dev/null 2>&1 &',
    "double-fork-empty-env": (
        "python3 -c 'import os,sys\n"
        'if os.fork()==0:\n os.setsid()\n if os.fork()==0: os.execve("/bin/sleep",["sleep","599."+sys.argv[1]],{})\n'
        ' os._exit(0)\nos.wait()\' "$1"'
    ),
    "nohup": 'nohup /bin/sleep "598.$1" </dev/null >/dev/null 2>&1 &',
    "re-fork-chain": "(setsid bash -c '(exec -a \"sleep 597.'$1'\" /bin/sleep 597.'$1') & disown' &) ",
}


def _procs_with(tag: str) -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if tag in cmd and state not in ("Z", "X") and "pytest" not in cmd:
            out.append(f"{entry}: {cmd}")
    return out


def _wait_gone(tag: str, within: float = 10.0) -> list[str]:
    deadline = time.monotonic() + within
    while (left := _procs_with(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _script(tag: str, *, then: str) -> list[str]:
    body = "\n".join(LEAVERS.values()) + "\n" + then
    return ["/bin/bash", "-c", body, "pod", tag]


def _wait_started(tag: str, n: int, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while len(_procs_with(tag)) < n:
        assert time.monotonic() < deadline, _procs_with(tag)
        time.sleep(0.05)


@pytest.mark.parametrize("ends", ["by-itself", "stopped"])
def test_the_supervisor_ends_every_leaver_with_its_pod(ends: str) -> None:
    tag = "".join(secrets.choice("0123456789") for _ in range(9))
    then = "sleep 0.5" if ends == "by-itself" else "sleep 300"
    fd = podreaper.env_fd({"PATH": os.environ["PATH"], "MARK": tag})
    try:
        argv = podreaper.supervisor_argv(sys.executable, -1, 0, 1.0, fd, _script(tag, then=then))
        proc = subprocess.Popen(argv, pass_fds=(fd,), start_new_session=True, env={"PATH": "/usr/bin:/bin"})
    finally:
        os.close(fd)
    try:
        _wait_started(tag, len(LEAVERS) + (1 if ends == "stopped" else 0))
        if ends == "stopped":
            os.killpg(proc.pid, signal.SIGTERM)
        rc = proc.wait(timeout=20)
        assert rc == (0 if ends == "by-itself" else 143), rc
        assert not _wait_gone(tag, 2)
    finally:
        if proc.poll() is None:
            proc.kill()
        for line in _procs_with(tag):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)


def test_the_supervisor_gives_its_program_the_environment_and_keeps_none_itself() -> None:
    fd = podreaper.env_fd({"PATH": "/usr/bin:/bin", "LD_PRELOAD": "/nonexistent.so", "X": "1"})
    try:
        argv = podreaper.supervisor_argv(sys.executable, -1, 0, 1.0, fd, ["/bin/sh", "-c", "echo X=$X"])
        out = subprocess.run(
            argv, pass_fds=(fd,), env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
        )
    finally:
        os.close(fd)
    assert out.stdout == "X=1\n" and out.returncode == 0, out


@pytest.fixture(scope="module")
def cgroups() -> Iterator[Path]:
    root = podreaper.cgroup_root(f"flexq-{os.getpid()}-tests")
    if root is None:
        pytest.skip("this host gives no writable cgroup v2")
    yield root
    for d in [d for d in root.iterdir() if d.is_dir()]:
        podreaper.CgroupPod(d, create=False).remove()
    root.rmdir()


def test_a_pods_cgroup_holds_every_leaver(cgroups: Path) -> None:
    tag = "".join(secrets.choice("0123456789") for _ in range(9))
    pod = podreaper.CgroupPod(cgroups / tag)
    proc = subprocess.Popen(_script(tag, then="sleep 0.2"), preexec_fn=pod.enter, start_new_session=True)
    try:
        assert proc.wait(timeout=20) == 0
        _wait_started(tag, len(LEAVERS))
        held = set(pod.pids())
        assert {int(line.split(":")[0]) for line in _procs_with(tag)} <= held
        pod.remove()
        assert not _wait_gone(tag, 2)
        assert not (cgroups / tag).exists()
    finally:
        pod.remove()
        for line in _procs_with(tag):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)


@pytest.mark.skipif(not podreaper.private_shm_works(), reason="no unprivileged user and mount namespaces")
def test_a_pods_dev_shm_is_its_own_bounded_and_gone_with_it() -> None:
    tag = "".join(secrets.choice("0123456789") for _ in range(9))
    mount = podreaper.ShmMount(16 * 1024 * 1024)

    def child() -> None:
        if mount.apply() != 0:
            os._exit(124)

    out = subprocess.run(
        ["/bin/sh", "-c", f"dd if=/dev/zero of=/dev/shm/fq-{tag} bs=1M count=40; ls /dev/shm; id -u"],
        preexec_fn=child,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "No space left on device" in out.stderr, out
    assert out.stdout.split() == [f"fq-{tag}", str(os.getuid())], out  # only its own file; the same user
    assert not Path(f"/dev/shm/fq-{tag}").exists()
