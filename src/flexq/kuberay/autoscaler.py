"""In-tree autoscaling for RayClusters with ``enableInTreeAutoscaling: true`` (KubeRay's autoscaler sidecar).

Owns: ``workerGroupSpecs[*].replicas`` of autoscaling RayClusters (the sidecar is that field's writer in
KubeRay; Kueue's elastic workload slices then see the new size). Ray reports its load as the autoscaler
monitor's status text (``GET /api/cluster_status?format=1``, what ``ray status`` prints); ``parse_status``
reads it and ``decide`` is the pure rule:

- **grow**: when Ray has pending demands (tasks, actors or placement-group bundles it cannot place) that one
  host of a worker group could hold, that group gets ``ceil(hosts needed / numOfHosts)`` more replicas, up
  to ``maxReplicas``, one step per decision, and not while a previous step's pods are still coming up;
- **shrink**: when a group has more replicas than ``minReplicas`` and at least one whole replica's worth of
  its nodes has been idle for ``idleTimeoutSeconds`` (default 60 s, as Ray's autoscaler v2), it loses one
  replica (the RayCluster controller deletes the least ready replica).

Status comes from the local Ray executor (``DemandSource``); simulated clusters report no load, so they keep
their size. Must not import kube, kueue or gke.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from flexq.runtime import Controller, Result, Watch
from flexq.store import clone

from .commands import default_ray_start_params

POLL_S = 5.0
DEFAULT_IDLE_S = 60.0


class DemandSource(Protocol):
    """The autoscaler monitor's status text for a cluster, or None if unknown."""

    def cluster_status(self, namespace: str, cluster: str) -> str | None:
        """``ray status``'s text for the cluster (cached; never blocks)."""


@dataclass
class RayLoad:
    """What the monitor reports: nodes per node type (= worker group name) and unmet demands."""

    active: dict[str, int] = field(default_factory=dict)
    idle: dict[str, int] = field(default_factory=dict)
    pending_nodes: int = 0
    demands: list[dict[str, float]] = field(default_factory=list)


_NODE_RE = re.compile(r"^\s*(\d+)\s+(\S+)")
_DEMAND_RE = re.compile(r"^\s*(\{.*?\})\s*(?:\*\s*(\d+))?\s*(?:\([A-Z_]+\))?\s*:\s*(\d+)\+?\s+pending")


def parse_status(text: str) -> RayLoad:
    """Parse ``ray status`` text (sections ``Active:``, ``Idle:``, ``Pending:``, ``Pending Demands:``)."""
    load = RayLoad()
    section = ""
    for line in text.splitlines():
        head = line.strip()
        if head in (
            "Active:",
            "Idle:",
            "Pending:",
            "Pending Demands:",
            "Recent failures:",
            "Resources",
            "Total Usage:",
            "From request_resources:",
            "Total Constraints:",
            "Total Demands:",
        ):
            section = head
            continue
        if not head or head.startswith("(") or head.startswith("-"):
            continue
        if section in ("Active:", "Idle:"):
            m = _NODE_RE.match(line)
            if m:
                target = load.active if section == "Active:" else load.idle
                target[m.group(2)] = target.get(m.group(2), 0) + int(m.group(1))
        elif section == "Pending:":
            load.pending_nodes += 1
        elif section == "Pending Demands:":
            m = _DEMAND_RE.match(line)
            if m:
                with_bundle = ast.literal_eval(m.group(1))
                count = int(m.group(3)) * int(m.group(2) or 1)
                load.demands += [{k: float(v) for k, v in with_bundle.items()}] * count
    return load


def host_capacity(group: dict) -> dict[str, float]:
    """The Ray resources one host of the group offers (from its ray container, as ``ray start`` gets them)."""
    containers = (group.get("template") or {}).get("spec", {}).get("containers") or [{}]
    params = default_ray_start_params(containers[0], group.get("rayStartParams") or {}, head=False)
    cap = {k: float(v) for k, v in json.loads(params.get("resources") or "{}").items()}
    if "num-cpus" in params:
        cap["CPU"] = float(params["num-cpus"])
    if "num-gpus" in params:
        cap["GPU"] = float(params["num-gpus"])
    return cap


def _fits(bundle: dict[str, float], cap: dict[str, float]) -> bool:
    plain = {k: v for k, v in bundle.items() if not k.startswith(("node:", "accelerator_type:", "TPU-"))}
    return bool(plain) and all(cap.get(k, 0.0) >= v for k, v in plain.items())


def decide(groups: list[dict], load: RayLoad, idle_for: dict[str, float], busy: bool) -> dict[str, int]:
    """New ``replicas`` per group name (only the groups that change). ``busy``: pods still starting."""
    out: dict[str, int] = {}
    demands = list(load.demands)
    for g in groups:
        name, hosts = g["groupName"], g.get("numOfHosts") or 1
        cur = g.get("replicas") or 0
        lo, hi = g.get("minReplicas") or 0, g.get("maxReplicas", 2**31 - 1)
        cap = host_capacity(g)
        need = [d for d in demands if _fits(d, cap)]
        if need and not busy and cur < hi:
            out[name] = min(hi, cur + max(1, math.ceil(len(need) / hosts) if hosts > 1 else len(need)))
            demands = [d for d in demands if d not in need]
            continue
        timeout = float(g.get("idleTimeoutSeconds") or DEFAULT_IDLE_S)
        if not need and cur > lo and load.idle.get(name, 0) >= hosts and idle_for.get(name, 0.0) >= timeout:
            out[name] = cur - 1
    return out


class AutoscalerController(Controller):
    """Resizes worker groups of autoscaling RayClusters from Ray's reported load (see module docstring)."""

    name = "kuberay-autoscaler"

    def __init__(self, ctx, sources: Sequence[DemandSource] | None = None) -> None:
        super().__init__(ctx)
        self.sources = list(sources or [])
        self._idle_since: dict[tuple, float] = {}

    def watches(self) -> list[Watch]:
        # without a Ray to read the load of (a simulated cluster: no local Ray executor) every reconcile returns at
        # once: nothing to watch
        return [Watch("RayCluster")] if self.sources else []

    def reconcile(self, key) -> Result | None:
        ns, name = key
        cluster = self.store.peek("RayCluster", name, ns)  # read-only (copied before it is changed)
        if (
            cluster is None
            or not cluster["spec"].get("enableInTreeAutoscaling")
            or cluster["spec"].get("suspend")
            or cluster["metadata"].get("deletionTimestamp")
            or not self.sources
        ):
            return None
        text = next((t for s in self.sources if (t := s.cluster_status(ns, name)) is not None), None)
        if text is None:
            return Result(requeue_after=POLL_S)
        load = parse_status(text)
        now = self.ctx.now()
        groups = cluster["spec"].get("workerGroupSpecs") or []
        idle_for = {}
        for g in groups:
            k = (ns, name, g["groupName"])
            if load.idle.get(g["groupName"], 0) >= (g.get("numOfHosts") or 1):
                idle_for[g["groupName"]] = now - self._idle_since.setdefault(k, now)
            else:
                self._idle_since.pop(k, None)
        st = cluster.get("status") or {}
        busy = load.pending_nodes > 0 or st.get("readyWorkerReplicas", 0) < st.get("desiredWorkerReplicas", 0)
        changes = decide(groups, load, idle_for, busy)
        if changes:
            cluster = clone(cluster)
            groups = cluster["spec"].get("workerGroupSpecs") or []
            for g in groups:
                if g["groupName"] in changes:
                    g["replicas"] = changes[g["groupName"]]
                    self._idle_since.pop((ns, name, g["groupName"]), None)
            self.store.update(cluster)
            self.events.record(
                cluster,
                "Normal",
                "Autoscaled",
                ", ".join(f"{k} replicas -> {v}" for k, v in sorted(changes.items())),
            )
        return Result(requeue_after=POLL_S)
