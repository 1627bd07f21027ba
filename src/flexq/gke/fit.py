"""Would a pod fit on a node? The cluster autoscaler's scheduling simulation, as pure functions.

Owns: a pod's effective resource requests (containers summed, init containers as a maximum, overhead
added), taint toleration, nodeSelector and required node affinity (In, NotIn, Exists, DoesNotExist, Gt,
Lt), resource fit against allocatable minus what bound pods use, the ``NodeShape`` of a node pool (the
template node GKE's autoscaler imagines before scaling up), and first-fit bin packing of pending pods onto
new nodes of a shape. The kube-scheduler (flexq.kube) binds pods for real; this module only predicts.

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.semantics.pods import is_terminal
from flexq.semantics.resources import pod_request_values, resource_value
from flexq.semantics.selectors import pod_matches_node
from flexq.semantics.taints import untolerated_taint

__all__ = [
    "Resources",
    "NodeShape",
    "pod_requests",
    "tolerates_all",
    "selects",
    "fits",
    "static_misfit",
    "resource_misfit",
    "pool_shape",
    "node_shape",
    "pack",
    "add",
    "used_on_nodes",
]

# the integers kube-scheduler counts in (``resource_value``: cpu in millicores, every other resource in whole units
# rounded up), which the autoscaler's simulation of it counts in too
Resources = dict[str, int]
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}


@dataclass(frozen=True)
class NodeShape:
    """What the scheduler checks on a node: labels, taints, allocatable."""

    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    allocatable: Mapping[str, int] = field(default_factory=dict)  # ``Resources`` units


def add(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def pod_requests(pod: dict[str, Any]) -> Resources:
    """Effective requests (``flexq.semantics.resources``) as the scheduler's integers, plus one ``pods`` slot."""
    total = pod_request_values(pod.get("spec") or {})
    total["pods"] = 1
    return total


def tolerates_all(pod: dict[str, Any], taints: Iterable[Mapping[str, str]]) -> Mapping[str, Any] | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate, or None."""
    return untolerated_taint(taints, (pod.get("spec") or {}).get("tolerations") or [])


def selects(pod: dict[str, Any], labels: Mapping[str, str]) -> bool:
    """nodeSelector and requiredDuringSchedulingIgnoredDuringExecution node affinity, on a template node."""
    return pod_matches_node(pod.get("spec") or {}, labels)


def fits(
    pod: dict[str, Any],
    shape: NodeShape,
    used: Mapping[str, int] | None = None,
    requests: Resources | None = None,
) -> str | None:
    """None when the pod fits on the node, else the reason (kube-scheduler's wording)."""
    why = static_misfit(pod, shape)
    if why is not None:
        return why
    return resource_misfit(requests if requests is not None else pod_requests(pod), shape, used)


def static_misfit(pod: dict[str, Any], shape: NodeShape) -> str | None:
    """``fits`` without the resources: node affinity/selector and taints (what a pod's placement decides)."""
    if not selects(pod, shape.labels):
        return "node(s) didn't match Pod's node affinity/selector"
    taint = tolerates_all(pod, shape.taints)
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint['key']}: {taint.get('value', '')}}}"
    return None


def resource_misfit(
    requests: Mapping[str, int], shape: NodeShape, used: Mapping[str, int] | None = None
) -> str | None:
    """``fits``'s resource check alone: None when ``requests`` fit the shape's allocatable minus ``used``."""
    used = used or {}
    alloc = shape.allocatable
    for name, amount in requests.items():
        if amount <= 0:
            continue
        if used.get(name, 0) + amount > alloc.get(name, 0):
            return "Too many pods" if name == "pods" else f"Insufficient {name}"
    return None


def node_shape(node: dict[str, Any]) -> NodeShape:
    """The shape of an existing Node object."""
    return NodeShape(
        labels=dict(node["metadata"].get("labels") or {}),
        taints=tuple((node.get("spec") or {}).get("taints") or ()),
        allocatable={
            k: resource_value(k, v) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()
        },
    )


def pool_shape(pool: dict[str, Any]) -> NodeShape:
    """The template node of a GKE node pool object (project store ``GkeNodePool``)."""
    spec, twin = pool["spec"], pool["status"]
    cfg = spec.get("config") or {}
    mt = catalog.machine_type(cfg.get("machineType", "e2-medium"))
    topology = (spec.get("placementPolicy") or {}).get("tpuTopology")
    max_run = cfg.get("maxRunDuration")
    labels = catalog.node_labels(
        mt,
        pool=spec["name"],
        topology=topology,
        model=twin["provisioningModel"],
        queued=bool(twin.get("queued")),
        zone=twin["zone"],
        max_run_seconds=int(float(max_run.rstrip("s"))) if max_run else None,
    )
    labels.update(cfg.get("labels") or {})
    taints = [dict(t) for t in catalog.node_taints(mt, queued=bool(twin.get("queued")))]
    for t in cfg.get("taints") or []:
        taints.append(
            {
                "key": t.get("key", ""),
                "value": t.get("value", ""),
                "effect": _EFFECTS.get(t.get("effect", ""), "NoSchedule"),
            }
        )
    alloc = {k: resource_value(k, v) for k, v in catalog.allocatable(mt).items()}
    return NodeShape(labels=labels, taints=tuple(taints), allocatable=alloc)


def used_on_nodes(pods: Iterable[dict[str, Any]]) -> dict[str, Resources]:
    """Requests of live pods bound to each node."""
    used: dict[str, Resources] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node and not is_terminal(p):
            used[node] = add(used.get(node, {}), pod_requests(p))
    return used


def pack(
    pods: list[dict[str, Any]],
    shape: NodeShape,
    limit: int,
    requests: list[Resources] | None = None,
    placements: list[Any] | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """First-fit the pods onto at most ``limit`` new nodes of ``shape``. Returns (nodes used, pods placed).
    ``requests``: each pod's ``pod_requests``, if the caller has them; ``placements``: a key per pod such that
    pods with the same key have the same node selector, affinity and tolerations (their labels-and-taints
    verdict on the shape is then looked at once)."""
    bins: list[Resources] = []
    placed: list[dict[str, Any]] = []
    static: dict[Any, bool] = {}
    for n, pod in enumerate(pods):
        req = requests[n] if requests is not None else pod_requests(pod)
        known = None if placements is None else static.get(placements[n])
        ok = known if known is not None else static_misfit(pod, shape) is None
        if placements is not None and known is None:
            static[placements[n]] = ok
        if not ok or resource_misfit(req, shape) is not None:
            continue
        for i, used in enumerate(bins):
            if resource_misfit(req, shape, used) is None:
                bins[i] = add(used, req)
                placed.append(pod)
                break
        else:
            if len(bins) < limit:
                bins.append(dict(req))
                placed.append(pod)
    return len(bins), placed
