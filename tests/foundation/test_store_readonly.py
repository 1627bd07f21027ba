"""Read-only access to stored versions (``peek``, what a write returns, watch events) and the
``check_readonly`` mode that catches a caller changing one in place."""

from __future__ import annotations

import pytest

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.store import Store, clone, status_copy


def job(name: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"a": "1"}},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
        },
    }


def make(check: bool = False) -> Store:
    return Store(default_registry(), VirtualClock(), namespaces=["default"], check_readonly=check)


def test_peek_is_the_stored_version_and_get_a_copy() -> None:
    s = make()
    s.create(job("j"))
    assert s.peek("Job", "j", "default") is s.peek("Job", "j", "default")
    assert s.get("Job", "j", "default") == s.peek("Job", "j", "default")
    assert s.get("Job", "j", "default") is not s.peek("Job", "j", "default")
    assert s.peek("Job", "nope", "default") is None


def test_status_write_from_a_status_copy_leaves_the_old_version_intact() -> None:
    s = make(check=True)
    s.create(job("j"))
    v1 = s.peek("Job", "j", "default")
    before = clone(v1)
    w = status_copy(v1)
    w["status"] = {"active": 1}
    w["metadata"]["annotations"] = {"x": "y"}  # metadata's own keys may change on the copy
    out = s.update_status(w)
    assert out is s.peek("Job", "j", "default") and out["status"] == {"active": 1}
    assert v1 == before  # the previous version is unchanged
    assert out["metadata"]["resourceVersion"] != v1["metadata"]["resourceVersion"]
    assert "annotations" not in out["metadata"]  # a status write ignores metadata
    again = s.update_status(clone(out))
    assert again is out  # a no-op write: the same stored version, read-only
    s.verify_readonly()


def test_check_readonly_catches_a_change_in_place() -> None:
    s = make(check=True)
    s.create(job("j"))
    s.peek("Job", "j", "default")["metadata"]["labels"]["a"] = "2"  # what a careless controller might do
    with pytest.raises(AssertionError, match="changed in place"):
        s.verify_readonly()
    with pytest.raises(AssertionError, match="changed in place"):
        s.update_status({**s.get("Job", "j", "default"), "status": {"active": 1}})


def test_check_readonly_catches_a_watcher_changing_an_event_object() -> None:
    s = make(check=True)
    s.watch(lambda ev: ev.object["spec"].update(parallelism=9), ["Job"])
    s.create(job("j"))
    with pytest.raises(AssertionError, match="changed in place"):
        s.verify_readonly()


class _Mutator:
    """A controller that reads ConfigMap ``c`` on every change and changes what it read: in place (``peek``,
    ``peek_list``: the stored version) or on its own copy (``get``)."""

    def __new__(cls, ctx, how: str):
        from flexq.runtime import Controller, Watch

        class Mutator(Controller):
            name = "mutator"

            def watches(self):
                return [Watch("ConfigMap")]

            def reconcile(self, key):
                if how == "peek":
                    obj = self.store.peek("ConfigMap", key[1], key[0])
                elif how == "peek_list":
                    obj = self.store.peek_list("ConfigMap", key[0])[0]
                else:
                    obj = self.store.get("ConfigMap", key[1], key[0])
                obj["data"]["seen"] = "yes"  # a careless controller
                return None

        return Mutator(ctx)


def _manager_world(how: str):
    from flexq.loop import EventLoop, Rngs
    from flexq.runtime import Context, Manager
    from flexq.store.logs import PodLogs

    loop = EventLoop(VirtualClock(0))
    store = Store(default_registry(), loop.clock, namespaces=["default"], check_readonly=True)
    manager = Manager(Context(store=store, loop=loop, rngs=Rngs(1), logs=PodLogs(None)))
    manager.add(_Mutator(manager.ctx, how))
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}})
    return loop, store


@pytest.mark.parametrize("how", ["peek", "peek_list"])
def test_a_controller_that_changes_an_object_it_read_fails_at_once_by_name(how: str) -> None:
    """The store hands out its stored versions, shared and read-only (client-go's informer cache contract); with
    the check on, the reconcile that changed one fails loudly, naming the controller, its key and the object."""
    loop, _store = _manager_world(how)
    with pytest.raises(
        AssertionError, match=r"mutator \('default', 'c'\) changed stored objects in place.*c"
    ):
        loop.run_until(1.0)


def test_a_controller_may_change_its_own_copy() -> None:
    loop, store = _manager_world("get")
    loop.run_until(1.0)
    assert store.peek("ConfigMap", "c", "default")["data"] == {"a": "1"}
    store.verify_readonly()


def test_evolve_copies_only_the_dicts_on_its_path() -> None:
    from flexq.api.jsoncopy import evolve

    s = make(check=True)
    s.create(job("j"))
    v1 = s.peek("Job", "j", "default")
    before = clone(v1)
    nxt = evolve(v1, ("metadata", "labels", "team"), "a")
    assert v1 == before  # the stored version is untouched
    assert nxt["metadata"]["labels"]["team"] == "a" and nxt["metadata"] is not v1["metadata"]
    assert nxt["spec"] is v1["spec"]  # off the path: shared
    out = s.update(nxt)
    assert out["metadata"]["labels"]["team"] == "a" and v1 == before
    assert evolve({}, ("a", "b"), 1) == {"a": {"b": 1}}
