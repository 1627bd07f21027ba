"""``flexq convert``: Kueue manifests from kueue.x-k8s.io/v1beta1 to v1beta2, as ``kubectl convert`` does for
the built-in kinds.

Owns reading the inputs (files, ``-`` for stdin; each at most 8 MiB, only regular files or stdin, UTF-8), the
conversion through ``flexq.api.kueue_convert`` (the conversion the twin's API server runs), and where the result
goes: stdout, or ``--output FILE`` (written whole, or not at all). Notes on what did not convert losslessly go to
stderr, one line each, so stdout can be piped to ``kubectl apply -f -``. Any refusal (unreadable file, bad YAML,
an invalid Kueue object) names the file, the document and the field, exits 1 and writes nothing.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from flexq.api.kueue_convert import TARGET, convert_text
from flexq.errors import InputError

__all__ = ["add_parser", "run", "MAX_BYTES"]

MAX_BYTES = 8 * 1024 * 1024


def _read(name: str) -> str:
    if name == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        path = Path(name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise InputError(f"cannot read it: {exc.strerror or exc}", source=name) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory, a FIFO, a device: never waited on
                raise InputError("not a regular file", source=name)
            with os.fdopen(fd, "rb") as f:
                fd = -1
                data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise InputError(f"cannot read it: {exc.strerror or exc}", source=name) from None
        finally:
            if fd >= 0:
                os.close(fd)
    if len(data) > MAX_BYTES:
        raise InputError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB", source=name)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 (byte {exc.start})", source=name) from None


def _write(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file beside it and a rename (whole, or not at all)."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(args: argparse.Namespace, console: Console, err_console: Console) -> int:
    def say_err(text: str) -> None:
        err_console.print(text, markup=False, highlight=False, soft_wrap=True)

    if args.output_version != TARGET:
        say_err(f"error: --output-version: flexq convert writes {TARGET} only, not {args.output_version!r}")
        return 1
    if args.filename.count("-") > 1:
        say_err("error: FILE: stdin (-) can be read only once")
        return 1
    out: list[str] = []
    notes: list[str] = []
    converted = 0
    try:
        for name in args.filename:
            result = convert_text(_read(name), "STDIN" if name == "-" else name)
            text = result.text
            if out and text and not out[-1].endswith("\n"):
                out.append("\n")
            if out and text and not text.startswith("---"):
                out.append("---\n")
            out.append(text)
            notes += [str(n) for n in result.notes]
            converted += result.converted
        if args.output:
            _write(Path(args.output), "".join(out))
        else:
            sys.stdout.write("".join(out))
            sys.stdout.flush()
    except InputError as exc:
        say_err(f"error: {exc}")
        return 1
    except OSError as exc:
        say_err(f"error: {args.output}: {exc.strerror or exc}")
        return 1
    for note in notes:
        say_err(f"note: {note}")
    if args.output or not sys.stdout.isatty():
        say_err(
            f"{converted} Kueue object(s) converted to {TARGET}"
            + (f" into {args.output}" if args.output else "")
        )
    return 0


def add_parser(sub: Any, examples: Callable[..., str]) -> argparse.ArgumentParser:
    c = sub.add_parser(
        "convert",
        help="convert Kueue manifests from kueue.x-k8s.io/v1beta1 to v1beta2 (Kueue 0.20 serves only v1beta2)",
        description="Convert the Kueue objects of manifests from kueue.x-k8s.io/v1beta1, which Kueue 0.20 and "
        "later no longer serve (kueue#14558), to v1beta2, with the conversion the twin's API server runs. "
        "Files or stdin, several documents each; other objects pass through unchanged, comments are kept where "
        "only lines change. What does not convert losslessly is named on stderr; a malformed manifest is "
        "refused naming the file, the document and the field, and nothing is written.",
        epilog=examples(
            "flexq convert dws-tpu-queue.yaml > dws-tpu-queue.v1beta2.yaml",
            "envsubst < dws-tpu-queue.yaml | flexq convert - | kubectl apply -f -",
            "flexq convert queue.yaml team-queues.yaml -o converted.yaml",
        ),
    )
    c.add_argument("filename", nargs="+", metavar="FILE", help="the manifests to convert (- for stdin)")
    c.add_argument("-o", "--output", default=None, metavar="FILE", help="write here instead of stdout")
    c.add_argument(
        "--output-version", default=TARGET, help="the version to convert to (the only one: v1beta2)"
    )
    return c
