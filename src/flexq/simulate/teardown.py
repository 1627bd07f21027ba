"""Freeing the runs of ``flexq simulate`` once their results are taken: each run's twin discarded (its objects,
history and timers dropped, so reference counting frees it), and a full collection only for one that was not.

Owns ``discard`` and ``free_closed``; ``flexq.simulate.engine`` runs them after each run, ``preflight`` after its
checks.
"""

from __future__ import annotations

import gc
import weakref

from flexq.twin import Twin

__all__ = ["discard", "free_closed", "stopped_clock"]


def free_closed() -> None:
    """Free the twins discarded since the last call (``discard``). A closed twin is garbage in reference cycles
    (its controllers and their manager, the watch callbacks, the loop's timers): with the collector tuned for a
    large heap (``flexq.loop.tune_gc``) a full collection may not come before the next run has built a twin as
    large beside it (the what-if runs after the variants', the runs of ``-j 1`` one after another): Kueue's
    large-scale file held two twins at once, 1.8 GiB at its peak instead of 1 GiB. A discarded twin is freed by
    reference counting; the full collection (0.12 s a tutorial-week run) is left for one that was not."""
    alive = any(ref() is not None for ref in _DISCARDED)
    _DISCARDED.clear()
    if alive:
        gc.collect()


_DISCARDED: list[weakref.ref] = []  # the twins discarded since ``free_closed`` last looked


def stopped_clock() -> float:
    """A finished run's clock (``Sim.discard``): reading it is a bug."""
    raise RuntimeError("the run is over: its twin was discarded")


def discard(twin: Twin) -> None:
    """Close ``twin`` and let its state go (``Twin.discard``); ``free_closed`` collects it if that did not free
    it."""
    _DISCARDED.append(weakref.ref(twin.core))
    twin.discard()
