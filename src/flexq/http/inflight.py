"""The API server's limit on requests in flight (``--max-requests-inflight``, ``--max-mutating-requests-inflight``:
the ``WithMaxInFlightLimit`` filter).

Owns: ``InFlight`` — how many requests are being served, reads and writes counted apart; past either limit a
request gets ``429 Too many requests, please try again later.`` with ``Retry-After: 1`` (``tooManyRequests``).
As upstream, long-running requests (watches, and the ``log``, ``exec``, ``attach``, ``portforward`` and
``proxy`` subresources: ``BasicLongRunningRequestCheck``) are not counted, and a user in ``system:masters`` —
the twin's own token, so the local CLI — always gets an answer ("a super-admin or a loopback connection"):
that is the reserve no flood of other clients can take. Whether a request is long-running or a write is its
``RequestInfo``'s. Runs on the HTTP server's asyncio thread only (no lock). Must not import flexq modules other
than ``flexq.semantics.rbac`` and ``flexq.http.requestinfo``.
"""

from __future__ import annotations

from starlette.responses import Response

from flexq.http.requestinfo import RequestInfo
from flexq.semantics.rbac import UserInfo, privileged

MAX_REQUESTS_INFLIGHT = 400  # kube-apiserver's defaults
MAX_MUTATING_REQUESTS_INFLIGHT = 200


def too_many_requests() -> Response:
    return Response(
        b"Too many requests, please try again later.\n",
        429,
        {"Retry-After": "1", "X-Content-Type-Options": "nosniff"},
        "text/plain; charset=utf-8",
    )


class InFlight:
    """Counts the requests being served; ``take`` a slot before serving one, ``give`` it back after."""

    def __init__(
        self, reads: int = MAX_REQUESTS_INFLIGHT, writes: int = MAX_MUTATING_REQUESTS_INFLIGHT
    ) -> None:
        self.limits = {False: reads, True: writes}
        self.busy = {False: 0, True: 0}

    def take(self, info: RequestInfo, user: UserInfo | None) -> bool | None:
        """The slot a request holds (give it back with ``give``), None when it is not counted (a public path's,
        an exempt user's or a long-running one); raises ``SlotsTaken`` past the limit."""
        if user is None or privileged(user) or info.long_running:
            return None
        mutating = info.mutating
        if self.busy[mutating] >= self.limits[mutating]:
            raise SlotsTaken
        self.busy[mutating] += 1
        return mutating

    def give(self, slot: bool | None) -> None:
        if slot is not None:
            self.busy[slot] -= 1


class SlotsTaken(Exception):
    """Every slot of the request's kind is taken."""
