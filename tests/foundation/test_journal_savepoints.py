"""A journal transaction opened inside another is a savepoint: its failure undoes its own writes only, and what
it wrote commits with the outer transaction (the HTTP server's group commit of several clients' writes)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from flexq.store import Journal


def test_nested_failure_undoes_only_its_own_writes(tmp_path: Path) -> None:
    j = Journal(tmp_path / "state.db")
    with j.transaction():
        j.put("s", "k", "ns", "a", 1, {"a": 1})
        with pytest.raises(ValueError), j.transaction():
            j.put("s", "k", "ns", "b", 2, {"b": 1})
            with j.transaction():
                j.put("s", "k", "ns", "b2", 3, {"b2": 1})
            raise ValueError("refused")
        with j.transaction():
            j.put("s", "k", "ns", "c", 4, {"c": 1})
            j.set_rv("s", 4)
    j.close()
    rv, objs = Journal(tmp_path / "state.db").load("s")
    assert rv == 4
    assert [o for _, o in objs] == [{"a": 1}, {"c": 1}]


def test_outer_failure_undoes_the_nested_writes(tmp_path: Path) -> None:
    j = Journal(tmp_path / "state.db")
    with pytest.raises(RuntimeError), j.transaction():
        with j.transaction():
            j.put("s", "k", "ns", "a", 1, {"a": 1})
        raise RuntimeError("the batch failed")
    assert j.load("s") == (0, [])


def test_another_thread_waits_for_the_outer_transaction(tmp_path: Path) -> None:
    j = Journal(tmp_path / "state.db")
    seen: list[int] = []
    with j.transaction():
        j.put("s", "k", "ns", "a", 1, {"a": 1})
        other = threading.Thread(target=lambda: seen.append(len(j.load("s")[1])))
        other.start()
        other.join(0.2)
        assert other.is_alive()  # it waits: it never reads the uncommitted write
    other.join(5)
    assert seen == [1]
