"""Issue 6, acceptance 1: the tutorial's own commands, typed as published, with the real gcloud and kubectl,
against `flexq up` with real Ray training. Job 1 lands on plan A, job 2 falls back to plan B (DWS) with a
ProvisioningRequest, both train side by side on real Ray ("Training Complete!", "Job '…' succeeded", four
Ray Train workers on the emulated slice's four hosts), their RayClusters and Ray processes are gone when they
finish, and deleting the cluster leaves nothing running."""

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

from flexq.cli import tutorial as T
from flexq.kuberay import localproc

HERE = Path(__file__).parent / "tutorial"
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ray,
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
def up(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("dws-tpu-queue.yaml", "rayjob-tpu-v6e-dws.yaml"):
        (work / name).write_text(T.read(name))
    (work / "train.py").write_text(T.train_script())
    env = {
        **os.environ,
        "FLEXQ_HOME": str(tmp_path / "home"),
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
    }
    sh("flexq up --executor ray --timeout 180", work, env, timeout=240)
    try:
        yield work, env
    finally:
        subprocess.run(["flexq", "down"], env=env, capture_output=True, timeout=180)


def kubectl_json(args: str, work: Path, env: dict[str, str]) -> dict:
    return json.loads(sh(f'eval "$(flexq env)"; kubectl {args} -o json', work, env))


def test_the_tutorial_typed_verbatim(up: tuple[Path, dict[str, str]]) -> None:
    work, env = up
    out = sh(f"bash {HERE / 'tutorial.sh'}", work, env, timeout=900)
    assert "\nTrue\n" in out, out  # the describe --format="get(config.flexStart)" check
    assert "Submitted Job 1" in out and "Submitted Job 2" in out
    # "Conectar-se ao RayJob": the tutorial's port-forward to job 1's head service reaches its real Ray
    # dashboard (on a free local port rather than 8265, which a developer's own Ray may hold).
    sh(
        "eval \"$(flexq env)\"; kubectl wait --for=jsonpath='{.status.jobDeploymentStatus}'=Running "
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
    sh(
        "eval \"$(flexq env)\"; kubectl wait --for=jsonpath='{.status.jobDeploymentStatus}'=Complete "
        "rayjob/rayjob-tpu-v6e-dws-1 rayjob/rayjob-tpu-v6e-dws-2 --timeout=1500s",
        work,
        env,
        timeout=1600,
    )

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
    sh(f"bash {HERE / 'cleanup.sh'}", work, env, timeout=300)
    listed = sh('eval "$(flexq env)"; gcloud container clusters list --format="value(name)"', work, env)
    assert listed.strip() == ""
    # every Ray process the twin started for the cluster is gone
    gone, alive = psutil.wait_procs(daemon.children(recursive=True), timeout=60)
    assert not [p for p in alive if p.is_running()], [p.cmdline()[:3] for p in alive]
