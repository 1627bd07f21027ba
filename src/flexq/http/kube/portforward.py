"""``kubectl port-forward``: the ``portforward.k8s.io`` protocol over SPDY/3.1, proxied to local ports.

Owns: ``PortForwardSession`` — an asyncio protocol that takes over a connection after the
``101 Switching Protocols`` answer to ``POST .../pods/<name>/portforward``: it replies to each stream,
pairs a request's ``error`` and ``data`` streams (headers ``streamtype``, ``port``, ``requestid``),
opens a TCP connection to where that pod's port really is on this machine (``resolve(port)``), copies
bytes both ways, reports failures on the error stream, answers PINGs, and closes cleanly on FIN, RST,
GOAWAY or a lost connection. The pod-to-local-port lookup is the caller's (see ``LOCAL_PORTS``); where it
names HTTP headers for the port (``ForwardTarget.http_headers``: the local Ray dashboard's token), ``HeaderAdder``
puts them in every HTTP/1.x request the connection carries (a request's own copy of such a header is dropped;
after an upgrade, e.g. a WebSocket, or anything that does not parse as HTTP/1.x, bytes pass unchanged).
Must not import flexq modules outside ``flexq.http``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from flexq.http.kube import spdy

log = logging.getLogger("flexq.http.portforward")

PROTOCOL = "portforward.k8s.io"
LOCAL_PORTS = "twin.flexq.dev/local-ports"  # pod annotation: {"8265": 40123} container port -> local port
CHUNK = 32 * 1024

_MAX_HEAD = 64 * 1024


@dataclass(frozen=True)
class ForwardTarget:
    """Where a forwarded port goes, and the HTTP headers to add to each request sent there."""

    host: str
    port: int
    http_headers: tuple[tuple[str, str], ...] = ()


# container port -> (host, port) or ForwardTarget; raises LookupError
Resolver = Callable[[int], Awaitable["tuple[str, int] | ForwardTarget"]]


class HeaderAdder:
    """Adds headers to each HTTP/1.x request of a client-to-server byte stream, fed in pieces.

    Follows request framing (``Content-Length`` bodies, ``chunked`` bodies with trailers) so every request of a
    keep-alive connection gets them; stops at an ``Upgrade`` or ``CONNECT`` request (what follows is another
    protocol) and at anything that is not an HTTP/1.x request head, passing the rest through unchanged."""

    def __init__(self, headers: tuple[tuple[str, str], ...]) -> None:
        self.lines = b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers)
        self.names = {k.lower().encode("latin-1") for k, _ in headers}
        self.buf = b""
        self.state = "head"  # head | body | size | data | trailer | raw
        self.left = 0  # bytes of body (or of chunk data plus its CRLF) still to pass

    def feed(self, data: bytes) -> bytes:
        """The bytes to send on for ``data`` (possibly fewer now, the rest with later calls)."""
        if self.state == "raw":
            return data
        self.buf += data
        out: list[bytes] = []
        while self.buf and self.state != "raw":
            if self.state in ("body", "data"):
                take = self.buf[: self.left]
                out.append(take)
                self.buf, self.left = self.buf[len(take) :], self.left - len(take)
                if self.left == 0:
                    self.state = "head" if self.state == "body" else "size"
                continue
            end = self.buf.find(b"\r\n\r\n" if self.state == "head" else b"\r\n")
            if end < 0:
                if len(self.buf) > _MAX_HEAD:
                    self.state = "raw"
                break
            if self.state == "head":
                head, self.buf = self.buf[: end + 4], self.buf[end + 4 :]
                out.append(self._request(head))
            elif self.state == "size":
                line, self.buf = self.buf[: end + 2], self.buf[end + 2 :]
                out.append(line)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    self.state = "raw"
                    continue
                self.state, self.left = ("trailer", 0) if size == 0 else ("data", size + 2)
            else:  # trailer lines, up to the empty one that ends the request
                line, self.buf = self.buf[: end + 2], self.buf[end + 2 :]
                out.append(line)
                if line == b"\r\n":
                    self.state = "head"
        if self.state == "raw":
            out.append(self.buf)
            self.buf = b""
        return b"".join(out)

    def _request(self, head: bytes) -> bytes:
        lines = head[:-4].split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            self.state = "raw"
            return head
        kept, length, chunked, upgrade = [lines[0]], 0, False, parts[0] == b"CONNECT"
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            key = name.strip().lower()
            if key in self.names:
                continue
            kept.append(line)
            if key == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    self.state = "raw"
            elif key == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif key == b"upgrade":
                upgrade = True
        if self.state == "raw":
            return head
        if upgrade:
            self.state = "raw"
        elif chunked:
            self.state = "size"
        elif length > 0:
            self.state, self.left = "body", length
        return b"\r\n".join(kept) + b"\r\n" + self.lines + b"\r\n"


@dataclass
class _Pair:
    request_id: str
    port: int = 0
    error: int = 0  # stream ids
    data: int = 0
    writer: asyncio.StreamWriter | None = None
    adder: HeaderAdder | None = None
    pending: list[bytes] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    closed: bool = False


class PortForwardSession(asyncio.Protocol):
    """One kubectl port-forward connection, after the upgrade."""

    def __init__(self, transport: asyncio.Transport, resolve: Resolver) -> None:
        self.transport = transport
        self.resolve = resolve
        self.codec = spdy.Codec()
        self.pairs: dict[str, _Pair] = {}
        self.by_stream: dict[int, _Pair] = {}
        self.last_stream = 0
        self.closed = False

    # -- from kubectl -----------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        try:
            frames = self.codec.feed(data)
        except Exception:
            log.exception("bad SPDY data; closing the port-forward connection")
            self._close_all()
            return
        for f in frames:
            self._frame(f)

    def _frame(self, f: spdy.Frame) -> None:
        if not f.control:
            self._data(f)
        elif f.type == spdy.SYN_STREAM:
            self._syn_stream(f)
        elif f.type == spdy.PING:
            self._send(self.codec.ping(f.extra[0]))
        elif f.type == spdy.RST_STREAM:
            pair = self.by_stream.get(f.stream_id)
            if pair is not None:
                self._finish(pair, reset=True)
        elif f.type == spdy.GOAWAY:
            self._close_all()

    def _syn_stream(self, f: spdy.Frame) -> None:
        self.last_stream = max(self.last_stream, f.stream_id)
        h = {k.lower(): v[0] if v else "" for k, v in f.headers.items()}
        rid, kind = h.get("requestid", str(f.stream_id)), h.get("streamtype", "")
        self._send(self.codec.syn_reply(f.stream_id))
        if kind not in ("error", "data"):
            self._send(self.codec.rst_stream(f.stream_id, 1))
            return
        pair = self.pairs.setdefault(rid, _Pair(rid))
        try:
            pair.port = int(h.get("port", "0"))
        except ValueError:
            pair.port = 0
        setattr(pair, kind, f.stream_id)
        self.by_stream[f.stream_id] = pair
        if pair.error and pair.data and pair.task is None:
            pair.task = asyncio.get_running_loop().create_task(self._forward(pair))

    def _data(self, f: spdy.Frame) -> None:
        pair = self.by_stream.get(f.stream_id)
        if pair is None or f.stream_id != pair.data:
            return  # the client's half-close of its error stream, or a stream we already finished
        if f.data:
            if pair.writer is None:
                pair.pending.append(f.data)
            else:
                pair.writer.write(pair.adder.feed(f.data) if pair.adder else f.data)
            self._send(self.codec.window_update(f.stream_id, len(f.data)))
        if f.flags & spdy.FLAG_FIN and pair.writer is not None and pair.writer.can_write_eof():
            with contextlib.suppress(OSError):
                pair.writer.write_eof()

    # -- to the local port ------------------------------------------------------------------------
    async def _forward(self, pair: _Pair) -> None:
        try:
            found = await self.resolve(pair.port)
            target = found if isinstance(found, ForwardTarget) else ForwardTarget(*found)
            reader, writer = await asyncio.open_connection(target.host, target.port)
        except (LookupError, OSError) as exc:
            msg = f"error forwarding port {pair.port} to pod: {exc}"
            self._send(self.codec.data(pair.error, msg.encode()))
            self._finish(pair)
            return
        pair.writer = writer
        if target.http_headers:
            pair.adder = HeaderAdder(target.http_headers)
        for chunk in pair.pending:
            writer.write(pair.adder.feed(chunk) if pair.adder else chunk)
        pair.pending.clear()
        try:
            while not pair.closed:
                chunk = await reader.read(CHUNK)
                if not chunk:
                    break
                self._send(self.codec.data(pair.data, chunk))
        except OSError as exc:
            log.info("port-forward %s: %s", pair.request_id, exc)
        finally:
            self._finish(pair)

    def _finish(self, pair: _Pair, reset: bool = False) -> None:
        if pair.closed:
            return
        pair.closed = True
        if not reset:
            self._send(self.codec.data(pair.data, b"", fin=True))
            self._send(self.codec.data(pair.error, b"", fin=True))
        if pair.writer is not None:
            pair.writer.close()
        self.pairs.pop(pair.request_id, None)
        if pair.task is not None and reset:
            pair.task.cancel()

    # -- the connection ---------------------------------------------------------------------------
    def _send(self, data: bytes) -> None:
        if not self.closed and not self.transport.is_closing():
            self.transport.write(data)

    def _close_all(self) -> None:
        for pair in list(self.pairs.values()):
            self._finish(pair, reset=True)
        if not self.closed:
            self._send(self.codec.goaway(self.last_stream))
            self.closed = True
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for pair in list(self.pairs.values()):
            self._finish(pair, reset=True)


def upgrade_response(protocol: str = PROTOCOL) -> bytes:
    """The 101 answer that hands the connection to SPDY."""
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        b"X-Stream-Protocol-Version: " + protocol.encode() + b"\r\n\r\n"
    )
