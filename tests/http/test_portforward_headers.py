"""Issue 17: ``kubectl port-forward`` adds the headers a pod's executor names for a port (the local Ray dashboard's
token) to every HTTP request it carries there, and leaves every other byte alone."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from flexq.http.kube.portforward import HeaderAdder
from flexq.http.protocol import local_target
from flexq.runtime.executor import PodRunState
from tests.http.conftest import Served

TOKEN = ("X-Ray-Authorization", "Bearer s3cret")


def _split(adder: HeaderAdder, data: bytes, step: int) -> bytes:
    return b"".join(adder.feed(data[i : i + step]) for i in range(0, len(data), step))


@pytest.mark.parametrize("step", [1, 7, 10_000])
def test_header_adder_follows_keep_alive_requests_and_their_bodies(step: int) -> None:
    stream = (
        b"GET /api/version HTTP/1.1\r\nHost: x\r\nX-Ray-Authorization: Bearer forged\r\n\r\n"
        b"POST /api/jobs/ HTTP/1.1\r\nHost: x\r\nContent-Length: 27\r\n\r\nGET / HTTP/1.1\r\n\r\nnot-a-req"
        b"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nGET \r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n"
        b"DELETE /api/jobs/x HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    out = _split(HeaderAdder((TOKEN,)), stream, step)
    assert out == (
        b"GET /api/version HTTP/1.1\r\nHost: x\r\nX-Ray-Authorization: Bearer s3cret\r\n\r\n"
        b"POST /api/jobs/ HTTP/1.1\r\nHost: x\r\nContent-Length: 27\r\nX-Ray-Authorization: Bearer s3cret"
        b"\r\n\r\nGET / HTTP/1.1\r\n\r\nnot-a-req"
        b"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nX-Ray-Authorization: Bearer s3cret\r\n\r\n"
        b"4;ext=1\r\nGET \r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n"
        b"DELETE /api/jobs/x HTTP/1.1\r\nHost: x\r\nX-Ray-Authorization: Bearer s3cret\r\n\r\n"
    )


def test_header_adder_stops_at_an_upgrade_and_at_what_is_not_http() -> None:
    adder = HeaderAdder((TOKEN,))
    ws = b"GET /logs HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    frames = b"\x81\x05GET / HTTP/1.1\r\n\r\n"
    assert adder.feed(ws + frames[:3]) == ws[:-2] + b"X-Ray-Authorization: Bearer s3cret\r\n\r\n" + frames[:3]
    assert adder.feed(frames[3:]) == frames[3:]  # the WebSocket's own bytes, untouched
    raw = b"\x16\x03\x01 a TLS hello, not HTTP\r\n\r\nGET / HTTP/1.1\r\n\r\n"
    assert HeaderAdder((TOKEN,)).feed(raw) == raw


def test_local_target_takes_the_executors_headers() -> None:
    class Runs:
        def poll(self, key):
            return (
                PodRunState("Running", ports={8265: 4100}, http_headers={8265: dict([TOKEN])})
                if key == ("d", "p")
                else None
            )

    pod = {
        "metadata": {
            "name": "p",
            "namespace": "d",
            "annotations": {"twin.flexq.dev/local-ports": '{"10001": 5000}'},
        }
    }
    t = local_target(pod, 8265, [Runs()])
    assert (t.host, t.port, t.http_headers) == ("127.0.0.1", 4100, (TOKEN,))
    assert local_target(pod, 10001, [Runs()]).http_headers == ()  # no headers named for that port


class _Echo(BaseHTTPRequestHandler):
    """Answers every request with the headers and body it got, as JSON (HTTP/1.1, keep-alive)."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        body = json.dumps(
            {
                "path": self.path,
                "auth": self.headers.get_all("X-Ray-Authorization"),
                "body": self.rfile.read(size).decode(),
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


class _Executor:
    """Stands in for the local Ray executor: pod d/job-head's 8265 is the echo server, with the token header."""

    name = "headers"

    def __init__(self, port: int) -> None:
        self.port = port

    def accepts(self, pod: dict, owners: object = ()) -> bool:
        return False

    def poll(self, key):
        if key == ("default", "job-head"):
            return PodRunState("Running", ports={8265: self.port}, http_headers={8265: dict([TOKEN])})
        return None

    def shutdown(self) -> None:
        pass


@pytest.fixture(scope="module")
def echo_pod(served: Served) -> Iterator[None]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    executors = served.twin.core.current().executors
    ex = _Executor(server.server_address[1])
    executors.insert(0, ex)
    twin = served.twin
    twin.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pfh-node"}})
    twin.patch(
        "node",
        "pfh-node",
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
            "metadata": {"name": "job-head", "annotations": {"twin.flexq.dev/run-seconds": "3600"}},
            "spec": {
                "containers": [
                    {"name": "ray-head", "image": "rayproject/ray:2.41.0", "ports": [{"containerPort": 8265}]}
                ]
            },
        }
    )
    yield
    executors.remove(ex)
    server.shutdown()


def test_port_forward_adds_the_token_to_each_request(served: Served, echo_pod: None) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        local = s.getsockname()[1]
    pf = served.popen("port-forward", "pod/job-head", f"{local}:8265")
    try:
        assert pf.stdout is not None and "Forwarding from" in pf.stdout.readline(), pf.communicate(timeout=5)
        with requests.Session() as session:  # one keep-alive connection for all three
            answers = [
                session.get(f"http://127.0.0.1:{local}/api/version", timeout=20),
                session.post(
                    f"http://127.0.0.1:{local}/api/jobs/",
                    data=b'{"entrypoint": "x"}',
                    headers={"X-Ray-Authorization": "Bearer forged"},
                    timeout=20,
                ),
                session.get(f"http://127.0.0.1:{local}/api/jobs/", timeout=20),
            ]
        got = [a.json() for a in answers]
        assert [g["auth"] for g in got] == [["Bearer s3cret"]] * 3
        assert got[1]["body"] == '{"entrypoint": "x"}' and got[2]["path"] == "/api/jobs/"
    finally:
        pf.terminate()
        pf.communicate(timeout=10)
        time.sleep(0.1)
