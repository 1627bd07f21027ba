"""``flexq fallback``'s process loop against a cluster: leader election, one policy pass when it is due, back-off
after failures, and the next wake-up.

Owns: ``Runner`` (the loop: with leader election, a round of ``LeaseElector.try_acquire_or_renew`` at least every
retry period, and only the leader passes; a pass every ``interval`` seconds — sooner when a step of the last pass
said something comes due, ``FallbackPolicy.next_wakeup`` — and after API errors ``interval · 2^failures`` up to
5 minutes; the leader that could not renew its Lease within the renew deadline stops, as controller-runtime's
manager does on "leader election lost"; the Lease is released on a clean stop; ``progress_at`` and ``stalled``: whether
the loop still makes rounds, for a liveness probe). What it did reaches its caller as
lines (``Report``): the CLI (``flexq.cli.fallback``) only parses its arguments, connects and prints them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flexq.clock import format_time
from flexq.errors import ApiError
from flexq.fallback.leader import LeaseElector
from flexq.fallback.metrics import FallbackMetrics
from flexq.fallback.policy import FallbackPolicy

__all__ = ["Runner", "Report", "FAILURE_BACKOFF_MAX"]

FAILURE_BACKOFF_MAX = 300.0  # seconds: the longest wait between passes after API errors


@dataclass
class Report:
    """Where the loop's lines go: ``say(line)`` for what it does, ``warn(line)`` for errors (no markup)."""

    say: Callable[[str], None]
    warn: Callable[[str], None]


class Runner:
    """The loop (see the module docstring)."""

    def __init__(
        self,
        policy: FallbackPolicy,
        clock: Any,
        report: Report,
        *,
        interval: float,
        once: bool = False,
        dry_run: bool = False,
        elector: LeaseElector | None = None,
        metrics: FallbackMetrics | None = None,
        explain: str | None = None,
    ) -> None:
        self.policy, self.clock, self.report = policy, clock, report
        self.explain = explain  # a dry pass's explanation only of this job (None: of every job)
        self.interval, self.once, self.dry_run = interval, once, dry_run
        self.elector, self.metrics = elector, metrics
        self.failures = 0  # passes in a row that failed on an API error
        self.progress_at: float | None = (
            None  # when the loop last finished a round (an election round or a pass)
        )

    def longest_round_gap(self) -> float:
        """The longest the loop waits between two rounds when it works: an election round every retry period,
        else the next pass (at most ``FAILURE_BACKOFF_MAX`` after failures)."""
        if self.elector is not None:
            return self.elector.retry_period
        return max(self.interval, FAILURE_BACKOFF_MAX if self.failures else self.interval)

    def stalled(self, now: float, after: float) -> str | None:
        """Why the loop is not progressing (no round for more than ``after`` seconds), or None: what a liveness
        probe asks (``flexq fallback --metrics-port``'s ``/healthz``)."""
        if self.progress_at is None:
            return None  # not started yet: the probe's initial delay covers the start
        idle = now - self.progress_at
        if idle > after:
            return (
                f"no round of the loop for {idle:.0f} s (a round is due at least every "
                f"{self.longest_round_gap():g} s; a pass or an election round is stuck)"
            )
        return None

    def run(self, stop: threading.Event) -> int:
        """Until ``stop`` is set (or one pass, ``once``): 0 on a clean stop, 1 when a ``once`` pass failed or this
        replica lost the leader Lease."""
        next_pass, led = 0.0, False
        elector = self.elector
        try:
            while not stop.is_set():
                now = self.clock.now()
                if elector is not None:
                    held = elector.try_acquire_or_renew()
                    if held and not led:
                        self.report.say(f"{format_time(now)}  leading: this replica acts")
                        next_pass = 0.0
                    if led and not elector.leading:
                        self.report.warn(
                            f"lost the leader Lease (not renewed for {elector.renew_deadline:g}s): stopping"
                        )
                        return 1
                    led = led or held
                    if self.metrics is not None:
                        self.metrics.leader = int(elector.leading)
                    if not elector.leading:
                        if self.once:
                            self.report.say("not the leader: another replica acts")
                            break
                        self.progress_at = self.clock.now()  # a standby's round: it tried for the Lease
                        stop.wait(elector.retry_period)
                        continue
                if now >= next_pass:
                    ok = self._pass()
                    if self.once:
                        return 0 if ok else 1
                    next_pass = self.clock.now() + self._delay()
                self.progress_at = self.clock.now()
                tick = next_pass - self.clock.now()
                if elector is not None:
                    tick = min(tick, elector.retry_period)
                stop.wait(max(0.0, tick))
        finally:
            if elector is not None:
                elector.release()
        return 0

    def _pass(self) -> bool:
        """One policy pass, its actions reported (and, dry and once, what it saw); False on an API error."""
        try:
            actions = self.policy.run_once()
        except ApiError as exc:
            self.failures += 1
            self.report.warn(str(exc))
            return False
        if self.metrics is not None:
            self.metrics.observe(self.policy, actions)
        self.failures = 0
        prefix = "would " if self.dry_run else ""
        for a in actions:
            self.report.say(f"{format_time(self.clock.now())}  {prefix}{a.verb:<12} {a.target}  {a.message}")
        if self.dry_run and self.once:
            for line in self.policy.explain(self.explain):
                self.report.say(line)
        return True

    def _delay(self) -> float:
        """Seconds to the next pass: the interval, or sooner when something the last pass saw comes due; after
        failures the interval doubles per failure (at most 16x, at most ``FAILURE_BACKOFF_MAX``)."""
        now = self.clock.now()
        wake = self.policy.next_wakeup(now)
        delay = self.interval if wake is None else min(self.interval, max(0.0, wake - now))
        if self.failures:
            return min(delay * 2 ** min(self.failures, 4), FAILURE_BACKOFF_MAX)
        return delay
