"""Hostile requests over real HTTP that once got a 500 or an answer that is not a Kubernetes ``Status``: each
is refused with the API server's code and a message naming the problem, and nothing is stored or changed."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from flexq import Twin
from flexq.http.server import Server

CM = "/api/v1/namespaces/default/configmaps"
SMP = "application/strategic-merge-patch+json"
JP = "application/json-patch+json"


class Target:
    def __init__(self, twin: Twin, server: Server) -> None:
        self.twin, self.url = twin, server.url
        self.headers = {"Authorization": f"Bearer {server.creds.token}"}

    def send(
        self, method: str, path: str, body: Any = None, ctype: str = "application/json"
    ) -> requests.Response:
        data = None if body is None else json.dumps(body).encode()
        return requests.request(
            method, self.url + path, data=data, headers={**self.headers, "Content-Type": ctype}, timeout=20
        )

    def version(self, name: str) -> str:
        r = self.send("GET", f"{CM}/{name}")
        assert r.status_code == 200, r.text
        return str(r.json()["metadata"]["resourceVersion"])


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    home = tmp_path_factory.mktemp("hostile")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home, tls=False).start()
    t = Target(twin, server)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t", "finalizers": ["a.io/f"]}}
    assert t.send("POST", CM, body | {"data": {"a": "1"}}).status_code == 201
    try:
        yield t
    finally:
        server.stop()
        twin.close()


def _status(r: requests.Response, code: int, text: str) -> dict:
    assert r.status_code == code, r.text
    assert r.headers["content-type"].startswith("application/json"), r.headers
    status = r.json()
    assert status["kind"] == "Status" and status["code"] == code and text in status["message"], status
    return status


@pytest.mark.parametrize(
    ("patch", "text"),
    [
        ({"$retainKeys": 5}, "invalid patch format of retainKeys"),
        ({"$retainKeys": [{"a": 1}]}, "invalid patch format of retainKeys"),
        (
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "a.io/f"}},
            "invalid patch format of primitive list",
        ),
        ({"metadata": {"$setElementOrder/finalizers": 5}}, "invalid patch format of setElementOrder list"),
    ],
    ids=[
        "retain-keys-int",
        "retain-keys-of-maps",
        "delete-from-primitive-list-string",
        "set-element-order-int",
    ],
)
def test_strategic_merge_directives_of_the_wrong_type_are_400(target: Target, patch: dict, text: str) -> None:
    before = target.version("t")
    _status(target.send("PATCH", f"{CM}/t", patch, SMP), 400, text)
    assert target.version("t") == before


@pytest.mark.parametrize(
    ("ops", "text"),
    [
        ([1], "json patch operation 0 is not an object"),
        ([{"op": "add", "value": 1}], 'json patch operation 0 must have a string "path"'),
        (
            [{"op": "add", "path": "/data/b", "value": "x"}, {"op": "add", "path": 5}],
            'operation 1 must have a string "path"',
        ),
        ([{"path": "/data/b"}], 'json patch operation 0 must have a string "op"'),
    ],
    ids=["op-not-object", "no-path", "path-int", "no-op"],
)
def test_malformed_json_patch_operations_are_400(target: Target, ops: list, text: str) -> None:
    before = target.version("t")
    _status(target.send("PATCH", f"{CM}/t", ops, JP), 400, text)
    assert target.version("t") == before


def _raw(target: Target, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (no client normalises the request line) and read the whole answer."""
    host, port = target.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    return int(lines[0].split(" ")[1]), headers, body


def _auth(target: Target) -> bytes:
    return f"Authorization: {target.headers['Authorization']}\r\nConnection: close\r\n".encode()


@pytest.mark.parametrize("size", [70_000, 300_000])
def test_a_url_longer_than_the_parser_reads_is_a_414_status(target: Target, size: int) -> None:
    path = f"{CM}?labelSelector=a%3D{'b' * size}".encode()
    code, headers, body = _raw(target, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n" + _auth(target) + b"\r\n")
    assert code == 414 and headers["content-type"] == "application/json"
    status = json.loads(body)
    assert status["kind"] == "Status" and status["code"] == 414 and "at most 65535 bytes" in status["message"]
    assert target.send("GET", f"{CM}/t").status_code == 200  # still serving


def test_an_unparseable_request_is_a_400_status(target: Target) -> None:
    code, headers, body = _raw(
        target, b"FROB " + CM.encode() + b" HTTP/1.1\r\nHost: x\r\n" + _auth(target) + b"\r\n"
    )
    assert code == 400 and headers["content-type"] == "application/json"
    status = json.loads(body)
    assert status["kind"] == "Status" and status["reason"] == "BadRequest"
    assert "the HTTP request could not be parsed" in status["message"]


def test_a_method_the_api_does_not_serve_is_a_405_status(target: Target) -> None:
    r = target.send("TRACE", CM)
    status = _status(r, 405, "(TRACE)")
    assert status["reason"] == "MethodNotAllowed" and "GET" in r.headers["allow"]


@pytest.mark.parametrize("rv", ["9" * 40, "18446744073709551616", "\u0661\u0662", "\u00b2"])
def test_a_watch_from_a_version_that_is_not_a_uint64_is_400(target: Target, rv: str) -> None:
    r = target.send("GET", f"{CM}?watch=1&timeoutSeconds=1&resourceVersion={rv}")
    _status(r, 400, "invalid resource version")


GKE = "/v1/projects/p/locations/us-central1/clusters"
REVIEW = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


@pytest.mark.parametrize(
    ("path", "raw", "code", "text"),
    [
        (GKE, b"[" * 5000 + b"]" * 5000, 400, "Invalid JSON payload received. json: exceeded max depth"),
        (GKE, b'{"cluster": {"name": "c", "x": NaN}}', 400, "Invalid JSON payload received."),
        ("/v1/projects/p/locations/%00/clusters", None, 400, "invalid label selector"),
    ],
    ids=["deep-body", "nan", "nul-location"],
)
def test_the_gke_face_answers_bad_requests_with_a_google_400(
    target: Target, path: str, raw: bytes | None, code: int, text: str
) -> None:
    r = requests.request(
        "POST" if raw else "GET",
        target.url + path,
        data=raw,
        headers={**target.headers, "Content-Type": "application/json"},
        timeout=20,
    )
    assert r.status_code == code, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["status"] == "INVALID_ARGUMENT" and text in err["message"], err


@pytest.mark.parametrize(
    ("raw", "code", "text"),
    [
        (b"[" * 5000 + b"]" * 5000, 400, "exceeded max depth"),
        (b"{{", 400, "json parse error"),
        (b'{"spec": "' + b"x" * (4 * 1024 * 1024) + b'"}', 413, "too large"),
    ],
    ids=["deep", "malformed", "over-the-limit"],
)
def test_a_review_body_is_read_within_the_limits(target: Target, raw: bytes, code: int, text: str) -> None:
    r = requests.post(
        target.url + REVIEW,
        data=raw,
        headers={**target.headers, "Content-Type": "application/json"},
        timeout=20,
    )
    _status(r, code, text)


def test_a_review_still_answers_json_and_protobuf(target: Target) -> None:
    spec = {"resourceAttributes": {"verb": "get", "resource": "pods"}}
    r = target.send("POST", REVIEW, {"spec": spec})
    assert r.status_code == 201 and r.json()["spec"] == spec and r.json()["status"]["allowed"] is True
    # the body `kubectl auth can-i get pods` sends (protobuf), then one that does not decode: a 400 Status
    can_i = (
        b"k8s\x00\n2\n\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12<\n\x10\n\x00\x12\x00\x1a"
        b'\x00"\x00*\x002\x008\x00B\x00\x12\x1e\n\x1c\n\x07default\x12\x03get\x1a\x00"\x00*\x04pods2\x00:\x00'
        b'\x1a\x08\x08\x00\x12\x00\x1a\x00 \x00\x1a\x00"\x00'
    )
    proto = {**target.headers, "Content-Type": "application/vnd.kubernetes.protobuf"}
    r = requests.post(target.url + REVIEW, data=can_i, headers=proto, timeout=20)
    assert r.status_code == 201 and r.json()["status"]["allowed"] is True
    assert r.json()["spec"]["resourceAttributes"] == {
        "namespace": "default",
        "verb": "get",
        "resource": "pods",
    }
    r = requests.post(target.url + REVIEW, data=b"k8s\x00\x0a\x00garbage", headers=proto, timeout=20)
    assert r.status_code == 400 and r.json()["kind"] == "Status", r.text


@pytest.mark.parametrize(
    ("method", "manager", "options", "text"),
    [
        ("PATCH", "m" * 129, "PatchOptions", "fieldManager: Too long: may not be more than 128 bytes"),
        ("PUT", "m" * 129, "UpdateOptions", "fieldManager: Too long: may not be more than 128 bytes"),
        ("POST", "m" * 129, "CreateOptions", "fieldManager: Too long: may not be more than 128 bytes"),
        ("PATCH", "a\x00b", "PatchOptions", "invalid character U+0000 (at index 1)"),
    ],
    ids=["apply-too-long", "update-too-long", "create-too-long", "apply-nul"],
)
def test_a_field_manager_must_be_short_and_printable(
    target: Target, method: str, manager: str, options: str, text: str
) -> None:
    before = target.version("t")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}, "data": {"a": "2"}}
    path = f"{CM}/t" if method != "POST" else CM
    ctype = "application/apply-patch+yaml" if method == "PATCH" else "application/json"
    r = requests.request(
        method,
        target.url + path,
        params={"fieldManager": manager},
        data=json.dumps(body),
        headers={**target.headers, "Content-Type": ctype},
        timeout=20,
    )
    status = _status(r, 422, text)
    assert status["details"]["kind"] == options and status["message"].startswith(
        f'{options}.meta.k8s.io "" is invalid'
    )
    assert target.version("t") == before


@pytest.mark.parametrize(
    ("entry", "field", "text"),
    [
        (
            {"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": "garbage"},
            "fieldsV1",
            "in body must be of type object",
        ),
        ({"x": 1}, "operation", 'Invalid value: "": must be `Apply` or `Update`'),
        (
            {"manager": "m", "operation": "Frob"},
            "operation",
            'Invalid value: "Frob": must be `Apply` or `Update`',
        ),
        (
            {"manager": "m", "operation": "Update", "fieldsType": "FieldsV2"},
            "fieldsType",
            "must be `FieldsV1`",
        ),
        (
            {"manager": "m" * 129, "operation": "Update"},
            "manager",
            "Too long: may not be more than 128 bytes",
        ),
    ],
    ids=["fields-v1-string", "no-operation", "bad-operation", "bad-fields-type", "long-manager"],
)
def test_managed_fields_are_checked_so_no_object_is_stored_that_later_writes_fail_on(
    target: Target, entry: dict, field: str, text: str
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mf", "managedFields": [entry]}}
    status = _status(target.send("POST", CM, body), 422, text)
    assert status["details"]["causes"][0]["field"] == f"metadata.managedFields[0].{field}"
    assert target.send("GET", f"{CM}/mf").status_code == 404
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t", "managedFields": [entry]}}
    before = target.version("t")
    _status(target.send("PUT", f"{CM}/t", good), 422, text)  # an update may not bring them either
    assert target.version("t") == before


def test_a_manager_made_of_a_long_user_agent_is_cut_to_128_bytes(target: Target) -> None:
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ua"}, "data": {"a": "1"}}
    r = target.send("PATCH", f"{CM}/ua?fieldManager=alice", applied, "application/apply-patch+yaml")
    assert r.status_code == 201, r.text
    r = requests.patch(
        f"{target.url}{CM}/ua",
        data=json.dumps({"data": {"ua": "1"}}),
        headers={
            **target.headers,
            "Content-Type": "application/merge-patch+json",
            "User-Agent": "u" * 300 + "/1.0",
        },
        timeout=20,
    )
    assert r.status_code == 200, r.text
    managers = [e["manager"] for e in r.json()["metadata"]["managedFields"]]
    assert "u" * 128 in managers
