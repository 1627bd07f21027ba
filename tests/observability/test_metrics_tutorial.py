"""``/metrics`` scraped over HTTP during the tutorial on the virtual twin: Kueue's metric names, types, labels and
buckets as Kueue v0.19.2 defines them, and the values Kueue would report for the same events (the quota
reservations, admissions, waits and evictions read back from the Workloads' own conditions)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from flexq import Twin
from flexq.clock import parse_time
from flexq.http.server import Server
from tests.observability.conftest import submit, tutorial_twin, workload_of

CQ = {"cluster_queue": "cluster-queue", "priority_class": "", "replica_role": "standalone"}
LQ = {"name": "user-queue", "namespace": "default", "priority_class": "", "replica_role": "standalone"}
BUCKETS_14 = [1.0] + [2.5 * 2**k for k in range(13)]
BUCKETS_16 = [1.0] + [2.5 * 2**k for k in range(15)]
# Kueue v0.19.2 pkg/metrics/metrics.go: name -> (type, labels without replica_role)
KUEUE = {
    "kueue_admission_attempts_total": ("counter", {"result"}),
    "kueue_admission_attempt_duration_seconds": ("histogram", {"result"}),
    "kueue_quota_reserved_workloads_total": ("counter", {"cluster_queue", "priority_class"}),
    "kueue_admitted_workloads_total": ("counter", {"cluster_queue", "priority_class"}),
    "kueue_finished_workloads_total": ("counter", {"cluster_queue", "priority_class"}),
    "kueue_quota_reserved_wait_time_seconds": ("histogram", {"cluster_queue", "priority_class"}),
    "kueue_admission_wait_time_seconds": ("histogram", {"cluster_queue", "priority_class"}),
    "kueue_admission_checks_wait_time_seconds": ("histogram", {"cluster_queue", "priority_class"}),
    "kueue_evicted_workloads_total": (
        "counter",
        {"cluster_queue", "reason", "underlying_cause", "priority_class"},
    ),
    "kueue_preempted_workloads_total": ("counter", {"preempting_cluster_queue", "reason"}),
    "kueue_pending_workloads": ("gauge", {"cluster_queue", "status"}),
    "kueue_reserving_active_workloads": ("gauge", {"cluster_queue"}),
    "kueue_admitted_active_workloads": ("gauge", {"cluster_queue"}),
    "kueue_finished_workloads": ("gauge", {"cluster_queue"}),
    "kueue_cluster_queue_status": ("gauge", {"cluster_queue", "status"}),
    "kueue_cluster_queue_info": ("gauge", {"cluster_queue", "parent_cohort", "root_cohort"}),
    "kueue_unadmitted_workloads": ("gauge", {"cluster_queue", "reason", "underlying_cause"}),
    "kueue_local_queue_pending_workloads": ("gauge", {"name", "namespace", "status"}),
    "kueue_local_queue_quota_reserved_workloads_total": ("counter", {"name", "namespace", "priority_class"}),
    "kueue_local_queue_admitted_workloads_total": ("counter", {"name", "namespace", "priority_class"}),
    "kueue_local_queue_admission_wait_time_seconds": ("histogram", {"name", "namespace", "priority_class"}),
    "kueue_local_queue_quota_reserved_wait_time_seconds": (
        "histogram",
        {"name", "namespace", "priority_class"},
    ),
    "kueue_local_queue_admission_checks_wait_time_seconds": (
        "histogram",
        {"name", "namespace", "priority_class"},
    ),
    "kueue_local_queue_evicted_workloads_total": (
        "counter",
        {"name", "namespace", "reason", "underlying_cause", "priority_class"},
    ),
    "kueue_local_queue_reserving_active_workloads": ("gauge", {"name", "namespace"}),
    "kueue_local_queue_admitted_active_workloads": ("gauge", {"name", "namespace"}),
    "kueue_local_queue_status": ("gauge", {"name", "namespace", "active"}),
    "kueue_local_queue_unadmitted_workloads": (
        "gauge",
        {"name", "namespace", "cluster_queue", "reason", "underlying_cause"},
    ),
}


class Scraper:
    def __init__(self, twin: Twin, tmp_path) -> None:
        self.server = Server(twin.core, tmp_path, tls=False).start()
        self.token = self.server.creds.token

    def scrape(self) -> dict[str, dict]:
        r = requests.get(
            self.server.url + "/metrics", headers={"Authorization": f"Bearer {self.token}"}, timeout=20
        )
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/plain; version=")
        types = {
            line.split()[2]: line.split()[3] for line in r.text.splitlines() if line.startswith("# TYPE ")
        }
        samples = [s for fam in text_string_to_metric_families(r.text) for s in fam.samples]
        return {"types": types, "samples": samples}


@pytest.fixture
def scraper(twin: Twin, tmp_path) -> Iterator[Scraper]:
    s = Scraper(twin, tmp_path)
    yield s
    s.server.stop()


def value(page: dict, family: str, sample: str | None = None, **labels: str) -> float | None:
    found = [
        s.value
        for s in page["samples"]
        if s.name == (sample or family) and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    return sum(found) if found else None


def samples(page: dict, family: str) -> list:
    return [
        s
        for s in page["samples"]
        if s.name == family
        or (s.name.startswith(family + "_") and s.name[len(family) + 1 :] in ("bucket", "sum", "count"))
    ]


def ts(cond_owner: dict, ctype: str) -> float:
    c = next(c for c in cond_owner["status"]["conditions"] if c["type"] == ctype)
    return parse_time(c["lastTransitionTime"])


def test_names_types_labels_and_buckets_are_kueues(twin: Twin, scraper: Scraper) -> None:
    submit(twin, 1)
    submit(twin, 2)
    twin.advance(120)
    page = scraper.scrape()
    for name, (mtype, labels) in KUEUE.items():
        assert page["types"].get(name) == mtype, name
        for s in samples(page, name):
            keys = set(s.labels) - {"le"}
            assert keys == labels | {"replica_role"}, (name, keys)
            assert s.labels["replica_role"] == "standalone"
    build = samples(page, "kueue_build_info")[0]
    assert "replica_role" not in build.labels and build.labels["git_version"] == "v0.19.2"
    for name, buckets in (
        ("kueue_admission_wait_time_seconds", BUCKETS_16),
        ("kueue_quota_reserved_wait_time_seconds", BUCKETS_14),
        ("kueue_admission_checks_wait_time_seconds", BUCKETS_14),
        ("kueue_local_queue_admission_wait_time_seconds", BUCKETS_14),
    ):
        les = [
            float(s.labels["le"])
            for s in samples(page, name)
            if s.name.endswith("_bucket")
            and s.labels.get("cluster_queue", s.labels.get("name")) in ("cluster-queue", "user-queue")
        ]
        assert les == buckets + [float("inf")], name
    les = [
        float(s.labels["le"])
        for s in samples(page, "kueue_admission_attempt_duration_seconds")
        if s.name.endswith("_bucket") and s.labels["result"] == "success"
    ]
    assert les == [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, float("inf")]
    # CQ resource gauges only with metrics.enableClusterQueueResources
    assert "kueue_cluster_queue_resource_usage" not in page["types"]
    # the twin's own
    for name, mtype in (
        ("flexq_nodes", "gauge"),
        ("flexq_provisioning_requests", "gauge"),
        ("flexq_stockouts_total", "counter"),
        ("flexq_stockout_seconds_total", "counter"),
        ("flexq_cost_usd_total", "counter"),
        ("flexq_job_cost_usd_total", "counter"),
        ("flexq_node_hours_total", "counter"),
    ):
        assert page["types"].get(name) == mtype, name


def test_values_follow_the_tutorial_as_kueue_records_them(twin: Twin, scraper: Scraper) -> None:
    twin.advance(1)  # the provisioning controller marks the AdmissionCheck Active: the ClusterQueue activates
    page = scraper.scrape()
    assert value(page, "kueue_admitted_workloads_total", **CQ) is None  # nothing admitted yet
    assert value(page, "kueue_cluster_queue_status", cluster_queue="cluster-queue", status="active") == 1
    submit(twin, 1)
    submit(twin, 2)
    twin.advance(5)
    wl1, wl2 = workload_of(twin, 1), workload_of(twin, 2)
    page = scraper.scrape()
    # job 1: plan A, reserved and admitted in one write (no admission checks on on-demand)
    assert value(page, "kueue_quota_reserved_workloads_total", **CQ) == 2  # job 2 holds dws quota too
    assert value(page, "kueue_admitted_workloads_total", **CQ) == 1
    wait1 = ts(wl1, "Admitted") - parse_time(wl1["metadata"]["creationTimestamp"])
    assert (
        value(page, "kueue_admission_wait_time_seconds", "kueue_admission_wait_time_seconds_sum", **CQ)
        == wait1
    )
    assert (
        value(
            page,
            "kueue_admission_checks_wait_time_seconds",
            "kueue_admission_checks_wait_time_seconds_count",
            **CQ,
        )
        is None
    )  # the scheduler reports it only for workloads with admission checks
    # job 2: quota reserved on dws, waiting for the ProvisioningRequest: unadmitted
    assert (
        value(
            page,
            "kueue_unadmitted_workloads",
            cluster_queue="cluster-queue",
            reason="UnsatisfiedAdmissionChecks",
            underlying_cause="",
        )
        == 1
    )
    assert value(page, "kueue_reserving_active_workloads", cluster_queue="cluster-queue") == 2
    assert value(page, "kueue_admitted_active_workloads", cluster_queue="cluster-queue") == 1
    assert value(page, "kueue_pending_workloads", cluster_queue="cluster-queue") == 0
    assert (
        value(
            page,
            "flexq_provisioning_requests",
            provisioning_class="queued-provisioning.gke.io",
            state="Accepted",
        )
        == 1
    )
    success = value(page, "kueue_admission_attempts_total", result="success")
    assert success is not None and success >= 2
    twin.advance(300)  # DWS grants plan B: the check turns Ready, the workload controller admits
    wl2 = workload_of(twin, 2)
    page = scraper.scrape()
    assert value(page, "kueue_admitted_workloads_total", **CQ) == 2
    assert value(page, "kueue_local_queue_admitted_workloads_total", **LQ) == 2
    checks_wait = ts(wl2, "Admitted") - ts(wl2, "QuotaReserved")
    assert checks_wait > 0
    assert (
        value(
            page,
            "kueue_admission_checks_wait_time_seconds",
            "kueue_admission_checks_wait_time_seconds_sum",
            **CQ,
        )
        == checks_wait
    )
    wait2 = ts(wl2, "Admitted") - parse_time(wl2["metadata"]["creationTimestamp"])
    assert (
        value(page, "kueue_admission_wait_time_seconds", "kueue_admission_wait_time_seconds_sum", **CQ)
        == wait1 + wait2
    )
    le = next(b for b in BUCKETS_16 if b >= wait2)
    bucket = [
        x.value
        for x in samples(page, "kueue_admission_wait_time_seconds")
        if x.name.endswith("_bucket")
        and float(x.labels["le"]) == le
        and x.labels["cluster_queue"] == "cluster-queue"
    ]
    assert bucket and bucket[0] >= 1
    assert value(page, "flexq_nodes", pool="dws-pool", provisioning_model="flex-start", ready="true") == 4
    twin.advance(1200)  # both finish
    page = scraper.scrape()
    assert value(page, "kueue_finished_workloads_total", **CQ) == 2
    assert value(page, "kueue_finished_workloads", cluster_queue="cluster-queue") == 2
    assert value(page, "kueue_reserving_active_workloads", cluster_queue="cluster-queue") == 0
    assert value(page, "kueue_evicted_workloads_total", cluster_queue="cluster-queue") is None
    bill = twin.billing()
    assert value(page, "flexq_cost_usd_total", pool="on-demand-pool") == pytest.approx(
        bill["pools"]["on-demand-pool"]
    )
    # the SDK reads the same registry on the virtual clock
    assert twin.metric("kueue_admitted_workloads_total", {"cluster_queue": "cluster-queue"}) == 2
    assert "kueue_admitted_workloads_total{" in twin.metrics()


def test_stockout_eviction_and_stockout_seconds(tmp_path) -> None:
    """Plan A stocks out: Kueue admits on quota, the pods never start, waitForPodsReady evicts after 30 minutes
    (evicted_workloads_total{reason="PodsReadyTimeout"}); the pool's stock-out is timed."""
    from flexq.api.capacity_profile import API_VERSION, KIND

    profile = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "default"},
        "spec": {
            "rules": [
                {
                    "match": {"machineTypes": ["ct6e-standard-4t"], "provisioningModels": ["on-demand"]},
                    "available": 0,
                }
            ]
        },
    }
    twin = tutorial_twin(profile)
    s = Scraper(twin, tmp_path)
    try:
        submit(twin, 1)
        twin.advance(1800 + 120)
        wl = workload_of(twin, 1)
        evictions = wl["status"]["schedulingStats"]["evictions"]
        assert [(e["reason"], e["count"]) for e in evictions] == [("PodsReadyTimeout", 1)]
        page = s.scrape()
        assert (
            value(
                page,
                "kueue_evicted_workloads_total",
                cluster_queue="cluster-queue",
                reason="PodsReadyTimeout",
                underlying_cause=evictions[0].get("underlyingCause", ""),
                priority_class="",
            )
            == 1
        )
        assert (
            value(
                page,
                "kueue_local_queue_evicted_workloads_total",
                name="user-queue",
                reason="PodsReadyTimeout",
            )
            == 1
        )
        assert value(page, "flexq_stockouts_total", pool="on-demand-pool") >= 1
        seconds = value(page, "flexq_stockout_seconds_total", pool="on-demand-pool")
        assert seconds is not None and seconds > 1000
    finally:
        s.server.stop()
        twin.close()


def test_job_cost_is_as_of_the_scrape_not_of_the_last_ledger_write(twin: Twin, scraper: Scraper) -> None:
    """The billing controller writes pod records to the stored ledger up to a minute late; a scrape (what the
    dashboard's per-job cost reads) brings it up to now first: a job whose pods run is never shown as free."""
    job = "RayJob/default/rayjob-tpu-v6e-dws-1"
    labels = {"kind": "RayJob", "namespace": "default", "name": "rayjob-tpu-v6e-dws-1"}
    submit(twin, 1, run_seconds=600)
    for _ in range(3600):
        twin.advance(1)
        pods = twin.list("pod", "default")
        if pods and all((p.get("status") or {}).get("phase") == "Running" for p in pods):
            break
    for _ in range(3):  # a few scrapes within the controller's flush delay
        twin.advance(10)
        page = scraper.scrape()
        cost = value(page, "flexq_job_cost_usd_total", **labels)
        assert cost is not None and cost > 0, cost
        assert cost == pytest.approx(twin.billing()["jobs"][job], rel=1e-6)


def test_job_cost_labels_count_each_job_once_and_node_hours_carry_the_pool(
    twin: Twin, scraper: Scraper
) -> None:
    """Issue 28 item 8: a RayJob's cost is one series with ``kind``, ``namespace`` and ``name`` labels (its
    submitter pod is part of it, not a second ``Job/...`` series that a PromQL ``sum by`` would add twice; no
    ``job`` label, which Prometheus sets on every scraped series), and ``flexq_node_hours_total`` is split by
    pool and provisioning model like the cost metrics."""
    submit(twin, 1, run_seconds=300)
    submit(twin, 2, run_seconds=300)
    for _ in range(240):  # until both have run their submitters and finished
        twin.advance(30)
        done = [
            r
            for r in twin.list("rayjob", "default")
            if r.get("status", {}).get("jobDeploymentStatus") == "Complete"
        ]
        if len(done) == 2:
            break
    submitters = [
        p for p in twin.list("pod", "default") if (p["metadata"].get("labels") or {}).get("job-name")
    ]
    assert submitters, "the RayJobs' submitter pods ran"
    page = scraper.scrape()
    jobs = [s for s in page["samples"] if s.name == "flexq_job_cost_usd_total"]
    assert jobs and all(set(s.labels) == {"kind", "namespace", "name"} for s in jobs), jobs
    names = [(s.labels["kind"], s.labels["name"]) for s in jobs]
    assert sorted(names) == [("RayJob", "rayjob-tpu-v6e-dws-1"), ("RayJob", "rayjob-tpu-v6e-dws-2")], names
    bill = twin.billing()
    assert sorted(bill["jobs"]) == [
        "RayJob/default/rayjob-tpu-v6e-dws-1",
        "RayJob/default/rayjob-tpu-v6e-dws-2",
    ]
    for s in jobs:
        assert s.value == pytest.approx(bill["jobs"][f"RayJob/default/{s.labels['name']}"], rel=1e-6)
    hours = [s for s in page["samples"] if s.name == "flexq_node_hours_total"]
    assert {s.labels["pool"] for s in hours} >= {"default-pool", "on-demand-pool", "dws-pool"}, hours
    assert all(set(s.labels) == {"pool", "provisioning_model"} for s in hours)
    model = {s.labels["pool"]: s.labels["provisioning_model"] for s in hours}
    cost_model = {
        s.labels["pool"]: s.labels["provisioning_model"] for s in samples(page, "flexq_cost_usd_total")
    }
    assert model == cost_model, (model, cost_model)
    assert sum(s.value for s in hours) == pytest.approx(bill["nodeHours"], rel=1e-6)
