"""autoscaling.x-k8s.io ProvisioningRequest, served as v1 (storage) and v1beta1 (same schema, deprecated).

Owns the model (cluster-autoscaler ``apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go``: 1..32 pod
sets with ``count >= 1``, a DNS-1123 ``provisioningClassName``, at most 100 parameters of at most 255
characters, each of the three immutable) and its KindInfo with GKE's printer columns. The status is written by
the autoscaler (gke) and read by Kueue's provisioning check. No behaviour. Must not import outside
``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from flexq.api.base import DNS1123Subdomain, Loose, MetaCondition, Model, ObjectBase, check_conditions
from flexq.api.registry import KindInfo, PrinterColumn
from flexq.api.wellknown import CONSUME_PROVISIONING_REQUEST, PROVISIONING_CLASS_NAME
from flexq.errors import Cause

GROUP = "autoscaling.x-k8s.io"
CONSUME_ANNOTATION = CONSUME_PROVISIONING_REQUEST
CLASS_ANNOTATION = PROVISIONING_CLASS_NAME
CONDITION_TYPES = ("Accepted", "Provisioned", "Failed", "BookingExpired", "CapacityRevoked")


class Reference(Model):
    """A PodTemplate in the same namespace."""

    name: DNS1123Subdomain


class PodSet(Model):
    """``count`` pods like the referenced PodTemplate."""

    pod_template_ref: Reference
    count: int = Field(ge=1, le=2147483647)


class ProvisioningRequestSpec(Model):
    """What capacity is requested, and how (immutable as a whole)."""

    pod_sets: list[PodSet] = Field(min_length=1, max_length=32)
    provisioning_class_name: DNS1123Subdomain
    parameters: dict[str, Annotated[str, Field(max_length=255)]] | None = Field(default=None, max_length=100)


class ProvisioningRequestStatus(Loose):
    """Conditions (Accepted, Provisioned, Failed, BookingExpired, CapacityRevoked) and class details."""

    conditions: Annotated[list[MetaCondition] | None, AfterValidator(check_conditions)] = None
    provisioning_class_details: dict[str, Annotated[str, Field(max_length=32768)]] | None = Field(
        default=None, max_length=64
    )


class ProvisioningRequest(ObjectBase):
    """A ProvisioningRequest (namespaced)."""

    spec: ProvisioningRequestSpec
    status: ProvisioningRequestStatus | None = None


def validate_provisioning_request(new: dict, old: dict | None) -> list[Cause]:
    """The three ``self == oldSelf`` rules of the spec."""
    if old is None:
        return []
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    return [
        Cause(f"spec.{key}", "FieldValueInvalid", 'Invalid value: "object": Value is immutable')
        for key in ("podSets", "provisioningClassName", "parameters")
        if spec.get(key) != old_spec.get(key)
    ]


def _condition(name: str) -> PrinterColumn:
    return PrinterColumn(name.upper(), f".status.conditions[?(@.type=='{name}')].status")


KINDS: list[KindInfo] = [
    KindInfo(
        GROUP,
        "ProvisioningRequest",
        "provisioningrequests",
        {"v1": ProvisioningRequest, "v1beta1": ProvisioningRequest},
        storage="v1",
        short_names=("provreq", "provreqs"),
        validate=validate_provisioning_request,
        printer_columns=[
            _condition("Accepted"),
            _condition("Provisioned"),
            _condition("Failed"),
            PrinterColumn("AGE", ".metadata.creationTimestamp", "date"),
        ],
    ),
]
