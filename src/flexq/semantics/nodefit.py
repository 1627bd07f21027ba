"""kube-scheduler's filters for one pod on one node, as pure functions: the rule the twin's scheduler binds with and
flexq's fallback plans with (so both decide alike).

Owns: ``NodeInfo`` (what the scheduler reads of a Node: labels, the taints it has or is given for being
NotReady / unschedulable, allocatable as integers), ``pod_requests`` (the API server's defaulting of requests
from limits, init containers — sidecars included —, overhead), and the default profile's filters in their
order — NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and required affinity), NodeResourcesFit
(pods, cpu, memory, extended resources such as ``google.com/tpu``) — with the scheduler's reasons
(``filter_node``, ``static_verdict``, ``insufficient``). ``kube.scheduler_filters`` builds the scheduling
decision (scores, FitError) on them. Pure: imports only ``flexq.api`` and ``flexq.semantics``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from math import prod
from typing import Any

from flexq.api.gke_catalog import LABEL_NODEPOOL, LABEL_TPU_TOPOLOGY
from flexq.api.quantity import resource_value
from flexq.api.wellknown import (
    NOT_READY_TAINT,
    RAY_REPLICA_NAME_LABEL,
    RESOURCE_TPU,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
)
from flexq.semantics.resources import pod_request_values
from flexq.semantics.selectors import pod_matches_node
from flexq.semantics.taints import tolerates
from flexq.semantics.taints import untolerated_taint as _untolerated

__all__ = [
    "DEFAULT_MAX_PODS",
    "NodeInfo",
    "NodeVerdict",
    "node_info",
    "pod_requests",
    "untolerated_taint",
    "matches_node_affinity",
    "insufficient",
    "filter_node",
    "static_verdict",
    "placement_shape",
    "fits_on_node",
    "SliceKey",
    "hosts_per_slice",
    "slice_key",
    "replica_of",
    "off_slice",
    "place_pods",
]

DEFAULT_MAX_PODS = 110  # kubelet's --max-pods default, when a Node reports no "pods" allocatable

MSG_UNSCHEDULABLE = "node(s) were unschedulable"
MSG_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
MSG_TOO_MANY_PODS = "Too many pods"
# InterPodAffinity's ErrReasonAffinityRulesNotMatch: the one-slice-per-replica rule (``off_slice``) fails so
MSG_SLICE = "node(s) didn't match pod affinity rules"
ANN_SLICE = "gke.twin.flexq.dev/slice"  # set by the twin's GKE node pools on every host of one TPU slice
_FIRST = ("cpu", "memory", "ephemeral-storage")


@dataclass(frozen=True)
class NodeInfo:
    """The scheduler's view of one Node."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[dict, ...]  # effective taints (spec.taints + condition taints)
    allocatable: Mapping[str, int]  # resource_value units; "pods" included
    unschedulable: bool = False
    ready: bool = True
    slice: str = ""  # the twin's GKE slice id (annotation gke.twin.flexq.dev/slice), "" if none


def node_info(node: dict) -> NodeInfo:
    """What the scheduler sees of ``node``: a NotReady node carries the not-ready taint, as the node
    lifecycle controller gives it (``Unknown`` readiness: the unreachable taint)."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    ready_status = next(
        (c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), "False"
    )
    taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
    keys = {t.get("key") for t in taints}
    if ready_status != "True":
        key = UNREACHABLE_TAINT if ready_status == "Unknown" else NOT_READY_TAINT
        if key not in keys:
            taints.append({"key": key, "effect": "NoSchedule"})
    alloc_src = status.get("allocatable") or status.get("capacity") or {}
    alloc: dict[str, int] = {}
    for name, q in alloc_src.items():
        try:
            alloc[name] = resource_value(name, q)
        except ValueError:
            continue
    alloc.setdefault("pods", DEFAULT_MAX_PODS)
    return NodeInfo(
        name=node["metadata"]["name"],
        labels=dict(node["metadata"].get("labels") or {}),
        taints=tuple(taints),
        allocatable=alloc,
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready_status == "True",
        slice=(node["metadata"].get("annotations") or {}).get(ANN_SLICE, ""),
    )


def pod_requests(pod: dict) -> dict[str, int]:
    """Effective requests (``flexq.semantics.resources``) as the scheduler's integers, zero ones dropped."""
    return {k: v for k, v in pod_request_values(pod.get("spec") or {}).items() if v > 0}


def untolerated_taint(pod: dict, node: NodeInfo) -> Mapping | None:
    """The first NoSchedule/NoExecute taint of ``node`` that the pod does not tolerate."""
    return _untolerated(node.taints, (pod.get("spec") or {}).get("tolerations") or [])


def matches_node_affinity(pod: dict, node: NodeInfo) -> bool:
    """nodeSelector (every label equal) and the required node affinity (``flexq.semantics.selectors``)."""
    return pod_matches_node(pod.get("spec") or {}, node.labels, node.name)


def insufficient(
    requests: Mapping[str, int], node: NodeInfo, used: Mapping[str, int], pods_on_node: int
) -> list[str]:
    """NodeResourcesFit's reasons: ``Too many pods``, then ``Insufficient <resource>``."""
    short = [
        name
        for name, want in requests.items()
        if want > 0 and name != "pods" and want > node.allocatable.get(name, 0) - used.get(name, 0)
    ]
    if len(short) > 1:
        short.sort(key=lambda n: (_FIRST.index(n) if n in _FIRST else len(_FIRST), n))
    out = [f"Insufficient {name}" for name in short]
    if pods_on_node + 1 > node.allocatable.get("pods", DEFAULT_MAX_PODS):
        out.insert(0, MSG_TOO_MANY_PODS)
    return out


@dataclass(frozen=True)
class NodeVerdict:
    """Why a node does not fit (empty reasons: it fits); ``resolvable``: preemption could help."""

    reasons: tuple[str, ...] = ()
    resolvable: bool = False


def filter_node(
    pod: dict, requests: Mapping[str, int], node: NodeInfo, used: Mapping[str, int], pods_on_node: int
) -> NodeVerdict:
    """The default profile's filters, in order; the first that fails decides (as the framework does)."""
    v = static_verdict(pod, node)
    if v is not None:
        return v
    reasons = insufficient(requests, node, used, pods_on_node)
    return NodeVerdict(tuple(reasons), resolvable=True) if reasons else NodeVerdict()


def static_verdict(pod: dict, node: NodeInfo) -> NodeVerdict | None:
    """The filters before NodeResourcesFit (NodeUnschedulable, TaintToleration, NodeAffinity): their
    verdict, or None when the node passes them. Depends only on the node and the pod's tolerations,
    nodeSelector and affinity (``placement_shape``)."""
    if node.unschedulable and not any(
        tolerates(t, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
        for t in (pod.get("spec") or {}).get("tolerations") or []
    ):
        return NodeVerdict((MSG_UNSCHEDULABLE,))
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return NodeVerdict(
            (f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}",)
        )
    if not matches_node_affinity(pod, node):
        return NodeVerdict((MSG_AFFINITY,))
    return None


def placement_shape(pod: dict) -> tuple[str, str, str]:
    """What ``static_verdict`` reads of a pod."""
    spec = pod.get("spec") or {}
    return (repr(spec.get("tolerations")), repr(spec.get("nodeSelector")), repr(spec.get("affinity")))


def fits_on_node(pod: dict, node: NodeInfo, used: Mapping[str, int], pods_on_node: int) -> bool:
    """Whether kube-scheduler's filters let ``pod`` onto ``node`` with ``used`` requested there already."""
    return not filter_node(pod, pod_requests(pod), node, used, pods_on_node).reasons


SliceKey = tuple[str, str]  # (node pool, slice id): one multi-host TPU slice


def hosts_per_slice(node: NodeInfo) -> int:
    """Hosts of one slice of ``node``'s TPU topology (chips of the topology / chips per host); 1 when the node
    has no TPU topology."""
    topology = node.labels.get(LABEL_TPU_TOPOLOGY)
    if not topology:
        return 1
    try:
        chips = prod(int(d) for d in topology.lower().split("x"))
    except ValueError:
        return 1
    per_host = node.allocatable.get(RESOURCE_TPU) or min(chips, 4)
    return max(1, chips // per_host)


def slice_key(node: NodeInfo) -> SliceKey | None:
    """The multi-host TPU slice ``node`` is a host of (None: not a host of a multi-host slice)."""
    if not node.slice or hosts_per_slice(node) <= 1:
        return None
    return (node.labels.get(LABEL_NODEPOOL, ""), node.slice)


def replica_of(pod: dict, requests: Mapping[str, Any]) -> str | None:
    """The KubeRay worker replica a TPU pod is one host of (None: not a replica's TPU host)."""
    if requests.get(RESOURCE_TPU, 0) <= 0:
        return None
    return (pod["metadata"].get("labels") or {}).get(RAY_REPLICA_NAME_LABEL) or None


def off_slice(feasible: Iterable[NodeInfo], bound: Collection[SliceKey]) -> set[str]:
    """The nodes, among those that pass every other filter, that one host of a multi-host replica may not
    take: all the hosts of a replica form one TPU slice (the GKE Ray add-on's TPU webhook and GKE's
    multi-host placement: a slice is one ICI domain; KubeRay's multi-host docs ask for a pod affinity on the
    replica with the slice's node pool as topology). ``bound``: the slices the replica's other hosts are
    bound to. With none bound, the first host goes only to a slice where every host of the replica fits now
    (as many feasible nodes as the slice has hosts), so the others are never left without room on it."""
    nodes = list(feasible)
    if bound:
        return {n.name for n in nodes if slice_key(n) not in bound}
    free: Counter[SliceKey] = Counter()
    for n in nodes:
        k = slice_key(n)
        if k is not None:
            free[k] += 1
    out = set()
    for n in nodes:
        k = slice_key(n)
        if k is not None and free[k] < hosts_per_slice(n):
            out.add(n.name)
    return out


def place_pods(
    pod: dict,
    n: int,
    nodes: list[NodeInfo],
    used: dict[str, dict[str, int]],
    counts: dict[str, int],
) -> list[str] | None:
    """Where ``n`` pods alike (``pod``, the hosts of multi-host replicas when it asks for TPU chips on such nodes)
    would go, first fit by node name, as the twin's scheduler binds them: each replica's hosts together on one
    slice with room for all of them (``off_slice``). The room is taken in ``used`` / ``counts`` (a planner's
    running tally); None, with nothing taken, when they do not all fit."""
    req = pod_requests(pod)
    order = sorted(nodes, key=lambda x: x.name)
    taken: list[str] = []

    def take(x: NodeInfo) -> None:
        u = used[x.name]
        for r, v in req.items():
            u[r] = u.get(r, 0) + v
        counts[x.name] += 1
        taken.append(x.name)

    left = n
    while left > 0:
        feasible = [x for x in order if not filter_node(pod, req, x, used[x.name], counts[x.name]).reasons]
        group: list[NodeInfo] = []
        by_slice: dict[SliceKey, list[NodeInfo]] = {}
        for x in feasible:
            k = slice_key(x)
            if k is not None:
                by_slice.setdefault(k, []).append(x)
        for x in feasible:
            k = slice_key(x)
            if k is None:
                group = [x]
                break
            want = min(hosts_per_slice(x), left)
            if len(by_slice[k]) >= want:
                group = by_slice[k][:want]
                break
        if not group:
            for name in taken:  # nothing taken: the caller's tally is as it was
                u = used[name]
                for r, v in req.items():
                    u[r] = u.get(r, 0) - v
                counts[name] -= 1
            return None
        for x in group:
            take(x)
        left -= len(group)
    return taken
