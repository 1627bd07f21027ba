"""Named, seeded random streams: one ``random.Random`` per component, derived from the twin's seed.

A component asking for ``rngs.get("gke.capacity")`` always gets the same sequence for the same seed,
whatever other components draw. Must not import anything in flexq.
"""

from __future__ import annotations

import hashlib
import random


class Rngs:
    """A family of independent seeded generators."""

    def __init__(self, seed: int = 0, boot: int = 0) -> None:
        """``boot``: how many times this twin's state was opened before (0 for a fresh twin). A twin resumed
        from its journal must not replay the streams of an earlier run: names and uids drawn then are
        still stored, so each boot after the first derives its streams from the boot number too."""
        self.seed, self.boot = seed, boot
        self._streams: dict[str, random.Random] = {}

    def get(self, name: str) -> random.Random:
        if name not in self._streams:
            basis = f"{self.seed}:{name}" if not self.boot else f"{self.seed}:boot {self.boot}:{name}"
            digest = hashlib.sha256(basis.encode()).digest()
            self._streams[name] = random.Random(int.from_bytes(digest[:8], "big"))
        return self._streams[name]
