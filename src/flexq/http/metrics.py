"""``GET /metrics`` (and ``/clusters/<name>/metrics``): the cluster's Prometheus registry in the text format
0.0.4 — Kueue's metrics under Kueue's names and the twin's ``flexq_`` ones. The registry is the one the
assembly made for the cluster (``ClusterRuntime.metrics``); it is collected on the loop thread, where the
domains' collectors read their state. Must not import domain packages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import Response

from flexq.errors import NotFound
from flexq.http.common import on_loop
from flexq.loop import EventLoop


async def scrape(loop: EventLoop, runtime_of: Callable[[], Any]) -> Response:
    """The metrics page of the cluster ``runtime_of()`` returns."""

    def collect() -> bytes:
        registry = getattr(runtime_of(), "metrics", None)
        if registry is None:
            raise NotFound("the server could not find the requested resource")
        body: bytes = generate_latest(registry)
        return body

    return Response(await on_loop(loop, collect), media_type=CONTENT_TYPE_LATEST)
