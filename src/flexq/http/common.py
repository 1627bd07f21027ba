"""Plumbing shared by the HTTP faces: running work on the twin's loop, bodies, JSON responses, errors.

Owns: ``on_loop`` (await a function run on the loop thread: the only way a face writes to a store),
``WriteBatch`` (writes run on the loop in batches, one journal commit each: a group commit),
``read_body`` (with the API server's size limit, 413 past it), ``decode_body`` (JSON or YAML by content
type through ``flexq.api.decode``: 400 when malformed or nested too deep, 413 when larger than the limit once
expanded; big or YAML bodies are decoded off the server's asyncio loop, so one cannot stall the others), ``json_response`` and ``status_response`` (a Kubernetes ``Status`` for any
``ApiError``). Must not import flexq modules other than ``flexq.errors``, ``flexq.loop`` and ``flexq.api.decode``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import orjson
from starlette.requests import Request
from starlette.responses import Response

from flexq.api import scheme
from flexq.api.decode import check_decoded, load_json, load_yaml
from flexq.errors import (
    ApiError,
    BadRequest,
    InternalError,
    RequestEntityTooLarge,
    ServiceUnavailable,
    UnsupportedMediaType,
)
from flexq.http.kube import protobuf
from flexq.loop import EventLoop, RealtimeLoop

T = TypeVar("T")

log = logging.getLogger("flexq.http")

MAX_BODY = 3 * 1024 * 1024  # the API server's MaxRequestBodyBytes
LOOP_TIMEOUT = 60.0


def _threadsafe_future() -> tuple[asyncio.Future[Any], Callable[[Any, BaseException | None], None]]:
    """A future of the running asyncio loop, and ``deliver(value, exc)`` that settles it from any thread
    (the first delivery wins: a request that timed out ignores a late answer)."""
    aloop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = aloop.create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if fut.done():
            return
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(value)

    def deliver(value: Any, exc: BaseException | None) -> None:
        aloop.call_soon_threadsafe(settle, value, exc)

    return fut, deliver


def loop_stopped(loop: EventLoop) -> ServiceUnavailable | None:
    """The error to answer with when the twin's loop thread has died (None while it runs)."""
    if not isinstance(loop, RealtimeLoop) or loop.alive():
        return None
    why = f" ({type(loop.failure).__name__})" if loop.failure is not None else ""
    return ServiceUnavailable(
        f"the twin's event loop has stopped{why}: nothing can be read or written until the twin is "
        "restarted (flexq down; flexq up)"
    )


async def on_loop(loop: EventLoop, fn: Callable[[], T], timeout: float = LOOP_TIMEOUT) -> T:
    """Run ``fn`` on the twin's loop thread and await its result (its exception is re-raised here).
    A loop that does not answer within ``timeout`` seconds (stuck) gives a 500, not a hung request; a loop that
    has died a 503 at once."""
    if not isinstance(loop, RealtimeLoop) or loop.thread is None or loop.in_loop_thread():
        return fn()
    stopped = loop_stopped(loop)
    if stopped is not None:
        raise stopped
    fut, deliver = _threadsafe_future()

    def run() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed back to the request's task
            deliver(None, exc)
        else:
            deliver(value, None)

    loop.post(run)
    try:
        return await asyncio.wait_for(fut, timeout)
    except TimeoutError:
        raise InternalError(f"the twin's event loop did not answer within {timeout:.0f}s") from None


class Transactional(Protocol):
    """What ``WriteBatch`` needs of the store's journal (``flexq.store.Journal``)."""

    def transaction(self) -> contextlib.AbstractContextManager[None]: ...


class WriteBatch:
    """Writes from the HTTP thread, run on the loop in batches with one journal commit per batch — a group
    commit, as etcd syncs its write-ahead log once for a batch of proposals — rather than one sync to disk per
    write, which bounds a twin to a few hundred writes per second whatever its CPU.

    Each write runs inside the batch's transaction as its own savepoint (``Journal.transaction`` nested): a
    write that fails (invalid, conflict) undoes only its own rows, as alone. Every reply waits for the
    batch's commit, so an acknowledged write is on disk, as before. While the batch commits, its writes are
    already in the store's memory (watchers and reads may see them a commit's time before they are
    acknowledged). A batch whose commit fails answers every write of it with an InternalError and is logged
    as critical: those writes are in memory but not on disk, and a restart loses them (etcd stops on a
    failed WAL sync for the same reason)."""

    def __init__(self, loop: EventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._pending: list[tuple[Callable[[], Any], Transactional | None, Callable[..., None]]] = []

    async def run(
        self, journal: Transactional | None, fn: Callable[[], T], timeout: float = LOOP_TIMEOUT
    ) -> T:
        """Run ``fn`` (a write to a store journaled in ``journal``) on the loop in the next batch; await its
        result once the batch is committed."""
        loop = self.loop
        if not isinstance(loop, RealtimeLoop) or loop.thread is None or loop.in_loop_thread():
            return fn()
        stopped = loop_stopped(loop)
        if stopped is not None:
            raise stopped
        fut, deliver = _threadsafe_future()

        with self._lock:
            self._pending.append((fn, journal, deliver))
            first = len(self._pending) == 1
        if first:
            loop.post(self._flush)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise InternalError(f"the twin's event loop did not answer within {timeout:.0f}s") from None

    def _flush(self) -> None:
        """On the loop: run every pending write in one transaction, commit, then hand back the results."""
        with self._lock:
            batch, self._pending = self._pending, []
        journal = next((j for _, j, _ in batch if j is not None), None)
        results: list[tuple[Any, BaseException | None]] = []
        try:
            with journal.transaction() if journal is not None else contextlib.nullcontext():
                for fn, _, _ in batch:
                    try:
                        results.append((fn(), None))
                    except BaseException as refused:  # handed back to its request; its savepoint is undone
                        results.append((None, refused))
        except Exception as exc:  # the commit itself failed
            log.critical(
                "a batch of %d writes could not be committed to the journal", len(batch), exc_info=True
            )
            err = InternalError(f"the twin could not write its state to disk ({type(exc).__name__}: {exc})")
            results = [(None, err)] * len(batch)
        for (_, _, deliver), (value, error) in zip(batch, results, strict=True):
            deliver(value, error)


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The request body, refusing more than ``limit`` bytes (413)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise RequestEntityTooLarge("the server has received a request body that is too large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestEntityTooLarge("the server has received a request body that is too large")
        chunks.append(chunk)
    return b"".join(chunks)


def decode_body(raw: bytes, content_type: str) -> Any:
    """JSON (or YAML for ``application/yaml`` and apply patches) -> Python data; 400 when malformed or
    nested too deep, 413 when larger than the API server's request limit once expanded."""
    ctype = content_type.split(";")[0].strip().lower()
    if not raw.strip():
        raise BadRequest("the request body is empty")
    if "protobuf" in ctype:
        data = protobuf.decode(raw)
        check_decoded(data)
        return data
    if "cbor" in ctype:
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types "
            f'include: application/json, application/yaml (got "{ctype}")'
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not valid UTF-8") from None
    data = load_yaml(text) if "yaml" in ctype else load_json(text)
    check_decoded(data)
    return data


OFF_LOOP_BYTES = 64 * 1024


async def decode_body_async(raw: bytes, content_type: str) -> Any:
    """``decode_body`` in a worker thread for YAML (an alias can expand a small body a millionfold before
    the size check refuses it) and big bodies, inline for the small JSON bodies of most requests."""
    if len(raw) > OFF_LOOP_BYTES or "yaml" in content_type.lower():
        return await asyncio.to_thread(decode_body, raw, content_type)
    return decode_body(raw, content_type)


def view(info: Any, obj: dict, api_version: str) -> dict:
    """``obj`` (a store copy, never mutated afterwards) as seen in ``api_version``; no copy when that is the
    storage version (``scheme.render`` always deep-copies)."""
    if api_version == info.storage_api_version:
        return obj
    return scheme.render(info, obj, api_version)


def dumps(data: Any) -> bytes:
    """Compact JSON: orjson (a list of 200 objects in a tenth of a millisecond, against two with the standard
    library), falling back to ``json`` for what orjson refuses (integers past 64 bits, non-string keys)."""
    try:
        return orjson.dumps(data)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(data, separators=(",", ":")).encode()


def json_response(
    data: Any, status: int = 200, media_type: str = "application/json", headers: dict[str, str] | None = None
) -> Response:
    return Response(dumps(data), status_code=status, media_type=media_type, headers=headers)


def status_response(err: ApiError) -> Response:
    """A Kubernetes ``Status`` for an error, with its HTTP code."""
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return json_response(err.to_status(), err.status, headers=headers)


def url_path(request: Request) -> str:
    """``request.url.path`` without building the whole URL (its host, port, query: a few percent of a small
    request's CPU): the ASGI path with ``?``, ``#`` and ``\\`` escaped, as Starlette's ``URL`` has it."""
    path: str = request.scope["path"]
    return path.replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")
