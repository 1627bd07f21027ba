"""A cluster's state at one instant, as the ETA reads it: plain Kubernetes JSON objects, and the node pools.

Owns: ``ClusterState`` (the lists the ETA needs — Kueue's queues, flavors, admission checks and their
ProvisioningRequestConfigs, priority classes, Kueue's configuration, every Workload and the jobs they were made
for, ProvisioningRequests, Nodes, the cluster autoscaler's Events — plus the node pools and ``now``),
``KINDS`` (what is read, as ``(group, versions, plural)``: the read-only ClusterRole of ``flexq eta manifests``
is made from it), ``state_from_twin`` (the SDK's reading of a ``Twin``, through the same API), ``pools_from_gke``
(node pools as the GKE API lists them: ``gcloud container node-pools list --format=json``) and ``infer_pools``
(node pools from what Kubernetes shows alone — the nodes' labels, the flavors' node labels, the pods' TPU
selectors, ``NodepoolSizeReached`` messages — each assumption said in ``notes``).

The state is what a kubeconfig's user can list; the CLI reads it through the ``kubernetes`` client
(``flexq.cli.kubeclient.fetch_cluster_state``), the SDK through ``Twin.list``; both give the same dicts.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from flexq.api import gke_catalog as catalog
from flexq.api.gke_models import specific_reservation
from flexq.api.quantity import parse_quantity
from flexq.api.wellknown import KUEUE_CONFIG_NAME, KUEUE_CONFIG_NAMESPACE

__all__ = [
    "ClusterState",
    "KINDS",
    "KUEUE_CONFIG",
    "EVENT_REASONS",
    "events_read",
    "pools_from_gke",
    "infer_pools",
]

# (field of ClusterState, API group, versions to try in order, plural, namespaced)
KINDS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("clusterqueues", "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "clusterqueues"),
    ("localqueues", "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "localqueues"),
    ("flavors", "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "resourceflavors"),
    ("admission_checks", "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "admissionchecks"),
    ("provisioning_configs", "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "provisioningrequestconfigs"),
    ("workload_priority_classes", "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "workloadpriorityclasses"),
    ("workloads", "kueue.x-k8s.io", ("v1beta2", "v1beta1"), "workloads"),
    ("provisioning_requests", "autoscaling.x-k8s.io", ("v1", "v1beta1"), "provisioningrequests"),
    ("rayjobs", "ray.io", ("v1",), "rayjobs"),
    ("batch_jobs", "batch", ("v1",), "jobs"),
    ("priority_classes", "scheduling.k8s.io", ("v1",), "priorityclasses"),
    ("nodes", "", ("v1",), "nodes"),
    ("events", "", ("v1",), "events"),
)
# the Events the ETA reads: the cluster autoscaler's word on scale-ups (stock-outs, pools at their maximum)
EVENT_REASONS = ("FailedScaleUp", "NotTriggerScaleUp", "TriggeredScaleUp")
KUEUE_CONFIG = (
    KUEUE_CONFIG_NAMESPACE,
    KUEUE_CONFIG_NAME,
)  # Kueue's configuration ConfigMap (waitForPodsReady ...)
_LIMIT = re.compile(r"maximum of (\d+) nodes")
_POOL_IN = re.compile(r"[Nn]ode pool (\S+) cannot grow")


@dataclass
class ClusterState:
    """Everything the ETA reads of a cluster at ``now`` (epoch seconds); objects as plain JSON dicts."""

    now: float
    cluster: dict[str, str] = field(default_factory=dict)  # project, location, name (of the GKE cluster)
    node_pools: list[dict[str, Any]] = field(default_factory=list)  # flexq simulate's short form
    clusterqueues: list[dict] = field(default_factory=list)
    localqueues: list[dict] = field(default_factory=list)
    flavors: list[dict] = field(default_factory=list)
    admission_checks: list[dict] = field(default_factory=list)
    provisioning_configs: list[dict] = field(default_factory=list)
    workload_priority_classes: list[dict] = field(default_factory=list)
    workloads: list[dict] = field(default_factory=list)
    provisioning_requests: list[dict] = field(default_factory=list)
    rayjobs: list[dict] = field(default_factory=list)
    batch_jobs: list[dict] = field(default_factory=list)
    priority_classes: list[dict] = field(default_factory=list)
    nodes: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    kueue_config: dict | None = None
    kueue_version: str = ""  # the Kueue release the cluster runs ("0.20.7"; "" when not known)
    # stock-out episodes a watcher of the cluster saw end ({"pool", "since", "end"}: flexq.eta.history): the API
    # keeps an hour of Events, so the episodes of earlier days are known only to whoever watched
    stockout_history: list[dict] = field(default_factory=list)
    # since when that watcher has looked (epoch seconds; None: not watched, only the hour of Events is known): the
    # time over which the stock-outs that began were counted (the onset rate of those to come)
    stockout_watched_since: float | None = None
    notes: list[str] = field(default_factory=list)  # what was assumed while reading (said with the ETA)
    # what a twin declares of itself (``{"capacityProfile": ..., "executor": ...}``, flexq.forecast.declared):
    # None for a real cluster, or a twin read as one
    twin: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterState:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def job(self, kind: str, namespace: str, name: str) -> dict | None:
        """The RayJob or batch Job ``namespace/name``, or None (from an index of the job lists, made again when
        they are replaced or grow)."""
        return self._jobs().get((kind, namespace, name))

    def _jobs(self) -> dict[tuple[str, str, str], dict]:
        lists = (self.rayjobs, self.batch_jobs)
        made = self.__dict__.get("_job_index")
        if made is not None and made[0] == tuple(map(id, lists)) and made[1] == tuple(map(len, lists)):
            return made[2]
        index: dict[tuple[str, str, str], dict] = {}
        for kind, pool in (("RayJob", self.rayjobs), ("Job", self.batch_jobs)):
            for j in pool:
                md = j.get("metadata") or {}
                if isinstance(md.get("name"), str):  # the first of a name, as a scan finds it
                    index.setdefault((kind, md.get("namespace", ""), md["name"]), j)
        self.__dict__["_job_index"] = (tuple(map(id, lists)), tuple(map(len, lists)), index, lists)
        return index


def provisioning_model(pool: dict[str, Any]) -> str:
    """A node pool's provisioning model in the short form, as a ``CapacityProfile`` rule names it: ``queued``
    (DWS queued provisioning), ``spot``, ``flex-start`` or ``on-demand``."""
    if pool.get("queuedProvisioning"):
        return "queued"
    if pool.get("spot"):
        return "spot"
    return "flex-start" if pool.get("flexStart") else "on-demand"


def events_read(items: list[dict]) -> list[dict]:
    """The Events of ``items`` the forecast reads (``EVENT_REASONS``)."""
    return [e for e in items if e.get("reason") in EVENT_REASONS]


def pools_from_gke(pools: list[dict]) -> list[dict[str, Any]]:
    """Node pools as the GKE API describes them (``nodePools`` of ``GET .../nodePools``, or ``gcloud container
    node-pools list --format=json``) in ``flexq simulate``'s short form."""
    out = []
    for p in pools:
        cfg = p.get("config") or {}
        short: dict[str, Any] = {
            "name": p.get("name", ""),
            "machineType": cfg.get("machineType", "e2-standard-4"),
            "nodes": int(p.get("initialNodeCount") or 0),
        }
        auto = p.get("autoscaling") or {}
        if auto.get("enabled"):
            short["autoscaling"] = {
                "min": int(auto.get("minNodeCount") or auto.get("totalMinNodeCount") or 0),
                "max": int(auto.get("maxNodeCount") or auto.get("totalMaxNodeCount") or 0),
            }
        topo = (p.get("placementPolicy") or {}).get("tpuTopology")
        if topo:
            short["tpuTopology"] = topo
        if cfg.get("flexStart"):
            short["flexStart"] = True
        if (p.get("queuedProvisioning") or {}).get("enabled"):
            short["queuedProvisioning"] = True
        if cfg.get("spot"):
            short["spot"] = True
        reservation = specific_reservation(cfg)
        if reservation is not None:
            short["reservation"] = reservation
        if cfg.get("labels"):
            short["labels"] = dict(cfg["labels"])
        if cfg.get("taints"):
            short["taints"] = list(cfg["taints"])
        out.append(short)
    return out


# -- inference from Kubernetes alone -----------------------------------------------------------------------------
def _flavor_pool(flavor: dict) -> str:
    return ((flavor.get("spec") or {}).get("nodeLabels") or {}).get(catalog.LABEL_NODEPOOL, "")


def _queued_flavors(st: ClusterState) -> set[str]:
    """Flavors a ClusterQueue checks with a ProvisioningRequest admission check of the queued (DWS) class."""
    classes = {
        (p.get("metadata") or {}).get("name"): (p.get("spec") or {}).get("provisioningClassName", "")
        for p in st.provisioning_configs
    }
    queued_checks = {
        (a.get("metadata") or {}).get("name")
        for a in st.admission_checks
        if classes.get(((a.get("spec") or {}).get("parameters") or {}).get("name"))
        == "queued-provisioning.gke.io"
    }
    all_flavors = {(f.get("metadata") or {}).get("name", "") for f in st.flavors}
    out: set[str] = set()
    for cq in st.clusterqueues:
        spec = cq.get("spec") or {}
        for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
            if c.get("name") in queued_checks:
                out |= set(c.get("onFlavors") or all_flavors)
        for name in spec.get("admissionChecks") or []:
            if name in queued_checks:
                out |= all_flavors
    return out


def _templates(st: ClusterState) -> list[dict]:
    """Every pod template of every Workload (what the jobs ask for)."""
    return [
        ps.get("template") or {} for wl in st.workloads for ps in (wl.get("spec") or {}).get("podSets") or []
    ]


def _tpu_shape(template: dict) -> tuple[str, str, int] | None:
    """(accelerator, topology, chips per pod) of a TPU pod template."""
    spec = template.get("spec") or {}
    sel = spec.get("nodeSelector") or {}
    accel, topo = sel.get(catalog.LABEL_TPU_ACCELERATOR), sel.get(catalog.LABEL_TPU_TOPOLOGY, "")
    if not accel:
        return None
    chips = 0
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        q = (res.get("requests") or {}).get(catalog.RESOURCE_TPU) or (res.get("limits") or {}).get(
            catalog.RESOURCE_TPU
        )
        if q is not None:
            chips += int(parse_quantity(str(q)))
    return accel, topo, chips


def _machine_for(accel: str, chips: int) -> str | None:
    for mt in catalog.MACHINE_TYPES.values():
        if mt.tpu is not None and mt.tpu.accelerator_label == accel and (not chips or mt.chips == chips):
            return mt.name
    return None


def infer_pools(st: ClusterState) -> list[dict[str, Any]]:
    """Node pools from Kubernetes alone; every guess is added to ``st.notes``."""
    pools: dict[str, dict[str, Any]] = {}
    for node in st.nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        name = labels.get(catalog.LABEL_NODEPOOL)
        if not name:
            continue
        p = pools.setdefault(name, {"name": name, "machineType": "", "nodes": 0, "_seen": 0})
        p["_seen"] += 1
        p["machineType"] = p["machineType"] or labels.get("node.kubernetes.io/instance-type", "")
        if labels.get(catalog.LABEL_TPU_TOPOLOGY):
            p["tpuTopology"] = labels[catalog.LABEL_TPU_TOPOLOGY]
        if labels.get(catalog.LABEL_PROVISIONING) == "spot":
            p["spot"] = True
        if labels.get(catalog.LABEL_PROVISIONING) == "flex-start":
            p["flexStart"] = True
    queued = _queued_flavors(st)
    shapes = [s for s in (_tpu_shape(t) for t in _templates(st)) if s is not None]
    limits: dict[str, int] = {}
    for msg in _messages(st):
        m, where = _LIMIT.search(msg), _POOL_IN.search(msg)
        if m and where:
            limits[where.group(1)] = int(m.group(1))
    for f in st.flavors:
        pool = _flavor_pool(f)
        if not pool:
            continue
        fname = (f.get("metadata") or {}).get("name", "")
        p = pools.setdefault(pool, {"name": pool, "machineType": "", "nodes": 0, "_seen": 0})
        if fname in queued:
            p["queuedProvisioning"] = True
            p["flexStart"] = True
        if not p["machineType"] and shapes:
            accel, topo, chips = shapes[0]
            mt = _machine_for(accel, chips)
            if mt:
                p["machineType"], p["tpuTopology"] = mt, topo or p.get("tpuTopology", "")
                st.notes.append(
                    f"node pool {pool}: no node now; machine type {mt} ({topo}) guessed from the jobs' TPU "
                    "selectors"
                )
    out = []
    for name, p in sorted(pools.items()):
        seen = p.pop("_seen")
        if not p["machineType"]:
            st.notes.append(
                f"node pool {name}: its machine type is unknown (no node, no TPU selector): left out"
            )
            continue
        if not p.get("tpuTopology"):
            p.pop("tpuTopology", None)
        tpu = (
            catalog.machine_type(p["machineType"]).tpu is not None
            if catalog.is_known_machine_type(p["machineType"])
            else False
        )
        if tpu or p.get("queuedProvisioning"):
            top = limits.get(name)
            if top is None:
                top = max(seen, 64)
                st.notes.append(
                    f"node pool {name}: maximum size unknown (the GKE API was not read): assumed {top} nodes; "
                    "pass --node-pools with `gcloud container node-pools list --format=json`"
                )
            p["autoscaling"] = {"min": 0, "max": top}
            p["nodes"] = 0
        else:
            p["nodes"] = seen
            st.notes.append(
                f"node pool {name}: taken as fixed at its {seen} node(s) (the GKE API was not read)"
            )
        out.append(p)
    return out


def _messages(st: ClusterState) -> list[str]:
    """Texts that may name a pool's maximum: events, Workload conditions and checks, ProvisioningRequests."""
    out = [e.get("message") or "" for e in st.events]
    for wl in st.workloads:
        status = wl.get("status") or {}
        out += [c.get("message") or "" for c in status.get("conditions") or []]
        out += [c.get("message") or "" for c in status.get("admissionChecks") or []]
    for pr in st.provisioning_requests:
        out += [c.get("message") or "" for c in (pr.get("status") or {}).get("conditions") or []]
    return out
