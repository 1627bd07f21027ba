"""The ASGI application of a served twin: one port for the Kubernetes API and the Google Cloud APIs.

Owns: the order of the API server's filters — what the request asks (``flexq.http.requestinfo``: its path and
query parsed once, carried on the request; every later stage and the handlers read that value), authentication (``flexq.http.auth``: the twin's own token is the
cluster admin, a ServiceAccount token that ServiceAccount; ``/version``, ``/healthz``, ``/livez`` and ``/readyz``
are public, as the API server's default RBAC makes them), impersonation (``Impersonate-*``), authorization
(RBAC over the target cluster's roles and bindings: 403 as the API server words it), the limit on requests in
flight (``flexq.http.inflight``: 429) — then routing by path:
``/version``, ``/api``, ``/apis`` (legacy and aggregated discovery), ``/openapi/v2``, ``/openapi/v3...``,
``/api/v1/...`` and ``/apis/<group>/<version>/...`` (the Kubernetes face, with the review APIs and
``serviceaccounts/<name>/token``), ``/.well-known/openid-configuration`` and ``/openid/v1/jwks`` (the
ServiceAccount issuer's discovery), ``/clusters/<name>/...`` (the same for a named GKE cluster), ``/v1/...`` and
friends (the GKE face, which takes only the twin's own token, as GKE takes no Kubernetes ServiceAccount token),
``/metrics`` (the cluster's Prometheus registry), ``/flexq/eta`` (the cluster's last forecast of when its waiting
jobs start, when the twin keeps one: ``flexq.http.seam.Forecasts``; 404 when it keeps none, 503 before its first)
and ``/dashboard/...`` (the web dashboard: the twin's own
token, from its login cookie) — and turning every failure into a Kubernetes ``Status`` (or a Google error) so
that the twin keeps serving. Must not import domain packages.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from flexq.errors import ApiError, InternalError, MethodNotAllowed, NotFound, ServiceUnavailable, Unauthorized
from flexq.http import auth, dashboard
from flexq.http import inflight as inflight_limit
from flexq.http import metrics as metrics_page
from flexq.http.common import (
    decode_body_async,
    json_response,
    loop_stopped,
    on_loop,
    read_body,
    status_response,
    url_path,
)
from flexq.http.gke import face as gke_face
from flexq.http.kube import discovery, openapi, openapi_proto, protobuf, reviews, tokenrequest
from flexq.http.kube.rest import KubeFace
from flexq.http.requestinfo import RequestInfo, request_info
from flexq.http.seam import Forecasts, ServedCluster, TwinServices
from flexq.semantics import satokens
from flexq.semantics.rbac import UserInfo, privileged

log = logging.getLogger("flexq.http")

ETA_PATH = "/flexq/eta"  # the twin's last forecast of when waiting jobs start (flexq status's ETA column)
TWIN_PATH = "/flexq/twin"  # what the twin declares of itself: its CapacityProfile in force, its executor
PUBLIC = {"/version", "/version/", "/healthz", "/livez", "/readyz"}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
HEALTH_TIMEOUT = 5.0  # /readyz: how long the loop may take to answer


USER = auth.USER_KEY  # the request scope's key for the authenticated (and impersonated) user
INFO = "flexq.request_info"  # and for what it asks (its RequestInfo, computed once)


def request_user(request: Request) -> UserInfo:
    """The user a request acts as (set by ``TwinApp`` before any face sees it)."""
    user: UserInfo = request.scope.get(USER) or auth.ADMIN
    return user


def issuer_of(view: ServedCluster) -> str:
    """The ServiceAccount token issuer of a cluster: its GKE URL, else the in-cluster default."""
    facts = view.settings
    return satokens.issuer_for(
        getattr(facts, "gke_project", ""),
        getattr(facts, "gke_location", ""),
        getattr(facts, "gke_cluster", ""),
    )


class TwinApp:
    """Routes requests to the faces of one twin."""

    def __init__(
        self,
        core: TwinServices,
        token: str | None,
        server_address: str = "",
        inflight: inflight_limit.InFlight | None = None,
    ) -> None:
        self.core = core
        self.inflight = inflight or inflight_limit.InFlight()
        self.token = token
        self.server_address = server_address
        self.faces: dict[str | None, KubeFace] = {None: KubeFace(core)}
        self.dashboard = dashboard.Dashboard(core, token)
        self.authn = auth.Authenticator(token, lambda: core.settings.service_account_key)

    def face(self, cluster: str | None) -> KubeFace:
        if cluster not in self.faces:
            self.faces[cluster] = KubeFace(self.core, cluster)
        return self.faces[cluster]

    def admin(self, request: Request) -> bool:
        """The twin's own token: the GKE face and the dashboard take nothing else (the dashboard's pages also
        a login session's cookie: browsers cannot send a bearer header when they navigate)."""
        if self.token is None or self.authn.admin(request.headers.get("authorization", "")):
            request.scope["flexq.bearer"] = True
            return True
        return dashboard.handles(url_path(request)) and self.dashboard.session_valid(
            request.cookies.get(dashboard.COOKIE, "")
        )

    def authorized(self, request: Request) -> bool:
        """Whether the request's credentials are the twin's own (kept for the dashboard's callers)."""
        return url_path(request) in PUBLIC or self.admin(request)

    def user(self, request: Request, info: RequestInfo) -> UserInfo:
        """Authentication, then impersonation, then authorization of a Kubernetes request (what it asks is
        ``info``): the user it acts as (401, 403 or 400 raised as ``ApiError``)."""
        header = request.headers.get("authorization", "")
        if self.authn.admin(header):
            user = auth.ADMIN
            view: ServedCluster | None = None
        else:
            try:
                view = self.core.current(info.cluster)
            except (KeyError, NotFound):
                raise Unauthorized("Unauthorized") from None
            found = self.authn.user(header, view.store, issuer_of(view), self.core.loop.now())
            if found is None:
                raise Unauthorized("Unauthorized")
            user = found
        if any(k.startswith("impersonate-") for k in request.headers):
            view = view or self.core.current(info.cluster)
            user = auth.impersonate(user, request.headers, view.store)
        if not privileged(user):  # system:masters needs no lookup (rbac.authorize would allow it too)
            view = view or self.core.current(info.cluster)
            auth.check(view.store, info.attributes(user))
        request.scope[USER] = user
        return user

    def gate(self, info: RequestInfo, headers: list[tuple[str, str]]) -> dict[str, Any] | None:
        """``user`` for a request the protocol takes over before ASGI sees it (a port-forward's upgrade)."""
        scope = {
            "type": "http",
            "method": "POST",
            "path": info.path,
            "query_string": b"",
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
        }
        try:
            self.user(Request(scope), info)
        except ApiError as err:
            return err.to_status()
        return None

    async def __call__(self, request: Request) -> Response:
        info = request_info(request.method, url_path(request), request.query_params)
        request.scope[INFO] = info
        path = info.path
        if dashboard.handles(path):
            if not self.admin(request):
                return await self.dashboard.unauthorized(request)
            return await self._guarded(request, path, lambda: self.dashboard.handle(request))
        if gke_face.is_gke_path(path):
            if not self.admin(request):
                return gke_face.google_error(
                    401,
                    "UNAUTHENTICATED",
                    "Request had invalid authentication credentials. Expected OAuth 2 access token.",
                )
            return await self._guarded(request, path, lambda: gke_face.handle(self.core, request))
        user: UserInfo | None = None
        if info.local_path not in PUBLIC:
            try:
                user = self.user(request, info)
            except ApiError as err:
                return status_response(err)
        try:
            slot = self.inflight.take(info, user)
        except inflight_limit.SlotsTaken:
            return inflight_limit.too_many_requests()
        try:
            return await self._guarded(request, path, lambda: self.kube(request, info))
        finally:
            self.inflight.give(slot)

    async def _guarded(self, request: Request, path: str, handler: Any) -> Response:
        try:
            response: Response = await handler()
            return response
        except ApiError as err:
            return status_response(err)
        except Exception as exc:  # the twin keeps serving whatever a request does
            log.exception("%s %s failed", request.method, path)
            return status_response(
                InternalError(
                    f"an error on the server ({type(exc).__name__}: {exc}) has "
                    "prevented the request from succeeding"
                )
            )

    async def kube(self, request: Request, info: RequestInfo) -> Response:
        face = self.face(info.cluster)
        p = info.local_path.rstrip("/") or "/"
        if p == "/version":
            return json_response(discovery.version_info(face.runtime().settings.gke_version))
        if p in ("/healthz", "/livez", "/readyz"):
            return await self.health(p[1:], request)
        if p == "/metrics":
            return await metrics_page.scrape(self.core.loop, face.runtime)
        if p == ETA_PATH:
            return self.forecast(request, face)
        if p == TWIN_PATH:
            if request.method not in ("GET", "HEAD"):
                raise MethodNotAllowed(
                    f"the server does not allow this method on the requested resource ({TWIN_PATH})"
                )
            return json_response(await on_loop(self.core.loop, face.runtime().declaration))
        if p.startswith("/openapi/"):
            return self.openapi(info, face, request.headers.get("accept", ""))
        if p in ("/api", "/apis"):
            if p == "/api" and request.method != "GET":
                return discovery.no_route()
            agg = discovery.wants_aggregated(request.headers.get("accept", ""))
            if agg:
                body = discovery.aggregated(face.kinds(), core=p == "/api", version=agg)
                ctype = discovery.AGGREGATED if agg == "v2" else discovery.AGGREGATED_BETA
                return json_response(body, media_type=ctype)
            if p == "/api":
                return json_response(discovery.api_versions(self.server_address))
            return json_response(discovery.api_group_list(face.kinds()))
        if p in ("/.well-known/openid-configuration", "/openid/v1/jwks"):
            return self.issuer_discovery(p, face)
        if not info.resource_request:
            return self.group_discovery(request, info, face)
        if info.error:
            raise NotFound("the server could not find the requested resource")
        if reviews.handles(info):
            return await self.review(request, info, face)
        if (info.api_group, info.resource, info.subresource) == ("", "serviceaccounts", "token"):
            return await self.token_request(request, info, face)
        return await face.handle(request, info)

    def forecast(self, request: Request, face: KubeFace) -> Response:
        """``GET /flexq/eta``: the twin's last forecast of the cluster (read on this thread: the service replaces
        it whole, serialised once per refresh); 404 when the twin keeps no forecast (no ETA service: a client
        computes its own), 503 when it has not made one of this cluster yet."""
        if request.method not in ("GET", "HEAD"):
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource ({ETA_PATH})"
            )
        forecasts: Forecasts | None = getattr(self.core, "forecasts", None)
        if forecasts is None:
            raise NotFound("the server could not find the requested resource")
        body = forecasts.forecast_json(face.runtime().name)
        if body is None:
            raise ServiceUnavailable("the twin's ETA service has not made a forecast of this cluster yet")
        return Response(body, media_type="application/json")

    def group_discovery(self, request: Request, info: RequestInfo, face: KubeFace) -> Response:
        """``/apis/<group>`` (an ``APIGroup``), ``/api/v1`` and ``/apis/<group>/<version>`` (an
        ``APIResourceList``): the non-resource requests under the API prefixes."""
        segs: tuple[str, ...] = info.segments if "" not in info.segments else ()
        if len(segs) == 2 and segs[0] == "apis":
            group = discovery.api_group(face.kinds(), segs[1])
            if group is not None:
                return json_response(group)
        elif (len(segs) == 2 and segs[0] == "api") or (len(segs) == 3 and segs[0] == "apis"):
            grp, version = ("", segs[1]) if len(segs) == 2 else (segs[1], segs[-1])
            doc = discovery.resource_list(face.kinds(), grp, version)
            if doc is not None:
                if request.method != "GET" and discovery.compiled_in(grp):
                    return discovery.no_route()
                return json_response(doc)
        raise NotFound("the server could not find the requested resource")

    async def health(self, name: str, request: Request) -> Response:
        """``/healthz``, ``/livez`` and ``/readyz`` as the API server's healthz handler answers them: ``ok``, or
        with ``?verbose`` each check's ``[+]<check> ok``; a failed check makes them a 500 listing ``[-]<check>
        failed: reason withheld``. The check here is the twin's loop: its thread runs, and (``/readyz``) it
        answers within a few seconds: a twin whose loop died never looks healthy."""
        loop_ok = loop_stopped(self.core.loop) is None
        if loop_ok and name == "readyz":
            try:
                await on_loop(self.core.loop, lambda: None, timeout=HEALTH_TIMEOUT)
            except ApiError:
                loop_ok = False
        checks = [("ping", True), ("flexq-loop", loop_ok)]
        lines = "".join(f"[+]{c} ok\n" if ok else f"[-]{c} failed: reason withheld\n" for c, ok in checks)
        headers = {"X-Content-Type-Options": "nosniff"}
        media = "text/plain; charset=utf-8"
        if not all(ok for _, ok in checks):
            return Response(f"{lines}{name} check failed\n".encode(), 500, headers, media)
        if "verbose" not in request.query_params:
            return Response(b"ok", 200, headers, media)
        return Response(f"{lines}{name} check passed\n".encode(), 200, headers, media)

    async def _decoded(self, request: Request) -> Any:
        """A create-only body: JSON, YAML or protobuf (kubectl's typed clients), within the API server's limit."""
        raw = await read_body(request)
        ctype = request.headers.get("content-type", "")
        if not raw.strip():
            return None
        if "protobuf" in ctype:
            return protobuf.decode(raw)
        return await decode_body_async(raw, ctype)

    async def review(self, request: Request, info: RequestInfo, face: KubeFace) -> Response:
        sent = await self._decoded(request) if request.method == "POST" else None
        view = face.runtime()
        store = view.store
        issuer = issuer_of(view)

        def token_user(token: str, audiences: list[str]) -> tuple[UserInfo | None, list[str]]:
            wanted = audiences or [issuer]
            if issuer not in wanted:
                return None, []
            who = self.authn.user(f"Bearer {token}", store, issuer, self.core.loop.now())
            return (None, []) if who is None or who is auth.ADMIN else (who, [issuer])

        body = reviews.review(
            request.method,
            info,
            sent,
            request_user(request),
            lambda attrs: auth.authorize(store, attrs),
            auth.StoreRoles(store),
            token_user,
        )
        return json_response(body, 201)

    async def token_request(self, request: Request, info: RequestInfo, face: KubeFace) -> Response:
        """``serviceaccounts/<name>/token``: create-only (the TokenRequest API)."""
        if info.verb != "create" or not info.name or not info.namespaced_path or len(info.parts) != 3:
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource ({request.method})"
            )
        signer = self.authn.signer()
        if signer is None:
            raise NotFound("the server could not find the requested resource")
        view = face.runtime()
        sent = await self._decoded(request)
        body = tokenrequest.token_request(
            view.store, info.namespace, info.name, sent, signer, issuer_of(view), self.core.loop.now()
        )
        return json_response(body, 201)

    def issuer_discovery(self, p: str, face: KubeFace) -> Response:
        """The ServiceAccount issuer's OpenID discovery document and its keys (``--service-account-issuer``)."""
        signer = self.authn.signer()
        if signer is None:
            raise NotFound("the server could not find the requested resource")
        if p == "/openid/v1/jwks":
            return json_response(signer.jwks(), media_type="application/jwk-set+json")
        issuer = issuer_of(face.runtime())
        return json_response(
            {
                "issuer": issuer,
                "jwks_uri": f"https://{self.server_address}/openid/v1/jwks",
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["ES256"],
            }
        )

    def openapi(self, info: RequestInfo, face: KubeFace, request_accept: str = "") -> Response:
        segs = tuple(s for s in info.segments if s)
        if segs == ("openapi", "v2"):
            if openapi_proto.wants(request_accept):
                return Response(openapi.v2_proto(face.kinds()), media_type=openapi_proto.ANSWER_TYPE)
            return Response(openapi.v2(face.kinds()), media_type="application/json")
        if segs == ("openapi", "v3"):
            prefix = f"/clusters/{info.cluster}" if info.cluster else ""
            return json_response(openapi.v3_index(face.kinds(), prefix))
        rest = segs[2:] if segs[:2] == ("openapi", "v3") else ()
        if len(rest) == 2 and rest[0] == "api":
            doc = openapi.v3_group_version(face.kinds(), "", rest[1])
        elif len(rest) == 3 and rest[0] == "apis":
            doc = openapi.v3_group_version(face.kinds(), rest[1], rest[2])
        else:
            doc = None
        if doc is None:
            raise NotFound("the server could not find the requested resource")
        return Response(doc, media_type="application/json")


def build_app(
    core: TwinServices,
    token: str | None,
    server_address: str = "",
    inflight: inflight_limit.InFlight | None = None,
) -> Any:
    """The ASGI application serving ``core`` (a ``TwinCore``); ``token`` None disables auth (tests).

    A bare ASGI callable rather than a Starlette application: every path goes to ``TwinApp``, which routes
    and turns every failure into a ``Status`` itself, so Starlette's router and its two error middlewares
    would only add a few function layers to each request (a fifth of a small request's time)."""
    twin_app = TwinApp(core, token, server_address, inflight)
    allowed = frozenset(METHODS)

    def portforward_gate(info: RequestInfo, headers: list[tuple[str, str]]) -> dict[str, Any] | None:
        """A port-forward upgrade's authentication and authorization (``create`` on ``pods/portforward``): the
        ``Status`` to refuse it with, else None."""
        return twin_app.gate(info, headers)

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan is off; websockets are not served
            return
        request = Request(scope, receive)
        if request.method not in allowed:
            response: Response = status_response(
                MethodNotAllowed(
                    f"the server does not allow this method on the requested resource ({request.method})"
                )
            )
            response.headers["Allow"] = ", ".join(METHODS)
        else:
            try:
                response = await twin_app(request)
            except Exception as exc:  # TwinApp answers every error itself; this is the last resort
                log.exception("%s %s failed", request.method, request.url.path)
                response = status_response(
                    InternalError(
                        f"an error on the server ({type(exc).__name__}) has "
                        "prevented the request from succeeding"
                    )
                )
        await response(scope, receive, send)

    app.portforward_gate = portforward_gate  # type: ignore[attr-defined]
    app.dashboard = twin_app.dashboard  # type: ignore[attr-defined]
    return app
