"""``kubectl port-forward`` to a pod and to a service reaches what listens for that pod on this machine."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from flexq.http.protocol import local_endpoint
from tests.http.conftest import Served


@pytest.fixture(scope="module")
def echo_port() -> Iterator[int]:
    """A TCP server standing in for the Ray dashboard: it says ``echo:``, then sends back what it gets."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return

            def handle(c: socket.socket = conn) -> None:
                with c:
                    c.sendall(b"echo:")
                    while data := c.recv(65536):
                        c.sendall(data)

            threading.Thread(target=handle, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()


@pytest.fixture(scope="module")
def head_pod(served: Served, echo_port: int) -> str:
    twin = served.twin
    twin.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pf-node"}})
    twin.patch(
        "node",
        "pf-node",
        {
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            }
        },
        subresource="status",
    )
    twin.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "job-head",
                "labels": {"ray.io/node-type": "head", "ray.io/cluster": "job"},
                "annotations": {
                    "twin.flexq.dev/local-ports": json.dumps({"8265": echo_port}),
                    "twin.flexq.dev/run-seconds": "3600",
                },
            },
            "spec": {
                "containers": [
                    {
                        "name": "ray-head",
                        "image": "rayproject/ray:2.41.0",
                        "ports": [{"containerPort": 8265, "name": "dashboard"}],
                    }
                ]
            },
        }
    )
    twin.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "job-head-svc"},
            "spec": {  # headless, as KubeRay makes a head Service: kubectl resolves it to the pod
                "clusterIP": "None",
                "selector": {"ray.io/node-type": "head", "ray.io/cluster": "job"},
                "ports": [{"name": "dashboard", "port": 8265, "targetPort": 8265}],
            },
        }
    )
    for _ in range(100):
        if (twin.get("pod", "job-head", "default").get("status") or {}).get("phase") == "Running":
            return "job-head"
        time.sleep(0.1)
    raise AssertionError("the head pod never ran")


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _roundtrip(port: int, payload: bytes) -> bytes:
    for _ in range(100):  # kubectl needs a moment to listen
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            time.sleep(0.1)
    else:
        raise AssertionError("kubectl port-forward never listened")
    with conn:
        conn.sendall(payload)
        got = b""
        while len(got) < len(payload) + 5:
            chunk = conn.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


@pytest.mark.parametrize("target", ["pod/job-head", "service/job-head-svc"])
def test_port_forward(served: Served, head_pod: str, target: str) -> None:
    local = _free_port()
    pf = served.popen("port-forward", target, f"{local}:8265")
    try:
        assert _roundtrip(local, b"hello dashboard") == b"echo:hello dashboard"
        big = bytes(range(256)) * 1024  # 256 KiB through SPDY frames both ways
        assert _roundtrip(local, big) == b"echo:" + big
    finally:
        pf.terminate()
        out, err = pf.communicate(timeout=10)
    assert f"Forwarding from 127.0.0.1:{local} -> 8265" in out, err


def test_port_forward_to_a_port_with_nothing_behind_it(served: Served, head_pod: str) -> None:
    local = _free_port()
    pf = served.popen("port-forward", "pod/job-head", f"{local}:9999")
    try:
        for _ in range(100):
            try:
                conn = socket.create_connection(("127.0.0.1", local), timeout=5)
                break
            except OSError:
                time.sleep(0.1)
        with conn:
            conn.settimeout(10)
            assert conn.recv(100) == b""  # closed: nothing listens for port 9999
    finally:
        pf.terminate()
        _, err = pf.communicate(timeout=10)
    assert "nothing listening on port 9999" in err


def test_local_endpoint_annotation() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "d",
            "annotations": {"twin.flexq.dev/local-ports": '{"8265": 4000, "10001": "127.0.0.2:5000"}'},
        }
    }
    assert local_endpoint(pod, 8265) == ("127.0.0.1", 4000)
    assert local_endpoint(pod, 10001) == ("127.0.0.2", 5000)
    with pytest.raises(LookupError):
        local_endpoint(pod, 6379)


def test_local_endpoint_asks_the_pods_executor_first() -> None:
    from flexq.runtime.executor import PodRunState

    class Runs:  # an executor that runs d/p with its dashboard on local port 4100 (the Ray one maps heads so)
        def poll(self, key):
            return PodRunState("Running", ports={8265: 4100}) if key == ("d", "p") else None

    pod = {
        "metadata": {
            "name": "p",
            "namespace": "d",
            "annotations": {"twin.flexq.dev/local-ports": '{"8265": 4000, "10001": 5000}'},
        }
    }
    assert local_endpoint(pod, 8265, [Runs()]) == ("127.0.0.1", 4100)
    assert local_endpoint(pod, 10001, [Runs()]) == ("127.0.0.1", 5000)  # not mapped by it: the annotation
    other = {"metadata": {"name": "q", "namespace": "d"}}
    with pytest.raises(LookupError):
        local_endpoint(other, 8265, [Runs()])
