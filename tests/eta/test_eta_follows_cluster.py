"""Issue 49: the background ETA service follows the cluster when it appears.

The README's flow: ``flexq up`` (which starts the ETA service on the twin's placeholder cluster), then ``gcloud
container clusters create`` and the tutorial's node pools, queues and RayJobs. Over real HTTPS — the GKE API for
the cluster and pools, kubectl for the rest — the service, whose period is an hour, must publish the waiting
jobs' ETAs on that cluster's ``/metrics`` and on the dashboard within seconds, without a restart; and the
placeholder's forecast is never shown as the new cluster's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flexq.eta import EtaConfig
from flexq.eta.service import EtaService
from flexq.http.dashboard import PREFIX
from tests.eta.helpers import ServedTwin, rayjob, served_twin
from tests.waiting import wait_for

PROJECT = "follow-project"


@pytest.mark.slow
def test_the_eta_service_follows_a_cluster_created_after_it_started(tmp_path: Path) -> None:
    with served_twin(tmp_path / "home") as st:
        _follow(st)


def _follow(st: ServedTwin) -> None:
    twin, server, http = st.twin, st.server, st.http
    # as `flexq up` does: the service starts with the twin, before any GKE cluster exists; its period is long
    service = EtaService(twin, cfg=EtaConfig(replicas=2, workers=1), period=3600, debounce=0.5)
    service.start()
    try:
        placeholder = twin.runtime.name
        wait_for(lambda: service.refreshes >= 1, 120, "the placeholder's first forecast")
        st.tutorial_cluster(PROJECT, max_nodes=8)
        assert twin.runtime.name != placeholder
        for i in (1, 2, 3, 4):
            st.kubectl("apply", "-f", "-", input=yaml.safe_dump(rayjob(i, run=3600)))
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
