"""What the API server refuses, the twin refuses (issue 26, item 4), over real HTTP: status writes checked against
the kind's schema, Kueue's pod-set limit, methods on discovery paths as kube-apiserver answers them, a request
line without an HTTP version, query booleans as the API server converts them."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from flexq import Twin
from flexq.http.server import Server


class Target:
    def __init__(self, twin: Twin, server: Server) -> None:
        self.twin, self.url = twin, server.url
        self.headers = {"Authorization": f"Bearer {server.creds.token}"}

    def send(self, method: str, path: str, body: Any = None, **kw: Any) -> requests.Response:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, "Content-Type": "application/json", **kw.pop("headers", {})}
        return requests.request(method, self.url + path, data=data, headers=headers, timeout=20, **kw)

    def raw(self, request: bytes) -> bytes:
        """``request`` on a fresh connection; everything the server sends until it closes (at most 10 s)."""
        host, port = self.url.split("//", 1)[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(request)
            out = b""
            while chunk := s.recv(65536):
                out += chunk
        return out


CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    home = tmp_path_factory.mktemp("refusals")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home, tls=False).start()
    t = Target(twin, server)
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}},
    }
    assert t.send("POST", CQ, cq).status_code == 201
    try:
        yield t
    finally:
        server.stop()
        twin.close()


# -- status writes are checked against the kind's schema --------------------------------------------------
def test_a_status_put_with_a_wrong_type_is_refused_as_the_api_server_refuses_it(target: Target) -> None:
    for _ in range(10):  # the twin's own ClusterQueue controller writes the status too: retry a conflict
        cq = target.send("GET", f"{CQ}/cq").json()
        cq["status"] = {**(cq.get("status") or {}), "admittedWorkloads": "many"}
        r = target.send("PUT", f"{CQ}/cq/status", cq)
        if r.status_code != 409:
            break
    assert r.status_code == 422, r.text
    status = r.json()
    assert status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == ["status.admittedWorkloads"]
    assert target.send("GET", f"{CQ}/cq").json().get("status", {}).get("admittedWorkloads") != "many"


@pytest.mark.parametrize(
    "status,field",
    [
        ({"pendingWorkloads": 2**31}, "status.pendingWorkloads"),
        ({"flavorsUsage": [{"name": "Not_A_Flavor", "resources": []}]}, "status.flavorsUsage[0].name"),
        ({"flavorsReservation": [{"name": "f", "resources": [{"name": "cpu", "total": "lots"}]}]}, "total"),
    ],
)
def test_a_status_patch_is_checked_field_by_field(target: Target, status: dict, field: str) -> None:
    r = target.send(
        "PATCH",
        f"{CQ}/cq/status",
        {"status": status},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 422, r.text
    assert any(field in c["field"] for c in r.json()["details"]["causes"]), r.json()


def test_a_workload_status_is_checked_too(target: Target) -> None:
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}]
        },
    }
    path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
    assert target.send("POST", path, wl).status_code == 201
    patch = {
        "status": {
            "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": -1}]}
        }
    }
    r = target.send(
        "PATCH", f"{path}/w/status", patch, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"][0]["field"] == "status.schedulingStats.evictions[0].count"
    ok = {
        "status": {
            "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]}
        }
    }
    r = target.send("PATCH", f"{path}/w/status", ok, headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text


# -- Kueue's pod-set limit ----------------------------------------------------------------------------------
def test_a_workload_has_at_most_18_pod_sets_as_in_kueue_v0_19(target: Target) -> None:
    """Kueue v0.19 raised ``MaxPodSets`` to 18 (#12819; 8 until v0.17, 10 in v0.18): the CRD's ``maxItems``."""

    def wl(name: str, n: int) -> dict:
        pod = {"spec": {"containers": [{"name": "c", "image": "x"}]}}
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"podSets": [{"name": f"p{i}", "count": 1, "template": pod} for i in range(n)]},
        }

    path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"
    assert target.send("POST", path, wl("eighteen", 18)).status_code == 201
    r = target.send("POST", path, wl("nineteen", 19))
    assert r.status_code == 422, r.text
    assert r.json()["message"] == (
        'Workload.kueue.x-k8s.io "nineteen" is invalid: spec.podSets: Too many: 19: must have at most 18 items'
    )


# -- methods on discovery paths -------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/api", "/api/v1", "/apis/batch/v1", "/apis/apps/v1"])
@pytest.mark.parametrize("method", ["POST", "DELETE", "PUT"])
def test_a_method_a_compiled_in_discovery_path_has_no_route_for_is_405(
    target: Target, method: str, path: str
) -> None:
    r = target.send(method, path, {})
    assert r.status_code == 405, r.text
    assert r.text == "405: Method Not Allowed"
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.headers["allow"] == "GET"


@pytest.mark.parametrize(
    "path,kind",
    [
        ("/apis", "APIGroupList"),
        ("/apis/kueue.x-k8s.io", "APIGroup"),
        ("/apis/batch", "APIGroup"),
        ("/apis/kueue.x-k8s.io/v1beta2", "APIResourceList"),
    ],
)
@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_aggregator_and_custom_resource_discovery_answer_any_method(
    target: Target, method: str, path: str, kind: str
) -> None:
    """kube-aggregator's ``/apis`` and ``/apis/<group>`` handlers and apiextensions-apiserver's version handler
    write their document whatever the method (an authorized caller gets it; RBAC decides who may POST)."""
    r = target.send(method, path, {})
    assert r.status_code == 200, r.text
    assert r.json()["kind"] == kind
    assert r.json() == target.send("GET", path).json()


# -- a request line without an HTTP version -----------------------------------------------------------------
@pytest.mark.parametrize(
    "line,answer",
    [
        (b"GET /version\r\n", b"400 Bad Request"),
        (b"GET\r\n", b"400 Bad Request"),
        (b"GET /version HTTP/x\r\n", b"400 Bad Request"),
        (b"GET /version HTTP/2.0\r\n", b"505 HTTP Version Not Supported: unsupported protocol version"),
    ],
)
def test_a_request_line_go_cannot_parse_is_answered_at_once_and_closed(
    target: Target, line: bytes, answer: bytes
) -> None:
    """Go's net/http answers as soon as it has the request line (an HTTP/0.9 client sends no headers) and closes
    the connection; ``raw`` reads until the close, so a server waiting for headers fails it after 10 s."""
    out = target.raw(line)
    assert out == (
        b"HTTP/1.1 "
        + answer
        + b"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
        + answer
    )


# -- query booleans ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value,watch",
    [
        ("on", True),
        ("yes", True),
        ("", True),
        ("y", True),
        ("True", True),
        ("1", True),
        ("0", False),
        ("false", False),
        ("FALSE", False),
        ("False", False),
    ],
)
def test_query_booleans_as_the_api_server_converts_them(target: Target, value: str, watch: bool) -> None:
    """``runtime.Convert_Slice_string_To_bool``: only ``0`` and ``false`` (any case) are false."""
    r = target.send("GET", f"/api/v1/namespaces?watch={value}&timeoutSeconds=1")
    assert r.status_code == 200, r.text
    if watch:
        first = json.loads(r.text.splitlines()[0])
        assert first["type"] == "ADDED" and first["object"]["kind"] == "Namespace"
    else:
        assert r.json()["kind"] == "NamespaceList"
