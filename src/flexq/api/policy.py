"""policy/v1 PodDisruptionBudget: stored and validated as the API server does.

``ValidatePodDisruptionBudgetSpec``: at most one of ``minAvailable`` and ``maxUnavailable``, each an int (0 or
more) or a percentage (``0%`` to ``100%``); the ``selector`` a valid label selector; ``unhealthyPodEvictionPolicy``
``IfHealthyBudget`` or ``AlwaysAllow``. Served so that a user's manifests (flexq fallback's among them) apply to
the twin as to GKE. No behaviour: the twin has no Eviction API, so nothing asks a budget whether a pod may go, and
no disruption controller fills its ``status``. Must not import outside ``flexq.api``/``flexq.errors``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import StrictInt, model_validator

from flexq.api.base import Int32, LabelSelector, Model, ObjectBase, field_error
from flexq.api.registry import KindInfo

_PERCENT = re.compile(r"^[0-9]+%$")


def _int_or_percent(name: str, value: int | str | None) -> None:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``."""
    if value is None:
        return
    if isinstance(value, int):
        if value < 0:
            raise field_error(name, f"Invalid value: {value}: must be greater than or equal to 0")
        return
    if not _PERCENT.match(value):
        raise field_error(
            name,
            f'Invalid value: "{value}": a valid percent string must be a numeric string followed by an ending '
            "'%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        )
    if int(value[:-1]) > 100:
        raise field_error(name, f'Invalid value: "{value}": must not be greater than 100%')


class PodDisruptionBudgetSpec(Model):
    min_available: StrictInt | str | None = None
    max_unavailable: StrictInt | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = None

    @model_validator(mode="after")
    def _valid(self) -> PodDisruptionBudgetSpec:
        if self.min_available is not None and self.max_unavailable is not None:
            raise field_error(
                "minAvailable", 'Invalid value: "": minAvailable and maxUnavailable cannot be both set'
            )
        _int_or_percent("minAvailable", self.min_available)
        _int_or_percent("maxUnavailable", self.max_unavailable)
        return self


class PodDisruptionBudgetStatus(Model):
    observed_generation: int | None = None
    disrupted_pods: dict[str, str] | None = None
    disruptions_allowed: Int32 | None = None
    current_healthy: Int32 | None = None
    desired_healthy: Int32 | None = None
    expected_pods: Int32 | None = None
    conditions: list[dict] | None = None


class PodDisruptionBudget(ObjectBase):
    spec: PodDisruptionBudgetSpec | None = None
    status: PodDisruptionBudgetStatus | None = None


KINDS = [
    KindInfo(
        "policy",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        {"v1": PodDisruptionBudget},
        short_names=("pdb",),
    ),
]
