"""The fallback Deployment's liveness shows that its loop progresses (issue 50): ``flexq fallback
--metrics-port``'s ``/healthz`` answers 200 while the loop makes rounds and 503, saying why, once a pass has been
stuck longer than ``--stalled-after`` — while ``/metrics`` still answers, which is all the old probe asked — and the
manifests' liveness probe asks ``/healthz``. Against a served twin whose API is made to hang."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.cli.fallback_manifests import manifests
from flexq.http.server import Server
from tests.waiting import wait_for

PROJECT = "liveness-project"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, str]]:
    home = tmp_path_factory.mktemp("liveness-twin")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    kubeconfig = server.write_files()["kubeconfig"]
    try:
        twin.gke("POST", *T.create_cluster_request(PROJECT))
        wait_for(
            lambda: all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation")),
            what="the cluster",
        )
        twin.apply(T.queue_yaml(api="v1beta2"))
        yield twin, kubeconfig
    finally:
        server.stop()
        twin.close()


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_liveness_probe_asks_whether_the_loop_progresses() -> None:
    docs = manifests(image="registry.example/flexq-fallback@sha256:" + "a" * 64)
    dep = next(d for d in docs if d["kind"] == "Deployment")
    (main,) = dep["spec"]["template"]["spec"]["containers"]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/metrics", "port": "metrics"}
    assert "--metrics-port" in main["command"]


@pytest.mark.slow
def test_healthz_fails_while_a_pass_is_stuck_and_metrics_still_answer(served, tmp_path) -> None:
    twin, kc = served
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    argv = [
        "fallback",
        "--kubeconfig",
        kc,
        "--interval",
        "1",
        "--metrics-port",
        str(port),
        "--stalled-after",
        "3s",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "flexq.cli", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: _get(port, "/healthz")[0] == 200 if _port_open(port) else False, 60, "/healthz 200")
        assert _get(port, "/healthz") == (200, "ok\n")
        # /healthz says ok before the loop's first round (the probe's initial delay covers a start): wait for two
        # passes, so the hang below stalls a loop that has made progress (a loaded machine's first pass can run
        # into the hang, and the probe then rightly keeps saying ok)
        wait_for(lambda: _passes(port) >= 2, 60, "two passes")

        # the twin's API hangs for 24 s: its loop is busy and holds the store's lock, so every request waits —
        # a get on the loop, a list for the lock (lists are served off the loop: a busy loop alone no longer
        # stalls a pass that only lists) — and the fallback's pass waits on it (long enough that a loaded
        # machine's late pass still stalls past --stalled-after: a 12 s hang missed its 10 s window at -n 8)
        def hang() -> None:
            with twin.store.read_lock():
                time.sleep(24)

        twin.core.loop.post(hang)
        code, body = wait_for(lambda: (r := _get(port, "/healthz"))[0] == 503 and r, 22, "/healthz 503")
        assert body.startswith("stalled: no round of the loop for ") and "is stuck" in body, body
        assert _get(port, "/metrics")[0] == 200  # what the old probe asked: it would have said alive
        wait_for(lambda: _get(port, "/healthz")[0] == 200, 30, "/healthz 200 again once the API answers")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out


def _passes(port: int) -> float:
    code, text = _get(port, "/metrics")
    for line in text.splitlines() if code == 200 else []:
        if line.startswith("flexq_fallback_passes_total "):
            return float(line.split()[1])
    return 0.0


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
