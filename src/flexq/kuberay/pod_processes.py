"""A local pod's processes: started confined and bounded, ended whole, and what its files take on disk.

Owns ``PodProcesses``, what the local Ray executor starts and ends a pod's processes with:

- **start** (``spawn``): the pod's main process gets the clean environment it is given, its own directory, and
  runs confined (``confine``: Landlock; it and all it starts — Ray's workers, the RayJob's entrypoint — read
  only the system, this Python and their pod's own directory, which holds its ServiceAccount token as a pod's
  volume would, and never the twin's home; ``confinement`` says what it may touch). It is held by something
  it cannot shed (``podreaper``): its own cgroup v2 where this host lets the twin make one, else a supervisor
  per pod (a child subreaper) — a process that starts with an empty environment or double-forks away is still
  the pod's. Each pod has its own ``/dev/shm`` (a private tmpfs of 64 MiB, or the size of a ``medium: Memory``
  volume mounted there: ``shm_bytes``, freed with its last process) where the kernel allows unprivileged user
  namespaces; elsewhere ``/dev/shm`` is not writable and Ray's object store goes to the node's temp dir.
- **end** (``end``, ``kill_owned``): SIGTERM to the pod's processes, SIGKILL to all that is left after the
  grace period (``cgroup.kill``; the supervisor ends its own tree). Every process started carries
  ``FLEXQ_RAY_OWNER=<executor>:<pod>`` in its environment (Ray's raylet, workers and job drivers inherit it),
  so whatever shed its cgroup's view is still found.
- **disk**: a pod's ephemeral-storage limit (``storage_limit``, as the kubelet sums it) and what its files take
  (``storage_used``).

Waits on the wall clock (a grace period of real processes). Must not import anything in flexq but
``flexq.api``, ``flexq.runtime.executor`` and its own package.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from flexq.api.quantity import format_quantity, parse_quantity

from . import confine, localproc, podreaper
from .ray_node import SYSTEM_PATH, LocalPod

NO_LANDLOCK = (
    "this kernel has no Landlock: the pod's processes run unconfined, and can read every file the twin's "
    "user can (docs/security.md)"
)


class PodProcesses:
    """Starts a pod's main process confined and bounded, and ends every process of the pod (module docstring).

    ``cgroups``: the parent cgroup of the pods' own (None: a supervisor per pod); ``hooks``: a directory every
    pod may read (the nodes' ``sitecustomize``); ``protected``: paths no rule may open; ``lock``: the executor's,
    held while a pod's main process is recorded; ``log``: a line into the pod's log."""

    def __init__(
        self,
        *,
        python: str,
        grace_s: float,
        cgroups: Path | None,
        private_shm: bool,
        hooks: Callable[[], Path],
        token_file: Path,
        protected: Sequence[Path],
        lock: threading.RLock,
        log: Callable[[LocalPod, str], None],
    ) -> None:
        self.python, self.grace_s, self.cgroups, self.private_shm = python, grace_s, cgroups, private_shm
        self.hooks, self.token_file, self.protected = hooks, token_file, list(protected)
        self._lock, self._log = lock, log

    def confinement(self, pod: LocalPod, writable: Sequence[Path] = ()) -> confine.Confinement:
        """What the pod's processes may touch (``confine``): read the system, this Python and the nodes'
        ``sitecustomize``; write the pod's own directory (``writable``: also the node's Ray temp dir),
        ``/dev/pts`` and, when it is the pod's own tmpfs (``private_shm``), ``/dev/shm``; read its cluster's Ray token. Never a rule that would open the twin's home or the user's."""
        system = [d for d in confine.WRITABLE_SYSTEM_DIRS if d != "/dev/shm" or self.private_shm]
        return confine.Confinement(
            read=[*confine.system_read_paths(), self.hooks()],
            write=[*system, pod.dir, *writable],
            files=[pod.cluster.token_file],
            protected=[self.token_file, *self.protected],
        )

    def spawn(
        self, pod: LocalPod, argv: list[str], cwd: Path, env: dict[str, str], writable: Sequence[Path] = ()
    ) -> subprocess.Popen:
        """Start the pod's main process with ``env``, in ``cwd``, confined, in the pod's own cgroup (or under
        its supervisor) and with its own ``/dev/shm`` (``podreaper``)."""
        rules = self.confinement(pod, writable)
        if not rules.available:
            self._log(pod, f"[flexq] {NO_LANDLOCK}")
        shm = shm_bytes(pod.launch.pod) if self.private_shm else 0
        if pod.cgroup is None and self.cgroups is not None:
            pod.cgroup = podreaper.CgroupPod(self.cgroups / pod.marker.rsplit(":", 1)[1])
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

    def end(self, pod: LocalPod) -> None:
        """SIGTERM the pod's processes, SIGKILL leftovers after the grace period, and wait for its main one."""
        with self._lock:
            proc = pod.proc
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
        if pod.cgroup is not None:
            pod.cgroup.signal(signal.SIGTERM)
        localproc.signal_pids(localproc.owned_pids(pod.marker), signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while self.left(pod) and time.monotonic() < deadline:
            time.sleep(0.1)
        if pod.supervised and proc is not None:  # it ends its whole tree itself after the grace period
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        self.kill_owned(pod)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    def left(self, pod: LocalPod) -> bool:
        """Whether any process of the pod is alive: in its cgroup, or carrying its marker."""
        return bool((pod.cgroup is not None and pod.cgroup.pids()) or localproc.owned_pids(pod.marker))

    def kill_owned(self, pod: LocalPod) -> None:
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

    def remove_cgroups(self) -> None:
        """Remove the pods' cgroups that are left, then their parent (at shutdown)."""
        if self.cgroups is not None:
            for left in [d for d in self.cgroups.iterdir() if d.is_dir()] if self.cgroups.exists() else []:
                podreaper.CgroupPod(left, create=False).remove()
            with contextlib.suppress(OSError):
                self.cgroups.rmdir()


def shm_bytes(pod: dict) -> int:
    """The size of the pod's own ``/dev/shm``: the ``sizeLimit`` of a ``medium: Memory`` emptyDir mounted
    there (without one: the container's memory limit), else the container runtime's 64 MiB."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or [{}]
    mounted = {
        m.get("name"): m for m in containers[0].get("volumeMounts") or [] if m.get("mountPath") == "/dev/shm"
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


def storage_limit(pod: dict, default: int) -> int:
    """The pod's ephemeral-storage limit: the sum of its containers' ``limits.ephemeral-storage`` over those
    that set one (the kubelet's pod-level limit, ``resourcehelper.PodLimits``), else ``default``: a pod that
    sets none is bounded all the same here."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        limit = ((c.get("resources") or {}).get("limits") or {}).get("ephemeral-storage")
        with contextlib.suppress(ValueError, TypeError, ArithmeticError):
            total += max(0, int(parse_quantity(limit))) if limit is not None else 0
    return total if total > 0 else default


def storage_used(roots: Sequence[Path]) -> int:
    """Bytes the files under ``roots`` take on disk (a pod's directory and its node's Ray temp dir)."""
    used = 0
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for f in files:
                with contextlib.suppress(OSError):
                    used += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
    return used


def over_storage_limit(pod: dict, roots: Sequence[Path], default: int) -> str | None:
    """The kubelet's eviction message when the files under ``roots`` (the pod's) exceed the pod's
    ephemeral-storage limit (``storage_limit``, ``default`` where it sets none); None within it."""
    limit = storage_limit(pod, default)
    if storage_used(roots) <= limit:
        return None
    # the kubelet's words (eviction_manager's podEphemeralStorageMessageFmt), the limit as a Quantity prints it
    quantity = format_quantity(limit, binary=True)
    return f"Pod ephemeral local storage usage exceeds the total limit of containers {quantity}. "
