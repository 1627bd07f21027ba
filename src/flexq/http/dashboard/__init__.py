"""The web dashboard a served twin shows at ``/dashboard/``: queues, workloads and their plans, why they wait,
ProvisioningRequests on a timeline, node pools by provisioning model, cost so far; one page per workload with
its conditions and events. Live: the page listens to ``/dashboard/events`` (server-sent events fired by the
cluster store's watch) and re-fetches the changed part with htmx; it also refreshes every 15 s, for cost.

Why server-rendered templates (Jinja2) + htmx: no build step and no Node toolchain on the user's machine, one
52 KB script committed as it is published (``static/htmx.min.js``, BSD Zero Clause, with its SSE extension),
the HTML is the same as a test reads it, and every view is a plain GET the token guards like the API.

Authentication: the twin's own token (the API's cluster admin). Browsers cannot send a bearer header when they
navigate, so ``/dashboard/login`` takes the token in a form — or a one-time login code — and answers with a
session cookie (a random id, not the token; HttpOnly, SameSite=Strict, Secure over HTTPS, Path=/dashboard) that
only the dashboard's paths accept, for 12 hours or until ``/dashboard/logout``. ``flexq dashboard`` never puts
the token where another local user could read it (a browser's command line is in ``ps``): holding the token, it
asks ``POST /dashboard/login-codes`` (bearer only) for a code that works once within 60 seconds, writes a page
that posts it to the login form into an owner-only file, and opens that file — as Jupyter opens its
``jpserver-*-open.html``.

Owns routing and rendering; the data comes from the store (``views.py``) and the cluster's metrics registry.
Must not import domain packages.
"""

from __future__ import annotations

import asyncio
import gzip
import hmac
import json
import secrets
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from flexq.clock import WallClock, format_duration
from flexq.errors import NotFound
from flexq.http.common import on_loop, read_body
from flexq.http.dashboard import views
from flexq.http.dashboard.index import StoreIndex

__all__ = ["Dashboard", "handles", "COOKIE", "PREFIX"]

PREFIX = "/dashboard"
COOKIE = "flexq_dashboard"
HERE = Path(__file__).parent
STATIC = {
    "htmx.min.js": "text/javascript",
    "htmx-ext-sse.js": "text/javascript",
    "dashboard.css": "text/css",
    "htmx.LICENSE.txt": "text/plain",
    "htmx-ext-sse.LICENSE.txt": "text/plain",
}
PUBLIC = {f"{PREFIX}/login", f"{PREFIX}/static/dashboard.css"}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'"
)
SSE_LIFETIME = 600.0  # seconds one event stream stays open (the browser reconnects)
_WALL = WallClock()  # logins expire in wall time, whatever the twin's clock
CODE_SECONDS = 60.0  # a one-time login code's life
SESSION_SECONDS = 12 * 3600.0  # a login's life
MAX_PENDING = 64  # login codes and sessions each: the oldest go first
# the cost figures (a collection of the cluster's metrics on the loop, ~35 ms with 8,000 workloads) are reused this
# long: the page refreshes itself every 15 s for them
COST_SECONDS = 15.0
SSE_KEEPALIVE = 15.0
WATCHED = ["Workload", "ClusterQueue", "LocalQueue", "Cohort", "ProvisioningRequest", "Node", "Event"]


def handles(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def is_public(path: str) -> bool:
    return path in PUBLIC


class Dashboard:
    """The dashboard of one served twin."""

    def __init__(self, core: Any, token: str | None) -> None:
        self.core, self.token = core, token
        # one-time login codes and sessions: random ids -> when they stop working (wall-clock seconds, never the
        # twin's time; lost with the process, as a login should be)
        self.codes: dict[str, float] = {}
        self.sessions: dict[str, float] = {}
        # id(store) -> its index (a store lives as long as its cluster); cluster -> (until, cost figures)
        self.indexes: dict[int, StoreIndex] = {}
        self._costs: dict[str | None, tuple[float, views.Costs]] = {}
        self.env = Environment(
            loader=FileSystemLoader(str(HERE / "templates")),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["wait"] = format_duration
        self.env.filters["usd"] = lambda v: f"${v:,.2f}"

    # -- logins -------------------------------------------------------------------------------------------
    @staticmethod
    def _issue(table: dict[str, float], seconds: float) -> str:
        now = _WALL.now()
        for key in [k for k, until in table.items() if until <= now]:
            del table[key]
        while len(table) >= MAX_PENDING:
            del table[next(iter(table))]
        key = secrets.token_urlsafe(32)
        table[key] = now + seconds
        return key

    def session_valid(self, cookie: str) -> bool:
        """Whether ``cookie`` is a live session of this server."""
        until = self.sessions.get(cookie) if cookie else None
        return until is not None and until > _WALL.now()

    def _redeem(self, code: str) -> bool:
        until = self.codes.pop(code, None) if code else None
        return until is not None and until > _WALL.now()

    def login_code(self) -> dict[str, Any]:
        """A code the login form takes once, within ``CODE_SECONDS``."""
        return {"code": self._issue(self.codes, CODE_SECONDS), "expiresInSeconds": int(CODE_SECONDS)}

    # -- responses ----------------------------------------------------------------------------------------
    def page(self, template: str, status: int = 200, request: Request | None = None, **ctx: Any) -> Response:
        body = self.env.get_template(template).render(prefix=PREFIX, **ctx).encode()
        return _maybe_gzip(
            request,
            body,
            status,
            "text/html; charset=utf-8",
            {
                "Content-Security-Policy": CSP,
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )

    async def unauthorized(self, request: Request) -> Response:
        """A request without the token: the login page (and its assets) or a way to it."""
        path = request.url.path
        if is_public(path):
            return await self.handle(request)
        if request.headers.get("hx-request"):
            return Response("", status_code=401, headers={"HX-Redirect": f"{PREFIX}/login"})
        if request.method == "GET":
            return RedirectResponse(f"{PREFIX}/login", status_code=303)
        return Response("Unauthorized", status_code=401, media_type="text/plain")

    async def handle(self, request: Request) -> Response:
        path = request.url.path.rstrip("/") or "/"
        cluster = request.query_params.get("cluster") or None
        page = _page_number(request.query_params.get("page"))
        if path == PREFIX:
            if not request.url.path.endswith("/"):
                return RedirectResponse(f"{PREFIX}/", status_code=307)
            return await self.render("index.html", request, await self.data(cluster, page))
        rest = path[len(PREFIX) + 1 :]
        if rest == "login":
            return await self.login(request)
        if rest == "login-codes":
            if request.method != "POST" or not request.scope.get("flexq.bearer"):
                return Response("a login code takes a POST with the twin's token", status_code=405)
            return Response(
                json.dumps(self.login_code()),
                media_type="application/json",
                headers={"Cache-Control": "no-store"},
            )
        if rest == "logout":
            self.sessions.pop(request.cookies.get(COOKIE, ""), None)
            resp = RedirectResponse(f"{PREFIX}/login", status_code=303)
            resp.delete_cookie(COOKIE, path=PREFIX)
            return resp
        if rest.startswith("static/"):
            name = rest[len("static/") :]
            if name not in STATIC:
                raise NotFound("the server could not find the requested resource")
            return _maybe_gzip(
                request,
                (HERE / "static" / name).read_bytes(),
                200,
                STATIC[name],
                {"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"},
            )
        if rest == "part/overview":
            return await self.render("overview.html", request, await self.data(cluster, page))
        if rest == "events":
            self._known(cluster)
            return StreamingResponse(
                self.events(cluster),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            )
        parts = rest.split("/")
        if len(parts) == 3 and parts[0] == "workloads":
            return await self.render(
                "workload.html", request, await self.workload(cluster, parts[1], parts[2])
            )
        if len(parts) == 4 and parts[:2] == ["part", "workload"]:
            return await self.render(
                "workload_part.html", request, await self.workload(cluster, parts[2], parts[3])
            )
        raise NotFound("the server could not find the requested resource")

    async def login(self, request: Request) -> Response:
        if request.method != "POST":
            return self.page("login.html", error="")
        form = parse_qs((await read_body(request, 16 * 1024)).decode("utf-8", "replace"))
        code = (form.get("code") or [""])[0].strip()
        if code:
            if not self._redeem(code):
                return self.page(
                    "login.html",
                    status=401,
                    error="That login code has been used or has expired: run flexq dashboard again.",
                )
            # posted from the page `flexq dashboard` wrote (another site, for the browser): a page of our own
            # moves on to the dashboard, so the SameSite=Strict cookie goes with that navigation
            resp: Response = self.page("logged_in.html", request=request)
        else:
            given = (form.get("token") or [""])[0].strip()
            if self.token is not None and not hmac.compare_digest(given.encode(), self.token.encode()):
                return self.page("login.html", status=401, error="That token is not the twin's token.")
            resp = RedirectResponse(f"{PREFIX}/", status_code=303)
        session = self._issue(self.sessions, SESSION_SECONDS)
        resp.set_cookie(
            COOKIE,
            session,
            max_age=int(SESSION_SECONDS),
            path=PREFIX,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return resp

    # -- data ----------------------------------------------------------------------------------------------
    async def index(self, cluster: str | None) -> StoreIndex:
        """The cluster's ``StoreIndex``: subscribed on the loop the first time it is asked for, filled off it."""
        store = self.core.current(cluster).store
        found = self.indexes.get(id(store))
        if found is not None and found.store is store:
            return found

        def subscribe() -> StoreIndex:
            index = StoreIndex(store)
            index.subscribe()
            return index

        index = await on_loop(self.core.loop, subscribe)
        await asyncio.to_thread(index.fill)
        old = self.indexes.get(id(store))
        if old is not None and old.store is store:  # another request made one meanwhile
            self.core.loop.post(index.stop)
            return old
        self.indexes[id(store)] = index
        return index

    def warm(self) -> None:
        """Build the root cluster's index ahead of the first visit (on a thread of the server's own: the watch is
        subscribed on the loop, the lists are read here)."""
        store = self.core.current(None).store
        if id(store) in self.indexes:
            return
        index = StoreIndex(store)
        subscribed = threading.Event()

        def subscribe() -> None:
            index.subscribe()
            subscribed.set()

        self.core.loop.post(subscribe)
        if not subscribed.wait(60):
            return
        index.fill()
        if id(store) in self.indexes:
            self.core.loop.post(index.stop)
        else:
            self.indexes[id(store)] = index

    def _prune(self, clusters: list[str]) -> None:
        """Stop the indexes of clusters that are gone (each holds its store)."""
        live = set()
        for name in ["", *clusters]:
            try:
                live.add(id(self.core.current(name).store))
            except (KeyError, NotFound):
                continue
        for key in [k for k in self.indexes if k not in live]:
            self.core.loop.post(self.indexes.pop(key).stop)

    async def data(self, cluster: str | None, page: int = 1) -> dict[str, Any]:
        """The overview: the cost figures from the loop (reused for ``COST_SECONDS``), the rest read and built off
        it (``views``)."""
        index = await self.index(cluster)
        cached = self._costs.get(cluster)
        if cached is not None and cached[0] > _WALL.now():
            figures = cached[1]
        else:
            figures = await on_loop(self.core.loop, lambda: views.costs(self.core, cluster))
            self._costs[cluster] = (_WALL.now() + COST_SECONDS, figures)
            self._prune(figures.clusters)
        return await asyncio.to_thread(views.overview, self.core, cluster, figures, index, page)

    async def workload(self, cluster: str | None, namespace: str, name: str) -> dict[str, Any]:
        index = await self.index(cluster)
        return await asyncio.to_thread(views.workload_page, self.core, cluster, index, namespace, name)

    async def render(self, template: str, request: Request, data: dict[str, Any]) -> Response:
        """A page rendered off the server's event loop (a big page must not hold other requests back)."""
        return await asyncio.to_thread(lambda: self.page(template, request=request, **data))

    def _known(self, cluster: str | None) -> None:
        """404 for a cluster the twin does not have (as the API answers for ``/clusters/<name>/...``)."""
        try:
            self.core.current(cluster)
        except KeyError:
            raise NotFound(f'cluster "{cluster}" not found') from None

    async def events(self, cluster: str | None) -> AsyncIterator[bytes]:
        """``change`` whenever the cluster's objects change (at most every 0.3 s), a comment every 15 s."""
        aloop = asyncio.get_running_loop()
        changed = asyncio.Event()

        def callback(ev: Any) -> None:
            aloop.call_soon_threadsafe(changed.set)

        sub = await on_loop(self.core.loop, lambda: self.core.current(cluster).store.watch(callback, WATCHED))
        try:
            yield b"retry: 2000\n\n"
            deadline = aloop.time() + SSE_LIFETIME
            while aloop.time() < deadline:
                try:
                    await asyncio.wait_for(changed.wait(), timeout=SSE_KEEPALIVE)
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                await _pause(0.3)
                changed.clear()
                yield b"event: change\ndata: changed\n\n"
        finally:
            self.core.loop.post(sub.cancel)


def _page_number(raw: str | None) -> int:
    """``?page=N`` (1 when absent or not a small positive number)."""
    return int(raw) if raw and raw.isascii() and raw.isdigit() and len(raw) <= 6 and int(raw) > 0 else 1


def _maybe_gzip(
    request: Request | None, body: bytes, status: int, media_type: str, headers: dict[str, str]
) -> Response:
    """The body gzipped when the browser accepts it and it is worth it (pages and scripts, not the API)."""
    headers = dict(headers, Vary="Accept-Encoding")
    if request is not None and len(body) > 1024 and "gzip" in request.headers.get("accept-encoding", ""):
        body = gzip.compress(body, compresslevel=6)
        headers["Content-Encoding"] = "gzip"
    return Response(body, status_code=status, media_type=media_type, headers=headers)


async def _pause(seconds: float) -> None:
    """Let a burst of changes settle before telling the browser (asyncio's own timer, not the twin's clock)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    asyncio.get_running_loop().call_later(seconds, settle)
    await done
