"""A write's way from the request to the store, one path for every write verb of ``flexq.http.kube.rest``.

Owns: the request's object (``read_object``: decoded, with the fields its JSON text sets twice; ``object_body``:
its apiVersion, kind, metadata and namespace checked against the URL), ``fieldValidation`` applied to a write
(``Writes.run``: unknown and repeated fields refused under Strict, a warning each under Warn, dropped under
Ignore), RBAC's escalation check (``Writes.granting``: an RBAC object written by someone outside
``system:masters`` is first tried as a dry run), both together as create, update, patch and apply write
(``Writes.granted``), the managed fields an update or patch passes to its manager (``Writes.tracker``), the
admission a client's update or patch goes through (``admission``) and a reply's ``Warning`` header
(``warning_header``). Every store call runs on the loop, in the face's ``WriteBatch``. Must not import domain
packages (kube, kueue, gke, kuberay).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from flexq.api import scheme
from flexq.api.decode import duplicate_fields
from flexq.api.ephemeral import EphemeralContainersAdmission
from flexq.api.registry import KindInfo
from flexq.clock import format_time
from flexq.errors import BadRequest, Invalid
from flexq.http import auth
from flexq.http.common import WriteBatch, decode_body_async, read_body
from flexq.http.kube import apply as ssa
from flexq.http.kube.options import field_validation, manager_from_user_agent
from flexq.http.kube.target import Target
from flexq.loop import EventLoop
from flexq.semantics.rbac import privileged
from flexq.store import Store

__all__ = ["Writes", "admission", "object_body", "read_object", "warning_header"]

_UNKNOWN = "field not declared in schema"


def warning_header(text: str) -> str:
    """A ``Warning`` header value as the API server writes one (``net.NewWarningHeader(299, "-", text)``):
    the text quoted, its ``"`` and ``\\`` escaped, so that clients (client-go's ``ParseWarningHeaders``) read
    it back whole."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def read_object(request: Request) -> tuple[Any, list[str]]:
    """The request's object, and the fields its JSON text sets twice (``decode.duplicate_fields``: the
    strict decoder's ``duplicate field`` errors; a YAML body with a repeated key is refused outright)."""
    raw = await read_body(request)
    ctype = request.headers.get("content-type", "application/json")
    body = await decode_body_async(raw, ctype)
    json_text = "json" in ctype.lower() or ctype.split(";")[0].strip() in ("", "*/*")
    if json_text and field_validation(request.query_params) != "Ignore":
        return body, duplicate_fields(raw, body)
    return body, []


def object_body(body: Any, info: KindInfo, t: Target) -> dict:
    if not isinstance(body, dict):
        raise BadRequest(f"the body of the request must be a {info.kind} object, not {type(body).__name__}")
    if body.get("apiVersion") is None:
        body["apiVersion"] = info.api_version(t.version)
    if body.get("kind") is None:
        body["kind"] = info.kind
    scheme.check_shape(body)
    if body.get("metadata") is None:
        body["metadata"] = {}
    if body["apiVersion"] != info.api_version(t.version) or body["kind"] != info.kind:
        raise BadRequest(
            f"the API version in the data ({body['apiVersion']}) does not match the expected API "
            f"version ({info.api_version(t.version)})"
            if body["kind"] == info.kind
            else f"the kind in the data ({body['kind']}) does not match the expected kind ({info.kind})"
        )
    meta = body.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise BadRequest("metadata must be an object")
    if t.namespace and meta and meta.get("namespace") and meta["namespace"] != t.namespace:
        raise BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    return body


def admission(t: Target, unknown: Any) -> scheme.Admission:
    """A client's update or patch: through ``pods/NAME/ephemeralcontainers`` only the ephemeral containers change."""
    if t.subresource == "ephemeralcontainers":
        return EphemeralContainersAdmission(unknown)
    return scheme.Admission(unknown)


class Writes:
    """The write path of one face: its cluster's store (looked up per write), its loop and batch of writes."""

    def __init__(self, store: Callable[[], Store], loop: EventLoop, batch: WriteBatch) -> None:
        self.store, self.loop, self.batch = store, loop, batch

    def granting(self, request: Request, info: KindInfo, t: Target, dry: bool, op: Any) -> dict:
        """``op(dry_run)``, the write of a request; for an RBAC object written by someone outside
        ``system:masters``, first tried as a dry run, and refused (403) if what it would store grants more
        than the writer holds (``auth.escalation_check``). Runs on the loop, so the check and the write see the
        same roles."""
        user = request.scope.get(auth.USER_KEY)
        if info.group != "rbac.authorization.k8s.io" or user is None or privileged(user):
            return dict(op(dry))
        store = self.store()
        old = store.peek(info.kind, t.name, t.namespace) if t.name else None
        trial = op(True)
        auth.escalation_check(store, user, info.kind, t.namespace or "", trial, old)
        return dict(op(dry))

    async def run(
        self, mode: str, info: KindInfo, version: str, fn: Any, twice: list[str] | tuple[()] = ()
    ) -> tuple[dict, list[str]]:
        """Run ``fn(unknown_fields)`` on the loop with the request's field validation (in the next batch of
        writes: ``WriteBatch``). ``twice``: the fields the body sets twice, refused under Strict before
        anything is written, a warning each under Warn (the last value kept, as Go's decoder keeps it)."""
        journal = self.store().journal
        if mode == "Ignore":
            return await self.batch.run(journal, lambda: fn("Ignore")), []
        repeated = [f'duplicate field "{f}"' for f in twice]
        if repeated and mode == "Strict":
            raise BadRequest(
                f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: '
                f"strict decoding error: {', '.join(repeated)}"
            )
        try:
            return await self.batch.run(journal, lambda: fn("Strict")), repeated
        except Invalid as err:
            unknown = [c for c in err.causes if c.message == _UNKNOWN]
            if not unknown or len(unknown) != len(err.causes):
                raise
            names = [f'unknown field "{c.field}"' for c in unknown]
            if mode == "Strict":
                raise BadRequest(
                    f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: '
                    f"strict decoding error: {', '.join(names)}"
                ) from None
            return await self.batch.run(journal, lambda: fn("Ignore")), names + repeated

    async def granted(
        self,
        request: Request,
        t: Target,
        info: KindInfo,
        dry: bool,
        mode: str,
        op: Callable[[scheme.UnknownFields, bool], Any],
        twice: list[str] | tuple[()] = (),
    ) -> tuple[dict, list[str]]:
        """A client's create, update, patch or apply: ``op(unknown_fields, dry_run)`` run with the request's
        field validation (``run``), through RBAC's escalation check (``granting``)."""
        return await self.run(
            mode, info, t.version, lambda uf: self.granting(request, info, t, dry, lambda d: op(uf, d)), twice
        )

    def tracker(self, request: Request, info: KindInfo, t: Target) -> Any:
        """``on_write`` for a non-apply write: once an object has ``managedFields`` (someone applied it),
        the fields an update or patch changes pass to its manager (``fieldManager``, else the client's
        User-Agent up to its first ``/``), as the API server records them, so a later apply by the manager
        that lost a field conflicts (409) unless forced."""
        manager = (
            request.query_params.get("fieldManager")
            or manager_from_user_agent(request.headers.get("user-agent") or "unknown")
            or "unknown"
        )
        api_version = info.api_version(t.version)

        def track(live: dict, new: dict) -> dict:
            if not (live.get("metadata") or {}).get("managedFields"):
                return new
            return ssa.track_update(
                live, new, manager, api_version, format_time(self.loop.now()), t.subresource
            )

        return track
