"""Keeping a pod's processes and its ``/dev/shm`` to the pod, on this machine (the local Ray executor).

On GKE a container's processes live in its own cgroup and PID namespace, and its ``/dev/shm`` is a private tmpfs
(64 MiB unless a ``medium: Memory`` volume is mounted there): when the container ends, all of them end and the
tmpfs is gone. Here a pod's processes are the twin user's own, and an environment variable cannot keep track of
a process that starts with an empty one (``setsid env -i sleep``, a double fork into ``execve(..., {})``). So
each pod is held by something its processes cannot shed:

- **a cgroup v2** of its own (``CgroupPod``), where this host lets the twin make one (a writable cgroup2 mount:
  ``cgroup_root``). Every process the pod starts is born in it, and a process cannot leave it without writing to
  ``/sys/fs/cgroup``, which Landlock refuses (``flexq.kuberay.confine``). At the pod's end ``cgroup.kill`` ends
  every member at once.
- **else a supervisor** per pod (this file run as a script: ``supervise``): a child subreaper
  (``PR_SET_CHILD_SUBREAPER``), so every orphan of the pod — a double fork's grandchild included — is reparented
  to it and stays in its tree; when the pod's main process ends, or the executor asks (SIGTERM, then after the
  grace period by itself), it kills its whole tree, and it follows the executor (``PR_SET_PDEATHSIG``). The
  pod's processes run in the supervisor's Landlock-scoped child, so (Landlock ABI 6+) they cannot signal it.

And ``/dev/shm`` is the pod's own: a new user and mount namespace with a tmpfs of the pod's size mounted over
``/dev/shm`` (``ShmMount``, done in the child before ``exec``; no privilege needed where the kernel allows
unprivileged user namespaces: ``private_shm_works``). What a pod writes there is bounded and is freed with the
last of its processes.

Standard library only, imported by nothing here but the executor, and runnable as a script (``python -I -S``) so
the supervisor starts fast and sees no pod's ``PYTHONPATH``. Must not import anything in flexq.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.restype = ctypes.c_int
_libc.syscall.restype = ctypes.c_long
_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 2, 4, 1 << 14, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER = 1, 38, 36
_SYS_RESTRICT_SELF = 446
SHM_DEFAULT_BYTES = 64 * 1024 * 1024  # containerd's and Docker's /dev/shm for a container that mounts none


# ---------------------------------------------------------------------------------------------- /dev/shm


class ShmMount:
    """A private tmpfs of ``size`` bytes over ``/dev/shm`` for one pod. Built in the parent (no allocation in
    the child but the few calls of ``apply``), applied in the child between fork and exec."""

    def __init__(self, size: int) -> None:
        uid, gid = os.getuid(), os.getgid()
        self.size = int(size)
        self._maps = (
            (b"/proc/self/setgroups", b"deny"),
            (b"/proc/self/uid_map", b"%d %d 1" % (uid, uid)),
            (b"/proc/self/gid_map", b"%d %d 1" % (gid, gid)),
        )
        self._opts = b"size=%d,mode=1777" % self.size

    def apply(self) -> int:
        """In the child: a new user and mount namespace (the same uid and gid inside), ``/`` made private, a
        tmpfs of the pod's size on ``/dev/shm``. Returns 0, or the errno of the step that failed."""
        if _libc.unshare(ctypes.c_int(_CLONE_NEWUSER | _CLONE_NEWNS)) != 0:
            return ctypes.get_errno() or errno.EPERM
        for path, data in self._maps:
            try:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
            except OSError as exc:
                return exc.errno or errno.EPERM
        if _libc.mount(b"none", b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None) != 0:
            return ctypes.get_errno() or errno.EPERM
        if (
            _libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", ctypes.c_ulong(_MS_NOSUID | _MS_NODEV), self._opts)
            != 0
        ):
            return ctypes.get_errno() or errno.EPERM
        return 0


_shm_works: bool | None = None


def private_shm_works() -> bool:
    """Whether a child can be given its own ``/dev/shm`` here (tried once, on ``/bin/true``)."""
    global _shm_works
    if _shm_works is None:
        if not sys.platform.startswith("linux") or not os.path.isdir("/dev/shm"):
            _shm_works = False
        else:
            shm = ShmMount(1024 * 1024)

            def child() -> None:
                if shm.apply() != 0:
                    os._exit(3)

            try:
                _shm_works = subprocess.run(["/bin/true"], preexec_fn=child, timeout=30).returncode == 0
            except (OSError, subprocess.SubprocessError):
                _shm_works = False
    return _shm_works


# --------------------------------------------------------------------------------------------- cgroup v2


def _cgroup2_mount() -> Path | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                return Path(left.split(" ")[4].replace("\\040", " "))
    return None


def _own_cgroup() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].strip()
    return "/"


def cgroup_root(name: str) -> Path | None:
    """A cgroup v2 directory ``name`` under this process's own cgroup, in which each pod gets its own, when this
    host lets this user make one and move a child into it (tried on ``/bin/true``); None otherwise. Also ends
    and removes what a twin that died without cleaning up left next to it (``flexq-<pid>-…``, pid gone)."""
    mount = _cgroup2_mount()
    if mount is None:
        return None
    parent = mount / _own_cgroup().lstrip("/")
    root = parent / name
    try:
        root.mkdir(exist_ok=True)
        probe = CgroupPod(root / "probe")
        try:
            ok = subprocess.run(["/bin/true"], preexec_fn=probe.enter, timeout=30).returncode == 0
        finally:
            probe.remove()
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        with contextlib.suppress(OSError):
            root.rmdir()
        return None
    sweep_stale(parent)
    return root


def sweep_stale(parent: Path) -> None:
    """End and remove the pod cgroups of twins that are gone (``flexq-<pid>-<id>`` whose pid is not alive)."""
    with contextlib.suppress(OSError):
        for d in parent.iterdir():
            bits = d.name.split("-")
            if len(bits) < 3 or bits[0] != "flexq" or not bits[1].isdigit() or not d.is_dir():
                continue
            if Path(f"/proc/{bits[1]}").exists():
                continue
            for pod in [p for p in d.iterdir() if p.is_dir()]:
                CgroupPod(pod, create=False).remove()
            with contextlib.suppress(OSError):
                d.rmdir()


class CgroupPod:
    """One pod's cgroup: its processes are born in it (``enter``, in the child between fork and exec), listed
    (``pids``), signalled (``signal``) and ended all at once (``kill``); ``remove`` ends them and removes it."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        if create:
            path.mkdir(exist_ok=True)
        self._procs = os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) if create else -1

    def enter(self) -> None:
        """In the child: move itself into the pod's cgroup (everything it starts is born there)."""
        os.write(self._procs, b"0")

    def pids(self) -> list[int]:
        out: list[int] = []
        with contextlib.suppress(OSError):
            for d in [self.path, *(p for p in self.path.rglob("*") if p.is_dir())]:
                out += [int(x) for x in (d / "cgroup.procs").read_text().split()]
        return out

    def signal(self, sig: signal.Signals) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def kill(self, timeout: float = 5.0) -> bool:
        """SIGKILL every member (``cgroup.kill``, else one by one) until none is left; True when empty."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.pids():
                return True
            try:
                (self.path / "cgroup.kill").write_text("1")
            except OSError:
                self.signal(signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def remove(self) -> None:
        self.kill()
        if self._procs >= 0:
            os.close(self._procs)
            self._procs = -1
        # deepest first; a sub-cgroup gone meanwhile (another cleanup of the pod, the kernel's) is skipped: os.walk
        # ignores a directory that vanished under it, where Path.rglob raised and killed the cleanup's thread
        for root, dirs, _files in os.walk(self.path, topdown=False):
            for name in dirs:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(root, name))
        for _ in range(50):  # a killed member leaves the cgroup once its parent has reaped it
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)


# ----------------------------------------------------------------------------------------- the supervisor


def restrict(ruleset_fd: int) -> None:
    """Landlock: no new privileges, then the ruleset (in the child before exec; exits 126 when refused)."""
    if _libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), *(ctypes.c_ulong(v) for v in (1, 0, 0, 0))) != 0:
        os._exit(126)
    if _libc.syscall(ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)) != 0:
        os._exit(126)


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (by parent pid, all of /proc read once)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def _kill_tree(sig: int) -> int:
    me = os.getpid()
    pids = descendants(me)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return len(pids)


def supervise(ruleset_fd: int, shm_size: int, grace_s: float, env_fd: int, argv: list[str]) -> int:
    """The per-pod supervisor (hosts without a usable cgroup): run ``argv`` confined, with the environment
    read from ``env_fd`` (``NAME=value`` NUL-separated: the pod's ``LD_PRELOAD`` or ``PYTHONPATH`` never reach
    this unconfined process), keep every process it starts in this process's tree, and end them all with it.
    Returns the main process's exit code."""
    blob = b""
    with os.fdopen(env_fd, "rb") as f:
        blob = f.read()
    env = dict(item.split(b"=", 1) for item in blob.split(b"\0") if b"=" in item)
    parent = os.getppid()
    _libc.prctl(ctypes.c_int(_PR_SET_CHILD_SUBREAPER), ctypes.c_ulong(1), *(ctypes.c_ulong(0),) * 3)
    _libc.prctl(ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGTERM), *(ctypes.c_ulong(0),) * 3)
    stopping: list[float] = []

    def on_term(_sig: int, _frame: object) -> None:
        if not stopping:
            stopping.append(time.monotonic() + grace_s)
            _kill_tree(signal.SIGTERM)
            signal.setitimer(signal.ITIMER_REAL, max(grace_s, 0.01))

    def on_alarm(_sig: int, _frame: object) -> None:
        _kill_tree(signal.SIGKILL)
        signal.setitimer(signal.ITIMER_REAL, 0.1)

    shm = ShmMount(shm_size) if shm_size > 0 else None
    main = os.fork()
    if main == 0:
        try:
            if shm is not None and shm.apply() != 0:
                os._exit(124)
            if ruleset_fd >= 0:
                restrict(ruleset_fd)
                os.close(ruleset_fd)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    if ruleset_fd >= 0:
        os.close(ruleset_fd)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    signal.signal(signal.SIGALRM, on_alarm)
    if os.getppid() != parent:  # the executor died before PDEATHSIG was set
        on_term(signal.SIGTERM, None)
    code = 0
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == main:
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code
            # the container's main process ended: nothing it started outlives it (its PID namespace's end)
            while _kill_tree(signal.SIGKILL):
                with contextlib.suppress(ChildProcessError):
                    while os.waitpid(-1, os.WNOHANG)[0]:
                        pass
                time.sleep(0.02)
    return code


def env_fd(env: dict[str, str]) -> int:
    """A file descriptor holding ``env`` for ``supervise`` (a memfd, read from its start)."""
    fd = os.memfd_create("pod-env", 0)
    os.write(fd, b"\0".join(f"{k}={v}".encode() for k, v in env.items()))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def supervisor_argv(
    python: str, ruleset_fd: int, shm_size: int, grace_s: float, env: int, argv: list[str]
) -> list[str]:
    """The command that runs ``argv`` under ``supervise`` (this file as a script, ``-I -S``: no ``PYTHON*``
    variable nor site-packages of anyone's); ``env``: the descriptor of the program's environment."""
    return [
        python,
        "-I",
        "-S",
        __file__,
        str(ruleset_fd),
        str(shm_size),
        repr(grace_s),
        str(env),
        "--",
        *argv,
    ]


if __name__ == "__main__":
    fd, size, grace, env = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    sys.exit(supervise(fd, size, grace, env, sys.argv[6:]))
