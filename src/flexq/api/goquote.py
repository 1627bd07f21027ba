"""Go's ``%q`` (``strconv.Quote``) for the values an error message quotes, so that what a client typed comes back
as the API server would print it: control characters, bidi overrides and other invisible runes as escapes
(``\\x1b``, ``\\u202e``), never raw bytes a terminal would act on. No behaviour beyond quoting; no flexq imports.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["go_quote", "go_quote_list", "go_quote_bounded"]

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_PRINTABLE_CATEGORIES = ("L", "M", "N", "P", "S")


def _printable(ch: str) -> bool:
    """Go's ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in _PRINTABLE_CATEGORIES


def go_quote(value: str) -> str:
    """``strconv.Quote(value)``: a double-quoted Go string literal, non-printable runes escaped. A lone
    surrogate (text that was not valid UTF-8) prints as Go prints an invalid byte, ``\\ufffd``."""
    out = ['"']
    for ch in value:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\\ufffd")
        elif _printable(ch):
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def go_quote_bounded(value: str, limit: int = 256) -> str:
    """``go_quote`` of at most ``limit`` characters of ``value`` (``...`` marks a cut): a message stays short
    whatever was sent."""
    if len(value) <= limit:
        return go_quote(value)
    return go_quote(value[:limit]) + "..."


def go_quote_list(values: Iterable[str]) -> str:
    """``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"
