"""The Kubernetes REST verbs over the twin's store: get, list, watch, create, update, patch, apply, delete.

Owns: ``KubeFace`` — which kinds a cluster serves (addon kinds only where the addon is on), which kind and
operation a request's ``RequestInfo`` names (``route``: the verb authorization checked, never a path parsed
again), versions (each request sees the version in its URL; the store keeps the storage version), Table
output, the scale subresource, pod logs, and Status errors. A request's options are read by
``flexq.http.kube.options`` (``dryRun``, ``fieldValidation``, list, watch, delete and log options); a write's
body, field validation, RBAC escalation check and managed fields by ``flexq.http.kube.writes``, one path for
create, update, patch and apply. Every store call runs on the loop thread through ``on_loop``; the face decides
nothing about domain state (style rule 5). Must not import domain packages (kube, kueue, gke, kuberay).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from flexq.api import scheme
from flexq.api.registry import KindInfo
from flexq.clock import format_time
from flexq.errors import ApiError, BadRequest, MethodNotAllowed, NotFound, UnsupportedMediaType
from flexq.http.common import (
    WriteBatch,
    decode_body_async,
    json_response,
    on_loop,
    read_body,
    status_response,
)
from flexq.http.common import view as view_as
from flexq.http.kube import apply as ssa
from flexq.http.kube import fields
from flexq.http.kube import scale as scale_api
from flexq.http.kube import table as tables
from flexq.http.kube.options import (
    OPTIONS_KIND,
    PATCH_TYPES,
    check_delete_options,
    check_field_manager,
    check_list_options,
    check_watch_version,
    default_propagation,
    delete_options,
    dry_run,
    field_validation,
    log_options,
    log_timestamp,
    page,
    watch_timeout,
)
from flexq.http.kube.target import Target, not_found_path
from flexq.http.kube.watch import DEFAULT_TIMEOUT, WatchRequest, log_stream, watch_stream
from flexq.http.kube.writes import Writes, admission, object_body, read_object, warning_header
from flexq.http.requestinfo import RequestInfo, truthy
from flexq.http.seam import ServedCluster, TwinServices
from flexq.store import Store
from flexq.store.patch import apply_patch
from flexq.store.selectors import parse_field_selector, parse_label_selector


def _maybe_uncommitted(store: Any) -> bool:
    """Whether a read made just now on this thread may have seen a write of a group commit still in progress
    (``Journal.uncommitted``, checked after reading: if it is clear, whatever was read is on disk). The read
    is then made again on the loop, which runs it after that commit: a client never reads a write that a
    crash could still undo, as etcd never serves one before it is committed."""
    journal = store.journal
    return journal is not None and journal.uncommitted


_OPERATIONS = {
    ("GET", "get"): "get",
    ("GET", "list"): "list",
    ("GET", "watch"): "watch",
    ("POST", "create"): "create",
    ("PUT", "update"): "update",
    ("PATCH", "patch"): "patch",
    ("DELETE", "delete"): "delete",
    ("DELETE", "deletecollection"): "deletecollection",
}


class KubeFace:
    """The resource endpoints of one twin (the cluster ``cluster``, else the twin's current one)."""

    def __init__(self, core: TwinServices, cluster: str | None = None) -> None:
        self.core = core
        self.cluster = cluster
        self.loop = core.loop
        self.writes = WriteBatch(core.loop)
        self.w = Writes(self.store, core.loop, self.writes)

    # -- which kinds are served -------------------------------------------------------------------
    def store(self) -> Store:
        return self.core.current(self.cluster).store

    def runtime(self) -> ServedCluster:
        """The cluster runtime, looked up from the HTTP thread (through the twin's published copy of its clusters,
        never the loop's own dict)."""
        return self.core.current(self.cluster)

    def kinds(self) -> list[KindInfo]:
        """Kinds this cluster serves (read on any thread: the registry and settings are only replaced)."""
        rt = self.runtime()
        addons = set(rt.settings.addons)
        return [
            k
            for k in rt.store.registry
            if not k.served_by_addon or not rt.name or k.served_by_addon in addons
        ]

    def resolve(self, ri: RequestInfo) -> Target:
        """The kind a resource request names, served as its ``RequestInfo`` says: a namespaced path
        (``namespaces/<ns>/<resource>``) only for a namespaced kind; 404 for anything else."""
        if ri.error or not ri.resource or len(ri.parts) > 3 or "" in ri.parts:
            raise not_found_path()
        if ri.namespaced_path and not ri.namespace:
            raise not_found_path()
        for info in self.kinds():
            if info.group == ri.api_group and info.plural == ri.resource and ri.api_version in info.models:
                if ri.namespaced_path and not info.namespaced:
                    raise not_found_path()
                return Target(ri, info)
        raise not_found_path()

    # -- entry ------------------------------------------------------------------------------------
    async def handle(self, request: Request, ri: RequestInfo) -> Response:
        try:
            return await self._dispatch(request, ri)
        except ApiError as err:
            return status_response(err)

    def route(self, method: str, ri: RequestInfo) -> tuple[Target, str]:
        """What a resource request is served as: the kind and object its ``RequestInfo`` names (what
        authorization allowed) and the operation, its verb (``get``, ``list``, ``watch``, ``create``,
        ``update``, ``patch``, ``delete``, ``deletecollection``; ``log`` for a pod's log) — else 404 or 405."""
        t = self.resolve(ri)
        if t.subresource == "log" and t.kind.kind == "Pod" and (method, ri.verb) == ("GET", "get"):
            return t, "log"
        if t.subresource == "scale" and t.kind.scale_subresource and ri.name:
            op = _OPERATIONS.get((method, ri.verb))
            if op not in ("get", "update", "patch"):
                raise MethodNotAllowed(
                    f"the server does not allow this method on the requested resource ({method})"
                )
            return t, f"scale-{op}"
        if t.subresource == "ephemeralcontainers" and t.kind.kind == "Pod" and ri.name:
            op = _OPERATIONS.get((method, ri.verb))  # EphemeralContainersREST: get, update, patch
            if op not in ("get", "update", "patch"):
                raise MethodNotAllowed(
                    f"the server does not allow this method on the requested resource ({method})"
                )
            return t, op
        if t.subresource not in (None, "status") or (
            t.subresource == "status" and not t.kind.status_subresource
        ):
            raise not_found_path()
        op = _OPERATIONS.get((method, ri.verb))
        if op is None or (op == "create" and ri.name) or (op in ("update", "patch") and not ri.name):
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource ({method})"
            )
        return t, op

    async def _dispatch(self, request: Request, ri: RequestInfo) -> Response:
        t, op = self.route(request.method, ri)
        info, m = t.kind, request.method
        if m in OPTIONS_KIND:
            check_field_manager(request.query_params.get("fieldManager"), OPTIONS_KIND[m])
        if op == "log":
            return await self.logs(request, t)
        if op.startswith("scale-"):
            return await self.scale(request, t, info, op.removeprefix("scale-"))
        if op == "watch":
            return self.watch(request, t, info, name=t.name)
        handler = {
            "list": self.list,
            "get": self.get,
            "create": self.create,
            "deletecollection": self.delete_collection,
            "update": self.update,
            "patch": self.patch,
            "delete": self.delete,
        }[op]
        return await handler(request, t, info)

    # -- helpers ----------------------------------------------------------------------------------
    def _out(
        self,
        request: Request,
        info: KindInfo,
        obj: dict,
        t: Target,
        status: int = 200,
        warnings: list[str] | None = None,
    ) -> Response:
        view = view_as(info, obj, info.api_version(t.version))
        accept = request.headers.get("accept", "")
        headers = {"Warning": ", ".join(warning_header(w) for w in warnings)} if warnings else None
        if tables.wants_table(accept) and request.method == "GET":
            include = request.query_params.get("includeObject", "Metadata")
            body = tables.table(
                info, [view], self.loop.now(), view["metadata"].get("resourceVersion", ""), include
            )
            return json_response(body, status, headers=headers)
        return json_response(view, status, headers=headers)

    # -- reads ------------------------------------------------------------------------------------
    async def get(self, request: Request, t: Target, info: KindInfo) -> Response:
        """Read on this thread, without a copy: the stored version itself, which no one changes (``peek`` takes
        no lock); a write's reply is sent once the store holds it, so a client reads its own writes. A name not
        found asks the loop (for the store's own NotFound, or the object created in between)."""
        store = self.store()
        obj = store.peek(info.kind, t.name or "", t.namespace)
        if obj is None or _maybe_uncommitted(store):
            obj = await on_loop(self.loop, lambda: store.get(info.kind, t.name or "", t.namespace))
        return self._out(request, info, obj, t)

    async def list(self, request: Request, t: Target, info: KindInfo) -> Response:
        q = request.query_params
        check_list_options(q)
        fsel = fields.checked(info, q.get("fieldSelector"))

        store = self.store()

        def run() -> tuple[list[dict], int]:
            # the stored versions themselves (read-only, never changed in place) and the resourceVersion they
            # are at, read together under the store's lock
            return (
                store.peek_list(info.kind, t.namespace, q.get("labelSelector"), fsel),
                store.resource_version,
            )

        def wait_and_run() -> tuple[list[dict], int]:
            with store.read_lock():
                return run()

        with store.read_lock(blocking=False) as held:
            got = run() if held else None
        if got is None:
            # a write holds the lock: wait for it in a worker thread (writes take it one at a time, briefly),
            # not on this thread, which serves every other connection, nor behind the loop's queue of writes
            got = await asyncio.to_thread(wait_and_run)
        if _maybe_uncommitted(store):  # read again on the loop, after the group commit in progress
            got = await on_loop(self.loop, run)
        objs, rv = got
        objs, rv, paging = page(
            objs,
            rv,
            q.get("limit"),
            q.get("continue"),
            selected=bool(q.get("labelSelector") or fsel),
        )
        api_version = info.api_version(t.version)
        views = [view_as(info, o, api_version) for o in objs]
        if tables.wants_table(request.headers.get("accept", "")):
            out = tables.table(info, views, self.loop.now(), str(rv), q.get("includeObject", "Metadata"))
            out["metadata"].update(paging)
            return json_response(out)
        return json_response(
            {
                "kind": f"{info.kind}List",
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(rv), **paging},
                "items": views,
            }
        )

    def watch(self, request: Request, t: Target, info: KindInfo, name: str | None = None) -> Response:
        q = request.query_params
        rv = q.get("resourceVersion")
        check_watch_version(rv)
        fsel = fields.checked(info, q.get("fieldSelector"))
        if name:
            fsel = f"metadata.name={name}" + (f",{fsel}" if fsel else "")
        timeout = watch_timeout(q.get("timeoutSeconds"), DEFAULT_TIMEOUT)
        parse_label_selector(q.get("labelSelector"))
        parse_field_selector(fsel)
        req = WatchRequest(
            info,
            info.api_version(t.version),
            t.namespace,
            q.get("labelSelector"),
            fsel,
            rv,
            truthy(q.get("allowWatchBookmarks")),
            truthy(q.get("sendInitialEvents")),
            timeout,
            tables.wants_table(request.headers.get("accept", "")),
            q.get("includeObject", "Metadata"),
        )
        return StreamingResponse(watch_stream(self.loop, self.store, req), media_type="application/json")

    # -- writes -----------------------------------------------------------------------------------
    async def create(self, request: Request, t: Target, info: KindInfo) -> Response:
        body, twice = await read_object(request)
        body = object_body(body, info, t)
        q = request.query_params
        obj, warns = await self.w.granted(
            request,
            t,
            info,
            dry_run(q),
            field_validation(q),
            lambda uf, d: self.store().create(
                body, namespace=t.namespace, admission=scheme.Admission(uf), dry_run=d
            ),
            twice,
        )
        return self._out(request, info, obj, t, 201, warns)

    async def update(self, request: Request, t: Target, info: KindInfo) -> Response:
        body, twice = await read_object(request)
        body = object_body(body, info, t)
        meta = body.get("metadata")
        # the update handler's checkName: the decoded object's own name must be the URL's (a body without one,
        # or with "metadata": null, decodes to the name "")
        got = meta.get("name") if isinstance(meta, dict) else None
        if got != t.name:
            raise BadRequest(
                f"the name of the object ({got if isinstance(got, str) else ''}) does not match the name on the "
                f"URL ({t.name})"
            )
        dry, mode = dry_run(request.query_params), field_validation(request.query_params)
        if t.subresource == "status":

            def write_status(uf: str) -> dict:
                obj = body
                if info.api_version(t.version) != info.storage_api_version:
                    obj = {**scheme.admit(info, body, None, "Ignore"), "metadata": body["metadata"]}
                return self.store().update_status(obj, admission=scheme.ADMIT, namespace=t.namespace)

            obj, warns = await self.w.run(mode, info, t.version, write_status, twice)
        else:
            track = self.w.tracker(request, info, t)
            obj, warns = await self.w.granted(
                request,
                t,
                info,
                dry,
                mode,
                lambda uf, d: self.store().update(
                    body, namespace=t.namespace, admission=admission(t, uf), dry_run=d, on_write=track
                ),
                twice,
            )
        return self._out(request, info, obj, t, 200, warns)

    async def patch(self, request: Request, t: Target, info: KindInfo) -> Response:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        ptype = PATCH_TYPES.get(ctype)
        if ptype is None or ptype == "apply-cbor":
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(k for k in PATCH_TYPES if 'cbor' not in k)}"
            )
        raw = await read_body(request)
        body = await decode_body_async(raw, "application/yaml" if ptype == "apply" else "application/json")
        dry, mode = dry_run(request.query_params), field_validation(request.query_params)
        if ptype == "apply":
            return await self._apply(request, t, info, body, dry, mode)
        api_version = info.api_version(t.version)
        track = self.w.tracker(request, info, t) if t.subresource is None else None
        obj, warns = await self.w.granted(
            request,
            t,
            info,
            dry,
            mode,
            lambda uf, d: self.store().patch(
                info.kind,
                t.name or "",
                body,
                t.namespace,
                patch_type=ptype,
                subresource=t.subresource,
                api_version=api_version,
                admission=admission(t, uf),
                dry_run=d,
                on_write=track,
            ),
        )
        return self._out(request, info, obj, t, 200, warns)

    async def _apply(
        self, request: Request, t: Target, info: KindInfo, body: Any, dry: bool, mode: str
    ) -> Response:
        manager = request.query_params.get("fieldManager")
        if not manager:
            raise BadRequest("PATCH, application/apply-patch+yaml requests require a fieldManager to be set")
        body = object_body(body, info, t)
        meta = body.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != t.name:
            raise BadRequest(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({t.name})"
            )
        meta["name"] = t.name
        if t.namespace and info.namespaced:
            meta.setdefault("namespace", t.namespace)
        force, api_version = truthy(request.query_params.get("force")), info.api_version(t.version)
        created = [False]

        def run(uf: scheme.UnknownFields, dry: bool = dry) -> dict:
            store = self.store()
            cur = store.try_get(info.kind, t.name or "", t.namespace)
            now = format_time(self.loop.now())
            if cur is None:
                created[0] = True
                return store.create(
                    ssa.apply(None, body, manager, force, api_version, now),
                    namespace=t.namespace,
                    admission=scheme.Admission(uf),
                    dry_run=dry,
                )
            live = scheme.render(info, cur, api_version)
            merged = ssa.apply(live, body, manager, force, api_version, now)
            if info.status_subresource and t.subresource != "status":
                merged.pop("status", None)
            if t.subresource == "status":
                return store.update_status(
                    merged
                    if api_version == info.storage_api_version
                    else {**scheme.admit(info, merged, cur, "Ignore"), "metadata": cur["metadata"]},
                    admission=scheme.ADMIT,
                    namespace=t.namespace,
                )
            return store.update(merged, namespace=t.namespace, admission=admission(t, uf), dry_run=dry)

        obj, warns = await self.w.granted(request, t, info, dry, mode, run)
        return self._out(request, info, obj, t, 201 if created[0] else 200, warns)

    async def _delete_options(self, request: Request) -> dict:
        raw = await read_body(request)
        opts: dict = {}
        if raw.strip():
            opts = await decode_body_async(raw, request.headers.get("content-type", "application/json"))
            if not isinstance(opts, dict):
                raise BadRequest("DeleteOptions must be an object")
            check_delete_options(opts)
        return delete_options(opts, request.query_params)

    async def delete(self, request: Request, t: Target, info: KindInfo) -> Response:
        opts = await self._delete_options(request)
        dry = dry_run(request.query_params, opts)

        def run() -> tuple[dict, dict | None]:
            store = self.store()
            gone = store.delete(
                info.kind,
                t.name or "",
                t.namespace,
                propagation=opts.get("propagationPolicy") or default_propagation(info),
                preconditions=opts.get("preconditions"),
                dry_run=dry,
            )
            return gone, (None if dry else store.try_get(info.kind, t.name or "", t.namespace))

        gone, still = await self.writes.run(self.store().journal, run)
        if still is not None or dry:
            return self._out(request, info, still or gone, t)
        details = {"name": t.name, "kind": info.plural, "uid": gone["metadata"].get("uid")}
        if info.group:
            details["group"] = info.group
        return json_response(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
        )

    async def delete_collection(self, request: Request, t: Target, info: KindInfo) -> Response:
        opts = await self._delete_options(request)
        q = request.query_params
        dry = dry_run(q, opts)
        fsel = fields.checked(info, q.get("fieldSelector"))

        def run() -> list[dict]:
            store = self.store()
            objs = store.list(info.kind, t.namespace, q.get("labelSelector"), fsel)
            for o in objs:
                with contextlib.suppress(NotFound):
                    store.delete(
                        info.kind,
                        o["metadata"]["name"],
                        o["metadata"].get("namespace"),
                        propagation=opts.get("propagationPolicy") or default_propagation(info),
                        dry_run=dry,
                    )
            return objs

        objs = await on_loop(self.loop, run)
        api_version = info.api_version(t.version)
        return json_response(
            {
                "kind": f"{info.kind}List",
                "apiVersion": api_version,
                "metadata": {},
                "items": [view_as(info, o, api_version) for o in objs],
            }
        )

    # -- the scale subresource ------------------------------------------------------------------
    async def scale(self, request: Request, t: Target, info: KindInfo, op: str) -> Response:
        """``/scale`` of a Deployment or ReplicaSet (``flexq.http.kube.scale``): get, update or patch the
        autoscaling/v1 Scale; a write sets ``spec.replicas`` through the store's ordinary update."""
        store, name = self.store(), t.name or ""
        if op == "get":
            obj = await on_loop(self.loop, lambda: store.get(info.kind, name, t.namespace))
            return json_response(scale_api.scale_of(obj))
        ptype = "update"
        if op == "patch":
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            ptype = PATCH_TYPES.get(ctype) or ""
            if ptype not in ("merge", "json", "strategic"):
                raise UnsupportedMediaType(
                    "the body of the request was in an unknown format - accepted media types include: "
                    "application/json-patch+json, application/merge-patch+json, "
                    "application/strategic-merge-patch+json"
                )
            body: Any = await decode_body_async(await read_body(request), "application/json")
        else:
            body, _twice = await read_object(request)
        dry = dry_run(request.query_params)

        def run() -> dict:
            cur = store.get(info.kind, name, t.namespace)  # a copy, changed below
            scale = body if ptype == "update" else apply_patch(scale_api.scale_of(cur), body, ptype)
            replicas, rv = scale_api.replicas_of(scale, name)
            cur.setdefault("spec", {})["replicas"] = replicas
            if rv:
                cur["metadata"]["resourceVersion"] = rv
            return scale_api.scale_of(
                store.update(cur, namespace=t.namespace, admission=scheme.ADMIT, dry_run=dry)
            )

        return json_response(await self.writes.run(store.journal, run))

    # -- pod logs ---------------------------------------------------------------------------------
    async def logs(self, request: Request, t: Target) -> Response:
        q = request.query_params
        ns, name, container = t.namespace or "default", t.name or "", q.get("container") or None
        pod = await on_loop(self.loop, lambda: self.store().get("Pod", name, ns))
        names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        if container is None:
            if len(names) > 1:
                raise BadRequest(
                    f"a container name must be specified for pod {name}, choose one of: "
                    f"[{' '.join(str(n) for n in names)}]"
                )
            container = names[0] if names else None
        elif container not in names:
            raise BadRequest(f"container {container} is not valid for pod {name}")
        opts = log_options(q, self.loop.now(), name)
        logs = self.runtime().logs
        lines = logs.lines(ns, name, container or "")
        known = sum(len(ln) for _, ln in lines)
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if not lines and phase == "Pending":
            raise BadRequest(
                f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            )
        # the kubelet's order: lines since the time asked, the last tailLines of them, each with its
        # timestamp when asked, then cut at limitBytes
        if opts.since is not None:
            lines = [(at, ln) for at, ln in lines if at is None or at >= opts.since]
        if opts.tail is not None:
            lines = lines[-opts.tail :] if opts.tail else []
        text = "".join(
            (f"{log_timestamp(at if at is not None else self.loop.now())} {ln}" if opts.timestamps else ln)
            for at, ln in lines
        )
        if opts.limit is not None:
            text = text.encode()[: opts.limit].decode(errors="ignore")
        if not truthy(q.get("follow")):
            return Response(text.encode(), media_type="text/plain")

        def finished() -> bool:
            p = self.store().try_get("Pod", name, ns)
            return p is None or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")

        stamp = (lambda: log_timestamp(self.loop.now())) if opts.timestamps else None
        return StreamingResponse(
            log_stream(self.loop, logs, ns, name, container, text, finished, known, stamp),
            media_type="text/plain",
        )
