"""The store's other rooms on their own: the objects and their reads (``flexq.store.objects``), the storage rules
(``flexq.store.rules``), identities (``flexq.store.identity``) and the read-only check (``flexq.store.readonly``)."""

from __future__ import annotations

import random
import uuid

import pytest

from flexq.api.kinds import default_registry
from flexq.errors import AlreadyExists, BadRequest, Conflict, Invalid, NotFound
from flexq.store import rules
from flexq.store.identity import Identities, uuid4
from flexq.store.objects import Objects
from flexq.store.readonly import Pristine
from flexq.store.selectors import parse_label_selector

REGISTRY = default_registry()
PODS = REGISTRY.resolve("Pod")
NODES = REGISTRY.resolve("Node")
JOBS = REGISTRY.resolve("Job")


def _pod(name: str, ns: str, labels: dict[str, str], node: str | None, owner: str | None) -> dict:
    md: dict = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels}
    if owner:
        md["ownerReferences"] = [{"uid": owner, "kind": "Job", "name": owner}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": {"nodeName": node} if node else {}}


# -- objects: the read path ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(10))
def test_reads_from_the_indexes_equal_a_scan_of_every_object(seed: int) -> None:
    """Whatever was placed and removed: each read (namespace, labels, selectors, indexer, owner) returns what a
    scan of the live objects returns, in namespace-then-name order."""
    rng = random.Random(seed)
    objs = Objects(REGISTRY)
    live: dict[tuple[str, str], dict] = {}
    for _ in range(150):
        key = (rng.choice(["a", "b"]), f"p{rng.randrange(12)}")
        old = live.get(key)
        if old is not None and rng.random() < 0.3:
            objs._remove(PODS.key, key, old)
            del live[key]
            continue
        new = _pod(
            key[1],
            key[0],
            {"app": rng.choice(["x", "y"])} if rng.random() < 0.8 else {},
            rng.choice([None, "n1", "n2"]),
            rng.choice([None, "j1", "j2"]),
        )
        objs._place(PODS.key, key, old, new)
        live[key] = new

    def scan(pred: object) -> list[dict]:
        return [live[k] for k in sorted(live) if pred(live[k])]  # type: ignore[operator]

    md = lambda o: o["metadata"]  # noqa: E731
    assert objs.peek_list("Pod") == scan(lambda o: True)
    assert objs.peek_list("Pod", "a") == scan(lambda o: md(o)["namespace"] == "a")
    assert objs.peek_list("Pod", label_selector="app=x") == scan(lambda o: md(o)["labels"].get("app") == "x")
    sel = parse_label_selector("app notin (x)")
    assert objs.peek_list("Pod", "b", label_selector="app notin (x)") == scan(
        lambda o: md(o)["namespace"] == "b" and sel(md(o)["labels"])
    )
    assert objs.peek_list("Pod", field_selector="spec.nodeName=n1") == scan(
        lambda o: o["spec"].get("nodeName") == "n1"
    )
    assert objs.peek_list("Pod", index=("spec.nodeName", "n2")) == scan(
        lambda o: o["spec"].get("nodeName") == "n2"
    )
    owned = scan(
        lambda o: (
            md(o)["namespace"] == "a" and any(r["uid"] == "j1" for r in md(o).get("ownerReferences", []))
        )
    )
    assert objs.peek_list("Pod", "a", owner_uid="j1") == owned
    assert objs.count("Pod") == len(live)
    for k, o in live.items():
        assert objs.peek("Pod", k[1], k[0]) is o  # shared, read-only
        got = objs.get("Pod", k[1], k[0])
        assert got == o and got is not o  # a copy


def test_a_missing_object_is_not_found_as_the_api_server_words_it() -> None:
    objs = Objects(REGISTRY)
    with pytest.raises(NotFound, match='jobs.batch "j" not found'):
        objs.get("Job", "j", "default")
    assert objs.try_get("Job", "j", "default") is None and objs.peek("Job", "j", "default") is None


# -- rules: what every write does to metadata ------------------------------------------------------------------
def _job(gen: int | None = None, **meta: object) -> dict:
    md = {"name": "j", "namespace": "default", **meta}
    if gen is not None:
        md["generation"] = gen
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": {"parallelism": 1}}


def test_a_create_sets_identity_and_drops_what_a_writer_may_not_set() -> None:
    obj = _job(resourceVersion="7", deletionTimestamp="x", selfLink="/s", uid="mine")
    m = rules.created(JOBS, obj, "u1", "2026-01-01T00:00:00Z")
    assert m is obj["metadata"]
    assert {k: m[k] for k in ("uid", "creationTimestamp", "generation")} == {
        "uid": "u1",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "generation": 1,
    }
    assert not {"resourceVersion", "deletionTimestamp", "selfLink"} & set(m)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "generation": 4}}
    assert "generation" not in rules.created(
        REGISTRY.resolve("ConfigMap"), cm, "u2", "t"
    )  # a kind without one


def test_an_update_carries_identity_and_bumps_the_generation_on_a_spec_change_only() -> None:
    cur = _job(3, uid="u", creationTimestamp="t0", resourceVersion="9")
    same_spec = _job(None, uid="other", creationTimestamp="t1", resourceVersion="1")
    m = rules.carried(JOBS, same_spec, cur)
    assert (m["uid"], m["creationTimestamp"], m["generation"], m["resourceVersion"]) == ("u", "t0", 3, "9")
    changed = _job(None)
    changed["spec"] = {"parallelism": 2}
    assert rules.carried(JOBS, changed, cur)["generation"] == 4
    assert rules.spec_changed(cur, changed) and not rules.spec_changed(cur, same_spec)


def test_no_new_finalizer_on_an_object_being_deleted() -> None:
    cur = _job(1, uid="u", resourceVersion="2", deletionTimestamp="t", finalizers=["a"])
    with pytest.raises(Invalid, match=r"no new finalizers can be added .* found new finalizers \['b'\]"):
        rules.carried(JOBS, _job(None, finalizers=["a", "b"]), cur)
    assert rules.carried(JOBS, _job(None, finalizers=[]), cur)["deletionTimestamp"] == "t"  # removing is fine


def test_a_write_that_changes_nothing_is_no_write() -> None:
    cur = _job(1, uid="u", resourceVersion="2", managedFields=[{"manager": "a"}])
    again = _job(1, uid="u", resourceVersion="5", managedFields=[{"manager": "b"}])
    assert rules.same(cur, again)
    again["status"] = {"active": 1}
    assert not rules.same(cur, again)


def test_a_create_needs_a_free_name_in_a_live_namespace() -> None:
    ns = REGISTRY.resolve("Namespace")
    objs: dict[str, dict] = {ns.key: {("", "default"): {"metadata": {"name": "default"}}}}
    rules.check_new(JOBS, ("default", "j"), objs)
    with pytest.raises(NotFound, match='namespaces "other" not found'):
        rules.check_new(JOBS, ("other", "j"), objs)
    rules.check_new(NODES, ("", "n"), objs)  # cluster-scoped: no namespace to check
    objs[JOBS.key] = {("default", "j"): {}}
    with pytest.raises(AlreadyExists, match='jobs.batch "j" already exists'):
        rules.check_new(JOBS, ("default", "j"), objs)
    objs[ns.key][("", "gone")] = {"metadata": {"name": "gone", "deletionTimestamp": "t"}}
    with pytest.raises(Conflict, match="because it is being terminated"):
        rules.check_new(JOBS, ("gone", "j"), objs)


def test_a_stale_resource_version_is_a_conflict() -> None:
    cur = _job(1, resourceVersion="5")
    rules.check_version(JOBS, "j", cur, None)
    rules.check_version(JOBS, "j", cur, "5")
    with pytest.raises(Conflict, match='on jobs.batch "j": the object has been modified'):
        rules.check_version(JOBS, "j", cur, "4")


def test_a_patch_may_not_move_an_object() -> None:
    cur = _job(1, uid="u")
    ok = _job(None)
    del ok["metadata"]["namespace"]
    rules.check_patched(JOBS, ok, cur, "j", "default")
    assert ok["metadata"]["namespace"] == "default"  # an empty namespace takes the request's
    with pytest.raises(BadRequest, match="does not match the namespace sent on the request"):
        rules.check_patched(JOBS, _job(None, namespace="other"), cur, "j", "default")
    with pytest.raises(
        BadRequest, match=r"the name of the object \(k\) does not match the name on the URL \(j\)"
    ):
        rules.check_patched(JOBS, {"metadata": {"name": "k", "namespace": "default"}}, cur, "j", "default")
    with pytest.raises(BadRequest, match="was undeterminable"):
        rules.check_patched(JOBS, {"metadata": {}}, cur, "j", "default")
    with pytest.raises(Invalid, match="field is immutable"):
        rules.check_patched(JOBS, _job(None, uid="v"), cur, "j", "default")


# -- identity ------------------------------------------------------------------------------------------------------
def test_uuid4_is_the_standard_library_s() -> None:
    rng = random.Random(1)
    for _ in range(200):
        bits = rng.getrandbits(128)
        assert uuid4(bits) == str(uuid.UUID(int=bits, version=4))


def test_an_identity_depends_on_the_seed_what_and_when_not_on_what_came_before() -> None:
    a, b = Identities(random.Random(7)), Identities(random.Random(7))
    for i in range(5):  # a created other objects first
        a.uid(1.0, "pods", "default", f"other{i}", ())
    assert a.uid(1.0, "pods", "default", "p", ()) == b.uid(1.0, "pods", "default", "p", ())
    assert a.uid(2.0, "pods", "default", "p", ()) != b.uid(1.0, "pods", "default", "p", ())  # another instant
    other_seed = Identities(random.Random(8)).uid(1.0, "pods", "default", "p", ())
    assert other_seed != Identities(random.Random(7)).uid(1.0, "pods", "default", "p", ())
    c = Identities(random.Random(7))
    first = c.uid(1.0, "pods", "default", "q", ())
    assert c.uid(1.0, "pods", "default", "q", ()) != first  # the same parts twice in an instant: another uid
    assert Identities(random.Random(7)).uid(1.0, "pods", "default", "q", {first}) != first  # taken: skipped


def test_a_generated_name_is_five_characters_of_apimachinery_s_alphabet_retried_while_taken() -> None:
    ids = Identities(random.Random(3))
    name = ids.generated_name(1.0, "pods", "default", "web-", lambda n: False)
    assert name.startswith("web-") and len(name) == 9 and set(name[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")
    seen: list[str] = []
    other = ids.generated_name(1.0, "pods", "default", "web-", lambda n: seen.append(n) or len(seen) < 3)
    assert len(seen) == 3 and other == seen[-1]
    with pytest.raises(AlreadyExists, match="could not generate a unique name"):
        ids.generated_name(1.0, "pods", "default", "web-", lambda n: True)


# -- read-only check ---------------------------------------------------------------------------------------------
def test_the_read_only_check_names_a_version_changed_in_place() -> None:
    p = Pristine()
    v1 = _job(1)
    p.replaced("jobs", ("default", "j"), None, v1)
    objs = {"jobs": {("default", "j"): v1}}
    assert p.changed(objs, [("jobs", ("default", "j"))]) == [] and p.changed_any(objs) == []
    v1["spec"]["parallelism"] = 9  # a reader wrote into the stored version
    assert p.changed(objs, [("jobs", ("default", "j"))]) == ["jobs default/j"]
    assert p.changed_any(objs) == ["jobs ('default', 'j')"]
    with pytest.raises(AssertionError, match="was changed in place"):
        p.replaced("jobs", ("default", "j"), v1, _job(2))
    p2 = Pristine()
    p2.replaced("jobs", ("default", "j"), None, v1)
    p2.replaced("jobs", ("default", "j"), v1, None)  # removed: nothing kept
    assert p2.kept == {}
