"""Issue 49 (the ETA service), over the wire: a tenant who may only ``create rayjobs`` (kubectl, its own token)
submits a RayJob claiming ``flexq.dev/expected-duration: 99999999999999999999999h`` (3.6e26 s). The claim is
read where the ETA reads it and refused (over 64 characters, over 30 days): the forecast the served twin shows on
its dashboard takes the job's run time from its class's history or the prior, never from the claim (before,
1efbae1: "its flexq.dev/expected-duration annotation (...)", so the job held its quota for ever in every forward
run and every job behind it read "not within 7d")."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from flexq.eta import EtaConfig
from flexq.eta.service import EtaService
from flexq.http.dashboard import PREFIX
from tests.eta.helpers import ServedTwin, rayjob, served_twin
from tests.waiting import wait_for

PROJECT = "claim-project"
CLAIM = "99999999999999999999999h"


@pytest.mark.slow
def test_a_tenants_absurd_duration_claim_is_not_the_forecasts(tmp_path: Path) -> None:
    """Three jobs hold the quota (plan A's one slice, plan B's); the tenant's job waits for it, so the ETA service
    forecasts it and shows why."""
    with served_twin(tmp_path / "home") as st:
        _claim_and_read(st, tmp_path)


def _tenant_env(st: ServedTwin, tmp_path: Path) -> dict[str, str]:
    """A service account that may create RayJobs in the queue's namespace, nothing else: its kubeconfig."""
    st.kubectl("create", "serviceaccount", "tenant", "-n", "default")
    st.kubectl("create", "role", "rayjobs", "-n", "default", "--verb=create", "--resource=rayjobs.ray.io")
    st.kubectl(
        "create",
        "rolebinding",
        "rayjobs",
        "-n",
        "default",
        "--role=rayjobs",
        "--serviceaccount=default:tenant",
    )
    cfg = yaml.safe_load(Path(st.info["kubeconfig"]).read_text())
    token = st.kubectl("create", "token", "tenant", "-n", "default").strip()
    for u in cfg["users"]:
        u["user"] = {"token": token}
    (tmp_path / "tenant").write_text(yaml.safe_dump(cfg))
    return dict(os.environ, KUBECONFIG=str(tmp_path / "tenant"))


def _claim_and_read(st: ServedTwin, tmp_path: Path) -> None:
    twin = st.twin

    def workload(i: int) -> dict | None:
        return next(
            (w for w in twin.list("Workload", "default") if f"-dws-{i}-" in w["metadata"]["name"]), None
        )

    def admitted(i: int) -> bool:
        wl = workload(i)
        return wl is not None and bool((wl.get("status") or {}).get("admission"))

    st.tutorial_cluster(PROJECT, max_nodes=4)
    tenant = _tenant_env(st, tmp_path)
    for i in (1, 2, 3):
        st.kubectl("apply", "-f", "-", input=yaml.safe_dump(rayjob(i, run=7200)))
        wait_for(lambda i=i: admitted(i), 120, f"job {i} admitted")
    claim = rayjob(4, run=1800)
    claim["metadata"]["annotations"]["flexq.dev/expected-duration"] = CLAIM
    st.kubectl("create", "-f", "-", input=json.dumps(claim), env=tenant)
    wait_for(lambda: workload(4) is not None, 60, "the tenant's Workload")
    assert not admitted(4)
    name = workload(4)["metadata"]["name"]  # type: ignore[index]
    cluster = twin.runtime.name
    service = EtaService(twin, cfg=EtaConfig(replicas=4, workers=1), period=3600, debounce=0.5)
    service.start()
    try:

        def reasoning() -> list[str]:
            """The forecast's reasons for the tenant's job, as the dashboard shows them (over HTTPS)."""
            r = st.http.get(f"{st.server.url}{PREFIX}/workloads/default/{name}?cluster={cluster}", timeout=30)
            assert r.status_code == 200, r.text[-2000:]
            part = re.search(r'<ul class="reasoning">(.*?)</ul>', r.text, re.S)
            return (
                [html.unescape(li) for li in re.findall(r"<li>(.*?)</li>", part.group(1), re.S)]
                if part
                else []
            )

        lines = wait_for(reasoning, 180, "the tenant's job's forecast on the dashboard")
        run = [line for line in lines if line.startswith("its run time")]
        assert run, lines
        assert "expected-duration" not in run[0] and CLAIM not in run[0], run[0]
    finally:
        service.stop()
