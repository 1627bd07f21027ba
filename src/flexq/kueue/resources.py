"""Resource math for Kueue: what a pod, a pod set and a workload request, as Kueue's integers.

Owns: the effective requests of one pod built from a pod spec exactly as Kubernetes'
``component-helpers/resource.PodRequests`` does (containers summed, init containers as a running
maximum, restartable "sidecar" init containers added to both, pod overhead on top), with a
container's missing requests defaulted to its limits (Kueue's ``UseLimitsAsMissingRequestsInPod``,
applied when the job framework builds a Workload); pod set totals (per pod × count, after
``status.reclaimablePods``); the usage an admitted Workload holds (``status.admission``).
All quantities are ``int`` in Kueue's view (``flexq.api.quantity.resource_value``: cpu in milli,
everything else in whole units).

Must not import anything in flexq but ``flexq.api.quantity`` and ``flexq.semantics``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from flexq.api.quantity import canonical_quantity, format_quantity
from flexq.semantics.resources import pod_request_values as pod_requests_values
from flexq.semantics.resources import resource_value

__all__ = [
    "FlavorResource",
    "PodSetResources",
    "add_into",
    "podset_total_requests",
    "admitted_requests",
    "format_requests",
]

FlavorResource = tuple[str, str]  # (flavor, resource)

_MAX_INT64, _MIN_INT64 = 2**63 - 1, -(2**63)


def _sat(v: int) -> int:
    """Kueue's int64 view saturates (``utilmath.SafeMilliValue`` / ``SafeValue`` and ``SaturatingMul`` clamp
    to the int64 range): a request of 9223372036854776 cpu is 9223372036854775807m, not 1000 times that."""
    return _MAX_INT64 if v > _MAX_INT64 else _MIN_INT64 if v < _MIN_INT64 else v


@functools.lru_cache(maxsize=100_000)
def from_resource_value(name: str, value: int) -> str:
    """Kueue's ``ResourceFormatter.ResourceQuantityString``, memoised (status controllers format usage
    constantly): cpu as a milli quantity and other resources as whole ones in canonical decimal SI
    (``500m``, ``2``, ``10k``); memory, ephemeral-storage and hugepages in binary SI, re-parsed as Kueue's
    ``newCanonicalQuantity`` does (``16Gi``, ``1536``, but ``1M`` for 1000000)."""
    if name == "cpu":
        return canonical_quantity(Fraction(value, 1000))
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return canonical_quantity(format_quantity(value, binary=True))
    return canonical_quantity(value)


@dataclass
class PodSetResources:
    """Total requests of one pod set (Kueue ``workload.PodSetResources``)."""

    name: str
    requests: dict[str, int]  # totals for `count` pods
    count: int
    flavors: dict[str, str] = field(default_factory=dict)  # resource -> flavor, once assigned

    def single_pod(self) -> dict[str, int]:
        """Per-pod requests (totals divided by count)."""
        if self.count == 0:
            return dict(self.requests)
        return {k: v // self.count for k, v in self.requests.items()}

    def scaled_to(self, count: int) -> PodSetResources:
        """The same pod set with ``count`` pods (Kueue ``ScaledTo``)."""
        if self.count == 0 or self.count == count:
            return PodSetResources(self.name, dict(self.requests), self.count, dict(self.flavors))
        per = self.single_pod()
        return PodSetResources(self.name, {k: v * count for k, v in per.items()}, count, dict(self.flavors))


def _reclaimable(wl: Mapping) -> dict[str, int]:
    return {r["name"]: int(r.get("count", 0)) for r in (wl.get("status") or {}).get("reclaimablePods") or []}


def podset_total_requests(wl: Mapping) -> list[PodSetResources]:
    """Per pod set totals of a (pending) Workload: per-pod requests × (count − reclaimable)."""
    reclaim = _reclaimable(wl)
    out = []
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        count = int(ps.get("count", 1))
        count -= min(reclaim.get(ps["name"], 0), count)
        per = pod_requests_values(((ps.get("template") or {}).get("spec")) or {})
        out.append(PodSetResources(ps["name"], {k: _sat(_sat(v) * count) for k, v in per.items()}, count))
    return out


def admitted_requests(wl: Mapping) -> list[PodSetResources]:
    """Usage held by an admitted Workload, from ``status.admission`` (Kueue ``totalRequestsFromAdmission``)."""
    status = wl.get("status") or {}
    admission = status.get("admission")
    if not admission:
        return []
    spec_counts = {ps["name"]: int(ps.get("count", 1)) for ps in (wl.get("spec") or {}).get("podSets") or []}
    reclaim = _reclaimable(wl)
    out = []
    for psa in admission.get("podSetAssignments") or []:
        name = psa["name"]
        count = int(psa.get("count", spec_counts.get(name, 1)))
        reqs = {r: _sat(resource_value(r, q)) for r, q in (psa.get("resourceUsage") or {}).items()}
        after = spec_counts.get(name, count) - min(reclaim.get(name, 0), spec_counts.get(name, count))
        if after < count:
            if count:
                reqs = {k: v // count * after for k, v in reqs.items()}
            count = after
        out.append(PodSetResources(name, reqs, count, dict(psa.get("flavors") or {})))
    return out


def add_into(dst: dict, src: Mapping, sign: int = 1) -> None:
    """dst[k] += sign * src[k] for every key."""
    for k, v in src.items():
        dst[k] = dst.get(k, 0) + sign * v


def format_requests(values: Mapping[str, int], names: Iterable[str] | None = None) -> dict[str, str]:
    """Kueue integers back to quantity strings (``2``, ``500m``, ``16Gi``), in key order."""
    keys = list(names) if names is not None else sorted(values)
    return {k: from_resource_value(k, values[k]) for k in keys if k in values}
