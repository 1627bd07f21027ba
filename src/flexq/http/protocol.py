"""The HTTP/1.1 protocol of a served twin: uvicorn's (httptools', else h11's), plus the connection upgrade that
``kubectl port-forward`` needs and ASGI cannot express.

Owns: ``protocol_class(core, token)`` — a subclass of uvicorn's protocol that closes a connection whose
request head is not complete ``header_timeout`` seconds after it opened or after the request began (Go's
``ReadHeaderTimeout``: the API server's is 32 s), answers a request line it cannot parse as Go's server does,
and looks at the first request of each connection; a ``POST .../pods/<name>/portforward`` with ``Upgrade: SPDY/3.1`` is
authenticated, answered ``101`` and handed to ``PortForwardSession``; a WebSocket upgrade there gets
``400`` (kubectl then falls back to SPDY); everything else goes to the ASGI app unchanged. Also owns the
lookup of where a pod's port really is (its executor's ``PodRunState.ports``, else the pod annotation
``twin.flexq.dev/local-ports``) and of the HTTP headers its executor wants added there
(``PodRunState.http_headers``).
Must not import domain packages.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

from starlette.datastructures import QueryParams
from uvicorn.protocols.http.h11_impl import H11Protocol

try:  # llhttp through httptools: a fifth of the server's CPU per small request less than h11's pure Python
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Base
except ImportError:  # pragma: no cover - httptools is a dependency; h11 is uvicorn's own fallback
    _Base = H11Protocol  # type: ignore[assignment,misc]

from flexq.errors import BadRequest
from flexq.http.common import dumps, on_loop
from flexq.http.kube.portforward import LOCAL_PORTS, ForwardTarget, PortForwardSession, upgrade_response
from flexq.http.requestinfo import RequestInfo, request_info
from flexq.http.seam import TwinServices

_MAX_HEAD = 64 * 1024
MAX_URL = 65535  # httptools.parse_url refuses longer URLs
HEADER_TIMEOUT = 32.0  # the API server's ReadHeaderTimeout ("just shy of requestTimeoutUpperBound")
# RFC 7230's tchar: what Go's validMethod accepts in a method
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def local_endpoint(pod: dict, port: int, executors: Sequence[Any] = ()) -> tuple[str, int]:
    """Where container port ``port`` of ``pod`` listens on this machine (LookupError if nowhere).

    The executor running the pod knows (``PodRunState.ports``: the local Ray executor maps a head's 6379, 8265
    and 10001 to the ports its Ray really uses); the annotation ``twin.flexq.dev/local-ports`` is the manual
    override for pods no executor maps."""
    meta = pod.get("metadata") or {}
    for ex in executors:
        state = ex.poll((meta.get("namespace"), meta.get("name")))
        if state is not None and port in state.ports:
            return "127.0.0.1", state.ports[port]
    raw = (meta.get("annotations") or {}).get(LOCAL_PORTS)
    try:
        ports = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        ports = {}
    target = ports.get(str(port))
    if target is None:
        raise LookupError(
            f"pod {meta.get('namespace')}/{meta.get('name')} has nothing listening on port {port} "
            f"on this machine (annotation {LOCAL_PORTS}: {raw or 'absent'})"
        )
    if isinstance(target, int):
        return "127.0.0.1", target
    host, _, p = str(target).rpartition(":")
    return host or "127.0.0.1", int(p)


def local_target(pod: dict, port: int, executors: Sequence[Any] = ()) -> ForwardTarget:
    """``local_endpoint`` with the HTTP headers the pod's executor wants added there (``PodRunState.http_headers``)."""
    host, local = local_endpoint(pod, port, executors)
    meta = pod.get("metadata") or {}
    for ex in executors:
        state = ex.poll((meta.get("namespace"), meta.get("name")))
        headers = getattr(state, "http_headers", None) or {}
        if port in headers:
            return ForwardTarget(host, local, tuple(headers[port].items()))
    return ForwardTarget(host, local)


def is_portforward(info: RequestInfo) -> bool:
    """Whether a request is for a pod's ``portforward`` subresource (``/api/v1/namespaces/<ns>/pods/<name>/
    portforward``)."""
    return (
        info.resource_request
        and info.namespaced_path
        and (info.api_group, info.api_version, info.resource, info.subresource)
        == ("", "v1", "pods", "portforward")
        and len(info.parts) == 3
        and "" not in info.parts
        and bool(info.namespace)
    )


def _http(status: str, body: dict[str, Any]) -> bytes:
    data = dumps(body)
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        f"Connection: close\r\n\r\n"
    ).encode() + data


def protocol_class(
    core: TwinServices,
    token: str | None,
    gate: Callable[[RequestInfo, list[tuple[str, str]]], dict[str, Any] | None] | None = None,
    header_timeout: float = HEADER_TIMEOUT,
) -> type[Any]:
    """uvicorn's HTTP/1.1 protocol (httptools', else h11's) bound to one twin, with port-forward upgrades.
    ``gate(info, headers)`` authenticates and authorizes an upgrade (``info`` its ``RequestInfo``) (a ``Status`` to refuse it with);
    without one, the upgrade needs ``token``."""

    class TwinHttpProtocol(_Base):
        _head: bytes | None = b""
        _header_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_timer()
            super().connection_lost(exc)

        def _arm_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout, self._header_timed_out)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timed_out(self) -> None:
            """Go's server closes a connection whose request head is late without answering (a read timeout)."""
            self._header_timer = None
            self.transport.close()

        def on_message_begin(self) -> None:  # httptools: a request begins (the next one on a kept-alive conn)
            self._arm_header_timer()
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._disarm_header_timer()
            super().on_headers_complete()

        def send_400_response(self, msg: str) -> None:
            """uvicorn's answer to a request it cannot parse, as a Kubernetes ``Status`` (JSON, not text): a
            URL longer than httptools parses (64 KiB) is a 414 saying so, anything else a 400."""
            url = getattr(self, "url", b"") or b""
            if len(url) > MAX_URL:
                body = BadRequest(
                    f"the request URL is {len(url)} bytes long; this server reads URLs of at most {MAX_URL} "
                    "bytes (send long label selectors in several requests)"
                ).to_status()
                body.update(code=414, reason="RequestURITooLong")
                line = "414 URI Too Long"
            else:
                body = BadRequest(f"the HTTP request could not be parsed: {msg}").to_status()
                line = "400 Bad Request"
            self.transport.write(_http(line, body))
            self.transport.close()

        def data_received(self, data: bytes) -> None:
            if self._head is None:
                return super().data_received(data)
            self._head += data
            end = self._head.find(b"\n")
            if end > 0 and self._refused_request_line(self._head[:end].rstrip(b"\r")):
                return None
            if b"\r\n\r\n" not in self._head and len(self._head) < _MAX_HEAD:
                return None
            buffered, self._head = self._head, None
            if self._take_over(buffered):
                self._disarm_header_timer()
                return None
            return super().data_received(buffered)

        def _refused_request_line(self, line: bytes) -> bool:
            """Go's net/http answers a request line it cannot parse as soon as it has read it, before any
            header: a line without a method, target and version (HTTP/0.9's ``GET /``) or with a malformed
            version is ``400 Bad Request``, a version other than 1.x ``505`` (``readRequest``,
            ``http1ServerSupportsRequest``) — a method that is not a token (garbage bytes) is a 400 before the
            version is looked at; then it closes the connection. The API server never sees it."""
            if self._head is None:
                return False
            text = line.decode("latin-1")
            method, _, rest = text.partition(" ")
            _, sep, proto = rest.partition(" ")
            version = re.fullmatch(r"HTTP/(\d)\.(\d)", proto)
            if _TOKEN.fullmatch(method) and sep and version is not None:
                if version.group(1) == "1":
                    return False
                reply = "505 HTTP Version Not Supported: unsupported protocol version"
            else:
                reply = "400 Bad Request"
            self._head = None
            self.transport.write(
                f"HTTP/1.1 {reply}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
                f"{reply}".encode()
            )
            self.transport.close()
            return True

        def _take_over(self, buffered: bytes) -> bool:
            head, _, rest = buffered.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                return False
            method, target = parts[0], parts[1]
            headers = {}
            pairs = []
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
                pairs.append((k.strip().lower(), v.strip()))
            upgrade = headers.get("upgrade", "").lower()
            if not upgrade:
                return False
            raw_path, _, query = target.partition("?")
            info = request_info(method, unquote(raw_path), QueryParams(query))
            if not is_portforward(info):
                return False
            if "websocket" in upgrade:
                self.transport.write(
                    _http(
                        "400 Bad Request",
                        BadRequest("port-forward over WebSocket is not served here; use SPDY").to_status(),
                    )
                )
                self.transport.close()
                return True
            if method != "POST" or not upgrade.startswith("spdy/3.1"):
                return False
            scheme_, _, value = headers.get("authorization", "").partition(" ")
            refused: dict[str, Any] | None = None
            if gate is not None:
                refused = gate(info, pairs)
            elif token is not None and not (
                scheme_.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())
            ):
                refused = {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "Unauthorized",
                    "reason": "Unauthorized",
                    "code": 401,
                }
            if refused is not None:
                code = int(refused.get("code", 401))
                line = {401: "401 Unauthorized", 403: "403 Forbidden"}.get(code, f"{code} Error")
                self.transport.write(_http(line, refused))
                self.transport.close()
                return True
            cluster, ns, pod = info.cluster, info.namespace, info.name

            async def resolve(port: int) -> ForwardTarget:
                def look() -> ForwardTarget:
                    rt = core.current(cluster)
                    found = rt.store.try_get("Pod", pod, ns)
                    if found is None:
                        raise LookupError(f'pods "{pod}" not found')
                    return local_target(found, port, rt.executors)

                return await on_loop(core.loop, look)

            self.transport.write(upgrade_response())
            session = PortForwardSession(self.transport, resolve)
            self.connections.discard(self)
            self._unset_keepalive_if_required()
            self.transport.set_protocol(session)
            if rest:
                session.data_received(rest)
            return True

    return TwinHttpProtocol
