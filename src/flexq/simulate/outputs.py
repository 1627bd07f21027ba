"""Where ``flexq simulate`` writes: the output folder and each file in it, and nothing else.

A study folder is often someone else's (a colleague's, a downloaded example). Its ``results/`` may ship a symbolic
link (``results/jobs.csv -> ../../.bashrc``) or a named pipe where a result goes; writing through either would
overwrite a file the user never named or block forever. So:

- the output folder must be a real directory (made if missing); a symbolic link in its place is refused;
- a file already there must be a regular file; a link, a FIFO, a device, a socket or a folder is refused, naming
  it, before anything is written;
- each file is written to a new temporary file beside it (created exclusively, never through a link) and renamed
  over the old one: a reader sees the old file or the whole new one, and a crash leaves no half-written result;
- one folder holds one run's results (``claim``, ``record``): a plain run's and a sweep's never mix, files of an
  earlier run that this one did not write are removed, and a folder holding files simulate did not write is
  refused (``--force`` writes there anyway).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from flexq.errors import InputError
from flexq.simulate.inputs import file_kind, open_regular

__all__ = ["output_dir", "write_file", "check_target", "claim", "record", "MARKER"]


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # once, at import: os.umask is process-wide and a reader must set it to read it


def output_dir(out: Path, field: str = "--out") -> Path:
    """``out``, made if missing, once it is known to be a directory that is not a symbolic link."""
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        st = None
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot make the output directory {out}: {getattr(exc, 'strerror', None) or exc}", field=field
        ) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise InputError(
            f"{out} is a symbolic link; give the directory it points to, or another one, as the output directory",
            field=field,
        )
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{out} is {_kind(st.st_mode)}, not a directory", field=field)
    if st is None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as exc:
            raise InputError(
                f"cannot make the output directory {out}: {getattr(exc, 'strerror', None) or exc}",
                field=field,
            ) from None
        if os.path.islink(out) or not out.is_dir():  # made by someone else in between
            raise InputError(f"{out} is not a directory", field=field)
    else:
        _no_traps(out)
    return out


RESULT_SUFFIXES = (".csv", ".json", ".png", ".html", ".diff", ".yaml")
_SCAN_LIMIT = 10_000


def _no_traps(out: Path) -> None:
    """Before any run: a file of a kind simulate writes (``.csv``, ``.json``, ``.png``, ``.html``, ``.diff``)
    that is a link or not a regular file is refused now, not after an hour of simulation."""
    try:
        with os.scandir(out) as it:
            for i, entry in enumerate(it):
                if i >= _SCAN_LIMIT:
                    return  # each write still checks its own file
                if entry.name.endswith(RESULT_SUFFIXES):
                    check_target(out / entry.name)
    except OSError as exc:
        raise InputError(
            f"cannot read the output directory {out}: {exc.strerror or exc}", field="--out"
        ) from None


def _kind(mode: int) -> str:
    return "a symbolic link" if stat.S_ISLNK(mode) else file_kind(mode)


def check_target(path: Path) -> None:
    """Refuses ``path`` unless it is missing or a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}", source=str(path)) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"refusing to write {path.name}: it is {_kind(st.st_mode)}, not a regular file "
            "(remove it, or choose another output folder)",
            source=str(path),
        )


def write_file(path: Path, data: str | bytes) -> Path:
    """Writes ``data`` to ``path`` (text as UTF-8) through a temporary file and a rename; see the module."""
    check_target(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}", source=str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(tmp, 0o644 & ~_UMASK)
        check_target(path)  # once more, just before the rename (which replaces a link, never follows it)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputError(f"cannot write {path}: {exc.strerror or exc}", source=str(path)) from None
        raise
    return path


# -- one output folder, one run's files -------------------------------------------------------------------------
MARKER = (
    ".flexq-simulate.json"  # what the last run wrote here: {"kind": "simulation" | "sweep", "files": [...]}
)
_LIST_LIMIT = 5


def _marker(out: Path) -> dict[str, Any]:
    try:
        with open_regular(out / MARKER, str(out / MARKER), what="output record") as f:
            doc = json.loads(f.read(1 << 20) or b"{}")
    except (InputError, OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) and isinstance(doc.get("files"), list) else {}


def claim(out: Path, kind: str, *, force: bool = False, field: str = "--out") -> None:
    """Before any run: ``out`` must be missing, empty, or hold only an earlier ``kind`` output of flexq
    simulate (its files, listed in ``MARKER``, are then replaced). A folder holding another kind's results (a
    sweep's beside a plain run's) or files simulate did not write is refused, naming some, unless ``force``:
    results that do not belong together are never left side by side."""
    output_dir(out, field=field)  # a link or a special file where a result goes: refused first
    try:
        names = sorted(e.name for e in os.scandir(out) if not (e.name.startswith(".") and e.name != MARKER))
    except FileNotFoundError:
        return
    except NotADirectoryError:
        return  # output_dir says what it is
    except OSError as exc:
        raise InputError(f"cannot read the output folder {out}: {exc.strerror or exc}", field=field) from None
    if force or not names:
        return
    mark = _marker(out)
    listed = {str(n) for n in mark.get("files") or []}
    other = [n for n in names if n != MARKER and n not in listed]
    what = "a sweep" if kind == "sweep" else "a simulation"
    if mark and mark.get("kind") != kind:
        theirs = "a sweep's" if mark.get("kind") == "sweep" else "a simulation's"
        raise InputError(
            f"{out} holds {theirs} results ({_some(sorted(listed))}); {what} writes its own folder: give another "
            "--out, or --force to replace them",
            field=field,
        )
    if other:
        raise InputError(
            f"{out} is not empty and holds files flexq simulate did not write there ({_some(other)}): give "
            "another --out (an empty or new folder), or --force to write there anyway",
            field=field,
        )


def _some(names: list[str]) -> str:
    more = f", ... {len(names) - _LIST_LIMIT} more" if len(names) > _LIST_LIMIT else ""
    return ", ".join(names[:_LIST_LIMIT]) + more


def record(out: Path, kind: str, files: list[Path]) -> None:
    """After a run wrote ``files`` into ``out``: the files an earlier run left that this one did not write
    (a variant since renamed, a sweep's beside a simulation's under --force) are removed, and ``MARKER``
    lists this run's."""
    names = sorted({p.name for p in files if p.parent == out})
    for stale in _marker(out).get("files") or []:
        name = str(stale)
        if name in names or "/" in name or name.startswith(".") or not name.endswith(RESULT_SUFFIXES):
            continue
        path = out / name
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                path.unlink()
        except OSError:
            continue
    write_file(out / MARKER, json.dumps({"kind": kind, "files": names}, indent=1) + "\n")
