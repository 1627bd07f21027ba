"""The tutorial's cluster and queues on the virtual twin with flexq's fallback on, under a capacity profile."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.clock import format_time
from flexq.fallback.model import OPT_IN_LABEL

PROJECT = "demo-project"
H = 3600.0


def stockout_profile(
    end: str | None = "2h", *, start: str = "0s", dws_wait: str = "10m", origin: float | None = None
) -> dict:
    """On-demand TPUs stocked out from ``start`` until ``end`` (None: for ever); DWS grants after ``dws_wait``.
    Times count from ``origin`` (epoch seconds; default: the twin's start)."""
    window = {"start": start, "available": 0} | ({"end": end} if end else {})
    return {
        "apiVersion": "twin.flexq.dev/v1alpha1",
        "kind": "CapacityProfile",
        "metadata": {"name": "default"},
        "spec": ({"origin": format_time(origin)} if origin is not None else {})
        | {
            "rules": [
                {
                    "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]},
                    "windows": [window],
                },
                {"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": dws_wait}},
            ]
        },
    }


def build(
    profile: dict | None,
    *,
    fallback: bool | dict = True,
    opt_in: bool = True,
    dws_max_nodes: int | None = None,
    on_demand_slices: int = 1,
    kueue: str | None = None,
) -> Twin:
    """``dws_max_nodes``: room for several DWS slices (the tutorial's pool holds one 4-host slice);
    ``on_demand_slices``: the on-demand pool's size and quota, in v6e 4x4 slices (the tutorial's: one).
    These tests check the moves' mechanics, so a stuck job moves as soon as its grace period is over: the
    rent-or-buy prior for DWS's wait is 0 unless the test sets it (``test_rent_or_buy.py`` does)."""
    if fallback is True:
        fallback = {"provisioning_wait_prior_seconds": 0}
    elif isinstance(fallback, dict):
        fallback = {"provisioning_wait_prior_seconds": 0, **fallback}
    twin = Twin(clock="virtual", fallback=fallback, **({"kueue": kueue} if kueue else {}))
    if profile is not None:
        twin.core.project.create(profile)
    path, body = T.create_cluster_request(PROJECT)
    twin.gke("POST", path, body)
    twin.run_until_idle(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(PROJECT, dws=dws)
        if dws and dws_max_nodes:
            body["nodePool"]["autoscaling"]["maxNodeCount"] = dws_max_nodes
        if not dws:
            body["nodePool"]["autoscaling"]["maxNodeCount"] *= on_demand_slices
        twin.gke("POST", path, body)
        twin.run_until_idle(600)
    queues = T.queue_yaml(api="v1beta2")
    if on_demand_slices != 1:
        queues = queues.replace("nominalQuota: 16", f"nominalQuota: {16 * on_demand_slices}")
        queues = queues.replace("nominalQuota: 40", f"nominalQuota: {40 * on_demand_slices}")
        queues = queues.replace("nominalQuota: 75Gi", f"nominalQuota: {75 * on_demand_slices}Gi")
    twin.apply(queues)
    if opt_in:
        twin.patch("localqueue", "user-queue", {"metadata": {"labels": {OPT_IN_LABEL: "true"}}}, "default")
    twin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "jax-train-script"},
            "data": {"train.py": T.train_script()},
        }
    )
    return twin


def submit(twin: Twin, job_id: int, run_seconds: int = 1800) -> None:
    doc = T.rayjob_yaml(job_id).replace(
        'kueue.x-k8s.io/elastic-job: "true"',
        f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{run_seconds}"',
    )
    twin.apply(doc)
    twin.advance(2)


@pytest.fixture
def make_twin() -> Callable[..., Twin]:
    made: list[Twin] = []

    def make(*args, **kwargs) -> Twin:
        t = build(*args, **kwargs)
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()
