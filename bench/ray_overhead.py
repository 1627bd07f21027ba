"""How much the twin adds to a real Ray run of the tutorial's train.py.

Two runs of the same script on the same shape (1 head + 4 emulated v6e hosts, TPU:4 each):

1. **twin**: a live twin (real clock, local Ray executor) with the tutorial's GKE cluster, pools, Kueue
   objects and ConfigMap; the tutorial's RayJob (JOB_ID=1) is applied and followed to ``Complete``. Printed:
   apply -> admitted, admitted -> driver's first line (``Connecting to existing Ray cluster``), admitted ->
   first line of the user's code (``Local Devices``), apply -> Complete, and apply -> every Ray process gone.
2. **plain**: ``ray start --head`` + 4 × ``ray start --address`` with the same TPU env, then ``ray job submit
   -- python train.py``, then the processes stopped. Printed: start, submit -> exit, stop, total. Started with the
   executor's network settings (loopback only, Ray's token auth with a token in the run's temp dir), as the twin
   runs it (docs/security.md).

Usage: ``python bench/ray_overhead.py`` (about 5 minutes on 2 cores). Only processes this script starts are
stopped (never ``ray stop``, which would end every Ray on the machine).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from flexq.kuberay import localproc  # noqa: E402
from flexq.kuberay.ray_node import LOOPBACK_HEAD_ENV, WORKER_RAY_START, ensure_token  # noqa: E402
from flexq.testing.live_twin import PeakMemory, ray_executor, rayjob, status, tutorial_live_twin  # noqa: E402

TRAIN_PY = ROOT / "tests" / "kuberay" / "data" / "train.py"
NAME = "rayjob-tpu-v6e-dws-1"


def twin_run() -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fqb-") as tmp:
        t0 = time.monotonic()
        twin = tutorial_live_twin(Path(tmp))
        out["twin setup (GKE + Kueue objects)"] = time.monotonic() - t0
        ex = ray_executor(twin)
        try:
            with PeakMemory(ex) as mem:
                t_apply = time.monotonic()
                twin.apply(rayjob(1))
                marks: dict[str, float] = {}
                while True:
                    now = time.monotonic()
                    if "admitted" not in marks:
                        for wl in twin.list("Workload", "default"):
                            if any(
                                c["type"] == "Admitted" and c["status"] == "True"
                                for c in (wl.get("status") or {}).get("conditions") or []
                            ):
                                marks["admitted"] = now
                    try:
                        log = twin.logs(f"job/{NAME}")
                    except Exception:
                        log = ""
                    if "driver" not in marks and "Connecting to existing Ray cluster" in log:
                        marks["driver"] = now
                    if "user" not in marks and "Local Devices" in log:
                        marks["user"] = now
                    st = status(twin, NAME)
                    if st.get("jobDeploymentStatus") in ("Complete", "Failed"):
                        marks["complete"] = now
                        out["result"] = 1.0 if st["jobDeploymentStatus"] == "Complete" else 0.0
                        break
                    if now - t_apply > 1200:
                        raise RuntimeError(f"the RayJob did not finish: {st}")
                    time.sleep(0.25)
                while localproc.owned_pids(ex._token + ":") and time.monotonic() - t_apply < 1300:
                    time.sleep(0.25)
                marks["gone"] = time.monotonic()
            adm = marks.get("admitted", t_apply)
            out["apply -> admitted"] = adm - t_apply
            out["admitted -> driver's first line"] = marks.get("driver", float("nan")) - adm
            out["admitted -> user code's first line"] = marks.get("user", float("nan")) - adm
            out["apply -> RayJob Complete"] = marks["complete"] - t_apply
            out["apply -> every Ray process gone"] = marks["gone"] - t_apply
            out["peak PSS of Ray processes + twin (GiB)"] = mem.peak_bytes / 2**30
        finally:
            twin.close()
    return out


def _env(marker: str, token_file: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        {
            "PATH": venv_bin + os.pathsep + env.get("PATH", ""),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token_file),
            "JAX_PLATFORMS": "cpu",
            "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25",
            localproc.OWNER_ENV: marker,
            **(extra or {}),
        }
    )
    return env


def plain_run() -> dict[str, float]:
    out: dict[str, float] = {}
    marker = f"bench-{os.getpid()}"
    ray = str(Path(sys.executable).parent / "ray")
    procs = []
    with tempfile.TemporaryDirectory(prefix="fqp-", dir="/tmp") as tmp:
        gcs, dash = localproc.free_port(), localproc.free_port()
        token_file = Path(tmp) / "token"
        ensure_token(token_file)
        t0 = time.monotonic()
        common = [
            "--block",
            "--disable-usage-stats",
            "--node-ip-address=127.0.0.1",
            "--object-store-memory=150000000",
        ]
        try:
            head = subprocess.Popen(
                [
                    ray,
                    "start",
                    "--head",
                    f"--port={gcs}",
                    f"--dashboard-port={dash}",
                    "--dashboard-host=127.0.0.1",
                    f"--temp-dir={tmp}/h",
                    "--num-cpus=2",
                    f"--ray-client-server-port={localproc.free_port()}",
                    *common,
                ],
                env=_env(marker, token_file, LOOPBACK_HEAD_ENV),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            procs.append(head)
            _wait_line(head, "Ray runtime started")
            for i in range(4):
                w = subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        WORKER_RAY_START,
                        "start",
                        f"--address=127.0.0.1:{gcs}",
                        f"--temp-dir={tmp}/w{i}",
                        "--num-cpus=8",
                        '--resources={"TPU": 4}',
                        f"--dashboard-agent-listen-port={localproc.free_port()}",
                        f"--metrics-export-port={localproc.free_port()}",
                        *common,
                    ],
                    env=_env(
                        marker,
                        token_file,
                        {
                            "TPU_ACCELERATOR_TYPE": "v6e-16",
                            "TPU_TOPOLOGY": "4x4",
                            "TPU_NAME": "bench-slice",
                            "TPU_WORKER_ID": str(i),
                        },
                    ),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
                procs.append(w)
            for w in procs[1:]:
                _wait_line(w, "Ray runtime started")
            t1 = time.monotonic()
            out["ray start (head + 4 hosts)"] = t1 - t0
            sub = subprocess.run(
                [
                    ray,
                    "job",
                    "submit",
                    "--address",
                    f"http://127.0.0.1:{dash}",
                    "--working-dir",
                    str(TRAIN_PY.parent),
                    "--",
                    "python",
                    "train.py",
                ],
                env=_env(marker, token_file),
                capture_output=True,
                text=True,
                timeout=1200,
            )
            t2 = time.monotonic()
            out["ray job submit -> exit"] = t2 - t1
            out["result"] = 1.0 if sub.returncode == 0 and "succeeded" in sub.stdout else 0.0
        finally:
            t3 = time.monotonic()
            localproc.signal_pids(localproc.owned_pids(marker), signal.SIGTERM)
            while localproc.owned_pids(marker) and time.monotonic() - t3 < 10:
                time.sleep(0.1)
            localproc.signal_pids(localproc.owned_pids(marker), signal.SIGKILL)
            for p in procs:
                p.wait(timeout=10)
            out["stop"] = time.monotonic() - t3
        out["total"] = time.monotonic() - t0
    return out


def _wait_line(proc: subprocess.Popen, needle: str, timeout: float = 300) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        if needle in line:
            return
        if time.monotonic() > deadline:
            break
    raise RuntimeError(f"ray start did not print {needle!r}")


def main() -> None:
    plain = plain_run()
    twin = twin_run()
    width = max(len(k) for k in [*plain, *twin]) + 2
    print("plain local Ray cluster (same shape), ray job submit:")
    for k, v in plain.items():
        print(f"  {k:<{width}}{v:8.1f}")
    print("flexq live twin, tutorial RayJob through Kueue and the local Ray executor:")
    for k, v in twin.items():
        print(f"  {k:<{width}}{v:8.1f}")
    plain_total = plain["total"]
    twin_total = twin["apply -> every Ray process gone"]
    print(
        f"overhead of the twin, end to end: {twin_total - plain_total:+.1f} s "
        f"({twin_total / plain_total:.2f}x the plain run)"
    )


if __name__ == "__main__":
    main()
