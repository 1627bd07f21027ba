"""A local Ray node as the local Ray executor starts it: its ``ray start``, its environment and its token.

Owns the records of what the executor runs (``LocalCluster``: one RayCluster's Ray ports, head and token;
``LocalPod``: one pod run here, a Ray node or a RayJob's submitter) and what a node is started with:

- **``ray start``** (``ray_start_argv``): the pod's own ``ray start`` parameters (``num-cpus``, ``memory``,
  ``resources``...; ``commands.parse_ray_start``), but every address and port replaced: the cluster's GCS,
  dashboard and client ports, free ports per node for the agents, metrics, raylet and object manager, the node's
  own Ray temp dir, ``--disable-usage-stats``. A head runs ``ray start --head``; a worker joins
  ``127.0.0.1:<gcs>`` through ``WORKER_RAY_START``.
- **the environment** (``node_env``): a clean one, as a container's — nothing of the twin's own, the project's
  venv first on a system ``PATH``, then ``PodLaunch.env`` (what a GKE TPU host gives) and the pod's own env;
  ``JAX_PLATFORMS=cpu`` (there is no libtpu here), Ray's patience on a loaded machine (``PATIENT_RAY``).

Network exposure (docs/security.md). A pod's network is reachable only inside its cluster; here the local
equivalent is loopback, so KubeRay's ``--dashboard-host=0.0.0.0`` becomes ``127.0.0.1`` and every other Ray
server is kept on loopback with Ray's own settings: the head runs with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
(Ray then takes ``127.0.0.1`` as its node IP instead of the machine's address, and the GCS, raylet, object
manager, dashboard, agents, runtime-env agent, metrics servers and Ray Client server all bind to the node
IP); a worker, whose ``ray start`` refuses that setting, runs Ray's ``ray start`` with the one function that
turns a loopback address into the machine's own replaced, so ``--node-ip-address=127.0.0.1`` and the GCS
address ``127.0.0.1:<port>`` stay as given. JAX's distributed coordinator, which Ray Train starts in a training
job, is kept on loopback by a ``sitecustomize`` on the nodes' ``PYTHONPATH`` (``_SITECUSTOMIZE``, written by
``hooks_dir``; it also keeps a Ray Train worker's print to one line of the job's log, as Ray 2.53, the
tutorial's image, does). On top, Ray's token authentication is on (``RAY_AUTH_MODE=token``): every Ray gRPC
server and the dashboard refuse a request without the cluster's token — each cluster its own (``cluster_token``:
an HMAC of the executor's token, kept by ``ensure_token``), given to its processes by path
(``RAY_AUTH_TOKEN_PATH``, a 0600 file written by ``write_token``), so one cluster's processes cannot reach
another's.

No waiting and no process here (the executor starts and supervises them). Must not import anything in flexq but
``flexq.api``, ``flexq.runtime.executor`` and its own package.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from flexq.runtime.executor import PodKey, PodLaunch

from . import commands, localproc, names, podreaper

IN_CLUSTER_ENV = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS")
SYSTEM_PATH = os.pathsep.join(["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
# Ray's start-up and liveness timeouts assume an idle machine; on a loaded 2-core laptop its Python agents take
# longer than 30 s to come up and the raylet aborts ("Timed out waiting for file .../dashboard_agent_listen_port").
# These only make Ray wait longer; the twin has its own deadlines (start_timeout_s, gcs_wait_timeout_s).
PATIENT_RAY = {
    "RAY_agent_register_timeout_ms": "300000",
    "RAY_raylet_start_wait_time_s": "300",  # the raylet's wait for its agents' port files
    "RAY_worker_register_timeout_seconds": "300",
    "RAY_health_check_timeout_ms": "20000",
    "RAY_health_check_failure_threshold": "15",
    "RAY_enable_metrics_collection": "0",  # nobody scrapes a twin's Ray metrics; less work per node
}
# JAX's distributed coordinator (jax.distributed.initialize, which Ray Train's JaxTrainer calls on a TPU slice)
# binds [::]:<port> unless given a bind address, and the port is only chosen at run time. The Ray nodes get this
# ``sitecustomize`` on PYTHONPATH: once ``jax.distributed`` is imported, a coordinator whose address is loopback
# binds to that loopback address (an explicit bind address, or JAX_COORDINATOR_BIND_ADDRESS, still wins). And Ray
# Train's print patch prints a Train worker's line once, as the tutorial's Ray 2.53 does (``_patch_print``).
_SITECUSTOMIZE = '''"""Written by flexq's local Ray executor for the Ray nodes it starts (see flexq.kuberay.local_ray_executor)."""
import importlib.abc
import importlib.util
import inspect
import os
import sys

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _patch(module):
    original = module.initialize
    signature = inspect.signature(original)

    def initialize(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs)
        address = bound.arguments.get("coordinator_address") or os.environ.get("JAX_COORDINATOR_ADDRESS")
        if address and not bound.arguments.get("coordinator_bind_address") \\
                and not os.environ.get("JAX_COORDINATOR_BIND_ADDRESS"):
            host, _, port = address.rpartition(":")
            if host in _LOOPBACK:
                bound.arguments["coordinator_bind_address"] = f"{host}:{port}"
        return original(*bound.args, **bound.kwargs)

    initialize.__doc__ = original.__doc__
    module.initialize = initialize


def _patch_print(module):
    # Ray 2.60's Train print patch (ray-project/ray#61075) tees a worker's print to the original print when
    # sys.stdout is not sys.__stdout__, then logs it to the console as well: meant for a redirect_stdout(), it
    # also fires for the stream Ray's default_worker puts on the process's own file descriptor, so each line of
    # a Train worker reached the job's log twice. As the tutorial's image (Ray 2.53) does: once. A stream on the
    # process's own descriptor is not a redirection; a StringIO (no descriptor) still is.
    import logging

    original_print = module._original_print

    def own(stream, original):
        if stream is original:
            return True
        try:
            return stream.fileno() == original.fileno()
        except Exception:
            return False

    def redirected_print(*objects, sep=" ", end="\\n", file=None, flush=False):
        if file not in [sys.stdout, sys.stderr, None]:
            original_print(*objects, sep=sep, end=end, file=file, flush=flush)
            return
        if (file in (sys.stdout, None) and not own(sys.stdout, sys.__stdout__)) or (
            file is sys.stderr and not own(sys.stderr, sys.__stderr__)
        ):
            original_print(*objects, sep=sep, end=end, file=file, flush=flush)
        with module.print_context_manager(original_print):
            logging.getLogger().log(logging.INFO, sep.join(map(str, objects)), stacklevel=2)

    redirected_print.__doc__ = module.redirected_print.__doc__
    module.redirected_print = redirected_print


_PATCHES = {"jax.distributed": _patch, "ray.train.v2._internal.logging.patch_print": _patch_print}


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = _PATCHES.pop(name, None)
        if patch is None:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            if _PATCHES:
                sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


sys.meta_path.insert(0, _Finder())
'''
TOKEN_FILE = (
    "ray-auth-token"  # in the executor's directory unless the twin names one (FLEXQ_HOME/ray/auth_token)
)
# Ray's own settings that keep every server of a local node on loopback and make it ask for the token (module
# docstring). RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 goes to head nodes only: a worker's ``ray start`` refuses it.
LOOPBACK_HEAD_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# A worker's ``ray start``, except that 127.0.0.1 stays its node IP and GCS address: Ray's CLI replaces a loopback
# address by the machine's own (services.resolve_ip_for_localhost) unless the setting above is 0, which it
# refuses on a worker ("Multi-node Ray clusters are not supported"). One function, in that process only.
WORKER_RAY_START = (
    "import sys\n"
    "from ray._private import services\n"
    "services.resolve_ip_for_localhost = lambda host: host\n"
    "from ray.scripts.scripts import main\n"
    "sys.argv[0] = 'ray'\n"
    "sys.exit(main())\n"
)


@dataclass
class LocalCluster:
    """One local Ray cluster (a RayCluster): its ports, its head, its pods and its own token."""

    key: tuple[str, str]
    index: int
    gcs: int
    dashboard: int
    client: int
    head_ready: threading.Event = field(default_factory=threading.Event)
    head_mounts: dict[str, str] | None = None
    head: str = ""  # marker of the current head pod instance
    pods: set[str] = field(default_factory=set)  # markers of live pod instances (a restart is a new one)
    token: str = ""  # the cluster's own Ray token (cluster_token)
    token_file: Path = Path()  # where its processes read it (RAY_AUTH_TOKEN_PATH), owner-only

    def head_ports(self) -> dict[int, int]:
        """KubeRay's head ports (GCS, dashboard, client) and where this cluster's are on this machine."""
        return {
            names.PORT_GCS: self.gcs,
            names.PORT_DASHBOARD: self.dashboard,
            names.PORT_CLIENT: self.client,
        }

    def proxy_headers(self) -> dict[int, dict[str, str]]:
        """Ray's header for proxies, by port: a port-forward (authenticated by the twin) reaches the dashboard as
        a pod-network client does on GKE, without asking its user for the Ray token."""
        return {names.PORT_DASHBOARD: {"X-Ray-Authorization": f"Bearer {self.token}"}}


@dataclass
class LocalPod:
    """One pod the executor runs: a Ray node (head or worker) or a RayJob's submitter, and its processes."""

    key: PodKey
    kind: str  # head | worker | submitter
    launch: PodLaunch
    cluster: LocalCluster
    marker: str
    container: str
    dir: Path
    ports: list[int] = field(default_factory=list)
    phase: str = "Pending"
    ready: bool = False
    message: str = ""
    reason: str = ""
    exit_code: int | None = None
    proc: subprocess.Popen | None = None
    cgroup: podreaper.CgroupPod | None = None  # where the host allows one: every process of the pod
    supervised: bool = False  # else: proc is the pod's supervisor (podreaper.supervise)
    stopping: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


def hooks_dir(base_dir: Path) -> Path:
    """The directory holding the nodes' ``sitecustomize`` (written when missing or from another version)."""
    d = base_dir / "py"
    f = d / "sitecustomize.py"
    if not f.exists() or f.read_text() != _SITECUSTOMIZE:
        d.mkdir(parents=True, exist_ok=True)
        (d / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return d


def node_env(
    pod: LocalPod, *, python: str, extra_env: dict[str, str], node_tmp: Path, base_dir: Path
) -> dict[str, str]:
    """A clean environment, as a container's: nothing of the twin's own (no ``FLEXQ_HOME``, ``KUBECONFIG``,
    cloud credentials), a home and temporary directory in the pod's directory, this Python's virtualenv
    first on a system ``PATH``, then the node's and the pod's own variables. ``node_tmp``: the node's Ray temp
    dir; ``base_dir``: the executor's, where the nodes' ``sitecustomize`` is (``hooks_dir``)."""
    venv_bin = str(Path(python).parent)
    # TMPDIR in the node's short Ray temp dir: Unix socket paths (multiprocessing's forkserver, in Ray's
    # dashboard) must stay under 108 bytes
    home, tmp = pod.dir / "home", node_tmp / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": venv_bin + os.pathsep + SYSTEM_PATH,
        "VIRTUAL_ENV": str(Path(venv_bin).parent),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra_env)
    env.update(pod.launch.env)
    # The kubelet gives every pod the ``kubernetes`` Service's variables. A process here cannot be given its
    # ServiceAccount token at /var/run/secrets/kubernetes.io/serviceaccount, the one path in-cluster clients
    # read (client-go's rest.InClusterConfig, the kubernetes package's load_incluster_config), so with
    # KUBERNETES_SERVICE_HOST set they would find a cluster they cannot use — JAX's cluster detection then
    # fails every Ray Train run. The API's address stays in the docker-link variables (KUBERNETES_PORT...),
    # the token in the pod's own token files.
    for k in IN_CLUSTER_ENV:
        env.pop(k, None)
    containers = pod.launch.pod.get("spec", {}).get("containers") or [{}]
    own = localproc.container_env(pod.launch.pod, containers[0])
    env.update({k: v for k, v in own.items() if k not in ("RAY_ADDRESS", "RAY_IP", "FQ_RAY_IP", "RAY_PORT")})
    env.update(
        {
            "RAY_USAGE_STATS_ENABLED": "0",
            "JAX_PLATFORMS": "cpu",
            "RAY_COLOR_PREFIX": "0",
            "COLORFUL_DISABLE": "1",
        }
    )  # plain logs, like kubectl shows them
    # token auth for every Ray server, client and CLI of the pod (the pod's env cannot turn it off), the
    # token by path (not RAY_AUTH_TOKEN: it stays out of every process environment), and on heads the
    # loopback-only node IP
    for k in [k for k in env if k.startswith("RAY_AUTH_") or k in LOOPBACK_HEAD_ENV]:
        del env[k]
    env.update({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(pod.cluster.token_file)})
    if pod.kind == "head":
        env.update(LOOPBACK_HEAD_ENV)
    if pod.kind != "submitter":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hooks_dir(base_dir)), env.get("PYTHONPATH")) if p)
    env[localproc.OWNER_ENV] = pod.marker
    return env


def ray_start_argv(
    pod: LocalPod, tmp: Path, *, python: str, private_shm: bool, object_store_bytes: int
) -> list[str]:
    """The node's ``ray start --block`` (module docstring), its Ray temp dir ``tmp``; the node's own ports are
    chosen afresh (``pod.ports``: a retried start gets fresh ones). Without a private ``/dev/shm`` the object
    store goes to the temp dir."""
    spec = commands.parse_ray_start(pod.launch.pod)
    c = pod.cluster
    localproc.release_ports(pod.ports)  # a retried start gets fresh ports
    node_ports = [localproc.free_port() for _ in range(6)]
    pod.ports = node_ports
    ray = [str(Path(python).parent / "ray")] if pod.kind == "head" else [python, "-c", WORKER_RAY_START]
    argv = [
        *ray,
        "start",
        "--block",
        "--disable-usage-stats",
        "--node-ip-address=127.0.0.1",
        f"--temp-dir={tmp}",
        # no /dev/shm of its own: the object store in the node's temp dir (Ray would pick the shared one)
        *([] if private_shm else [f"--plasma-directory={tmp}"]),
        f"--object-store-memory={object_store_bytes}",
        f"--dashboard-agent-listen-port={node_ports[0]}",
        f"--dashboard-agent-grpc-port={node_ports[1]}",
        f"--metrics-export-port={node_ports[2]}",
        f"--runtime-env-agent-port={node_ports[3]}",
        f"--node-manager-port={node_ports[4]}",
        f"--object-manager-port={node_ports[5]}",
    ]
    if pod.kind == "head":
        argv += [
            "--head",
            f"--port={c.gcs}",
            "--include-dashboard=true",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={c.dashboard}",
            f"--ray-client-server-port={c.client}",
        ]
    else:
        argv += [f"--address=127.0.0.1:{c.gcs}"]
    if spec.num_cpus is not None:
        argv.append(f"--num-cpus={spec.num_cpus}")
    if spec.num_gpus is not None:
        argv.append(f"--num-gpus={spec.num_gpus}")
    if spec.memory is not None:
        argv.append(f"--memory={spec.memory}")
    if spec.resources:
        argv.append("--resources=" + json.dumps(spec.resources, separators=(",", ":"), sort_keys=True))
    if spec.labels:
        argv.append(f"--labels={spec.labels}")
    return argv


def ray_failures(tmp: Path) -> list[str]:
    """The errors in a node's own Ray logs (under its temp dir ``tmp``), a message per log file, the last ten
    lines each: what the pod's log says of a ``ray start`` that failed, before the temp dir goes."""
    found = []
    for name in ("raylet.err", "raylet.out", "gcs_server.err", "dashboard_agent.err"):
        for f in sorted(tmp.glob(f"session_*/logs/{name}"))[:1]:
            lines = [
                ln
                for ln in f.read_text(errors="replace").splitlines()
                if re.search(r"Check failed|\] F |\sE\s|\] E |rror|\*\*\*", ln) and "raylet(+" not in ln
            ]
            if lines:
                found.append(f"[flexq] errors in Ray's {name}:\n" + "\n".join(lines[-10:]))
    return found


def cluster_token(ray_token: str, namespace: str, cluster: str) -> str:
    """A local Ray cluster's own token: ``HMAC-SHA256(the executor's token, "<namespace>/<cluster>")``, so a
    process of one cluster (which must hold its cluster's token) cannot reach another's servers; whoever
    holds the executor's token (``ray/auth_token``: the twin's user) can derive any of them."""
    return hmac.new(ray_token.encode(), f"{namespace}/{cluster}".encode(), hashlib.sha256).hexdigest()


def ensure_token(path: Path) -> str:
    """The Ray token kept in ``path``: read if the file holds one, else generated (256 bits, as Ray's own
    ``generate_new_authentication_token``) and written owner-only (0600, in a directory made 0700)."""
    with contextlib.suppress(OSError):
        token = path.read_text().strip()
        if token:
            os.chmod(path, 0o600)
            os.chmod(path.parent, 0o700)
            return token
    token = secrets.token_hex(32)
    write_token(path, token)
    return token


def write_token(path: Path, token: str) -> None:
    """``token`` into ``path``, owner-only (0600, in a directory made 0700), replaced atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    os.replace(tmp, path)
