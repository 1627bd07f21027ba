"""The tutorial's gcloud commands, verbatim, against a served twin (a real client: Google Cloud SDK)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexq import Twin

pytestmark = pytest.mark.slow
LOC = ["--location=us-east5-b", "--project=proj-x"]


@pytest.fixture(scope="module")
def gcloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    if shutil.which("gcloud") is None:
        pytest.skip("gcloud is not installed")
    from flexq.http.server import Server

    home: Path = tmp_path_factory.mktemp("twin")
    twin = Twin(clock="real", home=home, executor="simulated")
    # Plain HTTP: gcloud 528 here rejects the twin's CA even with CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE (openssl and
    # requests accept it; reported to the http owner). This test is about GKE's behaviour, not TLS.
    server = Server(twin.core, home, tls=False).start()
    info = server.write_files()
    env = dict(os.environ, **info["env"], CLOUDSDK_CORE_DISABLE_PROMPTS="1", CLOUDSDK_CORE_PROJECT="proj-x")

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(
            ["gcloud", "container", *args], env=env, capture_output=True, text=True, timeout=180
        )
        if check and r.returncode != 0:
            raise AssertionError(f"gcloud {' '.join(args)} failed ({r.returncode}): {r.stderr[-2000:]}")
        return r

    run.twin = twin  # type: ignore[attr-defined]
    try:
        yield run
    finally:
        server.stop()
        twin.close()


def test_tutorial_commands(gcloud) -> None:
    gcloud(
        "clusters",
        "create",
        "tpu-cluster",
        "--cluster-version=1.34",
        "--machine-type=n2-standard-16",
        "--enable-image-streaming",
        "--addons=RayOperator",
        *LOC,
    )
    for name, extra in (
        ("on-demand-pool", []),
        ("dws-pool", ["--enable-queued-provisioning", "--flex-start"]),
    ):
        gcloud(
            "node-pools",
            "create",
            name,
            "--cluster=tpu-cluster",
            "--machine-type=ct6e-standard-4t",
            "--tpu-topology=4x4",
            "--reservation-affinity=none",
            "--enable-autoscaling",
            *extra,
            "--num-nodes=0",
            "--min-nodes=0",
            "--max-nodes=4",
            *LOC,
        )
    out = gcloud(
        "node-pools", "describe", "dws-pool", "--cluster=tpu-cluster", "--format=get(config.flexStart)", *LOC
    )
    assert out.stdout.strip() == "True"
    listed = gcloud(
        "node-pools", "list", "--cluster=tpu-cluster", "--format=value(name)", *LOC
    ).stdout.split()
    assert listed == ["default-pool", "on-demand-pool", "dws-pool"]
    bad = gcloud(
        "node-pools",
        "create",
        "bad",
        "--cluster=tpu-cluster",
        "--machine-type=ct6e-standard-4t",
        "--tpu-topology=3x3",
        "--num-nodes=0",
        *LOC,
        check=False,
    )
    assert bad.returncode != 0 and 'Invalid TPU topology "3x3"' in bad.stderr
    # a pool on a specific reservation (issue 51, capacity tiers): what gcloud sends is what the twin reads
    gcloud(
        "node-pools",
        "create",
        "res-a-pool",
        "--cluster=tpu-cluster",
        "--machine-type=ct6e-standard-4t",
        "--tpu-topology=4x4",
        "--reservation-affinity=specific",
        "--reservation=res-a",
        "--enable-autoscaling",
        "--num-nodes=0",
        "--min-nodes=0",
        "--max-nodes=4",
        *LOC,
    )
    aff = gcloud(
        "node-pools",
        "describe",
        "res-a-pool",
        "--cluster=tpu-cluster",
        "--format=json(config.reservationAffinity)",
        *LOC,
    ).stdout
    assert json.loads(aff)["config"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["res-a"],
    }
    gcloud("clusters", "delete", "tpu-cluster", "--quiet", *LOC)
    assert gcloud("clusters", "list", "--format=value(name)", "--project=proj-x").stdout.strip() == ""
