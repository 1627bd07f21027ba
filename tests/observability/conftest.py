"""The tutorial's setup on the virtual clock (GKE cluster, both node pools, the tutorial's queues), and the
helpers the observability tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flexq import Twin
from flexq.cli import tutorial as T

PROJECT = "demo-project"


def tutorial_twin(profile: dict | None = None) -> Twin:
    twin = Twin(clock="virtual")
    if profile is not None:
        twin.core.project.create(profile)
    path, body = T.create_cluster_request(PROJECT)
    twin.gke("POST", path, body)
    twin.run_until_idle(3600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        twin.gke("POST", path, body)
        twin.run_until_idle(3600)
    twin.apply(T.queue_yaml(api="v1beta2"))
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    return twin


def submit(twin: Twin, job_id: int, run_seconds: int = 600, wait: float = 2) -> None:
    doc = T.rayjob_yaml(job_id).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
    )
    twin.apply(doc)
    if wait:
        twin.advance(wait)  # the tutorial's `sleep 2` between submissions


def workload_of(twin: Twin, job_id: int) -> dict:
    return next(w for w in twin.list("workload", "default") if f"dws-{job_id}-" in w["metadata"]["name"])


@pytest.fixture
def twin() -> Iterator[Twin]:
    t = tutorial_twin()
    yield t
    t.close()
