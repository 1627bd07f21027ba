"""Read-only access to stored versions (``peek``, ``copy_result=False``, watch events) and the
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
    out = s.update_status(w, copy_result=False)
    assert out is s.peek("Job", "j", "default") and out["status"] == {"active": 1}
    assert v1 == before  # the previous version is unchanged
    assert out["metadata"]["resourceVersion"] != v1["metadata"]["resourceVersion"]
    assert "annotations" not in out["metadata"]  # a status write ignores metadata
    again = s.update_status(clone(out))
    assert again == out and again is not out  # a no-op write: same version, a copy by default
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
