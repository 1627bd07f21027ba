"""A tutorial cluster with waiting jobs, for the ETA's tests (a virtual or a served twin)."""

from __future__ import annotations

from typing import Any

import yaml

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.cli import tutorial as T
from tests.waiting import wait_for

# the cloud slow to grant DWS (3 h) and quick to make nodes: jobs wait, visibly, on a live twin
SLOW_DWS_PROFILE = {
    "apiVersion": "twin.flexq.dev/v1alpha1",
    "kind": "CapacityProfile",
    "metadata": {"name": "default"},
    "spec": {"defaults": {"provisionTime": {"fixed": "1s"}, "queueWait": {"fixed": "3h"}}},
}
TRAIN = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "jax-train-script", "namespace": "default"},
    "data": {"train.py": "print('training')\n"},
}


def rayjob(i: int, run: float = 1800, **labels: str) -> dict[str, Any]:
    """The tutorial's RayJob ``rayjob-tpu-v6e-dws-<i>``, running ``run`` simulated seconds."""
    obj = yaml.safe_load(T.rayjob_yaml(i))
    obj["metadata"].setdefault("annotations", {})["twin.flexq.dev/run-seconds"] = str(run)
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def unrunnable() -> dict[str, Any]:
    """A RayJob whose head asks for more CPU than any flavor it may use will ever have (no flavor fits)."""
    obj = rayjob(99)
    obj["metadata"]["name"] = "too-big"
    head = obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = {"requests": {"cpu": "64", "memory": "4Gi"}, "limits": {"cpu": "64", "memory": "4Gi"}}
    return obj


def tutorial_cluster(
    twin: Twin, project: str = "p", profile: bool = True, dws_max: int = 4, on_demand_max: int | None = None
) -> None:
    """The tutorial's cluster, pools (the DWS pool up to ``dws_max`` nodes, the on-demand one up to
    ``on_demand_max`` when given), queues and script on a virtual twin (the tutorial's capacity profile)."""
    if profile:
        p = tutorial_profile()
        p["metadata"]["name"] = "default"
        twin.core.project.create(p)
    twin.gke("POST", *T.create_cluster_request(project))
    twin.advance(600)
    for dws in (False, True):
        path, body = T.create_node_pool_request(project, dws=dws)
        if dws:
            body["nodePool"]["autoscaling"]["maxNodeCount"] = dws_max
        elif on_demand_max is not None:
            body["nodePool"]["autoscaling"]["maxNodeCount"] = on_demand_max
        twin.gke("POST", path, body)
        twin.advance(300)
    twin.cluster(T.TUTORIAL_ENV["CLUSTER_NAME"])
    twin.apply(T.queue_yaml(api="v1beta2"))
    twin.apply(TRAIN)


def live_tutorial_cluster(twin: Twin, jobs: int, project: str = "p") -> None:
    """The tutorial's cluster, pools and queues on a live twin through its GKE API (the cloud slow to grant DWS),
    ``jobs`` tutorial RayJobs of an hour each submitted."""
    twin.core.project.create(SLOW_DWS_PROFILE)

    def done() -> bool:
        return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

    for path, body in (
        T.create_cluster_request(project),
        T.create_node_pool_request(project, dws=False),
        T.create_node_pool_request(project, dws=True),
    ):
        twin.gke("POST", path, body)
        wait_for(done, 60, "a GKE operation")
    twin.apply(T.queue_yaml(api="v1beta2"))
    twin.apply(TRAIN)
    for i in range(1, jobs + 1):
        twin.create(rayjob(i, run=3600))
