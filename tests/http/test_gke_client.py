"""``google-cloud-container``'s ClusterManagerClient (REST transport) against the twin's GKE face, and the
kubeconfig a cluster's endpoint and CA lead to."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from google.api_core.client_options import ClientOptions
from google.api_core.exceptions import NotFound
from google.cloud import container_v1
from google.oauth2.credentials import Credentials

from tests.http.conftest import ROOT, Served

PARENT = "projects/proj-x/locations/us-east5-b"


@pytest.fixture(scope="module")
def gke(served: Served, tmp_path_factory: pytest.TempPathFactory) -> container_v1.ClusterManagerClient:
    mp = pytest.MonkeyPatch()
    mp.setenv("REQUESTS_CA_BUNDLE", served.ca)  # the REST transport's requests session trusts the twin's CA
    client = container_v1.ClusterManagerClient(
        credentials=Credentials(served.token),
        transport="rest",
        client_options=ClientOptions(api_endpoint=served.url),
    )
    yield client
    mp.undo()


def _wait(gke: container_v1.ClusterManagerClient, op: container_v1.Operation) -> container_v1.Operation:
    name = f"{PARENT}/operations/{op.name}"
    for _ in range(100):
        op = gke.get_operation(name=name)
        if op.status == container_v1.Operation.Status.DONE:
            return op
        time.sleep(0.1)
    raise AssertionError(f"operation {op.name} did not finish")


def test_cluster_lifecycle_through_the_client(served: Served, gke: container_v1.ClusterManagerClient) -> None:
    body = json.loads((ROOT / "src/flexq/testing/data/gke/create-cluster.json").read_text())["body"]
    cluster_msg = container_v1.Cluster.from_json(json.dumps(body["cluster"]))
    op = gke.create_cluster(request={"parent": PARENT, "cluster": cluster_msg})
    assert op.operation_type == container_v1.Operation.Type.CREATE_CLUSTER
    _wait(gke, op)
    cluster = gke.get_cluster(name=f"{PARENT}/clusters/tpu-cluster")
    assert cluster.status == container_v1.Cluster.Status.RUNNING
    # each cluster's Kubernetes API is its own part of the served API (kubectl contexts of two clusters differ)
    assert cluster.endpoint == served.url.removeprefix("https://") + "/clusters/tpu-cluster"
    assert (
        base64.b64decode(cluster.master_auth.cluster_ca_certificate).decode() == Path(served.ca).read_text()
    )
    names = [c.name for c in gke.list_clusters(parent=PARENT).clusters]
    assert names == ["tpu-cluster"]
    pool = json.loads((ROOT / "src/flexq/testing/data/gke/create-ondemand-pool.json").read_text())["body"]
    # the tutorial's body verbatim: the client sends its enums as numbers ($alt=json;enum-encoding=int)
    op = gke.create_node_pool(
        request={
            "parent": f"{PARENT}/clusters/tpu-cluster",
            "node_pool": container_v1.NodePool.from_json(json.dumps(pool["nodePool"])),
        }
    )
    _wait(gke, op)
    got = gke.get_node_pool(name=f"{PARENT}/clusters/tpu-cluster/nodePools/{pool['nodePool']['name']}")
    assert got.config.machine_type == "ct6e-standard-4t" and got.placement_policy.tpu_topology == "4x4"
    assert (
        got.config.reservation_affinity.consume_reservation_type
        == container_v1.ReservationAffinity.Type.NO_RESERVATION
    )
    # the cluster's Kubernetes API is this server: kubectl with the cluster's endpoint and CA works
    kubeconfig = Path(str(served.home)) / "gke-kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "gke",
                "clusters": [
                    {
                        "name": "gke",
                        "cluster": {
                            "server": f"https://{cluster.endpoint}",
                            "certificate-authority-data": cluster.master_auth.cluster_ca_certificate,
                        },
                    }
                ],
                "users": [{"name": "gke", "user": {"token": served.token}}],
                "contexts": [{"name": "gke", "context": {"cluster": "gke", "user": "gke"}}],
            }
        )
    )
    import os
    import subprocess

    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "ns"],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ),
    )
    assert out.returncode == 0 and "kueue-system" in out.stdout, out.stderr
    op = gke.delete_cluster(name=f"{PARENT}/clusters/tpu-cluster")
    _wait(gke, op)
    with pytest.raises(NotFound):
        gke.get_cluster(name=f"{PARENT}/clusters/tpu-cluster")
