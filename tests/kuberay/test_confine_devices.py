"""Issue 49, item 6: a confined pod process may use only the devices a training job needs.

Before, Landlock granted every right beneath ``/dev``: a confined entrypoint read a 0600 file outside every rule
through a loop device and could open ``/dev/loop*``, ``/dev/kvm`` and ``/dev/fuse`` read-write. Now only the
character devices a job uses (null, zero, full, random, urandom, tty, ptmx), ``/dev/shm`` and ``/dev/pts`` are
granted, and ``/dev`` may be listed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flexq.kuberay import confine

pytestmark = pytest.mark.skipif(confine.abi() == 0, reason="this kernel has no Landlock")

PROBE = r"""
import os, sys
def try_open(path, flags):
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return "DENIED" if exc.errno in (13, 1) else f"ERR{exc.errno}"
    os.close(fd)
    return "OPEN"
for path in sys.argv[1:]:
    mode = os.O_RDWR if not path.startswith("ro:") else os.O_RDONLY
    path = path.removeprefix("ro:")
    if os.path.exists(path):
        print(path, try_open(path, mode))
    else:
        print(path, "ABSENT")
shm = f"/dev/shm/flexq-probe-{os.getpid()}"
with open(shm, "w") as f:
    f.write("x")
os.unlink(shm)
print("SHM OK")
print("LIST", len(os.listdir("/dev")) > 0)
"""


def test_only_a_jobs_devices_open(tmp_path: Path) -> None:
    rules = confine.Confinement(
        read=confine.system_read_paths(), write=[*confine.WRITABLE_SYSTEM_DIRS, tmp_path]
    )
    allowed = ["/dev/null", "/dev/zero", "/dev/full", "ro:/dev/urandom", "ro:/dev/random"]
    refused = ["ro:/dev/loop0", "/dev/loop0", "/dev/kvm", "/dev/fuse", "/dev/loop-control", "ro:/dev/kmsg"]
    with rules.preexec() as pre:
        r = subprocess.run(
            [sys.executable, "-c", PROBE, *allowed, *refused],
            preexec_fn=pre,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": os.environ["PATH"]},
        )
    assert r.returncode == 0, r.stderr
    got = dict(line.rsplit(" ", 1) for line in r.stdout.splitlines() if line.startswith("/dev"))
    for path in allowed:
        assert got[path.removeprefix("ro:")] == "OPEN", r.stdout
    present = [p.removeprefix("ro:") for p in refused if got[p.removeprefix("ro:")] != "ABSENT"]
    assert present, "no device to refuse on this machine"
    for path in present:
        assert got[path] == "DENIED", r.stdout
    assert "SHM OK" in r.stdout and "LIST True" in r.stdout, r.stdout
