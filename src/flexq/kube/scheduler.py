"""The twin's kube-scheduler: binds pending pods to nodes.

Owns the ``PodScheduled`` condition of pods (True on binding; False with reason ``Unschedulable`` and
kube-scheduler's FitError message, or ``SchedulingGated`` while ``spec.schedulingGates`` is non-empty),
``spec.nodeName`` (the binding), and the ``Scheduled`` / ``FailedScheduling`` events. Pods that do not fit
wait in an unschedulable set and are retried, highest priority and oldest first, when a node's
scheduling-relevant state changes or a bound pod releases its resources (kube-scheduler's queueing
hints, without the periodic flush). Only pods whose ``schedulerName`` is ``default-scheduler`` are
handled. Decisions come from the pure ``scheduling`` module over the shared ``ClusterCache``.
Must not import other domain packages.
"""

from __future__ import annotations

from collections.abc import Iterable

from flexq.kube.cache import ClusterCache, PodKey, is_terminal, pod_key
from flexq.kube.conditions import get_condition, set_condition
from flexq.kube.scheduling import GATED_MESSAGE, schedule
from flexq.runtime import Context, Controller, Result, Watch
from flexq.store.store import WatchEvent, clone

SCHEDULER_NAME = "default-scheduler"


def wants_scheduling(pod: dict) -> bool:
    """An unbound, live pod for this scheduler."""
    spec = pod.get("spec") or {}
    return not spec.get("nodeName") and not pod["metadata"].get("deletionTimestamp") and not is_terminal(pod) \
        and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME


class Scheduler(Controller):
    """One pod per reconcile, as kube-scheduler's scheduleOne."""

    name = SCHEDULER_NAME

    def __init__(self, ctx: Context, cache: ClusterCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.unschedulable: set[PodKey] = set()

    def watches(self) -> list[Watch]:
        return [Watch("Pod", self._pod_keys), Watch("Node", self._node_keys)]

    def _pod_keys(self, ev: WatchEvent) -> Iterable[PodKey]:
        key = pod_key(ev.object)
        keys: list[PodKey] = []
        if (ev.type != "DELETED" and wants_scheduling(ev.object)) or key in self.unschedulable:
            keys.append(key)
        if ev.rv == self.cache.freed_rv:
            keys += self._retry_order()
        return keys

    def _node_keys(self, ev: WatchEvent) -> Iterable[PodKey]:
        return self._retry_order() if ev.rv == self.cache.node_changed_rv else []

    def _retry_order(self) -> list[PodKey]:
        def order(key: PodKey) -> tuple:
            pod = self.cache.pods.get(key) or {"metadata": {}, "spec": {}}
            return (-((pod.get("spec") or {}).get("priority") or 0),
                    pod["metadata"].get("creationTimestamp") or "", key)

        return sorted(self.unschedulable, key=order)

    def stop(self) -> None:
        self.cache.close()

    def reconcile(self, key: PodKey) -> Result | None:
        pod = self.cache.pods.get(key)
        if pod is None or not wants_scheduling(pod):
            self.unschedulable.discard(key)
            return None
        if (pod.get("spec") or {}).get("schedulingGates"):
            self.unschedulable.discard(key)
            self._write_condition(pod, "False", "SchedulingGated", GATED_MESSAGE)
            return None
        decision = schedule(pod, self.cache.nodes.values(), self.cache.used, self.cache.pod_counts)
        if decision.node is None:
            self.unschedulable.add(key)
            if self._write_condition(pod, "False", "Unschedulable", decision.message):
                self.events.record(pod, "Warning", "FailedScheduling", decision.message)
            return None
        self.unschedulable.discard(key)
        self._bind(pod, decision.node)
        return None

    def _bind(self, pod: dict, node: str) -> None:
        obj = clone(pod)
        obj["spec"]["nodeName"] = node
        bound = self.store.update(obj, validate=False)
        self._write_condition(bound, "True", None, None)
        m = pod["metadata"]
        self.events.record(bound, "Normal", "Scheduled", f"Successfully assigned {m['namespace']}/{m['name']} to {node}")

    def _write_condition(self, pod: dict, status: str, reason: str | None, message: str | None) -> bool:
        """Set PodScheduled; True when it changed (and was written)."""
        cur = get_condition(pod, "PodScheduled")
        if cur is not None and cur.get("status") == status and cur.get("reason") == reason \
                and cur.get("message") == message:
            return False
        obj = clone(pod)
        st = obj.setdefault("status", {})
        st.setdefault("phase", "Pending")
        conds = st.setdefault("conditions", [])
        set_condition(conds, "PodScheduled", status, reason, message, self.ctx.now(), probe=True)
        if status == "False":
            conds.sort(key=lambda c: c.get("type") != "PodScheduled")
        self.store.update_status(obj)
        return True
