"""A live twin served over HTTPS on a free loopback port, and real clients pointed at it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from flexq import Twin
from flexq.http.server import Server

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL_ENV = {"ONDEMAND_NODEPOOL": "on-demand-pool", "DWS_NODEPOOL": "dws-pool"}


def tutorial_queue_yaml() -> str:
    """The tutorial's dws-tpu-queue.yaml after ``envsubst`` with the tutorial's variables."""
    from flexq.cli.tutorial import queue_yaml

    return queue_yaml(TUTORIAL_ENV)


@dataclass
class Served:
    """A served twin: its URL, credentials, kubeconfig, and helpers to call it."""

    twin: Twin
    server: Server
    home: Path
    url: str
    token: str
    ca: str
    kubeconfig: str

    def kubectl(
        self, *args: str, input: str | None = None, timeout: float = 30, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        r = subprocess.run(
            ["kubectl", *args], env=env, input=input, capture_output=True, text=True, timeout=timeout
        )
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({r.returncode}): {r.stderr}")
        return r

    def popen(self, *args: str) -> subprocess.Popen[str]:
        env = dict(os.environ, KUBECONFIG=self.kubeconfig)
        return subprocess.Popen(
            ["kubectl", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def http(self, method: str, path: str, *, token: str | None = "", **kw: object) -> requests.Response:
        headers = dict(kw.pop("headers", {}) or {})  # type: ignore[call-overload]
        tok = self.token if token == "" else token
        if tok is not None:
            headers["Authorization"] = f"Bearer {tok}"
        return requests.request(method, self.url + path, headers=headers, verify=self.ca, timeout=20, **kw)


def _serve(tmp_path_factory: pytest.TempPathFactory, kueue: str) -> Iterator[Served]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    home = tmp_path_factory.mktemp("twin")
    # check_readonly: the server answers reads with the stored versions themselves (no copies), so a face that
    # changed one in place would corrupt the store; the store fails loudly if one is found changed
    twin = Twin(clock="real", home=home, executor="simulated", check_readonly=True, kueue=kueue)
    server = Server(twin.core, home).start()
    info = server.write_files()
    try:
        yield Served(twin, server, home, server.url, server.creds.token, info["ca"], info["kubeconfig"])
    finally:
        server.stop()
        twin.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A served twin running Kueue 0.19.2, which serves both kueue.x-k8s.io/v1beta2 and the tutorial's v1beta1:
    the faces' tests cover both versions on the wire (conversion, discovery, OpenAPI)."""
    yield from _serve(tmp_path_factory, "0.19.2")


@pytest.fixture(scope="module")
def served_v1beta2_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A served twin running Kueue 0.20.7 (the default): kueue.x-k8s.io/v1beta2 only."""
    yield from _serve(tmp_path_factory, "0.20.7")


def gcloud_runner(
    served: Served, project: str, kubeconfig: str, timeout: float = 240
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run(*argv, check=True)`` for real gcloud/kubectl pointed at ``served`` (its ``client_env``, the
    project ``project``, kubeconfig ``home/kubeconfig``); skips the test when gcloud is not installed."""
    if shutil.which("gcloud") is None or shutil.which("gke-gcloud-auth-plugin") is None:
        pytest.skip("gcloud and gke-gcloud-auth-plugin are not installed")
    from flexq.http.server import client_env

    env = dict(
        os.environ,
        **client_env(served.home),
        CLOUDSDK_CORE_PROJECT=project,
        CLOUDSDK_CORE_DISABLE_PROMPTS="1",
    )
    env["KUBECONFIG"] = str(served.home / kubeconfig)
    os.makedirs(env["CLOUDSDK_CONFIG"], exist_ok=True)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=timeout)
        assert not check or r.returncode == 0, f"{' '.join(args)}: {r.stderr}"
        return r

    return run
