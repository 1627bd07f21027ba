"""The GKE resources of one twin project as stored, and their long-running operations.

Owns: where a cluster, a node pool and an operation live in the ``GkeStorage`` (plain dicts, ``flexq.gke.storage``),
the operation records (``RUNNING`` until ``settle(now)`` finishes them once their duration has passed; one at a
time per cluster; a node-pool upgrade can be canceled and rolled back) and the writes of an update's plan
(``flexq.gke.updates`` decides; its immediate fields now, the rest when the operation ends).
``flexq.gke.backend`` (the API's verbs) builds on it. Must not import flexq.runtime, other domain packages or
flexq.http.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from flexq.api.wellknown import GKE_CLUSTER_LABEL
from flexq.clock import format_time
from flexq.gke.storage import CLUSTER, NODE_POOL, OPERATION, GkeStorage, cluster_key, envelope, pool_key
from flexq.gke.update_requests import CancelOperationRequest, ClusterUpdate
from flexq.gke.updates import UpdatePlan, plan_update
from flexq.gke.validation import not_found, parse_body, precondition

__all__ = [
    "GkeResources",
    "LABEL_PROJECT",
    "LABEL_LOCATION",
    "LABEL_CLUSTER",
    "API",
    "OperationTimes",
    "merge",
]

LABEL_PROJECT = "gke.twin.flexq.dev/project"
LABEL_LOCATION = "gke.twin.flexq.dev/location"
LABEL_CLUSTER = GKE_CLUSTER_LABEL  # (the fallback reads a twin's node pools by it)
API = "https://container.googleapis.com/v1"
OperationTimes = Callable[[str], float]  # "create_cluster" | "delete_cluster" | ... -> seconds


def merge(spec: dict[str, Any], patch: dict[str, Any]) -> None:
    """Merge a plan's fields into a resource's JSON: None removes a field, a dict merges one level down."""
    for key, value in patch.items():
        if value is None:
            spec.pop(key, None)
        elif isinstance(value, dict) and isinstance(spec.get(key), dict) and key == "config":
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = copy.deepcopy(value)


def _default_op_times(op: str) -> float:
    return {
        "create_cluster": 5.0,
        "delete_cluster": 3.0,
        "create_node_pool": 3.0,
        "delete_node_pool": 2.0,
        "update": 1.0,
        "upgrade": 20.0,
    }[op]


class GkeResources:
    """All GKE resources of one project. Every public method takes ``now`` (epoch seconds)."""

    def __init__(
        self,
        storage: GkeStorage,
        rng: random.Random,
        *,
        project_number: str = "123456789012",
        op_times: OperationTimes = _default_op_times,
        server: Callable[[], tuple[str | None, str | None]] | None = None,
    ) -> None:
        self.storage, self.rng, self.project_number, self.op_times = storage, rng, project_number, op_times
        self.server = server  # -> (endpoint host:port, CA as base64) of the served Kubernetes API, if any

    # -- naming -----------------------------------------------------------------------------------------------
    @staticmethod
    def _cluster_path(project: str, location: str, cluster: str) -> str:
        return f"projects/{project}/locations/{location}/clusters/{cluster}"

    def _get_cluster_obj(self, project: str, location: str, cluster: str) -> dict[str, Any]:
        obj = self.storage.get(CLUSTER, cluster_key(project, location, cluster))
        if obj is None:
            raise not_found(self._cluster_path(project, location, cluster))
        return obj

    def _get_pool_obj(self, project: str, location: str, cluster: str, pool: str) -> dict[str, Any]:
        self._get_cluster_obj(project, location, cluster)
        obj = self.storage.get(NODE_POOL, pool_key(project, location, cluster, pool))
        if obj is None:
            raise not_found(f"{self._cluster_path(project, location, cluster)}/nodePools/{pool}")
        return obj

    def _fixed_nodes(self, project: str, location: str, cluster: str, but: str | None = None) -> int:
        """The nodes the cluster's pools (but ``but``) are sized to: their desired counts."""
        return sum(
            int((p.get("status") or {}).get("desiredNodeCount") or 0)
            for p in self._pools_of(project, location, cluster)
            if p["spec"].get("name") != but
        )

    def _pools_of(self, project: str, location: str, cluster: str) -> list[dict[str, Any]]:
        objs = self.storage.list(
            NODE_POOL, {LABEL_PROJECT: project, LABEL_LOCATION: location, LABEL_CLUSTER: cluster}
        )
        return sorted(objs, key=lambda o: o["status"].get("createdAt", 0.0))

    def _labels(self, project: str, location: str, cluster: str) -> dict[str, str]:
        return {LABEL_PROJECT: project, LABEL_LOCATION: location, LABEL_CLUSTER: cluster}

    # -- operations -----------------------------------------------------------------------------------------
    def _operation(
        self,
        project: str,
        location: str,
        op_type: str,
        target: str,
        now: float,
        duration: float,
        effect: dict[str, Any],
    ) -> dict[str, Any]:
        name = f"operation-{int(now * 1000)}-{self.rng.getrandbits(32):08x}"
        zonal = location.count("-") >= 2
        spec: dict[str, Any] = {
            "name": name,
            "operationType": op_type,
            "status": "RUNNING",
            "selfLink": f"{API}/projects/{self.project_number}/{'zones' if zonal else 'locations'}/{location}"
            f"/operations/{name}",
            "targetLink": f"{API}/projects/{self.project_number}/{'zones' if zonal else 'locations'}/{location}"
            f"/{target}",
            "startTime": format_time(now),
            "location": location,
            "zone": location,
        }
        obj = envelope(
            OPERATION,
            f"{project}.{location}.{name}",
            spec,
            {"doneAt": now + duration, "effect": effect},
            {LABEL_PROJECT: project, LABEL_LOCATION: location},
        )
        self.storage.put(obj)
        return spec

    def _busy(self, project: str, location: str, cluster: str) -> None:
        """GKE runs one operation at a time per cluster (node pool creation may queue; the twin refuses)."""
        for op in self.storage.list(OPERATION, {LABEL_PROJECT: project, LABEL_LOCATION: location}):
            eff = op["status"].get("effect", {})
            if op["spec"]["status"] == "RUNNING" and eff.get("cluster") == cluster:
                raise precondition(f"Cluster is running incompatible operation {op['spec']['name']}.")

    def settle(self, now: float) -> float | None:
        """Finish every operation due by ``now``; return when the next one is due (None if none)."""
        nxt: float | None = None
        for op in self.storage.list(OPERATION):
            if op["spec"]["status"] != "RUNNING":
                continue
            due = op["status"]["doneAt"]
            if due <= now:
                self._finish(op, now)
            else:
                nxt = due if nxt is None else min(nxt, due)
        return nxt

    def _finish(self, op: dict[str, Any], now: float) -> None:
        eff = op["status"]["effect"]
        project, location, cluster = eff["project"], eff["location"], eff["cluster"]
        ckey = cluster_key(project, location, cluster)
        action = eff["action"]
        if action == "cluster-created":
            self._set_status(CLUSTER, ckey, "RUNNING")
            for p in self._pools_of(project, location, cluster):
                self._set_status(NODE_POOL, p["metadata"]["name"], "RUNNING")
        elif action == "cluster-deleted":
            for p in self._pools_of(project, location, cluster):
                self.storage.delete(NODE_POOL, p["metadata"]["name"])
            self.storage.delete(CLUSTER, ckey)
        elif action == "cluster-updated":
            self._apply_done(op, ckey)
        elif action in ("pool-created", "pool-updated"):
            self._set_status(NODE_POOL, pool_key(project, location, cluster, eff["pool"]), "RUNNING")
            self._set_status(CLUSTER, ckey, "RUNNING")
        elif action == "pool-deleted":
            self.storage.delete(NODE_POOL, pool_key(project, location, cluster, eff["pool"]))
            self._set_status(CLUSTER, ckey, "RUNNING")
        op["spec"]["status"] = "DONE"
        op["spec"]["endTime"] = format_time(now)
        self.storage.put(op)

    def _set_status(self, kind: str, name: str, status: str) -> None:
        obj = self.storage.get(kind, name)
        if obj is not None and obj["spec"].get("status") != status:
            obj["spec"]["status"] = status
            self.storage.put(obj)

    def get_operation(self, project: str, location: str, name: str) -> dict[str, Any]:
        obj = self.storage.get(OPERATION, f"{project}.{location}.{name}")
        if obj is None:
            raise not_found(f"projects/{project}/locations/{location}/operations/{name}")
        return copy.deepcopy(obj["spec"])

    def list_operations(self, project: str, location: str) -> dict[str, Any]:
        labels = (
            {LABEL_PROJECT: project}
            if location == "-"
            else {LABEL_PROJECT: project, LABEL_LOCATION: location}
        )
        ops = self.storage.list(OPERATION, labels)
        return {"operations": [o["spec"] for o in sorted(ops, key=lambda o: o["status"]["doneAt"])]}

    def cancel_operation(
        self, project: str, location: str, name: str, body: Any, now: float
    ) -> dict[str, Any]:
        """``operations.cancel``: a running node-pool upgrade stops where it is (its version not reached; the
        pool remembers it for ``rollback``); other operations cannot be canceled."""
        obj = self.storage.get(OPERATION, f"{project}.{location}.{name}")
        if obj is None:
            raise not_found(f"projects/{project}/locations/{location}/operations/{name}")
        parse_body(CancelOperationRequest, body if body is not None else {})
        spec, eff = obj["spec"], obj["status"]["effect"]
        if spec["status"] != "RUNNING":
            raise precondition(
                f"Operation {name} is already {spec['status']} and cannot be canceled."
            )  # [inferred wording]
        if spec["operationType"] != "UPGRADE_NODES":
            raise precondition(
                f"Operation {name} ({spec['operationType']}) cannot be canceled; only node pool "
                "upgrades (UPGRADE_NODES) can."
            )  # [inferred wording]
        message = "Operation was canceled."
        spec.update(
            status="DONE",
            endTime=format_time(now),
            statusMessage=message,
            error={"code": 1, "message": message},
        )  # google.rpc.Code CANCELLED
        self.storage.put(obj)
        self._set_status(CLUSTER, cluster_key(project, location, eff["cluster"]), "RUNNING")
        pobj = self.storage.get(NODE_POOL, pool_key(project, location, eff["cluster"], eff["pool"]))
        if pobj is not None:
            pobj["spec"]["status"] = "RUNNING"
            pobj["status"]["interruptedUpgrade"] = {
                "from": eff.get("fromVersion"),
                "to": (eff.get("poolSet") or {}).get("version"),
            }
            self.storage.put(pobj)
        return {}

    def _update_op(
        self,
        project: str,
        location: str,
        cluster: str,
        pool: str,
        obj: dict[str, Any],
        now: float,
        op_type: str = "UPDATE_CLUSTER",
    ) -> dict[str, Any]:
        self._busy(project, location, cluster)
        obj["spec"]["status"] = "RECONCILING"
        obj["spec"]["etag"] = f"{self.rng.getrandbits(64):016x}"
        self.storage.put(obj)
        return self._operation(
            project,
            location,
            op_type,
            f"clusters/{cluster}/nodePools/{pool}",
            now,
            self.op_times("update"),
            {
                "action": "pool-updated",
                "project": project,
                "location": location,
                "cluster": cluster,
                "pool": pool,
            },
        )

    # -- changes to an existing cluster: flexq.gke.updates decides, these write ------------------------------
    def _start_update(
        self,
        project: str,
        location: str,
        cluster: str,
        plan: UpdatePlan,
        now: float,
        effect: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write a plan's immediate fields, mark the cluster (and its pool) RECONCILING and start the operation
        that writes the rest when it finishes."""
        cobj = self._get_cluster_obj(project, location, cluster)
        pobj = self._get_pool_obj(project, location, cluster, plan.pool) if plan.pool else None
        self._busy(project, location, cluster)
        merge(cobj["spec"], plan.cluster_now)
        cobj["spec"]["status"] = "RECONCILING"
        self.storage.put(cobj)
        if pobj is not None:
            merge(pobj["spec"], plan.pool_now)
            pobj["spec"]["status"] = "RECONCILING"
            pobj["spec"]["etag"] = f"{self.rng.getrandbits(64):016x}"
            self.storage.put(pobj)
        target = f"clusters/{cluster}" + (f"/nodePools/{plan.pool}" if plan.pool else "")
        eff = {
            "action": "cluster-updated",
            "project": project,
            "location": location,
            "cluster": cluster,
            "pool": plan.pool,
            "clusterSet": plan.cluster_done,
            "poolSet": plan.pool_done,
            **(effect or {}),
        }
        if pobj is not None and plan.op_type == "UPGRADE_NODES":
            eff["fromVersion"] = pobj["spec"].get("version")
        kind = (
            "upgrade"
            if plan.op_type in ("UPGRADE_MASTER", "UPGRADE_NODES") and (plan.cluster_done or plan.pool_done)
            else "update"
        )  # a version change, not a config change
        return self._operation(project, location, plan.op_type, target, now, self.op_times(kind), eff)

    def _apply_done(self, op: dict[str, Any], ckey: str) -> None:
        """An update operation's end: the fields it writes last (an upgrade's version), resources RUNNING."""
        eff = op["status"]["effect"]
        cobj = self.storage.get(CLUSTER, ckey)
        if cobj is not None:
            merge(cobj["spec"], eff.get("clusterSet") or {})
            cobj["spec"]["status"] = "RUNNING"
            self.storage.put(cobj)
        pobj = (
            self.storage.get(
                NODE_POOL, pool_key(eff["project"], eff["location"], eff["cluster"], eff["pool"])
            )
            if eff.get("pool")
            else None
        )
        if pobj is not None:
            merge(pobj["spec"], eff.get("poolSet") or {})
            pobj["spec"]["status"] = "RUNNING"
            if op["spec"]["operationType"] == "UPGRADE_NODES":
                pobj["status"].pop("interruptedUpgrade", None)
            self.storage.put(pobj)

    def _plan(self, project: str, location: str, cluster: str, update: ClusterUpdate) -> UpdatePlan:
        cobj = self._get_cluster_obj(project, location, cluster)
        pools = {p["spec"]["name"]: p["spec"] for p in self._pools_of(project, location, cluster)}
        return plan_update(
            cobj["spec"],
            pools,
            update,
            location=location,
            cluster_path=self._cluster_path(project, location, cluster),
        )
