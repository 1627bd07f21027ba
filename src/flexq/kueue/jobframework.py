"""Kueue's generic job reconciler (``pkg/controller/jobframework/reconciler.go``) as named steps.

Owns: ``JobController`` (one per kind in ``jobs.JOB_ADAPTERS``) and Kueue's Workload naming
(``<kind>-<name>-<first 5 hex of sha1(kind, group, name, uid[, extra])>``). Writes, on jobs:
``spec.suspend`` (suspended when created — the webhook's default — when not admitted and when the
workload is evicted) and the pod-template injection on start (flavors' nodeSelector/tolerations,
checks' podSetUpdates) and its restoration on stop. On Workloads: creation (owner reference,
``kueue.x-k8s.io/job-uid`` label, ``provreq.kueue.x-k8s.io/*`` annotations, priority from a
WorkloadPriorityClass, else the pod template's PriorityClass, else the global default one, else 0,
``maximumExecutionTimeSeconds`` from the ``kueue.x-k8s.io/max-exec-time-seconds`` label), pod-set count
updates and replacement slices of elastic jobs,
``Finished`` (Succeeded / Failed / FailedToStart), ``PodsReady``, and quota release after an
eviction once the job is inactive (QuotaReserved=False ``PendingEvaluation``, ``Requeued``).
Events: CreatedWorkload, Started, Stopped, Suspended, FinishedWorkload.

Must not import ``flexq.kuberay``, ``flexq.kube``, ``flexq.gke`` or ``flexq.http``.
"""

from __future__ import annotations

import hashlib

from flexq.api.jsoncopy import clone_kept
from flexq.api.scheduling import default_class
from flexq.api.wellknown import JOB_UID_LABEL, PRIORITY_CLASS_LABEL, PROVREQ_PREFIX, QUEUE_NAME_LABEL
from flexq.errors import NotFound
from flexq.kueue.cache import KueueCache
from flexq.kueue.job_adapters import JobAdapter
from flexq.kueue.podset import PodSetMergeError, from_podset, infos_for
from flexq.kueue.workload import (
    OBSERVABILITY_GATE,
    has_quota_reservation,
    is_admitted,
    unadmitted_reason,
    unset_quota_reservation,
)
from flexq.runtime.controller import Controller, Result, Watch
from flexq.runtime.predicates import outside_status_changed, update_changed
from flexq.semantics.conditions import find_condition, is_true, set_status_condition
from flexq.store import clone, status_copy

__all__ = ["JobController", "workload_name"]

QUEUE_LABEL = QUEUE_NAME_LABEL
PRIORITY_LABEL = PRIORITY_CLASS_LABEL
MAX_EXEC_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
SLICE_REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"
SLICE_NAME = "kueue.x-k8s.io/workload-slice-name"
MAX_NAME = 253


def _max_exec_seconds(labels: dict) -> int | None:
    """``MaximumExecutionTimeSecondsForObject``: the job's ``kueue.x-k8s.io/max-exec-time-seconds`` label, a
    positive 32-bit integer, else None."""
    raw = labels.get(MAX_EXEC_LABEL)
    try:
        v = int(str(raw), 10) if raw is not None else 0
    except ValueError:
        return None
    return v if 0 < v < 2**31 else None


def workload_name(kind: str, group: str, name: str, uid: str, extra: str = "") -> str:
    """``GenerateWorkloadNameWithExtra``."""
    h = hashlib.sha1()
    for part in (kind, "\n", group, "\n", name, "\n", uid):
        h.update(part.encode())
    if extra:
        h.update(b"\n" + extra.encode())
    prefix = f"{kind.lower()}-{name}"[: MAX_NAME - 6]
    return f"{prefix}-{h.hexdigest()[:5]}"


def _queue_of(obj: dict) -> str | None:
    return (obj["metadata"].get("labels") or {}).get(QUEUE_LABEL)


def _owned_changed(old: dict, new: dict) -> bool:
    """An update of a kind a job owns that its reconcile can see: the spec (``live_pod_set_counts`` reads a
    RayCluster's worker groups) or the owner references the update maps through."""
    return old.get("spec") != new.get("spec") or (old["metadata"].get("ownerReferences")) != (
        new["metadata"].get("ownerReferences")
    )


class JobController(Controller):
    """Reconciles one job kind against its Workload(s)."""

    def __init__(self, ctx, cache: KueueCache, adapter: type[JobAdapter]) -> None:
        super().__init__(ctx)
        self.cache, self.adapter = cache, adapter
        self.events = cache.events
        self.kind = adapter.kind
        self.name = f"kueue-job-{adapter.kind.lower()}"

    def watches(self) -> list[Watch]:
        kind = self.kind

        def owner(ev) -> list:
            md = ev.object["metadata"]
            return [
                (md.get("namespace", ""), r["name"])
                for r in md.get("ownerReferences") or []
                if r.get("kind") == kind and r.get("controller")
            ]

        # Kueue declares ``For(job).Owns(&Workload{})`` with no predicate (jobframework/reconciler.go
        # ``SetupWithManager``); a job update the reconciler cannot tell from the version before (nothing but
        # status fields it does not read moved: a RayJob's ``rayClusterStatus`` counts, say) and an owned kind's
        # status write (a RayCluster's ready replicas: only its spec is read) are dropped here: their reconcile
        # would find its inputs as they were
        adapter, cache = self.adapter, self.cache

        def job_changed(old: dict, new: dict) -> bool:
            if not cache.config.manage_jobs_without_queue_name and not (
                _queue_of(old) or _queue_of(new)
            ):  # a job without a queue before and after: the reconcile leaves it alone (a RayJob's submitter)
                return False
            return adapter.status_read(old.get("status") or {}) != adapter.status_read(
                new.get("status") or {}
            ) or outside_status_changed(old, new)

        return [Watch(kind, predicate=update_changed(job_changed)), Watch("Workload", owner)] + [
            Watch(k, owner, predicate=update_changed(_owned_changed)) for k in adapter.owned_kinds()
        ]

    # the steps, in Kueue's order -------------------------------------------------------------------
    def reconcile(self, key: tuple[str, str]) -> Result | None:
        ns, name = key
        obj = self.store.peek(self.kind, name, ns)  # read-only: copied (``_writable``) before it is changed
        if obj is None:
            return None
        job = self.adapter(obj, self.cache.profile)
        labels = obj["metadata"].get("labels") or {}
        if job.skip() or not (labels.get(QUEUE_LABEL) or self.cache.config.manage_jobs_without_queue_name):
            return None
        now = self.ctx.now()
        elastic = job.elastic(self.cache.config.gate("ElasticJobsViaWorkloadSlices"))
        # 1. find (or fix up) this job's workload
        wl = self._ensure_one_workload(job, elastic, now)
        if wl is not None and is_true(wl, "Finished"):
            return None
        # 2. the job is on hold (a RayJob in ValidationFailed): release the quota, stay out of the queue
        if job.is_on_hold():
            if wl is not None and has_quota_reservation(wl):
                wl = status_copy(wl)
                unset_quota_reservation(wl, "OnHold", "Job is on hold", now)
                self.store.update_status(wl, take=True)
            return None
        # 3. the job finished: finish the workload
        msg, success, finished = job.finished()
        if finished:
            if wl is not None and not is_true(wl, "Finished"):
                wl = status_copy(wl)
                set_status_condition(wl, "Finished", True, "Succeeded" if success else "Failed", msg, now)
                self.store.update_status(wl, take=True)
                self.events.record(
                    obj,
                    "Normal",
                    "FinishedWorkload",
                    f"Workload '{ns}/{wl['metadata']['name']}' is declared finished",
                )
            return None
        # 3. no workload: create it (suspending the job first, as Kueue's webhook would have)
        if wl is None:
            return self._no_workload(job, elastic, now)
        # 4. PodsReady
        if self.cache.config.wait_for_pods_ready and self._sync_pods_ready(job, wl, now):
            return None
        # 5. eviction: stop the job, then release the quota once it is inactive
        ev = find_condition(wl, "Evicted")
        if ev is not None and ev.get("status") == "True":
            self._stop(job, wl, ev.get("message", ""))
            if has_quota_reservation(wl) and not job.is_active():
                wl = status_copy(wl)
                requeued = ev.get("reason") in ("Preempted", "NodeFailures")
                set_status_condition(
                    wl, "Requeued", requeued, ev.get("reason", ""), ev.get("message", ""), now
                )
                observability = self.cache.config.gate(OBSERVABILITY_GATE)
                unset_quota_reservation(
                    wl,
                    unadmitted_reason("PendingEvaluation", "Pending", observability),
                    ev.get("message", ""),
                    now,
                    observability,
                )
                self.store.update_status(wl, take=True)
            return None
        # 6. suspended: start when admitted
        if job.is_suspended():
            if is_admitted(wl):
                self._start(job, wl, now)
            return None
        # 7. running without admission: stop
        if not is_admitted(wl) and not elastic:
            self._stop(job, wl, "Not admitted by cluster queue")
        return None

    def _owned(self, obj: dict) -> list[dict]:
        uid = obj["metadata"].get("uid")
        if not uid:
            return []
        # through the store's owner index: the stored objects themselves, read-only (clone one to change it)
        out = [
            w
            for w in self.store.peek_list("Workload", obj["metadata"]["namespace"], owner_uid=uid)
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in w["metadata"].get("ownerReferences") or []
            )
        ]
        if len(out) < 2:  # the usual case: one Workload
            return out
        return sorted(out, key=lambda w: (w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))

    def _pod_sets(self, job: JobAdapter, elastic: bool) -> list[dict]:
        pss = job.pod_sets()
        counts = self._elastic_counts(job, elastic)
        for ps in pss:
            ps["count"] = counts.get(ps["name"], ps["count"])
        return pss

    def _pod_set_counts(self, job: JobAdapter, elastic: bool) -> list[tuple[str, int]]:
        """(name, count) of ``_pod_sets`` without building the templates."""
        counts = self._elastic_counts(job, elastic)
        return [(name, counts.get(name, count)) for name, count in job.pod_set_counts()]

    def _elastic_counts(self, job: JobAdapter, elastic: bool) -> dict[str, int]:
        """An elastic job's pod-set counts as its running resources say (the adapter's hook: a RayJob's
        RayCluster replicas, which the autoscaler resizes)."""
        return job.live_pod_set_counts(self.store) if elastic else {}

    def _ensure_one_workload(self, job: JobAdapter, elastic: bool, now: float) -> dict | None:
        # the owned Workloads are read-only: returned as stored (the caller takes ``status_copy`` to write its
        # status), or the stored version an update wrote
        owned = [w for w in self._owned(job.obj) if not is_true(w, "Finished")]
        if not owned:
            return None
        want = self._pod_set_counts(job, elastic)
        counts = [c for _, c in want]
        if elastic:
            latest = owned[-1]
            have = [ps.get("count", 1) for ps in latest["spec"]["podSets"]]
            if have == counts or len(have) != len(counts):
                return owned[0] if len(owned) > 1 and has_quota_reservation(owned[0]) else latest
            if not has_quota_reservation(latest) or all(c <= h for c, h in zip(counts, have, strict=True)):
                latest = clone(latest)
                for ps, c in zip(latest["spec"]["podSets"], counts, strict=True):
                    ps["count"] = c
                return self.store.update(latest, take=True)
            self._create(job, self._pod_sets(job, elastic), now, replaces=latest)
            return latest
        wl = owned[0]
        same = [(p["name"], p.get("count", 1)) for p in wl["spec"]["podSets"]] == want
        if not same and not has_quota_reservation(wl):
            self.store.delete("Workload", wl["metadata"]["name"], wl["metadata"]["namespace"])
            return None
        return wl

    def _no_workload(self, job: JobAdapter, elastic: bool, now: float) -> Result | None:
        obj = job.obj
        problems = job.validate()
        if problems:
            self.events.record(obj, "Warning", "InvalidJob", "; ".join(problems))
            return None
        if not job.is_suspended():
            if job.is_active() and not elastic:
                return None
            job = self._writable(job)
            obj = job.obj
            job.suspend()
            self.store.update(obj)
            self.events.record(obj, "Normal", "Suspended", "Kueue managed job suspended")
            return None
        self._create(job, self._pod_sets(job, elastic), now)
        return None

    def _create(
        self, job: JobAdapter, pod_sets: list[dict], now: float, replaces: dict | None = None
    ) -> dict:
        obj = job.obj
        md = obj["metadata"]
        elastic = job.elastic(self.cache.config.gate("ElasticJobsViaWorkloadSlices"))
        extra = job.name_extra() if elastic else ""
        if replaces is not None:
            extra += f"_{len(self._owned(obj))}"
        name = workload_name(job.kind, job.group, md["name"], md.get("uid", ""), extra)
        ann = {k: v for k, v in (md.get("annotations") or {}).items() if k.startswith(PROVREQ_PREFIX)}
        if elastic:
            ann["kueue.x-k8s.io/elastic-job"] = "true"
            if replaces is None:
                ann[SLICE_NAME] = name
            else:
                ann[SLICE_REPLACEMENT_FOR] = f"{md['namespace']}/{replaces['metadata']['name']}"
                ann[SLICE_NAME] = (replaces["metadata"].get("annotations") or {}).get(
                    SLICE_NAME, replaces["metadata"]["name"]
                )
        spec: dict = {
            "podSets": pod_sets,
            "queueName": (md.get("labels") or {}).get(QUEUE_LABEL, ""),
            "active": True,
        }
        limit = _max_exec_seconds(md.get("labels") or {})
        if limit is not None:
            spec["maximumExecutionTimeSeconds"] = limit
        pc = (md.get("labels") or {}).get(PRIORITY_LABEL)
        if pc:
            wpc = self.store.peek("WorkloadPriorityClass", pc)  # read-only: only its value is read
            if wpc is None:
                self.events.record(
                    obj, "Warning", "WorkloadPriorityClassNotFound", f'WorkloadPriorityClass "{pc}" not found'
                )
                raise LookupError(f"WorkloadPriorityClass {pc} not found")
            spec["priorityClassRef"] = {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": pc,
            }
            spec["priority"] = int(wpc.get("value", 0))
        else:
            spec.update(self._pod_priority(pod_sets))
        wl = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": md["namespace"],
                "annotations": ann,
                "labels": {JOB_UID_LABEL: md.get("uid", "")},
                "ownerReferences": [
                    {
                        "apiVersion": obj["apiVersion"],
                        "kind": job.kind,
                        "name": md["name"],
                        "uid": md.get("uid"),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }
        out = clone(self.store.create(wl))  # the stored version is read-only
        self.events.record(obj, "Normal", "CreatedWorkload", f"Created Workload: {md['namespace']}/{name}")
        return out

    def _pod_priority(self, pod_sets: list[dict]) -> dict:
        """``ExtractPriority`` without a WorkloadPriorityClass: the first pod set's ``priorityClassName``'s
        PriorityClass (NotFound, retried, if it does not exist), else the global default class, else 0."""
        name = next(
            (
                n
                for ps in pod_sets
                if (n := ((ps.get("template") or {}).get("spec") or {}).get("priorityClassName"))
            ),
            "",
        )
        pc = self.store.peek("PriorityClass", name) if name else default_class(self.store)  # read-only
        if pc is None and name:
            raise NotFound(f'priorityclasses.scheduling.k8s.io "{name}" not found')
        if pc is None:
            return {"priority": 0}
        ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": pc["metadata"]["name"]}
        return {"priorityClassRef": ref, "priority": int(pc.get("value", 0))}

    def _sync_pods_ready(self, job: JobAdapter, wl: dict, now: float) -> bool:
        cur = find_condition(wl, "PodsReady")
        not_ready, ready_msg = (
            "Not all pods are ready or succeeded",
            "All pods reached readiness and the workload is running",
        )
        if not is_admitted(wl):
            want = (False, "WaitForStart", not_ready)
        elif job.pods_ready():
            recovered = cur is not None and cur.get("reason") in ("WaitForRecovery", "Recovered")
            want = (True, "Recovered" if recovered else "Started", ready_msg)
        elif cur is None:
            want = (False, "WaitForStart", not_ready)
        elif cur.get("status") == "True":
            want = (False, "WaitForRecovery", "At least one pod has failed, waiting for recovery")
        else:
            return False
        if (
            cur is not None
            and cur.get("status") == ("True" if want[0] else "False")
            and cur.get("reason") == want[1]
        ):
            return False
        wl = status_copy(wl)
        set_status_condition(wl, "PodsReady", want[0], want[1], want[2], now)
        self.store.update_status(wl, take=True)
        return True

    def _writable(self, job: JobAdapter) -> JobAdapter:
        return self.adapter(clone_kept(job.obj), self.cache.profile)

    def _start(self, job: JobAdapter, wl: dict, now: float) -> None:
        job = self._writable(job)
        try:
            infos = infos_for(wl, self.cache.flavors)
            job.run_with(infos)
        except (PodSetMergeError, ValueError) as exc:
            wl = status_copy(wl)
            set_status_condition(wl, "Finished", True, "FailedToStart", str(exc), now)
            self.store.update_status(wl, take=True)
            return
        out = self.store.update(job.obj, take=True)  # job.obj: this call's own copy
        self.events.record(
            out, "Normal", "Started", f"Admitted by clusterQueue {wl['status']['admission']['clusterQueue']}"
        )

    def _stop(self, job: JobAdapter, wl: dict, msg: str) -> None:
        if job.is_suspended():
            return
        job = self._writable(job)
        job.suspend()
        job.restore([from_podset(ps) for ps in (wl.get("spec") or {}).get("podSets") or []])
        out = self.store.update(job.obj, take=True)  # job.obj: this call's own copy
        self.events.record(out, "Normal", "Stopped", msg)
