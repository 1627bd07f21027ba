"""The ETA where users look, against a served live twin (real clock, simulated executor, real HTTPS) running the
tutorial with jobs waiting: ``flexq eta`` and ``flexq eta JOB`` (a job nobody can run is said so), the ETA column
of ``flexq status`` in a real terminal (a pty), the dashboard in Chromium, and — under exactly the read-only
ClusterRole ``flexq eta manifests`` ships, through a ServiceAccount's kubeconfig — ``flexq eta`` and ``flexq
simulate --from-cluster``, whose study ``flexq simulate`` then runs and which reproduces the state."""

from __future__ import annotations

import json
import logging
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.cli.eta import CLUSTER_RULES, ROLE_NAME
from flexq.cli.main import main
from flexq.http.server import Server
from tests.eta.helpers import SLOW_DWS_PROFILE, TRAIN, rayjob, unrunnable
from tests.waiting import wait_for

PROJECT = "eta-project"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PROFILE = SLOW_DWS_PROFILE


def _states(twin: Twin) -> dict[str, str]:
    from flexq.semantics.workloads import workload_state

    return {
        w["metadata"]["ownerReferences"][0]["name"]: workload_state(w)
        for w in twin.list("Workload", "default")
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, Server, str]]:
    home = tmp_path_factory.mktemp("eta-twin")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    kubeconfig = server.write_files()["kubeconfig"]
    try:
        twin.core.project.create(PROFILE)

        def done() -> bool:
            return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

        twin.gke("POST", *T.create_cluster_request(PROJECT))
        wait_for(done, what="the cluster")
        for dws in (False, True):
            path, body = T.create_node_pool_request(PROJECT, dws=dws)
            body["nodePool"]["autoscaling"]["maxNodeCount"] = 8
            twin.gke("POST", path, body)
            wait_for(done, what="a node pool")
        twin.apply(T.queue_yaml(api="v1beta2"))
        twin.apply(TRAIN)
        twin.create(rayjob(1, run=3600))
        wait_for(lambda: _states(twin).get("rayjob-tpu-v6e-dws-1") == "Running", what="job 1 running")
        for i in (2, 3, 4):
            twin.create(rayjob(i, run=3600))
        twin.create(unrunnable())
        wait_for(lambda: len(_states(twin)) == 5, what="five workloads")
        time.sleep(2)
        yield twin, server, kubeconfig
    finally:
        server.stop()
        twin.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, " ".join(out.err.split())


def test_flexq_eta_lists_the_waiting_jobs_and_explains_one(served, capsys, monkeypatch) -> None:
    _twin, _server, kc = served
    monkeypatch.setenv("COLUMNS", "250")
    rc, out, err = run(capsys, "eta", "--kubeconfig", kc, "--replicas", "2", "-j", "1", "-o", "json")
    assert rc == 0, err
    doc = json.loads(out)
    jobs = {j["job"]: j for j in doc["jobs"]}
    assert "RayJob/rayjob-tpu-v6e-dws-1" not in jobs  # running
    assert jobs["RayJob/too-big"]["cannot"] and jobs["RayJob/too-big"]["median"] is None
    j2 = jobs["RayJob/rayjob-tpu-v6e-dws-2"]
    assert j2["median"] is not None and "dws" in j2["plan"], j2
    assert any("DWS wait" in line for line in doc["model"])
    # the twin's own CapacityProfile (GET /flexq/twin) is the forecast's prior, and the model says so
    assert any("the twin's CapacityProfile" in line for line in doc["model"]), doc["model"]
    rc, out, err = run(
        capsys, "eta", "rayjob-tpu-v6e-dws-2", "--kubeconfig", kc, "--replicas", "2", "-j", "1"
    )
    assert rc == 0, err
    text = " ".join(out.split())
    assert "rayjob-tpu-v6e-dws-2" in text and "starts in " in text and "80 % within" in text, text
    assert "why:" in text and "DWSQueued" in text and "the model it comes from:" in text
    # the interval's online correction: said, with the observations it rests on, and kept per cluster
    assert "80 % interval" in text and ("observed start(s)" in text or "not corrected" in text), text
    kept = list((Path(os.environ["FLEXQ_HOME"]) / "eta-calibration").glob("*.json"))
    assert kept and json.loads(kept[0].read_text())["pending"], kept
    rc, out, err = run(capsys, "eta", "too-big", "--kubeconfig", kc, "--replicas", "2", "-j", "1")
    assert rc == 0, err
    text = " ".join(out.split())
    assert "nothing can run it as it is" in text and ("ExceedsMaxQuota" in text or "flavor" in text), text
    rc, _out, err = run(capsys, "eta", "no-such-job", "--kubeconfig", kc, "--replicas", "1", "-j", "1")
    assert rc == 1 and 'no waiting job "no-such-job"' in err


@pytest.mark.slow
def test_flexq_status_shows_the_eta_in_a_real_terminal(served) -> None:
    _twin, _server, kc = served
    env = dict(
        os.environ, COLUMNS="260", LINES="60", PYTHONPATH=os.pathsep.join(sys.path), TERM="xterm-256color"
    )
    pid, fd = pty.fork()
    if pid == 0:  # the child: flexq status on a terminal
        os.execve(
            sys.executable,
            [sys.executable, "-m", "flexq.cli", "status", "--kubeconfig", kc, "--eta-replicas", "2"],
            env,
        )
    chunks = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 1.0)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "\x1b[" in text  # a terminal: rich drew it in colour
    plain = " ".join(__import__("re").sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).split())
    assert "ETA" in plain and "never" in plain and " in " in plain, plain
    line2 = next(
        ln for ln in __import__("re").sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).splitlines() if "dws-2" in ln
    )
    assert " in " in line2 and "Running" not in line2, line2


@pytest.mark.slow
@pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="Debian's chromium and chromium-driver are not installed",
)
def test_the_dashboard_shows_the_eta_in_chromium(served, tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from flexq.cli.observe import dashboard_login
    from flexq.eta import EtaConfig
    from flexq.eta.service import EtaService

    twin, server, _kc = served
    service = EtaService(twin, cfg=EtaConfig(replicas=2, workers=1), period=3600).start()
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--ignore-certificate-errors",
        "--window-size=1600,1000",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        wait_for(
            lambda: service.latest() is not None, 120, "the first forecast (computed in its own process)"
        )
        page, _ = dashboard_login(server.home)
        driver.get(page.as_uri())
        wait_for(lambda: driver.current_url.rstrip("/").endswith("/dashboard"), 30, "the login")

        def etas() -> dict[str, str]:
            return driver.execute_script(
                "return Object.fromEntries(Array.from(document.querySelectorAll('tr.wl')).map("
                "r => [r.dataset.job, r.querySelector('td.eta').innerText]));"
            )

        got = wait_for(lambda: (e := etas()).get("RayJob/too-big") and e, 30, "the ETA column")
        assert got["RayJob/too-big"].startswith("never"), got
        assert got["RayJob/rayjob-tpu-v6e-dws-2"].startswith("in "), got
        assert got["RayJob/rayjob-tpu-v6e-dws-1"] == "", got  # running: no ETA
        wl = next(w for w in twin.list("Workload", "default") if "dws-2" in w["metadata"]["name"])
        driver.get(f"{server.url}/dashboard/workloads/default/{wl['metadata']['name']}")
        section = wait_for(lambda: driver.find_elements(By.ID, "eta"), 30, "the workload's ETA section")
        text = section[0].text
        assert "When will it start?" in text and "in " in text and "DWSQueued" in text, text
        driver.save_screenshot(str(tmp_path / "eta.png"))
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == [], severe
    finally:
        driver.quit()
        service.stop()


def _sa_kubeconfig(kubeconfig: str, token: str, path: Path) -> str:
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    for u in cfg["users"]:
        u["user"] = {"token": token}
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_from_cluster_under_the_read_only_role_reproduces_the_state(
    served, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    twin, _server, kc = served
    caplog.set_level(logging.DEBUG, logger="flexq.http.auth")
    env = dict(os.environ, KUBECONFIG=kc, PYTHONPATH=os.pathsep.join(sys.path))

    def kubectl(*args: str, input: str | None = None) -> str:
        r = subprocess.run(
            ["kubectl", *args], env=env, input=input, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r.stdout

    kubectl("create", "serviceaccount", "eta-reader", "-n", "default")
    manifests = subprocess.run(
        [
            sys.executable,
            "-m",
            "flexq.cli",
            "eta",
            "manifests",
            "--bind",
            "serviceaccount:default:eta-reader",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    kubectl("apply", "-f", "-", input=manifests)
    assert yaml.safe_load(kubectl("get", "clusterrole", ROLE_NAME, "-o", "yaml"))["rules"] == CLUSTER_RULES
    assert all(set(r["verbs"]) <= {"list", "get"} for r in CLUSTER_RULES)  # read-only
    token = kubectl("create", "token", "eta-reader", "-n", "default", "--duration=1h").strip()
    as_sa = _sa_kubeconfig(kc, token, tmp_path / "sa-kubeconfig")
    # the SA may not write: the role is read-only
    denied = subprocess.run(
        ["kubectl", "--kubeconfig", as_sa, "auth", "can-i", "create", "workloads.kueue.x-k8s.io"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert denied.stdout.strip() == "no"
    caplog.clear()
    pools = tmp_path / "pools.json"
    path = f"/v1/projects/{PROJECT}/locations/{T.TUTORIAL_ENV['ZONE']}/clusters/{T.TUTORIAL_ENV['CLUSTER_NAME']}/nodePools"
    pools.write_text(json.dumps(twin.gke("GET", path)))
    study = tmp_path / "study"
    before = _states(twin)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "flexq.cli",
            "simulate",
            "--from-cluster",
            str(study),
            "--kubeconfig",
            as_sa,
            "--node-pools",
            str(pools),
        ],
        env=dict(env, KUBECONFIG=as_sa),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    r2 = subprocess.run(
        [
            sys.executable,
            "-m",
            "flexq.cli",
            "eta",
            "--kubeconfig",
            as_sa,
            "--replicas",
            "1",
            "-j",
            "1",
            "-o",
            "json",
        ],
        env=dict(env, KUBECONFIG=as_sa),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r2.returncode == 0, r2.stderr
    # what the twin declares of itself is read under the role too (GET /flexq/twin)
    assert any("the twin's CapacityProfile" in line for line in json.loads(r2.stdout)["model"])
    denials = [
        x.getMessage() for x in caplog.records if x.name == "flexq.http.auth" and "denied" in x.getMessage()
    ]
    assert denials == [], denials
    assert {p.name for p in study.iterdir()} >= {
        "simulation.yaml",
        "queues.yaml",
        "capacity.yaml",
        "trace.jsonl",
        "README.md",
        "jobs",
    }
    # the release, from what the cluster serves (discovery: the read-only role needs nothing more)
    assert yaml.safe_load((study / "simulation.yaml").read_text())["kueue"] == "0.20.7"
    # the written study runs with flexq simulate and reproduces the state: the running job runs, the waiting wait
    import flexq

    res = flexq.simulate(str(study), plots=False, workers=1)
    rows = {row["job"]: row for row in res.runs[0].jobs}
    warmup = 300.0
    for job, state in before.items():
        row = rows.get(job)
        if state == "Running":
            assert row is not None and row["started"] is not None and row["started"] < warmup, (job, row)
        elif state in ("Pending", "QuotaReserved", "Admitted"):
            assert row is not None and (row["started"] is None or row["started"] >= warmup), (job, row)
    assert rows["too-big"]["started"] is None and rows["too-big"]["outcome"] == "NeverAdmitted"
