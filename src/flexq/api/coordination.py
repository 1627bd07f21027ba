"""coordination.k8s.io/v1 Lease: stored and validated as the API server does (``ValidateLeaseSpec``: a positive
``leaseDurationSeconds``, non-negative ``leaseTransitions``, ``preferredHolder`` only with a ``strategy``).

Each Node's kubelet holds a Lease named after it in ``kube-node-lease`` (``kubectl describe node`` shows it):
``flexq.kube.node_leases`` keeps those. No behaviour. Must not import outside ``flexq.api``/``flexq.errors``.
"""

from __future__ import annotations

from pydantic import model_validator

from flexq.api.base import Int32, Model, ObjectBase, field_error
from flexq.api.registry import KindInfo

NODE_LEASE_NAMESPACE = "kube-node-lease"  # corev1.NamespaceNodeLease
NODE_LEASE_SECONDS = 40  # the kubelet's --node-lease-duration-seconds default


class LeaseSpec(Model):
    holder_identity: str | None = None
    lease_duration_seconds: Int32 | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: Int32 | None = None
    strategy: str | None = None
    preferred_holder: str | None = None

    @model_validator(mode="after")
    def _valid(self) -> LeaseSpec:
        if self.lease_duration_seconds is not None and self.lease_duration_seconds <= 0:
            raise field_error(
                "leaseDurationSeconds",
                f"Invalid value: {self.lease_duration_seconds}: must be greater than 0",
            )
        if self.lease_transitions is not None and self.lease_transitions < 0:
            raise field_error(
                "leaseTransitions",
                f"Invalid value: {self.lease_transitions}: must be greater than or equal to 0",
            )
        if self.preferred_holder and not self.strategy:
            raise field_error(
                "preferredHolder", "Forbidden: preferredHolder is only allowed if strategy is set"
            )
        return self


class Lease(ObjectBase):
    spec: LeaseSpec | None = None


KINDS = [
    KindInfo(
        "coordination.k8s.io",
        "Lease",
        "leases",
        {"v1": Lease},
        generation=False,
        status_subresource=False,
    ),
]
