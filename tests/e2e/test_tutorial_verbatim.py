"""Issue 6, acceptance 1, and issue 28 item 1: the README's live tutorial, run as written from a folder that is
not the checkout — `flexq tutorial init` writes the tutorial's files, `flexq up`, then the tutorial's own
commands as published (`tutorial.sh`) with the real gcloud and kubectl, against real Ray training. Job 1 lands on
plan A, job 2 falls back to plan B (DWS) with a ProvisioningRequest, both train side by side on real Ray
("Training Complete!", "Job '…' succeeded", four Ray Train workers on the emulated slice's four hosts), their
RayClusters and Ray processes are gone when they finish, and the README's clean-up leaves nothing running."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import psutil
import pytest

from flexq.kuberay import localproc

README = Path(__file__).resolve().parents[2] / "README.md"
BIN = Path(sys.executable).parent


def readme_block(marker: str) -> str:
    """The bash block under ``<!-- live-tutorial:<marker> -->`` in the README, as written."""
    text = README.read_text()
    start = text.index(f"<!-- live-tutorial:{marker} -->")
    body = text[start:].split("```bash\n", 1)[1]
    return body.split("```", 1)[0]


pytestmark = [
    pytest.mark.slow,
    pytest.mark.ray,
    pytest.mark.heavy,  # two RayJobs training side by side: ~4.4 GiB (tests/conftest.py)
    pytest.mark.skipif(
        not (shutil.which("gcloud") and shutil.which("kubectl") and shutil.which("envsubst")),
        reason="needs gcloud, kubectl and envsubst",
    ),
]


def sh(script: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    out = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, (
        f"{script[:200]}\nstdout:\n{out.stdout[-4000:]}\nstderr:\n{out.stderr[-4000:]}"
    )
    return out.stdout


@pytest.fixture
def up(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str], subprocess.Popen[str]]]:
    """The README's first block running (in a fresh folder, with its own FLEXQ_HOME and HOME): it ends after
    `kubectl logs`, so the test can look while the jobs run and after they end."""
    work = tmp_path / "work"  # a user's folder, not the checkout
    work.mkdir()
    env = {
        **os.environ,
        "FLEXQ_HOME": str(tmp_path / "home"),
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        # `flexq status` is read below row by row: as wide as a reader's terminal, whatever pytest runs in (an
        # xdist worker has none, and rich then lays the table out in 80 columns)
        "COLUMNS": "200",
    }
    block = readme_block("run")
    assert block.startswith("flexq tutorial init tutorial && cd tutorial")
    proc = subprocess.Popen(
        ["bash", "-c", "set -euo pipefail\n" + block],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield work / "tutorial", env, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["flexq", "down"], env=env, capture_output=True, timeout=180)


def kubectl_json(args: str, work: Path, env: dict[str, str]) -> dict:
    return json.loads(sh(f'eval "$(flexq env)"; kubectl {args} -o json', work, env))


def test_the_tutorial_typed_verbatim(up: tuple[Path, dict[str, str], subprocess.Popen[str]]) -> None:
    work, env, readme = up
    # "Conectar-se ao RayJob": the tutorial's port-forward to job 1's head service reaches its real Ray
    # dashboard (on a free local port rather than 8265, which a developer's own Ray may hold).
    deadline = time.monotonic() + 600
    while not (Path(env["FLEXQ_HOME"]) / "server.json").exists() or not (work / "cleanup.sh").exists():
        assert readme.poll() is None and time.monotonic() < deadline, readme.communicate()
        time.sleep(1)
    sh(
        'eval "$(flexq env)"; until kubectl get rayjob/rayjob-tpu-v6e-dws-1 >/dev/null 2>&1; do sleep 2; done; '
        "kubectl wait --for=jsonpath='{.status.jobDeploymentStatus}'=Running "
        "rayjob/rayjob-tpu-v6e-dws-1 --timeout=900s",
        work,
        env,
        timeout=960,
    )
    port = localproc.free_port()
    pf = subprocess.Popen(
        [
            "bash",
            "-c",
            f'eval "$(flexq env)"; exec kubectl port-forward '
            f"service/rayjob-tpu-v6e-dws-1-head-svc {port}:8265",
        ],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert pf.stdout is not None and "Forwarding from" in pf.stdout.readline()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/version", timeout=30) as resp:
            answer = json.load(resp)
        assert answer["ray_version"] == version("ray"), answer
    finally:
        pf.terminate()
        pf.communicate(timeout=30)
    out, err = readme.communicate(timeout=1600)  # the README's block ends after both jobs and `kubectl logs`
    assert readme.returncode == 0, f"stdout:\n{out[-4000:]}\nstderr:\n{err[-4000:]}"
    assert "written   tutorial/tutorial.sh" in out and "flexq is up at https://127.0.0.1:" in out
    assert "\nTrue\n" in out, out  # the describe --format="get(config.flexStart)" check
    assert "Submitted Job 1" in out and "Submitted Job 2" in out
    assert re.search(r"rayjob-tpu-v6e-dws-1[ │]+user-queue[ │]+head=default-cpu, tpu-group=on-demand", out), (
        out
    )
    assert re.search(r"rayjob-tpu-v6e-dws-2[ │]+user-queue[ │]+head=default-cpu, tpu-group=dws", out), out
    assert "Training Complete!" in out and "Job 'rayjob-tpu-v6e-dws-1-" in out  # kubectl logs job/...-1

    wls = kubectl_json("get workloads", work, env)["items"]
    plans = {
        w["metadata"]["name"]: {
            a["name"]: set(a["flavors"].values()) for a in w["status"]["admission"]["podSetAssignments"]
        }
        for w in wls
    }
    job1 = next(p for n, p in plans.items() if "dws-1-" in n)
    job2_name, job2 = next((n, p) for n, p in plans.items() if "dws-2-" in n)
    assert job1["tpu-group"] == {"on-demand"} and job2["tpu-group"] == {"dws"}
    wl2 = next(w for w in wls if w["metadata"]["name"] == job2_name)
    check = next(c for c in wl2["status"]["admissionChecks"] if c["name"] == "dws-prov")
    assert check["state"] == "Ready"
    consumed = {
        u["name"]: (u.get("annotations") or {}).get("autoscaling.x-k8s.io/consume-provisioning-request")
        for u in check.get("podSetUpdates", [])
    }
    assert consumed["tpu-group"] == f"{job2_name}-dws-prov-1"
    for i in (1, 2):
        rj = kubectl_json(f"get rayjob rayjob-tpu-v6e-dws-{i}", work, env)
        assert rj["status"]["jobStatus"] == "SUCCEEDED"
        log = sh(f'eval "$(flexq env)"; kubectl logs job/rayjob-tpu-v6e-dws-{i}', work, env)
        assert "Training Complete!" in log
        assert re.search(rf"Job 'rayjob-tpu-v6e-dws-{i}-[bcdfghjklmnpqrstvwxz2456789]{{5}}' succeeded", log)
        assert rj["status"]["jobId"] in log
        assert "substituted: using installed pandas" in log  # the runtime env policy, visible
        assert "extra [tpu] dropped" in log
        assert "\x1b[" not in log  # plain text, like the tutorial's log
        assert "world_rank=3" in log  # the 4 emulated v6e hosts are real Ray nodes: 4 workers took the slice

    daemon = psutil.Process(int((Path(env["FLEXQ_HOME"]) / "pid").read_text().split()[0]))
    # shutdownAfterJobFinishes: both RayClusters and every Ray process are gone; the submitter Jobs stay.
    deadline = time.monotonic() + 120
    while kubectl_json("get rayclusters", work, env)["items"] and time.monotonic() < deadline:
        time.sleep(2)
    assert kubectl_json("get rayclusters", work, env)["items"] == []
    assert len(kubectl_json("get jobs", work, env)["items"]) == 2

    def ray_procs() -> list[str]:
        out = []
        for p in daemon.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "ray" in " ".join(p.cmdline()):
                    out.append(" ".join(p.cmdline())[:120])
        return out

    deadline = time.monotonic() + 60
    while ray_procs() and time.monotonic() < deadline:
        time.sleep(1)
    assert not ray_procs(), ray_procs()
    children = daemon.children(recursive=True)
    cleanup = readme_block("clean-up")
    assert cleanup.startswith("bash cleanup.sh")
    done = sh(cleanup, work, env, timeout=300)  # the README's clean-up block, in the tutorial's folder
    assert "flexq stopped (pid" in done, done
    # the twin and every Ray process it started are gone
    gone, alive = psutil.wait_procs([daemon, *children], timeout=60)
    assert not [p for p in alive if p.is_running()], [p.cmdline()[:3] for p in alive]
