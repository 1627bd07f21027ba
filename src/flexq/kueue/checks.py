"""Admission checks by their controller: how each delays a workload and how it retries. A small pure table.

Kueue lets any controller own an ``AdmissionCheck`` (its ``spec.controllerName``); what a check does to a
workload — how it delays admission, which object holds its parameters, and whether and how it asks for a retry
(``Retry``: the workload is evicted, waits out a back-off and tries again, up to a limit) — is that controller's.
Upstream, nothing outside ``pkg/controller/admissionchecks/<name>/`` knows a check; here the readers beside the
twin's own controllers (the planner's causes, the sweep's ``retryLimit`` knob) ask this table, so a new check is
one row. Owns ``CHECKS``, ``check_controller``, ``RetryStrategy`` and ``retry_strategy`` (Kueue's defaults for a
ProvisioningRequestConfig's ``retryStrategy``: the one reader of them). Pure: imports nothing from flexq.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

__all__ = [
    "PROVISIONING_CONTROLLER",
    "CheckController",
    "CHECKS",
    "check_controller",
    "RetryStrategy",
    "retry_strategy",
]

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"


class RetryStrategy(NamedTuple):
    """A ProvisioningRequestConfig's ``retryStrategy`` with Kueue's defaults filled in."""

    limit: int  # backoffLimitCount (3)
    base: int  # backoffBaseSeconds (60)
    cap: int  # backoffMaxSeconds (1800)


def retry_strategy(prc: Mapping | None) -> RetryStrategy:
    """``spec.retryStrategy`` of a ProvisioningRequestConfig (None: no config) with the defaults
    ``ProvisioningRequestConfigSpec`` declares: ``backoffLimitCount`` 3, ``backoffBaseSeconds`` 60,
    ``backoffMaxSeconds`` 1800. The one reader of these defaults: the provisioning controller, the ETA's
    forward run and the planner's advice all ask it."""
    rs = ((prc or {}).get("spec") or {}).get("retryStrategy") or {}
    limit = rs.get("backoffLimitCount")
    return RetryStrategy(
        3 if limit is None else int(limit),
        int(rs.get("backoffBaseSeconds") or 60),
        int(rs.get("backoffMaxSeconds") or 1800),
    )


@dataclass(frozen=True)
class CheckController:
    """What one check controller does to the workloads its checks guard.

    ``parameters``: the kind its ``spec.parameters`` names (the object that configures it); ``delays``: how it
    delays admission, in words (what the planner's causes say); ``retry``: how it retries, read from its
    parameters object (None: it never asks for a retry); ``retry_limit``: where in that object the retry limit
    is written (what the sweep's ``retryLimit`` knob turns)."""

    name: str
    parameters: str
    delays: str
    retry: Any = None  # Callable[[Mapping | None], RetryStrategy] | None
    retry_limit: tuple[str, ...] = ()

    @property
    def retries(self) -> bool:
        return self.retry is not None


CHECKS: Mapping[str, CheckController] = MappingProxyType(
    {
        PROVISIONING_CONTROLLER: CheckController(
            name=PROVISIONING_CONTROLLER,
            parameters="ProvisioningRequestConfig",
            delays="a ProvisioningRequest per attempt, Ready when the cloud provides the nodes (DWS: queued)",
            retry=retry_strategy,
            retry_limit=("spec", "retryStrategy", "backoffLimitCount"),
        ),
    }
)


def check_controller(name: str | None) -> CheckController | None:
    """The row of the controller named ``name`` (an AdmissionCheck's ``spec.controllerName``); None for a
    controller the twin does not model."""
    return CHECKS.get(name or "")
