"""The ASGI application of a served twin: one port for the Kubernetes API and the Google Cloud APIs.

Owns: bearer-token authentication (constant-time compare; ``/version``, ``/healthz``, ``/livez`` and
``/readyz`` are public, as the API server's default RBAC makes them), routing by path —
``/version``, ``/api``, ``/apis`` (legacy and aggregated discovery), ``/openapi/v2``, ``/openapi/v3...``,
``/api/v1/...`` and ``/apis/<group>/<version>/...`` (the Kubernetes face), ``/clusters/<name>/...`` (the same
for a named GKE cluster), ``/v1/...`` and friends (the GKE face), ``/metrics`` (the cluster's Prometheus registry) and ``/dashboard/...``
(the web dashboard, which also takes the token from its login cookie) — and turning every failure into a
Kubernetes ``Status`` (or a Google error) so that the twin keeps serving. Must not import domain packages.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from flexq.errors import ApiError, InternalError, MethodNotAllowed, NotFound, Unauthorized
from flexq.http import dashboard
from flexq.http import metrics as metrics_page
from flexq.http.common import decode_body_async, json_response, read_body, status_response, url_path
from flexq.http.gke import face as gke_face
from flexq.http.kube import discovery, openapi, paths, reviews
from flexq.http.kube.rest import KubeFace
from flexq.http.seam import TwinServices

log = logging.getLogger("flexq.http")

PUBLIC = {"/version", "/version/", "/healthz", "/livez", "/readyz"}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


class TwinApp:
    """Routes requests to the faces of one twin."""

    def __init__(self, core: TwinServices, token: str | None, server_address: str = "") -> None:
        self.core = core
        self.token = token
        self.server_address = server_address
        self.faces: dict[str | None, KubeFace] = {None: KubeFace(core)}
        self.dashboard = dashboard.Dashboard(core, token)

    def face(self, cluster: str | None) -> KubeFace:
        if cluster not in self.faces:
            self.faces[cluster] = KubeFace(self.core, cluster)
        return self.faces[cluster]

    def authorized(self, request: Request) -> bool:
        if self.token is None or url_path(request) in PUBLIC:
            return True
        auth = request.headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode()):
            return True
        # the dashboard's pages: browsers cannot send a bearer header when they navigate, so the login form
        # sets the token as an HttpOnly, SameSite=Strict cookie that only the dashboard's paths accept
        cookie = request.cookies.get(dashboard.COOKIE, "")
        return (
            dashboard.handles(url_path(request))
            and bool(cookie)
            and hmac.compare_digest(cookie.encode(), self.token.encode())
        )

    async def __call__(self, request: Request) -> Response:
        path = url_path(request)
        if dashboard.handles(path) and not self.authorized(request):
            return await self.dashboard.unauthorized(request)
        if not self.authorized(request):
            if gke_face.is_gke_path(path):
                return gke_face.google_error(
                    401,
                    "UNAUTHENTICATED",
                    "Request had invalid authentication credentials. Expected OAuth 2 access token.",
                )
            return status_response(Unauthorized("Unauthorized"))
        try:
            if gke_face.is_gke_path(path):
                return await gke_face.handle(self.core, request)
            if dashboard.handles(path):
                return await self.dashboard.handle(request)
            cluster = None
            if path.startswith("/clusters/"):
                parts = path.split("/", 3)
                cluster, path = parts[2], "/" + (parts[3] if len(parts) > 3 else "")
            return await self.kube(request, path, cluster)
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

    async def kube(self, request: Request, path: str, cluster: str | None) -> Response:
        face = self.face(cluster)
        p = path.rstrip("/") or "/"
        if p == "/version":
            return json_response(discovery.version_info(face.runtime().settings.gke_version))
        if p in ("/healthz", "/livez", "/readyz"):
            return Response(b"ok", media_type="text/plain")
        if p == "/metrics":
            return await metrics_page.scrape(self.core.loop, face.runtime)
        if p.startswith("/openapi/"):
            return self.openapi(p, face, cluster)
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
        if reviews.handles(p):
            sent = None
            if request.method == "POST":  # a body within the API server's limit; JSON must be JSON
                raw = await read_body(request)
                ctype = request.headers.get("content-type", "")
                # protobuf (typed clients): nothing of it is needed
                if raw.strip() and "protobuf" not in ctype:
                    sent = await decode_body_async(raw, ctype)
            return json_response(reviews.review(request.method, p, sent), 201)
        parts = [x for x in p.split("/") if x]
        if len(parts) == 2 and parts[0] == "apis":
            group = discovery.api_group(face.kinds(), parts[1])
            if group is None:
                raise NotFound("the server could not find the requested resource")
            return json_response(group)
        target = paths.parse(p)
        if target is None:
            raise NotFound("the server could not find the requested resource")
        if not target.resource:
            doc = discovery.resource_list(face.kinds(), target.group, target.version)
            if doc is None:
                raise NotFound("the server could not find the requested resource")
            if request.method != "GET" and discovery.compiled_in(target.group):
                return discovery.no_route()
            return json_response(doc)
        return await face.handle(request, target)

    def openapi(self, p: str, face: KubeFace, cluster: str | None = None) -> Response:
        if p == "/openapi/v2":
            return Response(openapi.v2(face.kinds()), media_type="application/json")
        if p == "/openapi/v3":
            return json_response(openapi.v3_index(face.kinds(), f"/clusters/{cluster}" if cluster else ""))
        rest = p[len("/openapi/v3/") :].split("/")
        if rest[0] == "api" and len(rest) == 2:
            doc = openapi.v3_group_version(face.kinds(), "", rest[1])
        elif rest[0] == "apis" and len(rest) == 3:
            doc = openapi.v3_group_version(face.kinds(), rest[1], rest[2])
        else:
            doc = None
        if doc is None:
            raise NotFound("the server could not find the requested resource")
        return Response(doc, media_type="application/json")


def build_app(core: TwinServices, token: str | None, server_address: str = "") -> Any:
    """The ASGI application serving ``core`` (a ``TwinCore``); ``token`` None disables auth (tests).

    A bare ASGI callable rather than a Starlette application: every path goes to ``TwinApp``, which routes
    and turns every failure into a ``Status`` itself, so Starlette's router and its two error middlewares
    would only add a few function layers to each request (a fifth of a small request's time)."""
    twin_app = TwinApp(core, token, server_address)
    allowed = frozenset(METHODS)

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

    return app
