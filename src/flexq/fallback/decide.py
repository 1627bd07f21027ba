"""The step that makes a pass's proposed moves the forecast approves (``decide_by: forecast``;
``flexq.fallback.forecast`` says how a move is judged).

The candidates go to the judge in Kueue's order (higher priority first, then the earlier queue-order timestamp);
those past ``forecast_max_candidates`` wait for a later pass. Of the approved ones, at most one per flavor they
go to is made per pass (each was judged against the cluster as it is, not after another move to the same
flavor). A refused candidate is not proposed again for ``forecast_recheck_seconds``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from flexq.fallback.context import PassContext

__all__ = ["decide"]

log = logging.getLogger("flexq.fallback")


def decide(ctx: PassContext, dws_flavors: set[str], episodes: Mapping[str, list[float]]) -> None:
    """``episodes``: flavor -> how long its stock-outs seen to end lasted (``waits.StockoutMemory``)."""
    judge = ctx.judge
    if judge is None or not ctx.candidates:
        return
    view = ctx.view
    cands = sorted(ctx.candidates, key=lambda c: (c.w.order, c.w.key, c.kind))
    limit = max(0, ctx.cfg.forecast_max_candidates)
    for c in cands[limit:]:
        ctx.note(c.w, f"a {c.kind} to {c.target} waits for the forecast (at most {limit} judged per pass)")
        ctx.wakeups.append(ctx.now + 1.0)
    flavors = {f for c in cands for f in (c.source, c.target)}
    prices = {f: ctx.costs.price(view, f, dws_flavors) for f in flavors}
    made: set[str] = set()
    stockouts = {f: (b.since, b.code) for f, b in ctx.breakers.items()}
    # a pool that refused to grow: its size then (or the maximum a message named) is its maximum
    limits = {
        view.pool_of(f): x.limit if x.limit is not None else x.nodes
        for f, x in ctx.fulls.items()
        if view.pool_of(f) and (x.limit is not None or x.nodes > 0)
    }
    # the arrivals are followed over the moved jobs' whole expected run (their classes' runs seen), not only the
    # configured look-ahead: a move holds its room that long
    history = ctx.history
    follow = max((history.expected_run(c.w.priority) for c in cands[:limit]), default=0.0) if history else 0.0
    try:
        verdicts = judge.judge(view, cands[:limit], prices, stockouts, episodes, limits, follow)
    except Exception as exc:  # a forecast that fails makes no move: the jobs stay where Kueue put them
        log.exception("the forecast failed; no move this pass")
        for c in cands[:limit]:
            ctx.note(c.w, f"a {c.kind} to {c.target}: the forecast failed ({type(exc).__name__}): not made")
        ctx.wakeups.append(ctx.now + ctx.cfg.forecast_recheck_seconds)
        ctx.candidates = []
        return
    for c, v in zip(cands, verdicts, strict=True):
        ctx.note(c.w, f"a {c.kind} to {c.target}: {v.describe()}")
        log.debug("%s t=%.0f p=%d %s", c.name, ctx.now, c.w.priority, v.describe())
        if v.make and c.target not in made and c.run is not None:
            made.add(c.target)
            judge.refused.pop(c.name, None)
            c.run()
            # the figures behind it, on the job (kubectl describe shows them beside the move's own Events)
            ctx.writer.emit(c.job, "Normal", "FallbackForecast", f"a {c.kind} to {c.target}: {v.describe()}")
        elif not v.make:
            judge.refused[c.name] = (ctx.now, v)
            ctx.act("refuse", c.w.key, f"the forecast refused a {c.kind} to {c.target}: {v.why}")
            ctx.wakeups.append(ctx.now + ctx.cfg.forecast_recheck_seconds)
    ctx.candidates = []
