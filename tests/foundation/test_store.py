"""The store behaves like an API server: versions, conflicts, status, cascade, finalizers, watch."""

from __future__ import annotations

import pytest

from flexq.api.kinds import default_registry
from flexq.api.scheme import ADMIT
from flexq.clock import VirtualClock
from flexq.errors import AlreadyExists, BadRequest, Conflict, Gone, Invalid, NotFound
from flexq.store import Store, clone


@pytest.fixture
def store() -> Store:
    return Store(default_registry(), VirtualClock(), namespaces=["default", "team-a"])


def cm(name: str, ns: str = "default", **data: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


def job(name: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
        },
    }


def test_create_fills_metadata_and_defaults(store: Store) -> None:
    out = store.create(job("j"), admission=ADMIT)  # a client's write: admitted (defaulted)
    m = out["metadata"]
    assert m["namespace"] == "default" and m["generation"] == 1 and m["uid"] and m["resourceVersion"]
    assert m["creationTimestamp"] == "2027-01-01T00:00:00Z"
    assert (
        out["spec"]["backoffLimit"] == 6
        and out["spec"]["completions"] == 1
        and out["spec"]["suspend"] is False
    )


def test_duplicate_create_is_already_exists(store: Store) -> None:
    store.create(cm("a"))
    with pytest.raises(AlreadyExists):
        store.create(cm("a"))


def test_stale_update_is_conflict(store: Store) -> None:
    a = store.create(cm("a", x="1"))
    b = dict(a, data={"x": "2"})
    store.update(b)
    with pytest.raises(Conflict):
        store.update(dict(a, data={"x": "3"}))
    assert store.get("cm", "a")["data"] == {"x": "2"}


def test_generation_bumps_on_spec_only(store: Store) -> None:
    j = clone(store.create(job("j")))  # a write returns the stored version, read-only: copied to change
    j["metadata"]["labels"] = {"a": "b"}
    j = clone(store.update(j))
    assert j["metadata"]["generation"] == 1
    j["spec"]["backoffLimit"] = 2
    j = store.update(j)
    assert j["metadata"]["generation"] == 2
    j = store.update_status(dict(j, status={"active": 1}))
    assert j["metadata"]["generation"] == 2 and j["status"] == {"active": 1}


def test_status_is_a_separate_write(store: Store) -> None:
    j = store.create(dict(job("j"), status={"active": 5}))
    assert j["status"] == {}  # the status sent is dropped; the Job strategy writes an empty one
    j = clone(store.update_status(dict(j, status={"active": 1})))
    j["spec"]["backoffLimit"] = 3
    j["status"] = {"active": 99}
    j = store.update(j)
    assert j["status"] == {"active": 1}


def test_noop_update_keeps_resource_version(store: Store) -> None:
    a = store.create(cm("a", x="1"))
    b = store.update(a)
    assert a["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"]


def test_merge_and_json_patch(store: Store) -> None:
    store.create(cm("a", x="1", y="2"))
    out = store.patch("configmaps", "a", {"data": {"x": None, "z": "3"}}, "default")
    assert out["data"] == {"y": "2", "z": "3"}
    out = store.patch("cm", "a", [{"op": "replace", "path": "/data/y", "value": "9"}], patch_type="json")
    assert out["data"]["y"] == "9"


def test_label_and_field_selectors(store: Store) -> None:
    for i, env in enumerate(["prod", "dev", "prod"]):
        c = cm(f"c{i}")
        c["metadata"]["labels"] = {"env": env, "idx": str(i)}
        store.create(c)
    assert [o["metadata"]["name"] for o in store.list("cm", label_selector="env=prod")] == ["c0", "c2"]
    assert [o["metadata"]["name"] for o in store.list("cm", label_selector="env in (dev),idx")] == ["c1"]
    assert [o["metadata"]["name"] for o in store.list("cm", label_selector="env!=prod")] == ["c1"]
    assert [o["metadata"]["name"] for o in store.list("cm", field_selector="metadata.name=c2")] == ["c2"]


def test_namespaces_must_exist_and_scope_lists(store: Store) -> None:
    with pytest.raises(NotFound):
        store.create(cm("a", ns="nowhere"))
    store.create(cm("a", ns="team-a"))
    store.create(cm("a"))
    assert len(store.list("cm")) == 2 and len(store.list("cm", "team-a")) == 1


def test_cascading_delete_by_owner_references(store: Store) -> None:
    owner = store.create(cm("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    child = cm("child")
    child["metadata"]["ownerReferences"] = [ref]
    c = store.create(child)
    grandchild = cm("grandchild")
    grandchild["metadata"]["ownerReferences"] = [dict(ref, name="child", uid=c["metadata"]["uid"])]
    store.create(grandchild)
    store.delete("cm", "owner")
    assert store.list("cm") == []


def test_orphan_propagation_keeps_dependents(store: Store) -> None:
    owner = store.create(cm("owner"))
    child = cm("child")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    ]
    store.create(child)
    store.delete("cm", "owner", propagation="Orphan")
    assert "ownerReferences" not in store.get("cm", "child")["metadata"]


def test_finalizers_delay_deletion(store: Store) -> None:
    c = cm("a")
    c["metadata"]["finalizers"] = ["example.com/hold"]
    store.create(c)
    marked = store.delete("cm", "a")
    assert marked["metadata"]["deletionTimestamp"]
    cur = store.get("cm", "a")
    cur["metadata"]["finalizers"] = []
    store.update(cur)
    with pytest.raises(NotFound):
        store.get("cm", "a")


def test_namespace_deletion_takes_its_contents(store: Store) -> None:
    store.create(cm("a", ns="team-a"))
    store.delete("namespace", "team-a")
    assert store.list("cm", "team-a") == []
    with pytest.raises(NotFound):
        store.get("ns", "team-a")


def test_watch_resumes_from_resource_version(store: Store) -> None:
    a = store.create(cm("a"))
    rv = int(a["metadata"]["resourceVersion"])
    store.create(cm("b"))
    store.delete("cm", "a")
    seen: list[tuple[str, str]] = []
    store.watch(lambda ev: seen.append((ev.type, ev.object["metadata"]["name"])), ["configmaps"], since=rv)
    store.create(cm("c"))
    assert seen == [("ADDED", "b"), ("DELETED", "a"), ("ADDED", "c")]


def test_watch_too_old_is_gone(store: Store) -> None:
    store.HISTORY = 5
    small = Store(default_registry(), VirtualClock(), namespaces=["default"])
    small.watchers.history = type(small.watchers.history)(maxlen=5)
    for i in range(20):
        small.create(cm(f"c{i}"))
    with pytest.raises(Gone):
        small.watch(lambda ev: None, since=1)


def test_invalid_object_changes_nothing(store: Store) -> None:
    before = store.resource_version
    bad = job("j")
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(Invalid) as err:
        store.create(bad, admission=ADMIT)
    assert err.value.causes[0].field == "spec.template.spec.restartPolicy"
    assert store.resource_version == before and store.list("jobs") == []


def test_generate_name(store: Store) -> None:
    out = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}})
    assert out["metadata"]["name"].startswith("x-") and len(out["metadata"]["name"]) == 7


def test_job_gets_a_generated_selector_and_template_labels(store: Store) -> None:
    j = store.create(job("train"))
    uid = j["metadata"]["uid"]
    assert j["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = j["spec"]["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "train" and labels["controller-uid"] == uid


def test_service_gets_a_cluster_ip(store: Store) -> None:
    svc = store.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "head-svc"},
            "spec": {"selector": {"a": "b"}, "ports": [{"port": 8265}]},
        }
    )
    assert svc["spec"]["clusterIP"].startswith("34.118.") and svc["spec"]["clusterIPs"] == [
        svc["spec"]["clusterIP"]
    ]
    headless = store.create(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "h"}, "spec": {"clusterIP": "None"}}
    )
    assert headless["spec"]["clusterIP"] == "None"


def _owned(name: str, *owners: dict) -> dict:
    c = cm(name)
    c["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"], "uid": o["metadata"]["uid"]}
        for o in owners
    ]
    return c


def test_a_dependent_with_another_live_owner_stays_and_loses_the_dead_reference(store: Store) -> None:
    a, b = store.create(cm("a")), store.create(cm("b"))
    store.create(_owned("shared", a, b))
    store.create(_owned("only-a", a))
    store.delete("cm", "a")
    assert [o["metadata"]["name"] for o in store.list("cm")] == ["b", "shared"]
    assert [r["name"] for r in store.get("cm", "shared")["metadata"]["ownerReferences"]] == ["b"]
    store.delete("cm", "b")
    assert store.list("cm") == []


def test_a_dependent_whose_owners_all_go_in_one_cascade_goes_too(store: Store) -> None:
    root = store.create(cm("root"))
    mid = store.create(_owned("mid", root))
    store.create(_owned("leaf", root, mid))  # both owners disappear in the same cascade
    seen: list[tuple[str, str]] = []
    store.watch(lambda ev: seen.append((ev.type, ev.object["metadata"]["name"])), ["configmaps"])
    store.delete("cm", "root")
    assert store.list("cm") == []
    assert sorted(seen) == [("DELETED", "leaf"), ("DELETED", "mid"), ("DELETED", "root")]


def test_cascade_marks_a_dependent_with_finalizers_and_deletes_it_when_they_are_removed(store: Store) -> None:
    owner = store.create(cm("owner"))
    child = _owned("child", owner)
    child["metadata"]["finalizers"] = ["example.com/hold"]
    store.create(child)
    store.create(_owned("grandchild", store.get("cm", "child")))
    store.delete("cm", "owner")
    held = store.get("cm", "child")
    assert held["metadata"]["deletionTimestamp"] and store.get("cm", "grandchild")
    held["metadata"]["finalizers"] = []
    store.update(held)
    assert store.list("cm") == []


def test_a_terminating_namespace_waits_for_objects_with_finalizers(store: Store) -> None:
    held = cm("held", ns="team-a")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    store.create(held)
    store.create(cm("plain", ns="team-a"))
    events: list[tuple[str, str]] = []
    store.watch(lambda ev: events.append((ev.type, ev.object["metadata"]["name"])))
    store.delete("namespace", "team-a")
    ns = store.get("ns", "team-a")
    assert ns["status"]["phase"] == "Terminating" and ns["metadata"]["deletionTimestamp"]
    assert [o["metadata"]["name"] for o in store.list("cm", "team-a")] == ["held"]
    with pytest.raises(Conflict):
        store.create(cm("late", ns="team-a"))
    cur = store.get("cm", "held", "team-a")
    cur["metadata"]["finalizers"] = []
    store.update(cur)
    with pytest.raises(NotFound):
        store.get("ns", "team-a")
    assert events.count(("DELETED", "plain")) == 1 and events[-1] == ("DELETED", "team-a")


def test_set_based_and_equality_label_selectors(store: Store) -> None:
    for name, labels in [("a", {"env": "prod", "tier": "web"}), ("b", {"env": "dev"}), ("c", {"tier": "db"})]:
        c = cm(name)
        c["metadata"]["labels"] = labels
        store.create(c)

    def names(sel: str) -> list[str]:
        return [o["metadata"]["name"] for o in store.list("cm", label_selector=sel)]

    assert names("env notin (prod)") == ["b", "c"]  # notin and != match objects without the key
    assert names("env!=prod") == ["b", "c"]
    assert names("env in (prod, dev)") == ["a", "b"]
    assert names("!env") == ["c"]
    assert names("env,tier") == ["a"]
    assert names("env==prod,tier in (web)") == ["a"]
    assert names("tier=db,!env") == ["c"]
    assert names("") == ["a", "b", "c"]
    for bad in ("env=prod=x", "env in prod", "!env=prod", "env in (a", "=x"):
        with pytest.raises(BadRequest):
            store.list("cm", label_selector=bad)


def test_uids_differ_and_creation_time_follows_the_clock() -> None:
    clock = VirtualClock(0)
    s = Store(default_registry(), clock, namespaces=["default"])
    a = s.create(cm("a"))
    clock.set(90061)
    b = clone(s.create(cm("b")))
    assert a["metadata"]["uid"] != b["metadata"]["uid"]
    assert (a["metadata"]["creationTimestamp"], b["metadata"]["creationTimestamp"]) == (
        "1970-01-01T00:00:00Z",
        "1970-01-02T01:01:01Z",
    )
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    b["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    b["data"] = {"x": "1"}
    out = clone(s.update(b))
    assert out["metadata"]["creationTimestamp"] == "1970-01-02T01:01:01Z"
    # another uid is the API server's UID precondition failing on update: 409, nothing written
    out["metadata"]["uid"] = "forged"
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: forged"):
        s.update(out)
    assert s.get("ConfigMap", "b", "default")["metadata"]["uid"] == b["metadata"]["uid"]


def test_watch_filters_kinds_and_a_delete_has_its_own_resource_version(store: Store) -> None:
    seen: list[tuple[str, str, int]] = []
    sub = store.watch(lambda ev: seen.append((ev.type, ev.kind, ev.rv)), ["cm"])
    a = store.create(cm("a"))
    store.create(job("j"))
    gone = store.delete("cm", "a")
    assert [(t, k) for t, k, _ in seen] == [("ADDED", "configmaps"), ("DELETED", "configmaps")]
    assert seen[1][2] > int(a["metadata"]["resourceVersion"]) and seen[1][2] == store.resource_version
    assert gone["metadata"]["uid"] == a["metadata"]["uid"]
    sub.cancel()
    store.create(cm("b"))
    assert len(seen) == 2


def test_indexes_follow_writes_that_keep_or_change_labels_owners_and_indexed_fields(store: Store) -> None:
    """The indexes ``peek_list`` answers from stay right whether a write changes only status, the labels, the
    owners or an indexer's field (a write that keeps uid, owners and labels leaves those tables alone)."""
    owner = store.create(cm("owner"))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    store.create(pod)

    def names(**kw: object) -> list[str]:
        return [o["metadata"]["name"] for o in store.peek_list("Pod", **kw)]  # type: ignore[arg-type]

    cur = store.get("Pod", "p")
    cur["status"] = {"phase": "Running"}
    store.update_status(cur)  # status only
    assert names(label_selector="app=a") == ["p"] and names(namespace="default") == ["p"]
    cur = store.get("Pod", "p")
    cur["spec"]["nodeName"] = "n1"  # an indexed field only (the binding subresource's write)
    store.update(cur, with_status=True)
    assert names(index=("spec.nodeName", "n1")) == ["p"] and names(label_selector="app=a") == ["p"]
    cur = store.get("Pod", "p")
    cur["metadata"]["labels"] = {"app": "b"}
    cur["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    ]
    store.update(cur)  # labels and owners
    assert names(label_selector="app=a") == [] and names(label_selector="app=b") == ["p"]
    assert names(owner_uid=owner["metadata"]["uid"]) == ["p"]
    assert names(index=("spec.nodeName", "n1")) == ["p"] and names(field_selector="spec.nodeName=n1") == ["p"]
    store.delete("Pod", "p")
    assert names(label_selector="app=b") == [] and names(index=("spec.nodeName", "n1")) == []
    assert names(owner_uid=owner["metadata"]["uid"]) == []


def _fresh() -> Store:
    from random import Random

    return Store(default_registry(), VirtualClock(), rng=Random(7), namespaces=["default"])


def test_an_objects_identity_does_not_depend_on_what_was_created_before_it() -> None:
    """uids and generated names are keyed hashes of what is created and when, so one more object created
    earlier (an Event, a Lease, a variant's extra Workload) leaves every other object's identity as it was."""
    a, b = _fresh(), _fresh()
    b.create(cm("extra"))
    b.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}})
    for s in (a, b):
        s.clock.set(s.clock.now() + 5)
    ua = a.create(cm("same"))["metadata"]["uid"]
    ub = b.create(cm("same"))["metadata"]["uid"]
    assert ua == ub
    ga = a.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "y-"}})
    gb = b.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "y-"}})
    assert ga["metadata"]["name"] == gb["metadata"]["name"]
    # the same name re-created, in the same instant or later, never gets a uid it had before
    a.delete("ConfigMap", "same", "default")
    again = a.create(cm("same"))["metadata"]["uid"]
    a.delete("ConfigMap", "same", "default")
    a.clock.set(a.clock.now() + 1)
    later = a.create(cm("same"))["metadata"]["uid"]
    assert len({ua, again, later}) == 3
    # another seed (or another boot of the same state: the journal re-seeds the stream) gives other uids
    from random import Random

    c = Store(default_registry(), VirtualClock(), rng=Random(8), namespaces=["default"])
    c.clock.set(c.clock.now() + 5)
    assert c.create(cm("same"))["metadata"]["uid"] != ua


def test_generated_names_in_one_instant_are_distinct(store: Store) -> None:
    names = {
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g-"}})[
            "metadata"
        ]["name"]
        for _ in range(200)
    }
    assert len(names) == 200 and all(n.startswith("g-") and len(n) == 7 for n in names)


def test_listed_copies_are_the_callers_and_follow_writes(store: Store) -> None:
    """``list`` copies through the store's cache of each listed version's JSON text: a copy is the caller's to
    change (the store, the cache and the next list do not see it), shares no part with another copy, and a
    write or a delete drops the replaced version's text (the next list shows the write)."""
    shared = {"k": "v"}
    store.create(dict(cm("a"), data=shared))
    store.create(dict(cm("b"), data=shared))
    first = store.list("ConfigMap", "default")
    assert len(store.texts) == 2
    first[0]["data"]["k"] = "changed"
    first[0]["metadata"]["labels"] = {"x": "y"}
    again = store.list("ConfigMap", "default")  # from the kept texts
    assert [o["data"] for o in again] == [{"k": "v"}, {"k": "v"}]
    assert "labels" not in again[0]["metadata"]
    assert again[0]["data"] is not again[1]["data"] and again[0] is not first[0]
    assert store.peek("ConfigMap", "a", "default")["data"] == {"k": "v"}
    cur = store.get("ConfigMap", "a", "default")
    cur["data"]["k"] = "written"
    store.update(cur)
    assert len(store.texts) == 1  # the replaced version's text went with it
    assert [o["data"]["k"] for o in store.list("ConfigMap", "default")] == ["written", "v"]
    store.delete("ConfigMap", "b", "default")
    assert len(store.texts) == 1
    assert [o["metadata"]["name"] for o in store.list("ConfigMap", "default")] == ["a"]


def test_listed_copies_of_what_orjson_refuses_are_exact_and_not_kept(store: Store) -> None:
    store.create(dict(cm("big"), data={"n": "1"}))
    obj = store.peek("ConfigMap", "big", "default")
    odd = dict(obj, extra={"big": 2**80})  # not a stored shape: clone_many's Python walk takes it
    from flexq.api.jsoncopy import clone_many

    cache: dict = {}
    out = clone_many([odd, obj], cache)
    assert out == [odd, obj] and out[0]["extra"] is not odd["extra"]
    assert list(cache) == [id(obj)]
