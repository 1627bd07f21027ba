"""Reading a study's files safely: bounded sizes, UTF-8 (with or without a BOM), YAML through the API server's
decoder (duplicate keys refused, nesting and alias expansion bounded), file references kept inside the study's
directory, and typed field checks that name the file, line and field of anything wrong.

The limits (``LIMITS``) keep a run bounded in memory and time whatever the input: a study or manifest file of at
most 8 MiB, a trace of at most 256 MiB (lines of at most 1 MiB), at most 1,000,000 jobs of traffic, at most 10,000 pods in one pod set,
times (submission, run time, ``until``, a generator's duration) of at most 366 days, at most 10,000 replicas and
100 variants. Must not import flexq.http.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from flexq.api.decode import check_decoded, load_yaml, load_yaml_all
from flexq.errors import ApiError, InputError

__all__ = [
    "MAX_FILE_BYTES",
    "show",
    "refuse_unknown",
    "MAX_LINE_BYTES",
    "MAX_TRACE_BYTES",
    "MAX_JOBS",
    "MAX_PODS",
    "MAX_SECONDS",
    "MAX_REPLICAS",
    "MAX_VARIANTS",
    "MAX_NODES",
    "INT32",
    "LIMITS",
    "read_text",
    "open_regular",
    "read_lines",
    "unknown_key",
    "parse_yaml",
    "parse_yaml_all",
    "ref_path",
    "whole",
    "number",
    "boolean",
    "string",
    "Refused",
    "as_whole",
    "as_number",
    "as_bool",
    "as_text",
]

MAX_FILE_BYTES = 8 * 1024 * 1024  # a simulation file, manifest, template, capacity profile or generator
MAX_LINE_BYTES = 1024 * 1024  # one line of a trace
MAX_TRACE_BYTES = 256 * 1024 * 1024  # a whole trace (refused before reading it)
MAX_JOBS = 1_000_000  # jobs of traffic in one study
MAX_PODS = 10_000  # pods of one pod set
MAX_SECONDS = 366 * 86400.0  # a submission time, a run time, `until`, a generator's duration
MAX_REPLICAS = 10_000
MAX_VARIANTS = 100
MAX_NODES = 15_000  # GKE's node limit of a Standard cluster, for a node pool's counts
INT32 = (-(2**31), 2**31 - 1)
LIMITS = {
    "file bytes": MAX_FILE_BYTES,
    "trace line bytes": MAX_LINE_BYTES,
    "trace bytes": MAX_TRACE_BYTES,
    "jobs": MAX_JOBS,
    "pods per pod set": MAX_PODS,
    "seconds": MAX_SECONDS,
    "replicas": MAX_REPLICAS,
    "variants": MAX_VARIANTS,
    "nodes per pool": MAX_NODES,
}


def unknown_key(keys: Any, known: Any) -> str | None:
    """The first key (as text) of ``keys`` not in ``known``, or None (keys of any YAML type)."""
    bad = sorted(str(k) for k in keys if not isinstance(k, str) or k not in known)
    return bad[0] if bad else None


def refuse_unknown(keys: Any, known: Any, src: str, field: str, *, what: str = "field") -> None:
    """Raise ``InputError`` naming the first key of ``keys`` not in ``known`` (and every known one), at
    ``field.key`` (``key`` alone when ``field`` is empty)."""
    bad = unknown_key(keys, known)
    if bad:
        raise InputError(
            f"unknown {what} {bad!r} (known: {', '.join(sorted(known))})",
            source=src,
            field=f"{field}.{bad}" if field else bad,
        )


def show(value: Any, width: int = 80) -> str:
    """``repr(value)``, cut to ``width`` characters (a message never repeats a 50 MB field)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _decode(data: bytes, src: str, line_offset: int = 0) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1 + line_offset
        raise InputError(
            f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})", source=src, line=line
        ) from None


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for messages ("a named pipe (FIFO)", ...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(
    path: Path, src: str, *, what: str = "file", field: str = "", line: int | None = None
) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file. A named pipe, a device, a socket or a directory is
    refused without waiting on it: the file is opened non-blocking (opening a FIFO with no writer does not
    block then) and checked on the open descriptor, so nothing can swap it between the check and the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(
            f"cannot read {what} {path}: {exc.strerror or exc}", source=src, line=line, field=field
        ) from None
    except ValueError as exc:  # a NUL byte in the path
        raise InputError(
            f"cannot read {what} {show(str(path))}: {exc}", source=src, line=line, field=field
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(
                f"cannot read {what} {path}: it is {file_kind(mode)}, not a regular file",
                source=src,
                line=line,
                field=field,
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(
    path: Path,
    src: str,
    *,
    what: str = "file",
    field: str = "",
    line: int | None = None,
    limit: int = MAX_FILE_BYTES,
) -> str:
    """The UTF-8 text of ``path`` (a leading BOM dropped), at most ``limit`` bytes. ``src``/``field`` name the
    reference in messages about a file that cannot be read; problems inside the file name the file itself.
    Only a regular file is read (see ``open_regular``)."""
    with open_regular(path, src, what=what, field=field, line=line) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise InputError(
                f"cannot read {what} {path}: {exc.strerror or exc}", source=src, line=line, field=field
            ) from None
    if len(data) > limit:
        raise InputError(f"the {what} is larger than {limit // (1024 * 1024)} MiB", source=str(path))
    return _decode(data, str(path))


def read_lines(path: Path, src: str, *, field: str = "") -> Iterator[tuple[int, str]]:
    """(line number, text without its line ending) of each line of ``path``, streamed: a line longer than
    ``MAX_LINE_BYTES`` is refused without reading the rest of it. CR LF and LF endings; a BOM is dropped.
    Only a regular file is read (a FIFO would never end)."""
    f = open_regular(path, src, what="the trace", field=field)
    name = str(path)
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
        except OSError:
            size = 0
        if size > MAX_TRACE_BYTES:
            raise InputError(
                f"the trace is larger than {MAX_TRACE_BYTES // (1024 * 1024)} MiB (at most {MAX_JOBS:,} jobs)",
                source=name,
            )
        n = 0
        while True:
            try:
                raw = f.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise InputError(f"cannot read the trace: {exc.strerror or exc}", source=name) from None
            if not raw:
                return
            n += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise InputError(f"the line is longer than {MAX_LINE_BYTES // 1024} KiB", source=name, line=n)
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            text = _decode(raw, name, n - 1)
            yield n, text.rstrip("\r\n")


_LINE = re.compile(r"line (\d+)")


def _yaml_problem(exc: ApiError, src: str, line_offset: int = 0) -> InputError:
    msg = exc.message
    m = _LINE.search(msg)
    line = int(m.group(1)) + line_offset if m else None
    msg = msg.replace("error converting YAML to JSON: yaml: ", "")
    msg = re.sub(r'\s*in "<unicode string>", line \d+, column \d+', "", msg).strip()
    return InputError(f"not valid YAML: {msg}", source=src, line=line)


def parse_yaml(text: str, src: str) -> Any:
    """One YAML document as the API server decodes it (duplicate keys refused), with nesting and expanded size
    bounded (an alias bomb is refused after a bounded walk)."""
    try:
        data = load_yaml(text)
    except ApiError as exc:
        raise _yaml_problem(exc, src) from None
    _bounded(data, src)
    return data


def parse_yaml_all(text: str, src: str) -> list[Any]:
    try:
        docs = load_yaml_all(text)
    except ApiError as exc:
        raise _yaml_problem(exc, src) from None
    for d in docs:
        _bounded(d, src)
    return docs


def _bounded(data: Any, src: str) -> None:
    try:
        check_decoded(data, limit=MAX_FILE_BYTES)
    except ApiError as exc:
        where = _non_finite(data) if "unsupported value" in exc.message else None
        if where is not None:
            raise InputError(
                "numbers must be finite (.nan and .inf are not numbers here)", source=src, field=where
            ) from None
        raise InputError(exc.message, source=src) from None


def _non_finite(data: Any) -> str | None:
    """The path of the first NaN or infinity in ``data`` (each shared value visited once)."""
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return path or "(top level)"
        if isinstance(value, dict | list) and id(value) not in seen:
            seen.add(id(value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in reversed(list(items)):
                stack.append((v, f"{path}[{k}]" if isinstance(k, int) else f"{path}.{k}" if path else str(k)))
    return None


def ref_path(base: Path, ref: Any, src: str, field: str, line: int | None = None) -> Path:
    """The file ``ref`` names, relative to ``base``: a relative path that stays inside ``base`` (no absolute
    paths, no ``..`` out of it, no symbolic link pointing out of it)."""
    if not isinstance(ref, str) or not ref.strip():
        raise InputError(f"a file name is required, got {show(ref)}", source=src, line=line, field=field)
    if "\x00" in ref or len(ref) > 4096:
        raise InputError("not a valid file name", source=src, line=line, field=field)
    p = Path(ref)
    if p.is_absolute():
        raise InputError(
            f"{show(ref)}: file references are relative to the study's directory",
            source=src,
            line=line,
            field=field,
        )
    try:
        root = base.resolve()
        full = (base / p).resolve()
    except (OSError, RuntimeError) as exc:
        raise InputError(f"{show(ref)}: {exc}", source=src, line=line, field=field) from None
    if full != root and root not in full.parents:
        raise InputError(
            f"{show(ref)} is outside the study's directory {base}", source=src, line=line, field=field
        )
    return base / p


class Refused(ValueError):
    """A value refused for what it is, in one line and without saying where: the caller names the file, line and
    field (``whole`` and its siblings as an ``InputError``, a pydantic model through
    ``flexq.simulate.schema.input_error``). ``at`` is where, below the value checked, the refusal is about (an
    unknown key, the second of two duplicates: ``("variants", 3, "name")``)."""

    def __init__(self, message: str, *, at: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.at = at


def as_whole(value: Any, lo: int, hi: int, what: str = "a whole number") -> int:
    """An integer in [lo, hi] (a numeral string is accepted: CSV cells are text), else ``Refused``."""
    v: int | None = None
    integral = isinstance(value, float) and math.isfinite(value) and value.is_integer()
    numeral = isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d{1,19}\s*", value)
    if isinstance(value, bool):
        v = None
    elif isinstance(value, int):
        v = value
    elif integral or numeral:
        v = int(value)
    if v is None:
        raise Refused(f"must be {what}, got {show(value)}")
    if v < lo:
        raise Refused(f"must be at least {lo}, got {v}")
    if v > hi:
        raise Refused(f"must be at most {hi:,}, got {v:,}")
    return v


def as_number(value: Any, lo: float, hi: float) -> float:
    """A finite number in [lo, hi] (a numeral string is accepted), else ``Refused``."""
    v: float | None = None
    numeral = isinstance(value, str) and re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", value)
    if (isinstance(value, int | float) and not isinstance(value, bool)) or numeral:
        v = float(value)
    if v is None or not math.isfinite(v):
        raise Refused(f"must be a finite number, got {show(value)}")
    if v < lo:
        raise Refused(f"must be at least {lo:g}, got {v:g}")
    if v > hi:
        raise Refused(f"must be at most {hi:g}, got {v:g}")
    return v


def as_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Refused(f"must be true or false, got {show(value)}")
    return value


def as_text(value: Any, *, allow_number: bool = True) -> str:
    """A text field (a number is taken as its text unless ``allow_number`` is false), else ``Refused``."""
    if isinstance(value, str):
        return value
    if allow_number and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise Refused(f"must be text, got {show(value)}")


def whole(
    value: Any,
    src: str,
    field: str,
    lo: int,
    hi: int,
    *,
    line: int | None = None,
    what: str = "a whole number",
) -> int:
    """``as_whole``, its refusal an ``InputError`` naming ``src``, ``line`` and ``field``."""
    try:
        return as_whole(value, lo, hi, what)
    except Refused as exc:
        raise InputError(str(exc), source=src, line=line, field=field) from None


def number(value: Any, src: str, field: str, lo: float, hi: float, *, line: int | None = None) -> float:
    """``as_number``, its refusal an ``InputError`` naming ``src``, ``line`` and ``field``."""
    try:
        return as_number(value, lo, hi)
    except Refused as exc:
        raise InputError(str(exc), source=src, line=line, field=field) from None


def boolean(value: Any, src: str, field: str) -> bool:
    try:
        return as_bool(value)
    except Refused as exc:
        raise InputError(str(exc), source=src, field=field) from None


def string(value: Any, src: str, field: str, *, line: int | None = None, allow_number: bool = True) -> str:
    """``as_text``, its refusal an ``InputError`` naming ``src``, ``line`` and ``field``."""
    try:
        return as_text(value, allow_number=allow_number)
    except Refused as exc:
        raise InputError(str(exc), source=src, line=line, field=field) from None
