"""The jobs of a ``ClusterState`` as the ETA sees them: which run, which wait and in what order, which cannot.

Owns ``JobEntry`` (one live Workload with its job: its role — ``running``, ``reserved`` (quota reserved or admitted,
not started: waiting for DWS, nodes or a stock-out while holding quota), ``pending`` (no quota yet),
``deactivated`` — its Kueue priority and queue-order timestamp, its coded reason from ``flexq.api.reasons``, and
``cannot``: why no flavor can ever take it, when Kueue says so), ``entries(state)`` (in Kueue's order: priority,
then the queue-order timestamp of ``semantics/workloads.queue_order_timestamp`` — creation, or the eviction
time for ``PodsReadyTimeout`` with ``requeuingStrategy.timestamp: Eviction`` and for ``AdmissionCheck`` — then
uid), ``StateView`` (what one estimate reads of a state, built once and passed: the entries, each LocalQueue's
ClusterQueue, the Kueue release and configuration the cluster runs), ``queue_position``, ``started_at`` / ``finished_at`` and ``class_key`` (the run-time class of a job:
its LocalQueue and the ``flexq.dev/class`` label when set, else its shape).

Pure: plain dicts in, plain data out (the Kueue release and configuration resolved from the state).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flexq.api.kueue_versions import DEFAULT as DEFAULT_KUEUE
from flexq.api.kueue_versions import KueueVersion, resolve
from flexq.api.reasons import Explanation, explain
from flexq.clock import parse_time_or_none
from flexq.errors import Invalid
from flexq.forecast.state import ClusterState
from flexq.kueue.config import KueueConfig
from flexq.kueue.flavorassigner import FlavorAssigner, Mode
from flexq.kueue.preemption import make_oracle
from flexq.kueue.snapshot import Snapshot, build_snapshot
from flexq.kueue.workload import WorkloadInfo
from flexq.semantics.conditions import find_condition, is_true
from flexq.semantics.owners import controller_owner
from flexq.semantics.workloads import FINISHED_STATES, queue_order_timestamp, workload_state

__all__ = [
    "JobEntry",
    "StateView",
    "kueue_of",
    "entries",
    "started_at",
    "finished_at",
    "class_key",
    "EXPECTED_DURATION",
    "CLASS_LABEL",
    "STRUCTURAL",
    "queue_position",
    "queue_positions",
    "cluster_queue_of",
]

EXPECTED_DURATION = (
    "flexq.dev/expected-duration"  # a job's own estimate of its run time ("2h", "90m", seconds)
)
CLASS_LABEL = "flexq.dev/class"  # jobs of one class share a run-time history (per LocalQueue)
# Kueue's reasons that say no flavor of the ClusterQueue can ever take the workload as it is
# the reasons whose job may never fit (confirmed against the ClusterQueue emptied, ``fits_when_empty``); Kueue 0.19.2
# says ``Pending`` (or ``Inadmissible`` for a queue) for all of them: UnadmittedWorkloadsObservability is off there
STRUCTURAL = ("NoMatchingFlavor", "ExceedsMaxQuota", "Misconfigured", "Pending", "Inadmissible")


@dataclass
class JobEntry:
    """One live (not finished) Workload, with the job Kueue made it for."""

    workload: dict
    job: dict | None  # the RayJob / batch Job (None: another kind, or a bare Workload)
    role: str  # running, reserved, pending, deactivated
    state: str  # flexq.semantics.workloads.workload_state
    priority: int
    order_time: float
    uid: str
    reason: Explanation | None
    cannot: str = ""  # why no flavor can ever take it (Kueue's own message), else ""
    # Kueue's words when the job's LocalQueue, or that queue's ClusterQueue, does not exist: nothing admits the
    # job until someone creates it, so no forward run can place it
    queue_missing: str = ""

    @property
    def namespace(self) -> str:
        return (self.workload.get("metadata") or {}).get("namespace", "")

    @property
    def name(self) -> str:
        return (self.workload.get("metadata") or {}).get("name", "")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def queue(self) -> str:
        return (self.workload.get("spec") or {}).get("queueName", "")

    @property
    def cluster_queue(self) -> str:
        return ((self.workload.get("status") or {}).get("admission") or {}).get("clusterQueue", "")

    @property
    def job_ref(self) -> tuple[str, str]:
        """(kind, name) of the job, or ("Workload", the workload's name)."""
        ref = controller_owner(self.workload)
        return (ref.get("kind", ""), ref.get("name", "")) if ref else ("Workload", self.name)

    def assignments(self) -> dict[str, dict[str, str]]:
        """Pod set -> {resource: flavor} of its quota reservation (empty while pending)."""
        adm = (self.workload.get("status") or {}).get("admission") or {}
        return {p.get("name", ""): dict(p.get("flavors") or {}) for p in adm.get("podSetAssignments") or []}


def _time(cond: dict | None) -> float | None:
    return parse_time_or_none((cond or {}).get("lastTransitionTime"))


def started_at(wl: dict) -> float | None:
    """When the workload's pods last became ready (``PodsReady=True``), or None."""
    c = find_condition(wl, "PodsReady")
    return _time(c) if c is not None and c.get("status") == "True" else None


def finished_at(wl: dict) -> float | None:
    c = find_condition(wl, "Finished")
    return _time(c) if c is not None and c.get("status") == "True" else None


def _role(state: str) -> str | None:
    if state in FINISHED_STATES:
        return None
    return {
        "Running": "running",
        "Admitted": "reserved",
        "QuotaReserved": "reserved",
        "Deactivated": "deactivated",
    }.get(state, "pending")


def _events_of(state: ClusterState, wl: dict, job_name: str) -> list[dict]:
    ns = (wl.get("metadata") or {}).get("namespace", "")
    return [
        e
        for e in state.events
        if job_name
        and (e.get("involvedObject") or {}).get("kind") == "Pod"
        and (e.get("metadata") or {}).get("namespace", e.get("involvedObject", {}).get("namespace")) == ns
        and (e.get("involvedObject") or {}).get("name", "").startswith(job_name + "-")
    ]


def cluster_queue_of(state: ClusterState) -> dict[str, str]:
    """Each LocalQueue's ClusterQueue, by ``namespace/name``."""
    return {
        f"{(q.get('metadata') or {}).get('namespace', '')}/{(q.get('metadata') or {}).get('name', '')}": (
            q.get("spec") or {}
        ).get("clusterQueue", "")
        for q in state.localqueues
    }


def kueue_of(state: ClusterState) -> tuple[KueueVersion, KueueConfig, list[str]]:
    """The Kueue release the state's cluster runs (``state.kueue_version``; flexq's default release when the
    state does not say) and its configuration with that release's gates, and what was assumed, in words."""
    notes = []
    try:
        version = resolve(state.kueue_version) if state.kueue_version else DEFAULT_KUEUE
    except Invalid:
        version = DEFAULT_KUEUE
        notes.append(f"Kueue {state.kueue_version} is not a release flexq models: taken as {version.version}")
    if not state.kueue_version:
        notes.append(f"the cluster's Kueue release is not known: taken as {version.version}")
    try:
        config = KueueConfig.from_configmap(state.kueue_config, version.gates)
    except Exception as exc:  # an unreadable configuration: Kueue's defaults, said
        config = KueueConfig.from_configmap(None, version.gates)
        notes.append(f"Kueue's configuration could not be read ({exc}): its defaults taken")
    return version, config, notes


@dataclass
class StateView:
    """What one estimate reads of a state, read once: the entries in Kueue's order, each LocalQueue's
    ClusterQueue, and the Kueue release and configuration."""

    entries: list[JobEntry]
    cluster_queue_of: dict[str, str]
    version: KueueVersion
    config: KueueConfig
    notes: list[str]

    @classmethod
    def of(cls, state: ClusterState) -> StateView:
        version, config, notes = kueue_of(state)
        cq_of = cluster_queue_of(state)
        return cls(entries(state, config, cq_of), cq_of, version, config, notes)


def entries(
    state: ClusterState, config: KueueConfig | None = None, cq_of: dict[str, str] | None = None
) -> list[JobEntry]:
    """Every live Workload of ``state`` with its job, in Kueue's queue order (see the module docstring);
    ``config``: the cluster's Kueue configuration (read from the state when None)."""
    if config is None:
        config = kueue_of(state)[1]
    requeuing = config.requeuing_timestamp
    sorting = config.gate("PrioritySortingWithinCohort")
    cq_of = cluster_queue_of(state) if cq_of is None else cq_of
    cqs = {(q.get("metadata") or {}).get("name", "") for q in state.clusterqueues}
    empty: Snapshot | None = None  # the ClusterQueues with no workload (built when first needed)
    out = []
    for wl in state.workloads:
        st = workload_state(wl)
        role = _role(st)
        if role is None:
            continue
        md, spec = wl.get("metadata") or {}, wl.get("spec") or {}
        ref = controller_owner(wl)
        kind, name = (ref.get("kind", ""), ref.get("name", "")) if ref else ("", "")
        job = state.job(kind, md.get("namespace", ""), name) if ref else None
        created = parse_time_or_none(md.get("creationTimestamp")) or state.now
        order = queue_order_timestamp(wl, requeuing, sorting) or created
        reason = explain(wl, state.provisioning_requests, _events_of(state, wl, name), state.now)
        cannot = ""
        if role == "pending" and reason is not None and reason.code in STRUCTURAL:
            cq_name = cq_of.get(f"{md.get('namespace', '')}/{spec.get('queueName', '')}", "")
            if empty is None:
                empty = build_snapshot(state.clusterqueues, (), state.flavors, ())
            if not fits_when_empty(wl, cq_name, empty, state.now):
                cannot = f"{reason.code}: {reason.detail}"
        missing = ""
        if role == "pending":
            queue = spec.get("queueName", "")
            cq = cq_of.get(f"{md.get('namespace', '')}/{queue}")
            if cq is None:
                missing = f"LocalQueue {queue} doesn't exist"
            elif cq not in cqs:
                missing = f"ClusterQueue {cq} doesn't exist"
        out.append(
            JobEntry(
                workload=wl,
                job=job,
                role=role,
                state=st,
                priority=int(spec.get("priority") or 0),
                order_time=order,
                uid=md.get("uid", ""),
                reason=reason,
                cannot=cannot,
                queue_missing=missing,
            )
        )
    out.sort(key=lambda e: (-e.priority, e.order_time, e.uid, e.key))
    return out


def fits_when_empty(wl: dict, cq_name: str, empty: Snapshot, now: float) -> bool:
    """Whether Kueue's flavor assignment finds a flavor for every pod set of ``wl`` in ClusterQueue ``cq_name``
    holding no workload (``empty``): Kueue's reasons name the first flavor each pod set failed on
    (``NoMatchingFlavor`` for a head whose other flavors do not match, while its worker waits for quota), so
    a structural reason says "never" only when the queue could not take the job even empty."""
    cq = empty.cq(cq_name)
    if cq is None:
        return False
    info = WorkloadInfo.from_obj({**wl, "status": {}}, cq_name)
    a = FlavorAssigner(info, cq, empty.resource_flavors, make_oracle(empty, now)).assign()
    return a.representative_mode() != Mode.NO_FIT


def queue_position(es: list[JobEntry], entry: JobEntry, cluster_queue_of: dict[str, str]) -> int:
    """How many pending workloads of the same ClusterQueue are ahead of ``entry`` in Kueue's order (one job;
    for all of them at once, ``queue_positions``)."""
    return queue_positions(es, cluster_queue_of).get(entry.key, 0)


def queue_positions(es: list[JobEntry], cluster_queue_of: dict[str, str]) -> dict[str, int]:
    """Every entry's ``queue_position`` (by its key), in one pass over ``es`` (in Kueue's order)."""
    seen: dict[str, int] = {}
    out: dict[str, int] = {}
    for e in es:
        cq = cluster_queue_of.get(f"{e.namespace}/{e.queue}", "")
        out[e.key] = seen.get(cq, 0)
        if e.role == "pending":
            seen[cq] = seen.get(cq, 0) + 1
    return out


def class_key(
    entry_or_wl: JobEntry | dict, job: dict | None, class_label: str = CLASS_LABEL
) -> tuple[str, str]:
    """(``namespace/LocalQueue``, class) of a job for its run-time history: the ``class_label`` label of the job
    (or its Workload) when set, else its shape (kind and pod-set counts)."""
    wl = entry_or_wl.workload if isinstance(entry_or_wl, JobEntry) else entry_or_wl
    md, spec = wl.get("metadata") or {}, wl.get("spec") or {}
    labels: dict[str, Any] = {
        **(md.get("labels") or {}),
        **(((job or {}).get("metadata") or {}).get("labels") or {}),
    }
    queue = f"{md.get('namespace', '')}/{spec.get('queueName', '')}"
    if labels.get(class_label):
        return queue, f"class={labels[class_label]}"
    ref = controller_owner(wl)
    shape = ",".join(f"{p.get('name', '')}x{p.get('count', 1)}" for p in spec.get("podSets") or [])
    return queue, f"{(ref or {}).get('kind', 'Workload')}[{shape}]"


def is_admitted(wl: dict) -> bool:
    return is_true(wl, "Admitted")
