"""Durable storage of objects in SQLite: an acknowledged write survives ``kill -9``.

Owns: the ``Journal`` (one database file for a whole twin, partitioned by store name), transactional
batches (a write and its cascade commit together or not at all), and loading everything back on open.
WAL mode with ``synchronous=FULL``: a commit returns only once it is on disk. The database and its WAL
and shared-memory files are owner-only (``0600``). A boot counter (``next_boot``) tells a resumed twin how
many runs came before. Must not import flexq modules other than ``flexq.errors`` and ``flexq.store.private``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from flexq.errors import InputError
from flexq.store.private import private_file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
  store TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
  rv INTEGER NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (store, kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS counters (store TEXT PRIMARY KEY, rv INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
BOOTS = "#boots"  # the counters row counting openings of the state (no store is named so)


def _dumps(obj: dict) -> str:
    """Compact JSON of an object: orjson (a tenth of the standard library's time, which was most of a small
    write's CPU here), the standard library for what orjson refuses (integers past 64 bits)."""
    try:
        return orjson.dumps(obj).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, separators=(",", ":"))


class Journal:
    """A SQLite file holding every store of a twin."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        # owner-only from its first byte: SQLite gives the -wal and -shm files the database file's mode
        private_file(self.path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._db.execute("SELECT count(*) FROM counters").fetchone()
        except sqlite3.DatabaseError as exc:  # not SQLite, or damaged: left as it is, never overwritten
            self._db.close()
            raise InputError(
                f"not a flexq state database, or a damaged one (SQLite: {exc}); it was left untouched: "
                "move it aside to start a fresh twin, or put back a copy",
                source=self.path,
            ) from None
        for side in ("-wal", "-shm"):  # left readable by an older flexq: tightened
            if Path(self.path + side).exists():
                private_file(self.path + side)
        self._lock = threading.RLock()  # re-entered by a nested transaction
        self._in_tx = False
        self._owner: int | None = None  # the thread holding the open transaction
        self._depth = 0  # savepoints open inside the current transaction
        self._after: list[Callable[[], None]] = []  # run once the open transaction commits
        # set by a store that applied, in memory, a write still inside an open (outer) transaction: readers on
        # other threads that may have seen it ask again once that transaction has ended (see ``Store._commit``)
        self.uncommitted = False

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything written inside commits atomically. A transaction opened inside another (on the same
        thread) is a savepoint of it: when it fails only its own writes are undone, and what it wrote commits
        with the outer one — a group commit, several writes and one sync to disk. What ``after_commit`` queued
        inside runs once the outermost transaction has committed (dropped with a failed savepoint or a failed
        commit)."""
        pending: list[Callable[[], None]] = []
        with self._lock:
            if self._in_tx:
                self._depth += 1
                savepoint = f"s{self._depth}"
                mark = len(self._after)
                self._db.execute(f"SAVEPOINT {savepoint}")
                try:
                    yield
                except BaseException:
                    del self._after[mark:]
                    self._db.execute(f"ROLLBACK TO {savepoint}")
                    self._db.execute(f"RELEASE {savepoint}")
                    raise
                else:
                    self._db.execute(f"RELEASE {savepoint}")
                finally:
                    self._depth -= 1
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._in_tx = True
            self._owner = threading.get_ident()
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")
                pending = self._after
            finally:
                self._in_tx = False
                self._owner = None
                self._after = []
                self.uncommitted = False
        for fn in pending:  # outside the lock: the writes are on disk
            fn()

    def in_transaction(self) -> bool:
        """Whether this thread holds an open transaction (a write made now commits with it, later)."""
        return self._in_tx and self._owner == threading.get_ident()

    def after_commit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once this thread's open transaction has committed, or now when none is open."""
        if self.in_transaction():
            self._after.append(fn)
        else:
            fn()

    def put(self, store: str, kind: str, namespace: str, name: str, rv: int, obj: dict) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO objects(store, kind, namespace, name, rv, body) VALUES (?,?,?,?,?,?)",
            (store, kind, namespace, name, rv, _dumps(obj)),
        )

    def remove(self, store: str, kind: str, namespace: str, name: str) -> None:
        self._db.execute(
            "DELETE FROM objects WHERE store=? AND kind=? AND namespace=? AND name=?",
            (store, kind, namespace, name),
        )

    def set_rv(self, store: str, rv: int) -> None:
        self._db.execute("INSERT OR REPLACE INTO counters(store, rv) VALUES (?,?)", (store, rv))

    def next_boot(self) -> int:
        """Count one more opening of this state and return how many came before (0: a fresh file)."""
        with self.transaction():
            row = self._db.execute("SELECT rv FROM counters WHERE store=?", (BOOTS,)).fetchone()
            boots = row[0] if row else 0
            self._db.execute("INSERT OR REPLACE INTO counters(store, rv) VALUES (?,?)", (BOOTS, boots + 1))
        return boots

    def get_meta(self, key: str) -> str | None:
        """A twin-wide setting kept with the state (e.g. which cluster the root API serves)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str | None) -> None:
        with self.transaction():
            if value is None:
                self._db.execute("DELETE FROM meta WHERE key=?", (key,))
            else:
                self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?,?)", (key, value))

    def drop_store(self, store: str) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM objects WHERE store=?", (store,))
            self._db.execute("DELETE FROM counters WHERE store=?", (store,))

    def stores(self) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT DISTINCT store FROM counters WHERE store != ?", (BOOTS,)
            ).fetchall()
        return [r[0] for r in rows]

    def load(self, store: str) -> tuple[int, list[tuple[str, dict]]]:
        """(last resourceVersion, [(kind key, object)]) of one store."""
        with self._lock:
            row = self._db.execute("SELECT rv FROM counters WHERE store=?", (store,)).fetchone()
            rows = self._db.execute(
                "SELECT kind, body FROM objects WHERE store=? ORDER BY rv", (store,)
            ).fetchall()
        return (row[0] if row else 0), [(k, json.loads(b)) for k, b in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
