"""GKE nodes: building them, creating and removing them within the capacity profile, and their lifecycle.

Owns: the Node objects of GKE node pools — names (``gke-<cluster>-<pool>-<group>-<4>``), labels and taints
(``flexq.api.gke_catalog``), capacity and allocatable; ``NodeWriter``, the one object per cluster through which
every GKE Node is created or deleted (``grow``: whole slices at once, or nothing, when the profile allows;
``shrink``; a pool consuming a declared specific reservation takes from the reservation alone), holding the cluster's ``GkeCache`` and ``CapacitySource`` the registry made; ``PoolController`` (a pool's fixed size, its initial and minimum nodes, and
removing the nodes of a deleted pool); ``NodeLifecycle`` (the only writer of a GKE node's ``Ready``
condition: False until its provisioning delay has passed, then True; spot preemption and the flex-start
run-duration limit delete the node). Scale decisions for pending pods live in ``autoscaler``, for
ProvisioningRequests in ``provisioning``.

Must not import other domain packages or flexq.http.
"""

from __future__ import annotations

import contextlib
import ipaddress
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.core_defaults import kubelet_ids
from flexq.api.gke_models import specific_reservation
from flexq.clock import format_time
from flexq.errors import NotFound
from flexq.gke.cache import GkeCache
from flexq.gke.capacity import CapacityModel, Obtain
from flexq.gke.fit import pool_shape
from flexq.gke.pool_limits import hosts_per_slice, min_nodes
from flexq.gke.project import CapacitySource
from flexq.gke.storage import NODE_POOL, pool_key
from flexq.runtime import Context, Controller, Result, Watch
from flexq.semantics.nodefit import ANN_SLICE  # one name: what the scheduler reads, the node pools write
from flexq.store.objects import status_copy
from flexq.store.store import WatchEvent, clone

__all__ = [
    "ANN_READY_AT",
    "ANN_PREEMPT_AT",
    "ANN_DELETE_AT",
    "pools_of",
    "pool_of",
    "peek_pool",
    "capacity_model_name",
    "NodeWriter",
    "PoolController",
    "NodeLifecycle",
    "cluster_names",
    "KERNEL_VERSION",
]

ANN_READY_AT = "gke.twin.flexq.dev/ready-at"
ANN_PREEMPT_AT = "gke.twin.flexq.dev/preempt-at"
ANN_DELETE_AT = "gke.twin.flexq.dev/delete-at"
ANN_CREATED_AT = "gke.twin.flexq.dev/created-at"
_ALNUM = "bcdfghjklmnpqrstvwxz2456789"
# The kernel of the Container-Optimized OS image GKE 1.34 nodes boot (COS 121 LTS) [twin choice of patch].
KERNEL_VERSION = "6.6.97+"


_POOLS = "gke.nodes.pools"  # ctx.memo: (project, location, cluster) -> (project store version, pools)


def cluster_names(ctx: Context) -> tuple[str, str, str]:
    """(project, location, cluster) of the GKE cluster this context belongs to."""
    s = ctx.cluster_settings
    return s.gke_project, s.gke_location, s.gke_cluster or ctx.cluster


def pools_of(ctx: Context) -> list[dict[str, Any]]:
    """This cluster's node pool objects (project store), oldest first. Read-only: the stored objects
    themselves (``pool_of`` gives a copy to change)."""
    assert ctx.project is not None
    project, location, cluster = cluster_names(ctx)
    # the answer changes only when the project store does (every write moves its resourceVersion)
    memo = ctx.memo.setdefault(_POOLS, {})
    rv = ctx.project.resource_version
    hit = memo.get((project, location, cluster))
    if hit is not None and hit[0] == rv:
        return list(hit[1])
    pools = ctx.project.peek_list(
        NODE_POOL,
        labels={
            "gke.twin.flexq.dev/project": project,
            "gke.twin.flexq.dev/location": location,
            "gke.twin.flexq.dev/cluster": cluster,
        },
    )
    out = sorted(pools, key=lambda p: (p["status"].get("createdAt", 0.0), p["spec"]["name"]))
    memo[(project, location, cluster)] = (rv, out)
    return list(out)


def pool_of(ctx: Context, name: str) -> dict[str, Any] | None:
    """This cluster's node pool ``name`` (a copy), or None."""
    assert ctx.project is not None
    project, location, cluster = cluster_names(ctx)
    obj: dict[str, Any] | None = ctx.project.try_get(NODE_POOL, pool_key(project, location, cluster, name))
    return obj


def peek_pool(ctx: Context, name: str) -> dict[str, Any] | None:
    """``pool_of`` without the copy: the stored object itself, read-only."""
    assert ctx.project is not None
    project, location, cluster = cluster_names(ctx)
    obj: dict[str, Any] | None = ctx.project.peek(NODE_POOL, pool_key(project, location, cluster, name))
    return obj


def capacity_model_name(pool: dict[str, Any]) -> str:
    """The profile's provisioning model for a pool: on-demand, spot, flex-start or queued."""
    return "queued" if pool["status"].get("queued") else pool["status"]["provisioningModel"]


def _reservation(cap: CapacityModel, pool: dict[str, Any]) -> str | None:
    """The declared reservation ``pool`` consumes (``flexq.gke.capacity.specific_reservation``), or None."""
    name = specific_reservation(pool["spec"].get("config"))
    return name if name is not None and cap.reservation(name) is not None else None


def _in_use(ctx: Context, cache: GkeCache, pool: dict[str, Any], cap: CapacityModel) -> int:
    """Nodes (this cluster) that take from what ``pool`` takes from: for a pool consuming a declared reservation,
    the nodes of every pool consuming it; else those of the same machine type, provisioning model and zone that
    no declared reservation holds."""
    mt = pool["spec"]["config"]["machineType"]
    model = capacity_model_name(pool)
    by_name = {p["spec"]["name"]: p for p in pools_of(ctx)}
    reserved = {name: _reservation(cap, p) for name, p in by_name.items()}
    mine = reserved.get(pool["spec"]["name"])
    count = 0
    for n in cache.node_list():
        name = n["metadata"]["labels"].get(catalog.LABEL_NODEPOOL, "")
        other = by_name.get(name)
        if other is None:
            continue
        if mine is not None:
            count += reserved[name] == mine
        elif (
            reserved[name] is None
            and other["spec"]["config"]["machineType"] == mt
            and capacity_model_name(other) == model
            and other["status"]["zone"] == pool["status"]["zone"]
        ):
            count += 1
    return count


def _internal_ip(ctx: Context, cache: GkeCache) -> str:
    """The lowest free address of the cluster's node range (its subnetwork's primary range; the network and
    gateway addresses, .0 and .1, are GCE's), as GCE hands out internal IPs."""
    net = ipaddress.ip_network(ctx.cluster_settings.gke_node_cidr or "10.128.0.0/20", strict=False)
    used = cache.internal_ips  # kept per Node event: not gathered again from every node for each new one
    first = int(net.network_address)
    for offset in range(2, net.num_addresses - 1):
        x = first + offset
        candidate = (
            f"{x >> 24}.{(x >> 16) & 255}.{(x >> 8) & 255}.{x & 255}"
            if net.version == 4
            else str(net.network_address + offset)
        )
        if candidate not in used:
            return candidate
    raise RuntimeError(f"node range {net} is exhausted")  # GCE would refuse the VM; 4,000 nodes per /20


def _build_node(
    ctx: Context,
    cache: GkeCache,
    pool: dict[str, Any],
    name: str,
    now: float,
    ready_at: float,
    slice_id: str,
    extra_labels: dict[str, str],
    extra_annotations: dict[str, str],
) -> dict[str, Any]:
    spec, twin = pool["spec"], pool["status"]
    cfg = spec["config"]
    mt = catalog.machine_type(cfg["machineType"])
    shape = pool_shape(pool)  # the real node has the template node's shape
    labels = {**shape.labels, "kubernetes.io/hostname": name, **extra_labels}
    version = spec.get("version", "1.34.1-gke.1829001")
    addresses = [{"type": "InternalIP", "address": _internal_ip(ctx, cache)}]
    if not (spec.get("networkConfig") or {}).get("enablePrivateNodes"):
        ip = ctx.rng("gke/nodes/external-ip")  # its own stream: node names and slices draw as before
        addresses.append(
            {
                "type": "ExternalIP",
                "address": f"34.{ip.randint(0, 255)}.{ip.randint(0, 255)}.{ip.randint(1, 254)}",
            }
        )
    addresses.append({"type": "Hostname", "address": name})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                ANN_READY_AT: repr(ready_at),
                ANN_CREATED_AT: repr(now),
                ANN_SLICE: slice_id,
                "container.googleapis.com/instance_id": str(ctx.rng("gke/nodes").getrandbits(63)),
                **extra_annotations,
            },
        },
        "spec": {
            "taints": [dict(t) for t in shape.taints],
            "providerID": f"gce://{ctx.cluster_settings.gke_project}/{twin['zone']}/{name}",
        },
        "status": {
            "capacity": catalog.capacity(mt),
            "allocatable": catalog.allocatable(mt),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "KubeletNotReady",
                    "message": "container runtime status check may not have completed yet",
                    "lastHeartbeatTime": format_time(now),
                    "lastTransitionTime": format_time(now),
                }
            ],
            "addresses": addresses,
            "nodeInfo": {
                "kubeletVersion": f"v{version}",
                "kubeProxyVersion": f"v{version}",
                "kernelVersion": KERNEL_VERSION,
                "containerRuntimeVersion": "containerd://1.7.28",
                "osImage": "Container-Optimized OS from Google",
                "architecture": "amd64",
                "operatingSystem": "linux",
                **kubelet_ids(name),
            },
        },
    }


class NodeWriter:
    """The one writer of one cluster's GKE Node objects: every controller that creates or deletes a node
    (pools' fixed and minimum sizes, the autoscaler, ProvisioningRequests, the VM's end) goes through it.
    Reads go to the cluster's ``GkeCache`` (``nodes``: shared objects, clone before changing one)."""

    def __init__(self, ctx: Context, cache: GkeCache, capacity: CapacitySource) -> None:
        self.ctx, self.cache, self.capacity = ctx, cache, capacity

    def nodes(self, pool: str | None = None) -> list[dict[str, Any]]:
        """GKE nodes of this cluster (of one pool), by name. Read-only: the cache's own objects."""
        return self.cache.node_list(pool)

    def grow(
        self,
        pool: dict[str, Any],
        count: int,
        *,
        extra_labels: dict[str, str] | None = None,
        extra_annotations: dict[str, str] | None = None,
        draw_key: str = "",
    ) -> Obtain:
        """Create ``count`` nodes (whole slices) in ``pool`` if the capacity profile allows all of them now.
        ``draw_key`` names what the scale-up is for (a job, a ProvisioningRequest): each slice's provisioning delay
        (and spot preemption time) is then drawn from a stream of that name, so the same request gets the same
        delays whatever else the cluster created before (common random numbers across variants); without it,
        from the cluster's node stream."""
        return _grow(
            self.ctx,
            self.cache,
            self.capacity,
            pool,
            count,
            extra_labels=extra_labels,
            extra_annotations=extra_annotations,
            draw_key=draw_key,
        )

    def shrink(self, nodes: list[dict[str, Any]]) -> None:
        """Delete the given nodes (the VMs are gone; pods bound to them are the kube side's to clean up)."""
        for n in nodes:
            with contextlib.suppress(NotFound):
                self.ctx.store.delete("Node", n["metadata"]["name"])


def _grow(
    ctx: Context,
    cache: GkeCache,
    capacity: CapacitySource,
    pool: dict[str, Any],
    count: int,
    *,
    extra_labels: dict[str, str] | None = None,
    extra_annotations: dict[str, str] | None = None,
    draw_key: str = "",
) -> Obtain:
    now = ctx.now()
    project = ctx.cluster_settings.gke_project
    spec, twin = pool["spec"], pool["status"]
    model = capacity_model_name(pool)
    cap = capacity.model()
    reservation = _reservation(cap, pool)
    if reservation is not None:  # a specific reservation: its size, never a stock-out
        got = cap.can_obtain_reserved(
            reservation,
            twin["zone"],
            spec["config"]["machineType"],
            in_use=_in_use(ctx, cache, pool, cap),
            want=count,
            pool=spec["name"],
        )
    else:
        got = cap.can_obtain(
            twin["zone"],
            spec["config"]["machineType"],
            model,
            now,
            in_use=_in_use(ctx, cache, pool, cap),
            want=count,
            project=project,
        )
    if not got.ok:
        return got
    rng = ctx.rng("gke/nodes")
    delays = ctx.rng(f"gke/nodes/delays/{spec['name']}/{draw_key}") if draw_key else rng
    hosts = max(1, twin.get("hostsPerSlice", 1))
    base = twin.get("instanceGroup") or f"gke-{ctx.cluster}-{spec['name']}"
    base = base[:52]
    slice_id = ""
    preempt_at: float | None = None
    for i in range(count):
        if i % hosts == 0:
            slice_id = "".join(rng.choice(_ALNUM) for _ in range(6))
            # a slice comes up as one unit: every host shares the slice's provisioning delay
            ready_at = now + cap.provision_seconds(
                twin["zone"], spec["config"]["machineType"], model, delays, now
            )
            # ... and goes as one unit: a preempted host takes its whole multi-host slice with it
            # (research/cloud.md §2.5), so one preemption time is drawn per slice
            preempt_at = (
                cap.preemption_time(twin["zone"], spec["config"]["machineType"], model, ready_at, delays)
                if model == catalog.SPOT
                else None
            )
        name = f"{base}-{''.join(rng.choice(_ALNUM) for _ in range(4))}"
        while ctx.store.peek("Node", name) is not None:  # GCE's instance names are unique in a group
            name = f"{base}-{''.join(rng.choice(_ALNUM) for _ in range(4))}"
        annotations = dict(extra_annotations or {})
        if preempt_at is not None:
            annotations[ANN_PREEMPT_AT] = repr(preempt_at)
        if model == catalog.FLEX_START and not twin.get("queued"):
            max_run = spec["config"].get("maxRunDuration")
            seconds = float(max_run.rstrip("s")) if max_run else 7 * 86400.0
            annotations[ANN_DELETE_AT] = repr(ready_at + seconds)
        node = _build_node(ctx, cache, pool, name, now, ready_at, slice_id, extra_labels or {}, annotations)
        ctx.store.create(node, keep_status=True)
    return got


def _pool_key_of_node(ev: WatchEvent) -> list[str]:
    pool = (ev.object["metadata"].get("labels") or {}).get(catalog.LABEL_NODEPOOL)
    return [pool] if pool else []


def _slices(nodes: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    by: dict[str, list[dict[str, Any]]] = {}
    for n in nodes:
        by.setdefault(n["metadata"].get("annotations", {}).get(ANN_SLICE, n["metadata"]["name"]), []).append(
            n
        )
    return sorted(
        by.values(),
        key=lambda s: (
            float(s[0]["metadata"]["annotations"].get(ANN_CREATED_AT, 0)),
            s[0]["metadata"]["name"],
        ),
    )


class PoolController(Controller):
    """Keeps each pool's node count where GKE keeps it without the autoscaler: the fixed size of a pool
    without autoscaling (``initialNodeCount`` or the last setSize), the initial nodes and the minimum of an
    autoscaled pool, and no nodes at all once the pool is being deleted. Writes Node objects (create/delete)
    and the pool's ``status.initialized``, ``status.currentNodeCount`` and ``spec.conditions`` (GCE_STOCKOUT)."""

    name = "gke-node-pools"

    def __init__(self, ctx: Context, writer: NodeWriter) -> None:
        super().__init__(ctx)
        self.writer = writer

    def watches(self) -> list[Watch]:
        _, _, cluster = cluster_names(self.ctx)

        def pool_keys(ev: WatchEvent) -> list[str]:
            labels = ev.object["metadata"].get("labels") or {}
            return [ev.object["spec"]["name"]] if labels.get("gke.twin.flexq.dev/cluster") == cluster else []

        return [Watch(NODE_POOL, pool_keys, source="project"), Watch("Node", _pool_key_of_node)]

    def start(self) -> None:
        for n in self.writer.nodes():
            self.enqueue(n["metadata"]["labels"][catalog.LABEL_NODEPOOL])

    def reconcile(self, key: Any) -> Result | None:
        name = str(key)
        pool = peek_pool(self.ctx, name)  # read-only
        nodes = self.writer.nodes(name)
        if pool is None or pool["spec"].get("status") == "STOPPING":
            self.writer.shrink(nodes)
            return None
        if pool["spec"].get("status") == "PROVISIONING":
            return None
        auto = pool["spec"].get("autoscaling") or {}
        hosts = hosts_per_slice(pool)
        if auto.get("enabled"):
            want = min_nodes(pool)
            if not pool["status"].get("initialized"):
                want = max(want, pool["spec"].get("initialNodeCount", 0))
            if pool["status"].get("queued"):
                want = 0  # queued pools only grow for ProvisioningRequests
            result, stockout = self._at_least(pool, nodes, want)
        else:
            want = pool["status"].get("desiredNodeCount", 0)
            result, stockout = self._at_least(pool, nodes, want)
            if len(nodes) > want:
                extra = len(nodes) - want
                victims = [n for s in reversed(_slices(nodes)) for n in s][
                    : ((extra + hosts - 1) // hosts) * hosts
                ]
                self.writer.shrink(victims)
        self._write_pool_status(name, result, stockout)
        return result

    def _at_least(
        self, pool: dict[str, Any], nodes: list[dict[str, Any]], want: int
    ) -> tuple[Result | None, str]:
        """Create the missing nodes; on a stock-out, (when to look again, GCE's message)."""
        missing = want - len(nodes)
        if missing <= 0:
            return None, ""
        got = self.writer.grow(pool, missing)
        if got.ok:
            return None, ""
        return Result(
            requeue_after=max(1.0, (got.retry_at or self.ctx.now() + 300) - self.ctx.now())
        ), got.message

    def _write_pool_status(self, name: str, result: Result | None, stockout: str) -> None:
        cur = peek_pool(self.ctx, name)  # read-only: copied below, one level, only when it changes
        if cur is None:
            return
        count = self.writer.cache.pool_sizes.get(name, 0)
        status = dict(cur["status"], currentNodeCount=count)
        if result is None:
            status["initialized"] = True
        conditions = [{"code": "GCE_STOCKOUT", "message": stockout}] if stockout else None
        if status == cur["status"] and cur["spec"].get("conditions") == conditions:
            return
        pool = dict(cur, metadata=dict(cur["metadata"]), spec=dict(cur["spec"]))
        pool["status"] = status
        if conditions:
            pool["spec"]["conditions"] = conditions
        else:
            pool["spec"].pop("conditions", None)
        assert self.ctx.project is not None
        self.ctx.project.update(pool, take=True)


class NodeLifecycle(Controller):
    """Node readiness and the VM's end: Ready=True once ``ready-at`` has passed (the only writer of GKE
    nodes' Ready condition); deletion at ``preempt-at`` (spot) or ``delete-at`` (flex-start run limit)."""

    name = "gke-node-lifecycle"

    def __init__(self, ctx: Context, writer: NodeWriter) -> None:
        super().__init__(ctx)
        self.writer = writer

    def watches(self) -> list[Watch]:
        return [
            Watch(
                "Node",
                lambda ev: (
                    [ev.object["metadata"]["name"]]
                    if ev.type != "DELETED"
                    and ANN_READY_AT in (ev.object["metadata"].get("annotations") or {})
                    else []
                ),
            )
        ]

    def reconcile(self, key: Any) -> Result | None:
        node = self.store.peek("Node", str(key))  # read-only (copied before it is changed)
        if node is None:
            return None
        ann = node["metadata"].get("annotations") or {}
        now = self.ctx.now()
        ends = [float(ann[k]) for k in (ANN_PREEMPT_AT, ANN_DELETE_AT) if k in ann]
        if ends and min(ends) <= now:
            reason = (
                "Preempted"
                if ANN_PREEMPT_AT in ann and float(ann[ANN_PREEMPT_AT]) <= now
                else "MaxRunDuration"
            )
            self.events.record(
                node,
                "Warning",
                reason,
                f"Node {node['metadata']['name']} was deleted: "
                + (
                    "the spot VM was preempted"
                    if reason == "Preempted"
                    else "the flex-start VM reached its maximum run duration"
                ),
            )
            self.writer.shrink([clone(node)])
            return None
        ready_at = float(ann.get(ANN_READY_AT, now))
        cond = next((c for c in node["status"].get("conditions", []) if c["type"] == "Ready"), None)
        if now >= ready_at and (cond is None or cond["status"] != "True"):
            conds = [c for c in node["status"].get("conditions", []) if c["type"] != "Ready"]
            conds.append(
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": format_time(now),
                    "lastTransitionTime": format_time(now),
                }
            )
            node = status_copy(node)
            node["status"]["conditions"] = conds
            self.store.update_status(node, take=True)
        pending = [t for t in [ready_at, *ends] if t > now]
        return Result(requeue_after=min(pending) - now) if pending else None
