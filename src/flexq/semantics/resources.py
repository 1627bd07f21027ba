"""A pod's effective resource requests, as ``k8s.io/component-helpers/resource.PodRequests`` computes them.

Owns: ``container_requests`` (a container's requests, each missing request defaulted to its limit, as the API
server defaults them and as Kueue's ``UseLimitsAsMissingRequestsInPod`` does), ``pod_requests`` (containers
summed; init containers as a running maximum; restartable "sidecar" init containers added to the steady-state
sum and to every later init container's peak; ``spec.overhead`` on top) in exact ``Fraction`` quantities, and
``pod_request_values`` (the same as the integers of ``flexq.api.quantity.resource_value``: cpu in milli, the
rest in whole units, as the scheduler and Kueue count them).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from flexq.api.quantity import parse_quantity
from flexq.api.quantity import resource_value as _resource_value

__all__ = ["container_requests", "pod_request_values", "pod_requests", "resource_value"]


@functools.lru_cache(maxsize=100_000)
def _parse(q: object) -> Fraction:
    return parse_quantity(q)  # type: ignore[arg-type]


@functools.lru_cache(maxsize=100_000)
def resource_value(name: str, q: object) -> int:
    """``flexq.api.quantity.resource_value``, memoised (quantities repeat endlessly in a cluster)."""
    return _resource_value(name, q)  # type: ignore[arg-type]


def container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    """A container's requests, each missing request defaulted to the matching limit."""
    res = container.get("resources") or {}
    out: dict[str, Fraction] = {}
    for name, q in (res.get("limits") or {}).items():
        out[name] = _parse(q)
    for name, q in (res.get("requests") or {}).items():
        out[name] = _parse(q)
    return out


def _add(dst: dict[str, Fraction], src: Mapping[str, Fraction]) -> None:
    for k, v in src.items():
        cur = dst.get(k)
        # the first value kept as it is (a Fraction: 0 + v would only make an equal copy, slowly)
        dst[k] = v if cur is None and type(v) is Fraction else (Fraction(0) if cur is None else cur) + v


def _max_into(dst: dict[str, Fraction], src: Mapping[str, Fraction]) -> None:
    for k, v in src.items():
        if k not in dst or v > dst[k]:
            dst[k] = v


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """Effective requests of one pod spec (``PodRequests``)."""
    reqs: dict[str, Fraction] = {}
    for c in spec.get("containers") or []:
        _add(reqs, container_requests(c))
    restartable: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for ic in spec.get("initContainers") or []:
        creqs = container_requests(ic)
        if ic.get("restartPolicy") == "Always":
            _add(reqs, creqs)
            _add(restartable, creqs)
            peak = dict(restartable)
        else:
            peak = dict(creqs)
            _add(peak, restartable)
        _max_into(init_max, peak)
    _max_into(reqs, init_max)
    _add(reqs, {k: _parse(v) for k, v in (spec.get("overhead") or {}).items()})
    return reqs


def pod_request_values(spec: Mapping[str, Any]) -> dict[str, int]:
    """``pod_requests`` as the integers the scheduler and Kueue count in (negative values floored to zero)."""
    containers = spec.get("containers") or []
    if len(containers) == 1 and not spec.get("initContainers") and not spec.get("overhead"):
        res = containers[0].get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {name: max(0, resource_value(name, q)) for name, q in merged.items()}
    return {name: max(0, _resource_value(name, q)) for name, q in pod_requests(spec).items()}
