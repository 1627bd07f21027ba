"""The local Ray executor: RayCluster pods become real Ray nodes on this machine, the submitter runs for real.

Owns the ``PodExecutor`` implementation for KubeRay's pods and their life, from start to the last file removed:

- **head pod** (``ray.io/node-type: head``) → ``ray start --head --block`` as ``ray_node`` rebuilds it from the
  pod's own parameters (addresses and ports replaced, loopback only, Ray's token auth on), a Ray temp dir per
  node under this executor's directory. Ready once Ray says "Ray runtime started" and the dashboard answers
  ``/api/gcs_healthz``. One ``ray start`` at a time in this process; started again at once when Ray's own 30 s
  start-up limits are missed on a loaded machine.
- **worker pod** → waits for its cluster's head (KubeRay's ``wait-gcs-ready`` init container: the pod stays
  ``Pending``), then ``ray start --address=127.0.0.1:<gcs>`` with the pod's resources and the environment a
  GKE TPU host gives (``PodLaunch.env``, then the pod's own env: ``TPU_WORKER_ID``, ``TPU_NAME``...).
- **submitter pod** (the RayJob's batch Job) → its own shell script, run by ``bash``, after three rewrites
  (``commands.rewrite_submitter``): the cluster DNS address becomes the local dashboard, absolute mount paths
  of the head pod (``/app``) become the head's local copy of its ConfigMap files, and the runtime env is
  passed through the policy of ``runtime_env.py`` (its decisions are the first lines of the log). So the log
  holds what ``ray job submit`` / ``ray job logs --follow`` print, ending with ``Job '<id>' succeeded``.

Trust (docs/security.md). Only the pods KubeRay created are run here, as their controller chain shows
(``names.created_by_kuberay``, from ``PodLaunch.owners``), never a pod by its command: a RayCluster's head and
workers (``ray start`` is rebuilt from their parameters), and a RayJob's submitter, whose script must be the one
KubeRay builds for that RayJob (``pods.trusted_submitter_script``). Every process gets a clean environment
(``ray_node.node_env``) and runs confined and bounded (``pod_processes``). ``stop`` ends the pod's processes,
then removes the node's temp dir and releases its ports; a pod whose main process ended by itself has all it
left ended at once (as a container's PID namespace does). Start, GCS wait and readiness have deadlines; a pod
past its ephemeral-storage limit is evicted, as the kubelet does.

The dashboard side: its own requests carry the cluster's Ray token, ``poll`` tells ``kubectl port-forward`` to
add it (``PodRunState.http_headers``), and the RayJob controller's questions (``job_info``) are answered from a
cache refreshed by a poller thread, so the controller never blocks on HTTP. It does not import ``ray``: Ray runs
in child processes and is spoken to over HTTP. Must not import anything in flexq but ``flexq.api``,
``flexq.runtime.executor`` and its own package.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from flexq.runtime.executor import PodKey, PodLaunch, PodRunState

from . import commands, localproc, names, podreaper, pods, runtime_env
from .dashboard import DashboardCache, http_text
from .pod_processes import PodProcesses, over_storage_limit
from .ray_node import (
    PATIENT_RAY,
    TOKEN_FILE,
    LocalCluster,
    LocalPod,
    cluster_token,
    ensure_token,
    hooks_dir,
    node_env,
    ray_failures,
    ray_start_argv,
    write_token,
)

_STARTED = "Ray runtime started"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # Ray's CLI colours its output even into a pipe
_START_SLOT = threading.Semaphore(1)
_START_ATTEMPTS = 3  # see LocalRayExecutor._acquire_start_slot
_MAX_TMP = 40  # Ray puts unix sockets under <temp>/session_<41 chars>/sockets/...: 107 bytes at most


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
        self.extra_env = {"RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25", **PATIENT_RAY, **(extra_env or {})}
        self.start_timeout_s = start_timeout_s
        self.gcs_wait_timeout_s = gcs_wait_timeout_s
        self.grace_s = grace_s
        self._token = f"{os.getpid()}-{id(self):x}"
        self._lock = threading.RLock()
        self._pods: dict[PodKey, LocalPod] = {}
        self._clusters: dict[tuple[str, str], LocalCluster] = {}
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
        self._procs = PodProcesses(
            python=python,
            grace_s=grace_s,
            cgroups=self._cgroups,
            private_shm=self.private_shm,
            hooks=lambda: hooks_dir(self.base_dir),
            token_file=self.token_file,
            protected=self.protected,
            lock=self._lock,
            log=self._log,
        )

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
                script, why = (
                    pods.trusted_submitter_script(launch.pod, launch.owners[1])
                    if not refused
                    else ("", refused)
                )
                refused = refused or why
                target = commands.submitter_target(script)
                svc_ns, svc = commands.service_of_host(target[0], key[0]) if target else (key[0], "")
                cname = names.cluster_of_service(svc) or svc
                cluster = self._cluster((svc_ns, cname))
            else:
                cluster = self._cluster((key[0], labels[names.LABEL_CLUSTER]))
            self._next += 1
            containers = launch.pod.get("spec", {}).get("containers") or [{}]
            pod = LocalPod(
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
            head = (
                pod.kind == "head" and pod.phase == "Running"
            )  # KubeRay's head ports, where this head has them
            return PodRunState(
                phase=pod.phase,  # type: ignore[arg-type]
                ready=pod.ready,
                message=pod.message,
                reason=pod.reason,
                exit_code=pod.exit_code,
                ports=pod.cluster.head_ports() if head else {},
                http_headers=pod.cluster.proxy_headers() if head else {},
            )

    # ------------------------------------------------------------------------------- ephemeral storage

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
                node_tmp = [self._node_tmp(pod)] if self._ray_root is not None else []
                text = over_storage_limit(pod.launch.pod, [pod.dir, *node_tmp], self.scratch_bytes)
                if text is None:
                    continue
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
        self._procs.remove_cgroups()
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
        """A local Ray cluster's own token, derived from the executor's (``ray_node.cluster_token``)."""
        return cluster_token(self.ray_token, namespace, cluster)

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

    def _cluster(self, key: tuple[str, str]) -> LocalCluster:
        c = self._clusters.get(key)
        if c is None:
            self._next += 1
            c = LocalCluster(
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

    def _node_tmp(self, pod: LocalPod) -> Path:
        """A short per-node Ray temp dir (Ray's socket paths limit its length)."""
        if self._ray_root is None:
            root = self.base_dir / "r"
            if len(str(root)) + 12 > _MAX_TMP:
                root = Path(tempfile.mkdtemp(prefix="fqray-"))
            root.mkdir(parents=True, exist_ok=True)
            self._ray_root = root
        return self._ray_root / f"c{pod.cluster.index}" / pod.marker.rsplit(":", 1)[1]

    def _set(self, pod: LocalPod, **changes: object) -> None:
        with self._lock:
            for k, v in changes.items():
                setattr(pod, k, v)
        pod.launch.notify()

    def _log(self, pod: LocalPod, text: str) -> None:
        ns, name = pod.key
        pod.launch.logs.write(ns, name, pod.container, text if text.endswith("\n") else text + "\n")

    def _env(self, pod: LocalPod) -> dict[str, str]:
        """The clean environment of the pod's processes (``ray_node.node_env``)."""
        return node_env(
            pod,
            python=self.python,
            extra_env=self.extra_env,
            node_tmp=self._node_tmp(pod),
            base_dir=self.base_dir,
        )

    def _ray_start_argv(self, pod: LocalPod, tmp: Path) -> list[str]:
        return ray_start_argv(
            pod,
            tmp,
            python=self.python,
            private_shm=self.private_shm,
            object_store_bytes=self.object_store_bytes,
        )

    def _spawn(self, pod: LocalPod, argv: list[str], cwd: Path) -> subprocess.Popen:
        """Start the pod's main process (``PodProcesses.spawn``): its environment first (it makes the pod's home
        and temp dirs the confinement's rules then name), the node's Ray temp dir writable."""
        env = self._env(pod)
        return self._procs.spawn(pod, argv, cwd, env, [self._node_tmp(pod)])

    def _pump(self, pod: LocalPod, proc: subprocess.Popen, started: threading.Event) -> threading.Thread:
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

    def _run_node(self, pod: LocalPod) -> None:
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
                    outcome = self._wait_started(pod, proc, started)
                finally:
                    _START_SLOT.release()
                ok = outcome == "started"
                if outcome == "timeout" and (attempt == _START_ATTEMPTS or pod.stopping.is_set()):
                    self._set(pod, reason="RayStartTimeout")
                    self.stop(pod.key)
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
                self._procs.kill_owned(pod)
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

    def _wait_for_head(self, pod: LocalPod) -> bool:
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

    def _log_ray_failure(self, pod: LocalPod, tmp: Path) -> None:
        """Copy the tail of the node's own Ray logs into the pod log before its temp dir goes."""
        for text in ray_failures(tmp):
            self._log(pod, text)

    def _acquire_start_slot(self, pod: LocalPod) -> bool:
        """One ``ray start`` at a time in this process: Ray gives a node 30 s (hard-coded) to register with
        the GCS, which five nodes starting together on a loaded 2-core machine miss."""
        self._set(pod, message="waiting for its turn to start Ray")
        while not _START_SLOT.acquire(timeout=0.25):
            if pod.stopping.is_set():
                return False
        return True

    def _wait_started(self, pod: LocalPod, proc: subprocess.Popen, started: threading.Event) -> str:
        """Until ``ray start`` says "Ray runtime started": "started", "ended" (it exited or the pod was
        stopped) or "timeout" (its processes are killed; the caller starts it again or fails the pod: a
        ``ray start`` that hangs silently on a loaded host succeeds when started again, like one that exits)."""
        deadline = time.monotonic() + self.start_timeout_s
        while not started.wait(0.2):
            if proc.poll() is not None or pod.stopping.is_set():
                return "ended"
            if time.monotonic() > deadline:
                self._log(
                    pod, f"[flexq] ray start did not finish within {self.start_timeout_s:.0f}s; killing"
                )
                self._procs.kill_owned(pod)
                return "timeout"
        return "started"

    def _wait_healthy(self, pod: LocalPod, proc: subprocess.Popen) -> bool:
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

    def _run_submitter(self, pod: LocalPod, script: str) -> None:
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

    def _finish(self, pod: LocalPod, rc: int | None, reason: str = "", message: str = "") -> None:
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

    def _kill(self, pod: LocalPod) -> None:
        """End the pod's processes (``PodProcesses.end``), then clean up."""
        self._procs.end(pod)
        if pod.proc is None and not pod.done.is_set():
            pod.done.wait(2)
        self._cleanup(pod)

    def _reap(self, pod: LocalPod) -> None:
        """After the main process ended by itself: kill anything it left behind, then clean up."""
        if pod.stopping.is_set():
            return  # _kill is already doing it
        self._procs.kill_owned(pod)
        self._cleanup(pod)

    def _cleanup(self, pod: LocalPod) -> None:
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
