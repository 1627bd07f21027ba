"""The twin's kube-scheduler: binds pending pods to nodes.

Owns the ``PodScheduled`` condition of pods (True on binding; False with reason ``Unschedulable`` and
kube-scheduler's FitError message, or ``SchedulingGated`` while ``spec.schedulingGates`` is non-empty),
``spec.nodeName`` (the binding), and the ``Scheduled`` / ``FailedScheduling`` events. Pods that do not fit
wait in an unschedulable set and are retried, highest priority and oldest first, when a node's
scheduling-relevant state changes or a bound pod releases its resources on a node, and then only the
pods that node would now take (kube-scheduler's queueing hints; a pod already hinted and not yet retried is
not hinted again, so each freed node wakes a different pod), and in any case again after
``UNSCHEDULABLE_FLUSH_SECONDS`` (the scheduling queue's flush of pods left unschedulable for
``podMaxInUnschedulablePodsDuration``, 5 minutes). Only pods whose ``schedulerName`` is ``default-scheduler`` are
handled. The hosts of one multi-host TPU replica (KubeRay's ``ray.io/worker-group-replica-name``) are bound
to one slice: the first only where all of them fit, the others beside it (``semantics.nodefit.off_slice``).
Decisions come from the pure ``scheduling`` module over the shared ``ClusterCache``.
Must not import other domain packages.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from flexq.kube.cache import ClusterCache, PodKey, is_terminal, pod_key
from flexq.kube.scheduler_filters import GATED_MESSAGE, Decision, StaticMemo, schedule
from flexq.runtime import Context, Controller, Result, Watch
from flexq.semantics.conditions import find_condition, set_core_condition
from flexq.semantics.nodefit import filter_node, pod_requests, replica_of
from flexq.semantics.pods import pod_updated_for_scheduling
from flexq.store.objects import status_copy
from flexq.store.store import WatchEvent

SCHEDULER_NAME = "default-scheduler"
# pkg/scheduler/backend/queue/scheduling_queue.go DefaultPodMaxInUnschedulablePodsDuration: a pod left unschedulable
# this long is retried even if no event hinted that it might fit now (flushUnschedulablePodsLeftover, every 30 s)
UNSCHEDULABLE_FLUSH_SECONDS = 300.0


def wants_scheduling(pod: dict) -> bool:
    """An unbound, live pod for this scheduler."""
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and not pod["metadata"].get("deletionTimestamp")
        and not is_terminal(pod)
        and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
    )


@dataclass(frozen=True)
class _Waiting:
    """An unschedulable pod: its place in the queue, its requests and its scheduling shape."""

    order: tuple
    requests: dict[str, int]
    shape: int
    replica: tuple[str, str] | None = None  # (namespace, replica) of a multi-host replica's host


def _waiting(key: PodKey, pod: dict, requests: dict[str, int], shapes: dict[tuple, int]) -> _Waiting:
    spec = pod.get("spec") or {}
    order = (-(spec.get("priority") or 0), pod["metadata"].get("creationTimestamp") or "", key)
    shape = (
        tuple(sorted(requests.items())),
        repr(spec.get("nodeSelector")),
        repr(spec.get("affinity")),
        repr(spec.get("tolerations")),
    )
    replica = replica_of(pod, requests)
    return _Waiting(
        order, requests, shapes.setdefault(shape, len(shapes)), None if replica is None else (key[0], replica)
    )


class Scheduler(Controller):
    """One pod per reconcile, as kube-scheduler's scheduleOne."""

    name = SCHEDULER_NAME

    def __init__(self, ctx: Context, cache: ClusterCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.unschedulable: dict[PodKey, _Waiting] = {}
        self._order: list[tuple] = []  # queue orders of unschedulable pods, sorted; may hold stale entries
        self._shapes: dict[tuple, int] = {}  # scheduling shape -> small id
        self._static: StaticMemo = {}  # node -> (its NodeInfo, placement shape -> static filters' verdict)
        self._hinted: set[PodKey] = (
            set()
        )  # unschedulable pods a hint has queued and no reconcile has tried yet
        # an unschedulable pod's last failed attempt: (that version of the pod, the cache's version, its
        # requests, the decision). Retried every UNSCHEDULABLE_FLUSH_SECONDS as upstream's queue does, a pod
        # that nothing has changed for (neither it nor any node, nor what is bound where) gets the same answer
        self._failed: dict[PodKey, tuple[dict, int, dict[str, int], Decision]] = {}
        # unschedulable hosts of multi-host replicas, by replica: a sibling's binding wakes them (the
        # InterPodAffinity plugin's queueing hint on a pod that its affinity now matches)
        self._by_replica: dict[tuple[str, str], set[PodKey]] = {}

    def watches(self) -> list[Watch]:
        return [Watch("Pod", self._pod_keys), Watch("Node", self._node_keys)]

    def _pod_keys(self, ev: WatchEvent) -> Iterable[PodKey]:
        key = pod_key(ev.object)
        keys: list[PodKey] = []
        if (ev.type != "DELETED" and wants_scheduling(ev.object)) or key in self.unschedulable:
            keys.append(key)
        if ev.rv == self.cache.freed[0]:
            keys += self._fitting(self.cache.freed[1])
        if ev.rv == self.cache.replica_bound[0]:
            for k in sorted(self._by_replica.get(self.cache.replica_bound[1], ())):
                if k not in self._hinted:
                    self._hinted.add(k)
                    keys.append(k)
        return keys

    def _node_keys(self, ev: WatchEvent) -> Iterable[PodKey]:
        return self._fitting(ev.object["metadata"]["name"]) if ev.rv == self.cache.node_changed[0] else []

    def _fitting(self, node_name: str) -> list[PodKey]:
        """Unschedulable pods that ``node_name`` would now take, highest priority and oldest first, each
        counted against the room the ones before it would use (kube-scheduler's queueing hints; the pods
        left out could not fit there anyway)."""
        node = self.cache.nodes.get(node_name)
        if node is None:
            return []
        used = Counter(self.cache.used.get(node_name, {}))
        count = self.cache.pod_counts.get(node_name, 0)
        out = []
        alloc = node.allocatable
        failed: set[int] = set()  # pod shapes that did not fit: pods of the same shape will not either
        if len(self._order) > 2 * len(self.unschedulable) + 16:
            self._order = sorted(w.order for w in self.unschedulable.values())
        for order in self._order:
            key = order[-1]
            w = self.unschedulable.get(key)
            if w is None or w.order is not order or w.shape in failed or key in self._hinted:
                continue
            if any(v > alloc.get(r, 0) - used[r] for r, v in w.requests.items()):
                failed.add(w.shape)  # quick reject before the full filters
                continue
            pod = self.cache.pods.get(key)
            if pod is not None and not filter_node(pod, w.requests, node, used, count).reasons:
                out.append(key)
                self._hinted.add(key)
                used.update(w.requests)
                count += 1
            else:
                failed.add(w.shape)
        return out

    def stop(self) -> None:
        self.cache.close()

    def reconcile(self, key: PodKey) -> Result | None:
        self._hinted.discard(key)
        pod = self.cache.pods.get(key)
        if pod is None or not wants_scheduling(pod):
            self._forget(key)
            return None
        if (pod.get("spec") or {}).get("schedulingGates"):
            self._forget(key)
            self._write_condition(pod, "False", "SchedulingGated", GATED_MESSAGE)
            return None
        last = self._failed.get(key)
        # the last decision stands for the cluster as it is and the pod as kube-scheduler's ``isPodUpdated`` sees
        # it (``semantics.pods``: a status write, such as its own PodScheduled=False, changes nothing it decides on)
        if (
            last is not None
            and last[1] == self.cache.version
            and (last[0] is pod or not pod_updated_for_scheduling(last[0], pod))
        ):
            requests, decision = last[2], last[3]
            if key in self.unschedulable:  # a flush's retry: its queue entry was made from this very pod
                if self._write_condition(pod, "False", "Unschedulable", decision.message):
                    self.events.record(pod, "Warning", "FailedScheduling", decision.message)
                return Result(requeue_after=UNSCHEDULABLE_FLUSH_SECONDS)
        else:
            requests = pod_requests(pod)
            if len(self._static) > 2 * len(self.cache.nodes) + 16:  # forget nodes that are gone
                self._static = {n: e for n, e in self._static.items() if n in self.cache.nodes}
            replica = replica_of(pod, requests)
            decision = schedule(
                pod,
                self.cache.nodes.values(),
                self.cache.used,
                self.cache.pod_counts,
                requests,
                self._static,
                None if replica is None else self.cache.replica_slices(key[0], replica),
            )
            if decision.node is None:
                self._failed[key] = (pod, self.cache.version, requests, decision)
        if decision.node is None:
            w = _waiting(key, pod, requests, self._shapes)
            old = self.unschedulable.get(key)
            self.unschedulable[key] = w
            if old is not None and old.order == w.order:
                # keep its queue entry
                w = self.unschedulable[key] = _Waiting(old.order, w.requests, w.shape, w.replica)
            else:
                bisect.insort(self._order, w.order)
            if w.replica is not None:
                self._by_replica.setdefault(w.replica, set()).add(key)
            if self._write_condition(pod, "False", "Unschedulable", decision.message):
                self.events.record(pod, "Warning", "FailedScheduling", decision.message)
            return Result(requeue_after=UNSCHEDULABLE_FLUSH_SECONDS)
        self._forget(key)
        self._bind(pod, decision.node)
        return None

    def _forget(self, key: PodKey) -> None:
        self._hinted.discard(key)
        self._failed.pop(key, None)
        w = self.unschedulable.pop(key, None)  # its entry in _order is skipped, then compacted away
        if w is not None and w.replica is not None:
            waiting = self._by_replica.get(w.replica)
            if waiting is not None:
                waiting.discard(key)
                if not waiting:
                    del self._by_replica[w.replica]

    def _bind(self, pod: dict, node: str) -> None:
        """The ``pods/binding`` subresource: ``spec.nodeName`` and ``PodScheduled=True`` in one write, as the API
        server's ``BindingREST`` sets both (``setPodNodeAndMetadata``)."""
        obj = status_copy(pod)  # the stored pod is read-only: status copied, metadata and spec one level deep
        obj["spec"]["nodeName"] = node
        st = obj.setdefault("status", {})
        st.setdefault("phase", "Pending")
        set_core_condition(
            st.setdefault("conditions", []), "PodScheduled", "True", None, None, self.ctx.now(), probe=True
        )
        bound = self.store.update(obj, take=True, with_status=True)
        m = pod["metadata"]
        self.events.record(
            bound, "Normal", "Scheduled", f"Successfully assigned {m['namespace']}/{m['name']} to {node}"
        )

    def _write_condition(self, pod: dict, status: str, reason: str | None, message: str | None) -> bool:
        """Set PodScheduled; True when it changed (and was written)."""
        cur = find_condition(pod, "PodScheduled")
        if (
            cur is not None
            and cur.get("status") == status
            and cur.get("reason") == reason
            and cur.get("message") == message
        ):
            return False
        obj = status_copy(pod)  # the pod is read-only (stored): its status copied deeply, the rest shared
        st = obj.setdefault("status", {})
        st.setdefault("phase", "Pending")
        conds = st.setdefault("conditions", [])
        set_core_condition(conds, "PodScheduled", status, reason, message, self.ctx.now(), probe=True)
        if status == "False":
            conds.sort(key=lambda c: c.get("type") != "PodScheduled")
        self.store.update_status(obj, take=True)
        return True
