"""A cluster's state as a ``flexq simulate`` study: the forward runs of the ETA, and ``--from-cluster``.

Owns ``build_study(state, model, cfg, replica)`` and ``Scenario`` (the study, and which job of its trace stands
for which Workload). The study recreates the cluster in a fresh virtual twin and carries it on:

1. the GKE cluster and its node pools (``ClusterState.node_pools``), the RayOperator addon;
2. the manifests: Kueue's ResourceFlavors, ClusterQueues, LocalQueues, AdmissionChecks,
   ProvisioningRequestConfigs, WorkloadPriorityClasses, PriorityClasses, Kueue's configuration, the
   namespaces the queues and jobs live in, and an empty ConfigMap for every ConfigMap a job mounts (their
   contents are never read);
3. the capacity profile fitted from the cluster's history (``FittedCapacity.profile``), whose first ``WARMUP_SECONDS``
   give nodes at once;
4. the traffic: at ``RESERVED_LEAD`` every job **running** at the instant, each pod set pinned to the flavor it
   holds (through the flavor's node labels), for the rest of its run (drawn knowing how long it has run), given
   nodes at once by the warm-up rule; at ``WARMUP_SECONDS`` — the instant of the state — every job that holds
   quota but has not started (**reserved**: waiting for DWS, for nodes, for room in its pool, for a stock-out
   to end), pinned likewise, after the running ones: its DWS request is queued (or fails
   ``NodepoolSizeReached`` when the running jobs fill the pool), its pods wait for room or are refused by the
   stock-out, as at the instant; from one second later every **pending** job, one second apart in Kueue's order (priority, then the queue-order time), so that Kueue orders
   them as it did. Their run times are drawn from ``FittedCapacity.draw_run`` (``replica`` None: the median of each, for a study a
   user runs again and again). Deactivated jobs are left out: they do not run unless someone reactivates them.

A job's object goes in as it was read (its spec, labels and annotations; not its status, uid or the twin's own
run-time annotations); a Workload made for a kind the simulator does not run (not a RayJob or a batch Job) goes
in as a bare Workload with its pod sets' requests.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

import yaml

from flexq.api.capacity_profile import FORECAST_WAITED_PARAMETER
from flexq.api.quantity import parse_quantity
from flexq.api.wellknown import PROVREQ_PREFIX
from flexq.clock import format_time
from flexq.forecast.config import EtaConfig
from flexq.forecast.jobs import JobEntry, entries, started_at
from flexq.forecast.model import RESERVED_LEAD, WARMUP_SECONDS, FittedCapacity
from flexq.forecast.state import ClusterState
from flexq.simulate.jobs import ANN_OUTCOME, ANN_RUN, JobSpec, PodSetSpec
from flexq.simulate.study import Manifest, Study, Variant

__all__ = ["Scenario", "build_study", "clean_job", "OPT_IN_LABEL"]

OPT_IN_LABEL = "fallback.flexq.dev/enabled"  # flexq.fallback.model.OPT_IN_LABEL: a LocalQueue opted in
_DROP_META = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "ownerReferences",
    "finalizers",
    "generation",
    "generateName",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
)
_DROP_ANN = ("kubectl.kubernetes.io/last-applied-configuration", ANN_RUN, ANN_OUTCOME)
# what Kueue and its admission checks write into an admitted job's pod templates (the flavor's pod set, the
# ProvisioningRequest the pods consume): written again when the job is admitted again
_INJECTED = ("kueue.x-k8s.io/", "autoscaling.x-k8s.io/")
_JOB_LABELS = (
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
)


@dataclass
class Scenario:
    """A study of the state, and the Workload (``namespace/name``) each job of its trace stands for."""

    study: Study
    workload_of: dict[str, str] = field(default_factory=dict)  # trace job name -> workload key
    role_of: dict[str, str] = field(default_factory=dict)  # workload key -> running / reserved / pending
    warmup: float = WARMUP_SECONDS
    runs: dict[str, float] = field(default_factory=dict)  # workload key -> run time drawn (seconds)


def _meta(obj: dict, namespaced: bool) -> dict[str, Any]:
    md = obj.get("metadata") or {}
    out: dict[str, Any] = {"name": md.get("name", "")}
    if namespaced and md.get("namespace"):
        out["namespace"] = md["namespace"]
    labels = dict(md.get("labels") or {})
    if labels:
        out["labels"] = labels
    ann = {
        k: v
        for k, v in (md.get("annotations") or {}).items()
        if k not in _DROP_ANN and not k.startswith("twin.flexq.dev/")
    }
    if ann:
        out["annotations"] = ann
    return out


def clean_job(job: dict) -> dict:
    """A RayJob or batch Job as it can be submitted again: its spec, name, namespace, labels and annotations."""
    out: dict[str, Any] = {
        "apiVersion": job.get("apiVersion") or ("ray.io/v1" if job.get("kind") == "RayJob" else "batch/v1"),
        "kind": job.get("kind"),
        "metadata": _meta(job, True),
        "spec": copy.deepcopy(job.get("spec") or {}),
    }
    if (out["metadata"].get("labels") or {}).get("kueue.x-k8s.io/queue-name"):
        out["spec"]["suspend"] = True  # as Kueue's webhook leaves a queued job: Kueue starts it on admission
    for t in _templates(out).values():  # what Kueue injected when it admitted the job: it does so again
        tmeta = t.get("metadata") or {}
        for part in ("labels", "annotations"):
            kept = {k: v for k, v in (tmeta.get(part) or {}).items() if not k.startswith(_INJECTED)}
            if kept:
                tmeta[part] = kept
            else:
                tmeta.pop(part, None)
    if job.get("kind") == "Job":
        spec = out["spec"]
        spec.pop("selector", None)
        spec.pop("manualSelector", None)
        tmeta = (spec.get("template") or {}).get("metadata") or {}
        for k in _JOB_LABELS:
            (tmeta.get("labels") or {}).pop(k, None)
        for k in ("creationTimestamp",):
            tmeta.pop(k, None)
    return out


def _templates(obj: dict) -> dict[str, dict]:
    """Pod set name -> pod template of a RayJob (head, worker groups, submitter) or a batch Job (main)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        return {"main": spec.setdefault("template", {})}
    rc = spec.get("rayClusterSpec") or {}
    out = {}
    if isinstance(rc.get("headGroupSpec"), dict):
        out["head"] = rc["headGroupSpec"].setdefault("template", {})
    for g in rc.get("workerGroupSpecs") or []:
        out[g.get("groupName", "")] = g.setdefault("template", {})
    if isinstance(spec.get("submitterPodTemplate"), dict):
        out["submitter"] = spec["submitterPodTemplate"]
    return out


def pin(obj: dict, entry: JobEntry, flavor_labels: dict[str, dict[str, str]]) -> dict:
    """Each pod set of ``obj`` held to the flavor(s) its Workload has quota on (their node labels as node
    selectors): Kueue then gives it that flavor again."""
    templates = _templates(obj)
    for ps, flavors in entry.assignments().items():
        t = templates.get(ps)
        if t is None:
            continue
        sel = t.setdefault("spec", {}).setdefault("nodeSelector", {})
        for f in sorted(set(flavors.values())):
            sel.update(flavor_labels.get(f, {}))
    return obj


def _pod_sets(wl: dict) -> tuple[PodSetSpec, ...]:
    out = []
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        total: dict[str, float] = {}
        for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
            for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
                total[k] = total.get(k, 0.0) + float(parse_quantity(str(v)))
        out.append(
            PodSetSpec(
                ps.get("name", "main"),
                int(ps.get("count", 1)),
                tuple((k, f"{v:g}") for k, v in sorted(total.items())),
            )
        )
    return tuple(out)


def _config_objects(state: ClusterState, spaces: set[str]) -> list[dict]:
    docs: list[dict] = []
    for ns in sorted(spaces - {"default", "kube-system", "kube-public", "kube-node-lease", "kueue-system"}):
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for items, kind, namespaced in (
        (state.flavors, "ResourceFlavor", False),
        (state.provisioning_configs, "ProvisioningRequestConfig", False),
        (state.admission_checks, "AdmissionCheck", False),
        (state.clusterqueues, "ClusterQueue", False),
        (state.localqueues, "LocalQueue", True),
    ):
        for o in items:
            docs.append(
                {
                    "apiVersion": o.get("apiVersion") or "kueue.x-k8s.io/v1beta2",
                    "kind": kind,
                    "metadata": _meta(o, namespaced),
                    "spec": copy.deepcopy(o.get("spec") or {}),
                }
            )
    for o in state.workload_priority_classes:
        doc = {
            "apiVersion": o.get("apiVersion") or "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": _meta(o, False),
            "value": o.get("value", 0),
        }
        if o.get("description"):
            doc["description"] = o["description"]
        docs.append(doc)
    for o in state.priority_classes:
        if (o.get("metadata") or {}).get("name", "").startswith("system-"):
            continue
        doc = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": _meta(o, False),
            "value": o.get("value", 0),
        }
        for k in ("globalDefault", "preemptionPolicy", "description"):
            if o.get(k) is not None:
                doc[k] = o[k]
        docs.append(doc)
    if state.kueue_config is not None:
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta(state.kueue_config, True),
                "data": dict(state.kueue_config.get("data") or {}),
            }
        )
    return docs


def _mounted_configmaps(obj: dict) -> set[tuple[str, str, tuple[str, ...]]]:
    out = set()
    ns = (obj.get("metadata") or {}).get("namespace", "default")
    for t in _templates(obj).values():
        for v in (t.get("spec") or {}).get("volumes") or []:
            cm = v.get("configMap")
            if isinstance(cm, dict) and cm.get("name") and not cm.get("optional"):
                out.add((ns, cm["name"], tuple(sorted(i.get("key", "") for i in cm.get("items") or []))))
    return out


def _fallback_on(state: ClusterState, cfg: EtaConfig) -> bool:
    if cfg.fallback is not None:
        return cfg.fallback
    return any(
        ((q.get("metadata") or {}).get("labels") or {}).get(OPT_IN_LABEL) == "true" for q in state.localqueues
    )


def _reservations(pools: list[dict[str, Any]], location: str) -> dict[str, dict[str, Any]]:
    """The specific reservations the node pools consume, as the forward twin's profile declares them: the state
    does not carry a reservation's size (a compute API object), so each stands at the sum of its pools' maximums —
    the forward run never stocks them out, as GCE does not."""
    out: dict[str, dict[str, Any]] = {}
    for p in pools:
        name = p.get("reservation")
        if not name or not p.get("machineType"):
            continue
        zone = (p.get("locations") or [None])[0] or (
            location if location.count("-") >= 2 else f"{location}-b"
        )
        auto = p.get("autoscaling") or {}
        size = int(auto.get("max", p.get("nodes", 0)) if auto else p.get("nodes", 0))
        r = out.setdefault(str(name), {"zone": zone, "machineType": p.get("machineType", ""), "count": 0})
        r["count"] += size
    return out


def build_study(
    state: ClusterState,
    model: FittedCapacity,
    cfg: EtaConfig,
    replica: int | None,
    es: list[JobEntry] | None = None,
) -> Scenario:
    """The study of ``state`` (see the module docstring); ``replica`` seeds the draws (None: medians); ``es``:
    the state's entries, read once by the caller (read here when None)."""
    rng = random.Random(f"flexq-eta:{cfg.seed}:{replica}") if replica is not None else None
    w = WARMUP_SECONDS
    flavor_labels = {
        (f.get("metadata") or {}).get("name", ""): dict((f.get("spec") or {}).get("nodeLabels") or {})
        for f in state.flavors
    }
    es = entries(state) if es is None else es
    trace: list[JobSpec] = []
    sc = Scenario(study=Study(name="eta", source=f"the cluster at {format_time(state.now)}"))
    spaces: set[str] = {(q.get("metadata") or {}).get("namespace", "default") for q in state.localqueues}
    mounts: set[tuple[str, str, tuple[str, ...]]] = set()
    running = sorted((e for e in es if e.role == "running"), key=lambda e: started_at(e.workload) or 0.0)
    reserved = [e for e in es if e.role == "reserved"]
    pending = [e for e in es if e.role == "pending" and not e.queue_missing]  # no queue: nothing admits it
    # the running jobs first (the warm-up gives them their nodes at once), then at the instant the jobs that hold
    # quota without having started — after the running ones, so that a full node pool stays full for them (a
    # ProvisioningRequest fails NodepoolSizeReached, an admitted job waits for room) as it was at the instant —
    # then the pending ones, one second apart in Kueue's order
    order: list[tuple[float, JobEntry]] = [(RESERVED_LEAD, e) for e in running] + [(w, e) for e in reserved]
    order += [(w + 1.0 + i, e) for i, e in enumerate(pending)]
    for submit, e in order:
        elapsed = max(0.0, state.now - (started_at(e.workload) or state.now)) if e.role == "running" else 0.0
        if rng is None:
            total = model.median_run(e, elapsed)
        else:
            total = model.draw_run(e, elapsed, rng)
        run = max(1.0, total - elapsed) + (w - RESERVED_LEAD if e.role == "running" else 0.0)
        sc.runs[e.key] = total
        kind, name = e.job_ref
        spaces.add(e.namespace)
        labels = ((e.job or e.workload).get("metadata") or {}).get("labels") or {}
        klass = labels.get(cfg.class_label, "")
        if e.job is not None and kind in ("RayJob", "Job"):
            obj = clean_job(e.job)
            if e.role in ("running", "reserved"):
                pin(obj, e, flavor_labels)
            waited = model.dws_waited(e.key) if e.role == "reserved" else None
            if waited is not None:  # its request was accepted: it goes on queuing, as the fast engine has it
                anns = obj.setdefault("metadata", {}).setdefault("annotations", {})
                anns[PROVREQ_PREFIX + FORECAST_WAITED_PARAMETER] = f"{waited:.0f}"
            mounts |= _mounted_configmaps(obj)
            spec = JobSpec(
                index=len(trace),
                submit=submit,
                kind=kind,
                name=name,
                namespace=e.namespace,
                queue=e.queue,
                template=yaml.safe_dump(obj, sort_keys=False),
                template_source=f"{kind}/{name}",
                run=run,
                klass=klass,
                source=f"{kind} {e.namespace}/{name}",
            )
        else:
            spec = JobSpec(
                index=len(trace),
                submit=submit,
                kind="Workload",
                name=e.name,
                namespace=e.namespace,
                queue=e.queue,
                priority=e.priority,
                pod_sets=_pod_sets(e.workload),
                run=run,
                klass=klass,
                source=f"Workload {e.key}",
            )
            name = e.name
        trace.append(spec)
        sc.workload_of[name if kind in ("RayJob", "Job") and e.job is not None else e.name] = e.key
        sc.role_of[e.key] = e.role
    docs = _config_objects(state, spaces)
    for ns, cm, keys in sorted(mounts):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": cm, "namespace": ns},
                "data": {k: "" for k in keys},
            }
        )
    cluster = {
        "project": state.cluster.get("project") or "flexq-eta",
        "location": state.cluster.get("location") or "us-central1-a",
        "name": state.cluster.get("name") or "eta",
        "addons": ["RayOperator"],
        "nodePools": copy.deepcopy(state.node_pools),
    }
    settings = {"fallback": True} if _fallback_on(state, cfg) else {}
    profile = model.profile(rng)
    reservations = _reservations(state.node_pools, str(cluster["location"]))
    if reservations:
        profile["spec"]["reservations"] = reservations
    sc.study.seed = cfg.seed
    sc.study.until = w + cfg.horizon
    sc.study.trace = trace
    sc.study.variants = [
        Variant(
            name="eta",
            cluster=cluster,
            manifests=[Manifest("the cluster's queues", yaml.safe_dump_all(docs, sort_keys=False))],
            capacity=profile,
            description="the cluster's state, carried forward",
            settings=settings,
            kueue=state.kueue_version,  # the release the cluster runs ("": the twin's default)
        )
    ]
    return sc
