"""Issue 49, item 1: the patch types do work linear in what they touch, as the API server does (json-patch's
``move`` is a remove and an add, not a copy; strategic merge merges lists through maps). Before, 2,000 ``move``s
over a 100,000-element list copied it 2,000 times (52 s on the write path) and a strategic merge of 25,000 owner
references or 40,000 finalizers scanned the list once per item. Correctness here; the times are in
``bench/hardening.py``'s figures."""

from __future__ import annotations

import pytest

from flexq.errors import Invalid
from flexq.store.patch import apply_patch

SMP = "application/strategic-merge-patch+json"


def test_a_long_run_of_moves_moves_the_same_list() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "x": {"a": list(range(100_000))},
    }
    ops = []
    for _ in range(1000):
        ops += [
            {"op": "move", "from": "/x/a", "path": "/x/b"},
            {"op": "move", "from": "/x/b", "path": "/x/a"},
        ]
    out = apply_patch(doc, ops, "application/json-patch+json")
    assert out["x"] == {"a": list(range(100_000))}
    assert doc["x"]["a"] == list(range(100_000))  # the target itself is not changed


def test_moving_a_value_into_itself_is_refused() -> None:
    doc = {"metadata": {"name": "c"}, "x": {"a": {"b": 1}}}
    with pytest.raises(Invalid, match="missing path"):
        apply_patch(doc, [{"op": "move", "from": "/x", "path": "/x/a/c"}], "application/json-patch+json")


def test_strategic_merge_of_long_keyed_and_primitive_lists() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "u-keep"}],
            "finalizers": ["a/keep"],
        },
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"o{i}", "uid": f"u{i}"} for i in range(25_000)]
    refs.append({"uid": "u-keep", "name": "renamed", "apiVersion": "v1", "kind": "ConfigMap"})
    refs.append({"uid": "u7", "$patch": "delete"})
    fins = [f"f/{i}" for i in range(40_000)] + ["a/keep", "f/3"]
    out = apply_patch(pod, {"metadata": {"ownerReferences": refs, "finalizers": fins}}, SMP, ("", "Pod"))
    got = out["metadata"]["ownerReferences"]
    assert len(got) == 25_000  # 25,000 + the kept one - the deleted one
    assert next(r for r in got if r["uid"] == "u-keep")["name"] == "renamed"
    assert not [r for r in got if r["uid"] == "u7"]
    assert len(out["metadata"]["finalizers"]) == 40_001 and len(set(out["metadata"]["finalizers"])) == 40_001
