"""kube-scheduler's decision for one pod, as pure functions over a snapshot of nodes.

Owns: ``NodeInfo`` (what the scheduler reads of a Node: labels, the taints it has or is given for being
NotReady / unschedulable, allocatable as integers), ``pod_requests`` (the API server's defaulting of
requests from limits, init containers, overhead), the default profile's filters in their order —
NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and required affinity with In / NotIn /
Exists / DoesNotExist / Gt / Lt and ``metadata.name`` fields), NodeResourcesFit (pods, cpu, memory,
extended resources such as ``google.com/tpu``) —, a LeastAllocated score with the node name as tie-break,
and ``FitError``'s message: ``0/3 nodes are available: 1 node(s) didn't match Pod's node
affinity/selector, 2 Insufficient google.com/tpu. preemption: 0/3 nodes are available: 1 No preemption
victims found for incoming pod, 2 Preemption is not helpful for scheduling.`` (reasons counted and sorted
as strings, as ``FitError.Error()`` does). Pure: must not import the store, the runtime or other domains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from flexq.api.quantity import resource_value
from flexq.api.wellknown import NOT_READY_TAINT, UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT
from flexq.semantics.resources import pod_request_values
from flexq.semantics.selectors import pod_matches_node
from flexq.semantics.taints import tolerates
from flexq.semantics.taints import untolerated_taint as _untolerated

DEFAULT_MAX_PODS = 110  # kubelet's --max-pods default, when a Node reports no "pods" allocatable

MSG_UNSCHEDULABLE = "node(s) were unschedulable"
MSG_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
MSG_TOO_MANY_PODS = "Too many pods"
MSG_NO_NODES = "no nodes available to schedule pods"
PREEMPT_NOT_HELPFUL = "Preemption is not helpful for scheduling"
PREEMPT_NO_VICTIMS = "No preemption victims found for incoming pod"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
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


StaticMemo = dict[str, tuple[NodeInfo, dict[tuple[str, str, str], NodeVerdict | None]]]


def least_allocated_score(requests: Mapping[str, int], node: NodeInfo, used: Mapping[str, int]) -> int:
    """NodeResourcesFit's LeastAllocated over cpu and memory (0..100, higher = emptier after placing)."""
    scores = []
    for name in ("cpu", "memory"):
        cap = node.allocatable.get(name, 0)
        if cap <= 0:
            scores.append(0)
            continue
        free = cap - used.get(name, 0) - requests.get(name, 0)
        scores.append(max(0, free) * 100 // cap)
    return sum(scores) // len(scores)


@dataclass
class Decision:
    """The outcome of one scheduling attempt: a node, or the FitError message."""

    node: str | None
    message: str = ""
    reasons: dict[str, NodeVerdict] = field(default_factory=dict)


def fit_error_message(total: int, verdicts: Iterable[NodeVerdict]) -> str:
    """``FitError.Error()`` followed by the default preemption plugin's verdict."""
    if total == 0:
        return MSG_NO_NODES
    vs = list(verdicts)
    hist: Counter[str] = Counter(r for v in vs for r in v.reasons)
    msg = f"0/{total} nodes are available: " + ", ".join(sorted(f"{n} {r}" for r, n in hist.items())) + "."
    pre: Counter[str] = Counter(PREEMPT_NO_VICTIMS if v.resolvable else PREEMPT_NOT_HELPFUL for v in vs)
    return (
        msg
        + f" preemption: 0/{total} nodes are available: "
        + ", ".join(sorted(f"{n} {r}" for r, n in pre.items()))
        + "."
    )


def schedule(
    pod: dict,
    nodes: Iterable[NodeInfo],
    used: Mapping[str, Mapping[str, int]],
    pod_counts: Mapping[str, int],
    requests: Mapping[str, int] | None = None,
    memo: StaticMemo | None = None,
) -> Decision:
    """Pick a node for ``pod``: filter every node, score the feasible ones, highest score then name wins.
    ``memo`` (kept by the caller across calls) remembers ``static_verdict`` per node version and pod
    placement shape, so only NodeResourcesFit is evaluated again for pods shaped alike."""
    requests = pod_requests(pod) if requests is None else requests
    verdicts: dict[str, NodeVerdict] = {}
    best: tuple[int, str] | None = None
    empty: dict[str, int] = {}
    shape = placement_shape(pod) if memo is not None else None
    for node in nodes:
        u = used.get(node.name, empty)
        if memo is None or shape is None:
            v = filter_node(pod, requests, node, u, pod_counts.get(node.name, 0))
        else:
            entry = memo.get(node.name)
            if entry is None or entry[0] is not node:
                entry = memo[node.name] = (node, {})
            if shape in entry[1]:
                sv = entry[1][shape]
            else:
                sv = entry[1][shape] = static_verdict(pod, node)
            if sv is not None:
                v = sv
            else:
                reasons = insufficient(requests, node, u, pod_counts.get(node.name, 0))
                v = NodeVerdict(tuple(reasons), resolvable=True) if reasons else NodeVerdict()
        if v.reasons:
            verdicts[node.name] = v
            continue
        score = least_allocated_score(requests, node, u)
        if best is None or (-score, node.name) < (-best[0], best[1]):
            best = (score, node.name)
    if best is not None:
        return Decision(best[1])
    return Decision(None, fit_error_message(len(verdicts), verdicts.values()), verdicts)
