"""The simulator against queueing theory: an M/M/c queue built from Kueue quota for c one-cpu workloads,
Poisson arrivals and exponential run times, compared with Erlang C; and Little's law on the results."""

from __future__ import annotations

import math

import pytest

import flexq
from flexq.simulate.results import time_average

C, MEAN_ARRIVAL, MEAN_RUN = 2, 75.0, 90.0  # rho = 0.6, Erlang-C Wq = 50.6 s
JOBS, REPLICAS, WARMUP, BATCH = 1200, 3, 100, 100


def erlang_c_wait(c: int, lam: float, mu: float) -> float:
    a = lam / mu
    rho = a / c
    top = a**c / math.factorial(c) / (1 - rho)
    p_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


def mmc_study(study_dir, jobs: int = JOBS, kind: str = "Workload"):
    return study_dir(
        {
            "name": "mmc",
            "seed": 11,
            "replicas": REPLICAS,
            "generator": {
                "count": jobs,
                "arrivals": {"exponential": {"mean": MEAN_ARRIVAL}},
                "mix": [
                    {
                        "kind": kind,
                        "podsets": "main:1:cpu=1",
                        "queue": "q",
                        "run": {"exponential": {"mean": MEAN_RUN}},
                    }
                ],
            },
        },
        quota=C,
    )


def test_erlang_c_theory_value() -> None:
    assert abs(erlang_c_wait(2, 1 / 75, 1 / 90) - 50.625) < 0.01


def test_mmc_mean_wait_matches_erlang_c(study_dir) -> None:
    result = flexq.simulate(mmc_study(study_dir), workers=1, plots=False)
    expected = erlang_c_wait(C, 1 / MEAN_ARRIVAL, 1 / MEAN_RUN)
    batch_means = []
    for run in result.runs:
        rows = sorted(run.jobs, key=lambda r: r["submit"])[WARMUP:]
        assert all(r["outcome"] == "Succeeded" for r in run.jobs)
        for i in range(0, len(rows) - BATCH + 1, BATCH):
            batch = rows[i : i + BATCH]
            batch_means.append(sum(r["wait_admission"] for r in batch) / len(batch))
    n = len(batch_means)
    mean = sum(batch_means) / n
    se = math.sqrt(sum((b - mean) ** 2 for b in batch_means) / (n - 1) / n)
    # 99.7 % interval of the batch-means estimate around the simulated mean must hold Erlang C's value
    assert abs(mean - expected) <= 3 * se, (mean, se, expected)
    # and the run times the twin applied are the drawn ones (exponential, mean 90 s)
    runs = [r["finished"] - r["admitted"] for run in result.runs for r in run.jobs]
    assert abs(sum(runs) / len(runs) - MEAN_RUN) < 0.15 * MEAN_RUN


def test_littles_law_holds_on_the_results(study_dir) -> None:
    result = flexq.simulate(mmc_study(study_dir, jobs=400), workers=1, plots=False, replicas=1)
    run = result.runs[0]
    # L = lambda * W over the run: time-average of jobs waiting for quota = arrival rate x mean wait
    lam = len(run.jobs) / run.duration
    w = sum(r["wait_admission"] for r in run.jobs) / len(run.jobs)
    l_avg = time_average(run.pending, run.duration)
    assert l_avg > 0.1
    assert abs(l_avg - lam * w) <= 0.01 * l_avg + 1e-6, (l_avg, lam * w)
    # the summary reports the same time-average under Kueue's gauge name
    doc = result.documents["default"]["replicas"][0]
    gauge = next(m for m in doc["metrics"] if m["name"] == "kueue_pending_workloads")
    assert abs(gauge["value"] - l_avg) < 1e-3


@pytest.mark.slow
def test_mmc_on_a_flavor_of_c_nodes_matches_erlang_c(study_dir) -> None:
    """The same M/M/c through the whole twin: batch/v1 Jobs whose one pod fills a node, a ResourceFlavor on a
    GKE node pool of exactly c nodes (quota = c pods), so each job waits for Kueue, then a node."""
    quotas = QUEUES_ON_POOL
    study = study_dir(
        {
            "name": "mmc-nodes",
            "seed": 21,
            "replicas": 2,
            "cluster": {
                "project": "p",
                "location": "us-central1-a",
                "name": "mmc",
                "nodePools": [{"name": "default-pool", "machineType": "n2-standard-8", "nodes": C}],
            },
            "manifests": ["pool-queues.yaml"],
            "generator": {
                "count": 500,
                "arrivals": {"exponential": {"mean": MEAN_ARRIVAL}},
                "mix": [
                    {
                        "kind": "Job",
                        "podsets": "main:1:cpu=7",
                        "queue": "q",
                        "run": {"exponential": {"mean": MEAN_RUN}},
                    }
                ],
            },
        },
        files={"pool-queues.yaml": quotas},
    )
    result = flexq.simulate(study, workers=1, plots=False)
    expected = erlang_c_wait(C, 1 / MEAN_ARRIVAL, 1 / MEAN_RUN)
    batch_means = []
    for run in result.runs:
        assert {n["pool"] for n in run.node_records} == {"default-pool"} and len(run.node_records) == C
        rows = sorted(run.jobs, key=lambda r: r["submit"])[50:]
        assert all(r["outcome"] == "Succeeded" for r in run.jobs)
        # a node is free whenever quota is: the pod starts when the job is admitted, and PodsReady follows
        # with the Job's next sync (pod events sync a Job after syncJobBatchPeriod, 1 s)
        assert max(r["wait_start"] - r["wait_admission"] for r in rows) <= 1.0
        for i in range(0, len(rows) - 50 + 1, 50):
            batch_means.append(sum(r["wait_admission"] for r in rows[i : i + 50]) / 50)
    n = len(batch_means)
    mean = sum(batch_means) / n
    se = math.sqrt(sum((b - mean) ** 2 for b in batch_means) / (n - 1) / n)
    assert abs(mean - expected) <= 3 * se, (mean, se, expected)


QUEUES_ON_POOL = f"""\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: pool}}
spec:
  nodeLabels: {{cloud.google.com/gke-nodepool: default-pool}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: pool
      resources: [{{name: cpu, nominalQuota: {7 * C}}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: q, namespace: default}}
spec: {{clusterQueue: cq}}
"""
