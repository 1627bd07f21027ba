"""What a provisioning-checked flavor (DWS) is expected to cost in waiting, from the waits the policy has seen.

Owns: ``WaitMemory`` (per flavor: the provisioning waits seen to finish lately, the jobs waiting there now and
for how long, and the waits that ended without a grant — the job moved back or was deleted: each says the queue
was at least that long; the last 20 of each), ``expected_wait`` (over ``flexq.stats.km_median``, the one Kaplan-Meier implementation, shared with the ETA). The rent-or-buy rule of the
moves and steering (``PassContext.worth_moving``) compares a job's loss with this expectation.

Owns also ``StockoutMemory``: how long each flavor's stock-outs lasted (its breaker open until a new node of it was
created; the last 20), and from that what is left of the one under way (``left``): the median of what the past
stock-outs that lasted longer than this one has so far had left at its age. None when there is no such history
(no stock-out of the flavor has ended yet, or this one is already the longest seen): then nothing says it ends
soon. A move bets a job's wait on the next flavor's queue; the rent-or-buy rule alone makes that bet after the job
has lost the next flavor's wait, which for a flavor whose stock-outs have always ended sooner than the next
flavor provisions is a bet lost every time.
"""

from __future__ import annotations

from flexq.fallback.view import ClusterView
from flexq.stats import km_median

__all__ = ["WaitMemory", "StockoutMemory", "expected_wait", "KEEP"]

KEEP = 20  # waits remembered per flavor, of each kind


def expected_wait(done: list[float], waiting: list[float], prior: float) -> float:
    """What a provisioning-checked flavor is expected to cost in waiting: the Kaplan-Meier median of its recent
    finished waits and of the waits still under way; while that median is beyond what has been seen, the longest
    wait seen (at least the prior when none has finished yet); nothing seen at all: the prior. A queue whose
    requests all sit waiting is not taken for a short one because none has finished."""
    if not done and not waiting:
        return prior
    median = km_median(done, waiting)
    if median is not None:
        return median
    longest = max([*done, *waiting])
    return longest if done else max(prior, longest)


class WaitMemory:
    """The provisioning waits of each flavor, carried from pass to pass (see the module docstring)."""

    def __init__(self) -> None:
        self.done: dict[str, list[float]] = {}  # flavor -> recent provisioning waits seen to finish
        self.waiting: dict[str, dict[str, float]] = {}  # flavor -> job -> how long it had waited (last pass)
        self.unfinished: dict[str, list[float]] = {}  # flavor -> waits that ended without a grant

    def update(self, view: ClusterView, flavors: set[str], prior: float) -> dict[str, float]:
        """Take in what ``view`` shows; the expected wait of each of ``flavors`` (and of every flavor a wait was
        ever seen on)."""
        for flavor, seen in view.provisioning_waits().items():
            known = self.done.setdefault(flavor, [])
            for x in seen:
                if x not in known:
                    known.append(x)
            del known[:-KEEP]
        waiting = view.provisioning_waiting()
        granted = {w.ident for w in view.workloads if w.admitted}
        for f, jobs in self.waiting.items():
            ended = [t for j, t in jobs.items() if j not in waiting.get(f, {}) and j not in granted]
            if ended:
                kept = self.unfinished.setdefault(f, [])
                kept += ended
                del kept[:-KEEP]
        self.waiting = waiting
        return {
            f: expected_wait(
                self.done.get(f, []), [*waiting.get(f, {}).values(), *self.unfinished.get(f, [])], prior
            )
            for f in flavors | set(self.done)
        }


class StockoutMemory:
    """How long each flavor's stock-outs lasted, carried from pass to pass (see the module docstring)."""

    def __init__(self) -> None:
        self.ended: dict[str, list[float]] = {}  # flavor -> durations of its recent stock-outs, oldest first

    def record(self, flavor: str, seconds: float) -> None:
        kept = self.ended.setdefault(flavor, [])
        kept.append(max(0.0, seconds))
        del kept[:-KEEP]

    def left(self, flavor: str, age: float) -> float | None:
        """What is left of a stock-out of ``flavor`` that has lasted ``age`` seconds so far, by the ones that
        ended before (None: no evidence it ends soon)."""
        longer = sorted(d - age for d in self.ended.get(flavor, ()) if d > age)
        if not longer:
            return None
        return longer[(len(longer) - 1) // 2]
