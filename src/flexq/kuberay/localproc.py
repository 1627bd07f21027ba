"""Host-side helpers for the local Ray executor: free ports, owned processes, pod files and environment.

Owns: choosing free TCP ports (Ray binds on every interface, so a port must be free on all of them), finding
and signalling the processes a pod started (every process the executor starts carries an owner marker in its
environment, inherited by Ray's raylet, workers and job drivers, so cleanup never touches anyone else's
processes), writing ConfigMap files of a pod to a local directory, and resolving a container's ``env``.
No waiting here (the executor owns time); must not import anything in flexq.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from pathlib import Path

OWNER_ENV = "FLEXQ_RAY_OWNER"

_port_lock = threading.Lock()
_ports_handed_out: set[int] = set()


def free_port() -> int:
    """A TCP port nobody listens on (checked on all interfaces), never handed out twice by this process."""
    with _port_lock:
        for _ in range(200):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("", 0))
                port = s.getsockname()[1]
            if port in _ports_handed_out or not port_is_free(port):
                continue
            _ports_handed_out.add(port)
            return port
    raise RuntimeError("no free TCP port found")


def release_ports(ports: list[int]) -> None:
    """Let ``free_port`` hand these ports out again."""
    with _port_lock:
        _ports_handed_out.difference_update(ports)


def port_is_free(port: int) -> bool:
    """True when nothing listens on ``port`` (binding it on all interfaces succeeds).

    ``SO_REUSEADDR`` as every server sets it: connections left in TIME_WAIT by a listener that has exited do not
    count (the kernel still refuses the bind while any socket listens on the port).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def owned_pids(marker_prefix: str) -> list[int]:
    """PIDs of live processes whose environment has ``FLEXQ_RAY_OWNER`` starting with ``marker_prefix``."""
    needle = f"{OWNER_ENV}={marker_prefix}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[-1].split()[0]
        except OSError:
            continue
        if state == b"Z":
            continue  # a zombie is already dead; its parent reaps it
        for item in environ.split(b"\0"):
            if item.startswith(needle):
                found.append(int(entry))
                break
    return found


def signal_pids(pids: list[int], sig: signal.Signals) -> None:
    """Send ``sig`` to each pid, ignoring those already gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def write_files(root: Path, files: dict[str, dict[str, str]]) -> dict[str, str]:
    """Materialise ``mountPath -> {name: content}`` under ``root``; returns ``mountPath -> local dir``."""
    mounts = {}
    for mount_path, content in sorted(files.items()):
        local = root / mount_path.strip("/").replace("/", "_")
        local.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(content.items()):
            target = local / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        mounts[mount_path] = str(local)
    return mounts


def container_env(pod: dict, container: dict) -> dict[str, str]:
    """A container's ``env`` with literal values and the simple ``fieldRef``s resolved (pod IP is loopback)."""
    meta = pod.get("metadata", {})
    fields = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": pod.get("spec", {}).get("nodeName", ""),
        "spec.serviceAccountName": pod.get("spec", {}).get("serviceAccountName", ""),
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
    }
    out = {}
    for item in container.get("env") or []:
        if "value" in item:
            out[item["name"]] = str(item["value"])
            continue
        ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", "")
        if ref in fields:
            out[item["name"]] = fields[ref]
        elif ref.startswith("metadata.labels['") or ref.startswith("metadata.annotations['"):
            kind, _, rest = ref.partition("['")
            out[item["name"]] = (meta.get(kind.split(".")[1]) or {}).get(rest.rstrip("']"), "")
    return out
