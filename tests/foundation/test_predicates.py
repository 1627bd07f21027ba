"""Event predicates (``flexq.runtime.predicates``): a watch event a controller's upstream would filter out
enqueues nothing. Each controller declares what its upstream's ``SetupWithManager`` declares; the table below
says, per controller and watched kind, whether a status-only update of a watched object wakes it (as upstream)
or not (upstream's predicate or handler drops it). A no-op write emits no event at all, so it wakes nobody."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.runtime import predicates
from flexq.store import Store, clone, status_copy
from flexq.store.store import WatchEvent
from tests.foundation.running_twin import running_tutorial_twin

pytestmark = pytest.mark.xdist_group("test_predicates")

# controller -> kind -> does a status-only update of a watched object of that kind enqueue it?
STATUS_ONLY = {
    # KubeRay: For(&RayCluster{}, Or(GenerationChanged, LabelChanged, AnnotationChanged))
    "kuberay-raycluster": {"RayCluster": False},
    # KubeRay: For(&RayJob{}) without predicates; Owns(&RayCluster{})
    "kuberay-rayjob": {"RayJob": True, "RayCluster": True},
    # Kueue's workload reconciler: its Update predicate returns true for every Workload update;
    # workloadQueueHandler queues a queue's workloads only for a deletion, checks strategy or stop policy change
    "kueue-workload": {"Workload": True, "ClusterQueue": False, "LocalQueue": False},
    # Kueue's job reconciler: For(job).Owns(&Workload{}) (and the RayJob's RayCluster), no predicates; the twin
    # drops a job update or a RayCluster status write that changes nothing the reconciler reads
    # (tests/foundation/test_read_predicates.py: every field it reads still wakes it)
    "kueue-job-rayjob": {"RayJob": False, "Workload": True, "RayCluster": False},
    # Kueue's provisioning controller: For(&Workload{}).Owns(&ProvisioningRequest{})
    "kueue-provisioning": {"Workload": True},
}


@pytest.fixture(scope="module")
def twin():
    t = running_tutorial_twin()
    yield t
    t.close()


def controllers(twin: Twin) -> dict:
    return {c.name: c for rt in twin.core.clusters.values() for c in rt.manager.controllers}


def keys_of(controller, ev: WatchEvent) -> list:
    return [k for w in controller.watches() if twin_kind(w.kind) == ev.kind for k in w.keys(ev)]


_REG = default_registry()


def twin_kind(kind: str) -> str:
    return _REG.resolve(kind).key


def status_only_event(twin: Twin, kind: str) -> WatchEvent:
    """Write a status-only change of the first stored object of ``kind`` and return the event it made."""
    store = twin.store
    seen: list[WatchEvent] = []
    sub = store.watch(seen.append, [kind])
    try:
        cur = store.peek_list(kind)[0]
        new = status_copy(cur)
        new.setdefault("status", {})["flexqTestMarker"] = cur["metadata"]["resourceVersion"]
        store.update_status(new)
    finally:
        sub.cancel()
    (ev,) = seen
    return ev


@pytest.mark.parametrize(
    ("controller", "kind"), [(c, k) for c, kinds in STATUS_ONLY.items() for k in sorted(kinds)]
)
def test_a_status_only_update_enqueues_only_where_upstream_does(twin, controller, kind) -> None:
    ctrl = controllers(twin)[controller]
    ev = status_only_event(twin, kind)
    assert ev.type == "MODIFIED" and ev.old is not None and ev.old is not ev.object
    assert ev.old["metadata"]["generation"] == ev.object["metadata"]["generation"]
    keys = keys_of(ctrl, ev)
    if STATUS_ONLY[controller][kind]:
        assert keys, f"{controller} is woken by a status update of a {kind} upstream"
    else:
        assert keys == [], f"{controller} must not be woken by a status-only update of a {kind}: {keys}"


def test_a_spec_change_of_a_raycluster_wakes_kuberay(twin) -> None:
    """The predicate refuses status-only updates, not spec ones (generation) nor label changes."""
    ctrl = controllers(twin)["kuberay-raycluster"]
    rc = twin.store.peek_list("RayCluster")[0]
    for field in ("generation", "labels"):
        new = clone(rc)
        if field == "generation":
            new["metadata"]["generation"] += 1
        else:
            new["metadata"]["labels"] = {**new["metadata"].get("labels", {}), "x": "y"}
        ev = WatchEvent("MODIFIED", "rayclusters.ray.io", new, 0, rc)
        assert keys_of(ctrl, ev) == [(rc["metadata"]["namespace"], rc["metadata"]["name"])]


def test_a_stop_policy_change_wakes_the_workloads_of_a_queue(twin) -> None:
    ctrl = controllers(twin)["kueue-workload"]
    for kind, key in (
        ("ClusterQueue", "clusterqueues.kueue.x-k8s.io"),
        ("LocalQueue", "localqueues.kueue.x-k8s.io"),
    ):
        cur = twin.store.peek_list(kind)[0]
        new = clone(cur)
        new["spec"]["stopPolicy"] = "Hold"
        assert keys_of(ctrl, WatchEvent("MODIFIED", key, new, 0, cur)), kind
        quota = clone(cur)
        quota["metadata"]["generation"] += 1  # another spec change: upstream's handler ignores it
        assert keys_of(ctrl, WatchEvent("MODIFIED", key, quota, 0, cur)) == [], kind


@pytest.mark.parametrize("controller", sorted(STATUS_ONLY))
def test_a_no_op_write_enqueues_nothing(twin, controller) -> None:
    """Writing an object back unchanged (spec and status) makes no event, as the API server makes none, so no
    controller's queue hears of it."""
    ctrl = controllers(twin)[controller]
    store = twin.store
    for w in ctrl.watches():
        seen: list[WatchEvent] = []
        sub = store.watch(seen.append, [w.kind])
        try:
            for cur in store.peek_list(w.kind)[:3]:
                store.update(clone(cur))
                store.update_status(clone(cur))
        finally:
            sub.cancel()
        assert seen == [], f"{w.kind}: {[e.type for e in seen]}"


def test_watch_events_carry_the_version_they_replaced() -> None:
    s = Store(default_registry(), VirtualClock(), namespaces=["default"])
    seen: list[WatchEvent] = []
    s.watch(seen.append, ["ConfigMap"])
    s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}})
    v1 = s.peek("ConfigMap", "c", "default")
    s.update({**clone(v1), "data": {"a": "2"}})
    v2 = s.peek("ConfigMap", "c", "default")
    s.delete("ConfigMap", "c", "default")
    assert [e.type for e in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert seen[0].old is None and seen[2].old is None
    assert seen[1].old is v1 and seen[1].object is v2
    replay: list[WatchEvent] = []
    s.watch(replay.append, ["ConfigMap"], since=0)  # the history keeps no old versions
    assert [e.type for e in replay] == ["ADDED", "MODIFIED", "DELETED"] and all(e.old is None for e in replay)


def _ev(typ: str, old: dict | None, new: dict) -> WatchEvent:
    return WatchEvent(typ, "x", new, 1, old)


def _obj(gen: int = 1, labels=None, annotations=None, rv: str = "1") -> dict:
    return {
        "metadata": {"generation": gen, "labels": labels, "annotations": annotations, "resourceVersion": rv}
    }


def test_predicates_judge_updates_only() -> None:
    a = _obj()
    for pred in (
        predicates.generation_changed,
        predicates.labels_changed,
        predicates.annotations_changed,
        predicates.resource_version_changed,
    ):
        assert pred(_ev("ADDED", None, a)) and pred(_ev("DELETED", None, a))
        assert pred(_ev("MODIFIED", None, a))  # the old version unknown (a replay): let it through
        assert not pred(_ev("MODIFIED", a, _obj())), pred
    assert predicates.generation_changed(_ev("MODIFIED", a, _obj(gen=2)))
    assert predicates.labels_changed(_ev("MODIFIED", a, _obj(labels={"x": "1"})))
    assert not predicates.labels_changed(_ev("MODIFIED", _obj(labels={}), _obj(labels=None)))
    assert predicates.annotations_changed(_ev("MODIFIED", a, _obj(annotations={"x": "1"})))
    assert predicates.resource_version_changed(_ev("MODIFIED", a, _obj(rv="2")))
    either = predicates.any_of(predicates.generation_changed, predicates.labels_changed)
    both = predicates.all_of(predicates.generation_changed, predicates.labels_changed)
    changed = _ev("MODIFIED", a, _obj(gen=2))
    assert either(changed) and not both(changed)


def test_the_event_dedup_cache_is_an_lru_of_4096_as_client_go() -> None:
    """A repeated Event raises ``count`` while its entry is in the recorders' cache; once ``size`` other events
    pushed it out (client-go's EventCorrelator keeps an LRU of 4,096), it is written as a new Event."""
    from flexq.runtime.controller import MAX_LRU_CACHE_ENTRIES, Context, EventIndex, EventRecorder

    assert MAX_LRU_CACHE_ENTRIES == 4096 and EventIndex().size == 4096
    assert isinstance(Context.__dataclass_fields__["event_index"].default_factory(), EventIndex)
    s = Store(default_registry(), VirtualClock(), namespaces=["default"])
    rec = EventRecorder(s, "tester", EventIndex(size=8))
    obj = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "c", "namespace": "default", "uid": "u"},
    }
    rec.record(obj, "Normal", "Kept", "used often")
    rec.record(obj, "Normal", "Gone", "used once")
    for i in range(7):
        rec.record(obj, "Normal", "Other", f"message {i}")
        rec.record(obj, "Normal", "Kept", "used often")  # recently used: stays
    assert len(rec.index) == 8
    rec.record(obj, "Normal", "Gone", "used once")
    events = s.peek_list("Event", "default")
    kept = [e for e in events if e["reason"] == "Kept"]
    gone = [e for e in events if e["reason"] == "Gone"]
    assert len(kept) == 1 and kept[0]["count"] == 8
    assert [e["count"] for e in gone] == [1, 1]  # pushed out of the cache: a new Event


def test_outside_status_changed_sees_every_field_but_the_status_and_write_metadata() -> None:
    base = {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"name": "a", "resourceVersion": "1", "labels": {"l": "1"}, "managedFields": []},
        "spec": {"s": 1},
        "status": {"t": 1},
    }

    def changed(**parts) -> bool:
        new = {**base, **{k: v for k, v in parts.items() if k != "md"}}
        if "md" in parts:
            new["metadata"] = {**base["metadata"], **parts["md"]}
        return predicates.outside_status_changed(base, new)

    assert not changed(status={"t": 2})
    assert not changed(md={"resourceVersion": "2", "managedFields": [{"manager": "m"}]})
    assert changed(spec={"s": 2})
    assert changed(md={"labels": {"l": "2"}})
    assert changed(md={"deletionTimestamp": "2027-01-01T00:00:00Z"})  # a field only the new version has
    assert changed(md={"finalizers": ["f"]})
    assert changed(data={"d": 1})  # another top-level field
    gone = {k: v for k, v in base["metadata"].items() if k != "labels"}
    assert predicates.outside_status_changed(base, {**base, "metadata": gone})
    assert predicates.metadata_changed({"a": 1, "g": 1}, {"a": 1, "g": 2}) is True
    assert predicates.metadata_changed({"a": 1, "g": 1}, {"a": 1, "g": 2}, frozenset({"g"})) is False
    assert predicates.metadata_changed({"a": 1}, {"a": 1, "g": 2}, frozenset({"g"})) is False
    assert predicates.metadata_changed({"a": 1}, {"a": 1, "b": 2}, frozenset({"g"})) is True
