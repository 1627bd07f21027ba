"""Fast deep copies of JSON-shaped data (what every stored object is).

Must not import other flexq modules.
"""

from __future__ import annotations

import gc
import marshal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["clone", "clone_many", "no_gc"]


def clone_many(objs: list[Any]) -> list[Any]:
    """Deep copies of many JSON-shaped objects at once: one ``marshal`` round trip copies them in C, about
    twice as fast as ``clone`` one by one (15,000 Workloads: 0.2 s against 0.34 s of CPU). Falls back to
    ``clone`` when an object holds something marshal does not take."""
    try:
        return marshal.loads(marshal.dumps(objs))  # type: ignore[no-any-return]
    except (ValueError, TypeError):
        return [clone(o) for o in objs]


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while many acyclic copies are made (copying 15,000 stored objects
    otherwise sets off collections that walk every object the twin holds, more than doubling the cost)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_ATOMS = frozenset((str, int, float, bool, type(None)))


def clone(obj: Any) -> Any:
    """Fast deep copy of JSON-shaped data (dicts and lists are copied, everything else is shared)."""
    t = type(obj)
    if t is dict:
        return _clone_dict(obj)
    if t is list:
        return _clone_list(obj)
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone(v) for v in obj]
    return obj


def _clone_dict(d: dict) -> dict:
    # exact types tested inline: the store copies on every read and write, so this is a hot path. The loop is
    # written out twice (here and in _clone_list) on purpose: one shared per-value helper, or comprehensions
    # with the same tests, measured 1.5x slower on a Workload.
    out = {}
    for k, v in d.items():
        t = type(v)
        if t is dict:
            v = _clone_dict(v)
        elif t is list:
            v = _clone_list(v)
        elif t not in _ATOMS:
            v = clone(v)
        out[k] = v
    return out


def _clone_list(items: list) -> list:
    out: list = []
    append = out.append
    for v in items:
        t = type(v)
        if t is dict:
            v = _clone_dict(v)
        elif t is list:
            v = _clone_list(v)
        elif t not in _ATOMS:
            v = clone(v)
        append(v)
    return out
