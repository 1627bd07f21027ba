"""Issue 49: the background ETA service follows the cluster when it appears.

The README's flow: ``flexq up`` (which starts the ETA service on the twin's placeholder cluster), then ``gcloud
container clusters create`` and the tutorial's node pools, queues and RayJobs. Over real HTTPS — the GKE API for
the cluster and pools, kubectl for the rest — the service, whose period is an hour, must publish the waiting
jobs' ETAs on that cluster's ``/metrics`` and on the dashboard within seconds, without a restart; and the
placeholder's forecast is never shown as the new cluster's.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import requests
import yaml

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.eta import EtaConfig
from flexq.eta.service import EtaService
from flexq.http.dashboard import PREFIX
from flexq.http.server import Server
from tests.eta.helpers import SLOW_DWS_PROFILE, TRAIN, rayjob
from tests.waiting import wait_for

PROJECT = "follow-project"
PROFILE = SLOW_DWS_PROFILE


@pytest.mark.slow
def test_the_eta_service_follows_a_cluster_created_after_it_started(tmp_path: Path) -> None:
    home = tmp_path / "home"
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    info = server.write_files()
    token = Path(info["token_file"]).read_text().strip()
    http = requests.Session()
    http.trust_env = False
    http.verify = info["ca"]
    http.headers["Authorization"] = f"Bearer {token}"
    env = dict(os.environ, KUBECONFIG=info["kubeconfig"])

    def kubectl(*args: str, input: str | None = None) -> str:
        r = subprocess.run(
            ["kubectl", *args], env=env, input=input, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r.stdout

    def gke(path: str, body: dict) -> None:
        r = http.post(server.url + path, json=body, timeout=30)
        assert r.status_code == 200, r.text

    def operations_done() -> bool:
        return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

    # as `flexq up` does: the service starts with the twin, before any GKE cluster exists; its period is long
    service = EtaService(twin, cfg=EtaConfig(replicas=2, workers=1), period=3600, debounce=0.5)
    service.start()
    try:
        placeholder = twin.runtime.name
        wait_for(lambda: service.refreshes >= 1, 120, "the placeholder's first forecast")
        twin.core.project.create(PROFILE)
        gke(*T.create_cluster_request(PROJECT))
        wait_for(operations_done, what="the cluster")
        assert twin.runtime.name != placeholder
        for dws in (False, True):
            path, body = T.create_node_pool_request(PROJECT, dws=dws)
            body["nodePool"]["autoscaling"]["maxNodeCount"] = 8
            gke(path, body)
            wait_for(operations_done, what="a node pool")
        kubectl("apply", "-f", "-", input=T.queue_yaml(api="v1beta2"))
        kubectl("apply", "-f", "-", input=json.dumps(TRAIN))
        for i in (1, 2, 3, 4):
            kubectl("apply", "-f", "-", input=yaml.safe_dump(rayjob(i, run=3600)))
        cluster = twin.runtime.name

        def waiting_series() -> list[str]:
            r = http.get(server.url + "/metrics", timeout=30)
            assert r.status_code == 200, r.text
            return [
                line
                for line in r.text.splitlines()
                if line.startswith("flexq_workload_eta_seconds{") and 'namespace="default"' in line
            ]

        def waiting() -> list[str]:
            return [
                w["metadata"]["name"]
                for w in twin.list("Workload", "default")
                if not (w.get("status") or {}).get("admission")
            ]

        def every_waiting_job_has_a_series() -> bool:
            series, names = waiting_series(), waiting()
            return bool(names) and all(any(f'workload="{w}"' in s for s in series) for w in names)

        # within seconds, not the hour of its period: the new cluster's /metrics has the waiting jobs' ETAs
        wait_for(every_waiting_job_has_a_series, 120, "ETA series of every waiting job on the new cluster")
        assert service.latest() is not None and service._forecast_cluster == cluster
        names = waiting()
        # the dashboard shows a waiting job's ETA
        page = http.get(server.url + f"{PREFIX}/workloads/default/{names[0]}?cluster={cluster}", timeout=30)
        assert page.status_code == 200 and 'id="eta"' in page.text, page.text[-2000:]
        # the placeholder's forecast is never the new cluster's, and the placeholder publishes none now
        assert service.eta_of(placeholder, "default", names[0]) is None
    finally:
        service.stop()
        server.stop()
        twin.close()
