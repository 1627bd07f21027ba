"""Connections that send nothing, and more requests than the twin serves at once (issue 36): the API server's
ReadHeaderTimeout (32 s; short here) closes idle and slow connections, the open-file limit is raised as Go
raises it so a thousand idle sockets lock no one out, ``--max-requests-inflight`` answers 429 past its limit
while the twin's own token (system:masters: the local CLI) always gets an answer, and a request line of
garbage bytes gets Go's 400. Over real HTTPS with real tokens."""

from __future__ import annotations

import concurrent.futures
import json
import resource
import socket
import ssl
import time
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest
import requests

from flexq import Twin
from flexq.http.server import Server

CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("conns")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 5000:
        pytest.skip(f"the hard limit on open files ({hard}) is too low for 2,000 connections both ways")
    # as on a machine whose soft limit is the usual 1,024: the server raises it, as Go's runtime does
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    twin = Twin(clock="real", home=home, executor="simulated")
    srv = Server(twin.core, home, header_timeout=1.0, max_mutating_requests_inflight=2).start()
    srv.write_files()
    try:
        yield srv
    finally:
        srv.stop()
        twin.close()
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (max(soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]), hard)
        )


def _addr(server: Server) -> tuple[str, int]:
    u = urlparse(server.url)
    return u.hostname or "127.0.0.1", u.port or 0


def _get(server: Server, path: str, token: str | None = None, **kw: object) -> requests.Response:
    headers = {"Authorization": f"Bearer {token or server.creds.token}", "Content-Type": "application/json"}
    return requests.request(
        str(kw.pop("method", "GET")),
        server.url + path,
        headers=headers,
        verify=str(server.creds.ca_cert),
        timeout=20,
        **kw,  # type: ignore[arg-type]
    )


def _tls(server: Server) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(server.creds.ca_cert))
    return ctx.wrap_socket(socket.create_connection(_addr(server), timeout=5), server_hostname="127.0.0.1")


def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True
    except TimeoutError:
        return False


def test_two_thousand_idle_connections_lock_no_one_out(server: Server) -> None:
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    socks = []
    try:
        for _ in range(2000):
            socks.append(socket.create_connection(_addr(server), timeout=5))
        t0 = time.monotonic()
        r = _get(server, "/api/v1/namespaces")
        # answered while the 2,000 are held (a lockout waits for them all to time out, one by one or in bulk);
        # the bound is generous for a loaded machine (3.1 s seen with the suite, two helpers and benches at load 18)
        assert r.status_code == 200 and time.monotonic() - t0 < 6, r.text
        # no TLS handshake ever started: closed after the header timeout (1 s here, 32 s by default)
        deadline = time.monotonic() + 10
        open_ = list(socks)
        while open_ and time.monotonic() < deadline:
            open_ = [s for s in open_ if not _closed_by_peer(s, 0.01)]
        assert not open_, f"{len(open_)} of 2000 idle connections still open"
    finally:
        for s in socks:
            s.close()


def test_a_slow_request_head_is_closed(server: Server) -> None:
    """TLS done, then a request head that never ends (a slowloris): closed, unanswered, after the timeout."""
    with _tls(server) as tls:
        t0 = time.monotonic()
        tls.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.5)
        tls.sendall(b"X-Slow: 1\r\n")
        assert _closed_by_peer(tls, 5)
        assert 0.9 < time.monotonic() - t0 < 4


def test_garbage_request_line_is_go_s_400(server: Server) -> None:
    with _tls(server) as tls:
        tls.sendall(b"\x01\x02\xfe\xff / HTTP/2.0\r\n\r\n")
        answer = b""
        while chunk := tls.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer
    assert answer.endswith(b"\r\n\r\n400 Bad Request"), answer


def _service_account_token(server: Server, twin_token: str) -> str:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "writer"}}
    assert _get(server, "/api/v1/namespaces/default/serviceaccounts", method="POST", data=json.dumps(sa)).ok
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "writer-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": "writer", "namespace": "default"}],
    }
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    assert _get(server, path, method="POST", data=json.dumps(binding)).ok
    req = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    r = _get(
        server, "/api/v1/namespaces/default/serviceaccounts/writer/token", method="POST", data=json.dumps(req)
    )
    assert r.status_code == 201, r.text
    return str(r.json()["status"]["token"])


def test_writes_past_the_inflight_limit_get_429_but_the_admin_is_served(server: Server) -> None:
    token = _service_account_token(server, server.creds.token)
    loop = server.core.loop
    loop.post(lambda: time.sleep(2))  # the loop is busy: writes wait in flight

    def write(i: int, tok: str | None = None) -> requests.Response:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"inflight-{i}"}}
        return _get(server, CM, tok, method="POST", data=json.dumps(body))

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        mine = [pool.submit(write, i, token) for i in range(5)]
        time.sleep(0.3)
        admin = pool.submit(write, 99)
        answers = [f.result() for f in mine]
        assert admin.result().status_code == 201, admin.result().text
    codes = sorted(r.status_code for r in answers)
    assert codes.count(201) == 2 and codes.count(429) == 3, codes
    refused = next(r for r in answers if r.status_code == 429)
    assert refused.text == "Too many requests, please try again later.\n"
    assert refused.headers["Retry-After"] == "1"
    assert write(7, token).status_code == 201  # the slots are free again
