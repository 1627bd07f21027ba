"""The kueue.x-k8s.io kinds: served versions v1beta2 (storage, preferred) and, up to Kueue 0.19, v1beta1.

Owns ``kinds(release)``: for each of ResourceFlavor, ClusterQueue, LocalQueue, Workload, AdmissionCheck,
ProvisioningRequestConfig, WorkloadPriorityClass and Cohort, its names, scope, printer columns, the versions
the Kueue release serves with their models (``flexq.api.kueue_v1beta2``, ``flexq.api.kueue_v1beta1``), the
conversions and webhook checks (``flexq.api.kueue_webhooks``), and the versions its CRDs list unserved (0.20
stops serving v1beta1, kueue#14558). One list per release, made once (the OpenAPI documents are cached by
the identity of the kinds). ``KINDS`` is v0.19.2's (both versions served). The models are imported from their
version's module. No behaviour. Must not import outside ``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

from flexq.api import kueue_v1beta1 as v1
from flexq.api import kueue_webhooks as wh
from flexq.api.kueue_v1beta2 import (
    GROUP,
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ProvisioningRequestConfig,
    ResourceFlavor,
    Workload,
    WorkloadPriorityClass,
)
from flexq.api.kueue_versions import KNOWN, V0_19_2, KueueVersion
from flexq.api.registry import KindInfo, PrinterColumn

__all__ = ["KINDS", "kinds"]

_AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date")


def _kinds(release: KueueVersion) -> list[KindInfo]:
    """The kinds as ``release`` serves them."""
    v1beta1 = release.serves_v1beta1

    def _kind(kind: str, plural: str, v2: type, v1beta1_model: type | None = None, **kw: object) -> KindInfo:
        """A Kueue kind served as v1beta2 (storage) and, when the release serves it, v1beta1."""
        if not v1beta1:
            return KindInfo(
                GROUP,
                kind,
                plural,
                {"v1beta2": v2},
                storage="v1beta2",
                unserved={v: v1beta1_model or v2 for v in release.unserved},
                **kw,  # type: ignore[arg-type]
            )
        return KindInfo(
            GROUP,
            kind,
            plural,
            {"v1beta2": v2, "v1beta1": v1beta1_model or v2},
            storage="v1beta2",
            to_storage={"v1beta1": v1.TO_STORAGE[kind]} if kind in v1.TO_STORAGE else {},
            from_storage={"v1beta1": v1.FROM_STORAGE[kind]} if kind in v1.FROM_STORAGE else {},
            **kw,  # type: ignore[arg-type]
        )

    return [
        _kind(
            "ResourceFlavor",
            "resourceflavors",
            ResourceFlavor,
            namespaced=False,
            short_names=("flavor", "flavors", "rf"),
            status_subresource=False,
            validate=wh.validate_resource_flavor,
        ),
        _kind(
            "ClusterQueue",
            "clusterqueues",
            ClusterQueue,
            v1.ClusterQueue,
            namespaced=False,
            short_names=("cq",),
            validate=wh.validate_cluster_queue,
            printer_columns=[
                PrinterColumn("Cohort", ".spec.cohortName"),
                PrinterColumn("Strategy", ".spec.queueingStrategy", priority=1),
                PrinterColumn("Pending Workloads", ".status.pendingWorkloads", "integer"),
                PrinterColumn("Admitted Workloads", ".status.admittedWorkloads", "integer", priority=1),
            ],
        ),
        _kind(
            "LocalQueue",
            "localqueues",
            LocalQueue,
            short_names=("queue", "queues", "lq"),
            validate=wh.validate_local_queue,
            printer_columns=[
                PrinterColumn("ClusterQueue", ".spec.clusterQueue"),
                PrinterColumn("Pending Workloads", ".status.pendingWorkloads", "integer"),
                PrinterColumn("Admitted Workloads", ".status.admittedWorkloads", "integer"),
            ],
        ),
        _kind(
            "Workload",
            "workloads",
            Workload,
            v1.Workload,
            short_names=("kwl", "kueueworkload", "kueueworkloads"),
            validate=wh.validate_workload,
            shared=(("spec", "podSets"),),
            printer_columns=[
                PrinterColumn("Queue", ".spec.queueName"),
                PrinterColumn("Reserved in", ".status.admission.clusterQueue"),
                PrinterColumn("Admitted", ".status.conditions[?(@.type=='Admitted')].status"),
                PrinterColumn("Finished", ".status.conditions[?(@.type=='Finished')].status"),
                _AGE,
            ],
        ),
        _kind(
            "AdmissionCheck",
            "admissionchecks",
            AdmissionCheck,
            v1.AdmissionCheck,
            namespaced=False,
            short_names=("ac",),
            validate=wh.validate_admission_check,
        ),
        _kind(
            "ProvisioningRequestConfig",
            "provisioningrequestconfigs",
            ProvisioningRequestConfig,
            namespaced=False,
            short_names=("prc",),
            status_subresource=False,
        ),
        _kind(
            "WorkloadPriorityClass",
            "workloadpriorityclasses",
            WorkloadPriorityClass,
            namespaced=False,
            short_names=("wpc",),
            status_subresource=False,
            printer_columns=[PrinterColumn("Value", ".value", "integer")],
        ),
        _kind(
            "Cohort", "cohorts", Cohort, namespaced=False, short_names=("co",), validate=wh.validate_cohort
        ),
    ]


# made once per modelled release, at import, and never changed
_RELEASE_KINDS: dict[str, tuple[KindInfo, ...]] = {r.version: tuple(_kinds(r)) for r in KNOWN.values()}


def kinds(release: KueueVersion = V0_19_2) -> list[KindInfo]:
    """The Kueue kinds as ``release`` serves them (the same objects each time for a modelled release)."""
    found = _RELEASE_KINDS.get(release.version)
    return list(found) if found is not None and KNOWN[release.version] is release else _kinds(release)


KINDS: list[KindInfo] = kinds(V0_19_2)
