"""The fallback's Prometheus metrics (on the twin's ``/metrics``, or ``flexq fallback --metrics-port``):

- ``flexq_fallback_actions_total{action}``: what it did — ``move``, ``return`` (hedge-backs), ``rescue``, ``steer``,
  ``trip``, ``recover``, ``probe``, ``probe-failed``, ``full``, ``room``, ... (the ``Action`` verbs);
- ``flexq_fallback_breaker_open{flavor}``: 1 while a stocked-out flavor's backoff runs, 0 once it may be probed;
- ``flexq_fallback_breaker_failures{flavor}``: failed probes of a stocked-out flavor;
- ``flexq_fallback_flavor_full{flavor}``: 1 while a flavor's node pool is at its maximum size;
- ``flexq_fallback_passes_total`` and ``flexq_fallback_leader`` (1 in the replica that acts).

A flavor's gauges are dropped when its breaker closes or it has room again (no series left behind).
Imports ``prometheus_client`` only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

__all__ = ["FallbackMetrics"]


class FallbackMetrics:
    """A collector over the policy's state and a tally of its actions."""

    def __init__(self, registry: Any = None) -> None:
        self.actions: Counter[str] = Counter()
        self.passes = 0
        self.leader = 1
        self.breakers: dict[str, tuple[int, int]] = {}  # flavor -> (open, failures)
        self.fulls: set[str] = set()
        if registry is not None:
            registry.register(self)

    def observe(self, policy: Any, actions: list[Any]) -> None:
        self.passes += 1
        for a in actions:
            self.actions[a.verb] += 1
        now = policy.api.now()
        self.breakers = {f: (int(b.open(now)), b.failures) for f, b in policy.breakers.items()}
        self.fulls = {f for f, x in policy.fulls.items() if x.full}

    def collect(self) -> Iterator[Any]:
        acts = CounterMetricFamily(
            "flexq_fallback_actions", "What flexq's fallback did, by action.", labels=["action"]
        )
        for verb, n in sorted(self.actions.items()):
            acts.add_metric([verb], n)
        yield acts
        passes = CounterMetricFamily("flexq_fallback_passes", "Passes of flexq's fallback over the cluster.")
        passes.add_metric([], self.passes)
        yield passes
        leader = GaugeMetricFamily(
            "flexq_fallback_leader", "1 when this replica holds the leader Lease and acts."
        )
        leader.add_metric([], self.leader)
        yield leader
        opened = GaugeMetricFamily(
            "flexq_fallback_breaker_open", "1 while a stocked-out flavor's backoff runs.", labels=["flavor"]
        )
        fails = GaugeMetricFamily(
            "flexq_fallback_breaker_failures", "Failed probes of a stocked-out flavor.", labels=["flavor"]
        )
        for f, (o, n) in sorted(self.breakers.items()):
            opened.add_metric([f], o)
            fails.add_metric([f], n)
        yield opened
        yield fails
        full = GaugeMetricFamily(
            "flexq_fallback_flavor_full",
            "1 while a flavor's node pool is at its maximum size.",
            labels=["flavor"],
        )
        for f in sorted(self.fulls):
            full.add_metric([f], 1)
        yield full

    def describe(self) -> list[Any]:
        return []
