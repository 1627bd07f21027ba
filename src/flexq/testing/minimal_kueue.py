"""A minimal Kueue: one store, one virtual-time loop and only Kueue's controllers.

The counterpart of upstream's ``test/performance/scheduler/minimalkueue`` (core controllers and the
scheduler, no other components): jobs stay inert unless a test changes their status, so a batch Job
is "inactive" as soon as Kueue suspends it and quota is released at once. Used by the declarative
scenario tests and by ``bench/kueue_baseline.py``. Objects go in and come out as plain dicts.
Must not import ``flexq.gke``, ``flexq.kuberay``, ``flexq.kube``, ``flexq.http`` or ``flexq.assembly``.
"""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from flexq.api.jsoncopy import clone
from flexq.api.kinds import default_registry
from flexq.api.scheme import ADMIT
from flexq.clock import VirtualClock
from flexq.kueue import registry
from flexq.loop import EventLoop, Rngs, tune_gc
from flexq.runtime import Context, Manager
from flexq.runtime.settings import TwinSettings
from flexq.store import PodLogs, Store

__all__ = ["MinimalKueue"]

EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class MinimalKueue:
    """Kueue alone on a virtual clock."""

    def __init__(
        self,
        start: float = EPOCH,
        seed: int = 0,
        namespaces: Iterable[str] = ("default", "kueue-system"),
        check_readonly: bool = False,
        cycle_seconds: float = 0.0,
    ):
        """``check_readonly``: the store fails loudly when a controller changes a stored object in place.
        ``cycle_seconds``: how long one scheduling cycle takes (``TwinSettings.kueue_cycle_seconds``); 0 here, as
        the declarative scenarios are upstream's tables of one scheduling decision each.
        Tunes the process's garbage collector for a large heap (``flexq.loop.tune_gc``), as upstream's
        performance runner runs ``minimalkueue`` as its own process."""
        tune_gc()
        self.loop = EventLoop(VirtualClock(start))
        rngs = Rngs(seed)
        self.store = Store(
            default_registry(),
            self.loop.clock,
            name="minimal",
            rng=rngs.get("store"),
            namespaces=tuple(namespaces),
            check_readonly=check_readonly,
        )
        self.ctx = Context(
            store=self.store,
            loop=self.loop,
            rngs=rngs,
            logs=PodLogs(None),
            settings=TwinSettings(kueue_cycle_seconds=cycle_seconds),
        )
        self.manager = Manager(self.ctx)
        self.controllers = registry.controllers(self.ctx)
        self.manager.add_all(self.controllers)
        self.manager.start()

    @property
    def cache(self):
        """The shared Kueue cache (with its queue manager)."""
        return self.controllers[0].cache

    def now(self) -> float:
        return self.loop.now()

    def apply(self, source: str | dict | list) -> list[dict]:
        """Create or update objects (multi-document YAML, a dict or a list); status is kept on create."""
        if isinstance(source, str):
            docs = [d for d in yaml.safe_load_all(source) if d]
        elif isinstance(source, dict):
            docs = [source]
        else:
            docs = list(source)
        out = []
        for d in docs:
            md = d.get("metadata") or {}
            cur = self.store.try_get(d["kind"], md["name"], md.get("namespace"))
            if cur is None:
                out.append(clone(self.store.create(d, keep_status=True, admission=ADMIT)))
            else:
                new = dict(d)
                new["metadata"] = {**cur["metadata"], **md}
                out.append(clone(self.store.update(new, admission=ADMIT)))
        return out

    def patch_status(self, kind: str, name: str, namespace: str | None, status: dict) -> dict:
        """Merge ``status`` into an object's status."""
        obj = self.store.get(kind, name, namespace)
        obj.setdefault("status", {}).update(status)
        return clone(self.store.update_status(obj))

    def advance(self, seconds: float) -> int:
        """Run everything due in the next ``seconds``."""
        return self.loop.run_until(self.loop.now() + seconds)

    def settle(self, max_seconds: float = 0.0) -> int:
        """Run what is due now (and up to ``max_seconds`` ahead)."""
        return self.loop.run_until(self.loop.now() + max_seconds)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict:
        return self.store.get(kind, name, namespace)

    def list(self, kind: str, namespace: str | None = None) -> list[dict]:
        return self.store.list(kind, namespace)

    def close(self) -> None:
        self.manager.stop()
