"""Each GKE cluster of a served twin is its own Kubernetes API: its ``endpoint`` carries ``/clusters/<name>``,
so kubectl contexts written from two clusters reach two different clusters (namespaces, nodes), and kubectl's
OpenAPI-driven commands (``explain``) work under that path. A restarted twin takes its old port back."""

from __future__ import annotations

import json
from pathlib import Path

from flexq import Twin
from flexq.http.server import Server
from tests.http.conftest import Served

PARENT = "/v1/projects/flexq-twin/locations/us-east5-b"


def _cluster(served: Served, name: str) -> dict:
    twin = served.twin
    twin.gke(
        "POST",
        f"{PARENT}/clusters",
        {
            "cluster": {
                "name": name,
                "initialNodeCount": 1,
                "nodeConfig": {"machineType": "e2-standard-4"},
                "addonsConfig": {"rayOperatorConfig": {"enabled": True}},
            }
        },
    )
    for _ in range(200):
        got = twin.gke("GET", f"{PARENT}/clusters/{name}")
        if got["status"] == "RUNNING":
            return got
        twin.advance(1)
    raise AssertionError(f"cluster {name} is not RUNNING")


def _kubeconfig(served: Served, cluster: dict) -> str:
    path = Path(str(served.home)) / f"kubeconfig-{cluster['name']}"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": f"https://{cluster['endpoint']}",
                            "certificate-authority-data": cluster["masterAuth"]["clusterCaCertificate"],
                        },
                    }
                ],
                "users": [{"name": "c", "user": {"token": served.token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}],
            }
        )
    )
    return str(path)


def test_two_clusters_two_apis(served: Served) -> None:
    one, two = _cluster(served, "ep-one"), _cluster(served, "ep-two")
    host = served.url.removeprefix("https://")
    assert one["endpoint"] == f"{host}/clusters/ep-one" and two["endpoint"] == f"{host}/clusters/ep-two"
    k1, k2 = _kubeconfig(served, one), _kubeconfig(served, two)
    served.kubectl("--kubeconfig", k1, "create", "namespace", "only-in-one")
    assert "only-in-one" in served.kubectl("--kubeconfig", k1, "get", "ns").stdout
    assert "only-in-one" not in served.kubectl("--kubeconfig", k2, "get", "ns").stdout
    nodes1 = served.kubectl("--kubeconfig", k1, "get", "nodes", "-o", "name").stdout
    nodes2 = served.kubectl("--kubeconfig", k2, "get", "nodes", "-o", "name").stdout
    assert "gke-ep-one-default-pool" in nodes1 and "gke-ep-two" not in nodes1
    assert "gke-ep-two-default-pool" in nodes2 and "gke-ep-one" not in nodes2
    # each cluster's /version is its GKE master version (what `kubectl version` prints as the server's)
    assert '"gitVersion": "v1.3' in served.kubectl("--kubeconfig", k2, "version", "-o", "json").stdout
    assert (
        served.http("GET", "/clusters/ep-two/version").json()["gitVersion"]
        == "v" + two["currentMasterVersion"]
    )
    # kubectl explain reads /openapi/v3 and then the URLs it lists: they must stay under the cluster's path
    out = served.kubectl("--kubeconfig", k2, "explain", "rayjob.spec.submissionMode").stdout
    assert "KIND:       RayJob" in out and "submissionMode" in out
    index = served.http("GET", "/clusters/ep-two/openapi/v3").json()["paths"]
    assert all(v["serverRelativeURL"].startswith("/clusters/ep-two/openapi/v3/") for v in index.values())
    assert (
        served.http("GET", "/openapi/v3")
        .json()["paths"]["api/v1"]["serverRelativeURL"]
        .startswith("/openapi/v3/api/v1?hash=")
    )


def test_node_columns_as_the_api_server_prints_them(served: Served) -> None:
    _cluster(served, "ep-nodes")
    cfg = _kubeconfig(served, served.twin.gke("GET", f"{PARENT}/clusters/ep-nodes"))
    out = served.kubectl("--kubeconfig", cfg, "get", "nodes").stdout.splitlines()
    assert out[1].split()[1] in ("NotReady", "Ready")  # a new node is NotReady until its kubelet reports
    served.kubectl(
        "--kubeconfig", cfg, "wait", "--for=condition=Ready", "node", "--all", "--timeout=60s", timeout=70
    )
    out = served.kubectl("--kubeconfig", cfg, "get", "nodes").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert out[1].split()[1:3] == ["Ready", "<none>"] and out[1].split()[4].startswith("v1.")
    wide = served.kubectl("--kubeconfig", cfg, "get", "nodes", "-o", "wide").stdout.splitlines()[0]
    assert wide.split()[5:] == [
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]


def test_a_restarted_twin_takes_its_old_port(tmp_path: Path) -> None:
    twin = Twin(clock="real", home=tmp_path, executor="simulated")
    try:
        first = Server(twin.core, tmp_path).start()
        port = first.port
        first.stop()
        again = Server(twin.core, tmp_path).start()
        try:
            assert again.port == port
        finally:
            again.stop()
        # the old port is taken by someone else: any free port, no failure
        import socket

        blocker = socket.socket()
        blocker.bind(("127.0.0.1", port))
        blocker.listen(1)
        try:
            other = Server(twin.core, tmp_path).start()
            assert other.port != port
            other.stop()
        finally:
            blocker.close()
    finally:
        twin.close()
