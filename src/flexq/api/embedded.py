"""Pod templates embedded in custom resources (Kueue Workload pod sets, RayCluster groups, RayJob submitter).

Owns: ``EmbeddedPodSpec`` / ``EmbeddedPodTemplateSpec``: core/v1's pod template *without* the pod-level
defaults the core API server applies to Pods (``restartPolicy``, ``schedulerName``, ``dnsPolicy``,
``terminationGracePeriodSeconds``): a CRD's structural schema does not carry them, so a RayJob read back
keeps exactly what the user wrote there and the controllers that build pods from it decide. Also the
toleration rules Kueue's CRDs express in CEL. No behaviour. Must not import outside ``flexq.api``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from flexq.api.base import Int64, Model, Toleration, field_error
from flexq.api.core import PodSpec, PodTemplateMeta

__all__ = ["EmbeddedPodSpec", "EmbeddedPodTemplateSpec", "check_tolerations_cel"]


class EmbeddedPodSpec(PodSpec):
    """A PodSpec inside a custom resource: the same validation except what only the core API server checks (a
    container's image: the CRD's schema requires only its name), and no pod defaults."""

    image_required: ClassVar[bool] = False

    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None
    scheduler_name: str | None = None
    termination_grace_period_seconds: Int64 | None = None
    dns_policy: str | None = None


class EmbeddedPodTemplateSpec(Model):
    """``corev1.PodTemplateSpec`` as embedded in a CRD."""

    metadata: PodTemplateMeta | None = None
    spec: EmbeddedPodSpec = Field()


def check_tolerations_cel(tolerations: list[Toleration] | None) -> list[Toleration] | None:
    """The five CEL rules Kueue puts on ``tolerations`` lists (ResourceFlavor, podSetUpdates)."""
    for t in tolerations or []:
        if not t.key and t.operator != "Exists":
            raise field_error(
                "", "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"
            )
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            raise field_error("", "effect must be 'NoExecute' when 'tolerationSeconds' is set")
        if t.operator == "Exists" and t.value:
            raise field_error("", "a value must be empty when 'operator' is 'Exists'")
    return tolerations
