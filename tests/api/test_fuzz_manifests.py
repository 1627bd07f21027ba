"""Mutated manifests through the SDK (hypothesis, seeded): every refusal is the project's API error, and a
refusal changes nothing.

Each example takes one of the valid bases of ``test_api_malformed`` (Kueue, KubeRay, core kinds), makes a few
hostile mutations (a value of the wrong JSON type, null, a huge or negative number, a deep or wide value, an
unknown key, a key removed, a name that is a number or a YAML date), and applies it with ``Twin.apply`` — as a
dict, or as YAML text. The twin must answer with a created/updated object or an ``flexq.errors`` error, never a
bare Python exception, and a refused apply must leave the store as it was (same resourceVersion).
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from flexq import Twin
from flexq.errors import FlexqError
from tests.api.test_api_malformed import BASES

HOSTILE: list[Any] = [
    None,
    0,
    -1,
    5,
    2**31,
    2**63,
    -(2**63) - 1,
    10**40,
    1e-7,
    1.5,
    True,
    False,
    "",
    "x",
    "5",
    "-1",
    "1e40",
    "1e-7",
    "2020-01-01",
    ".inf",
    "!!!",
    "a" * 300,
    "Not_A_Name",
    "\u00e9\u0000\U0001f600",
    [],
    [1],
    ["a", None],
    [[[[1]]]],
    {},
    {"a": 1},
    {"": None},
    {"name": 5},
    {"metadata": None},
]
ROOT_KEYS = ["apiVersion", "kind", "metadata", "spec", "status", "data", "binaryData", "items", "x-unknown"]


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into ``doc`` (dict keys and list indices), the root first."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _deep(n: int) -> Any:
    v: Any = "leaf"
    for _ in range(n):
        v = {"a": v}
    return v


@st.composite
def mutation(draw: st.DrawFn) -> tuple[str, Any, int, Any]:
    """(op, value, path index, key): applied by ``_mutate`` to whatever base the example drew."""
    op = draw(st.sampled_from(["set", "set", "set", "delete", "add", "deep", "wide", "string"]))
    value = draw(st.sampled_from(HOSTILE))
    return op, value, draw(st.integers(0, 10**6)), draw(st.sampled_from(ROOT_KEYS + ["name", "count", "x"]))


def _mutate(doc: dict, muts: list[tuple[str, Any, int, Any]]) -> dict:
    for op, value, where, key in muts:
        paths = _paths(doc)
        path = paths[where % len(paths)]
        parent: Any = doc
        for p in path[:-1]:
            parent = parent[p]
        last = path[-1] if path else None
        target = parent[last] if path else doc
        if op == "set" and path:
            parent[last] = copy.deepcopy(value)
        elif op == "delete" and path:
            parent.pop(last) if isinstance(parent, dict) else parent.pop(last)
        elif op == "add" and isinstance(target, dict):
            target[key] = copy.deepcopy(value)
        elif op == "deep" and path:
            parent[last] = _deep(150 if where % 2 else 60)
        elif op == "wide" and path:
            parent[last] = {f"k{i}": "v" * 20 for i in range(300)} if where % 2 else ["x"] * 1000
        elif op == "string" and path:
            parent[last] = str(value)
    return doc


COUNTER = {"manifests": 0, "refused": 0, "accepted": 0}


@seed(20261203)
@settings(
    max_examples=130,
    deadline=None,
    derandomize=False,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(BASES)), st.lists(mutation(), min_size=1, max_size=3), st.booleans()
        ),
        min_size=8,
        max_size=8,
    )
)
def _apply_mutated_manifests(cases: list) -> None:
    twin = _TWIN[0]
    for base, muts, as_yaml in cases:
        doc = _mutate(BASES[base](), muts)
        source: Any = doc
        if as_yaml:
            try:
                source = yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))
            except yaml.YAMLError:
                source = doc
        rv = twin.store.resource_version
        COUNTER["manifests"] += 1
        try:
            twin.apply(source)
        except FlexqError:
            COUNTER["refused"] += 1
            assert twin.store.resource_version == rv, f"a refused apply changed the store: {doc!r:.300}"
        except Exception as exc:
            raise AssertionError(f"{type(exc).__name__}: {exc} for {base} after {muts!r:.400}") from exc
        else:
            COUNTER["accepted"] += 1


_TWIN: list[Twin] = []


def setup_module() -> None:
    _TWIN.append(Twin(clock="virtual"))


def teardown_module() -> None:
    for t in _TWIN:
        t.close()


def test_mutated_manifests_are_refused_with_api_errors() -> None:
    """Over a thousand mutated manifests: each refused one with an API error and no write, the rest stored
    (the counts are checked here, not by a second test that relies on running after this one)."""
    COUNTER.update(manifests=0, refused=0, accepted=0)
    _apply_mutated_manifests()
    print(f"mutated manifests: {COUNTER}")
    assert COUNTER["manifests"] >= 1000, COUNTER
    assert COUNTER["refused"] > 100 and COUNTER["accepted"] > 10, COUNTER
