"""A non-blocking view of local Ray dashboards, for controllers that must never wait on HTTP.

Owns ``DashboardCache``: callers ask ``job_info`` (``GET /api/jobs/<id>``) or ``cluster_status`` (``GET
/api/cluster_status?format=1``, what ``ray status`` prints) and get the latest cached answer at once (None
until one is known); a daemon thread refreshes every asked-for entry twice a second and forgets those nobody
asked for in about a minute. ``address_of(namespace, cluster)`` says where a cluster's dashboard listens
(None while it has no ready head). Also the two tiny loopback HTTP helpers. Must not import anything in flexq.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable

_PERIOD_S = 0.5
_FORGET_ROUNDS = 120  # about 60 s without a question


class DashboardCache:
    """Cached answers of local Ray dashboards, refreshed by one poller thread."""

    def __init__(
        self,
        address_of: Callable[[str, str], str | None],
        headers_of: Callable[[str, str], dict[str, str]] | None = None,
    ) -> None:
        self._address_of = address_of
        self._headers_of = headers_of or (lambda ns, cluster: {})  # sent to a cluster (its Ray token)
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str, str], dict | None] = {}
        self._asked: dict[tuple[str, str, str], int] = {}
        self._round = 0
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def job_info(self, namespace: str, cluster: str, job_id: str) -> dict | None:
        """Latest job details for ``job_id`` on the cluster (None: unknown or not seen yet)."""
        return self._ask((namespace, cluster, job_id))

    def cluster_status(self, namespace: str, cluster: str) -> str | None:
        """Latest ``ray status`` text of the cluster (None: unknown)."""
        return (self._ask((namespace, cluster, "")) or {}).get("clusterStatus")

    def close(self) -> None:
        """Stop the poller."""
        self._closed.set()

    def _ask(self, key: tuple[str, str, str]) -> dict | None:
        with self._lock:
            self._asked[key] = self._round
            self._answers.setdefault(key, None)
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(target=self._run, name="ray-dashboard-poller", daemon=True)
                self._thread.start()
            return self._answers[key]

    def _run(self) -> None:
        while not self._closed.wait(_PERIOD_S):
            with self._lock:
                self._round += 1
                for key in [k for k, r in self._asked.items() if self._round - r > _FORGET_ROUNDS]:
                    del self._asked[key]
                    self._answers.pop(key, None)
                keys = list(self._asked)
            for ns, cluster, job_id in keys:
                addr = self._address_of(ns, cluster)
                info = None
                if addr is not None:
                    url = (
                        f"http://{addr}/api/jobs/{job_id}"
                        if job_id
                        else f"http://{addr}/api/cluster_status?format=1"
                    )
                    info = http_json(url, self._headers_of(ns, cluster))
                    if info is not None and not job_id:
                        info = info.get("data") or {}
                with self._lock:
                    if (ns, cluster, job_id) in self._asked and (info is not None or addr is None):
                        self._answers[(ns, cluster, job_id)] = info


def http_text(url: str, headers: dict[str, str] | None = None, timeout: float = 2.0) -> str | None:
    """Body of a 200 answer from a loopback URL, else None."""
    try:
        req = urllib.request.Request(url, headers=headers or {})
        with urllib.request.urlopen(req, timeout=timeout) as r:  # loopback only
            return r.read().decode() if r.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def http_json(url: str, headers: dict[str, str] | None = None) -> dict | None:
    """A JSON object from a loopback URL, else None."""
    text = http_text(url, headers)
    if text is None:
        return None
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        return data if isinstance(data, dict) else None
    return None
