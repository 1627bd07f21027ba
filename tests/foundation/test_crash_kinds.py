"""kill -9 during kinds of writes the first soak (``test_crash.py``: creates and merge patches) does not make:
json and strategic patches, deletes held by a finalizer, a second kill while the revived twin starts, and
garbage after the last frame of the write-ahead log (a torn tail). Every acknowledged write is there afterwards,
with its content; an acknowledged delete of an object with a finalizer has left it terminating, finalizer and
all, and removing the finalizer then deletes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from flexq import Twin

N = 12
WRITER = textwrap.dedent(f"""
    import json, sys
    from flexq import Twin
    twin = Twin(clock="real", home=sys.argv[1], executor="simulated")
    for i in range({N}):
        twin.apply({{"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {{"name": f"cm-{{i}}", "finalizers": ["example.com/hold"]}},
                    "data": {{"n": "0", "j": "0"}}}})
    print(json.dumps(["ready"]), flush=True)
    n = 0
    while True:
        n += 1
        i = n % {N}
        if n % 7 == 0 and n // 7 < {N}:
            twin.delete("configmap", f"cm-{{n // 7}}")
            print(json.dumps(["delete", n // 7]), flush=True)
        elif n % 2:
            twin.patch("configmap", f"cm-{{i}}", [{{"op": "replace", "path": "/data/j", "value": str(n)}}],
                       patch_type="json")
            print(json.dumps(["json", i, n]), flush=True)
        else:
            twin.patch("configmap", f"cm-{{i}}", {{"data": {{"n": str(n)}}}}, patch_type="strategic")
            print(json.dumps(["strategic", i, n]), flush=True)
""")


def _run_and_kill(home: Path, acks: int) -> list[list]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    acked: list[list] = []
    for line in proc.stdout:
        acked.append(json.loads(line))
        if len(acked) > acks:
            break
    os.kill(proc.pid, signal.SIGKILL)  # in the middle of the next write
    proc.wait()
    return acked[1:]


def _kill_while_starting(home: Path, after: float) -> None:
    """A twin started on the state and killed before it is done starting (a crash during recovery)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from flexq import Twin; Twin(clock='real', home={str(home)!r}, executor='simulated')"
            "; import time; time.sleep(60)",
        ],
    )
    time.sleep(after)  # before, or while, it opens the state and resumes its controllers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _check(home: Path, acked: list[list]) -> None:
    want_j: dict[int, int] = {}
    want_n: dict[int, int] = {}
    deleted: set[int] = set()
    for ack in acked:
        if ack[0] == "json":
            want_j[ack[1]] = ack[2]
        elif ack[0] == "strategic":
            want_n[ack[1]] = ack[2]
        else:
            deleted.add(ack[1])
    twin = Twin(clock="real", home=home, executor="simulated")
    try:
        stored = {o["metadata"]["name"]: o for o in twin.list("configmaps", "default")}
        for i in range(N):
            obj = stored[f"cm-{i}"]  # nothing is gone: each is held by its finalizer
            assert int(obj["data"]["j"]) >= want_j.get(i, 0), (i, obj["data"], want_j.get(i))
            assert int(obj["data"]["n"]) >= want_n.get(i, 0), (i, obj["data"], want_n.get(i))
            assert obj["metadata"]["finalizers"] == ["example.com/hold"]
            if i in deleted:
                assert obj["metadata"].get("deletionTimestamp"), f"cm-{i}: an acknowledged delete was lost"
        assert deleted, "the writer was killed before its first delete"
        for i in deleted:
            twin.patch("configmap", f"cm-{i}", {"metadata": {"finalizers": None}})
            assert twin.try_get("configmap", f"cm-{i}") is None, f"cm-{i} stayed after its finalizer went"
    finally:
        twin.close()


def test_kill_during_patches_and_deletes_then_again_while_starting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    acked = _run_and_kill(home, 60)
    _kill_while_starting(home, 0.8)
    _kill_while_starting(home, 1.6)
    _check(home, acked)


def test_garbage_after_the_last_log_frame_loses_no_acknowledged_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    acked = _run_and_kill(home, 40)
    wal = home / "state.db-wal"
    assert wal.exists() and wal.stat().st_size > 0
    with open(wal, "ab") as f:  # a frame being written when the power went: torn, half there
        f.write(os.urandom(4096 + 24 + 1000))
    _check(home, acked)
