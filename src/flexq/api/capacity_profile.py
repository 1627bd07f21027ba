"""Twin-only knobs in the API group ``twin.flexq.dev/v1alpha1``: the capacity profile.

Owns: the pydantic models of ``CapacityProfile`` (what the cloud can give, when, how fast, for how long),
the duration and time grammar its fields use (``90``, ``"90s"``, ``"30m"``, ``"2h"``, ``"3d"``, ``"1h30m"``,
or an RFC 3339 timestamp where a point in time is meant), and the built-in profiles. Validation only; the
arithmetic over a profile lives in ``flexq.gke.capacity``. Documented with examples in
``docs/capacity-profile.md``.

A profile is an ordered list of rules, and the project's specific reservations (``reservations: {NAME: {zone,
machineType, count}}``: capacity that never stocks out, taken by the node pools that consume it). A rule matches a (location, machine type, provisioning model) triple;
for each field (``available``, ``windows``, ``provisionTime``, ``queueWait``, ``preemption``) the first
matching rule that sets it wins, then ``spec.defaults``, then the built-in default. Example::

    apiVersion: twin.flexq.dev/v1alpha1
    kind: CapacityProfile
    metadata: {name: tutorial}
    spec:
      seed: 7
      rules:
      - match: {locations: [us-east5-b], machineTypes: [ct6e-*], provisioningModels: [on-demand]}
        available: 4                                  # one 4x4 slice of v6e on demand ...
        windows: [{start: 1h, end: 5h, available: 0}] # ... except during a stock-out from 1h to 5h
      - match: {provisioningModels: [queued]}
        queueWait: {exponential: {mean: 6h}, max: 3d} # DWS queue: seeded draw, capped at 3 days

Must not import anything from flexq outside ``flexq.api``.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from flexq.api.registry import KindInfo, PrinterColumn

__all__ = [
    "API_VERSION",
    "KIND",
    "TwinModel",
    "Duration",
    "TimePoint",
    "parse_duration",
    "parse_time",
    "Match",
    "Span",
    "Window",
    "Uniform",
    "Exponential",
    "Normal",
    "LogNormal",
    "Delay",
    "CapacityRule",
    "CapacityDefaults",
    "OperationTimes",
    "Reservation",
    "CapacityProfileSpec",
    "CapacityProfile",
    "PROFILE_MODELS",
    "live_default_profile",
    "tutorial_profile",
    "harsh_profile",
]

API_VERSION: Final = "twin.flexq.dev/v1alpha1"
KIND: Final = "CapacityProfile"
# "queued" = flex-start with queued provisioning (DWS ProvisioningRequests); "flex-start" = flex-start VMs
# created by the ordinary autoscaler.
PROFILE_MODELS = ("on-demand", "spot", "flex-start", "queued")
ProfileModel = Literal["on-demand", "spot", "flex-start", "queued"]


class TwinModel(BaseModel):
    """Base of twin.flexq.dev shapes: camelCase, unknown fields refused, serialized by alias."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", serialize_by_alias=True
    )


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(w|d|h|m|s))+$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(w|d|h|m|s)")


def parse_duration(value: str | int | float) -> float:
    """Seconds in a duration: a number of seconds, or ``"90s"``, ``"30m"``, ``"2h"``, ``"3d"``, ``"1w"``,
    ``"1h30m"``. Raises ValueError otherwise (negative values included)."""
    if isinstance(value, bool):
        raise ValueError("a duration must be a number of seconds or a string like '90s', '2h' or '3d'")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"a duration must be a finite number of seconds, got {value}")
        if value < 0:
            raise ValueError(f"a duration must not be negative: {value}")
        return float(value)
    text = str(value).strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        seconds = float(text)
    elif not _DURATION.match(text):
        raise ValueError(
            f"invalid duration {value!r}: use a number of seconds or '90s', '30m', '2h', '3d', '1h30m'"
        )
    else:
        seconds = float(sum(float(n) * _UNITS[u] for n, u in _PART.findall(text)))
    if not math.isfinite(seconds):
        raise ValueError(f"invalid duration {text[:40]!r}: too large")
    return seconds


def parse_time(value: str | int | float, origin: float) -> float:
    """A point in time as epoch seconds: an RFC 3339 timestamp, or a duration counted from ``origin``."""
    if isinstance(value, str) and ("T" in value or value.count("-") >= 2):
        text = value.replace("Z", "+00:00")
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"invalid time {value!r}: use RFC 3339 (2026-01-01T00:00:00Z) or a duration"
            ) from None
        if dt.tzinfo is None:
            raise ValueError(f"invalid time {value!r}: an RFC 3339 timestamp needs a time zone (Z or +hh:mm)")
        return dt.timestamp()
    return origin + parse_duration(value)


def _check_duration(v: str | int | float) -> str | int | float:
    parse_duration(v)
    return v


def _check_time(v: str | int | float) -> str | int | float:
    parse_time(v, 0.0)
    return v


Duration = Annotated[str | int | float, AfterValidator(_check_duration)]
TimePoint = Annotated[str | int | float, AfterValidator(_check_time)]


def _check_available(v: int | str) -> int | str:
    if isinstance(v, str) and v != "unlimited":
        raise ValueError("available must be a number of nodes (0 = never) or 'unlimited'")
    if isinstance(v, int) and v < 0:
        raise ValueError("available must not be negative")
    return v


Available = Annotated[int | str, AfterValidator(_check_available)]


class Span(TwinModel):
    """A stretch of time: from ``start`` to ``end`` (open-ended when absent)."""

    start: TimePoint
    end: TimePoint | None = None


class Match(TwinModel):
    """Which requests a rule applies to. Each list may use ``*`` globs; an absent list matches anything.

    A location matches a zone exactly or a region as its prefix (``us-east5`` matches ``us-east5-b``).
    ``during`` limits the rule to requests made inside one of its spans (a node's scale-up, a DWS request's
    acceptance, a spot node's start): DWS waits that are shorter at night, or the ETA's warm-up, in which the
    jobs running at the instant it starts from get their nodes at once.
    """

    locations: list[str] | None = None
    machine_types: list[str] | None = None
    provisioning_models: list[ProfileModel] | None = None
    during: list[Span] | None = Field(default=None, max_length=1000)


class Window(TwinModel):
    """Between ``start`` and ``end`` (times), ``available`` replaces the rule's base availability."""

    start: TimePoint
    end: TimePoint | None = None  # open-ended when absent
    available: Available = 0


class Uniform(TwinModel):
    min: Duration
    max: Duration


class Exponential(TwinModel):
    mean: Duration


class Normal(TwinModel):
    mean: Duration
    stddev: Duration


class LogNormal(TwinModel):
    median: Duration
    sigma: float = Field(ge=0, le=100, allow_inf_nan=False)


# A ProvisioningRequest parameter only flexq's forecasts set (through Kueue's ``provreq.kueue.x-k8s.io/``
# annotations, which it copies into the request's parameters): the request continues one the cluster had accepted
# this many seconds before the forecast's instant. The twin's GKE accepts it again without weighing its node
# pool's size (it was accepted when the pool had room; its grant still waits for room) and draws its grant beyond
# that age, as the fast engine does for a request already queued.
FORECAST_WAITED_PARAMETER = "flexqForecastWaitedSeconds"


class Empirical(TwinModel):
    """Durations as seen: the Kaplan-Meier curve of ``seen`` (ended) and ``censored`` (still under way after
    that long), of which a share 1/(n+1) outlasts the longest seen (n observations: a few are not the whole
    law), that share an exponential tail of mean ``tailMean`` past it (``flexq.stats.sample_beyond``); the curve
    is read only while ``minAtRisk`` durations last that long (the tail past it). What ``flexq simulate
    --from-cluster`` writes for the DWS waits a cluster has shown, as ``flexq eta`` draws them."""

    seen: list[Duration] = Field(default_factory=list, max_length=10_000)
    censored: list[Duration] = Field(default_factory=list, max_length=10_000)
    tail_mean: Duration
    min_at_risk: int = Field(default=1, ge=1, le=10_000)

    @model_validator(mode="after")
    def _something_seen(self) -> Empirical:
        if not self.seen and not self.censored:
            raise ValueError("an empirical delay needs at least one duration in seen or censored")
        return self


class Delay(TwinModel):
    """How long something takes: exactly one of ``fixed``, ``uniform``, ``exponential``, ``normal``,
    ``lognormal``, ``empirical`` (durations seen), ``at`` (a schedule: the first listed time at or after the
    start) or ``never``.
    Draws come from the twin's seeded random stream; ``min``/``max`` clip the result."""

    fixed: Duration | None = None
    uniform: Uniform | None = None
    exponential: Exponential | None = None
    normal: Normal | None = None
    lognormal: LogNormal | None = None
    empirical: Empirical | None = None
    at: list[TimePoint] | None = None
    never: bool | None = None
    min: Duration | None = None
    max: Duration | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Delay:
        kinds = [
            k
            for k in ("fixed", "uniform", "exponential", "normal", "lognormal", "empirical", "at")
            if getattr(self, k) is not None
        ]
        if self.never:
            kinds.append("never")
        if len(kinds) != 1:
            raise ValueError(
                "a delay needs exactly one of fixed, uniform, exponential, normal, lognormal, empirical, at, "
                f"never (got {', '.join(kinds) or 'none'})"
            )
        return self


class CapacityRule(TwinModel):
    """What the cloud does for the requests ``match`` selects. Unset fields fall through to later rules."""

    match: Match = Field(default_factory=Match)
    available: Available | None = None  # nodes that may exist at once; 0 = never; "unlimited"
    windows: list[Window] | None = None  # time windows overriding `available` (stock-outs, surges)
    provision_time: Delay | None = None  # from scale-up decision to the node being Ready
    queue_wait: Delay | None = None  # DWS: from the request being accepted to capacity granted
    preemption: Delay | None = None  # spot: from the node being Ready to its preemption
    stockout_message: str | None = None  # wording of the stock-out error


class CapacityDefaults(TwinModel):
    """Fallbacks for every field of a rule (no ``match``)."""

    available: Available | None = None
    windows: list[Window] | None = None
    provision_time: Delay | None = None
    queue_wait: Delay | None = None
    preemption: Delay | None = None
    stockout_message: str | None = None


class OperationTimes(TwinModel):
    """How long GKE's long-running operations take before they are DONE."""

    create_cluster: Duration = "5s"
    delete_cluster: Duration = "3s"
    create_node_pool: Duration = "3s"
    delete_node_pool: Duration = "2s"
    update: Duration = "1s"
    upgrade: Duration = "20s"  # a master or node-pool version upgrade (GKE: many minutes)


class Reservation(TwinModel):
    """A GCE specific reservation (``gcloud compute reservations create NAME --zone Z --machine-type M
    --vm-count N``): ``count`` VMs of ``machineType`` held in ``zone``. A node pool consumes it with
    ``reservationAffinity {consumeReservationType: SPECIFIC_RESERVATION, key:
    compute.googleapis.com/reservation-name, values: [NAME]}`` (``--reservation-affinity=specific
    --reservation=NAME``); its nodes never stock out, and at most ``count`` of them exist at once."""

    zone: str = Field(min_length=1, max_length=63)
    machine_type: str = Field(min_length=1, max_length=63)
    count: int = Field(ge=0, le=100_000)


class CapacityProfileSpec(TwinModel):
    seed: int | None = None
    origin: TimePoint | None = None  # relative times count from here (else from the twin's start)
    operations: OperationTimes = Field(default_factory=OperationTimes)
    defaults: CapacityDefaults = Field(default_factory=CapacityDefaults)
    rules: list[CapacityRule] = Field(default_factory=list)
    # the project's specific reservations by name (GCE names: lowercase letters, digits, hyphens)
    reservations: dict[str, Reservation] | None = Field(default=None, max_length=1000)

    @model_validator(mode="after")
    def _reservation_names(self) -> CapacityProfileSpec:
        for name in self.reservations or {}:
            if not re.fullmatch(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", name):
                raise ValueError(
                    f"invalid reservation name {name[:70]!r}: GCE names are 1-63 lowercase letters, digits "
                    "and hyphens, starting with a letter"
                )
        return self


class CapacityProfile(TwinModel):
    api_version: Literal["twin.flexq.dev/v1alpha1"] = API_VERSION
    kind: Literal["CapacityProfile"] = KIND
    metadata: dict[str, Any] = Field(default_factory=lambda: {"name": "default"})
    spec: CapacityProfileSpec = Field(default_factory=CapacityProfileSpec)
    status: dict[str, Any] | None = None


def live_default_profile() -> dict[str, Any]:
    """What a live twin starts with: everything obtainable, quickly (nodes in 5 s, DWS grants in 20 s)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "default"},
        "spec": {
            "defaults": {
                "available": "unlimited",
                "provisionTime": {"fixed": "5s"},
                "queueWait": {"fixed": "20s"},
            }
        },
    }


def tutorial_profile() -> dict[str, Any]:
    """The tutorial's story: one v6e 4x4 slice on demand in us-east5-b, DWS grants within hours (seeded)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "tutorial"},
        "spec": {
            "seed": 7,
            "operations": {
                "createCluster": "5m",
                "createNodePool": "90s",
                "deleteNodePool": "60s",
                "deleteCluster": "3m",
                "update": "30s",
                "upgrade": "15m",
            },
            "defaults": {
                "available": "unlimited",
                "provisionTime": {"uniform": {"min": "60s", "max": "120s"}},
                "queueWait": {"exponential": {"mean": "30m"}, "max": "6h"},
            },
            "rules": [
                {
                    "match": {
                        "locations": ["us-east5-b"],
                        "machineTypes": ["ct6e-standard-4t"],
                        "provisioningModels": ["on-demand"],
                    },
                    "available": 4,
                },
            ],
        },
    }


def harsh_profile() -> dict[str, Any]:
    """A hard week: no on-demand TPUs at all, DWS waits 1-3 days, spot VMs preempted every ~2 hours."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "harsh"},
        "spec": {
            "seed": 13,
            "defaults": {"available": "unlimited", "provisionTime": {"uniform": {"min": "2m", "max": "5m"}}},
            "rules": [
                {
                    "match": {"machineTypes": ["ct*"], "provisioningModels": ["on-demand"]},
                    "available": 0,
                    "stockoutMessage": "ZONE_RESOURCE_POOL_EXHAUSTED",
                },
                {
                    "match": {"provisioningModels": ["queued", "flex-start"]},
                    "queueWait": {"uniform": {"min": "1d", "max": "3d"}},
                },
                {"match": {"provisioningModels": ["spot"]}, "preemption": {"exponential": {"mean": "2h"}}},
            ],
        },
    }


# Served in every cluster (so ``kubectl apply`` takes a profile) and in the project store.
KINDS: list[KindInfo] = [
    KindInfo(
        "twin.flexq.dev",
        "CapacityProfile",
        "capacityprofiles",
        {"v1alpha1": CapacityProfile},
        namespaced=False,
        status_subresource=False,
        short_names=("capprof",),
        printer_columns=[PrinterColumn("Age", ".metadata.creationTimestamp", "date")],
    ),
]
