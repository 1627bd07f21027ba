"""kube-scheduler's decision for one pod, as pure functions over a snapshot of nodes.

Owns: ``NodeInfo`` (what the scheduler reads of a Node: labels, the taints it has or is given for being
NotReady / unschedulable, allocatable as integers), ``pod_requests`` (the API server's defaulting of
requests from limits, init containers, overhead), the default profile's filters in their order —
NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and required affinity with In / NotIn /
Exists / DoesNotExist / Gt / Lt and ``metadata.name`` fields), NodeResourcesFit (pods, cpu, memory,
extended resources such as ``google.com/tpu``) —, the one-slice rule of a multi-host TPU replica's hosts
(``off_slice``, reported as InterPodAffinity's ``node(s) didn't match pod affinity rules``), a LeastAllocated score with the node name as tie-break,
and ``FitError``'s message: ``0/3 nodes are available: 1 node(s) didn't match Pod's node
affinity/selector, 2 Insufficient google.com/tpu. preemption: 0/3 nodes are available: 1 No preemption
victims found for incoming pod, 2 Preemption is not helpful for scheduling.`` (reasons counted and sorted
as strings, as ``FitError.Error()`` does). Pure: must not import the store, the runtime or other domains. The node filters live in
``flexq.semantics.nodefit`` (flexq's fallback plans with the same rule): import them from there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from flexq.semantics.nodefit import (  # the filters themselves: one rule, shared with flexq's fallback
    MSG_SLICE,
    NodeInfo,
    NodeVerdict,
    SliceKey,
    filter_node,
    insufficient,
    off_slice,
    placement_shape,
    pod_requests,
    static_verdict,
)

MSG_NO_NODES = "no nodes available to schedule pods"
PREEMPT_NOT_HELPFUL = "Preemption is not helpful for scheduling"
PREEMPT_NO_VICTIMS = "No preemption victims found for incoming pod"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"

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
    bound_slices: Collection[SliceKey] | None = None,
) -> Decision:
    """Pick a node for ``pod``: filter every node, score the feasible ones, highest score then name wins.
    ``memo`` (kept by the caller across calls) remembers ``static_verdict`` per node version and pod
    placement shape, so only NodeResourcesFit is evaluated again for pods shaped alike. ``bound_slices``
    (a host of a multi-host replica, ``replica_of``): the slices its sibling hosts are bound to, for the
    one-slice rule (``off_slice``); None for any other pod."""
    requests = pod_requests(pod) if requests is None else requests
    verdicts: dict[str, NodeVerdict] = {}
    feasible: list[tuple[int, NodeInfo]] = []
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
        feasible.append((least_allocated_score(requests, node, u), node))
    if bound_slices is not None and feasible:
        ruled_out = off_slice((n for _, n in feasible), bound_slices)
        if ruled_out:
            for _, n in feasible:
                if n.name in ruled_out:
                    verdicts[n.name] = NodeVerdict((MSG_SLICE,))
            feasible = [(sc, n) for sc, n in feasible if n.name not in ruled_out]
    best: tuple[int, str] | None = None
    for score, node in feasible:
        if best is None or (-score, node.name) < (-best[0], best[1]):
            best = (score, node.name)
    if best is not None:
        return Decision(best[1])
    return Decision(None, fit_error_message(len(verdicts), verdicts.values()), verdicts)


__all__ = [
    "MSG_NO_NODES",
    "GATED_MESSAGE",
    "Decision",
    "StaticMemo",
    "least_allocated_score",
    "fit_error_message",
    "schedule",
]
