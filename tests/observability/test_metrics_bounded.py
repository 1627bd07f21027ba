"""``/metrics`` stays bounded whatever clients write: evictions are counted from Kueue's own evictions (as Kueue's
``ReportEvictedWorkloads``), not from what any client writes into a Workload's status; a deleted ClusterQueue
or LocalQueue takes its series with it (``ClearClusterQueueMetrics``, ``ClearLocalQueueMetrics``); a job's cost
series lives as long as the job, and at most ``MAX_JOB_SERIES`` are shown."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.gke import metrics as gke_metrics
from tests.observability.conftest import submit, tutorial_twin, workload_of
from tests.observability.test_metrics_kueue import QUEUES, job, wl_of


def _series(twin: Twin, name: str) -> list[str]:
    return [ln for ln in twin.metrics().splitlines() if ln.startswith(name + "{")]


def test_a_status_write_with_made_up_evictions_adds_no_series() -> None:
    twin = Twin(clock="virtual")
    try:
        twin.apply(QUEUES)
        twin.apply(
            job("one", "low")
            | {"metadata": {**job("one", "low")["metadata"], "labels": {"kueue.x-k8s.io/queue-name": "q"}}}
        )
        twin.advance(5)
        wl = wl_of(twin, "one")
        before = len(twin.metrics().splitlines())
        stats = [
            {"reason": f"Made{i}Up", "underlyingCause": "", "count": 1} for i in range(250)
        ]  # (at most 256: the CRD)
        twin.patch(
            "workload",
            wl["metadata"]["name"],
            {
                "status": {
                    "admission": {
                        "clusterQueue": "no-such-queue",
                        "podSetAssignments": wl["status"]["admission"]["podSetAssignments"],
                    },
                    "schedulingStats": {"evictions": stats},
                }
            },
            "default",
            subresource="status",
        )
        twin.advance(1)
        assert _series(twin, "kueue_evicted_workloads_total") == []
        assert _series(twin, "kueue_local_queue_evicted_workloads_total") == []
        assert (
            len(twin.metrics().splitlines()) <= before + 2
        )  # at most a gauge moving, no new families of series
    finally:
        twin.close()


def test_kueue_counts_its_own_eviction_once() -> None:
    twin = Twin(clock="virtual")
    try:
        twin.apply(QUEUES)
        twin.apply(
            job("one", "low")
            | {"metadata": {**job("one", "low")["metadata"], "labels": {"kueue.x-k8s.io/queue-name": "q"}}}
        )
        twin.advance(5)
        wl = wl_of(twin, "one")
        twin.patch("workload", wl["metadata"]["name"], {"spec": {"active": False}}, "default")
        twin.advance(5)
        labels = {"cluster_queue": "team", "reason": "Deactivated", "underlying_cause": ""}
        assert twin.metric("kueue_evicted_workloads_total", labels) == 1
        assert (
            twin.metric(
                "kueue_local_queue_evicted_workloads_total",
                {"name": "q", "namespace": "default", "reason": "Deactivated"},
            )
            == 1
        )
        assert len(_series(twin, "kueue_evicted_workloads_total")) == 1
    finally:
        twin.close()


def test_deleting_a_queue_drops_its_series() -> None:
    twin = Twin(clock="virtual")
    try:
        twin.apply(QUEUES)
        twin.apply(
            job("one", "low")
            | {"metadata": {**job("one", "low")["metadata"], "labels": {"kueue.x-k8s.io/queue-name": "q"}}}
        )
        twin.advance(5)
        assert twin.metric("kueue_admitted_workloads_total", {"cluster_queue": "team"}) == 1
        assert (
            twin.metric("kueue_local_queue_admitted_workloads_total", {"name": "q", "namespace": "default"})
            == 1
        )
        twin.delete("localqueue", "q", "default")
        twin.advance(1)
        assert (
            twin.metric("kueue_local_queue_admitted_workloads_total", {"name": "q", "namespace": "default"})
            is None
        )
        assert _series(twin, "kueue_local_queue_quota_reserved_wait_time_seconds_count") == []
        twin.delete("job", "one", "default")
        twin.advance(5)
        twin.delete("clusterqueue", "team")
        twin.advance(5)
        for name in ("kueue_admitted_workloads_total", "kueue_quota_reserved_workloads_total"):
            assert twin.metric(name, {"cluster_queue": "team"}) is None, name
        assert not any('cluster_queue="team"' in ln for ln in twin.metrics().splitlines())
    finally:
        twin.close()


def test_a_jobs_cost_series_lives_with_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    twin = tutorial_twin()
    try:
        submit(twin, 1, run_seconds=60)
        submit(twin, 2, run_seconds=60)
        twin.advance(900)
        jobs = {ln.split('name="')[1].split('"')[0] for ln in _series(twin, "flexq_job_cost_usd_total")}
        assert "rayjob-tpu-v6e-dws-1" in jobs
        monkeypatch.setattr(gke_metrics, "MAX_JOB_SERIES", 1)
        assert len(_series(twin, "flexq_job_cost_usd_total")) == 1
        monkeypatch.setattr(gke_metrics, "MAX_JOB_SERIES", 1000)
        cost = twin.billing()["jobs"]["RayJob/default/rayjob-tpu-v6e-dws-1"]
        twin.delete("rayjob", "rayjob-tpu-v6e-dws-1", "default")
        twin.advance(5)
        gone = {"kind": "RayJob", "namespace": "default", "name": "rayjob-tpu-v6e-dws-1"}
        assert twin.metric("flexq_job_cost_usd_total", gone) is None
        assert twin.billing()["jobs"]["RayJob/default/rayjob-tpu-v6e-dws-1"] == cost  # the ledger keeps it
        assert workload_of(twin, 2)
    finally:
        twin.close()
