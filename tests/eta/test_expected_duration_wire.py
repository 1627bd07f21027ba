"""Issue 49 (the ETA service), over the wire: a tenant who may only ``create rayjobs`` (kubectl, its own token)
submits a RayJob claiming ``flexq.dev/expected-duration: 99999999999999999999999h`` (3.6e26 s). Its claim must not
become every other job's forecast: the job waiting behind it on plan A's quota is given a time on the served twin's
``/metrics`` (before, 1efbae1: +Inf, "not within 7d", as for the 4,992 jobs behind such a claim in the issue)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import yaml

from flexq.eta import EtaConfig
from flexq.eta.service import EtaService
from tests.eta.helpers import ServedTwin, rayjob, served_twin
from tests.waiting import wait_for

PROJECT = "claim-project"


@pytest.mark.slow
def test_a_tenants_absurd_duration_claim_does_not_stall_the_jobs_behind_it(tmp_path: Path) -> None:
    """Plan A has room for one job (4 nodes, a job's slice), plan B for two, and DWS grants in 3 h: the fourth job
    waits for plan A's job to end."""
    with served_twin(tmp_path / "home") as st:
        _claim_and_read(st, tmp_path)


def _claim_and_read(st: ServedTwin, tmp_path: Path) -> None:
    twin, server, http, kubectl = st.twin, st.server, st.http, st.kubectl

    def workload(i: int) -> dict | None:
        return next(
            (w for w in twin.list("Workload", "default") if f"-dws-{i}-" in w["metadata"]["name"]), None
        )

    def admitted(i: int) -> bool:
        wl = workload(i)
        return wl is not None and bool((wl.get("status") or {}).get("admission"))

    service: EtaService | None = None
    try:
        st.tutorial_cluster(PROJECT, max_nodes=4)
        # the tenant: a service account that may create RayJobs in the queue's namespace, nothing else
        kubectl("create", "serviceaccount", "tenant", "-n", "default")
        kubectl("create", "role", "rayjobs", "-n", "default", "--verb=create", "--resource=rayjobs.ray.io")
        kubectl(
            "create",
            "rolebinding",
            "rayjobs",
            "-n",
            "default",
            "--role=rayjobs",
            "--serviceaccount=default:tenant",
        )
        cfg = yaml.safe_load(Path(st.info["kubeconfig"]).read_text())
        tenant_token = kubectl("create", "token", "tenant", "-n", "default").strip()
        for u in cfg["users"]:
            u["user"] = {"token": tenant_token}
        (tmp_path / "tenant").write_text(yaml.safe_dump(cfg))
        tenant = dict(os.environ, KUBECONFIG=str(tmp_path / "tenant"))
        hog = rayjob(1, run=7200)
        hog["metadata"]["annotations"]["flexq.dev/expected-duration"] = "99999999999999999999999h"
        kubectl("create", "-f", "-", input=json.dumps(hog), env=tenant)
        wait_for(lambda: admitted(1), 120, "the tenant's job admitted on plan A")
        for i in (2, 3, 4):
            kubectl("apply", "-f", "-", input=yaml.safe_dump(rayjob(i, run=1800)))
            wait_for(lambda i=i: workload(i) is not None, 60, f"job {i}'s Workload")
        wait_for(lambda: admitted(2) and admitted(3), 120, "jobs 2 and 3 admitted on plan B")
        assert not admitted(4)
        service = EtaService(twin, cfg=EtaConfig(replicas=4, workers=1), period=3600, debounce=0.5)
        service.start()
        name = workload(4)["metadata"]["name"]  # type: ignore[index]

        def series() -> float | None:
            r = http.get(server.url + "/metrics", timeout=30)
            assert r.status_code == 200, r.text
            for line in r.text.splitlines():
                if line.startswith("flexq_workload_eta_seconds{") and f'workload="{name}"' in line:
                    return float(line.rsplit(" ", 1)[1])
            return None

        wait_for(lambda: series() is not None, 180, "job 4's ETA series")
        eta = series()
        assert eta is not None and math.isfinite(eta), (
            f"job 4 waits behind a tenant's claim of 3.6e26 s: its ETA is {eta} (not within the horizon)"
        )
        assert not admitted(4)
    finally:
        if service is not None:
            service.stop()
