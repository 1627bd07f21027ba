"""Container logs (what ``kubectl logs`` reads): append-only text per (namespace, pod, container).

Kept in memory, and also in files under a directory for a live twin so that logs survive restarts
and other processes can follow them. Thread-safe: executors write from their own threads. Given a clock,
each write is stamped with its time (kept beside the log as ``<log>.times``: one ``<offset> <time>`` line per
write), which ``lines`` hands out per line, as the kubelet's CRI log files carry one per line (``kubectl logs
--timestamps`` / ``--since``).
Must not import flexq modules but ``flexq.store.private``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from flexq.store.private import private_dir


class PodLogs:
    """Append-only logs with followers."""

    def __init__(self, directory: str | Path | None = None, clock: Callable[[], float] | None = None) -> None:
        self._dir = Path(directory) if directory else None
        self._clock = clock
        self._text: dict[tuple[str, str, str], list[str]] = {}
        self._times: dict[tuple[str, str, str], list[tuple[int, float]]] = {}  # (offset, time) per write
        self._size: dict[tuple[str, str, str], int] = {}
        self._of_pod: dict[tuple[str, str], set[str]] = {}  # (namespace, pod) -> its containers with logs
        self._lock = threading.Condition()
        self._listeners: list[Callable[[str, str, str, str], None]] = []
        if self._dir is not None:
            private_dir(self._dir)  # owner-only, as the rest of the twin's state
            for f in sorted(self._dir.glob("*_*_*.log")):
                ns, pod, container = f.stem.split("_", 2)
                key = (ns, pod, container)
                self._text[key] = [f.read_text()]
                self._size[key] = len(self._text[key][0])
                self._of_pod.setdefault((ns, pod), set()).add(container)
                stamps = f.with_suffix(".times")
                if stamps.exists():
                    with contextlib.suppress(ValueError):
                        self._times[key] = [
                            (int(o), float(t))
                            for o, t in (ln.split() for ln in stamps.read_text().splitlines())
                        ]

    def write(self, namespace: str, pod: str, container: str, text: str) -> None:
        if not text:
            return
        key = (namespace, pod, container)
        with self._lock:
            offset = self._size.get(key, 0)
            self._text.setdefault(key, []).append(text)
            self._size[key] = offset + len(text)
            self._of_pod.setdefault((namespace, pod), set()).add(container)
            now = self._clock() if self._clock is not None else None
            if now is not None:
                self._times.setdefault(key, []).append((offset, now))
            if self._dir is not None:
                with open(self._dir / f"{namespace}_{pod}_{container}.log", "a") as fh:
                    fh.write(text)
                if now is not None:
                    with open(self._dir / f"{namespace}_{pod}_{container}.times", "a") as fh:
                        fh.write(f"{offset} {now!r}\n")
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

    def lines(self, namespace: str, pod: str, container: str) -> list[tuple[float | None, str]]:
        """The container's log as (time written, line) pairs, each line with its newline (the last one
        may lack it); the time is None for text written without a clock."""
        with self._lock:
            text = "".join(self._text.get((namespace, pod, container), []))
            stamps = list(self._times.get((namespace, pod, container), []))
        out: list[tuple[float | None, str]] = []
        pos, i, when = 0, 0, None
        for line in text.splitlines(keepends=True):
            while i < len(stamps) and stamps[i][0] <= pos:
                when = stamps[i][1]
                i += 1
            out.append((when, line))
            pos += len(line)
        return out

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
                self._times.pop(k, None)
                self._size.pop(k, None)
                if self._dir is not None:
                    (self._dir / f"{k[0]}_{k[1]}_{k[2]}.log").unlink(missing_ok=True)
                    (self._dir / f"{k[0]}_{k[1]}_{k[2]}.times").unlink(missing_ok=True)

    def subscribe(self, cb: Callable[[str, str, str, str], None]) -> None:
        with self._lock:
            self._listeners.append(cb)
