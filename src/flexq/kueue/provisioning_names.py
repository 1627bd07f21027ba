"""The names of a ProvisioningRequest and its PodTemplates, and the attempt a request's name carries
(``pkg/controller/admissionchecks/provisioning/provisioning.go``): ``<workload>-<check>-<attempt>`` and
``ppt-<request>-<podset>``, shortened past 253 characters as the Kueue release does it (v0.19.2 hashes the whole
name; 0.20 keeps a stable prefix that leaves room for any attempt, kueue#14916).

Pure: functions of their arguments.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["ATTEMPT_DIGITS", "attempt_of", "limit_name", "request_name", "request_prefix", "template_name"]


def limit_name(full: str) -> str:
    """``limitObjectName``: names over 247 characters are cut to 247 and suffixed ``-<5 hex of sha1>``."""
    if len(full) <= 247:
        return full
    h = hashlib.sha1(full.encode()).hexdigest()[:5]
    return f"{full[:247]}-{h}"


ATTEMPT_DIGITS = 10  # an int32 attempt number (kueue#14916 keeps room for it after the shortened prefix)


def request_prefix(workload: str, check: str, stable: bool = True) -> str:
    """``getProvisioningRequestNamePrefix``: ``<workload>-<check>-`` (shortened). ``stable`` (Kueue 0.20,
    kueue#14916): cut to leave room for any attempt number, so every attempt's name starts with it; v0.19.2
    shortened it as a name of its own (``limitObjectName``), which the requests' names (hashed with their attempt)
    do not start with once the full name is over 247 characters."""
    full = f"{workload}-{check}-"
    if not stable:
        return limit_name(full)
    budget = 253 - ATTEMPT_DIGITS
    if len(full) <= budget:
        return full
    h = hashlib.sha1(full.encode()).hexdigest()[:5]
    return f"{full[: budget - 7]}-{h}-"


def request_name(workload: str, check: str, attempt: int, stable: bool = True) -> str:
    """``ProvisioningRequestName``: from Kueue 0.20 the stable prefix and the attempt (kueue#14916); v0.19.2
    shortens the whole ``<workload>-<check>-<attempt>`` (``limitObjectName``)."""
    if stable:
        return f"{request_prefix(workload, check)}{attempt}"
    return limit_name(f"{workload}-{check}-{attempt}")


def template_name(request: str, podset: str) -> str:
    """PodTemplate name for one pod set of a request."""
    return limit_name(f"ppt-{request}-{podset}")


def attempt_of(pr: dict, workload: str, check: str, stable: bool = True) -> int | None:
    """``getAttempt`` / ``matchesWorkloadAndCheck``: the attempt a request's name carries after the prefix."""
    prefix = request_prefix(workload, check, stable)
    m = re.match("^" + re.escape(prefix) + "([0-9]+)$", pr["metadata"]["name"])
    return int(m.group(1)) if m else None
