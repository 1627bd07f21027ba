"""Issue 34, acceptance 1: the tutorial typed verbatim (the real gcloud, kubectl and envsubst) against the Kueue
releases a user meets. Two twins run side by side (`flexq up --executor simulated`: the pods are simulated, no
Ray; the README's live tutorial, `tests/e2e/test_tutorial_verbatim.py`, trains on real Ray on the default Kueue
0.20.7 through `tutorial.sh`, which applies `flexq tutorial init`'s v1beta2 set there):

- Kueue 0.19.2 (`flexq up --kueue 0.19.2`): the published commands run to both RayJobs Complete, job 1 on plan A,
  job 2 on plan B (DWS);
- Kueue 0.20.7 (the default: what the tutorial's unpinned `helm install` gives today): `kubectl apply` of the
  published `dws-tpu-queue.yaml` fails with the error a real API server gives, nothing is queued (the two RayJobs
  wait, suspended, for a LocalQueue that does not exist) and `flexq status` says why and what to do; then the same
  file through `flexq convert` is applied and both RayJobs run to Complete."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
pytestmark = [
    pytest.mark.slow,  # two live twins on the wall clock: the DWS wait and the jobs' minute each are real time
    pytest.mark.skipif(
        not (shutil.which("gcloud") and shutil.which("kubectl") and shutil.which("envsubst")),
        reason="needs gcloud, kubectl and envsubst",
    ),
]


def _env(tmp: Path, name: str) -> dict[str, str]:
    return {
        **os.environ,
        "FLEXQ_HOME": str(tmp / name / "home"),
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "HOME": str(tmp / name),
    }


def sh(script: str, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def published(tutorial_sh: str) -> str:
    """The tutorial's commands exactly as published: `tutorial.sh` without its lines marked `# flexq` (but the one
    pointing gcloud and kubectl at the twin) and without `set -e` (someone typing them goes on after a failure)."""
    keep = [
        line
        for line in tutorial_sh.splitlines()
        if not line.startswith("set -euo pipefail")
        and (not line.rstrip().endswith("# flexq") or "flexq env" in line)
    ]
    return "\n".join(keep) + "\n"


def kubectl_json(args: str, cwd: Path, env: dict[str, str]) -> dict:
    out = sh(f'eval "$(flexq env)"; kubectl {args} -o json', cwd, env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_tutorial_typed_verbatim_on_kueue_0_19_2_and_on_0_20_7(tmp_path: Path) -> None:
    twins = {"0.19.2": _env(tmp_path, "k19"), "0.20.7": _env(tmp_path, "k20")}
    dirs = {}
    try:
        for kueue, env in twins.items():
            work = Path(env["HOME"]) / "work"
            work.mkdir(parents=True)
            up = ["flexq up --executor simulated"] + ([f"--kueue {kueue}"] if kueue == "0.19.2" else [])
            r = sh(f"flexq tutorial init tutorial && {' '.join(up)}", work, env, timeout=180)
            assert r.returncode == 0, r.stdout + r.stderr
            assert f"Kueue v{kueue}" in r.stdout, r.stdout
            dirs[kueue] = work / "tutorial"
        # the published commands, in both twins at once
        runs = {
            kueue: subprocess.Popen(
                ["bash", "-c", published((dirs[kueue] / "tutorial.sh").read_text())],
                cwd=dirs[kueue],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for kueue, env in twins.items()
        }
        out = {kueue: p.communicate(timeout=600) for kueue, p in runs.items()}
        new, new_env, new_dir = out["0.20.7"], twins["0.20.7"], dirs["0.20.7"]

        # 0.20.7: kubectl says what a real API server without the version makes it say; the script goes on
        lines = new[1].splitlines()
        assert (
            'resource mapping not found for name: "default-cpu" namespace: "" from "STDIN": no matches for kind '
            '"ResourceFlavor" in version "kueue.x-k8s.io/v1beta1"'
        ) in lines, new[1]
        assert (
            'resource mapping not found for name: "cluster-queue" namespace: "" from "STDIN": no matches for kind '
            '"ClusterQueue" in version "kueue.x-k8s.io/v1beta1"'
        ) in lines, new[1]
        assert "ensure CRDs are installed first" in lines
        assert "Submitted Job 1" in new[0] and "Submitted Job 2" in new[0]
        # nothing is queued: no ClusterQueue; both RayJobs suspended, their Workloads without a LocalQueue
        assert kubectl_json("get clusterqueues", new_dir, new_env)["items"] == []
        time.sleep(3)
        wls = kubectl_json("get workloads", new_dir, new_env)["items"]
        assert len(wls) == 2
        for wl in wls:
            qr = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
            assert (qr["status"], qr["message"]) == ("False", "LocalQueue user-queue doesn't exist")
        for i in (1, 2):
            assert (
                kubectl_json(f"get rayjob rayjob-tpu-v6e-dws-{i}", new_dir, new_env)["spec"]["suspend"]
                is True
            )
        status = sh('eval "$(flexq env)"; flexq status -o json', new_dir, new_env)
        said = " ".join(status.stderr.split())
        assert all(
            "LocalQueue user-queue doesn't exist" in row["why"] for row in json.loads(status.stdout)
        ), status
        assert "this cluster's Kueue serves kueue.x-k8s.io/v1beta2 only" in said, status.stderr
        assert "flexq convert" in said and "--version 0.19.2" in said and "flexq up --kueue 0.19.2" in said

        # ... and what it says to do: the same file through flexq convert
        fix = sh(
            'eval "$(flexq env)"; envsubst < dws-tpu-queue.yaml | flexq convert - | kubectl apply -f -',
            new_dir,
            new_env,
        )
        assert fix.returncode == 0 and "clusterqueue.kueue.x-k8s.io/cluster-queue created" in fix.stdout, (
            fix.stderr
        )

        # both releases: both RayJobs Complete, job 1 on plan A, job 2 on plan B
        for kueue, env in twins.items():
            wait = sh(
                "eval \"$(flexq env)\"; kubectl wait --for=jsonpath='{.status.jobDeploymentStatus}'=Complete "
                "rayjob --all --timeout=400s",
                dirs[kueue],
                env,
                timeout=460,
            )
            assert wait.returncode == 0, (kueue, wait.stdout, wait.stderr)
            plans = {}
            for wl in kubectl_json("get workloads", dirs[kueue], env)["items"]:
                job = wl["metadata"]["ownerReferences"][0]["name"]
                plans[job] = {
                    a["name"]: set(a["flavors"].values())
                    for a in wl["status"]["admission"]["podSetAssignments"]
                }
            assert plans["rayjob-tpu-v6e-dws-1"]["tpu-group"] == {"on-demand"}, (kueue, plans)
            assert plans["rayjob-tpu-v6e-dws-2"]["tpu-group"] == {"dws"}, (kueue, plans)
        # on 0.19.2 the published v1beta1 file itself was applied
        cq = kubectl_json("get clusterqueue cluster-queue", dirs["0.19.2"], twins["0.19.2"])
        applied = json.loads(
            cq["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        )
        assert applied["apiVersion"] == "kueue.x-k8s.io/v1beta1" and out["0.19.2"][1].count("no matches") == 0
    finally:
        for env in twins.values():
            subprocess.run(["flexq", "down"], env=env, capture_output=True, timeout=180)
