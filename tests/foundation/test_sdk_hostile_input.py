"""The SDK refuses what JSON cannot carry, or the API server would not take, with the project's error types
(``BadRequest`` or ``RequestEntityTooLarge``, naming the problem), never a bare Python exception, and stores
nothing: ``None`` or a number for a manifest, non-string keys, sets and bytes, nesting 5000 deep, an object
that contains itself, a lone surrogate, a patch that is not an object or a list."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from flexq import Twin
from flexq.errors import BadRequest, FlexqError, RequestEntityTooLarge


def _cm(**extra: Any) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, **extra}


def _deep(levels: int) -> list:
    top: list = []
    cur = top
    for _ in range(levels):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    return top


def _circular() -> dict:
    loop: dict = {"a": 1}
    loop["self"] = loop
    return _cm(extra=loop)


@pytest.fixture(scope="module")
def twin() -> Iterator[Twin]:
    t = Twin(executor="simulated")
    t.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"a": "1"}})
    yield t
    t.close()


CASES = [
    ("none", None, BadRequest, "expected"),
    ("number", 5, BadRequest, "expected"),
    ("int-key", _cm(data={1: "x"}), BadRequest, "unsupported map key of type int"),
    ("tuple-key", _cm(data={(1, 2): "x"}), BadRequest, "unsupported map key of type tuple"),
    ("set", _cm(data={"a": {1, 2}}), BadRequest, "unsupported type: set"),
    ("deep", _cm(data={"a": _deep(5000)}), BadRequest, "nested too deeply"),
    ("circular", _circular(), BadRequest, "refers to itself"),
    ("surrogate", _cm(data={"a": "x\ud800"}), BadRequest, "lone UTF-16 surrogate (U+D800)"),
    ("surrogate-key", _cm(data={"\udfff": "x"}), BadRequest, "lone UTF-16 surrogate (U+DFFF)"),
    ("huge", _cm(data={"a": "x" * (4 * 1024 * 1024)}), RequestEntityTooLarge, "larger than the limit"),
]


@pytest.mark.parametrize("method", ["apply", "create"])
@pytest.mark.parametrize(("obj", "error", "text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_objects_are_refused_with_a_flexq_error(
    twin: Twin, method: str, obj: Any, error: type, text: str
) -> None:
    before = twin.store.resource_version
    with pytest.raises(error) as exc:
        getattr(twin, method)(obj)
    assert text in str(exc.value)
    assert twin.store.resource_version == before


@pytest.mark.parametrize(
    ("patch", "patch_type", "text"),
    [
        ({"data": {1: "x"}}, "strategic", "unsupported map key of type int"),
        ({"data": {"a": _deep(5000)}}, "merge", "nested too deeply"),
        ("garbage", "merge", "a patch must be an object or a list of operations"),
        ([{"op": "add", "path": 5, "value": "x"}], "json", 'must have a string "path"'),
    ],
    ids=["int-key-strategic", "deep-merge", "string", "json-path-int"],
)
def test_hostile_patches_are_refused_with_a_flexq_error(
    twin: Twin, patch: Any, patch_type: str, text: str
) -> None:
    before = twin.get("configmap", "kept")
    with pytest.raises(FlexqError) as exc:
        twin.patch("configmap", "kept", patch, patch_type=patch_type)
    assert isinstance(exc.value, BadRequest) and text in str(exc.value)
    assert twin.get("configmap", "kept") == before
