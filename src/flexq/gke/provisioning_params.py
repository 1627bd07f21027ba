"""What a ProvisioningRequest's ``spec.parameters`` say to GKE (pure): ``maxRunDurationSeconds`` (flex-start's run
limit, at most 7 days), ``ValidUntilSeconds`` (how long a queued request may wait, at most DWS's 7 days),
``noRetry`` (the check-capacity class), and ``FORECAST_WAITED_PARAMETER`` (flexq's forecasts only: the age of the
accepted request a forward run's request continues). Kueue copies them from the job's ``provreq.kueue.x-k8s.io/``
annotations, so they are whatever a tenant wrote: each is read here, bounded, and a bad one is named
(``invalid``) — GKE fails such a request ``InvalidArgument`` — instead of breaking the controller that reads it."""

from __future__ import annotations

import math
from typing import Any

from flexq.api.capacity_profile import FORECAST_WAITED_PARAMETER
from flexq.gke.timing import DWS_MAX_WAIT_SECONDS, MAX_RUN_SECONDS

__all__ = ["invalid", "max_run_seconds", "valid_until_seconds", "no_retry", "forecast_waited"]

_BOUNDED = {
    "maxRunDurationSeconds": MAX_RUN_SECONDS,
    "ValidUntilSeconds": DWS_MAX_WAIT_SECONDS,
    "validUntilSeconds": DWS_MAX_WAIT_SECONDS,
}


def _params(pr: dict[str, Any]) -> dict[str, Any]:
    return (pr.get("spec") or {}).get("parameters") or {}


def _seconds(raw: Any) -> float | None:
    """A positive whole number of seconds written as a string (as GKE's parameters are), else None."""
    if not isinstance(raw, str) or not raw.isdigit() or len(raw) > 12:
        return None
    value = float(raw)
    return value if value > 0 and math.isfinite(value) else None


def invalid(pr: dict[str, Any]) -> str | None:
    """Why GKE refuses ``pr``'s parameters (a message naming the parameter), or None."""
    for name, limit in _BOUNDED.items():
        raw = _params(pr).get(name)
        if raw is None:
            continue
        value = _seconds(raw)
        if value is None or value > limit:
            shown = str(raw)[:40]
            return f"parameter {name}: must be a whole number of seconds between 1 and {limit:.0f}, got {shown!r}"
    return None


def max_run_seconds(pr: dict[str, Any]) -> float:
    value = _seconds(_params(pr).get("maxRunDurationSeconds"))
    return MAX_RUN_SECONDS if value is None else min(value, MAX_RUN_SECONDS)


def valid_until_seconds(pr: dict[str, Any]) -> float:
    params = _params(pr)
    value = _seconds(params.get("ValidUntilSeconds") or params.get("validUntilSeconds"))
    return DWS_MAX_WAIT_SECONDS if value is None else min(value, DWS_MAX_WAIT_SECONDS)


def no_retry(pr: dict[str, Any]) -> bool:
    return _params(pr).get("noRetry") == "true"


def forecast_waited(pr: dict[str, Any]) -> float | None:
    """The age of the accepted request ``pr`` continues, when a forecast says so (at most DWS's 7 days), else
    None."""
    raw = _params(pr).get(FORECAST_WAITED_PARAMETER)
    if raw == "0":
        return 0.0
    value = _seconds(raw)
    return None if value is None or value > DWS_MAX_WAIT_SECONDS else value
