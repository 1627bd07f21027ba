"""Property: whatever the stock-out windows, the fallback never causes a double admission, never exceeds a
flavor's quota, never moves a job whose TPU pods started (to plan B, or back to plan A), and every job finishes.
Two on-demand slices, so that jobs are moved, capped, hedged back and probed."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flexq.fallback.model import ANN_MOVE
from tests.fallback.conftest import build, submit

STEP = 120.0


def _profile(windows: list[tuple[int, int]]) -> dict:
    return {
        "apiVersion": "twin.flexq.dev/v1alpha1",
        "kind": "CapacityProfile",
        "metadata": {"name": "default"},
        "spec": {
            "rules": [
                {
                    "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]},
                    "windows": [{"start": f"{s}m", "end": f"{s + n}m", "available": 0} for s, n in windows],
                },
                {"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": "5m"}},
            ]
        },
    }


@pytest.mark.slow
@settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    windows=st.lists(st.tuples(st.integers(0, 240), st.integers(10, 150)), min_size=1, max_size=3),
    gaps=st.lists(st.integers(5, 90), min_size=2, max_size=3),
)
def test_no_double_admission_no_overcommit_and_every_job_finishes(windows, gaps):
    twin = build(_profile(sorted(windows)), dws_max_nodes=16, on_demand_slices=2)
    try:
        started_on_demand: dict[str, str] = {}
        jobs = []
        for i, gap in enumerate(gaps, start=1):
            submit(twin, i, 900)
            jobs.append(f"rayjob-tpu-v6e-dws-{i}")
            for _ in range(int(gap * 60 / STEP)):
                twin.advance(STEP)
                _check(twin, started_on_demand)
        for _ in range(int(10 * 3600 / STEP)):
            if all(
                twin.get("rayjob", j, "default").get("status", {}).get("jobDeploymentStatus") == "Complete"
                for j in jobs
            ):
                break
            twin.advance(STEP)
            _check(twin, started_on_demand)
        states = {j: twin.get("rayjob", j, "default")["status"].get("jobDeploymentStatus") for j in jobs}
        assert set(states.values()) == {"Complete"}, states
    finally:
        twin.close()


def _check(twin, started: dict[str, str]) -> None:
    reserved: dict[str, int] = {}
    tpu = 0
    for wl in twin.list("workload", "default"):
        conds = {c["type"]: c["status"] for c in wl["status"].get("conditions", [])}
        if (
            conds.get("QuotaReserved") == "True" and conds.get("Finished") != "True"
        ):  # finished ones hold nothing
            owner = wl["metadata"]["ownerReferences"][0]["name"]
            reserved[owner] = reserved.get(owner, 0) + 1
            for psa in wl["status"]["admission"]["podSetAssignments"]:
                if psa["flavors"].get("google.com/tpu") == "on-demand":
                    tpu += int(psa["resourceUsage"]["google.com/tpu"])
    assert all(n == 1 for n in reserved.values()), f"a job holds quota twice: {reserved}"
    assert tpu <= 32, f"on-demand TPU quota exceeded: {tpu}"
    for pod in twin.list("pod", "default"):
        pool = pod["spec"].get("nodeSelector", {}).get("cloud.google.com/gke-nodepool")
        if pod["spec"].get("nodeName") and pool in ("on-demand-pool", "dws-pool"):
            owner = pod["metadata"]["labels"].get("ray.io/cluster", "").rsplit("-", 1)[0]
            rj = twin.core.current().store.try_get("RayJob", owner, "default")
            if rj is not None and owner not in started:
                started[owner] = (rj["metadata"].get("annotations") or {}).get(ANN_MOVE, "")
    for job, when_started in started.items():
        rj = twin.core.current().store.try_get("RayJob", job, "default")
        if rj is not None:
            now = (rj["metadata"].get("annotations") or {}).get(ANN_MOVE, "")
            assert now == when_started, f"{job} started, then was moved: {when_started!r} -> {now!r}"
