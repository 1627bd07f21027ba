"""Serving a live twin: uvicorn on a loopback port with the twin's TLS, and the files clients need.

Owns: ``Server`` (start in a background thread / stop), ``serve(core, home, host, port)`` (the blocking
runner ``flexq up`` uses: serves until SIGTERM/SIGINT), and what a served twin writes into its home —
``server.json`` (pid, url, port, CA, token file, kubeconfig, client environment), ``kubeconfig`` (context
``flexq``; contexts others add, such as ``gcloud container clusters get-credentials``, are kept) — plus
``client_env(home)``, the environment that points kubectl and gcloud at the twin. Sets
``core.settings.kube_endpoint`` (``127.0.0.1:<port>``) and ``core.settings.kube_ca_b64`` (``settings.serve``) for the GKE
backend to put in each cluster's ``endpoint`` and ``masterAuth.clusterCaCertificate``.
Must not import domain packages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import uvicorn
import yaml

from flexq.http.app import build_app
from flexq.http.common import loop_stopped
from flexq.http.inflight import MAX_MUTATING_REQUESTS_INFLIGHT, MAX_REQUESTS_INFLIGHT, InFlight
from flexq.http.kube import openapi
from flexq.http.kube.rest import KubeFace
from flexq.http.protocol import HEADER_TIMEOUT, protocol_class
from flexq.http.seam import TwinServices
from flexq.http.tls import Credentials, ensure_credentials
from flexq.store.private import GCLOUD_DIR, private_home, private_tree, write_private

log = logging.getLogger("flexq.http.server")

SERVER_FILE, KUBECONFIG_FILE, PID_FILE = "server.json", "kubeconfig", "pid"
CONTEXT = "flexq"


IDLE_TIMEOUT = 90  # the API server's IdleTimeout (http.DefaultTransport's keep-alive)
LAST_PORT_FILE = "last-port"  # kept after stop: a restarted twin takes its old port when free, so the GKE
# clusters' kubeconfig entries (written by `gcloud container clusters get-credentials`) stay valid


class Server:
    """One HTTPS listener serving a TwinCore (``port=0`` picks a free port)."""

    def _last_port(self) -> int:
        """The port this home's twin listened on last time (0: none recorded)."""
        try:
            return int((self.home / LAST_PORT_FILE).read_text().strip())
        except (OSError, ValueError):
            return 0

    def __init__(
        self,
        core: TwinServices,
        home: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tls: bool = True,
        auth: bool = True,
        header_timeout: float = HEADER_TIMEOUT,
        max_requests_inflight: int = MAX_REQUESTS_INFLIGHT,
        max_mutating_requests_inflight: int = MAX_MUTATING_REQUESTS_INFLIGHT,
    ) -> None:
        raise_open_file_limit()
        self.core, self.home, self.host = core, Path(home), host
        self.header_timeout = header_timeout
        private_home(self.home)
        self.creds: Credentials = ensure_credentials(self.home, core.loop.now())
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets that say so, and without
        # it every keep-alive response waits ~40 ms for the client's delayed ACK (Nagle)
        self.sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock.bind((host, port or self._last_port()))
        except OSError:
            if port:
                raise
            self.sock.bind((host, 0))  # the old port is taken: any free one
        self.sock.listen(512)
        self.port: int = self.sock.getsockname()[1]
        write_private(self.home / LAST_PORT_FILE, f"{self.port}\n")
        self.tls = tls
        hostport = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        self.url = f"{'https' if tls else 'http'}://{hostport}"
        core.settings.serve(hostport, self.creds.ca_b64, self.creds.sa_key)
        token = self.creds.token if auth else None
        self.app = build_app(
            core, token, hostport, InFlight(max_requests_inflight, max_mutating_requests_inflight)
        )
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            http=protocol_class(core, token, self.app.portforward_gate, header_timeout),
            ws="none",
            lifespan="off",
            timeout_keep_alive=IDLE_TIMEOUT,
            timeout_graceful_shutdown=2,
            ssl_certfile=str(self.creds.server_cert) if tls else None,
            ssl_keyfile=str(self.creds.server_key) if tls else None,
        )
        self.uvicorn = uvicorn.Server(config)
        self.thread: threading.Thread | None = None
        self.warmed = threading.Event()  # set once the OpenAPI documents are built (or failed to be)

    def start(self) -> Server:
        """Serve in a daemon thread; connections made before it is up wait in the listen backlog."""
        self.thread = threading.Thread(
            target=self._serve,
            name="flexq-http",
            daemon=True,
        )
        self.thread.start()
        threading.Thread(target=self._warm, name="flexq-openapi", daemon=True).start()
        return self

    def _serve(self) -> None:
        """The server's asyncio loop: uvloop's where installed (its TLS and transports are compiled, a good
        part of a small request's CPU in the standard loop), else the standard one; either way its TLS
        handshakes time out after ``header_timeout`` (Go's server gives a handshake its ReadHeaderTimeout),
        not asyncio's default minute."""
        factory = _loop_factory(self.header_timeout)
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(self.uvicorn.serve(sockets=[self.sock]))

    def _warm(self) -> None:
        """Build the OpenAPI documents ahead of the first kubectl (a few seconds of pydantic schema work), then the
        dashboard's index."""
        try:
            kinds = KubeFace(self.core).kinds()
            openapi.v3_index(kinds)
            openapi.v2(kinds)
            openapi.v2_proto(kinds)
        except Exception:  # only a cache: the first request builds it instead
            log.exception("warming the OpenAPI documents failed")
        finally:
            self.warmed.set()
        try:  # the dashboard's index of the root cluster: its first page renders as fast as the next
            self.app.dashboard.warm()
        except Exception:
            log.exception("warming the dashboard's index failed")

    def stop(self, timeout: float = 5.0) -> None:
        self.uvicorn.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout)
            if self.thread.is_alive():
                self.uvicorn.force_exit = True
                self.thread.join(timeout)
        self.sock.close()

    # -- files for clients ------------------------------------------------------------------------
    def kubeconfig_path(self) -> Path:
        return self.home / KUBECONFIG_FILE

    def write_files(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """``kubeconfig`` (upserting the ``flexq`` entries), ``server.json``, ``pid`` and ``pki/ca-bundle.crt``
        (the system's CAs plus the twin's, for clients such as gcloud whose ``REQUESTS_CA_BUNDLE`` would
        otherwise override their own CA setting); returns server.json."""
        write_kubeconfig(self.kubeconfig_path(), self.url, self.creds)
        bundle = write_ca_bundle(self.creds)
        # gcloud's configuration (CLOUDSDK_CONFIG): owner-only before it writes there
        private_tree(self.home / GCLOUD_DIR)
        info = {
            "pid": os.getpid(),
            "url": self.url,
            "host": self.host,
            "port": self.port,
            "ca": str(self.creds.ca_cert),
            "ca_bundle": str(bundle),
            "token_file": str(self.creds.token_file),
            "kubeconfig": str(self.kubeconfig_path()),
            "kueue": self.core.settings.kueue.tag,  # the Kueue release the twin runs (flexq up/env say it)
        }
        info.update(extra or {})
        info["env"] = client_env(self.home, info)
        write_private(self.home / SERVER_FILE, json.dumps(info, indent=2) + "\n")
        write_private(self.home / PID_FILE, f"{os.getpid()}\n")
        return info

    def remove_files(self) -> None:
        for name in (SERVER_FILE, PID_FILE):
            (self.home / name).unlink(missing_ok=True)


def raise_open_file_limit() -> None:
    """The soft limit on open files raised to the hard one, as Go's runtime does at the start of every program
    (so the API server's): each connection holds a file, and 1,024 idle ones must not lock every client out."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard and (hard == resource.RLIM_INFINITY or soft < hard):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not a POSIX system, or not allowed
        log.warning("could not raise the limit on open files", exc_info=True)


def _loop_factory(handshake_timeout: float) -> Any:
    """An asyncio loop factory whose servers give a TLS handshake ``handshake_timeout`` seconds."""
    try:
        import uvloop

        base: Any = uvloop.Loop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        base = asyncio.SelectorEventLoop

    class _Loop(base):
        async def create_server(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("ssl") is not None:
                kwargs.setdefault("ssl_handshake_timeout", handshake_timeout)
            return await super().create_server(*args, **kwargs)

    return _Loop


def _upsert(items: list[dict], name: str, key: str, value: dict) -> list[dict]:
    out = [i for i in items if i.get("name") != name]
    return [{"name": name, key: value}, *out]


def write_kubeconfig(path: Path, url: str, creds: Credentials) -> None:
    """Add or refresh the ``flexq`` cluster/user/context in ``path``; other entries stay."""
    cfg: dict[str, Any] = {}
    if path.exists():
        try:
            cfg = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError:
            cfg = {}
    cfg.setdefault("apiVersion", "v1")
    cfg.setdefault("kind", "Config")
    cfg.setdefault("preferences", {})
    cfg["clusters"] = _upsert(
        cfg.get("clusters") or [],
        CONTEXT,
        "cluster",
        {"server": url, "certificate-authority-data": creds.ca_b64},
    )
    cfg["users"] = _upsert(cfg.get("users") or [], CONTEXT, "user", {"tokenFile": str(creds.token_file)})
    cfg["contexts"] = _upsert(
        cfg.get("contexts") or [],
        CONTEXT,
        "context",
        {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
    )
    cfg.setdefault("current-context", CONTEXT)
    tmp = path.with_suffix(".tmp")
    write_private(tmp, yaml.safe_dump(cfg, sort_keys=False))
    tmp.replace(path)


def write_ca_bundle(creds: Credentials) -> Path:
    """``pki/ca-bundle.crt``: the CAs this process trusts (``$REQUESTS_CA_BUNDLE``, ``$SSL_CERT_FILE`` or
    certifi's) followed by the twin's CA."""
    system = ""
    for candidate in (os.environ.get("REQUESTS_CA_BUNDLE"), os.environ.get("SSL_CERT_FILE")):
        if candidate and Path(candidate).is_file():
            system = Path(candidate).read_text()
            break
    else:
        try:
            import certifi

            system = Path(certifi.where()).read_text()
        except ImportError:
            system = ""
    path = creds.ca_cert.with_name("ca-bundle.crt")
    write_private(path, system.rstrip("\n") + "\n" + creds.ca_pem if system else creds.ca_pem)
    return path


def client_env(home: str | Path, info: dict[str, Any] | None = None) -> dict[str, str]:
    """Environment pointing kubectl and gcloud at a served twin (from its ``server.json``)."""
    home = Path(home)
    if info is None:
        info = json.loads((home / SERVER_FILE).read_text())
    base = info["url"].rstrip("/") + "/"
    return {
        "KUBECONFIG": info["kubeconfig"],
        "CLOUDSDK_CONFIG": str(home / GCLOUD_DIR),
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER": base,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDRESOURCEMANAGER": base,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE": base,
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": info["token_file"],
        "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE": info.get("ca_bundle", info["ca"]),
        "REQUESTS_CA_BUNDLE": info.get("ca_bundle", info["ca"]),
        "USE_GKE_GCLOUD_AUTH_PLUGIN": "True",
    }


def serve(
    core: TwinServices,
    home: str | Path,
    host: str = "127.0.0.1",
    port: int = 0,
    ready: threading.Event | None = None,
    stop: threading.Event | None = None,
    extra: dict[str, Any] | None = None,
) -> int:
    """Serve ``core`` until SIGTERM or SIGINT (in the main thread) or until ``stop`` is set — ``flexq up``'s
    foreground body. Writes the client files once listening (``extra`` goes into ``server.json``; then sets
    ``ready``); removes ``server.json``
    and ``pid`` on the way out. The caller closes ``core``. Returns 0, or 1 when the HTTP server or the twin's
    loop stopped by itself: a twin whose loop died is not left serving errors (the process exits, and
    ``/healthz`` and ``/readyz`` fail until it has)."""
    server = Server(core, home, host, port).start()
    server.write_files(extra)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    log.info("serving the twin at %s", server.url)
    if ready is not None:
        ready.set()
    code = 0
    try:
        while not stop.wait(1.0):
            if server.thread is not None and not server.thread.is_alive():
                log.error("the HTTP server stopped unexpectedly")
                code = 1
                break
            if loop_stopped(core.loop) is not None:
                log.critical("the twin's event loop stopped; exiting (start the twin again with flexq up)")
                code = 1
                break
    finally:
        server.stop()
        server.remove_files()
    return code
