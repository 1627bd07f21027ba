"""The store's identity room: the uids and generated names it gives the objects it creates.

Owns: ``Identities`` — 128 bits from a keyed hash of what is created and when (the key drawn once from the
store's seeded stream), made into a version-4 uid or a ``generateName`` suffix of apimachinery's alphabet. An
object's identity depends on the seed, the boot, what it is and when it is created, and on nothing created before
it. Reads and writes no stored object: the store says which uids and names are taken. Must not import
``flexq.runtime``, domain packages or ``flexq.http``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Container
from random import Random

from flexq.errors import AlreadyExists

ALNUM = "bcdfghjklmnpqrstvwxz2456789"  # as apimachinery's utilrand
_V4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_V4_SET = (0x8000 << 48) | (4 << 76)


def uuid4(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))`` (the RFC 4122 variant and version 4 set), three times faster:
    every stored object (an Event per controller step) gets one."""
    h = "%032x" % (bits & _V4_CLEAR | _V4_SET)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Identities:
    """The identities one store gives: keyed by 128 bits drawn from ``rng`` (the store's seeded stream)."""

    def __init__(self, rng: Random) -> None:
        key = rng.getrandbits(128).to_bytes(16, "big")
        self._hash = hashlib.blake2b(key=key, digest_size=16)  # copied per use: no key setup
        self._instant: int | None = None
        self._issued: dict[tuple, int] = {}

    def ident(self, now: float, *parts: str) -> int:
        """128 bits from a keyed hash of ``parts``, the (virtual) instant ``now`` and how many times the same parts
        were hashed in that instant. The key comes from the store's seeded stream, which the journal's boot counter
        re-seeds on every restart. So an object's uid and generated name depend on the seed, the boot, what it
        is and when it is created, and on nothing created before it: a run that records one more Event or
        Lease, or a variant of a simulation that creates other objects, gives every other object the same
        identity (and the draws keyed on names, such as a ProvisioningRequest's DWS wait, the same values)."""
        instant = round(now * 1_000_000)
        if instant != self._instant:
            self._instant, self._issued = instant, {}
        n = self._issued.get(parts, 0)
        self._issued[parts] = n + 1
        data = "\0".join((*parts, str(instant), str(n))).encode()
        h = self._hash.copy()  # as hashlib.blake2b(data, key=key, digest_size=16)
        h.update(data)
        return int.from_bytes(h.digest(), "big")

    def uid(self, now: float, kind: str, namespace: str, name: str, taken: Container[str]) -> str:
        """A uid not in ``taken`` (the stored objects') and none issued in this instant (uids identify an object for
        its owners' references and selectors; an object re-created under the same name at another instant gets
        another)."""
        while True:
            uid = uuid4(self.ident(now, "uid", kind, namespace, name))
            if uid not in taken:
                return uid

    def generated_name(
        self, now: float, kind: str, namespace: str, generate_name: str, taken: Callable[[str], bool]
    ) -> str:
        """``generate_name`` and five characters, a name ``taken`` refuses (a stored object's) tried again up to
        ten times, as the API server's ``GenerateName`` retries."""
        for _ in range(10):
            bits = self.ident(now, "name", kind, namespace, generate_name)
            suffix = []
            for _ in range(5):
                bits, d = divmod(bits, len(ALNUM))
                suffix.append(ALNUM[d])
            name = generate_name + "".join(suffix)
            if not taken(name):
                return name
        raise AlreadyExists("could not generate a unique name")
