"""Named, seeded random streams: one ``random.Random`` per component, derived from the twin's seed.

A component asking for ``rngs.get("gke.capacity")`` always gets the same sequence for the same seed,
whatever other components draw. Must not import anything in flexq.
"""

from __future__ import annotations

import hashlib
import random


class Rngs:
    """A family of independent seeded generators."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._streams: dict[str, random.Random] = {}

    def get(self, name: str) -> random.Random:
        if name not in self._streams:
            digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
            self._streams[name] = random.Random(int.from_bytes(digest[:8], "big"))
        return self._streams[name]
