"""A live twin killed with SIGKILL mid-stream loses no acknowledged write and shows no partial one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from flexq import Twin

WRITER = textwrap.dedent("""
    import sys
    from flexq import Twin
    twin = Twin(clock="real", home=sys.argv[1], executor="simulated")
    i = 0
    while True:
        payload = {f"k{j}": ("v%d-" % i) * 50 for j in range(20)}
        twin.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i}", "labels": {"i": str(i)}}, "data": payload})
        if i % 3 == 0 and i:
            twin.patch("configmap", f"cm-{i - 1}", {"data": {"extra": str(i)}})
        print(i, flush=True)  # acknowledged
        i += 1
""")


def test_sigkill_mid_stream_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    acked: list[int] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        acked.append(int(line))
        if len(acked) >= 150:
            break
    os.kill(proc.pid, signal.SIGKILL)  # in the middle of the next write
    proc.wait()
    assert acked == list(range(len(acked)))

    twin = Twin(clock="real", home=home, executor="simulated")
    try:
        stored = {o["metadata"]["name"]: o for o in twin.list("configmaps", "default")}
        for i in acked:
            obj = stored[f"cm-{i}"]
            assert obj["data"][f"k{19}"] == (f"v{i}-") * 50, "partial object"
            assert obj["metadata"]["labels"] == {"i": str(i)}
            if (i + 1) % 3 == 0 and i + 1 <= acked[-1]:
                assert obj["data"]["extra"] == str(i + 1)
        # nothing half-written: every stored object is whole, even one written after the last ack
        for obj in stored.values():
            assert len([k for k in obj["data"] if k.startswith("k")]) == 20
            json.dumps(obj)
        # the revived twin keeps working and versions keep increasing
        before = int(max(o["metadata"]["resourceVersion"] for o in stored.values()))
        new = twin.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}})[0]
        assert int(new["metadata"]["resourceVersion"]) > before
    finally:
        twin.close()
