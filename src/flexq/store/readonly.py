"""The store's read-only check (a test setting, ``Store(check_readonly=True)``): stored versions are shared with
every reader (``peek``, ``peek_list``, watch events) and must never be changed in place; this keeps a private copy
of each and names what changed.

Owns: ``Pristine`` — the copies, compared when a version is replaced (``replaced``), for the versions a reconcile
read (``changed``, what ``Store.verify_reads`` names the controller by) and for every version
(``changed_any``). Reads no store itself: the store passes its objects. Must not import ``flexq.runtime``, domain
packages or ``flexq.http``.
"""

from __future__ import annotations

from collections.abc import Iterable

from flexq.api.jsoncopy import clone
from flexq.store.index import Key

Objs = dict[str, dict[Key, dict]]  # kind key -> key -> stored version (``Objects._objs``)


class Pristine:
    """A private copy of every stored version, by (kind key, key)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, Key], dict] = {}

    def replaced(self, kk: str, key: Key, old: dict | None, new: dict | None) -> None:
        """``old`` is replaced by ``new`` (None: removed): AssertionError if ``old`` was changed in place."""
        if old is not None and (kk, key) in self.kept and self.kept[(kk, key)] != old:
            raise AssertionError(f"stored {kk} {key} was changed in place (stored objects are read-only)")
        if new is None:
            self.kept.pop((kk, key), None)
        else:
            self.kept[(kk, key)] = clone(new)

    def changed(self, objs: Objs, keys: Iterable[tuple[str, Key]]) -> list[str]:
        """The versions of ``keys`` still stored that differ from their copies, named ``kind ns/name``."""
        bad = []
        for kk, key in keys:
            cur = objs.get(kk, {}).get(key)
            kept = self.kept.get((kk, key))
            if cur is not None and kept is not None and cur != kept:
                bad.append(f"{kk} {key[0] + '/' if key[0] else ''}{key[1]}")
        return bad

    def changed_any(self, objs: Objs) -> list[str]:
        """Every kept version that differs from (or is no longer) what is stored."""
        return [f"{kk} {key}" for (kk, key), copy in self.kept.items() if objs.get(kk, {}).get(key) != copy]
