"""Issue 49, item 4: Events as client-go's recorder writes them (``EventCorrelator``). A Deployment of two billion
replicas made one Event per pod ("Created pod: <name>", 45,000 in 30 s) and one scaled 0<->300 in a loop 220,771
in 40 s. Upstream, similar events (same object, component, type and reason; other messages) are combined from the
tenth on, and a token bucket per component and object (25 at once, one more every 5 minutes) drops the rest: tens
of Events. Properties checked over generated floods and flaps on the virtual clock, and the correlator's three
steps on their own."""

from __future__ import annotations

from collections import Counter

import pytest

from flexq import Twin
from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.runtime.controller import (
    AGGREGATE_MAX_EVENTS,
    COMBINED,
    SPAM_BURST,
    EventCorrelator,
    EventRecorder,
)
from flexq.store import Store


def _deployment(replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "flood", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "flood"}},
            "template": {
                "metadata": {"labels": {"app": "flood"}},
                "spec": {"containers": [{"name": "c", "image": "b"}]},
            },
        },
    }


def _per_object(t: Twin) -> Counter:
    return Counter(
        (e["involvedObject"]["kind"], e["involvedObject"]["name"], e["source"]["component"])
        for e in t.list("Event", "default")
    )


def _check_bounded(t: Twin, seconds: float) -> None:
    """No component wrote more Events about one object than its bucket allows over ``seconds``."""
    allowed = SPAM_BURST + int(seconds / 300) + 1
    for (kind, name, component), n in _per_object(t).items():
        assert n <= allowed, (kind, name, component, n)


@pytest.mark.parametrize("seconds", [5, 20])
def test_a_flood_of_pods_is_a_handful_of_events_about_its_replicaset(seconds: int) -> None:
    t = Twin(clock="virtual")
    try:
        t.apply(_deployment(2147483647))
        t.advance(seconds)
        _check_bounded(t, seconds)
        rs_events = [e for e in t.list("Event", "default") if e["involvedObject"]["kind"] == "ReplicaSet"]
        created = [e for e in rs_events if e["reason"] == "SuccessfulCreate"]
        combined = [e for e in created if e["message"].startswith(COMBINED)]
        # nine single messages, then one Event that every later creation is counted into
        assert len(created) == AGGREGATE_MAX_EVENTS and len(combined) == 1, [e["message"] for e in created]
        assert combined[0]["message"].startswith(COMBINED + "Created pod: flood-")
        assert combined[0]["count"] > 1
        pods = len(t.list("Pod", "default"))
        assert (
            pods > 20 * seconds / 2
        )  # the pods are still made, at the client's rate; only Events are spared
    finally:
        t.close()


@pytest.mark.parametrize("flaps", [10, 40])
def test_a_flapping_deployment_writes_tens_of_events(flaps: int) -> None:
    t = Twin(clock="virtual")
    try:
        for i in range(flaps):
            t.apply(_deployment(300 if i % 2 == 0 else 0))
            t.advance(0.5)
        _check_bounded(t, flaps * 0.5)
        owners = [e for e in t.list("Event", "default") if e["involvedObject"]["kind"] != "Pod"]
        # about the Deployment and its ReplicaSets: tens, not one per pod made or deleted (each pod's own
        # scheduling Event stays, as upstream's, paced by the ReplicaSet controller's client)
        assert len(owners) <= 2 * SPAM_BURST, len(owners)
    finally:
        t.close()


def test_the_correlator_s_three_steps() -> None:
    c = EventCorrelator()
    key = ("ns", "uid", "Pod", "kubelet", "Normal", "Pulled")
    # aggregation: distinct messages 1..9 are their own events, the tenth and later are combined
    assert [c.aggregate(key, f"m{i}", 0.0) for i in range(12)] == [False] * 9 + [True] * 3
    assert not c.aggregate(key, "fresh", 601.0 + 0)  # ten minutes after the last one: a new record
    # a message already in the record does not grow it
    key2 = key[:-1] + ("Other",)
    assert not any(c.aggregate(key2, "same", float(i)) for i in range(50))
    # spam: 25 at once, then one every 300 s
    spam = ("kubelet", "Pod", "ns", "p", "uid")
    assert [c.allow(spam, 0.0) for _ in range(SPAM_BURST + 1)] == [True] * SPAM_BURST + [False]
    assert not c.allow(spam, 299.0) and c.allow(spam, 301.0) and not c.allow(spam, 302.0)
    # observation counts every occurrence, written or not
    assert [c.observe(("k",)) for _ in range(3)] == [1, 2, 3]


def test_a_repeat_beyond_the_bucket_is_counted_when_next_written() -> None:
    """Upstream's logger counts an event the spam filter dropped: the next write carries the full count."""
    t = Twin(clock="virtual")
    try:
        cm = t.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
        )
        rec = EventRecorder(t.store, "tester")
        for _ in range(SPAM_BURST + 5):
            rec.record(cm, "Normal", "Poked", "poked")
        (ev,) = t.list("Event", "default")
        assert ev["count"] == SPAM_BURST
        t.advance(300)
        rec.record(cm, "Normal", "Poked", "poked")
        (ev,) = t.list("Event", "default")
        assert ev["count"] == SPAM_BURST + 6
    finally:
        t.close()


def test_a_repeat_is_written_as_a_new_version_not_over_the_stored_one() -> None:
    """The recorder's count bump is handed to the store as built (no copy): the version it replaces is unchanged,
    as every stored version must be (``check_readonly`` fails at the write otherwise)."""
    clock = VirtualClock()
    store = Store(default_registry(), clock, namespaces=["default"], check_readonly=True)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u"}}
    rec = EventRecorder(store, "tester")
    rec.record(pod, "Normal", "Poked", "poked")
    (first,) = store.peek_list("Event", "default")
    kept = (first["count"], first["lastTimestamp"], first["metadata"]["resourceVersion"])
    clock.set(clock.now() + 5)
    rec.record(pod, "Normal", "Poked", "poked")
    (second,) = store.peek_list("Event", "default")
    assert second is not first and second["count"] == 2
    assert (first["count"], first["lastTimestamp"], first["metadata"]["resourceVersion"]) == kept
    assert second["lastTimestamp"] != first["lastTimestamp"]
    store.verify_readonly()
