"""Host-side helpers for the local Ray executor: free ports, owned processes, pod files and environment.

Owns: choosing free TCP ports (Ray binds on every interface, so a port must be free on all of them), finding
and signalling the processes a pod started (every process the executor starts carries an owner marker in its
environment, inherited by Ray's raylet, workers and job drivers, so cleanup never touches anyone else's
processes), writing ConfigMap files of a pod to a local directory, and resolving a container's ``env``.
No waiting here (the executor owns time); must not import anything in flexq.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import signal
import socket
import tempfile
import threading
from pathlib import Path

OWNER_ENV = "FLEXQ_RAY_OWNER"

_port_lock = threading.Lock()
_ports_handed_out: dict[int, int] = {}  # port -> the fd of its lock file (held while the port is ours)
# below Linux's ephemeral range (an outgoing connection may take a port there as its source between our check
# and Ray's bind) and above Ray's worker ports (10002-19999 by default)
_LOWEST = 20000


def free_port() -> int:
    """A TCP port nobody listens on (checked on all interfaces), never handed out twice on this machine while it
    is ours: each port handed out holds a lock file (``flock``) until ``release_ports`` or this process's end,
    so two twins (two processes) starting Ray clusters side by side never pick the same port between one's
    check and its Ray's bind (one Ray's dashboard would then answer for the other's cluster: 401). Ports come
    from below the ephemeral range, where no outgoing connection takes one as its source port meanwhile."""
    low, high = _port_range()
    with _port_lock:
        for attempt in range(400):
            if attempt < 300 and high >= low:
                port = low + secrets.randbelow(high - low + 1)  # not a simulation's draw: any port will do
            else:  # a crowded range: any port the kernel gives
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                    s.bind(("", 0))
                    port = s.getsockname()[1]
            if port in _ports_handed_out or not port_is_free(port):
                continue
            fd = _lock_port(port)
            if fd is None:
                continue  # another process holds it
            if not port_is_free(port):  # bound meanwhile by someone who takes no lock
                os.close(fd)
                continue
            _ports_handed_out[port] = fd
            return port
    raise RuntimeError("no free TCP port found")


def release_ports(ports: list[int]) -> None:
    """Let ``free_port`` hand these ports out again (here and in other processes)."""
    with _port_lock:
        for port in ports:
            fd = _ports_handed_out.pop(port, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _port_range() -> tuple[int, int]:
    """The ports ``free_port`` draws from: from 20000 up to just below the kernel's ephemeral range."""
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    return _LOWEST, max(_LOWEST, ephemeral - 1)


def _lock_dir() -> Path:
    d = Path(tempfile.gettempdir()) / f"flexq-ports-{os.getuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    return d


def _lock_port(port: int) -> int | None:
    """The fd of ``port``'s lock file, locked by this process (None: another process holds it). The lock goes
    with the fd (closed by ``release_ports``, or by the kernel when this process ends, however it ends)."""
    try:
        fd = os.open(_lock_dir() / f"{port}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


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
