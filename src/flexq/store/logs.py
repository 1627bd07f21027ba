"""Container logs (what ``kubectl logs`` reads): append-only text per (namespace, pod, container).

Kept in memory, and also in files under a directory for a live twin so that logs survive restarts
and other processes can follow them. Thread-safe: executors write from their own threads.
Must not import flexq modules but ``flexq.store.private``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from flexq.store.private import private_dir


class PodLogs:
    """Append-only logs with followers."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._dir = Path(directory) if directory else None
        self._text: dict[tuple[str, str, str], list[str]] = {}
        self._of_pod: dict[tuple[str, str], set[str]] = {}  # (namespace, pod) -> its containers with logs
        self._lock = threading.Condition()
        self._listeners: list[Callable[[str, str, str, str], None]] = []
        if self._dir is not None:
            private_dir(self._dir)  # owner-only, as the rest of the twin's state
            for f in sorted(self._dir.glob("*_*_*.log")):
                ns, pod, container = f.stem.split("_", 2)
                self._text[(ns, pod, container)] = [f.read_text()]
                self._of_pod.setdefault((ns, pod), set()).add(container)

    def write(self, namespace: str, pod: str, container: str, text: str) -> None:
        if not text:
            return
        with self._lock:
            self._text.setdefault((namespace, pod, container), []).append(text)
            self._of_pod.setdefault((namespace, pod), set()).add(container)
            if self._dir is not None:
                with open(self._dir / f"{namespace}_{pod}_{container}.log", "a") as fh:
                    fh.write(text)
            self._lock.notify_all()
            listeners = list(self._listeners)
        for cb in listeners:
            cb(namespace, pod, container, text)

    def read(self, namespace: str, pod: str, container: str | None = None) -> str:
        with self._lock:
            if container is None:
                keys = [(namespace, pod, c) for c in sorted(self._of_pod.get((namespace, pod), ()))]
                return "".join("".join(self._text[k]) for k in keys)
            return "".join(self._text.get((namespace, pod, container), []))

    def containers(self, namespace: str, pod: str) -> list[str]:
        with self._lock:
            return sorted(self._of_pod.get((namespace, pod), ()))

    def wait_for_more(
        self, namespace: str, pod: str, container: str | None, known: int, timeout: float
    ) -> str:
        """Block until the log grows past ``known`` characters (or timeout); returns the whole log."""
        with self._lock:
            self._lock.wait_for(lambda: len(self.read(namespace, pod, container)) > known, timeout=timeout)
            return self.read(namespace, pod, container)

    def delete(self, namespace: str, pod: str) -> None:
        with self._lock:
            for c in sorted(self._of_pod.pop((namespace, pod), ())):
                k = (namespace, pod, c)
                del self._text[k]
                if self._dir is not None:
                    (self._dir / f"{k[0]}_{k[1]}_{k[2]}.log").unlink(missing_ok=True)

    def subscribe(self, cb: Callable[[str, str, str, str], None]) -> None:
        with self._lock:
            self._listeners.append(cb)
