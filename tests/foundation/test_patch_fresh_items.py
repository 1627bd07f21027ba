"""Issue 49: a strategic merge's new list items are taken as they are (``store.patch._fresh``: no directive, no map
or list inside — what each of 25,000 owner references is) and each item's merge key is worked out once when the
merged list is put in order. Over a generated family of targets and patches (keyed lists with new, matched,
deleted and replaced items, nested keyed lists, ``$setElementOrder``, nulls, primitive lists), the merge equals the
general path's (the shortcut turned off) and shares nothing mutable with the target or the patch."""

from __future__ import annotations

import copy
import random

import pytest

from flexq.store import patch as P

SCHEMA = P.patch_schema("", "Pod")


def _container(rng: random.Random, name: str) -> dict:
    c: dict = {"name": name}
    if rng.random() < 0.5:
        c["image"] = rng.choice(["a", "b", None])
    if rng.random() < 0.4:
        c["env"] = [
            {"name": f"E{rng.randint(0, 4)}", "value": str(rng.randint(0, 9))}
            for _ in range(rng.randint(0, 4))
        ]
    if rng.random() < 0.2:
        c["$patch"] = rng.choice(["delete", "replace", "merge"])
    return c


def _owner(rng: random.Random) -> dict:
    o: dict = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": f"o{rng.randint(0, 6)}",
        "uid": f"u{rng.randint(0, 6)}",
    }
    if rng.random() < 0.2:
        o["controller"] = rng.choice([True, False, None])
    if rng.random() < 0.1:
        o["$patch"] = "delete"
    return o


def _pod(rng: random.Random, patch: bool) -> dict:
    md: dict = {"name": "p"}
    if rng.random() < 0.7:
        md["ownerReferences"] = [_owner(rng) for _ in range(rng.randint(0, 6))]
    if rng.random() < 0.5:
        md["finalizers"] = [f"f{rng.randint(0, 5)}" for _ in range(rng.randint(0, 5))]
    spec: dict = {}
    if rng.random() < 0.7:
        spec["containers"] = [_container(rng, f"c{rng.randint(0, 4)}") for _ in range(rng.randint(0, 4))]
    doc = {"metadata": md, "spec": spec}
    if not patch:  # a stored object carries no directives
        for o in md.get("ownerReferences", []):
            o.pop("$patch", None)
        for c in spec.get("containers", []):
            c.pop("$patch", None)
        return doc
    if rng.random() < 0.2 and "containers" in spec:
        spec["$setElementOrder/containers"] = [{"name": c["name"]} for c in spec["containers"]]
    return doc


@pytest.mark.parametrize("seed", range(4))
def test_new_items_as_the_general_path_merges_them(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        target, body = _pod(rng, False), _pod(rng, True)
        target_before, body_before = copy.deepcopy(target), copy.deepcopy(body)
        try:
            fast: object = P.strategic_merge_patch(target, body, SCHEMA)
        except Exception as exc:  # a refusal must be the same refusal
            fast = ("refused", type(exc).__name__, str(exc))
        with monkeypatch.context() as m:
            m.setattr(P, "_fresh", lambda patch: None)
            try:
                general: object = P.strategic_merge_patch(target, body, SCHEMA)
            except Exception as exc:
                general = ("refused", type(exc).__name__, str(exc))
        assert fast == general, (target, body)
        assert target == target_before and body == body_before  # neither input changed
        if isinstance(fast, dict):  # and the result shares nothing mutable with them
            for o in fast["metadata"].get("ownerReferences", []):
                o["mutated"] = True
            for c in fast.get("spec", {}).get("containers", []):
                c["mutated"] = True
            assert target == target_before and body == body_before


def test_keys_once_puts_items_in_the_order_it_did() -> None:
    """``_in_order`` against the order it gave before its keys were worked out once (the reference below)."""

    def reference(merged: list, order: list, server: list, key: str | None) -> list:
        def pos(keys: list) -> dict:
            out: dict = {}
            for n, k in enumerate(keys):
                out.setdefault(P._canonical(k), n)
            return out

        at_order, at_server = pos(order), pos(server)

        def at(m: object) -> object:
            return P._canonical(P._key_or_none(m, key))

        mine = sorted((m for m in merged if at(m) in at_order), key=lambda m: at_order[at(m)])
        theirs = sorted(
            (m for m in merged if at(m) not in at_order), key=lambda m: at_server.get(at(m), len(server))
        )
        out, i, j = [], 0, 0
        while i < len(theirs) or j < len(mine):
            if j >= len(mine):
                out.append(theirs[i])
                i += 1
            elif i >= len(theirs):
                out.append(mine[j])
                j += 1
            else:
                li, ri = at_server.get(at(theirs[i])), at_server.get(at(mine[j]))
                if li is not None and ri is not None and li < ri:
                    out.append(theirs[i])
                    i += 1
                else:
                    out.append(mine[j])
                    j += 1
        return out

    rng = random.Random(7)
    for _ in range(2000):
        key = rng.choice(["name", None])

        def item(key: str | None = key) -> object:
            k = rng.choice([f"k{i}" for i in range(8)])
            return {"name": k, "v": rng.randint(0, 3)} if key else k

        merged = [item() for _ in range(rng.randint(0, 8))]
        server = [P._key_or_none(item(), key) for _ in range(rng.randint(0, 8))]
        order = [P._key_or_none(item(), key) for _ in range(rng.randint(0, 8))]
        assert P._in_order(merged, order, server, key) == reference(merged, order, server, key)
