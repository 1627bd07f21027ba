"""SPDY/3.1 framing, as far as ``kubectl port-forward`` (client-go over moby/spdystream) needs it.

Owns: the header-compression dictionary of SPDY draft 3 (§2.6.10.1, built here from its definition:
length-prefixed words, then a tail), frame encoding/decoding (control frames SYN_STREAM, SYN_REPLY,
RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE; data frames), and name/value header blocks
compressed with one zlib stream per direction per connection. Pure; no flexq imports.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01

_WORDS = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
] + ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()


@dataclass
class Frame:
    """One frame: ``control`` frames have a ``type``; data frames a ``stream_id`` and payload."""

    control: bool
    type: int = 0
    flags: int = 0
    stream_id: int = 0
    data: bytes = b""
    headers: dict[str, list[str]] = field(default_factory=dict)
    extra: tuple[int, ...] = ()  # PING id, RST status, GOAWAY (last id, status), WINDOW_UPDATE delta


class Codec:
    """Frames in and out of one connection (each direction has its own zlib context)."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(
            zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict=DICTIONARY
        )
        self._buf = b""

    # -- reading ----------------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[Frame]:
        """Bytes from the peer -> complete frames (partial ones wait for more)."""
        self._buf += data
        out: list[Frame] = []
        while len(self._buf) >= 8:
            length = int.from_bytes(self._buf[5:8], "big")
            if len(self._buf) < 8 + length:
                break
            head, body, self._buf = self._buf[:8], self._buf[8 : 8 + length], self._buf[8 + length :]
            out.append(self._decode(head, body))
        return out

    def _decode(self, head: bytes, body: bytes) -> Frame:
        flags = head[4]
        if not head[0] & 0x80:
            return Frame(
                False, flags=flags, stream_id=int.from_bytes(head[:4], "big") & 0x7FFFFFFF, data=body
            )
        ftype = int.from_bytes(head[2:4], "big")
        f = Frame(True, ftype, flags)
        if ftype in (SYN_STREAM, SYN_REPLY, HEADERS):
            f.stream_id = int.from_bytes(body[:4], "big") & 0x7FFFFFFF
            block = body[10:] if ftype == SYN_STREAM else body[4:]
            f.headers = self._headers(block)
        elif ftype in (RST_STREAM, WINDOW_UPDATE):
            f.stream_id = int.from_bytes(body[:4], "big") & 0x7FFFFFFF
            f.extra = (int.from_bytes(body[4:8], "big"),)
        elif ftype == PING:
            f.extra = (int.from_bytes(body[:4], "big"),)
        elif ftype == GOAWAY:
            f.extra = (int.from_bytes(body[:4], "big") & 0x7FFFFFFF, int.from_bytes(body[4:8], "big"))
        return f

    def _headers(self, block: bytes) -> dict[str, list[str]]:
        raw = self._inflate.decompress(block)
        n, pos, out = int.from_bytes(raw[:4], "big"), 4, {}
        for _ in range(n):
            ln = int.from_bytes(raw[pos : pos + 4], "big")
            name = raw[pos + 4 : pos + 4 + ln].decode()
            pos += 4 + ln
            lv = int.from_bytes(raw[pos : pos + 4], "big")
            out[name] = raw[pos + 4 : pos + 4 + lv].decode().split("\x00")
            pos += 4 + lv
        return out

    # -- writing ----------------------------------------------------------------------------------
    @staticmethod
    def _control(ftype: int, flags: int, body: bytes) -> bytes:
        return struct.pack(">HHB", 0x8000 | VERSION, ftype, flags) + len(body).to_bytes(3, "big") + body

    def _block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers))
        for k, v in headers.items():
            raw += struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_reply(self, stream_id: int, headers: dict[str, str] | None = None, fin: bool = False) -> bytes:
        return self._control(
            SYN_REPLY, FLAG_FIN if fin else 0, struct.pack(">I", stream_id) + self._block(headers or {})
        )

    def rst_stream(self, stream_id: int, status: int = 5) -> bytes:
        return self._control(RST_STREAM, 0, struct.pack(">II", stream_id, status))

    def ping(self, ping_id: int) -> bytes:
        return self._control(PING, 0, struct.pack(">I", ping_id))

    def goaway(self, last: int, status: int = 0) -> bytes:
        return self._control(GOAWAY, 0, struct.pack(">II", last, status))

    def window_update(self, stream_id: int, delta: int) -> bytes:
        return self._control(WINDOW_UPDATE, 0, struct.pack(">II", stream_id, delta))

    @staticmethod
    def data(stream_id: int, payload: bytes, fin: bool = False) -> bytes:
        return (
            struct.pack(">IB", stream_id & 0x7FFFFFFF, FLAG_FIN if fin else 0)
            + len(payload).to_bytes(3, "big")
            + payload
        )
