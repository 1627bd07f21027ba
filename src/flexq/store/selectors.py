"""Label and field selectors, parsed from kubectl's string form or from a LabelSelector object.

Must not import flexq modules other than ``flexq.errors``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial

from flexq.errors import BadRequest

Matcher = Callable[[dict], bool]

_REQ = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
    r"(?:(?P<op>==|=|!=|\s+in\s+|\s+notin\s+)\s*(?P<val>\([^)]*\)|[A-Za-z0-9_.-]*))?\s*$"
)


def _split(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _has(key: str, labels: dict) -> bool:
    return key in labels


def _lacks(key: str, labels: dict) -> bool:
    return key not in labels


def _equals(key: str, value: str, labels: dict) -> bool:
    return labels.get(key) == value


def _differs(key: str, value: str, labels: dict) -> bool:
    return labels.get(key) != value


def _among(key: str, values: set[str], labels: dict) -> bool:
    return labels.get(key) in values


def _not_among(key: str, values: set[str], labels: dict) -> bool:
    return labels.get(key) not in values


@lru_cache(maxsize=1024)
def parse_label_selector(text: str | None) -> Matcher:
    """``a=b,c!=d,e in (x,y),!f,g`` -> predicate over a labels dict (parsed once per distinct string:
    controllers list with the same selectors again and again)."""
    if not text or not text.strip():
        return lambda labels: True
    reqs: list[Matcher] = []
    for part in _split(text):
        m = _REQ.match(part)
        if not m:
            raise BadRequest(f"unable to parse requirement: invalid label selector: {part.strip()!r}")
        key, op, val, neg = m.group("key"), (m.group("op") or "").strip(), m.group("val"), m.group("neg")
        if neg:
            if op:
                raise BadRequest(f"unable to parse requirement: {part.strip()!r}")
            reqs.append(partial(_lacks, key))
        elif not op:
            reqs.append(partial(_has, key))
        elif op in ("=", "==", "!=") and (val or "").startswith("("):
            raise BadRequest(
                f"unable to parse requirement: found '(', expected: identifier: {part.strip()!r}"
            )
        elif op in ("=", "=="):
            reqs.append(partial(_equals, key, val))
        elif op == "!=":
            reqs.append(partial(_differs, key, val))
        else:
            if not (val or "").startswith("("):
                raise BadRequest(f"unable to parse requirement: found '{val}', expected: '('")
            values = {x.strip() for x in (val or "").strip("()").split(",") if x.strip()}
            if not values:
                raise BadRequest(
                    f"unable to parse requirement: values: Invalid value: []: for 'in', 'notin' "
                    f"operators, values set can't be empty: {part.strip()!r}"
                )
            if op == "in":
                reqs.append(partial(_among, key, values))
            else:
                reqs.append(partial(_not_among, key, values))
    return lambda labels: all(r(labels) for r in reqs)


def _path_get(obj: dict, path: str) -> str:
    cur: object = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _field_equals(path: str, value: str, obj: dict) -> bool:
    return _path_get(obj, path) == value


def _field_differs(path: str, value: str, obj: dict) -> bool:
    return _path_get(obj, path) != value


@lru_cache(maxsize=1024)
def parse_field_selector(text: str | None) -> Matcher:
    """``metadata.name=x,spec.nodeName!=`` -> predicate over an object."""
    if not text or not text.strip():
        return lambda obj: True
    reqs: list[Matcher] = []
    for part in text.split(","):
        m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise BadRequest(f"invalid field selector: {part!r}")
        path, op, val = m.groups()
        if op == "!=":
            reqs.append(partial(_field_differs, path, val))
        else:
            reqs.append(partial(_field_equals, path, val))
    return lambda obj: all(r(obj) for r in reqs)


def label_equalities(text: str | None) -> dict[str, str]:
    """The ``key=value`` / ``key==value`` requirements of a label selector string (for index lookups; the
    whole selector is still matched)."""
    return dict(_label_equalities(text)) if text else {}


@lru_cache(maxsize=1024)
def _label_equalities(text: str) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for part in _split(text):
        m = _REQ.match(part)
        if (
            m
            and not m.group("neg")
            and (m.group("op") or "").strip() in ("=", "==")
            and not (m.group("val") or "").startswith("(")
        ):
            out[m.group("key")] = m.group("val") or ""
    return tuple(out.items())


def field_equalities(text: str | None) -> list[tuple[str, str]]:
    """The ``path=value`` / ``path==value`` requirements of a field selector string."""
    return list(_field_equalities(text)) if text else []


@lru_cache(maxsize=1024)
def _field_equalities(text: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for part in text.split(","):
        m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=)\s*(.*?)\s*$", part)
        if m:
            out.append((m.group(1), m.group(3)))
    return tuple(out)
