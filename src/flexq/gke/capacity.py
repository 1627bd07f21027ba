"""The capacity model: what the cloud can give, over time, according to a ``CapacityProfile``.

Owns: resolving a profile's rules into the effective ``Terms`` for one (location, machine type, provisioning
model); availability at a time (base limit, stock-out and surge windows); whether a scale-up of N nodes can be
obtained now and, if not, when to look again; seeded draws of provisioning time, DWS queue wait and spot
preemption; and the project's specific reservations (``CapacityModel.can_obtain_reserved``; which pool consumes which: ``flexq.api.gke_models.specific_reservation``): a node
pool that consumes a declared reservation takes its nodes from it — never stocked out (no rule or window of the
zone's capacity touches them), at most the reservation's count at once across the pools that consume it, and a
scale-up beyond that refused with GKE's "specific reservation ... is insufficient" error. Everything is a pure function of the profile, ``now`` (epoch seconds) and a ``random.Random`` the
caller seeds; nothing here reads a clock or keeps state.

Must not import anything from flexq except ``flexq.api.capacity_profile``.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from flexq.api.capacity_profile import CapacityProfile, Delay, parse_duration, parse_time
from flexq.stats import lognormal_beyond, sample_beyond

__all__ = [
    "reservation_insufficient_message",
    "Terms",
    "Obtain",
    "CapacityModel",
    "sample_delay",
    "draw_left",
    "stockout_message",
    "DEFAULT_PROVISION_SECONDS",
    "DEFAULT_QUEUE_WAIT_SECONDS",
]

DEFAULT_PROVISION_SECONDS = 5.0
DEFAULT_QUEUE_WAIT_SECONDS = 20.0
_FIELDS = ("available", "windows", "provision_time", "queue_wait", "preemption", "stockout_message")


def stockout_message(location: str, project: str = "") -> str:
    """GCE's wording when a zone has no capacity for the request (ZONE_RESOURCE_POOL_EXHAUSTED)."""
    where = f"projects/{project}/zones/{location}" if project else location
    return (
        f"ZONE_RESOURCE_POOL_EXHAUSTED: The zone '{where}' does not have enough resources available to "
        "fulfill the request. Try a different zone, or try again later."
    )


def reservation_insufficient_message(
    name: str, pool: str, zone: str, machine_type: str, want: int, short: int
) -> str:
    """GKE's wording when a specific reservation cannot hold the nodes asked for (as ``gcloud container node-pools
    create --reservation-affinity=specific`` reports it: code 429, "Reservation does not have enough resources for
    the request: ..."; GoogleCloudPlatform/gsutil#1000). The twin gives the same words to a scale-up it refuses."""
    return (
        f'Reservation does not have enough resources for the request: specific reservation "{name}" is '
        f'insufficient for node pool "{pool}" at zone "{zone}": required {want} and short of {short} VM count '
        f"of machine type {machine_type}."
    )


@dataclass(frozen=True)
class Terms:
    """Effective terms for one (location, machine type, provisioning model), times in epoch seconds."""

    available: int | None  # None = unlimited
    windows: tuple[
        tuple[float, float | None, int | None], ...
    ]  # (start, end or open, available or unlimited)
    provision_time: Delay | None
    queue_wait: Delay | None
    preemption: Delay | None
    stockout_message: str | None

    def available_at(self, now: float) -> int | None:
        """Nodes that may exist at ``now``: the last window containing ``now`` wins, else the base limit."""
        limit = self.available
        for start, end, avail in self.windows:
            if start <= now and (end is None or now < end):
                limit = avail
        return limit

    def next_change(self, now: float) -> float | None:
        """The next window boundary strictly after ``now`` (when availability may change), or None."""
        points = [t for start, end, _ in self.windows for t in (start, end) if t is not None and t > now]
        return min(points) if points else None

    def next_time_with_room(self, now: float, in_use: int, want: int) -> float | None:
        """The earliest time >= now at which ``in_use + want`` nodes fit, assuming nothing else changes."""
        t: float | None = now
        while t is not None:
            limit = self.available_at(t)
            if limit is None or in_use + want <= limit:
                return t
            t = self.next_change(t)
        return None


@dataclass(frozen=True)
class Obtain:
    """The answer to "can N more nodes be created now?"."""

    ok: bool
    message: str = ""  # why not (GCE-shaped), empty when ok
    retry_at: float | None = None  # when availability may change; None = it never will
    reservation: bool = False  # refused by a specific reservation's size (not a stock-out)


def _as_limit(v: int | str | None) -> int | None:
    return None if v is None or v == "unlimited" else int(v)


def _location_matches(pattern: str, location: str) -> bool:
    return fnmatchcase(location, pattern) or location.startswith(pattern + "-")


class CapacityModel:
    """A parsed profile plus the time its relative times count from. Immutable; all methods are pure."""

    def __init__(self, profile: CapacityProfile | dict[str, Any] | None, origin: float) -> None:
        if profile is None:
            profile = CapacityProfile()
        elif isinstance(profile, dict):
            profile = CapacityProfile.model_validate(profile)
        self.profile = profile
        spec = profile.spec
        self.origin = parse_time(spec.origin, 0.0) if spec.origin is not None else origin
        self.seed = spec.seed
        self._times: dict[str | int | float, float] = {}  # a time point of the profile -> epoch seconds

    def _time(self, value: str | int | float) -> float:
        """``parse_time`` of one of the profile's time points, parsed once (the profile does not change; every
        capacity decision reads its rules' spans and windows)."""
        t = self._times.get(value)
        if t is None:
            t = self._times[value] = parse_time(value, self.origin)
        return t

    # -- resolution ------------------------------------------------------------------------------------------
    def terms(self, location: str, machine_type: str, model: str, at: float | None = None) -> Terms:
        """Per field, the first matching rule that sets it, then ``spec.defaults``, then built-in defaults. A rule
        with ``match.during`` applies only to a request made ``at`` a time inside one of its spans."""
        found: dict[str, Any] = {}
        for rule in self.profile.spec.rules:
            m = rule.match
            if m.during is not None and (at is None or not any(self._inside(s, at) for s in m.during)):
                continue
            if m.locations is not None and not any(_location_matches(p, location) for p in m.locations):
                continue
            if m.machine_types is not None and not any(fnmatchcase(machine_type, p) for p in m.machine_types):
                continue
            if m.provisioning_models is not None and model not in m.provisioning_models:
                continue
            for f in _FIELDS:
                if f not in found and getattr(rule, f) is not None:
                    found[f] = getattr(rule, f)
        defaults = self.profile.spec.defaults
        for f in _FIELDS:
            if f not in found and getattr(defaults, f) is not None:
                found[f] = getattr(defaults, f)
        windows = tuple(
            (
                self._time(w.start),
                None if w.end is None else self._time(w.end),
                _as_limit(w.available),
            )
            for w in found.get("windows") or ()
        )
        return Terms(
            available=_as_limit(found.get("available")),
            windows=windows,
            provision_time=found.get("provision_time"),
            queue_wait=found.get("queue_wait"),
            preemption=found.get("preemption"),
            stockout_message=found.get("stockout_message"),
        )

    def _inside(self, span: Any, at: float) -> bool:
        start = self._time(span.start)
        return start <= at and (span.end is None or at < self._time(span.end))

    # -- decisions -------------------------------------------------------------------------------------------
    def can_obtain(
        self,
        location: str,
        machine_type: str,
        model: str,
        now: float,
        *,
        in_use: int,
        want: int,
        project: str = "",
    ) -> Obtain:
        """Whether ``want`` more nodes (all at once: a multi-host slice is atomic) can be created at ``now``
        when ``in_use`` nodes of this kind already exist or are being created in this location."""
        t = self.terms(location, machine_type, model, now)
        limit = t.available_at(now)
        if limit is None or in_use + want <= limit:
            return Obtain(ok=True)
        message = stockout_message(location, project)
        if t.stockout_message and re.fullmatch(r"[A-Z_]+", t.stockout_message):  # a GCE error code
            message = message.replace("ZONE_RESOURCE_POOL_EXHAUSTED", t.stockout_message, 1)
        elif t.stockout_message:
            message = t.stockout_message
        return Obtain(ok=False, message=message, retry_at=t.next_time_with_room(now, in_use, want))

    def reservation(self, name: str) -> tuple[str, str, int] | None:
        """A declared specific reservation: (zone, machine type, count), or None when the profile has none so named
        (a pool consuming an undeclared reservation takes the zone's on-demand capacity, as it did before
        reservations were modelled)."""
        r = (self.profile.spec.reservations or {}).get(name)
        return None if r is None else (r.zone, r.machine_type, r.count)

    def can_obtain_reserved(
        self,
        name: str,
        location: str,
        machine_type: str,
        *,
        in_use: int,
        want: int,
        pool: str = "",
    ) -> Obtain:
        """Whether ``want`` more nodes fit reservation ``name`` (declared) when ``in_use`` nodes of the pools that
        consume it exist or are being made. Never a stock-out: only the reservation's size, its zone and its machine
        type refuse. ``retry_at`` is None: room comes back only when a consuming node goes."""
        r = self.reservation(name)
        assert r is not None, name
        zone, mt, count = r
        if zone != location or mt != machine_type:
            short = want
        else:
            short = max(0, in_use + want - count)
        if short == 0:
            return Obtain(ok=True)
        return Obtain(
            ok=False,
            message=reservation_insufficient_message(name, pool, location, machine_type, want, short),
            reservation=True,
        )

    def provision_seconds(
        self, location: str, machine_type: str, model: str, rng: random.Random, at: float | None = None
    ) -> float:
        """Seconds from the scale-up decision (made ``at``) to the node being Ready (a seeded draw)."""
        delay = self.terms(location, machine_type, model, at).provision_time
        if delay is None:
            return DEFAULT_PROVISION_SECONDS
        at = sample_delay(delay, 0.0, self.origin, rng)
        return DEFAULT_PROVISION_SECONDS if at is None else at

    def queue_grant_time(
        self,
        location: str,
        machine_type: str,
        requested_at: float,
        rng: random.Random,
        *,
        in_use: int = 0,
        want: int = 1,
        model: str = "queued",
        waited: float = 0.0,
    ) -> float | None:
        """When DWS grants a queued request made at ``requested_at``: the drawn wait, then the first moment
        the whole request fits the availability limit. None when it never will (the request will fail).
        ``waited``: the request continues one queued that long already (a forecast's): an ``empirical`` or
        ``lognormal`` wait is drawn beyond that age, the rest of it counted from ``requested_at``."""
        t = self.terms(location, machine_type, model, requested_at)
        if t.queue_wait is None:
            at: float | None = requested_at + DEFAULT_QUEUE_WAIT_SECONDS
        elif waited > 0 and not t.queue_wait.never and t.queue_wait.at is None:
            at = requested_at + draw_left(t.queue_wait, waited, rng)
        else:
            at = sample_delay(t.queue_wait, requested_at, self.origin, rng)
        if at is None:
            return None
        return t.next_time_with_room(at, in_use, want)

    def preemption_time(
        self, location: str, machine_type: str, model: str, ready_at: float, rng: random.Random
    ) -> float | None:
        """When a node that became Ready at ``ready_at`` is preempted, or None (never)."""
        delay = self.terms(location, machine_type, model, ready_at).preemption
        if delay is None:
            return None
        return sample_delay(delay, ready_at, self.origin, rng)

    def operation_seconds(self, op: str) -> float:
        """Duration of a GKE long-running operation: createCluster, deleteCluster, createNodePool, ..."""
        ops = self.profile.spec.operations
        return parse_duration(getattr(ops, op))


def _draw(delay: Delay, rng: random.Random) -> float:
    if delay.fixed is not None:
        return parse_duration(delay.fixed)
    if delay.uniform is not None:
        lo, hi = parse_duration(delay.uniform.min), parse_duration(delay.uniform.max)
        return rng.uniform(min(lo, hi), max(lo, hi))
    if delay.exponential is not None:
        mean = parse_duration(delay.exponential.mean)
        return rng.expovariate(1.0 / mean) if mean > 0 else 0.0
    if delay.normal is not None:
        return max(0.0, rng.gauss(parse_duration(delay.normal.mean), parse_duration(delay.normal.stddev)))
    if delay.empirical is not None:
        return _draw_beyond(delay, 0.0, rng)
    assert delay.lognormal is not None
    median = parse_duration(delay.lognormal.median)
    return rng.lognormvariate(math.log(median), delay.lognormal.sigma) if median > 0 else 0.0


def _draw_beyond(delay: Delay, waited: float, rng: random.Random) -> float:
    """What is left of an ``empirical`` or ``lognormal`` delay known to exceed ``waited`` (its law truncated
    there), clipped to its ``max``."""
    if delay.empirical is not None:
        e = delay.empirical
        seen = [parse_duration(x) for x in e.seen]
        censored = [parse_duration(x) for x in e.censored]
        total = sample_beyond(seen, censored, waited, rng, parse_duration(e.tail_mean), e.min_at_risk)
    else:
        assert delay.lognormal is not None
        median, sigma = parse_duration(delay.lognormal.median), delay.lognormal.sigma
        if median <= 0 or sigma <= 0:
            total = max(waited, median)
        else:
            total = lognormal_beyond(math.log(median), sigma, waited, rng)
    if delay.max is not None:
        total = min(total, max(waited, parse_duration(delay.max)))
    return max(0.0, total - waited)


LEFT_TRIES = 32  # draws of a law that keeps no shape beyond an age, for one that outlasts it


def draw_left(delay: Delay, waited: float, rng: random.Random) -> float:
    """What is left of a delay (not ``at`` or ``never``) known to exceed ``waited``: its law truncated there,
    clipped to its ``min`` and ``max``. An ``empirical`` or ``lognormal`` law is drawn beyond the age by its
    inverse, an ``exponential`` one afresh (it keeps no memory); the others by drawing again (up to
    ``LEFT_TRIES`` times) until a draw outlasts the age; none does (a fixed 20 s asked of a request 25 s old):
    nothing is left."""
    lo = parse_duration(delay.min) if delay.min is not None else 0.0
    hi = parse_duration(delay.max) if delay.max is not None else math.inf
    if delay.empirical is not None or delay.lognormal is not None:
        return max(_draw_beyond(delay, waited, rng), lo - waited)
    if delay.exponential is not None:
        return max(0.0, min(max(waited + _draw(delay, rng), lo), hi) - waited)
    for _ in range(LEFT_TRIES if waited > 0 else 1):
        total = min(max(_draw(delay, rng), lo), hi)
        if total > waited:
            return total - waited
    return 0.0


def sample_delay(delay: Delay, start: float, origin: float, rng: random.Random) -> float | None:
    """The absolute time a delay starting at ``start`` ends, or None for ``never`` / an exhausted schedule.

    For ``at``, the first scheduled time at or after ``start``; otherwise ``start`` + a draw clipped to
    [min, max]. Exactly one value is drawn from ``rng`` for random kinds, so runs stay reproducible.
    """
    if delay.never:
        return None
    if delay.at is not None:
        times = sorted(parse_time(a, origin) for a in delay.at)
        return next((t for t in times if t >= start), None)
    seconds = _draw(delay, rng)
    if delay.min is not None:
        seconds = max(seconds, parse_duration(delay.min))
    if delay.max is not None:
        seconds = min(seconds, parse_duration(delay.max))
    return start + seconds
