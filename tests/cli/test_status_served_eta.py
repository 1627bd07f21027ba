"""Issue 49: ``flexq status``'s ETA column is the twin's own forecast when the twin keeps one (its ETA service, as
``flexq up`` runs it), read through ``GET /flexq/eta`` over real HTTPS, not computed again by every call (5,000
waiting jobs: seconds of forward runs per call before). Without an ETA service (a real cluster) the command computes
its own, as before; before the service's first forecast the column is left out and a note says why; given
``--eta-replicas`` it computes its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from flexq import Twin
from flexq.cli.main import main
from flexq.eta import EtaConfig, fmt_eta
from flexq.eta.service import EtaService
from flexq.http.server import Server
from tests.eta.helpers import live_tutorial_cluster, unrunnable
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, dict]]:
    home = tmp_path_factory.mktemp("status-eta")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    info = server.write_files()
    try:
        live_tutorial_cluster(twin, jobs=3, project="status-eta")
        twin.create(unrunnable())
        wait_for(lambda: len(twin.list("Workload", "default")) == 4, what="four workloads")
        time.sleep(2)
        yield twin, info
    finally:
        server.stop()
        twin.close()


def _status(capsys: pytest.CaptureFixture[str], kc: str, *extra: str) -> tuple[str, str]:
    assert main(["status", "--kubeconfig", kc, *extra]) == 0
    out = capsys.readouterr()
    return out.out, " ".join(out.err.split())


def _get(info: dict) -> requests.Response:
    token = Path(info["token_file"]).read_text().strip()
    return requests.get(
        info["url"] + "/flexq/eta",
        headers={"Authorization": f"Bearer {token}"},
        verify=info["ca"],
        timeout=30,
    )


def _line(out: str, job: str) -> str:
    return next(ln for ln in out.splitlines() if f"{job} " in ln)


def test_status_reads_the_twins_forecast_when_it_keeps_one(served, capsys, monkeypatch) -> None:
    twin, info = served
    kc = info["kubeconfig"]
    monkeypatch.setenv("COLUMNS", "250")
    # no ETA service: nothing served, and the command computes the column itself
    assert _get(info).status_code == 404
    out, err = _status(capsys, kc)
    assert "ETA" in out and " in " in _line(out, "rayjob-tpu-v6e-dws-3"), out
    assert "never" in _line(out, "too-big") and "twin's forecast" not in err
    service = EtaService(twin, period=3600, cfg=EtaConfig(replicas=3, workers=1), in_process=True)
    service.start(background=False)
    try:
        # the service is there but has made no forecast yet: 503, and no column (said), nothing computed here
        assert _get(info).status_code == 503
        out, err = _status(capsys, kc)
        assert "ETA" not in out.splitlines()[1] and "making its first forecast" in err, (out, err)
        fc = service.refresh()
        doc = _get(info).json()
        key = next(k for k, j in fc.jobs.items() if j.job == "RayJob/rayjob-tpu-v6e-dws-3")
        assert doc["replicas"] == 3 and doc["jobs"][key]["text"] == fmt_eta(fc.jobs[key], fc.horizon)

        # the served forecast is read, not computed: the ETA package's estimate is not called
        def no_estimate(*_a: object, **_k: object) -> None:
            raise AssertionError("flexq status computed an ETA the twin serves")

        monkeypatch.setattr("flexq.eta.estimate", no_estimate)
        out, err = _status(capsys, kc)
        text = fmt_eta(fc.jobs[key], fc.horizon)  # "in 30m49s (9m30s-44m28s)", folded in its column
        assert (
            text.split(" (")[0] in _line(out, "rayjob-tpu-v6e-dws-3") and text.split(" (")[1][:-1] in out
        ), out
        assert "never" in _line(out, "too-big")
        assert "ETA from the twin's forecast of" in err and "3 forward runs" in err, err
        monkeypatch.undo()
        monkeypatch.setenv("COLUMNS", "250")
        # asked for its own forward runs, the command computes them
        out, err = _status(capsys, kc, "--eta-replicas", "1")
        assert " in " in _line(out, "rayjob-tpu-v6e-dws-3") and "twin's forecast" not in err
    finally:
        service.stop()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_under_the_eta_role_status_reads_the_twins_forecast(served, capsys, monkeypatch, tmp_path) -> None:
    """``flexq eta manifests``' role is the least that works: bound to it, and to nothing else, a service account's
    ``flexq status -A`` reads the twin's forecast (``GET /flexq/eta``, a non-resource URL the role grants), and may
    write nothing."""
    twin, info = served
    env = dict(os.environ, KUBECONFIG=info["kubeconfig"])

    def kubectl(*args: str, input: str | None = None, kubeconfig: str | None = None) -> str:
        r = subprocess.run(
            ["kubectl", *args],
            env=dict(env, KUBECONFIG=kubeconfig or info["kubeconfig"]),
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r.stdout

    kubectl("create", "serviceaccount", "status-reader", "-n", "default")
    assert main(["eta", "manifests", "--bind", "serviceaccount:default:status-reader"]) == 0
    kubectl("apply", "-f", "-", input=capsys.readouterr().out)
    token = kubectl("create", "token", "status-reader", "-n", "default", "--duration=1h").strip()
    cfg = yaml.safe_load(Path(info["kubeconfig"]).read_text())
    for u in cfg["users"]:
        u["user"] = {"token": token}
    as_sa = tmp_path / "sa-kubeconfig"
    as_sa.write_text(yaml.safe_dump(cfg))
    assert kubectl("auth", "can-i", "get", "/flexq/eta", kubeconfig=str(as_sa)).strip() == "yes"
    denied = subprocess.run(
        ["kubectl", "auth", "can-i", "create", "workloads.kueue.x-k8s.io"],
        env=dict(env, KUBECONFIG=str(as_sa)),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert denied.stdout.strip() == "no"
    service = EtaService(twin, period=3600, cfg=EtaConfig(replicas=2, workers=1), in_process=True)
    service.start(background=False)
    try:
        service.refresh()

        def no_estimate(*_a: object, **_k: object) -> None:
            raise AssertionError("flexq status computed an ETA the twin serves")

        monkeypatch.setattr("flexq.eta.estimate", no_estimate)
        monkeypatch.setenv("COLUMNS", "250")
        out, err = _status(capsys, str(as_sa), "-A")
        assert "ETA from the twin's forecast of" in err and "2 forward runs" in err, err
        assert " in " in _line(out, "rayjob-tpu-v6e-dws-3"), out
    finally:
        service.stop()


def test_the_twin_says_what_it_declares_of_itself(served) -> None:
    """``GET /flexq/twin``: the CapacityProfile in force (here the live tutorial's slow DWS) and the executor, the
    forecast's priors on a twin; a write to it is refused as the API server refuses one on a read-only path, and
    without a token the request is not served."""
    twin, info = served
    token = Path(info["token_file"]).read_text().strip()
    url = info["url"] + "/flexq/twin"
    r = requests.get(url, headers={"Authorization": f"Bearer {token}"}, verify=info["ca"], timeout=30)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["executor"] == "simulated"
    assert doc["capacityProfile"]["kind"] == "CapacityProfile"
    assert doc["capacityProfile"]["spec"] == twin.core.project.list("CapacityProfile")[0]["spec"]
    r = requests.post(url, headers={"Authorization": f"Bearer {token}"}, verify=info["ca"], timeout=30)
    assert r.status_code == 405 and r.json()["kind"] == "Status", r.text
    assert requests.get(url, verify=info["ca"], timeout=30).status_code in (401, 403)
