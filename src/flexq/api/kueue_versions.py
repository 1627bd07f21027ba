"""The Kueue releases a twin can run, and what differs between them: a per-twin profile, chosen once.

Owns ``KueueVersion`` — one release's served ``kueue.x-k8s.io`` API versions, its feature-gate defaults (for the
gates the twin models) and one switch per behaviour that changed between the releases, each named after the
upstream change that shows it (``docs/upstream-versions.md`` has the table) — the two releases modelled
(``V0_19_2``, ``V0_20_7``), ``DEFAULT`` (what the tutorial's unpinned ``helm install`` gives today: Helm takes
the newest stable chart) and ``resolve`` (``"0.20.7"``, ``"v0.20.7"`` or a ``KueueVersion`` -> the profile; any
other value is refused naming the field and the supported values).

The assembly resolves a twin's ``kueue`` setting once and hands the profile to what depends on it: the kind
registry (which versions discovery, REST and OpenAPI serve; the ClusterQueue webhook's flavor limit) and Kueue's
controllers (the switches). Nothing here is process-wide state. No behaviour. Must not import outside
``flexq.api`` and ``flexq.errors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from flexq.errors import Cause, Invalid

__all__ = ["DEFAULT", "KNOWN", "V0_19_2", "V0_20_7", "KueueVersion", "from_served", "resolve"]


@dataclass(frozen=True)
class KueueVersion:
    """One Kueue release as the twin runs it."""

    version: str  # "0.20.7"
    # kueue.x-k8s.io versions served, preferred (storage) first; v1beta2 is the storage version since 0.16
    served: tuple[str, ...]
    # versions a CRD still lists with ``served: false`` (kueue#14558 marks v1beta1 unserved in 0.20)
    unserved: tuple[str, ...] = ()
    # feature-gate defaults, for the gates the twin models (``pkg/features/kube_features.go`` of the release)
    gates: Mapping[str, bool] = field(default_factory=dict)
    # kueue#18785 (v0.20.7): a workload holding quota with a check in Retry is evicted at once and waits out the
    # back-off without quota (v0.19.2 waited for requeueAt first, keeping the quota for the whole back-off)
    retry_evicts_at_once: bool = False
    # kueue#14916 (v0.20.0): a ProvisioningRequest name that must be shortened keeps a stable prefix and the
    # attempt after it (v0.19.2 hashed the whole name, attempt included, so the controller could not recognise
    # its own request, deleted it and made it again, without end)
    stable_request_names: bool = False
    # kueue#14309 (v0.20.0): a check Rejected while the workload is already evicted still deactivates it
    # (v0.19.2 skipped every check-based step for an evicted workload: Admitted=True stayed beside Rejected)
    rejected_check_deactivates_evicted: bool = False
    # kueue#14670 (v0.20.0): KubeRay v1.7's History Server collector sidecar (``historyServerOptions.
    # collectorOptions``) is counted in every Ray pod set (v0.19.2 did not count it: quota under-reserved)
    counts_history_collector: bool = False
    # kueue#15949 (v0.20.0): flavors allowed in the resource group of a ClusterQueue with a
    # concurrentAdmissionPolicy (16 before)
    concurrent_admission_max_flavors: int = 16
    # v0.20.7 (Concurrent Admission): "Adding a flavor no longer creates Variants for finished Parent workloads"
    finished_parent_gets_no_variants: bool = False
    # kueue#14874 (v0.20): a workload reactivated (``spec.active: true``) after a deactivation with a cause
    # (``Requeued=False`` reason ``DeactivatedDueToAdmissionCheck``, ``DeactivatedDueTo...``) is requeued
    # (``Requeued=True`` ``Reactivated``); v0.19.2 matched only the bare ``Deactivated`` reason, so such a
    # workload stayed ``Requeued=False`` and was never admitted again (the bug kueue#14309's review found)
    reactivates_any_deactivation_cause: bool = False

    @property
    def tag(self) -> str:
        """The release tag and image tag: ``v0.20.7``."""
        return f"v{self.version}"

    @property
    def serves_v1beta1(self) -> bool:
        return "v1beta1" in self.served

    def __str__(self) -> str:
        return self.tag

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickled as its fields, the gates as a plain dict (a read-only mapping view cannot be pickled): a
        forecast's replicas run in other processes."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["gates"] = dict(self.gates)
        return _restore, (values,)


def _restore(values: dict[str, Any]) -> KueueVersion:
    return KueueVersion(**{**values, "gates": MappingProxyType(dict(values["gates"]))})


# Feature gates the twin models, at v0.19.2's defaults (``pkg/features/kube_features.go`` at tag v0.19.2).
_GATES_0_19 = MappingProxyType(
    {
        "ElasticJobsViaWorkloadSlices": True,  # beta, on since 0.18: the tutorial's --set featureGates is redundant
        "FlavorFungibility": True,
        "PartialAdmission": True,
        "PrioritySortingWithinCohort": True,
        "CleanupProvisioningRequestsOnEviction": True,  # beta, on since 0.19
        # beta but off in v0.19.2 (on from 0.20, kueue#13063): QuotaReserved=False says ``Pending`` (``Waiting``
        # while pods get ready), no ``Admitted=False`` before a first admission, events ``Pending``
        "UnadmittedWorkloadsObservability": False,
        # alpha, off in v0.19.2; beta and on in 0.20 (kueue#13719): a job without a priority class gets the
        # WorkloadPriorityClass named ``default`` when it exists
        "WorkloadPriorityClassDefaulting": False,
        "DisableWaitForPodsReady": False,
        "FlavorFungibilityPreserveScanProgress": True,  # beta, on since 0.19
        "ConcurrentAdmission": False,  # alpha since 0.18
        "WorkloadRequestUseMergePatch": False,
    }
)
# v0.20.7: the same, plus the gates 0.20 added that the twin models.
_GATES_0_20 = MappingProxyType(
    {
        **_GATES_0_19,
        "WaitForPodsReadyUnscheduledTimeout": False,  # alpha, new in 0.20 (kueue#15402)
        "UnadmittedWorkloadsObservability": True,  # on by default from 0.20 (kueue#13063)
        "WorkloadPriorityClassDefaulting": True,  # beta, on by default from 0.20 (kueue#13719)
    }
)

V0_19_2 = KueueVersion("0.19.2", served=("v1beta2", "v1beta1"), gates=_GATES_0_19)
V0_20_7 = KueueVersion(
    "0.20.7",
    served=("v1beta2",),
    unserved=("v1beta1",),
    gates=_GATES_0_20,
    retry_evicts_at_once=True,
    stable_request_names=True,
    rejected_check_deactivates_evicted=True,
    counts_history_collector=True,
    concurrent_admission_max_flavors=32,
    finished_parent_gets_no_variants=True,
    reactivates_any_deactivation_cause=True,
)

KNOWN: Mapping[str, KueueVersion] = MappingProxyType({v.version: v for v in (V0_19_2, V0_20_7)})
# What `helm install kueue oci://registry.k8s.io/kueue/charts/kueue` (the tutorial's command, no --version)
# installs today: Helm takes the newest stable chart (it skips pre-releases without --devel).
DEFAULT = V0_20_7


def resolve(value: object, field_name: str = "kueue") -> KueueVersion:
    """A Kueue release by its version (``"0.19.2"``, ``"v0.19.2"``) or as given; anything else is refused,
    naming ``field_name`` and the releases the twin models."""
    if isinstance(value, KueueVersion):
        return value
    if value is None:
        return DEFAULT
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.startswith("v"):
        text = text[1:]
    found = KNOWN.get(text) if isinstance(text, str) else None
    if found is None:
        supported = ", ".join(f'"{v}"' for v in KNOWN)
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        message = (
            f"Unsupported value: {shown}: supported values: {supported} (the Kueue releases the twin models; "
            f"{DEFAULT.version} is the default)"
        )
        raise Invalid(
            f"{field_name}: {message}", causes=[Cause(field_name, "FieldValueNotSupported", message)]
        )
    return found


def from_served(served: list[str] | None) -> KueueVersion | None:
    """The modelled release closest to a cluster that serves ``served`` of ``kueue.x-k8s.io`` (discovery, which
    every authenticated user may read): the newest release serving exactly those versions — still serving
    ``v1beta1``: 0.19.2 (v1beta1 unserved from 0.20, kueue#14558); ``v1beta2`` only: the newest. None when Kueue is
    not served (or discovery could not be read)."""
    if not served:
        return None
    matching = [v for v in KNOWN.values() if set(v.served) == set(served)]
    if not matching:
        return None
    return max(matching, key=lambda v: tuple(int(x) for x in v.version.split(".")))
