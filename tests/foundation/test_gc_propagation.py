"""Deletion propagation as the API server and the garbage collector do it: Foreground (the owner stays,
Terminating with ``foregroundDeletion``, until its blocking dependents are gone), Orphan (the ``orphan``
finalizer, the dependents lose their reference), and dependents whose owners do not exist are collected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flexq import Twin
from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock, format_time
from flexq.errors import NotFound
from flexq.store import Journal, Store, WatchEvent, clone

HOLD = "example.com/hold"


@pytest.fixture
def store() -> Store:
    return Store(default_registry(), VirtualClock(start=1_000_000.0), namespaces=["default", "team-a"])


def cm(
    name: str, *owners: dict, block: bool = True, finalizers: tuple[str, ...] = (), ns: str = "default"
) -> dict:
    meta: dict = {"name": name, "namespace": ns}
    if owners:
        meta["ownerReferences"] = [
            {
                "apiVersion": o["apiVersion"],
                "kind": o["kind"],
                "name": o["metadata"]["name"],
                "uid": o["metadata"]["uid"],
                "blockOwnerDeletion": block,
            }
            for o in owners
        ]
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def recorder(store: Store) -> tuple[list[tuple[str, str]], list[WatchEvent]]:
    seen: list[tuple[str, str]] = []
    raw: list[WatchEvent] = []

    def on(ev: WatchEvent) -> None:
        seen.append((ev.type, ev.object["metadata"]["name"]))
        raw.append(ev)

    store.watch(on)
    return seen, raw


def names(store: Store) -> list[str]:
    return [o["metadata"]["name"] for o in store.list("cm")]


def release(store: Store, name: str) -> None:
    cur = store.get("cm", name)
    cur["metadata"]["finalizers"] = [f for f in cur["metadata"]["finalizers"] if f != HOLD]
    store.update(cur)


# -- Foreground ------------------------------------------------------------------------------------------
def test_foreground_bumps_a_generation_that_is_set(store: Store) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "finalizers": ["example.com/hold"]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    created = store.create(pod)
    out = store.delete("Pod", "p", "default", propagation="Foreground")
    assert out["metadata"]["generation"] == created["metadata"]["generation"] + 1


def test_foreground_marks_the_owner_then_deletes_its_dependents_before_it(store: Store) -> None:
    owner = store.create(cm("owner"))
    store.create(cm("a", owner))
    store.create(cm("b", owner, block=False))
    store.create(cm("other"))
    seen, raw = recorder(store)
    out = store.delete("cm", "owner", propagation="Foreground")
    assert out["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert out["metadata"]["deletionTimestamp"] == format_time(1_000_000.0)
    assert seen == [("MODIFIED", "owner"), ("DELETED", "a"), ("DELETED", "b"), ("DELETED", "owner")]
    marked = raw[0].object["metadata"]
    assert marked["finalizers"] == ["foregroundDeletion"] and marked["deletionGracePeriodSeconds"] == 0
    assert "generation" not in marked  # a ConfigMap has none; one that is set is bumped (the next test)
    assert [int(ev.object["metadata"]["resourceVersion"]) for ev in raw] == [ev.rv for ev in raw]
    assert names(store) == ["other"]


def test_a_blocking_dependent_with_a_finalizer_keeps_the_owner_terminating(store: Store) -> None:
    owner = store.create(cm("owner"))
    store.create(cm("held", owner, finalizers=(HOLD,)))
    store.create(cm("plain", owner))
    seen, _ = recorder(store)
    store.delete("cm", "owner", propagation="Foreground")
    assert seen == [("MODIFIED", "owner"), ("MODIFIED", "held"), ("DELETED", "plain")]
    live = store.get("cm", "owner")
    assert live["metadata"]["deletionTimestamp"] and live["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert store.get("cm", "held")["metadata"]["deletionTimestamp"]
    seen.clear()
    release(store, "held")
    assert seen == [("DELETED", "held"), ("DELETED", "owner")]
    assert names(store) == []


def test_a_non_blocking_dependent_does_not_hold_the_owner(store: Store) -> None:
    owner = store.create(cm("owner"))
    store.create(cm("held", owner, block=False, finalizers=(HOLD,)))
    store.delete("cm", "owner", propagation="Foreground")
    with pytest.raises(NotFound):
        store.get("cm", "owner")
    held = store.get("cm", "held")
    assert held["metadata"]["deletionTimestamp"]  # deleted too, waiting on its own finalizer
    release(store, "held")
    assert names(store) == []


def test_foreground_goes_down_the_tree_and_up_again_in_order(store: Store) -> None:
    root = store.create(cm("root"))
    mid = store.create(cm("mid", root))
    store.create(cm("leaf", mid, finalizers=(HOLD,)))
    seen, _ = recorder(store)
    store.delete("cm", "root", propagation="Foreground")
    # mid has dependents of its own, so the collector deletes it in the foreground too
    assert store.get("cm", "mid")["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert store.get("cm", "root")["metadata"]["deletionTimestamp"]
    assert seen == [("MODIFIED", "root"), ("MODIFIED", "mid"), ("MODIFIED", "leaf")]
    seen.clear()
    release(store, "leaf")
    assert seen == [("DELETED", "leaf"), ("DELETED", "mid"), ("DELETED", "root")]


def test_a_dependent_with_another_live_owner_stays_and_unblocks_the_owner(store: Store) -> None:
    a, b = store.create(cm("a")), store.create(cm("b"))
    store.create(cm("shared", a, b, finalizers=(HOLD,)))
    store.delete("cm", "a", propagation="Foreground")
    assert names(store) == ["b", "shared"]
    shared = store.get("cm", "shared")
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["b"]
    assert not shared["metadata"].get("deletionTimestamp")


def test_background_delete_of_a_terminating_foreground_owner_drops_the_finalizer(store: Store) -> None:
    owner = store.create(cm("owner"))
    store.create(cm("held", owner, finalizers=(HOLD,)))
    store.delete("cm", "owner", propagation="Foreground")
    store.delete("cm", "owner", propagation="Background")  # as upstream: the finalizers follow the options
    with pytest.raises(NotFound):
        store.get("cm", "owner")
    assert store.get("cm", "held")["metadata"]["deletionTimestamp"]


def test_a_foreground_delete_of_an_object_with_its_own_finalizer_keeps_both(store: Store) -> None:
    store.create(cm("owner", finalizers=(HOLD,)))
    store.delete("cm", "owner", propagation="Foreground")
    assert store.get("cm", "owner")["metadata"]["finalizers"] == [HOLD]  # foregroundDeletion done, HOLD left
    release(store, "owner")
    assert names(store) == []


def test_a_dry_run_foreground_delete_changes_nothing(store: Store) -> None:
    owner = store.create(cm("owner"))
    store.create(cm("a", owner))
    rv = store.resource_version
    out = store.delete("cm", "owner", propagation="Foreground", dry_run=True)
    assert out["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert store.resource_version == rv and names(store) == ["a", "owner"]


def test_a_dependent_created_for_a_foreground_deleting_owner_is_collected(store: Store) -> None:
    owner = store.create(cm("owner"))
    store.create(cm("held", owner, finalizers=(HOLD,)))
    store.delete("cm", "owner", propagation="Foreground")
    late = store.create(cm("late", store.get("cm", "owner")))
    assert late["metadata"]["name"] == "late"
    assert names(store) == ["held", "owner"]


# -- Orphan ------------------------------------------------------------------------------------------------
def test_orphan_sets_and_clears_its_finalizer_and_frees_the_dependents(store: Store) -> None:
    owner = store.create(cm("owner"))
    store.create(cm("a", owner))
    seen, raw = recorder(store)
    store.delete("cm", "owner", propagation="Orphan")
    assert seen == [("MODIFIED", "owner"), ("MODIFIED", "a"), ("DELETED", "owner")]
    assert raw[0].object["metadata"]["finalizers"] == ["orphan"]
    assert "ownerReferences" not in store.get("cm", "a")["metadata"]


def test_orphan_with_another_finalizer_leaves_the_owner_terminating(store: Store) -> None:
    owner = store.create(cm("owner", finalizers=(HOLD,)))
    store.create(cm("a", owner))
    out = store.delete("cm", "owner", propagation="Orphan")
    assert out["metadata"]["finalizers"] == [HOLD, "orphan"]
    live = store.get("cm", "owner")
    assert live["metadata"]["finalizers"] == [HOLD] and live["metadata"]["deletionTimestamp"]
    assert "ownerReferences" not in store.get("cm", "a")["metadata"]
    release(store, "owner")
    assert names(store) == ["a"]


def test_no_policy_follows_the_finalizers_the_object_carries(store: Store) -> None:
    owner = store.create(cm("owner", finalizers=("orphan",)))
    store.create(cm("a", owner))
    store.delete("cm", "owner", propagation=None)
    assert names(store) == ["a"] and "ownerReferences" not in store.get("cm", "a")["metadata"]


# -- dependents of absent owners ------------------------------------------------------------------------------
def absent(name: str, uid: str = "00000000-0000-4000-8000-000000000000") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "uid": uid}}


@pytest.mark.parametrize(
    "owner",
    [
        pytest.param(lambda s: absent("ghost"), id="no-such-name"),
        pytest.param(
            lambda s: absent("real", uid="11111111-1111-4111-8111-111111111111"), id="same-name-other-uid"
        ),
    ],
)
def test_a_dependent_whose_owners_do_not_exist_is_collected(
    store: Store, owner: Callable[[Store], dict]
) -> None:
    store.create(cm("real"))
    seen, _ = recorder(store)
    store.create(cm("orphaned", owner(store)))
    assert seen == [("ADDED", "orphaned"), ("DELETED", "orphaned")]
    assert names(store) == ["real"]


def test_a_dependent_with_one_live_owner_loses_only_the_absent_reference(store: Store) -> None:
    real = store.create(cm("real"))
    store.create(cm("dep", real, absent("ghost")))
    assert [r["name"] for r in store.get("cm", "dep")["metadata"]["ownerReferences"]] == ["real"]


def test_an_update_pointing_a_dependent_at_an_absent_owner_collects_it(store: Store) -> None:
    real = store.create(cm("real"))
    dep = clone(
        store.create(cm("dep", real))
    )  # a write returns the stored version, read-only: copied to change
    dep["metadata"]["ownerReferences"][0].update(name="ghost", uid="00000000-0000-4000-8000-000000000000")
    store.update(dep)
    assert names(store) == ["real"]


def test_a_reference_the_collector_cannot_resolve_is_left_alone(store: Store) -> None:
    dep = cm("dep")
    dep["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "name": "w",
            "uid": "00000000-0000-4000-8000-000000000000",
        }
    ]
    store.create(dep)
    assert names(store) == ["dep"]


def test_a_dependent_with_a_finalizer_and_an_absent_owner_is_marked(store: Store) -> None:
    store.create(cm("dep", absent("ghost"), finalizers=(HOLD,)))
    assert store.get("cm", "dep")["metadata"]["deletionTimestamp"]
    release(store, "dep")
    assert names(store) == []


# -- namespaces ----------------------------------------------------------------------------------------------
def test_a_terminating_namespace_whose_finalizer_goes_still_waits_for_its_content(store: Store) -> None:
    ns = store.get("ns", "team-a")
    ns["metadata"]["finalizers"] = [HOLD]
    store.update(ns)
    store.create(cm("held", ns="team-a", finalizers=(HOLD,)))
    store.delete("namespace", "team-a")
    ns = store.get("ns", "team-a")
    ns["metadata"]["finalizers"] = []
    store.update(ns)
    assert store.get("ns", "team-a")["status"]["phase"] == "Terminating"
    held = store.get("cm", "held", "team-a")
    held["metadata"]["finalizers"] = []
    store.update(held)
    with pytest.raises(NotFound):
        store.get("ns", "team-a")


# -- through the controllers -----------------------------------------------------------------------------------
def test_foreground_delete_of_a_job_ends_with_the_job_after_its_pods(twin: Twin) -> None:
    twin.store.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {
                "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        keep_status=True,
    )
    twin.apply(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "template": {
                    "metadata": {"annotations": {"twin.flexq.dev/run-seconds": "600"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
    )
    twin.advance(5)
    pods = [p["metadata"]["name"] for p in twin.list("Pod", "default", label_selector="job-name=j")]
    assert len(pods) == 2
    seen: list[tuple[str, str, str]] = []
    twin.store.watch(
        lambda ev: seen.append((ev.type, ev.kind, ev.object["metadata"]["name"])), ["Job", "Pod"]
    )
    out = twin.delete("Job", "j", propagation="Foreground")
    assert out["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert twin.get("Job", "j")["metadata"]["deletionTimestamp"]  # Terminating while its pods go
    twin.advance(5)
    assert twin.try_get("Job", "j") is None and twin.list("Pod", "default") == []
    deleted = [(k, n) for t, k, n in seen if t == "DELETED"]
    assert sorted(deleted[:-1]) == [("pods", p) for p in sorted(pods)] and deleted[-1] == ("jobs.batch", "j")
    assert seen[0] == ("MODIFIED", "jobs.batch", "j")


def test_on_start_the_collector_takes_dependents_whose_owner_is_gone_from_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state.db")
    first = Store(default_registry(), VirtualClock(), journal=journal, namespaces=["default"])
    owner = first.create(cm("owner"))
    first.create(cm("dep", owner))
    first.create(cm("kept"))
    with journal.transaction():  # as an older flexq could have left it: the owner gone, its dependent not
        journal.remove(first.name, "configmaps", "default", "owner")
    again = Store(default_registry(), VirtualClock(), journal=journal)
    assert names(again) == ["kept"]
    assert names(Store(default_registry(), VirtualClock(), journal=journal)) == [
        "kept"
    ]  # and it was journalled
