"""Events expire an hour after their last write, as kube-apiserver's ``--event-ttl`` does (one etcd lease per
write), so a twin that runs for days does not keep every event it ever recorded."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.errors import FlexqError

from .kube_builders import add_node, events, job, node


def event(name: str, reason: str = "Noted") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": reason,
        "message": "m",
        "type": "Normal",
    }


def names(twin: Twin) -> list[str]:
    return sorted(e["metadata"]["name"] for e in twin.list("Event", "default"))


def test_an_event_goes_an_hour_after_its_last_write(twin: Twin) -> None:
    seen: list[tuple[str, str]] = []
    twin.store.watch(lambda ev: seen.append((ev.type, ev.object["metadata"]["name"])), ["events"])
    twin.apply(event("old"))
    twin.apply(event("bumped"))
    twin.advance(1800)
    twin.patch("Event", "bumped", {"count": 2}, "default")  # a write: a fresh lease
    twin.apply(event("mid"))
    twin.advance(1801)  # "old" is past its hour, the others are not
    twin.apply(event("new"))
    twin.advance(1)
    assert names(twin) == ["bumped", "mid", "new"]
    assert ("DELETED", "old") in seen
    twin.advance(1800)
    twin.apply(event("newer"))
    twin.advance(1)
    assert names(twin) == ["new", "newer"]


def test_a_repeated_event_after_expiry_is_a_new_event(twin: Twin) -> None:
    add_node(twin, node("n1"))
    twin.apply(job("a", run=10))
    twin.advance(20)
    first = {e["reason"]: e["metadata"]["name"] for e in events(twin, "a")}
    assert set(first) == {"SuccessfulCreate", "Completed"}
    twin.advance(3700)
    twin.apply(job("b", run=10))  # other events are written: the expiry of job a's runs
    twin.advance(20)
    assert events(twin, "a") == []
    assert {e["reason"] for e in events(twin, "b")} == {"SuccessfulCreate", "Completed"}
    twin.delete("Job", "a", "default")
    twin.apply(job("a", run=10))  # same name, new uid: the recorder writes fresh events
    twin.advance(20)
    again = {e["reason"]: e for e in events(twin, "a")}
    assert set(again) == {"SuccessfulCreate", "Completed"}
    assert all(e["count"] == 1 for e in again.values())
    assert {e["metadata"]["name"] for e in again.values()}.isdisjoint(first.values())


def test_ttl_zero_keeps_events() -> None:
    t = Twin(clock="virtual", event_ttl_seconds=0)
    try:
        t.apply(event("kept"))
        t.advance(10 * 86400)
        t.apply(event("later"))
        t.advance(1)
        assert names(t) == ["kept", "later"]
    finally:
        t.close()


@pytest.mark.parametrize("bad", [-1, "1h", float("inf"), float("nan"), True, None])
def test_a_bad_ttl_is_refused_by_name(bad) -> None:
    with pytest.raises(FlexqError, match="event_ttl_seconds"):
        Twin(clock="virtual", event_ttl_seconds=bad)


def test_events_expiring_together_go_in_one_commit_in_write_order(twin: Twin) -> None:
    seen: list[tuple[str, str, int]] = []
    twin.store.watch(lambda ev: seen.append((ev.type, ev.object["metadata"]["name"], ev.rv)), ["events"])
    for n in ("e1", "e2", "e3"):
        twin.apply(event(n))
    kept = event("kept")
    kept["metadata"]["finalizers"] = ["example.com/keep"]
    twin.apply(kept)
    twin.advance(3601)
    twin.apply(event("late"))
    twin.advance(1)
    deleted = [(name, rv) for typ, name, rv in seen if typ == "DELETED"]
    assert [n for n, _ in deleted] == ["e1", "e2", "e3"]
    assert [rv for _, rv in deleted] == list(range(deleted[0][1], deleted[0][1] + 3))
    # an event whose finalizer holds it is marked (Terminating), as a delete without a policy leaves it
    assert names(twin) == ["kept", "late"]
    assert twin.get("Event", "kept", "default")["metadata"].get("deletionTimestamp")
