"""Confining the processes of a pod the local Ray executor runs on this machine: Linux Landlock.

A Ray node of a RayCluster (its raylet, GCS, dashboard, Ray workers, a RayJob's entrypoint and everything they
start) runs as the twin's own user. On GKE each is a container that sees only its own files. Here, Landlock
(an unprivileged Linux security module, kernel 5.13+) gives the same boundary for files: the process and every
child it ever starts can read and execute only the system's directories (``/usr``, ``/etc``, ...), the Python
installation and the directories on its ``sys.path``, and can write only its own directories (the pod's
directory: working directory, home, temporary files, ConfigMap and ServiceAccount token files; the node's Ray
temp directory) and ``/dev``'s shared memory and terminals, and read and write only the character devices a job needs (``/dev/null``,
``zero``, ``full``, ``random``, ``urandom``, ``tty``, ``ptmx``; no block device, ``/dev/kvm`` nor ``/dev/fuse``).
Everything else — the twin's home (``$FLEXQ_HOME``: its token, PKI, kubeconfig and
database), the user's home (``~/.kube``, ``~/.config/gcloud``), another pod's directory — is refused (EACCES).
With Landlock ABI 6+ the process also cannot signal, nor connect to an abstract Unix socket of, a process
outside its domain; and Landlock itself keeps a confined process from ptracing (so from reading
``/proc/<pid>/environ``, ``mem``, ``root``, ``fd/``) the twin or another pod, and from changing its mounts.

Owns: ``abi()`` (the kernel's Landlock ABI, 0 when it has none), ``Confinement`` (the rules of one pod: built
in the parent, applied in the child between ``fork`` and ``exec`` by ``preexec``, so the pod's environment —
``LD_PRELOAD``, ``PYTHONPATH`` — reaches only the confined program), and ``system_read_paths()``. A minimal
binding of Landlock's three system calls through ``ctypes`` (PyPI has no maintained Landlock package: the
``landlock`` project is a 2025 pre-release). Not confined: the network (Ray's workers bind ports chosen at run
time), and what root may do beyond files if the twin runs as root. Must not import anything in flexq.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# file-system rights by the ABI that brought them
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV

SYSTEM_DIRS = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
)
# /dev: only what a training job needs. Writable beneath: /dev/shm (the executor grants it only where it is the
# pod's own tmpfs: flexq.kuberay.podreaper) and /dev/pts (terminals);
# read and write: the character devices below; list: /dev itself. Never a block device (/dev/loop*, a disk: on a
# host where it opens, the files of every user), /dev/kvm, /dev/fuse or any other device (issue 49).
WRITABLE_SYSTEM_DIRS = ("/dev/shm", "/dev/pts")
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx")
LISTED_DIRS = ("/dev",)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


def _syscall(number: int, *args: object) -> int:
    return int(_libc.syscall(ctypes.c_long(number), *args))


_NO_NEW_PRIVS_ARGS = (ctypes.c_int(_PR_SET_NO_NEW_PRIVS), *(ctypes.c_ulong(v) for v in (1, 0, 0, 0)))


def abi() -> int:
    """The Landlock ABI version the running kernel offers (0: none, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _syscall(
        _SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    return max(0, version)


def _fs_rights(version: int) -> int:
    rights = _ABI1
    if version >= 2:
        rights |= _REFER
    if version >= 3:
        rights |= _TRUNCATE
    if version >= 5:
        rights |= _IOCTL_DEV
    return rights


def system_read_paths() -> list[str]:
    """What every confined process may read and execute: the system's directories, this Python's
    installation and the absolute directories on its ``sys.path`` (the site-packages Ray is imported from)."""
    paths = [
        *SYSTEM_DIRS,
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        str(Path(sys.executable).resolve().parent),
    ]
    paths += [p for p in sys.path if p and os.path.isabs(p)]
    return paths


def _beneath(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class Confinement:
    """Landlock rules for one pod's processes: ``read`` (read and execute beneath), ``write`` (every right
    beneath), ``files`` (read exactly these files), never granting a directory that holds one of ``protected``
    (a rule on ``/work`` would open ``/work/.flexq``: such a rule is dropped, and listed in ``dropped``)."""

    def __init__(
        self,
        read: Iterable[str | Path],
        write: Iterable[str | Path],
        files: Iterable[str | Path] = (),
        protected: Iterable[str | Path] = (),
        devices: Iterable[str | Path] = DEVICE_FILES,
        listed: Iterable[str | Path] = LISTED_DIRS,
    ) -> None:
        self.version = abi()
        guarded = [Path(os.path.realpath(p)) for p in protected]
        self.dropped: list[str] = []

        def keep(paths: Iterable[str | Path], check: bool = True) -> list[str]:
            out: list[str] = []
            for p in paths:
                real = Path(os.path.realpath(p))
                if check and any(_beneath(g, real) for g in guarded):
                    self.dropped.append(str(p))
                elif real.exists() and str(real) not in out:
                    out.append(str(real))
            return out

        self.read, self.write, self.files = keep(read), keep(write), keep(files, check=False)
        self.devices, self.listed = keep(devices, check=False), keep(listed, check=False)
        self._fd = -1

    @property
    def available(self) -> bool:
        return self.version > 0

    def _ruleset(self) -> int:
        fs = _fs_rights(self.version)
        attr = _RulesetAttr(fs, 0, (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if self.version >= 6 else 0)
        size = ctypes.sizeof(_RulesetAttr) if self.version >= 6 else (16 if self.version >= 4 else 8)
        fd = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
        try:
            read_dir = _EXECUTE | _READ_FILE | _READ_DIR
            device = _READ_FILE | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV
            for paths, rights in (
                (self.read, read_dir),
                (self.write, fs),
                (self.files, _READ_FILE),
                (self.devices, device),
                (self.listed, _READ_DIR),
            ):
                for p in paths:
                    self._add(fd, p, rights, fs)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _add(fd: int, path: str, rights: int, handled: int) -> None:
        flags = os.O_PATH | os.O_CLOEXEC
        target = os.open(path, flags)
        try:
            if not os.path.isdir(path):
                rights &= _FILE_RIGHTS
            rule = _PathBeneathAttr(rights & handled, target)
            if (
                _syscall(
                    _SYS_ADD_RULE,
                    ctypes.c_int(fd),
                    ctypes.c_int(_RULE_PATH_BENEATH),
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                )
                != 0
            ):
                err = ctypes.get_errno()
                raise OSError(err, f"landlock_add_rule {path}: {os.strerror(err)}")
        finally:
            os.close(target)

    @contextlib.contextmanager
    def ruleset(self) -> Iterator[int]:
        """The ruleset's file descriptor for a child to restrict itself with (-1 when the kernel has no
        Landlock), closed when the block ends."""
        if not self.available:
            yield -1
            return
        fd = self._ruleset()
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def preexec(self) -> Iterator[Callable[[], None] | None]:
        """The ``preexec_fn`` that confines a child before it runs its program (None when the kernel has no
        Landlock): the rules are built here in the parent, the child makes two system calls. Closes the
        ruleset when the block ends (after ``Popen``)."""
        if not self.available:
            yield None
            return
        fd = self._ruleset()

        def confine() -> None:  # in the child, between fork and exec: no allocation-heavy Python here
            if _libc.prctl(*_NO_NEW_PRIVS_ARGS) != 0:
                os._exit(126)
            if _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
                os._exit(126)

        try:
            yield confine
        finally:
            os.close(fd)
