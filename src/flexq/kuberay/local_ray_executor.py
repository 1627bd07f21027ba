"""The local Ray executor: RayCluster pods become real Ray nodes on this machine, the submitter runs for real.

Owns the ``PodExecutor`` implementation for KubeRay's pods (recognised by their labels / commands):

- **head pod** (``ray.io/node-type: head``) → ``ray start --head --block`` with the pod's own ``ray start``
  parameters (``num-cpus``, ``memory``, ``resources``...), but every address and port replaced: free ports
  chosen per cluster (GCS, dashboard, client, agents, metrics), a Ray temp dir per node under this executor's
  directory, ``--disable-usage-stats``, and the project's venv first on ``PATH`` so job entrypoints' ``python``
  finds ``ray``. Ready once Ray says "Ray runtime started" and the dashboard answers ``/api/gcs_healthz``.
- **worker pod** → waits for its cluster's head (KubeRay's ``wait-gcs-ready`` init container: the pod stays
  ``Pending``), then ``ray start --address=127.0.0.1:<gcs>`` with the pod's resources and the environment a
  GKE TPU host gives (``PodLaunch.env``, then the pod's own env: ``TPU_WORKER_ID``, ``TPU_NAME``...).
  ``JAX_PLATFORMS=cpu`` is forced on every node: there is no libtpu here.
- **submitter pod** (the RayJob's batch Job) → its own shell script, run by ``bash``, after three rewrites
  (``commands.rewrite_submitter``): the cluster DNS address becomes the local dashboard, absolute mount paths
  of the head pod (``/app``) become the head's local copy of its ConfigMap files, and the runtime env is
  passed through the policy of ``runtime_env.py`` (its decisions are the first lines of the log). So the log
  holds what ``ray job submit`` / ``ray job logs --follow`` print, ending with ``Job '<id>' succeeded``.

Network exposure (docs/security.md). A pod's network is reachable only inside its cluster; here the local
equivalent is loopback, so KubeRay's ``--dashboard-host=0.0.0.0`` becomes ``127.0.0.1`` and every other Ray
server is kept on loopback with Ray's own settings: the head runs with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
(Ray then takes ``127.0.0.1`` as its node IP instead of the machine's address, and the GCS, raylet, object
manager, dashboard, agents, runtime-env agent, metrics servers and Ray Client server all bind to the node
IP); a worker, whose ``ray start`` refuses that setting, runs Ray's ``ray start`` with the one function that
turns a loopback address into the machine's own replaced, so ``--node-ip-address=127.0.0.1`` and the GCS
address ``127.0.0.1:<port>`` stay as given. JAX's distributed coordinator, which Ray Train starts in a training
job, is kept on loopback by a ``sitecustomize`` on the nodes' ``PYTHONPATH`` (``_SITECUSTOMIZE``; it also keeps a
Ray Train worker's print to one line of the job's log, as Ray 2.53, the tutorial's image, does). On top, Ray's
token authentication is on (``RAY_AUTH_MODE=token``): every Ray gRPC server and the dashboard refuse a request
without the cluster's token — each cluster its own (``cluster_token``: an HMAC of the executor's token,
``ray_token``, generated once), given to its processes by path (``RAY_AUTH_TOKEN_PATH``, a 0600 file in this
executor's ``tokens/``), so one cluster's processes cannot reach another's. Its own dashboard requests carry
it, and ``poll`` tells ``kubectl port-forward`` to add it (``PodRunState.http_headers``) so the dashboard
answers through a port-forward as it does on GKE, where nothing asks for a token.

Trust and confinement (docs/security.md). Only the pods KubeRay created are run here, as their controller chain
shows (``names.created_by_kuberay``, from ``PodLaunch.owners``), never a pod by its command: a RayCluster's
head and workers (whose command is not run: ``ray start`` is rebuilt from its parameters), and a RayJob's
submitter, whose script is rebuilt from the RayJob (``submitter_script``) and must be the pod's. Every process
gets a clean environment (``_env``) and runs confined (``confine``: Landlock; it and all it starts — Ray's
workers, the RayJob's entrypoint — read only the system, this Python and their pod's own directory, which holds
its ServiceAccount token as a pod's volume would, and never the twin's home).

A pod's processes are held by something they cannot shed (``podreaper``): its own cgroup v2 where this host
lets the twin make one, else a supervisor per pod (a child subreaper) — a process that starts with an empty
environment or double-forks away is still the pod's. Each pod has its own ``/dev/shm`` (a private tmpfs of 64 MiB,
or the size of a ``medium: Memory`` volume mounted there, freed with its last process) where the kernel allows
unprivileged user namespaces; elsewhere ``/dev/shm`` is not writable and Ray's object store goes to the node's
temp dir. Every process started also carries ``FLEXQ_RAY_OWNER=<executor>:<pod>`` in its environment (Ray's
raylet, workers and job drivers inherit it). ``stop`` SIGTERMs the pod's processes, SIGKILLs all that is left
after a grace period (``cgroup.kill``; the supervisor ends its own tree), then removes the node's temp dir and
releases its ports; a pod whose main process ended by itself has everything it left ended at once (as a
container's PID namespace does). Start, GCS wait and readiness have deadlines.

It also answers the RayJob controller's dashboard questions (``job_info``) from a cache refreshed by a
poller thread, so the controller never blocks on HTTP. It does not import ``ray`` at all: Ray runs in child
processes and is spoken to over HTTP. Must not import anything in flexq but ``flexq.api``, ``flexq.runtime.executor``
and its own package.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flexq.api.quantity import parse_quantity
from flexq.runtime.executor import PodKey, PodLaunch, PodRunState

from . import commands, confine, localproc, names, podreaper, pods, runtime_env
from .dashboard import DashboardCache, http_text

_STARTED = "Ray runtime started"
IN_CLUSTER_ENV = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS")
SYSTEM_PATH = os.pathsep.join(["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
NO_LANDLOCK = (
    "this kernel has no Landlock: the pod's processes run unconfined, and can read every file the twin's "
    "user can (docs/security.md)"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # Ray's CLI colours its output even into a pipe
# Ray's start-up and liveness timeouts assume an idle machine; on a loaded 2-core laptop its Python agents take
# longer than 30 s to come up and the raylet aborts ("Timed out waiting for file .../dashboard_agent_listen_port").
# These only make Ray wait longer; the twin has its own deadlines (start_timeout_s, gcs_wait_timeout_s).
_PATIENT_RAY = {
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
_START_SLOT = threading.Semaphore(1)
_START_ATTEMPTS = 3  # see LocalRayExecutor._acquire_start_slot
_MAX_TMP = 40  # Ray puts unix sockets under <temp>/session_<41 chars>/sockets/...: 107 bytes at most
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
class _Cluster:
    key: tuple[str, str]
    index: int
    gcs: int
    dashboard: int
    client: int
    head_ready: threading.Event = field(default_factory=threading.Event)
    head_mounts: dict[str, str] | None = None
    head: str = ""  # marker of the current head pod instance
    pods: set[str] = field(default_factory=set)  # markers of live pod instances (a restart is a new one)
    token: str = ""  # the cluster's own Ray token (LocalRayExecutor.cluster_token)
    token_file: Path = Path()  # where its processes read it (RAY_AUTH_TOKEN_PATH), owner-only


@dataclass
class _Pod:
    key: PodKey
    kind: str  # head | worker | submitter
    launch: PodLaunch
    cluster: _Cluster
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


class LocalRayExecutor:
    """Runs KubeRay head, worker and submitter pods as real local Ray processes (see module docstring)."""

    name = "local-ray"

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        python: str = sys.executable,
        object_store_bytes: int = 150_000_000,
        extra_env: dict[str, str] | None = None,
        start_timeout_s: float = 180.0,
        gcs_wait_timeout_s: float = 600.0,
        grace_s: float = 3.0,
        token_file: Path | None = None,
        protected: Sequence[Path] = (),
        isolation: str = "auto",
        private_shm: bool | None = None,
        scratch_bytes: int = 10 * 1024**3,
        scratch_check_s: float = 5.0,
    ) -> None:
        self._own_base = base_dir is None  # a private temp dir, removed whole on shutdown
        self.base_dir = Path(tempfile.mkdtemp(prefix="flexq-ray-")) if base_dir is None else Path(base_dir)
        self._own_token = token_file is None  # a token of this executor only, removed with its directory
        self.token_file = Path(token_file) if token_file is not None else self.base_dir / TOKEN_FILE
        self.ray_token = ensure_token(self.token_file)
        # paths no rule of a pod may open (the twin's home; the user's kube and cloud credentials)
        self.protected = [
            *protected,
            Path.home() / ".kube",
            Path.home() / ".config",
            self.base_dir / TOKEN_FILE,
        ]
        self.python = python
        self.object_store_bytes = object_store_bytes
        # Ray Train's controller polls workers every 2 s by default; 0.25 s cuts ~8 s from a short job and
        # changes nothing else (research/ray-local.md §2).
        self.extra_env = {"RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25", **_PATIENT_RAY, **(extra_env or {})}
        self.start_timeout_s = start_timeout_s
        self.gcs_wait_timeout_s = gcs_wait_timeout_s
        self.grace_s = grace_s
        self._token = f"{os.getpid()}-{id(self):x}"
        self._lock = threading.RLock()
        self._pods: dict[PodKey, _Pod] = {}
        self._clusters: dict[tuple[str, str], _Cluster] = {}
        self._next = 0
        self._ray_root: Path | None = None
        self._dash = DashboardCache(self.dashboard_address, self.auth_headers)
        self._shut = False
        # what a pod's processes cannot shed (podreaper): a cgroup v2 of its own where this host lets us make
        # one ("auto"), else a supervisor per pod ("supervisor", also forced for tests)
        if isolation not in ("auto", "supervisor"):
            raise ValueError(f"isolation: must be 'auto' or 'supervisor', not {isolation!r}")
        self._cgroups = (
            podreaper.cgroup_root(f"flexq-{os.getpid()}-{id(self):x}") if isolation == "auto" else None
        )
        # each pod's own /dev/shm (a private bounded tmpfs) where the kernel allows it; else none writable
        self.private_shm = podreaper.private_shm_works() if private_shm is None else private_shm
        # a pod's disk (its directory and its node's Ray temp dir): bounded as the kubelet bounds ephemeral
        # storage, by looking at its usage every scratch_check_s and evicting a pod past its limit
        self.scratch_bytes, self.scratch_check_s = scratch_bytes, scratch_check_s
        self._watch: threading.Thread | None = None

    # ------------------------------------------------------------------------------------- protocol

    def accepts(self, pod: dict, owners: Sequence[dict] = ()) -> bool:
        """The pods KubeRay created (``names.created_by_kuberay``: by their controller chain, never by their
        command) — RayCluster heads and workers, RayJob submitters — unless simulated (run-seconds). Any other
        pod, whatever ``ray job submit`` its command says, is never run on this machine."""
        if names.is_simulated(pod):
            return False
        return names.created_by_kuberay(pod, owners) is not None

    def start(self, launch: PodLaunch) -> None:
        """Record the pod and start it in its own thread."""
        meta = launch.pod["metadata"]
        key: PodKey = (meta.get("namespace", "default"), meta["name"])
        labels = meta.get("labels") or {}
        kind = names.created_by_kuberay(launch.pod, launch.owners)
        with self._lock:
            if key in self._pods and not self._pods[key].done.is_set():
                return
            if self._shut:  # the twin is stopping: nothing new may start (it would outlive shutdown)
                return
            script, refused = "", ""
            if kind is None:
                refused = (
                    "the local Ray executor runs only the pods KubeRay creates for a RayCluster or a RayJob"
                )
                kind = "submitter"
            if kind == "submitter":
                script, why = submitter_script(launch) if not refused else ("", refused)
                refused = refused or why
                target = commands.submitter_target(script)
                svc_ns, svc = commands.service_of_host(target[0], key[0]) if target else (key[0], "")
                cname = names.cluster_of_service(svc) or svc
                cluster = self._cluster((svc_ns, cname))
            else:
                cluster = self._cluster((key[0], labels[names.LABEL_CLUSTER]))
            self._next += 1
            containers = launch.pod.get("spec", {}).get("containers") or [{}]
            pod = _Pod(
                key=key,
                kind=kind,
                launch=launch,
                cluster=cluster,
                container=containers[0].get("name", ""),
                marker=f"{self._token}:{self._next}",
                dir=self.base_dir / "pods" / key[0] / f"{key[1]}-{self._next}",
            )
            self._pods[key] = pod
            cluster.pods.add(pod.marker)
            if kind == "head":
                cluster.head = pod.marker
        if refused:  # never run: failed at once, saying why
            self._log(pod, f"[flexq] not run on this machine: {refused}")
            self._finish(pod, 126, reason="NotRunOnThisMachine", message=refused)
            self._cleanup(pod)
            return
        self._watch_storage()
        target_fn = self._run_submitter if kind == "submitter" else self._run_node
        args = (pod, script) if kind == "submitter" else (pod,)
        threading.Thread(target=target_fn, args=args, name=f"ray-pod-{key[1]}", daemon=True).start()

    def poll(self, key: PodKey) -> PodRunState | None:
        """The pod's current state, or None if this executor never started it."""
        with self._lock:
            pod = self._pods.get(key)
            if pod is None:
                return None
            ports: dict[int, int] = {}
            headers: dict[int, dict[str, str]] = {}
            if (
                pod.kind == "head" and pod.phase == "Running"
            ):  # KubeRay's head ports, where this head has them
                c = pod.cluster
                ports = {
                    names.PORT_GCS: c.gcs,
                    names.PORT_DASHBOARD: c.dashboard,
                    names.PORT_CLIENT: c.client,
                }
                # Ray's header for proxies: a port-forward (authenticated by the twin) reaches the dashboard as
                # a pod-network client does on GKE, without asking its user for the Ray token
                token = c.token
                headers = {names.PORT_DASHBOARD: {"X-Ray-Authorization": f"Bearer {token}"}}
            return PodRunState(
                phase=pod.phase,  # type: ignore[arg-type]
                ready=pod.ready,
                message=pod.message,
                reason=pod.reason,
                exit_code=pod.exit_code,
                ports=ports,
                http_headers=headers,
            )

    # ------------------------------------------------------------------------------- ephemeral storage

    def storage_limit(self, pod: _Pod) -> int:
        """The pod's ephemeral-storage limit: the sum of its containers' ``limits.ephemeral-storage`` over those
        that set one (the kubelet's pod-level limit, ``resourcehelper.PodLimits``), else this executor's
        ``scratch_bytes``: a pod that sets none is bounded all the same here."""
        total = 0
        for c in (pod.launch.pod.get("spec") or {}).get("containers") or []:
            limit = ((c.get("resources") or {}).get("limits") or {}).get("ephemeral-storage")
            with contextlib.suppress(ValueError, TypeError, ArithmeticError):
                total += max(0, int(parse_quantity(limit))) if limit is not None else 0
        return total if total > 0 else self.scratch_bytes

    def storage_used(self, pod: _Pod) -> int:
        """Bytes the pod's files take on disk: its directory and its node's Ray temp dir (its TMPDIR)."""
        used = 0
        for root in (pod.dir, self._node_tmp(pod) if self._ray_root is not None else None):
            if root is None:
                continue
            for dirpath, _dirs, files in os.walk(root):
                for f in files:
                    with contextlib.suppress(OSError):
                        used += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
        return used

    def _watch_storage(self) -> None:
        with self._lock:
            if self._watch is not None or self.scratch_check_s <= 0:
                return
            self._watch = threading.Thread(target=self._storage_loop, name="ray-storage", daemon=True)
        self._watch.start()

    def _storage_loop(self) -> None:
        """The kubelet's ephemeral-storage eviction: a running pod whose files exceed its limit is evicted
        (``Evicted``, with the kubelet's message) and its processes ended."""
        while not self._shut:
            time.sleep(self.scratch_check_s)
            with self._lock:
                live = [p for p in self._pods.values() if p.phase == "Running" and not p.stopping.is_set()]
            for pod in live:
                limit = self.storage_limit(pod)
                if self.storage_used(pod) <= limit:
                    continue
                text = f"Pod ephemeral local storage usage exceeds the total limit of containers {_bytes(limit)}. "
                self._log(pod, f"[flexq] evicted: {text}")
                self._set(pod, reason="Evicted", message=text)
                self.stop(pod.key)

    def stop(self, key: PodKey) -> None:
        """Kill the pod's processes in the background (idempotent)."""
        with self._lock:
            pod = self._pods.get(key)
        if pod is None or pod.stopping.is_set():
            return
        pod.stopping.set()
        threading.Thread(target=self._kill, args=(pod,), name=f"ray-stop-{key[1]}", daemon=True).start()

    def shutdown(self) -> None:
        """Stop every pod, wait until their processes are gone, remove all directories this executor made."""
        self._dash.close()
        with self._lock:
            self._shut = True
            pods = list(self._pods.values())
        for pod in pods:
            pod.stopping.set()
        threads = [threading.Thread(target=self._kill, args=(p,), daemon=True) for p in pods]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        localproc.signal_pids(localproc.owned_pids(self._token + ":"), signal.SIGKILL)
        for pod in pods:
            pod.done.wait(self.grace_s + 10)
        if self._cgroups is not None:
            for left in [d for d in self._cgroups.iterdir() if d.is_dir()] if self._cgroups.exists() else []:
                podreaper.CgroupPod(left, create=False).remove()
            with contextlib.suppress(OSError):
                self._cgroups.rmdir()
        if self._ray_root is not None:
            shutil.rmtree(self._ray_root, ignore_errors=True)
        shutil.rmtree(self.base_dir / "pods", ignore_errors=True)
        shutil.rmtree(self.base_dir / "py", ignore_errors=True)
        shutil.rmtree(self.base_dir / "tokens", ignore_errors=True)
        if self._own_token:
            self.token_file.unlink(missing_ok=True)
        if self._own_base:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    # ------------------------------------------------------------------------------- dashboard side

    def dashboard_address(self, namespace: str, cluster: str) -> str | None:
        """``127.0.0.1:<port>`` of a running cluster's dashboard, once its head is ready."""
        with self._lock:
            c = self._clusters.get((namespace, cluster))
        return f"127.0.0.1:{c.dashboard}" if c and c.head_ready.is_set() else None

    def cluster_token(self, namespace: str, cluster: str) -> str:
        """A local Ray cluster's own token: ``HMAC-SHA256(the executor's token, "<namespace>/<cluster>")``, so a
        process of one cluster (which must hold its cluster's token) cannot reach another's servers; whoever
        holds the executor's token (``ray/auth_token``: the twin's user) can derive any of them."""
        return hmac.new(
            self.ray_token.encode(), f"{namespace}/{cluster}".encode(), hashlib.sha256
        ).hexdigest()

    def auth_headers(self, namespace: str, cluster: str) -> dict[str, str]:
        """The HTTP header a request to a local cluster's Ray dashboard needs (token auth is on)."""
        return {"Authorization": f"Bearer {self.cluster_token(namespace, cluster)}"}

    def job_info(self, namespace: str, cluster: str, job_id: str) -> dict | None:
        """Latest ``GET /api/jobs/<id>`` answer for a job on a local cluster (None: unknown or not yet seen)."""
        return self._dash.job_info(namespace, cluster, job_id)

    def cluster_status(self, namespace: str, cluster: str) -> str | None:
        """The autoscaler monitor's status text (``ray status``) of a local cluster, cached (None: unknown)."""
        return self._dash.cluster_status(namespace, cluster)

    # ---------------------------------------------------------------------------------- internals

    def _cluster(self, key: tuple[str, str]) -> _Cluster:
        c = self._clusters.get(key)
        if c is None:
            self._next += 1
            c = _Cluster(
                key=key,
                index=self._next,
                gcs=localproc.free_port(),
                dashboard=localproc.free_port(),
                client=localproc.free_port(),
                token=self.cluster_token(*key),
                token_file=self.base_dir / "tokens" / f"c{self._next}",
            )
            write_token(c.token_file, c.token)
            self._clusters[key] = c
        return c

    def _node_tmp(self, pod: _Pod) -> Path:
        """A short per-node Ray temp dir (Ray's socket paths limit its length)."""
        if self._ray_root is None:
            root = self.base_dir / "r"
            if len(str(root)) + 12 > _MAX_TMP:
                root = Path(tempfile.mkdtemp(prefix="fqray-"))
            root.mkdir(parents=True, exist_ok=True)
            self._ray_root = root
        return self._ray_root / f"c{pod.cluster.index}" / pod.marker.rsplit(":", 1)[1]

    def _set(self, pod: _Pod, **changes: object) -> None:
        with self._lock:
            for k, v in changes.items():
                setattr(pod, k, v)
        pod.launch.notify()

    def _log(self, pod: _Pod, text: str) -> None:
        ns, name = pod.key
        pod.launch.logs.write(ns, name, pod.container, text if text.endswith("\n") else text + "\n")

    def _hooks_dir(self) -> Path:
        """The directory holding the nodes' ``sitecustomize`` (written when missing or from another version)."""
        d = self.base_dir / "py"
        f = d / "sitecustomize.py"
        if not f.exists() or f.read_text() != _SITECUSTOMIZE:
            d.mkdir(parents=True, exist_ok=True)
            (d / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        return d

    def _env(self, pod: _Pod) -> dict[str, str]:
        """A clean environment, as a container's: nothing of the twin's own (no ``FLEXQ_HOME``, ``KUBECONFIG``,
        cloud credentials), a home and temporary directory in the pod's directory, this Python's virtualenv
        first on a system ``PATH``, then the node's and the pod's own variables."""
        venv_bin = str(Path(self.python).parent)
        # TMPDIR in the node's short Ray temp dir: Unix socket paths (multiprocessing's forkserver, in Ray's
        # dashboard) must stay under 108 bytes
        home, tmp = pod.dir / "home", self._node_tmp(pod) / "tmp"
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
        env.update(self.extra_env)
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
        env.update(
            {k: v for k, v in own.items() if k not in ("RAY_ADDRESS", "RAY_IP", "FQ_RAY_IP", "RAY_PORT")}
        )
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
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(self._hooks_dir()), env.get("PYTHONPATH")) if p
            )
        env[localproc.OWNER_ENV] = pod.marker
        return env

    def _ray_start_argv(self, pod: _Pod, tmp: Path) -> list[str]:
        spec = commands.parse_ray_start(pod.launch.pod)
        c = pod.cluster
        localproc.release_ports(pod.ports)  # a retried start gets fresh ports
        node_ports = [localproc.free_port() for _ in range(6)]
        pod.ports = node_ports
        ray = (
            [str(Path(self.python).parent / "ray")]
            if pod.kind == "head"
            else [self.python, "-c", WORKER_RAY_START]
        )
        argv = [
            *ray,
            "start",
            "--block",
            "--disable-usage-stats",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={tmp}",
            # no /dev/shm of its own: the object store in the node's temp dir (Ray would pick the shared one)
            *([] if self.private_shm else [f"--plasma-directory={tmp}"]),
            f"--object-store-memory={self.object_store_bytes}",
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

    def confinement(self, pod: _Pod, writable: Sequence[Path] = ()) -> confine.Confinement:
        """What the pod's processes may touch (``confine``): read the system, this Python and the nodes'
        ``sitecustomize``; write the pod's own directory (``writable``: also the node's Ray temp dir),
        ``/dev/pts`` and, when it is the pod's own tmpfs (``private_shm``), ``/dev/shm``; read its cluster's Ray token. Never a rule that would open the twin's home or the user's."""
        system = [d for d in confine.WRITABLE_SYSTEM_DIRS if d != "/dev/shm" or self.private_shm]
        return confine.Confinement(
            read=[*confine.system_read_paths(), self._hooks_dir()],
            write=[*system, pod.dir, *writable],
            files=[pod.cluster.token_file],
            protected=[self.token_file, *self.protected],
        )

    def _spawn(
        self, pod: _Pod, argv: list[str], cwd: Path, writable: Sequence[Path] = ()
    ) -> subprocess.Popen:
        """Start the pod's main process: a clean environment (``_env``), its own directory, confined, in the
        pod's own cgroup (or under its supervisor) and with its own ``/dev/shm`` (``podreaper``)."""
        env = self._env(pod)  # first: it makes the pod's home and temp dirs the rules then name
        rules = self.confinement(pod, [self._node_tmp(pod), *writable])
        if not rules.available:
            self._log(pod, f"[flexq] {NO_LANDLOCK}")
        shm = self.shm_bytes(pod) if self.private_shm else 0
        if pod.cgroup is None and self._cgroups is not None:
            pod.cgroup = podreaper.CgroupPod(self._cgroups / pod.marker.rsplit(":", 1)[1])
        with rules.ruleset() as ruleset:
            env_fd = -1
            preexec: Callable[[], None] | None
            fds: tuple[int, ...]
            if pod.cgroup is not None:
                cgroup, mount = pod.cgroup, (podreaper.ShmMount(shm) if shm else None)

                def child() -> None:
                    # between fork and exec: born in the pod's cgroup, with its own /dev/shm, confined
                    cgroup.enter()
                    if mount is not None and mount.apply() != 0:
                        os._exit(124)
                    if ruleset >= 0:
                        podreaper.restrict(ruleset)

                run, preexec, fds = list(argv), child, ()
            else:
                env_fd = podreaper.env_fd(env)
                run = podreaper.supervisor_argv(self.python, ruleset, shm, self.grace_s, env_fd, list(argv))
                env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
                preexec, fds = None, tuple(fd for fd in (ruleset, env_fd) if fd >= 0)
                pod.supervised = True
            try:
                proc = subprocess.Popen(
                    run,
                    env=env,
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    text=True,
                    bufsize=1,
                    preexec_fn=preexec,
                    pass_fds=fds,
                )
            finally:
                if env_fd >= 0:
                    os.close(env_fd)
        pod.proc = proc
        return proc

    def shm_bytes(self, pod: _Pod) -> int:
        """The size of the pod's own ``/dev/shm``: the ``sizeLimit`` of a ``medium: Memory`` emptyDir mounted
        there (without one: the container's memory limit), else the container runtime's 64 MiB."""
        spec = pod.launch.pod.get("spec") or {}
        containers = spec.get("containers") or [{}]
        mounted = {
            m.get("name"): m
            for m in containers[0].get("volumeMounts") or []
            if m.get("mountPath") == "/dev/shm"
        }
        for vol in spec.get("volumes") or []:
            empty = vol.get("emptyDir")
            if vol.get("name") in mounted and isinstance(empty, dict) and empty.get("medium") == "Memory":
                limit = empty.get("sizeLimit") or (
                    (containers[0].get("resources") or {}).get("limits") or {}
                ).get("memory")
                with contextlib.suppress(ValueError, TypeError, ArithmeticError):
                    if limit is not None and int(parse_quantity(limit)) > 0:
                        return int(parse_quantity(limit))
        return podreaper.SHM_DEFAULT_BYTES

    def _pump(self, pod: _Pod, proc: subprocess.Popen, started: threading.Event) -> threading.Thread:
        def run() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = _ANSI.sub("", line)
                self._log(pod, line)
                if _STARTED in line:
                    started.set()

        t = threading.Thread(target=run, name=f"ray-log-{pod.key[1]}", daemon=True)
        t.start()
        return t

    def _run_node(self, pod: _Pod) -> None:
        """Head or worker: files, (workers) wait for the head, ray start, readiness, exit."""
        try:
            pod.dir.mkdir(parents=True, exist_ok=True)
            mounts = localproc.write_files(pod.dir / "mounts", pod.launch.files)
            if pod.kind == "head" and pod.cluster.head == pod.marker:
                pod.cluster.head_mounts = mounts
            elif not self._wait_for_head(pod):
                return
            if pod.stopping.is_set():
                return self._finish(pod, None)
            tmp = self._node_tmp(pod)
            for attempt in range(1, _START_ATTEMPTS + 1):
                tmp.mkdir(parents=True, exist_ok=True)
                if not self._acquire_start_slot(pod):
                    return self._finish(pod, None)
                try:
                    with self._lock:
                        if pod.stopping.is_set():
                            return self._finish(pod, None)
                        proc = self._spawn(pod, self._ray_start_argv(pod, tmp), pod.dir)
                    self._set(pod, phase="Running", message="")
                    started = threading.Event()
                    pump = self._pump(pod, proc, started)
                    ok = self._wait_started(pod, proc, started)
                finally:
                    _START_SLOT.release()
                if ok or pod.stopping.is_set() or attempt == _START_ATTEMPTS:
                    break
                # Ray's own 30 s start-up limits (hard-coded in 2.60) are missed on an overloaded machine: that
                # is this host's problem, not the pod's, so try again at once rather than fail the container.
                proc.wait()
                pump.join(timeout=5)
                self._log_ray_failure(pod, tmp)
                self._log(
                    pod, f"[flexq] ray start failed (attempt {attempt}/{_START_ATTEMPTS}); starting it again"
                )
                self._kill_owned(pod)
                shutil.rmtree(tmp, ignore_errors=True)
            if ok and self._wait_healthy(pod, proc):
                if pod.kind == "head" and pod.cluster.head == pod.marker:
                    pod.cluster.head_ready.set()
                self._set(pod, ready=True)
            rc = proc.wait()
            pump.join(timeout=5)
            if rc != 0 and not pod.stopping.is_set():
                self._log_ray_failure(pod, tmp)
            self._finish(pod, rc)
            self._reap(pod)
        except Exception as exc:  # a crash here must still end the pod, visibly
            self._log(pod, f"[flexq] local Ray executor error: {exc!r}")
            self._finish(pod, 1, reason="ExecutorError", message=str(exc))

    def _wait_for_head(self, pod: _Pod) -> bool:
        self._set(pod, message="wait-gcs-ready: waiting for the Ray head's GCS")
        deadline = time.monotonic() + self.gcs_wait_timeout_s
        while not pod.cluster.head_ready.wait(0.25):
            if pod.stopping.is_set():
                self._finish(pod, None)
                return False
            if time.monotonic() > deadline:
                self._log(pod, "[flexq] the Ray head never became ready; giving up")
                self._finish(pod, 1, reason="GCSWaitTimeout", message="Ray head not ready in time")
                return False
        return True

    def _log_ray_failure(self, pod: _Pod, tmp: Path) -> None:
        """Copy the tail of the node's own Ray logs into the pod log before its temp dir goes."""
        for name in ("raylet.err", "raylet.out", "gcs_server.err", "dashboard_agent.err"):
            for f in sorted(tmp.glob(f"session_*/logs/{name}"))[:1]:
                lines = [
                    ln
                    for ln in f.read_text(errors="replace").splitlines()
                    if re.search(r"Check failed|\] F |\sE\s|\] E |rror|\*\*\*", ln) and "raylet(+" not in ln
                ]
                if lines:
                    self._log(pod, f"[flexq] errors in Ray's {name}:\n" + "\n".join(lines[-10:]))

    def _acquire_start_slot(self, pod: _Pod) -> bool:
        """One ``ray start`` at a time in this process: Ray gives a node 30 s (hard-coded) to register with
        the GCS, which five nodes starting together on a loaded 2-core machine miss."""
        self._set(pod, message="waiting for its turn to start Ray")
        while not _START_SLOT.acquire(timeout=0.25):
            if pod.stopping.is_set():
                return False
        return True

    def _wait_started(self, pod: _Pod, proc: subprocess.Popen, started: threading.Event) -> bool:
        """Until ``ray start`` says "Ray runtime started" (False: it exited, was stopped, or timed out)."""
        deadline = time.monotonic() + self.start_timeout_s
        while not started.wait(0.2):
            if proc.poll() is not None or pod.stopping.is_set():
                return False
            if time.monotonic() > deadline:
                self._log(
                    pod, f"[flexq] ray start did not finish within {self.start_timeout_s:.0f}s; killing"
                )
                self._set(pod, reason="RayStartTimeout")
                self.stop(pod.key)
                return False
        return True

    def _wait_healthy(self, pod: _Pod, proc: subprocess.Popen) -> bool:
        """A head is ready once its dashboard answers ``/api/gcs_healthz`` (KubeRay's readiness probe)."""
        if pod.kind != "head":
            return True
        deadline = time.monotonic() + self.start_timeout_s
        url = f"http://127.0.0.1:{pod.cluster.dashboard}/api/gcs_healthz"
        while http_text(url, self.auth_headers(*pod.cluster.key)) is None:
            if proc.poll() is not None or pod.stopping.is_set():
                return False
            if time.monotonic() > deadline:
                self._set(pod, reason="RayStartTimeout")
                self.stop(pod.key)
                return False
            time.sleep(0.25)
        return True

    def _run_submitter(self, pod: _Pod, script: str) -> None:
        """The RayJob submitter: wait for the head to be known, apply the policies, run the script."""
        try:
            pod.dir.mkdir(parents=True, exist_ok=True)
            self._set(pod, phase="Running")
            c = pod.cluster
            waited = 0.0
            while c.head_mounts is None:
                if pod.stopping.is_set():
                    return self._finish(pod, None)
                if waited % 2 == 0:
                    target = commands.submitter_target(script)
                    addr = f"http://{target[0]}:{target[1]}" if target else "?"
                    self._log(pod, f"Waiting for Ray Dashboard GCS to become healthy at {addr} ...")
                time.sleep(0.5)
                waited += 0.5
            decision = runtime_env.decide(commands.runtime_env_of(script))
            for line in decision.lines:
                self._log(pod, "[flexq] " + line)
            if decision.error:
                return self._finish(pod, 1, reason="RuntimeEnvRefused", message=decision.error)
            renv = decision.runtime_env if commands.runtime_env_of(script) is not None else None
            local = commands.rewrite_submitter(
                script, local_address=f"127.0.0.1:{c.dashboard}", runtime_env=renv, mounts=c.head_mounts
            )
            (pod.dir / "submit.sh").write_text(local + "\n")
            with self._lock:
                if pod.stopping.is_set():
                    return self._finish(pod, None)
                proc = self._spawn(pod, ["/bin/bash", "-ce", "--", local], pod.dir)
            self._set(pod, ready=True)
            pump = self._pump(pod, proc, threading.Event())
            rc = proc.wait()
            pump.join(timeout=5)
            self._finish(pod, rc)
            self._reap(pod)
        except Exception as exc:
            self._log(pod, f"[flexq] local Ray executor error: {exc!r}")
            self._finish(pod, 1, reason="ExecutorError", message=str(exc))

    def _finish(self, pod: _Pod, rc: int | None, reason: str = "", message: str = "") -> None:
        """Record the end of the pod's main process (None: stopped before it started)."""
        if pod.stopping.is_set():
            phase, rc = "Failed", (rc if rc is not None else 137)
            reason = reason or pod.reason or "Stopped"
            evicted = pod.message if reason == "Evicted" else ""  # the kubelet's words for an eviction
            message = message or evicted or "stopped by the kubelet"
        else:
            phase = "Succeeded" if rc == 0 else "Failed"
            reason = reason or pod.reason or ("Completed" if rc == 0 else "Error")
        self._set(pod, phase=phase, ready=False, exit_code=rc, reason=reason, message=message)
        pod.done.set()

    def _kill(self, pod: _Pod) -> None:
        """SIGTERM the pod's processes, SIGKILL leftovers after the grace period, then clean up."""
        with self._lock:
            proc = pod.proc
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
        if pod.cgroup is not None:
            pod.cgroup.signal(signal.SIGTERM)
        localproc.signal_pids(localproc.owned_pids(pod.marker), signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while self._left(pod) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pod.supervised and proc is not None:  # it ends its whole tree itself after the grace period
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        self._kill_owned(pod)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        if pod.proc is None and not pod.done.is_set():
            pod.done.wait(2)
        self._cleanup(pod)

    def _reap(self, pod: _Pod) -> None:
        """After the main process ended by itself: kill anything it left behind, then clean up."""
        if pod.stopping.is_set():
            return  # _kill is already doing it
        self._kill_owned(pod)
        self._cleanup(pod)

    def _left(self, pod: _Pod) -> bool:
        """Whether any process of the pod is alive: in its cgroup, or carrying its marker."""
        return bool((pod.cgroup is not None and pod.cgroup.pids()) or localproc.owned_pids(pod.marker))

    def _kill_owned(self, pod: _Pod) -> None:
        """SIGKILL every process of the pod's cgroup and whatever still carries its marker, until none is
        left (5 s at most). Under a supervisor, what shed the marker was ended by the supervisor."""
        if pod.cgroup is not None:
            pod.cgroup.kill()
        for _ in range(50):
            left = localproc.owned_pids(pod.marker)
            if not left:
                break
            localproc.signal_pids(left, signal.SIGKILL)
            time.sleep(0.1)

    def _cleanup(self, pod: _Pod) -> None:
        """Release the pod's ports and directories, and the cluster's once its last pod is gone."""
        localproc.release_ports(pod.ports)
        if pod.cgroup is not None:
            pod.cgroup.remove()
        shutil.rmtree(pod.dir, ignore_errors=True)
        if self._ray_root is not None:
            shutil.rmtree(self._node_tmp(pod), ignore_errors=True)
        with self._lock:
            c = pod.cluster
            c.pods.discard(pod.marker)
            if pod.kind == "head" and c.head == pod.marker:
                c.head_ready.clear()
                c.head_mounts = None
            if not c.pods and self._clusters.get(c.key) is c:
                del self._clusters[c.key]
                localproc.release_ports([c.gcs, c.dashboard, c.client])
                c.token_file.unlink(missing_ok=True)
                if self._ray_root is not None:
                    shutil.rmtree(self._ray_root / f"c{c.index}", ignore_errors=True)


def _bytes(n: int) -> str:
    """A byte count as Kubernetes prints a quantity (``10Gi``, ``200Mi``, else bytes)."""
    for unit, size in (("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


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


def submitter_script(launch: PodLaunch) -> tuple[str, str]:
    """The script a RayJob's submitter pod runs here, rebuilt from the RayJob that controls it (KubeRay's
    ``BuildJobSubmitCommand`` for its ``status.jobId`` and ``dashboardURL``), and "" with the reason when it is
    not run: a ``submitterPodTemplate`` with its own command (a container image's program, which this machine
    does not run), or a pod whose command is not the one KubeRay builds for that RayJob."""
    rayjob = launch.owners[1]
    st, name = rayjob.get("status") or {}, rayjob["metadata"]["name"]
    job = pods.submitter_job(rayjob, job_id=st.get("jobId", ""), dashboard_url=st.get("dashboardURL", ""))
    container = job["spec"]["template"]["spec"]["containers"][0]
    if container.get("command") != ["/bin/bash", "-ce", "--"] or len(container.get("args") or []) != 1:
        return (
            "",
            f"RayJob {name}'s submitterPodTemplate has its own command, which is not run on this machine",
        )
    script = str(container["args"][0])
    if commands.submitter_script_of(launch.pod) != script:
        return "", f"the pod's command is not the submitter KubeRay builds for RayJob {name}"
    return script, ""
