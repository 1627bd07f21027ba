"""The ETA on the tutorial's cluster in a virtual twin: who waits, in Kueue's order, on which plan, for what;
a job no flavor fits is said so; the run times come from the cluster (never from the twin's own run-time
annotation); the service publishes to ``Twin.eta`` and to a bounded Prometheus gauge."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.eta import EtaConfig, estimate, fmt_eta, naive_eta, state_from_twin
from flexq.eta.service import EtaService
from flexq.forecast.jobs import entries
from tests.eta.helpers import rayjob, tutorial_cluster, unrunnable

CFG = EtaConfig(replicas=4, workers=1, horizon=2 * 86400.0)


@pytest.fixture(scope="module")
def cluster():
    twin = Twin(clock="virtual", seed=5)
    tutorial_cluster(twin, dws_max=16)
    twin.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    for i in (1, 2, 3, 4):
        twin.create(rayjob(i))
        twin.advance(60)
    twin.create(unrunnable())
    twin.advance(60)
    late = rayjob(6)
    late["metadata"]["annotations"]["flexq.dev/expected-duration"] = "45m"
    twin.create(late)
    twin.advance(60)
    twin.create(rayjob(5, **{"kueue.x-k8s.io/priority-class": "high"}))
    twin.advance(300)
    state = state_from_twin(twin, declared=False)  # read as a real cluster: the forecast from history
    yield twin, state, estimate(state, CFG)
    twin.close()


def _eta(fc, name):
    j = fc.find(name)
    assert j is not None, (name, sorted(fc.jobs))
    return j


def test_the_state_is_read_as_kueue_orders_it(cluster) -> None:
    _twin, state, _fc = cluster
    es = entries(state)
    roles = {e.job_ref[1]: e.role for e in es}
    assert roles["rayjob-tpu-v6e-dws-1"] == "running"
    pending = [e.job_ref[1] for e in es if e.role == "pending"]
    # priority first, then creation: 5 (high, created last) before 4 and 6 (older first)
    assert pending.index("rayjob-tpu-v6e-dws-5") < pending.index("rayjob-tpu-v6e-dws-4")
    assert pending.index("rayjob-tpu-v6e-dws-4") < pending.index("rayjob-tpu-v6e-dws-6")
    assert {p["name"] for p in state.node_pools} == {"default-pool", "on-demand-pool", "dws-pool"}


def test_every_waiting_job_gets_an_eta_in_queue_order(cluster) -> None:
    _twin, _state, fc = cluster
    assert any("rayjob-tpu-v6e-dws-1-" in k for k in fc.running)
    assert fc.find("rayjob-tpu-v6e-dws-1") is None  # running: not waiting
    j4, j5, j6 = (_eta(fc, f"rayjob-tpu-v6e-dws-{i}") for i in (4, 5, 6))
    for j in (j4, j5, j6):
        assert j.median is not None and j.median > 0, j.reasoning
        assert j.low is not None and j.low <= j.median
        assert "tpu-group=" in j.plan and j.waits_for
    assert j5.position == 0 and j4.position == 1 and j6.position == 3  # too-big is ahead of 6 too
    assert j5.median <= j4.median <= j6.median  # the high-priority job first, then creation order
    # the twin's own run-time annotation (the truth in a simulation) is never read
    assert "prior" in j4.run_source or "finished jobs" in j4.run_source
    assert j6.run_source.startswith("its flexq.dev/expected-duration annotation (45m")
    assert any(line.startswith("now: Pending") for line in j4.reasoning)


def test_a_job_no_flavor_fits_is_said_so_not_given_a_time(cluster) -> None:
    _twin, _state, fc = cluster
    j = _eta(fc, "too-big")
    assert j.cannot and j.median is None, j.reasoning
    assert fmt_eta(j, fc.horizon) == "never (no flavor fits)"
    assert "flavor" in j.cannot or "quota" in j.cannot


def test_the_naive_estimate_counts_the_jobs_ahead(cluster) -> None:
    _twin, state, _fc = cluster
    naive = naive_eta(state)
    keys = {k.split("/")[1].rsplit("-", 1)[0].removeprefix("rayjob-"): v for k, v in naive.items()}
    assert keys["rayjob-tpu-v6e-dws-6"] >= keys["rayjob-tpu-v6e-dws-4"] >= keys["rayjob-tpu-v6e-dws-5"]


def test_the_service_publishes_to_the_sdk_and_a_bounded_gauge(cluster) -> None:
    twin, _state, _fc = cluster
    with pytest.raises(Exception, match="no ETA service"):
        twin.eta()
    service = EtaService(twin, cfg=CFG, in_process=True).start(background=False)
    try:
        fc = service.refresh()
        assert twin.eta() is fc
        j4 = twin.eta("rayjob-tpu-v6e-dws-4")
        assert j4 is not None and j4.median is not None
        text = twin.metrics()
        series = [ln for ln in text.splitlines() if ln.startswith("flexq_workload_eta_seconds{")]
        waiting = {k for k, j in fc.jobs.items()}
        assert 0 < len(series) <= len(waiting)
        assert any('workload="' + j4.workload + '"' in ln for ln in series)
        assert any("too-big" in ln and ln.endswith("+Inf") for ln in series)
        # once a workload has started, its series goes, whatever the last forecast said
        twin.advance(3 * 86400)
        later = [ln for ln in twin.metrics().splitlines() if ln.startswith("flexq_workload_eta_seconds{")]
        assert not any(j4.workload in ln for ln in later)
        assert len(later) < len(series)
        info = service.eta_of(twin.runtime.name, j4.namespace, j4.workload)
        assert info is not None and info["text"].startswith("in ")
        # the service kept what it predicted; the next refresh sees the starts and corrects the intervals
        assert j4.key in service.calibration.pending and "not corrected" in info["interval"]
        service.refresh()
        cal = service.calibration
        assert j4.key not in cal.pending and sum(cal.seen.values()) >= 1, cal.to_dict()
        again = service.latest()
        assert again is not None
        seen = [j for j in again.jobs.values() if cal.seen.get(j.klass)]
        assert all("observed start(s) of its class" in j.interval for j in seen)
    finally:
        service.stop()
    assert twin.core.forecasts is None


def test_a_job_whose_queue_does_not_exist_is_said_so_and_the_others_still_get_an_eta() -> None:
    """The tutorial's v1beta1 queues refused by a Kueue 0.20 cluster leave RayJobs waiting on a LocalQueue that
    does not exist: nothing admits them, so their ETA is "never" with Kueue's words, and the forward runs still
    place the jobs of the queues that do exist (before, the whole forecast — and flexq status — failed)."""
    twin = Twin(clock="virtual", seed=7)
    try:
        tutorial_cluster(twin, dws_max=16)
        lost = rayjob(1)
        lost["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "nobody-queue"
        twin.create(lost)
        twin.create(rayjob(2))
        twin.create(rayjob(3))
        twin.advance(120)
        fc = estimate(state_from_twin(twin), EtaConfig(replicas=2, workers=1, horizon=86400.0))
    finally:
        twin.close()
    j = _eta(fc, "rayjob-tpu-v6e-dws-1")
    assert j.median is None and j.cannot.startswith("LocalQueue nobody-queue doesn't exist"), j.reasoning
    assert fmt_eta(j, fc.horizon) == "never (no such queue)"
    waiting = [fc.find(f"rayjob-tpu-v6e-dws-{i}") for i in (2, 3)]
    assert any(w is not None and w.median is not None for w in waiting), fc.jobs
