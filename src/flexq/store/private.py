"""Owner-only files and directories for a live twin's state (``FLEXQ_HOME``).

The state directory holds the twin's private key, its bearer token and every object anyone stored (Secrets
among them), so it is kept as a Kubernetes node keeps ``/etc/kubernetes/pki`` and etcd its data directory:
directories ``0700``, files ``0600``, whatever the process umask, and tightened again when an older flexq
left them readable. Must not import flexq modules.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "GCLOUD_DIR",
    "private_dir",
    "private_file",
    "private_home",
    "private_tree",
    "write_private",
]

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str | Path) -> Path:
    """Create ``path`` (and missing parents) if needed; make it owner-only. Returns it."""
    p = Path(path)
    p.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(p, DIR_MODE)
    return p


def private_home(path: str | Path) -> Path:
    """The state directory itself: owner-only, and so are the files an older flexq left in it."""
    p = private_dir(path)
    for name in (
        "state.db",
        "state.db-wal",
        "state.db-shm",
        "state.db-journal",
        "flexq.log",
        "server.json",
        "pid",
        "project",
        "last-port",
    ):
        f = p / name
        if f.exists():
            private_file(f)
    for sub in ("pki", "logs"):
        if (p / sub).is_dir():
            private_dir(p / sub)
    private_tree(p / GCLOUD_DIR)
    return p


# CLOUDSDK_CONFIG of the twin's clients (flexq env): gcloud writes it, with its own umask
GCLOUD_DIR = "gcloud"


def private_tree(path: str | Path, limit: int = 10_000) -> Path:
    """``path`` made owner-only with everything in it (directories ``0700``, files ``0600``): for a folder another
    program writes with its own umask (gcloud's configuration, its credentials among it). Links are left alone."""
    root = private_dir(path)
    for n, (dirpath, dirnames, filenames) in enumerate(os.walk(root)):
        if n > limit:
            break
        for d in dirnames:
            full = Path(dirpath) / d
            if not full.is_symlink():
                os.chmod(full, DIR_MODE)
        for f in filenames:
            full = Path(dirpath) / f
            if not full.is_symlink():
                with contextlib.suppress(FileNotFoundError):
                    os.chmod(full, FILE_MODE)
    return root


def private_file(path: str | Path) -> Path:
    """Create ``path`` empty if it does not exist (never truncating one that does), owner-only. Returns it."""
    p = Path(path)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        os.chmod(p, FILE_MODE)
    return p


def write_private(path: str | Path, text: str) -> Path:
    """Write ``text`` to an owner-only file (created ``0600``, so it is never readable by others meanwhile)."""
    p = private_file(path)
    with open(p, "w") as fh:
        fh.write(text)
    return p
