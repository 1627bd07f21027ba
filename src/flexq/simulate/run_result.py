"""What one simulation run yields: ``RunResult`` (plain data, pickled back from worker processes and Ray tasks),
each job's row as the recorder saw it (``job_row``: its outcome, waits, the cause of a lost job) and the nodes
billed to the horizon. Read by ``results``, ``causes``, ``report`` and the sweep; written by ``engine``. Must not
import flexq.http."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flexq.gke.timing import SCALE_DOWN_UNNEEDED_SECONDS
from flexq.simulate.records import WAIT_BUCKETS, JobRecord

__all__ = ["RunResult", "OUTCOMES", "NEVER_RAN", "job_row", "bill_to_horizon"]

SCALE_DOWN_SECONDS = SCALE_DOWN_UNNEEDED_SECONDS  # the cluster autoscaler's (flexq.gke.timing)


@dataclass
class RunResult:
    """What one run produced; plain data (pickled back from worker processes and Ray tasks)."""

    study: str
    variant: str
    replica: int
    seed: int
    duration: float  # simulated seconds from the first possible submission to the end
    jobs: list[dict[str, Any]]  # one row per job (times relative to the start)
    pending: list[tuple[float, int]]  # (time, jobs waiting for quota) after each change
    node_records: list[dict[str, Any]]  # pool, model, created, deleted, price per hour
    evictions: dict[str, dict[str, int]]  # cluster queue -> Kueue reason -> count
    preemptions: dict[str, dict[str, int]]  # preempting... cluster queue of the victim -> reason -> count
    admission_waits: list[tuple[str, str, float]]  # (cluster queue, priority class, seconds) per admission
    provisioning: dict[str, int]  # ProvisioningRequest outcome -> count
    usage: dict[str, dict[str, float]]  # "cq/flavor/resource" -> {reserved (unit*s), nominal}
    steps: int = 0
    horizon: float = 0.0  # the censoring time: a job that never started waited until then
    waiting: list[tuple[float, list[int]]] = field(default_factory=list)  # jobs per WAIT_BUCKETS, over time
    reserved: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # quota reserved over time
    pools: dict[str, dict[str, Any]] = field(default_factory=dict)  # node pool -> max, hosts, chips, ...
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)  # ClusterQueue -> flavor groups, checks
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)  # ResourceFlavor -> nodeLabels
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # AdmissionCheck -> config, class, retry
    kueue: dict[str, Any] = field(
        default_factory=dict
    )  # waitForPodsReady, podsReadyTimeout, backoffLimitCount
    fallback: bool = False  # flexq's fallback ran in this variant
    fallback_actions: dict[str, int] = field(default_factory=dict)  # what it did, by verb (move, return, ...)
    goodput_resource: str = ""  # google.com/tpu, or cpu when no job asks for TPUs
    local_queues: dict[str, bool] = field(default_factory=dict)  # namespace/name -> opted in to the fallback
    queue_cq: dict[str, str] = field(default_factory=dict)  # LocalQueue namespace/name -> its ClusterQueue
    refs: dict[str, list[str]] = field(default_factory=dict)  # "Kind/namespace/name" a template needs -> keys
    fallback_all_queues: bool = False  # the fallback's all_queues setting (it acts on every LocalQueue)


OUTCOMES = ("Succeeded", "Failed", "Deactivated", "NeverAdmitted", "NotStarted", "Running")
NEVER_RAN = ("Deactivated", "NeverAdmitted", "NotStarted")


def bill_to_horizon(
    nodes: list[dict[str, Any]], pools: dict[str, dict[str, Any]], end: float, horizon: float
) -> None:
    """Every run is billed over the same window, up to the study's horizon, whenever it stops: a run that ended
    early (every job done, or given up) keeps its nodes that the pool would keep (up to its minimum size) until
    the horizon, and the rest until the cluster autoscaler would have removed them (10 minutes idle). So
    variants compare on cost over one span, not on when the simulation could stop."""
    alive: dict[str, list[dict[str, Any]]] = {}
    for n in nodes:
        n["billedUntil"] = n["deleted"] if n["deleted"] is not None else end
        if n["deleted"] is None:
            alive.setdefault(n["pool"], []).append(n)
    if end >= horizon:
        return
    for pool, ns in alive.items():
        keep = int((pools.get(pool) or {}).get("min", 0))
        for i, n in enumerate(sorted(ns, key=lambda x: (x["created"], x["node"]))):
            n["billedUntil"] = horizon if i < keep else min(horizon, end + SCALE_DOWN_SECONDS)


def _cause(rec: JobRecord, outcome: str) -> tuple[str, str]:
    """Why a job that did not succeed did not, from its own evidence: the detail (with counts) and its kind
    (what ``lostByCause`` counts by)."""
    parts, kinds = [], []
    if rec.start_errors:  # a pod the kubelet could not start: that comes first, whatever else followed
        (what, n), *_rest = sorted(rec.start_errors.items(), key=lambda kv: (-kv[1], kv[0]))
        parts.append(f"pods never started: {what} (x{n})")
        kinds.append("pods " + what.split(":", 1)[0])
    if rec.pr_failed:
        parts.append(
            "ProvisioningRequests failed: "
            + ", ".join(f"{r or 'Failed'} x{n}" for r, n in sorted(rec.pr_failed.items()))
        )
        kinds.append("ProvisioningRequest " + "/".join(sorted(r or "Failed" for r in rec.pr_failed)))
    if rec.refused_code and outcome in NEVER_RAN:
        where = f" on {rec.refused_pool}" if rec.refused_pool else ""
        parts.append(f"pods refused capacity{where}: {rec.refused_code}")
        kinds.append(f"pods refused {rec.refused_code}")
    if rec.quota_key and outcome in ("NeverAdmitted", "Deactivated"):
        parts.append(f"no quota: {rec.quota_key}")
        kinds.append(f"no quota {rec.quota_key}")
    if rec.evictions and outcome in NEVER_RAN:
        parts.append(f"evicted x{rec.evictions}")
    return "; ".join(parts), ", ".join(kinds[:1])


def job_row(rec: JobRecord, horizon: float) -> dict[str, Any]:
    s = rec.spec
    outcome = rec.outcome or (
        "Deactivated"
        if rec.deactivated
        else "Running"
        if rec.started is not None
        else "NotStarted"
        if rec.admitted is not None
        else "NeverAdmitted"
    )
    lost = outcome in NEVER_RAN or (outcome == "Failed" and s.outcome != "Failed")
    cause, cause_kind = _cause(rec, outcome) if outcome != "Succeeded" else ("", "")
    waits = {f"wait_{b}": round(rec.waits.get(b, 0.0), 3) for b in WAIT_BUCKETS}
    return {
        "job": s.name,
        "namespace": s.namespace,
        "kind": s.kind,
        "class": s.klass,
        "queue": s.queue,
        "cluster_queue": rec.cluster_queue,
        "priority": s.priority_class or ("" if s.priority is None else str(s.priority)),
        "submit": rec.submit,
        "admitted": rec.admitted,
        "started": rec.started,
        "finished": rec.finished,
        "wait_admission": None if rec.admitted is None else rec.admitted - rec.submit,
        "wait_start": None if rec.started is None else rec.started - rec.submit,
        "wait_censored": (rec.started if rec.started is not None else max(horizon, rec.submit)) - rec.submit,
        **waits,
        "run": s.run,
        "outcome": outcome,
        "lost": lost,
        "reason": rec.lost_reason if outcome == "Deactivated" else "",
        "cause": cause,
        "cause_kind": cause_kind,
        "refused_pool": rec.refused_pool,
        "size": rec.size,
        "flavors": rec.flavors,
        "evictions": rec.evictions,
        "preemptions": rec.preemptions,
        "planned_outcome": s.outcome,
        "quota_waits": dict(sorted(rec.quota_waits.items())),
        "refusals": list(rec.refusals),
        # flexq fallback against Kueue's preemption: the most moves the fallback made of the job after one of its
        # preemptions (before it started again), and the preempted Workloads it sent back
        "fallback_after_preemption": max(rec.after_preemption, default=0),
        "fallback_undid_preemption": rec.undid_preemption,
        "start_errors": dict(sorted(rec.start_errors.items())),
        "retry_hold": round(rec.retry_hold, 3),  # quota held while a check waited out its retry back-off
        "retry_hold_flavors": sorted(rec.retry_hold_flavors),
        "pr_failures": sum(rec.pr_failed.values()),  # its ProvisioningRequests that failed
        "check_evictions": rec.check_evictions,  # evictions for an admission check in Retry
    }
