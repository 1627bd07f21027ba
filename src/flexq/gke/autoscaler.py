"""The cluster autoscaler of a GKE cluster: scale node pools up for unschedulable pods, down when idle.

Owns the scale decisions for ordinary pending pods (ProvisioningRequests are ``provisioning``'s):
  1. Pods the kube-scheduler marked ``PodScheduled=False/Unschedulable``, that do not consume a
     ProvisioningRequest and would not fit on an existing or upcoming node, are packed first-fit onto
     template nodes of each autoscaled, non-queued pool they fit; the pool needing the fewest nodes wins
     (then the cheaper, then the name). Multi-host TPU pools grow in whole slices. The pool's max-nodes
     and the capacity profile bound the scale-up; a stock-out leaves the pods Pending with a
     ``FailedScaleUp`` event and is retried when the profile says capacity may return.
  2. Nodes of autoscaled pools (queued ones included) with no running pod are "unneeded"; after
     ``scale-down-unneeded-time`` (10 min) they are removed, whole slices at a time, down to min-nodes,
     unless a ProvisioningRequest still books them (Provisioned and not BookingExpired): the nodes created
     for it, or, for the OSS classes, the existing nodes its not-yet-bound pods would fill.
Writes: Node objects (create via ``nodes.grow``, delete), the ``unneeded-since`` node annotation, and
``TriggeredScaleUp`` / ``FailedScaleUp`` / ``ScaleDown`` events.

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

from typing import Any

from flexq.api.wellknown import CLUSTER_AUTOSCALER_CONSUME_PR, CONSUME_PROVISIONING_REQUEST
from flexq.gke import catalog
from flexq.gke.cache import GkeCache, cache_for
from flexq.gke.fit import add, fits, is_terminal, node_shape, pack, pod_requests, pool_shape
from flexq.gke.nodes import ANN_CREATED_AT, ANN_SLICE, ANN_UNNEEDED_SINCE, grow, nodes_of, pools_of, shrink
from flexq.gke.provisioning import active_booking, booked_nodes
from flexq.runtime import Context, Controller, Result, Watch
from flexq.store.store import clone

__all__ = ["Autoscaler", "SCALE_DOWN_UNNEEDED_SECONDS", "FAILED_SCALE_UP_BACKOFF_SECONDS", "pending_pods"]

SCALE_DOWN_UNNEEDED_SECONDS = 600.0   # --scale-down-unneeded-time=10m (research/cloud.md §1.5)
SCALE_DOWN_DELAY_AFTER_ADD = 600.0    # --scale-down-delay-after-add=10m
FAILED_SCALE_UP_BACKOFF_SECONDS = 300.0
CONSUME_KEYS = (CONSUME_PROVISIONING_REQUEST, CLUSTER_AUTOSCALER_CONSUME_PR)
KEY = "cluster"


def pending_pods(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods the scheduler could not place, oldest first (the autoscaler's input)."""
    out = []
    for p in pods:
        if (p.get("spec") or {}).get("nodeName") or is_terminal(p) or p["metadata"].get("deletionTimestamp"):
            continue
        cond = next((c for c in (p.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
                    None)
        if cond and cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
            out.append(p)
    return sorted(out, key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))


def _consumes_request(pod: dict[str, Any]) -> bool:
    ann = pod["metadata"].get("annotations") or {}
    return any(k in ann for k in CONSUME_KEYS)


def _hosts(pool: dict[str, Any]) -> int:
    return max(1, pool["status"].get("hostsPerSlice", 1))


def _max_nodes(pool: dict[str, Any]) -> int:
    auto = pool["spec"].get("autoscaling") or {}
    return int(auto.get("maxNodeCount", auto.get("totalMaxNodeCount", 0)) or 0)


def _min_nodes(pool: dict[str, Any]) -> int:
    auto = pool["spec"].get("autoscaling") or {}
    return int(auto.get("minNodeCount", auto.get("totalMinNodeCount", 0)) or 0)


class Autoscaler(Controller):
    """GKE's cluster autoscaler for one cluster (one key: the whole cluster is one decision)."""

    name = "gke-cluster-autoscaler"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.backoff: dict[str, float] = {}  # pool -> no scale-up attempt before this time
        self.explained: dict[str, str] = {}  # pod uid -> last NotTriggerScaleUp message (no repeats)

    def watches(self) -> list[Watch]:
        cluster = self.ctx.settings.get("gkeCluster")
        return [Watch("Pod", lambda ev: [KEY]), Watch("Node", lambda ev: [KEY]),
                Watch("ProvisioningRequest", lambda ev: [KEY]),
                Watch("GkeNodePool", lambda ev: [KEY] if (ev.object["metadata"].get("labels") or {}).get(
                    "gke.twin.flexq.dev/cluster") == cluster else [], source="project")]

    def start(self) -> None:
        self.enqueue(KEY)

    def reconcile(self, key: Any) -> Result | None:
        pools = [p for p in pools_of(self.ctx) if (p["spec"].get("autoscaling") or {}).get("enabled")
                 and p["spec"].get("status") in ("RUNNING", "RECONCILING")]
        nodes = nodes_of(self.ctx)
        cache = cache_for(self.store)
        wake = [self._scale_up(pools, nodes, cache), self._scale_down(pools, nodes, cache)]
        due = [w for w in wake if w is not None]
        return Result(requeue_after=max(0.5, min(due) - self.ctx.now())) if due else None

    # -- 1. scale up -------------------------------------------------------------------------------------------
    def _unhelped(self, pending: list[dict[str, Any]], nodes: list[dict[str, Any]],
                  cache: GkeCache) -> list[dict[str, Any]]:
        """Pending pods that no existing or upcoming node can take (simulated on free capacity)."""
        if not pending:
            return []
        used = dict(cache.used)
        shapes = {n["metadata"]["name"]: node_shape(n) for n in nodes}
        left = []
        for pod in pending:
            req = pod_requests(pod)
            for name, shape in shapes.items():
                if fits(pod, shape, used.get(name, {}), req) is None:
                    used[name] = add(used.get(name, {}), req)
                    break
            else:
                left.append(pod)
        return left

    def _scale_up(self, pools: list[dict[str, Any]], nodes: list[dict[str, Any]],
                  cache: GkeCache) -> float | None:
        now = self.ctx.now()
        pending = cache.pending()
        self._ignore_consumers([p for p in pending if _consumes_request(p)])
        todo = self._unhelped([p for p in pending if not _consumes_request(p)], nodes, cache)
        wake: float | None = None
        count = {p["spec"]["name"]: 0 for p in pools}
        for n in nodes:
            pool_name = n["metadata"]["labels"].get(catalog.LABEL_NODEPOOL, "")
            count[pool_name] = count.get(pool_name, 0) + 1
        while todo:
            options = []
            for pool in pools:
                name = pool["spec"]["name"]
                if pool["status"].get("queued"):
                    continue  # queued pools grow only for ProvisioningRequests
                hosts = _hosts(pool)
                room = (_max_nodes(pool) - count.get(name, 0)) // hosts * hosts
                if room <= 0:
                    continue
                n_nodes, placed = pack(todo, pool_shape(pool), room)
                if not placed:
                    continue
                n_nodes = min(room, -(-n_nodes // hosts) * hosts)
                price = catalog.price_per_hour(catalog.machine_type(pool["spec"]["config"]["machineType"]),
                                               pool["status"]["provisioningModel"])
                options.append((n_nodes, price * n_nodes, name, pool, placed))
            if not options:
                self._explain(todo, pools, count)
                break
            options.sort(key=lambda o: (o[0], o[1], o[2]))
            n_nodes, _, name, pool, placed = options[0]
            placed_names = {p["metadata"]["name"] for p in placed}
            todo = [p for p in todo if p["metadata"]["name"] not in placed_names]
            if self.backoff.get(name, 0.0) > now:
                wake = self.backoff[name] if wake is None else min(wake, self.backoff[name])
                continue
            got = grow(self.ctx, pool, n_nodes)
            if got.ok:
                self.backoff.pop(name, None)
                before = count.get(name, 0)
                count[name] = before + n_nodes
                for p in placed:
                    self.events.record(p, "Normal", "TriggeredScaleUp",
                                       f"pod triggered scale-up: [{{{pool['status'].get('instanceGroup', name)}"
                                       f" {before}->{before + n_nodes} (max: {_max_nodes(pool)})}}]")
            else:
                retry = got.retry_at if got.retry_at is not None else now + FAILED_SCALE_UP_BACKOFF_SECONDS
                self.backoff[name] = retry
                wake = retry if wake is None else min(wake, retry)
                for p in placed:
                    self.events.record(p, "Warning", "FailedScaleUp",
                                       f"Node scale up in zones {pool['status']['zone']} associated with this pod "
                                       f"failed: GCE out of resources. Pod is at risk of not being scheduled.")
        return wake

    def _ignore_consumers(self, pods: list[dict[str, Any]]) -> None:
        """Pods consuming a ProvisioningRequest never trigger ordinary scale-up; say why, as GKE does."""
        for pod in pods:
            ann = pod["metadata"].get("annotations") or {}
            name = next(ann[k] for k in CONSUME_KEYS if k in ann)
            ns = pod["metadata"].get("namespace", "default")
            pr = self.store.try_get("ProvisioningRequest", name, ns)
            if pr is None:
                reason, message = "MissingProvisioningRequest", (
                    f"Unschedulable pod didn't trigger scale-up, because it's consuming ProvisioningRequest "
                    f"{ns}/{name} that does not exist.")
            else:
                states = [c["type"] for c in (pr.get("status") or {}).get("conditions") or []
                          if c.get("status") == "True"]
                state = next((s for s in ("Failed", "Provisioned", "Accepted") if s in states), "Pending")
                if state == "Provisioned":
                    continue  # capacity exists for it; the scheduler will place it
                reason = "FailedProvisioningRequest" if state == "Failed" else "IgnoredInScaleUp"
                message = (f"Unschedulable pod ignored in scale-up loop, because it's consuming ProvisioningRequest "
                           f"{ns}/{name} that is in {state} state. Consider creating pods after observing "
                           "Provisioned condition of ProvisioningRequest.")
            uid = pod["metadata"].get("uid", pod["metadata"]["name"])
            if self.explained.get(uid) != message:
                self.explained[uid] = message
                self.events.record(pod, "Normal" if reason == "IgnoredInScaleUp" else "Warning", reason, message)

    def _explain(self, pods: list[dict[str, Any]], pools: list[dict[str, Any]], count: dict[str, int]) -> None:
        """``NotTriggerScaleUp`` for pods no pool can take, worded as the cluster autoscaler does."""
        for pod in pods:
            reasons: dict[str, int] = {}
            for pool in pools:
                if pool["status"].get("queued"):
                    why = "node group(s) with queued provisioning (nodes only for ProvisioningRequests)"
                elif _max_nodes(pool) - count.get(pool["spec"]["name"], 0) < _hosts(pool):
                    why = "max node group size reached"
                else:
                    why = fits(pod, pool_shape(pool)) or "node group(s) could not fit the pod"
                reasons[why] = reasons.get(why, 0) + 1
            message = "pod didn't trigger scale-up: " + ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
            uid = pod["metadata"].get("uid", pod["metadata"]["name"])
            if reasons and self.explained.get(uid) != message:
                self.explained[uid] = message
                self.events.record(pod, "Normal", "NotTriggerScaleUp", message)

    # -- 2. scale down -----------------------------------------------------------------------------------------
    def _scale_down(self, pools: list[dict[str, Any]], nodes: list[dict[str, Any]],
                    cache: GkeCache) -> float | None:
        now = self.ctx.now()
        busy = cache.busy_nodes()
        busy |= booked_nodes(self.store, nodes, cache)  # OSS bookings hold existing nodes as if their pods ran
        by_pool: dict[str, list[dict[str, Any]]] = {}
        for n in nodes:
            by_pool.setdefault(n["metadata"]["labels"].get(catalog.LABEL_NODEPOOL, ""), []).append(n)
        wake: float | None = None
        for pool in pools:
            pool_nodes = by_pool.get(pool["spec"]["name"], [])
            slices: dict[str, list[dict[str, Any]]] = {}
            for n in pool_nodes:
                slices.setdefault(n["metadata"].get("annotations", {}).get(ANN_SLICE, n["metadata"]["name"]),
                                  []).append(n)
            remaining = len(pool_nodes)
            for slice_id in sorted(slices):
                members = slices[slice_id]
                since = [self._unneeded_since(n, busy, now) for n in members]
                if any(s is None for s in since):
                    continue
                deadline = max(float(s) for s in since if s is not None) + SCALE_DOWN_UNNEEDED_SECONDS
                created = max(float(n["metadata"]["annotations"].get(ANN_CREATED_AT, 0)) for n in members)
                deadline = max(deadline, created + SCALE_DOWN_DELAY_AFTER_ADD)
                if any(active_booking(self.store, n) for n in members) or remaining - len(members) < _min_nodes(pool):
                    continue
                if deadline > now:
                    wake = deadline if wake is None else min(wake, deadline)
                    continue
                for n in members:
                    self.events.record(n, "Normal", "ScaleDown",
                                       "Node removed by cluster autoscaler: empty for "
                                       f"{int(SCALE_DOWN_UNNEEDED_SECONDS // 60)} minutes")
                shrink(self.ctx, members)
                remaining -= len(members)
        return wake

    def _unneeded_since(self, node: dict[str, Any], busy: set[str], now: float) -> float | None:
        """When the node became empty (annotating it the first time it is seen empty), or None if busy."""
        ann = node["metadata"].get("annotations") or {}  # a cache object: copied only to write
        name = node["metadata"]["name"]
        if name in busy:
            if ANN_UNNEEDED_SINCE in ann:
                node = clone(node)
                node["metadata"]["annotations"].pop(ANN_UNNEEDED_SINCE)
                self.store.update(node, validate=False)
            return None
        if ANN_UNNEEDED_SINCE not in ann:
            node = clone(node)
            node["metadata"].setdefault("annotations", {})[ANN_UNNEEDED_SINCE] = repr(now)
            self.store.update(node, validate=False)
            return now
        return float(ann[ANN_UNNEEDED_SINCE])

