"""Watch streams (``?watch=true``) and followed pod logs: long-lived chunked responses.

Owns: ``watch_stream`` — the initial state (synthetic ADDED events when no resourceVersion is given, or
``sendInitialEvents``), the store's history replayed from a resourceVersion, ``ERROR`` 410 ``Expired``
events when that version is too old, ``BOOKMARK`` events, namespace/label/field filtering with objects
that stop matching reported as DELETED (as the API server's cacher does), ``timeoutSeconds``, and
Table-shaped events for ``kubectl get -w``; ``log_stream`` for ``kubectl logs -f``.
The store is subscribed on the loop thread; events reach the request through a thread-safe hand-off to
its asyncio loop. Must not import flexq modules outside ``flexq.api``, ``flexq.errors``, ``flexq.store``
and ``flexq.http``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from flexq.api.registry import KindInfo
from flexq.errors import Gone
from flexq.http.common import dumps, on_loop
from flexq.http.common import view as view_as
from flexq.http.kube import table as tables
from flexq.loop import EventLoop
from flexq.store import PodLogs, Store, WatchEvent
from flexq.store.selectors import parse_field_selector, parse_label_selector

BOOKMARK_EVERY = 5.0  # seconds between bookmarks when a client allows them
DEFAULT_TIMEOUT = 1800.0


@dataclass
class WatchRequest:
    """What a watch asks for, parsed from the query string."""

    info: KindInfo
    api_version: str
    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    resource_version: str | None
    bookmarks: bool
    send_initial: bool
    timeout: float
    table: bool
    include: str


class EventLines:
    """Each watch event's line serialised once per (object, type, apiVersion) and shared by every watcher that
    sends it, as kube-apiserver's watch cache wraps an event's object in a ``cachingObject`` that keeps one
    serialization per encoding. Keyed by the identity of the object, which is the stored version (or the
    deleted one) that the store hands to every subscriber of the write: read-only, and held here (at most
    ``size`` of them, the oldest going first) so its id is not reused while its line is kept."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.encoded = 0  # lines serialised (not found here)
        self._lines: OrderedDict[tuple[int, str, str], tuple[dict, bytes]] = OrderedDict()
        self._lock = threading.Lock()  # the servers' threads share it

    def line(self, typ: str, obj: dict, api_version: str, encode: Callable[[], bytes]) -> bytes:
        key = (id(obj), typ, api_version)
        with self._lock:
            hit = self._lines.get(key)
            if hit is not None and hit[0] is obj:
                return hit[1]
        text = encode()
        with self._lock:
            self.encoded += 1
            self._lines[key] = (obj, text)
            if len(self._lines) > self.size:
                self._lines.popitem(last=False)
        return text


LINES = EventLines()  # shared by every watch of the process


def _key(obj: dict) -> tuple[str, str]:
    m = obj["metadata"]
    return m.get("namespace") or "", m["name"]


async def watch_stream(
    loop: EventLoop, store_of: Callable[[], Store], req: WatchRequest
) -> AsyncIterator[bytes]:
    """The body of a watch response, one JSON event per line."""
    aloop = asyncio.get_running_loop()
    queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
    lmatch, fmatch = parse_label_selector(req.label_selector), parse_field_selector(req.field_selector)

    def callback(ev: WatchEvent) -> None:
        aloop.call_soon_threadsafe(queue.put_nowait, ev)

    def setup() -> tuple[list[dict], Any, int]:
        store = store_of()
        rv = req.resource_version
        if rv in (None, "", "0") or req.send_initial:
            initial = store.list(req.info.kind, req.namespace, req.label_selector, req.field_selector)
            sub = store.watch(callback, [req.info.kind], committed=True)
            return initial, sub, store.resource_version
        sub = store.watch(callback, [req.info.kind], since=int(rv or 0), committed=True)
        return [], sub, store.resource_version

    try:
        initial, sub, last_rv = await on_loop(loop, setup)
    except Gone as err:
        yield dumps({"type": "ERROR", "object": err.to_status()}) + b"\n"
        return
    first = [True]

    def plain(kind: str, obj: dict) -> bytes:
        return dumps({"type": kind, "object": view_as(req.info, obj, req.api_version)}) + b"\n"

    def encode(kind: str, obj: dict, shared: bool = True) -> bytes:
        """The event's line; ``shared``: ``obj`` is what the store handed every subscriber (not a copy made for
        this watch), so its line is serialised once for all watchers (``LINES``)."""
        if not req.table:
            if shared:
                return LINES.line(kind, obj, req.api_version, lambda: plain(kind, obj))
            return plain(kind, obj)
        view = view_as(req.info, obj, req.api_version)  # a Table: the first carries the columns
        table = tables.table(
            req.info,
            [view],
            loop.now(),
            view["metadata"].get("resourceVersion", ""),
            req.include,
            with_columns=first[0],
        )
        first[0] = False
        return dumps({"type": kind, "object": table}) + b"\n"

    def bookmark(rv: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return (
            dumps(
                {
                    "type": "BOOKMARK",
                    "object": {"kind": req.info.kind, "apiVersion": req.api_version, "metadata": meta},
                }
            )
            + b"\n"
        )

    matched: set[tuple[str, str]] = set()
    resumed = not initial and req.resource_version not in (None, "", "0")  # the client saw what came before
    try:
        for obj in initial:
            matched.add(_key(obj))
            yield encode("ADDED", obj, shared=False)  # copies listed for this watch
        if req.send_initial and req.bookmarks:
            yield bookmark(last_rv, initial_end=True)
        deadline = loop.now() + req.timeout
        while True:
            left = deadline - loop.now()
            if left <= 0:
                return
            try:
                ev = await asyncio.wait_for(queue.get(), timeout=min(left, BOOKMARK_EVERY))
            except TimeoutError:
                if req.bookmarks:
                    yield bookmark(last_rv)
                continue
            last_rv = max(last_rv, ev.rv)
            obj, key = ev.object, _key(ev.object)
            if req.namespace is not None and req.info.namespaced and key[0] != req.namespace:
                continue
            ok = lmatch(obj["metadata"].get("labels") or {}) and fmatch(obj)
            if ev.type == "DELETED":
                if key in matched or ok:
                    matched.discard(key)
                    yield encode("DELETED", obj)
            elif ok:
                kind = "ADDED" if ev.type == "ADDED" or (key not in matched and not resumed) else "MODIFIED"
                matched.add(key)
                yield encode(kind, obj)
            elif key in matched:
                matched.discard(key)
                yield encode("DELETED", obj)
    finally:
        loop.post(sub.cancel)


async def log_stream(
    loop: EventLoop,
    logs: PodLogs,
    namespace: str,
    pod: str,
    container: str | None,
    start: str,
    finished: Callable[[], bool],
    known: int | None = None,
    stamp: Callable[[], str] | None = None,
) -> AsyncIterator[bytes]:
    """``kubectl logs -f``: what is there (``start``, the log up to ``known`` characters as asked), then more
    as it is written, until the container ends; each new line prefixed with ``stamp()`` when given."""
    if start:
        yield start.encode()
    if known is None:
        known = len(logs.read(namespace, pod, container))
    at_line_start = True

    def stamped(new: str) -> bytes:
        nonlocal at_line_start
        if stamp is None:
            return new.encode()
        out = []
        for line in new.splitlines(keepends=True):
            out.append(f"{stamp()} {line}" if at_line_start else line)
            at_line_start = line.endswith("\n")
        return "".join(out).encode()

    while True:
        text = await anyio.to_thread.run_sync(logs.wait_for_more, namespace, pod, container, known, 1.0)
        if len(text) > known:
            yield stamped(text[known:])
            known = len(text)
            continue
        if await on_loop(loop, finished):
            text = logs.read(namespace, pod, container)
            if len(text) > known:
                yield stamped(text[known:])
            return
