"""The store's rooms on their own: the indexes (``flexq.store.index``) and the watch room (``flexq.store.watch``)."""

from __future__ import annotations

import random

import pytest

from flexq.errors import Gone
from flexq.store.index import Indexes
from flexq.store.watch import Watchers, WatchEvent


def _obj(name: str, ns: str, uid: str, labels: dict[str, str], owner: str | None, node: str | None) -> dict:
    md: dict = {"name": name, "namespace": ns, "uid": uid, "labels": labels}
    if owner:
        md["ownerReferences"] = [{"uid": owner}]
    return {"metadata": md, "spec": {"nodeName": node} if node else {}}


def _node(obj: dict) -> list[str]:
    node = obj["spec"].get("nodeName")
    return [node] if node else []


def _tables(ix: Indexes) -> tuple:
    def clean(d: dict) -> dict:
        return {k: (clean(v) if isinstance(v, dict) else v) for k, v in d.items() if v}

    return (clean(ix.by_uid), clean(ix.children), clean(ix.by_ns), clean(ix.by_label), clean(ix.by_index))


@pytest.mark.parametrize("seed", range(20))
def test_indexes_after_any_writes_equal_the_indexes_built_afresh(seed: int) -> None:
    """Whatever sequence of adds, changes and removals: the incremental tables are the tables of what is left."""
    rng = random.Random(seed)
    live: dict[tuple[str, str], dict] = {}
    ix = Indexes()
    ix.add_indexer("pods", "spec.nodeName", _node, {})
    for step in range(200):
        key = (rng.choice(["a", "b"]), f"p{rng.randrange(8)}")
        new = _obj(
            key[1],
            key[0],
            rng.choice(["u1", "u2", f"u{step}"]),
            {"app": rng.choice(["x", "y"])} if rng.random() < 0.7 else {},
            rng.choice([None, "o1", "o2"]),
            rng.choice([None, "n1", "n2"]),
        )
        old = live.get(key)
        if old is not None and rng.random() < 0.3:
            ix.unindex("pods", key, old)
            del live[key]
        elif old is not None:
            ix.reindex("pods", key, old, new)
            live[key] = new
        else:
            ix.index("pods", key, new)
            live[key] = new
    fresh = Indexes()
    fresh.add_indexer("pods", "spec.nodeName", _node, live)
    for key, obj in live.items():
        fresh.index("pods", key, obj)
    # uids may repeat across objects in this family: compare what each live object is found under
    assert _tables(ix)[1:] == _tables(fresh)[1:]
    for uid, (_kk, key) in ix.by_uid.items():
        assert live[key]["metadata"]["uid"] == uid


def test_watchers_replay_resume_and_hold_back_what_waits_for_the_commit() -> None:
    import threading

    w = Watchers(history=3, lock=threading.RLock())
    got: list[tuple[str, int]] = []
    late: list[int] = []
    now = w.subscribe(lambda ev: got.append((ev.type, ev.rv)), {"pods"}, False, None, 0)
    client = w.subscribe(lambda ev: late.append(ev.rv), None, True, None, 0)
    events = [WatchEvent("ADDED", "pods", {"n": i}, i) for i in (1, 2)]
    w.history.extend(events)
    later = w.publish(events, nested=True)
    assert got == [("ADDED", 1), ("ADDED", 2)] and late == []  # the client's watch waits for the commit
    assert [(s is client, ev.rv) for s, ev in later] == [(True, 1), (True, 2)]
    w.history.extend([WatchEvent("ADDED", "nodes", {}, 3), WatchEvent("DELETED", "pods", {}, 4)])
    replayed: list[int] = []
    w.subscribe(lambda ev: replayed.append(ev.rv), {"pods"}, False, 1, 4)  # resumed after 1: kept 2..4
    assert replayed == [2, 4]
    with pytest.raises(Gone):  # 1 is no longer kept
        w.subscribe(lambda ev: None, None, False, 0, 4)
    now.cancel()
    w.publish([WatchEvent("ADDED", "pods", {}, 5)], nested=False)
    assert got[-1] == ("ADDED", 2) and late == [5]
