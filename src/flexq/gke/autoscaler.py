"""The cluster autoscaler of a GKE cluster: scale node pools up for unschedulable pods, down when idle.

Owns the scale decisions for ordinary pending pods (ProvisioningRequests are ``provisioning``'s):
  1. Pods the kube-scheduler marked ``PodScheduled=False/Unschedulable``, that do not consume a
     ProvisioningRequest and would not fit on an existing or upcoming node, are packed first-fit onto
     template nodes of each autoscaled, non-queued pool they fit; the pool needing the fewest nodes wins
     (then the cheaper, then the name). Multi-host TPU pools grow in whole slices. The pool's max-nodes
     and the capacity profile bound the scale-up; a stock-out leaves the pods Pending with a
     ``FailedScaleUp`` event and is retried when the profile says capacity may return.
     Pools bound to a custom ComputeClass (``compute_class``) are ranked by the class's priority rules
     instead (the priority expander); a stocked-out option is skipped for the cluster autoscaler's
     node-group backoff (5 min doubling to 30) and the next rule scales up in the same pass; when every
     rule is backed off the pods get ``NotTriggerScaleUp`` (``N in backoff after failed scale-up``).
  1b. ``activeMigration.optimizeRulePriority``: a slice on a lower rule whose pods a higher rule's pool can
     take now gets a new slice there; the old one is cordoned and its pods evicted (``ActiveMigration``).
  2. Nodes of autoscaled pools (queued ones included) with no running pod are "unneeded"; after
     ``scale-down-unneeded-time`` (10 min) they are removed, whole slices at a time, down to min-nodes
     (never a slice with a node annotated ``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"``),
     unless a ProvisioningRequest still books them (Provisioned and not BookingExpired): the nodes created
     for it, or, for the OSS classes, the existing nodes its not-yet-bound pods would fill. When a node
     became unneeded is kept in memory, as the cluster autoscaler's ``unneededNodes`` is (not written to the
     Node: a restarted autoscaler starts each idle node's 10 minutes afresh, as upstream's does).
Writes: Node objects (create and delete through the cluster's ``NodeWriter``; cordon),
Pod deletions (active migration), and ``TriggeredScaleUp`` / ``FailedScaleUp`` / ``NotTriggerScaleUp`` /
``ActiveMigration`` / ``ScaleDown`` events.

Step 1b is ``gke.migration``'s, step 2 ``gke.scaledown``'s; a pool's size limits are ``gke.pool_limits``', the
ComputeClass options' backoff ``gke.scaleup_backoff``'s.

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.wellknown import (
    CLUSTER_AUTOSCALER_CONSUME_PR,
    CONSUME_PROVISIONING_REQUEST,
    RAY_REPLICA_NAME_LABEL,
)
from flexq.errors import NotFound
from flexq.gke.cache import GkeCache
from flexq.gke.compute_class import (
    class_of_pool,
    rule_index,
)
from flexq.gke.fit import NodeShape, add, fits, node_shape, pack, pool_shape, resource_misfit, static_misfit
from flexq.gke.migration import Migrator
from flexq.gke.nodes import NodeWriter, pools_of
from flexq.gke.pool_limits import hosts_per_slice, max_nodes
from flexq.gke.scaledown import ScaleDown
from flexq.gke.scaleup_backoff import NodeGroupBackoff
from flexq.gke.timing import (
    FAILED_SCALE_UP_BACKOFF_SECONDS,
)
from flexq.runtime import Context, Controller, Result, Watch
from flexq.semantics.nodefit import NodeInfo, SliceKey, node_info, off_slice, replica_of, slice_key
from flexq.semantics.pods import is_terminal

__all__ = ["Autoscaler"]

CONSUME_KEYS = (CONSUME_PROVISIONING_REQUEST, CLUSTER_AUTOSCALER_CONSUME_PR)
KEY = "cluster"
_IDLE_POD: tuple = (None, False, False, (None, None), None)  # a pending pod no decision reads (or none)


def _placement_key(pod: dict[str, Any], req: dict[str, Any]) -> tuple:
    """What decides where a pod may go in the simulation: its requests, node selector, affinity, tolerations."""
    spec = pod.get("spec") or {}
    return (
        tuple(sorted(req.items())),
        repr(spec.get("nodeSelector")),
        repr(spec.get("affinity")),
        repr(spec.get("tolerations")),
    )


def _same_objects(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """The same objects (by identity: stored versions are read-only), in the same order."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _consumes_request(pod: dict[str, Any]) -> bool:
    ann = pod["metadata"].get("annotations") or {}
    return any(k in ann for k in CONSUME_KEYS)


class Autoscaler(Controller):
    """GKE's cluster autoscaler for one cluster (one key: the whole cluster is one decision)."""

    name = "gke-cluster-autoscaler"

    def __init__(self, ctx: Context, writer: NodeWriter) -> None:
        super().__init__(ctx)
        self.writer = writer
        self.backoff = NodeGroupBackoff()  # pool -> no scale-up attempt before a time
        self.explained: dict[str, str] = {}  # pod uid -> last NotTriggerScaleUp message (no repeats)
        self._pod_sig: dict[tuple[str, str], tuple] = {}  # what of each pod a decision reads (see _pod_event)
        self.scale_down = ScaleDown(self.store, self.events, ctx.now, writer)  # 2.: idle nodes removed
        self.migration = Migrator(self.store, self.events, ctx.now, writer, self.backoff)  # 1b.
        # The scheduling simulation's inputs change far less often than the autoscaler is woken (a pod's status
        # write, a Node's Ready, a ProvisioningRequest's condition): its answers are kept for the versions of
        # what they read, stored objects being read-only (a write replaces the object, never changes it).
        self._node_shapes: dict[str, tuple[dict[str, Any], NodeShape]] = {}  # node -> (its version, shape)
        self._pool_shapes: dict[str, tuple[dict[str, Any], NodeShape]] = {}  # pool -> (its version, shape)
        self._unhelped_memo: tuple[int, int, list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._candidates: tuple[int, dict[int, list[tuple[str, NodeShape]]]] = (-1, {})
        # node -> the scheduler's view of it (its slice), per node version
        self._infos: tuple[int, dict[str, NodeInfo | None]] = (-1, {})
        # pod -> (its version, the id of its placement key); placement key -> its id
        self._sigs: dict[tuple[str, str], tuple[dict[str, Any], int]] = {}
        self._sig_ids: dict[tuple, int] = {}
        self._packed: dict[str, tuple[dict[str, Any], int, list[dict[str, Any]], tuple[int, list]]] = {}

    def watches(self) -> list[Watch]:
        cluster = self.ctx.cluster_settings.gke_cluster
        return [
            Watch("Pod", self._pod_event),
            Watch("Node", lambda ev: [KEY]),
            Watch("ProvisioningRequest", lambda ev: [KEY]),
            Watch(
                "GkeNodePool",
                lambda ev: (
                    [KEY]
                    if (ev.object["metadata"].get("labels") or {}).get("gke.twin.flexq.dev/cluster")
                    == cluster
                    else []
                ),
                source="project",
            ),
        ]

    def _pod_event(self, ev: Any) -> list[str]:
        """Wake the autoscaler for a pod change that its decisions can see: an unschedulable pod (any change
        of it), a pod bound to or leaving a node (the nodes' used capacity, busy nodes, migration movers), a
        ProvisioningRequest consumer. A running pod's status updates change none of these, so they are not
        a reason to pass over every node and pending pod again (the scale-down and backoff deadlines have
        their own timers)."""
        md = ev.object["metadata"]
        key = (md.get("namespace") or "default", md["name"])
        if ev.type == "DELETED":
            old = self._pod_sig.pop(key, _IDLE_POD)
            return [KEY] if old != _IDLE_POD else []
        pod = ev.object
        node = (pod.get("spec") or {}).get("nodeName")
        ann = md.get("annotations") or {}
        unschedulable = not node and any(
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
            for c in (pod.get("status") or {}).get("conditions") or ()
        )
        sig = (
            node,
            is_terminal(pod),
            bool(md.get("deletionTimestamp")),
            tuple(ann.get(k) for k in CONSUME_KEYS),
            md.get("resourceVersion") if unschedulable else None,
        )
        if sig == _IDLE_POD:
            self._pod_sig.pop(key, None)
            old = _IDLE_POD
        else:
            old = self._pod_sig.get(key, _IDLE_POD)
            self._pod_sig[key] = sig
        return [KEY] if old != sig else []

    def start(self) -> None:
        self.enqueue(KEY)

    def reconcile(self, key: Any) -> Result | None:
        pools = [
            p
            for p in pools_of(self.ctx)
            if (p["spec"].get("autoscaling") or {}).get("enabled")
            and p["spec"].get("status") in ("RUNNING", "RECONCILING")
        ]
        cache = self.writer.cache
        nodes_version = cache.node_version
        nodes = self.writer.nodes()
        wake = [
            self._scale_up(pools, nodes, cache),
            self.migration.run(pools, nodes, cache),
            self.scale_down.run(pools, nodes, cache, nodes_version),
        ]
        due = [w for w in wake if w is not None]
        return Result(requeue_after=max(0.5, min(due) - self.ctx.now())) if due else None

    # -- 1. scale up -------------------------------------------------------------------------------------------
    def _unhelped(
        self, pending: list[dict[str, Any]], nodes: list[dict[str, Any]], cache: GkeCache
    ) -> list[dict[str, Any]]:
        """Pending pods that no existing or upcoming node can take (simulated on free capacity)."""
        if not pending:
            return []
        memo = self._unhelped_memo
        if (
            memo is not None
            and memo[0] == cache.node_version
            and memo[1] == cache.used_version
            and _same_objects(memo[2], pending)
        ):
            return list(memo[3])  # the same pods, nodes and used capacity: the same answer
        used = dict(cache.used)
        if self._candidates[0] != cache.node_version:
            self._candidates = (cache.node_version, {})
        candidates = self._candidates[1]
        left = []
        # The simulation only fills nodes, so a pod that fit nowhere rules out every later pod that asks for
        # the same and may go to the same nodes: those are not tried again (same answer, without the cost
        # of pending pods x nodes when many identical pods wait).
        no_room: set[int] = set()
        replicas: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for pod in pending:
            rep = replica_of(pod, cache.requests_of(pod))
            if rep is not None:
                replicas.setdefault((pod["metadata"].get("namespace") or "default", rep), []).append(pod)
        done: set[tuple[str, str]] = set()
        bound: dict[tuple[str, str], set[SliceKey | None]] = {}
        if replicas:  # the slices the replicas' hosts already bound are on (one pass over the live pods)
            for p in cache.pods.values():
                on = (p.get("spec") or {}).get("nodeName")
                rep = (p["metadata"].get("labels") or {}).get(RAY_REPLICA_NAME_LABEL)
                key = (p["metadata"].get("namespace") or "default", rep)
                if on and rep and key in replicas and not is_terminal(p):
                    bound.setdefault(key, set()).add(self._slice_of(on, cache))
        for pod in pending:
            req = cache.requests_of(pod)
            sig = self._placement(pod, req)
            rep = replica_of(pod, req)
            group = (pod["metadata"].get("namespace") or "default", rep) if rep is not None else None
            if group is not None:
                # the hosts of one multi-host replica: all of them on one slice, as kube-scheduler binds them
                if group in done:
                    continue
                done.add(group)
                hosts = replicas[group]
                fits_one = self._place_replica(
                    hosts, bound.get(group, set()), sig, nodes, used, candidates, cache
                )
                if not fits_one:
                    left += hosts
                continue
            if sig in no_room:
                left.append(pod)
                continue
            for name, shape in self._shapes(pod, sig, nodes, candidates):
                if resource_misfit(req, shape, used.get(name)) is None:
                    used[name] = add(used.get(name, {}), req)
                    break
            else:
                no_room.add(sig)
                left.append(pod)
        self._unhelped_memo = (cache.node_version, cache.used_version, pending, left)
        return list(left)

    def _shapes(
        self, pod: dict[str, Any], sig: int, nodes: list[dict[str, Any]], candidates: dict[int, list]
    ) -> list[tuple[str, NodeShape]]:
        """The nodes whose labels and taints the pod's placement accepts, in ``nodes`` order (the same for every
        pod of that placement, until a Node changes): only their free resources are looked at."""
        shapes = candidates.get(sig)
        if shapes is None:
            shapes = candidates[sig] = [
                (n["metadata"]["name"], shape)
                for n in nodes
                if static_misfit(pod, shape := self._node_shape(n)) is None
            ]
        return shapes

    def _node_info(self, name: str, cache: GkeCache) -> NodeInfo | None:
        """The scheduler's view of node ``name`` (``semantics.nodefit.node_info``), kept per node version."""
        if self._infos[0] != cache.node_version:
            self._infos = (cache.node_version, {})
        infos = self._infos[1]
        if name not in infos:
            node = cache.nodes.get(name)
            infos[name] = node_info(node) if node is not None else None
        return infos[name]

    def _slice_of(self, name: str, cache: GkeCache) -> SliceKey | None:
        """The multi-host slice node ``name`` is a host of (the scheduler's ``slice_key``)."""
        info = self._node_info(name, cache)
        return slice_key(info) if info is not None else None

    def _place_replica(
        self,
        hosts: list[dict[str, Any]],
        bound: set[SliceKey | None],
        sig: int,
        nodes: list[dict[str, Any]],
        used: dict[str, Any],
        candidates: dict[int, list],
        cache: GkeCache,
    ) -> bool:
        """Whether the pending ``hosts`` of one replica can all be bound as kube-scheduler binds them: one by one,
        first fit in node order, each among the nodes with room the one-slice rule leaves it
        (``semantics.nodefit.off_slice``: the first host only on a slice where every host fits, the others beside
        the ones bound, ``bound``). The room is taken in ``used`` only when all of them are placed."""
        shapes = self._shapes(hosts[0], sig, nodes, candidates)
        taken: set[SliceKey] = {k for k in bound if k is not None}
        trial: dict[str, Any] = {}
        for host in hosts:
            req = cache.requests_of(host)
            if taken:  # ``off_slice`` bars every node off the slices taken: only theirs are looked at
                on = (s for s in shapes if self._slice_of(s[0], cache) in taken)
                name = next(
                    (n for n, sh in on if resource_misfit(req, sh, trial.get(n, used.get(n))) is None), None
                )
            else:
                room = [
                    (name, info)
                    for name, shape in shapes
                    if resource_misfit(req, shape, trial.get(name, used.get(name))) is None
                    and (info := self._node_info(name, cache)) is not None
                ]
                barred = off_slice([info for _, info in room], taken)
                name = next((n for n, _ in room if n not in barred), None)
            if name is None:
                return False
            trial[name] = add(trial.get(name, used.get(name, {})), req)
            key = self._slice_of(name, cache)
            if key is not None:
                taken = {key}
        used.update(trial)
        return True

    def _placement(self, pod: dict[str, Any], req: dict[str, Any]) -> int:
        """An id of the ``_placement_key`` of a stored pod, kept for that version of it."""
        md = pod["metadata"]
        key = (md.get("namespace") or "default", md["name"])
        hit = self._sigs.get(key)
        if hit is not None and hit[0] is pod:
            return hit[1]
        if len(self._sigs) > 2 * len(self.writer.cache.unschedulable) + 64:  # forget pods no longer pending
            self._sigs = {k: e for k, e in self._sigs.items() if k in self.writer.cache.unschedulable}
        placement = _placement_key(pod, req)
        sig = self._sig_ids.get(placement)
        if sig is None:  # a small id per distinct placement: hashed once, not on every lookup of every pass
            sig = self._sig_ids[placement] = len(self._sig_ids)
        self._sigs[key] = (pod, sig)
        return sig

    def _node_shape(self, node: dict[str, Any]) -> NodeShape:
        """``node_shape`` of a stored Node, kept for that version of it."""
        if len(self._node_shapes) > 2 * len(self.writer.cache.nodes) + 16:  # forget nodes that are gone
            self._node_shapes = {n: e for n, e in self._node_shapes.items() if n in self.writer.cache.nodes}
        return _per_version(self._node_shapes, node["metadata"]["name"], node, node_shape)

    def _pool_shape(self, pool: dict[str, Any]) -> NodeShape:
        """``pool_shape`` of a stored node pool, kept for that version of it."""
        return _per_version(self._pool_shapes, pool["spec"]["name"], pool, pool_shape)

    def _pack(self, pods: list[dict[str, Any]], pool: dict[str, Any], room: int) -> tuple[int, list]:
        """``pack`` onto the pool's template nodes, kept while the pods, the pool and the room are the same."""
        name = pool["spec"]["name"]
        hit = self._packed.get(name)
        if hit is not None and hit[0] is pool and hit[1] == room and _same_objects(hit[2], pods):
            return hit[3][0], list(hit[3][1])
        cache = self.writer.cache
        requests = [cache.requests_of(p) for p in pods]
        placements = [self._placement(p, r) for p, r in zip(pods, requests, strict=True)]
        out = pack(pods, self._pool_shape(pool), room, requests, placements)
        self._packed[name] = (pool, room, list(pods), out)
        return out[0], list(out[1])

    def _scale_up(
        self, pools: list[dict[str, Any]], nodes: list[dict[str, Any]], cache: GkeCache
    ) -> float | None:
        now = self.ctx.now()
        pending = cache.pending()
        self._ignore_consumers([p for p in pending if _consumes_request(p)])
        todo = self._unhelped([p for p in pending if not _consumes_request(p)], nodes, cache)
        wake: float | None = None
        if not todo:
            return wake
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
                hosts = hosts_per_slice(pool)
                room = (max_nodes(pool) - count.get(name, 0)) // hosts * hosts
                if room <= 0:
                    continue
                n_nodes, placed = self._pack(todo, pool, room)
                if not placed:
                    continue
                n_nodes = min(room, -(-n_nodes // hosts) * hosts)
                price = catalog.price_per_hour(
                    catalog.machine_type(pool["spec"]["config"]["machineType"]),
                    pool["status"]["provisioningModel"],
                )
                options.append((n_nodes, price * n_nodes, name, pool, placed))
            if not options:
                self._explain(todo, pools, count)
                break
            options = self._rank(options)
            if not options:
                self._explain(todo, pools, count)
                break
            n_nodes, _, name, pool, placed = options[0]
            cls = class_of_pool(pool)
            if cls is not None:
                # the priority expander over a ComputeClass: options in backoff are skipped, the first
                # remaining rule wins; when every rule is backed off, wait for the earliest to expire
                ready = [
                    o
                    for o in options
                    if class_of_pool(o[3]) == cls and self.backoff.until.get(o[2], 0.0) <= now
                ]
                if not ready:
                    mine = [o for o in options if class_of_pool(o[3]) == cls]
                    soonest = min(self.backoff.until.get(o[2], now) for o in mine)
                    wake = soonest if wake is None else min(wake, soonest)
                    placed_names = {p["metadata"]["name"] for p in placed}
                    todo = [p for p in todo if p["metadata"]["name"] not in placed_names]
                    self._explain_backoff(placed, len(mine))
                    continue
                n_nodes, _, name, pool, placed = ready[0]
            placed_names = {p["metadata"]["name"] for p in placed}
            if cls is None:
                todo = [p for p in todo if p["metadata"]["name"] not in placed_names]
            if self.backoff.until.get(name, 0.0) > now:
                wake = self.backoff.until[name] if wake is None else min(wake, self.backoff.until[name])
                self._explain_backoff(placed, 1)
                continue
            got = self.writer.grow(pool, n_nodes, draw_key=self._draw_key(placed))
            if got.ok:
                self.backoff.reset(name)
                before = count.get(name, 0)
                count[name] = before + n_nodes
                if cls is not None:
                    todo = [p for p in todo if p["metadata"]["name"] not in placed_names]
                for p in placed:
                    self.events.record(
                        p,
                        "Normal",
                        "TriggeredScaleUp",
                        f"pod triggered scale-up: [{{{pool['status'].get('instanceGroup', name)}"
                        f" {before}->{before + n_nodes} (max: {max_nodes(pool)})}}]",
                    )
            else:
                retry = got.retry_at if got.retry_at is not None else now + FAILED_SCALE_UP_BACKOFF_SECONDS
                if cls is not None:
                    backed = self.backoff.after_failure(
                        self.store.peek("ComputeClass", cls), pool, retry, now
                    )
                    if backed is None:  # a flex-start rule still inside capacityCheckWaitTimeSeconds: hold
                        todo = [p for p in todo if p["metadata"]["name"] not in placed_names]
                        held = self.backoff.until[name]
                        wake = held if wake is None else min(wake, held)
                        continue
                    retry = backed
                self.backoff.until[name] = retry
                wake = retry if wake is None else min(wake, retry)
                # a specific reservation all in use is not the zone out of resources: its own words (flexq's
                # framing around GKE's message; a stock-out breaker must not read it as one)
                cause = got.message.rstrip(".") if got.reservation else "GCE out of resources"
                for p in placed:
                    self.events.record(
                        p,
                        "Warning",
                        "FailedScaleUp",
                        f"Node scale up in zones {pool['status']['zone']} associated with this pod "
                        f"failed: {cause}. Pod is at risk of not being scheduled.",
                    )
        return wake

    def _draw_key(self, pods: list[dict[str, Any]]) -> str:
        """What a scale-up is for, stable across runs of one traffic: the job of the first of its pods (a Ray
        pod's RayJob through its RayCluster, else the pod's owner, else the pod), so the same job's scale-ups get
        the same provisioning delays in every variant (``NodeWriter.grow``'s ``draw_key``)."""
        if not pods:
            return ""
        pod = min(pods, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))
        md = pod["metadata"]
        ns, labels = md.get("namespace", "default"), md.get("labels") or {}
        rc = labels.get("ray.io/cluster")
        if rc:
            cluster = None
            with contextlib.suppress(NotFound):  # RayCluster not served (no RayOperator addon)
                cluster = self.store.peek("RayCluster", rc, ns)
            origin = ((cluster or {}).get("metadata", {}).get("labels") or {}).get(
                "ray.io/originated-from-cr-name"
            )
            return f"{ns}/RayJob/{origin}" if origin else f"{ns}/RayCluster/{rc}"
        owners = md.get("ownerReferences") or []
        if owners:
            return f"{ns}/{owners[0].get('kind', '')}/{owners[0].get('name', '')}"
        return f"{ns}/Pod/{md['name']}"

    def _explain_backoff(self, pods: list[dict[str, Any]], n: int) -> None:
        """Every option of the pods' ComputeClass is backed off: say so, as the cluster autoscaler does."""
        message = f"pod didn't trigger scale-up: {n} in backoff after failed scale-up"
        for pod in pods:
            uid = pod["metadata"].get("uid", pod["metadata"]["name"])
            if self.explained.get(uid) != message:
                self.explained[uid] = message
                self.events.record(pod, "Normal", "NotTriggerScaleUp", message)

    def _rank(self, options: list) -> list:
        """Order scale-up options: ComputeClass pools by rule priority (pools the class may not use are
        dropped), other pools as before (fewest nodes, then cheapest, then name)."""
        out = []
        for o in options:
            cls = class_of_pool(o[3])
            if cls is None:
                out.append(((1, "", 0, o[0], o[1], o[2]), o))
                continue
            cc = self.store.peek("ComputeClass", cls)
            idx = rule_index(cc, o[3]) if cc is not None else None
            if idx is not None:
                out.append(((0, cls, idx, o[0], o[1], o[2]), o))
        out.sort(key=lambda t: t[0])
        return [o for _, o in out]

    def _ignore_consumers(self, pods: list[dict[str, Any]]) -> None:
        """Pods consuming a ProvisioningRequest never trigger ordinary scale-up; say why, as GKE does."""
        for pod in pods:
            ann = pod["metadata"].get("annotations") or {}
            name = next(ann[k] for k in CONSUME_KEYS if k in ann)
            ns = pod["metadata"].get("namespace", "default")
            pr = self.store.try_get("ProvisioningRequest", name, ns)
            if pr is None:
                reason, message = (
                    "MissingProvisioningRequest",
                    (
                        f"Unschedulable pod didn't trigger scale-up, because it's consuming ProvisioningRequest "
                        f"{ns}/{name} that does not exist."
                    ),
                )
            else:
                states = [
                    c["type"]
                    for c in (pr.get("status") or {}).get("conditions") or []
                    if c.get("status") == "True"
                ]
                state = next((s for s in ("Failed", "Provisioned", "Accepted") if s in states), "Pending")
                if state == "Provisioned":
                    continue  # capacity exists for it; the scheduler will place it
                reason = "FailedProvisioningRequest" if state == "Failed" else "IgnoredInScaleUp"
                message = (
                    f"Unschedulable pod ignored in scale-up loop, because it's consuming ProvisioningRequest "
                    f"{ns}/{name} that is in {state} state. Consider creating pods after observing "
                    "Provisioned condition of ProvisioningRequest."
                )
            uid = pod["metadata"].get("uid", pod["metadata"]["name"])
            if self.explained.get(uid) != message:
                self.explained[uid] = message
                self.events.record(
                    pod, "Normal" if reason == "IgnoredInScaleUp" else "Warning", reason, message
                )

    def _explain(
        self, pods: list[dict[str, Any]], pools: list[dict[str, Any]], count: dict[str, int]
    ) -> None:
        """``NotTriggerScaleUp`` for pods no pool can take, worded as the cluster autoscaler does."""
        for pod in pods:
            reasons: dict[str, int] = {}
            for pool in pools:
                if pool["status"].get("queued"):
                    why = "node group(s) with queued provisioning (nodes only for ProvisioningRequests)"
                elif max_nodes(pool) - count.get(pool["spec"]["name"], 0) < hosts_per_slice(pool):
                    why = "max node group size reached"
                else:
                    why = fits(pod, self._pool_shape(pool)) or "node group(s) could not fit the pod"
                reasons[why] = reasons.get(why, 0) + 1
            message = "pod didn't trigger scale-up: " + ", ".join(
                f"{n} {why}" for why, n in sorted(reasons.items())
            )
            uid = pod["metadata"].get("uid", pod["metadata"]["name"])
            if reasons and self.explained.get(uid) != message:
                self.explained[uid] = message
                self.events.record(pod, "Normal", "NotTriggerScaleUp", message)


def _per_version(
    memo: dict[str, tuple[dict[str, Any], NodeShape]],
    name: str,
    obj: dict[str, Any],
    make: Callable[[dict[str, Any]], NodeShape],
) -> NodeShape:
    """``make(obj)``, kept for that version of the stored object (the store replaces an object on every write,
    so the same object is the same version)."""
    hit = memo.get(name)
    if hit is not None and hit[0] is obj:
        return hit[1]
    value = make(obj)
    memo[name] = (obj, value)
    return value
