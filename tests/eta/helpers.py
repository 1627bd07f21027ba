"""A tutorial cluster with waiting jobs, for the ETA's tests (a virtual or a served twin)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from flexq import Twin
from flexq.api.capacity_profile import tutorial_profile
from flexq.cli import tutorial as T
from flexq.eta import state_from_twin
from flexq.forecast.state import ClusterState
from flexq.http.server import Server
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


def waiting_state(
    seed: int,
    jobs: int,
    run: float = 1800,
    gap: float = 3,
    settle: float = 60,
    declared: bool = True,
    extra: list[dict[str, Any]] | None = None,
    labels: Any = None,
) -> ClusterState:
    """The state of a virtual tutorial cluster (one-slice DWS pool) after ``jobs`` tutorial RayJobs of ``run``
    seconds were submitted ``gap`` seconds apart and ``settle`` seconds more went by; ``extra`` objects are created
    first, ``labels(i)`` labels job ``i``; ``declared``: read with what the twin declares (``state_from_twin``)."""
    twin = Twin(clock="virtual", seed=seed)
    try:
        tutorial_cluster(twin, dws_max=4)
        for obj in extra or []:
            twin.create(obj)
        for i in range(1, jobs + 1):
            twin.create(rayjob(i, run=run, **(labels(i) if labels else {})))
            twin.advance(gap)
        twin.advance(settle)
        return state_from_twin(twin, declared=declared)
    finally:
        twin.close()


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


@dataclass
class ServedTwin:
    """A live twin (simulated pods) served over HTTPS as ``flexq up`` serves it: the admin's session on its GKE
    API (``gke``) and kubectl (``kubectl``, the admin's kubeconfig unless ``env`` names another)."""

    twin: Twin
    server: Server
    info: dict[str, Any]
    http: requests.Session

    def kubectl(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> str:
        env = env or dict(os.environ, KUBECONFIG=self.info["kubeconfig"])
        r = subprocess.run(
            ["kubectl", *args], env=env, input=input, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r.stdout

    def gke(self, path: str, body: dict[str, Any]) -> None:
        r = self.http.post(self.server.url + path, json=body, timeout=30)
        assert r.status_code == 200, r.text

    def operations_done(self) -> bool:
        return all(o["spec"].get("status") == "DONE" for o in self.twin.core.project.list("GkeOperation"))

    def tutorial_cluster(self, project: str, max_nodes: int) -> None:
        """The cloud slow to grant DWS (``SLOW_DWS_PROFILE``), then the tutorial's cluster, its two pools (each
        up to ``max_nodes``), queues and script, through the GKE API and kubectl as a user makes them."""
        self.twin.core.project.create(SLOW_DWS_PROFILE)
        self.gke(*T.create_cluster_request(project))
        wait_for(self.operations_done, what="the cluster")
        for dws in (False, True):
            path, body = T.create_node_pool_request(project, dws=dws)
            body["nodePool"]["autoscaling"]["maxNodeCount"] = max_nodes
            self.gke(path, body)
            wait_for(self.operations_done, what="a node pool")
        self.kubectl("apply", "-f", "-", input=T.queue_yaml(api="v1beta2"))
        self.kubectl("apply", "-f", "-", input=json.dumps(TRAIN))


@contextmanager
def served_twin(home: Path) -> Iterator[ServedTwin]:
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    try:
        info = server.write_files()
        http = requests.Session()
        http.trust_env = False
        http.verify = info["ca"]
        http.headers["Authorization"] = f"Bearer {Path(info['token_file']).read_text().strip()}"
        yield ServedTwin(twin, server, info, http)
    finally:
        server.stop()
        twin.close()
