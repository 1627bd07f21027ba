"""What the ETA remembers of a cluster it watches: the stock-out episodes it saw end.

Owns ``WatchedStockouts``. The API server keeps an hour of Events, and the cluster autoscaler's refusals are how a
stock-out shows, so an episode that ended yesterday is gone from the state: the fitted model would then know the
age of the stock-out going on but not how long the earlier ones lasted, and draw its end from "as long again as it
has lasted". Whoever refreshes the ETA (the background service, ``flexq eta`` per cluster, the calibration bench
per scenario) keeps this memory: ``watch`` takes each forecast's ongoing stock-outs (``Forecast.stockouts``) and
the state they came from; a pool that was stocked out at one watch and is not at the next ended when it had
capacity again (``flexq.forecast.fit.capacity_back``: its first node made since it was last seen out); with no
such sign — no job was left asking for its nodes, or one started on nodes another left — it is kept as lasting
at least until it was last seen (``"censored": true``), not as ended. ``episodes`` go into the next state's
``ClusterState.stockout_history``, and the fit counts those the Events no longer show; ``first_look`` goes into its
``stockout_watched_since`` (the time over which the stock-outs that began are counted: their onset rate). Plain JSON
(``to_dict`` / ``from_dict``): the calibration's file keeps it.

Pure: no clock, no store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flexq.forecast.fit import capacity_back
from flexq.forecast.state import ClusterState

__all__ = ["WatchedStockouts", "MAX_EPISODES"]

MAX_EPISODES = 200  # the newest kept: the memory is bounded whatever runs it


@dataclass
class WatchedStockouts:
    """See the module docstring."""

    ongoing: dict[str, dict[str, float]] = field(default_factory=dict)  # pool -> {"since", "seen"}
    # {"pool", "since", "end"[, "censored": True]}, oldest first
    episodes: list[dict[str, Any]] = field(default_factory=list)
    first_look: float | None = None  # when it began to watch: the stock-outs that began since are all seen

    def watch(self, state: ClusterState, stockouts: Sequence[Mapping[str, Any]]) -> int:
        """One look at the cluster: ``stockouts`` are the ongoing ones the forecast of ``state`` found. Returns
        how many episodes ended since the last look (and were recorded)."""
        now = state.now
        if self.first_look is None or now < self.first_look:
            self.first_look = now
        current: dict[str, float] = {}
        for s in stockouts:
            try:
                current[str(s["pool"])] = float(s["since"])
            except (KeyError, TypeError, ValueError):
                continue
        ended = 0
        for pool, gone in list(self.ongoing.items()):
            if pool in current:
                continue
            del self.ongoing[pool]
            end = capacity_back(state, pool, gone["seen"])
            if end is not None and end > gone["since"]:
                self.episodes.append({"pool": pool, "since": gone["since"], "end": end})
                ended += 1
            elif gone["seen"] > gone["since"]:  # no demand left to show its end: it lasted at least so long
                self.episodes.append(
                    {"pool": pool, "since": gone["since"], "end": gone["seen"], "censored": True}
                )
        for pool, since in current.items():
            o = self.ongoing.get(pool)
            if o is None:
                # the episode kept as censored goes on when this one began before it was last seen, or when no
                # node of the pool was made since (as the fit dates a stock-out: not before the pool last grew)
                for ep in [
                    e
                    for e in self.episodes
                    if e["pool"] == pool
                    and e.get("censored")
                    and (e["end"] >= since or capacity_back(state, pool, e["end"]) is None)
                ]:
                    self.episodes.remove(ep)
                    since = min(since, ep["since"])
                self.ongoing[pool] = {"since": since, "seen": now}
            else:
                o["since"], o["seen"] = min(o["since"], since), now
        del self.episodes[:-MAX_EPISODES]
        return ended

    def history(self) -> list[dict[str, Any]]:
        """What goes into a state's ``stockout_history``: the episodes, and the ones going on at the last look as
        lasting at least until then (the fit takes one of them for the stock-out it sees going on, however much
        later the Events and the jobs' record date it)."""
        going = [
            {"pool": pool, "since": o["since"], "end": o["seen"], "censored": True}
            for pool, o in sorted(self.ongoing.items())
            if o["seen"] > o["since"]
        ]
        return [*(dict(e) for e in self.episodes), *going]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ongoing": {k: dict(v) for k, v in self.ongoing.items()},
            "episodes": [dict(e) for e in self.episodes],
            "firstLook": self.first_look,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> WatchedStockouts:
        out = cls()
        try:
            first = float((d or {}).get("firstLook"))  # type: ignore[arg-type]
            out.first_look = first if math.isfinite(first) else None
        except (TypeError, ValueError):
            out.first_look = None
        for pool, o in ((d or {}).get("ongoing") or {}).items():
            try:
                out.ongoing[str(pool)] = {"since": float(o["since"]), "seen": float(o["seen"])}
            except (KeyError, TypeError, ValueError):
                continue
        for e in ((d or {}).get("episodes") or [])[-MAX_EPISODES:]:
            try:
                ep = {"pool": str(e["pool"]), "since": float(e["since"]), "end": float(e["end"])}
                if e.get("censored") is True:
                    ep["censored"] = True
                out.episodes.append(ep)
            except (KeyError, TypeError, ValueError):
                continue
        return out
