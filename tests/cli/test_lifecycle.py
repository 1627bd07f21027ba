"""``flexq up`` / ``env`` / ``down`` with a temporary FLEXQ_HOME, and ``submit`` / ``status`` / ``logs`` against
the served twin through the official ``kubernetes`` client (simulated executor, real clock)."""

from __future__ import annotations

import json
import os
import shlex
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from flexq.cli import tutorial

pytestmark = pytest.mark.slow


def flexq(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flexq.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def alive(pid: int) -> bool:
    """A live process: a zombie (exited, its parent has not reaped it yet) is not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("flexq-home")
    # what `eval "$(flexq env)"` sets for kubectl and the kubernetes client
    env = {**os.environ, "FLEXQ_HOME": str(home), "COLUMNS": "220", "KUBECONFIG": str(home / "kubeconfig")}
    up = flexq(env, "up", "--executor", "simulated", "--timeout", "150")
    assert up.returncode == 0, up.stdout + up.stderr + (home / "flexq.log").read_text()
    info = json.loads((home / "server.json").read_text())
    yield home, env, info, up.stdout
    flexq(env, "down")
    if alive(info["pid"]):  # never leave a daemon behind, even when a test failed
        os.kill(info["pid"], 9)


def gke(info: dict, method: str, path: str, body: dict | None = None) -> dict:
    ctx = ssl.create_default_context(cafile=info["ca"])
    token = Path(info["token_file"]).read_text().strip()
    req = urllib.request.Request(
        info["url"] + path,
        method=method,
        data=json.dumps(body).encode() if body else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        return json.loads(resp.read())


def test_up_is_ready_and_idempotent(served) -> None:
    home, env, info, out = served
    assert "flexq is up at https://127.0.0.1:" in out and "helm install kueue" in out
    # one line on which executor runs and what it means for untrusted submitters (issue 36)
    assert "executor: simulated - no pod's code runs on this machine: safe with untrusted submitters" in out
    assert alive(info["pid"]) and (home / "kubeconfig").exists() and (home / "state.db").exists()
    again = flexq(env, "up")
    assert again.returncode == 0 and "already running" in again.stdout and str(info["pid"]) in again.stdout
    assert json.loads((home / "server.json").read_text())["pid"] == info["pid"]


def test_env_points_gcloud_and_kubectl_at_the_twin(served) -> None:
    home, env, info, _ = served
    res = flexq({**env, "REQUESTS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"}, "env")
    assert res.returncode == 0, res.stderr
    exports = dict(
        shlex.split(line.removeprefix("export "))[0].split("=", 1)
        for line in res.stdout.splitlines()
        if line.startswith("export ")
    )
    assert exports["CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER"] == info["url"] + "/"
    assert exports["CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDRESOURCEMANAGER"] == info["url"] + "/"
    assert exports["CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE"] == info["url"] + "/"
    assert (
        exports["CLOUDSDK_CORE_PROJECT"] == "flexq-twin" and exports["CLOUDSDK_CORE_DISABLE_PROMPTS"] == "1"
    )
    assert Path(exports["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"]).read_text().strip()
    assert exports["KUBECONFIG"] == str(home / "kubeconfig")
    bundle = Path(exports["CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE"]).read_text()
    assert Path(info["ca"]).read_text().strip() in bundle
    assert exports["REQUESTS_CA_BUNDLE"] == exports["CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE"]
    # the combined bundle verifies the twin (and, being a superset, everything the system bundle did)
    ctx = ssl.create_default_context(cafile=exports["CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE"])
    with urllib.request.urlopen(info["url"] + "/version", context=ctx, timeout=10) as resp:
        assert resp.status == 200
    assert res.stdout.startswith("# flexq twin at ")


def test_submit_before_any_cluster_is_refused(served, tmp_path: Path) -> None:
    """Issue 28 item 2: before `gcloud container clusters create`, the twin's root API serves a placeholder
    cluster, whose objects are out of sight once the first GKE cluster exists. `flexq submit` says so and
    creates nothing (it used to say "created", and the job vanished)."""
    home, env, info, _ = served
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    res = flexq(env, "submit", str(script), "--name", "early", "--queue", "user-queue", "--context", "flexq")
    err = " ".join(res.stderr.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert (
        "the twin has no GKE cluster yet: create one first (`gcloud container clusters create ...`" in err
    ), err
    assert "`flexq tutorial setup`" in err and "nothing was created" in err
    assert gke(info, "GET", "/v1/projects/flexq-twin/locations/-/clusters").get("clusters") in (None, [])
    from flexq.cli import kubeclient

    api = kubeclient.connect(str(home / "kubeconfig"), "flexq")
    assert kubeclient.list_objects(api, kubeclient.RAY, "rayjobs", "default") == []
    status = flexq(env, "status", "--context", "flexq")  # and flexq status says where it looks
    assert status.returncode == 0 and "note: the twin has no GKE cluster yet" in " ".join(
        status.stderr.split()
    )


def test_submit_status_logs_through_the_kubernetes_client(served, tmp_path: Path) -> None:
    """The README's live tutorial without gcloud or kubectl: `flexq tutorial setup`, `flexq submit` twice,
    `flexq logs -f`, `flexq status`, `flexq tutorial cleanup`."""
    home, env, info, _ = served
    setup = flexq(env, "tutorial", "setup")
    assert setup.returncode == 0, setup.stdout + setup.stderr
    for step in (
        "gcloud container clusters create tpu-cluster --cluster-version=1.34",
        "gcloud container node-pools create on-demand-pool",
        "gcloud container node-pools create dws-pool",
        'node-pools describe dws-pool --format="get(config.flexStart)": True',
        # the twin runs Kueue 0.20.7 (v1beta2 only): the tutorial's v1beta1 file goes through flexq convert
        "this cluster's Kueue serves kueue.x-k8s.io/v1beta2 only (Kueue 0.20 and later, kueue#14558): "
        "dws-tpu-queue.yaml (v1beta1) is applied converted to v1beta2",
        "envsubst < dws-tpu-queue.yaml | flexq convert - | kubectl apply -f -: "
        "resourceflavor.kueue.x-k8s.io/default-cpu created",
        "localqueue.kueue.x-k8s.io/user-queue created",
        "kubectl create configmap jax-train-script --from-file=train.py: configmap/jax-train-script created",
    ):
        assert step in setup.stdout, (step, setup.stdout)
    from flexq.cli import kubeclient

    api = kubeclient.connect(str(home / "kubeconfig"), "flexq")
    script = tmp_path / "train.py"
    script.write_text(tutorial.train_script())
    follow = None
    for i in (1, 2):  # job 1 runs 45 s: it still holds plan A's quota when job 2 arrives (one CLI call later)
        res = flexq(
            env,
            "submit",
            str(script),
            "--name",
            f"rayjob-tpu-v6e-dws-{i}",
            "--configmap",
            "jax-train-script",
            "--pip",
            "jax[tpu]==0.8.2",
            "--pip",
            "pandas==2.3.3",
            "--annotation",
            f"twin.flexq.dev/run-seconds={45 if i == 1 else 10}",
            "--context",
            "flexq",
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"rayjob.ray.io/rayjob-tpu-v6e-dws-{i} created" in res.stdout
        assert "configmap/jax-train-script unchanged (the same script)" in res.stdout  # setup made it
        if i == 1:  # follow job 1's log from before its pod exists until it ends
            follow = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "flexq.cli",
                    "logs",
                    "-f",
                    "rayjob-tpu-v6e-dws-1",
                    "--context",
                    "flexq",
                    "--pod-running-timeout",
                    "120",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
    from flexq.cli.status import workload_rows

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # poll in-process (each CLI call pays Python's start-up)
        states = [r.state for r in workload_rows(kubeclient.fetch_snapshot(api, "default"), time.time())]
        if states == ["Succeeded", "Succeeded"]:
            break
        time.sleep(1)
    res = flexq(env, "status", "-o", "json", "--context", "flexq")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert follow is not None
    out, err = follow.communicate(timeout=120)
    assert follow.returncode == 0 and "Succeeded" in out, out + err
    assert [(r["job"], r["plan"]["tpu-group"], r["state"]) for r in rows] == [
        ("RayJob/rayjob-tpu-v6e-dws-1", "on-demand", "Succeeded"),
        ("RayJob/rayjob-tpu-v6e-dws-2", "dws", "Succeeded"),
    ], rows
    assert rows[1]["waitedSeconds"] > rows[0]["waitedSeconds"]
    table = flexq(env, "status", "--context", "flexq")
    assert "rayjob-tpu-v6e-dws-2" in table.stdout and "Succeeded" in table.stdout
    logs = flexq(env, "logs", "rayjob-tpu-v6e-dws-1", "--context", "flexq")
    assert logs.returncode == 0 and "Succeeded" in logs.stdout, logs.stdout + logs.stderr
    missing = flexq(env, "logs", "no-such-job", "--context", "flexq")
    assert missing.returncode == 1 and 'no RayJob or Job named "no-such-job"' in missing.stderr
    again = flexq(
        env,
        "submit",
        str(script),
        "--name",
        "rayjob-tpu-v6e-dws-1",
        "--configmap",
        "jax-train-script",
        "--context",
        "flexq",
    )
    assert again.returncode == 1 and "409" in again.stderr and "--name rayjob-tpu-v6e-dws-1-2" in again.stderr
    gone = flexq(env, "tutorial", "cleanup")
    assert gone.returncode == 0 and "gcloud container clusters delete tpu-cluster" in gone.stdout, gone.stderr
    assert gke(info, "GET", "/v1/projects/flexq-twin/locations/-/clusters").get("clusters") in (None, [])


def test_down_stops_everything(served) -> None:
    home, env, info, _ = served
    res = flexq(env, "down")
    assert res.returncode == 0 and f"flexq stopped (pid {info['pid']})" in res.stdout
    assert not alive(info["pid"])
    assert not (home / "server.json").exists() and not (home / "pid").exists()
    assert flexq(env, "env").returncode == 1
    assert "not running" in flexq(env, "down").stdout
