"""Identical subtrees of created objects kept once: a kind names the parts of its objects that repeat across
them and that no write changes in place (``KindInfo.shared``: a Workload's pod sets, the same template for
every Workload of a job shape); the store keeps one copy of each distinct one and points every new object at it.

Stored versions are read-only (copy-on-write: a writer builds its next version by copying the dicts on the path
it changes; ``Store(check_readonly=True)`` names one that changes a stored object in place), so a subtree
shared by several objects reads as each one's own. Kueue's large-scale file holds 60,000 Workloads at once,
each with the same few pod-set templates: ~1.6 KB of dicts each, kept once per shape instead.

Owns ``SharedTrees``. Must not import ``flexq.runtime``, domain packages or ``flexq.http``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

from flexq.api.registry import KindInfo

__all__ = ["SharedTrees"]


class SharedTrees:
    """The distinct subtrees seen lately (an LRU of ``size``), by kind, path and exact JSON text."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self.trees: OrderedDict[tuple[str, tuple[str, ...], bytes], Any] = OrderedDict()

    def share(self, info: KindInfo, obj: dict) -> None:
        """Point ``obj`` (a new object, the store's own top level, not yet stored) at the kept copy of each of its
        kind's shared subtrees that is byte for byte one seen before (same keys in the same order, same values of
        the same JSON types); a new one is kept. The dicts on the way are copied, as any writer's (a caller's
        object given to keep may share them)."""
        for path in info.shared:
            chain: list[dict] = [obj]
            for part in path[:-1]:
                nxt = chain[-1].get(part)
                if type(nxt) is not dict:
                    break
                chain.append(nxt)
            else:
                value = chain[-1].get(path[-1])
                if type(value) is dict or type(value) is list:
                    kept = self._kept(info, path, value)
                    if kept is not value:
                        for i in range(len(chain) - 1, 0, -1):  # copy-on-write up to the top level
                            kept = {**chain[i], path[i]: kept}
                        obj[path[0]] = kept

    def _kept(self, info: KindInfo, path: tuple[str, ...], value: Any) -> Any:
        try:
            key = (info.key, path, orjson.dumps(value))
        except (TypeError, orjson.JSONEncodeError):  # not plain JSON (an integer past 64 bits): its own
            return value
        kept = self.trees.get(key)
        if kept is None:
            self.trees[key] = value
            if len(self.trees) > self.size:
                self.trees.popitem(last=False)
            return value
        self.trees.move_to_end(key)
        return kept
