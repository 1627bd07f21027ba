"""The batch/v1 Job controller (kube-controller-manager's job and ttl-after-finished controllers).

Owns Job ``status`` (``active``, ``ready``, ``succeeded``, ``failed``, ``startTime``, ``completionTime``,
``completedIndexes``, ``uncountedTerminatedPods``, conditions ``Suspended``, ``SuccessCriteriaMet`` +
``Complete``, ``FailureTarget`` + ``Failed``), the pods it creates (``<job>-<5 chars>`` from the
``job-controller`` RNG stream, ``<job>-<index>-<5 chars>`` for Indexed jobs) and their tracking
finalizer, the events ``SuccessfulCreate`` / ``FailedCreate`` (a pod the API server refused: retried after
1 s doubling to 1 min) / ``SuccessfulDelete`` / ``Completed`` / ``BackoffLimitExceeded``
/ ``DeadlineExceeded`` / ``Suspended`` / ``Resumed``, and deleting finished jobs after
``ttlSecondsAfterFinished``. Semantics, each reconcile in numbered steps:

1. Count pods that finished (or are being deleted by someone else: failed) while still carrying the
   ``batch.kubernetes.io/job-tracking`` finalizer into ``status``, then remove the finalizer, so deleted
   pods are never lost and never counted twice.
2. Suspended: delete active pods (not counted as failed), ``Suspended=True``; resumed: ``Suspended=False``
   and ``startTime`` reset to now (``activeDeadlineSeconds`` counts continuous activity).
3. Failed when ``failed > backoffLimit`` (with ``OnFailure``: container restarts reach the limit) or the
   deadline passed; Complete when ``completions`` pods succeeded (Indexed: every index), or, without
   ``completions``, when one succeeded and none is active. Remaining active pods are then deleted.
4. Otherwise create pods up to ``parallelism`` (never more than the completions still missing), after a
   back-off of 10 s doubling to 6 min following failures, or delete extra ones: at most 500 a sync
   (``MaxPodCreateDeletePerSync``), created in slow-start batches of 1, 2, 4, ... that stop after a batch
   with a refusal (``slowStartBatch``), and no faster than the controller's client allows
   (``kube.client_limit``: kube-controller-manager's 20 calls a second, bursts of 30, each pod created or
   deleted a call), so a Job of 100,000 pods is built 20 pods a second, as upstream, while every other object
   keeps its turn; a Job that wanted more goes on a second later (``syncJobBatchPeriod``: the next sync takes
   what the client has refilled meanwhile), however often its own status writes wake it.

Jobs with ``spec.managedBy`` other than ``kubernetes.io/job-controller`` are left alone. Must not import
other domain packages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from flexq.api.jsoncopy import clone_kept
from flexq.clock import format_time, parse_time
from flexq.errors import AlreadyExists, Forbidden, Invalid, NotFound
from flexq.kube import job_rules
from flexq.kube.cache import ClusterCache, controller_owner, is_terminal
from flexq.kube.client_limit import ClientRateLimit
from flexq.runtime import Context, Controller, Result, Watch
from flexq.semantics.conditions import is_true, set_core_condition
from flexq.store.store import WatchEvent

_ALNUM = "bcdfghjklmnpqrstvwxz2456789"
_REFUSED: dict = {}  # what ``_create`` returns when the API server refused the pod
SYNC_JOB_BATCH_PERIOD = 1.0  # kube-controller-manager's syncJobBatchPeriod
MAX_POD_CREATE_DELETE_PER_SYNC = 500  # the job controller's MaxPodCreateDeletePerSync
MAX_API_BACKOFF = (
    60.0  # the job controller's queue: 1 s doubling to 1 min (DefaultJobApiBackOff, MaxJobApiBackOff)
)
Key = tuple[str, str]


def _owner_job(ev: WatchEvent) -> Iterable[Key]:
    ref = controller_owner(ev.object)
    if ref is None or ref.get("kind") != "Job":
        return []
    return [(ev.object["metadata"].get("namespace") or "default", ref.get("name", ""))]


def _finished_at(pod: dict, now: float) -> float:
    """When a failed pod finished, as the back-off counts it (getFinishedTime): its containers' last
    ``finishedAt`` when all have terminated, else its deletion, else ``now``."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ends = [((c.get("state") or {}).get("terminated") or {}).get("finishedAt") for c in statuses]
    if statuses and all(ends):
        return max(parse_time(e) for e in ends if e)
    deleted = pod["metadata"].get("deletionTimestamp")
    return parse_time(deleted) if deleted else now


def _active(pod: dict) -> bool:
    return not is_terminal(pod) and not pod["metadata"].get("deletionTimestamp")


def _restarts(pod: dict) -> int:
    st = pod.get("status") or {}
    return sum(
        int(c.get("restartCount", 0))
        for c in [*(st.get("containerStatuses") or []), *(st.get("initContainerStatuses") or [])]
    )


class JobController(Controller):
    """batch/v1 Jobs: pods, status, suspension, back-off, deadlines, TTL."""

    name = "job-controller"

    def __init__(self, ctx: Context, cache: ClusterCache) -> None:
        super().__init__(ctx)
        self.cache = cache
        self.rng = ctx.rng("job-controller")
        self.last_failure: dict[str, float] = {}  # job uid -> when a failure was last counted
        self.refused: dict[str, int] = {}  # job uid -> pod creations refused in a row (the API back-off)
        self.next_batch: dict[str, float] = {}  # job uid -> when a Job that wanted more than a sync may go on
        self.client = ClientRateLimit()  # kube-controller-manager's client rate limit (QPS 20, burst 30)

    def watches(self) -> list[Watch]:
        # pod events sync their job after SyncJobBatchPeriod (enqueueSyncJobBatched), so that a burst of pod
        # changes costs one sync, not one each (each sync looks at every pod of the job)
        return [Watch("Job"), Watch("Pod", _owner_job, delay=SYNC_JOB_BATCH_PERIOD)]

    def reconcile(self, key: Key) -> Result | None:
        ns, name = key
        job = self.store.peek("Job", name, ns)  # read-only: status is copied below, writes build new objects
        pods = self.cache.owned_pods(ns, "Job", name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            self._release(pods)  # pods of a deleted job: let them go
            return None
        uid = job["metadata"].get("uid")
        mine = [p for p in pods if (controller_owner(p) or {}).get("uid") == uid]
        if len(mine) != len(pods):
            self._release(
                [p for p in pods if (controller_owner(p) or {}).get("uid") != uid]
            )  # older namesake's
        if (job.get("spec") or {}).get("managedBy") not in (None, job_rules.JOB_CONTROLLER):
            return None
        pods = mine
        status = clone_kept(job.get("status") or {})  # stored by the status write (take)
        counted = self._count(job, pods, status)  # step 1
        if job_rules.finished_condition(status) is None:
            result = self._sync(job, pods, counted, status)
        else:
            result = None
            self.last_failure.pop(uid, None)
            self.refused.pop(uid, None)
            self.next_batch.pop(uid, None)
        self._write_status(job, status)
        self._release(counted)
        return self._ttl(job, status) or result

    # -- step 1 -----------------------------------------------------------------------------------------
    def _count(self, job: dict, pods: list[dict], status: dict) -> list[dict]:
        """Fold finished pods that still carry the tracking finalizer into ``status``."""
        indexed = (job.get("spec") or {}).get("completionMode") == "Indexed"
        done = job_rules.parse_indexes(status.get("completedIndexes"))
        counted: list[dict] = []
        last_failed: float | None = None
        for pod in pods:
            if job_rules.TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or ()):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded":
                if indexed:
                    idx = job_rules.pod_index(pod)
                    if idx is not None and idx < (job["spec"].get("completions") or 0):
                        done.add(idx)
                else:
                    status["succeeded"] = status.get("succeeded", 0) + 1
            elif phase == "Failed" or pod["metadata"].get("deletionTimestamp"):
                status["failed"] = status.get("failed", 0) + 1
                at = _finished_at(pod, self.ctx.now())
                last_failed = at if last_failed is None else max(last_failed, at)
            else:
                continue
            counted.append(pod)
        if indexed:
            status["succeeded"] = len(done)
            if done:
                status["completedIndexes"] = job_rules.format_indexes(done)
        if last_failed is not None:
            self.last_failure[job["metadata"]["uid"]] = last_failed
        return counted

    # -- steps 2-4 --------------------------------------------------------------------------------------
    def _sync(self, job: dict, pods: list[dict], counted: list[dict], status: dict) -> Result | None:
        spec, now = job["spec"], self.ctx.now()
        counted_names = {p["metadata"]["name"] for p in counted}
        active = [p for p in pods if _active(p) and p["metadata"]["name"] not in counted_names]
        conds = status.setdefault("conditions", [])
        if spec.get("suspend"):  # step 2
            if set_core_condition(
                conds, "Suspended", "True", "JobSuspended", "Job suspended", now, probe=True
            ):
                self.events.record(job, "Normal", "Suspended", "Job suspended")
            # at most a sync's worth: the deletions wake the Job again for the rest
            self._delete(job, active[:MAX_POD_CREATE_DELETE_PER_SYNC])
            self._set_counts(status, active[MAX_POD_CREATE_DELETE_PER_SYNC:])
            return None
        if is_true(status, "Suspended"):
            set_core_condition(conds, "Suspended", "False", "JobResumed", "Job resumed", now, probe=True)
            self.events.record(job, "Normal", "Resumed", "Job resumed")
            status["startTime"] = format_time(now)
        status.setdefault("startTime", format_time(now))
        failure, wait = self._failure(job, active, status, now)  # step 3
        if failure is not None:
            reason, message = failure
            self._delete(job, active, count_failed=status)
            job_rules.finish(status, reason, message, now)
            self._set_counts(status, [])
            self.events.record(job, "Warning", reason, message)
            return None
        if self._succeeded(job, active, status):
            self._delete(job, active)
            job_rules.finish(status, None, job_rules.MSG_COMPLETED, now)
            status["completionTime"] = format_time(now)
            self._set_counts(status, [])
            self.events.record(job, "Normal", "Completed", "Job completed")
            return None
        active, backoff = self._manage(job, active, status, now)  # step 4
        self._set_counts(status, active)
        waits = [w for w in (wait, backoff) if w is not None and w > 0]
        return Result(requeue_after=min(waits)) if waits else None

    def _failure(
        self, job: dict, active: list[dict], status: dict, now: float
    ) -> tuple[tuple[str, str] | None, float | None]:
        spec = job["spec"]
        limit = spec.get("backoffLimit", 6)
        limit = 6 if limit is None else limit
        failed = status.get("failed", 0)
        on_failure = (((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")) == "OnFailure"
        restarts = sum(_restarts(p) for p in active) if on_failure else 0
        if failed > limit or (on_failure and (restarts > 0 if limit == 0 else restarts >= limit)):
            return ("BackoffLimitExceeded", job_rules.MSG_BACKOFF_LIMIT), None
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime"):
            left = parse_time(status["startTime"]) + deadline - now
            if left <= 0:
                return ("DeadlineExceeded", job_rules.MSG_DEADLINE), None
            return None, left
        return None, None

    def _succeeded(self, job: dict, active: list[dict], status: dict) -> bool:
        completions = job["spec"].get("completions")
        if completions is None:
            return status.get("succeeded", 0) > 0 and not active
        return status.get("succeeded", 0) >= completions

    def _manage(
        self, job: dict, active: list[dict], status: dict, now: float
    ) -> tuple[list[dict], float | None]:
        """Create or delete pods toward the wanted number of active pods; returns (active, back-off left)."""
        spec = job["spec"]
        parallelism = spec.get("parallelism")
        parallelism = 1 if parallelism is None else parallelism
        completions = spec.get("completions")
        succeeded = status.get("succeeded", 0)
        if spec.get("completionMode") == "Indexed":
            done = job_rules.parse_indexes(status.get("completedIndexes"))
            busy = {job_rules.pod_index(p) for p in active}
            todo = [i for i in range(completions or 0) if i not in done and i not in busy]
            want = min(parallelism, len(active) + len(todo))
        else:
            todo = []
            remaining = (
                (completions - succeeded)
                if completions is not None
                else (parallelism if not succeeded else 0)
            )
            want = min(parallelism, max(0, remaining))
        # the client's rate limit: a sync makes the calls it allows now and the Job goes on a sync period later
        # (upstream the sync waits in the limiter; here the next sync takes what a second has refilled)
        allowed = self.client.allowance(now)
        if len(active) != want and allowed == 0:
            return active, max(SYNC_JOB_BATCH_PERIOD, self.client.next_token())
        if len(active) > want:
            extra = sorted(
                active,
                key=lambda p: (
                    is_true(p, "Ready"),
                    bool((p.get("spec") or {}).get("nodeName")),
                    p["metadata"]["name"],
                ),
            )[: min(len(active) - want, MAX_POD_CREATE_DELETE_PER_SYNC, allowed)]
            self.client.take(len(extra))
            self._delete(job, extra)
            names = {p["metadata"]["name"] for p in extra}
            rest = len(active) - want - len(extra)
            return [p for p in active if p["metadata"]["name"] not in names], (
                SYNC_JOB_BATCH_PERIOD if rest else None
            )
        if len(active) == want:
            self.next_batch.pop(job["metadata"]["uid"], None)
            return active, None
        uid = job["metadata"]["uid"]
        if self.next_batch.get(uid, now) > now:
            return active, self.next_batch[uid] - now
        last = self.last_failure.get(job["metadata"]["uid"])
        if last is not None:
            left = last + job_rules.creation_backoff(status.get("failed", 0)) - now
            if left > 0:
                return active, left
        created: list[dict] = []
        diff = min(want - len(active), MAX_POD_CREATE_DELETE_PER_SYNC, allowed)
        self.client.take(diff)  # the calls this sync makes (a refusal ends it sooner, as the ReplicaSet's)
        if want - len(active) > diff:  # the rest a sync period later
            self.next_batch[uid] = now + SYNC_JOB_BATCH_PERIOD
        else:
            self.next_batch.pop(uid, None)
        made, batch = 0, 1
        while made < diff:  # slow start: batches of 1, 2, 4, ...; a batch with a refusal ends the sync
            size = min(batch, diff - made)
            refused = False
            for i in range(made, made + size):
                pod = self._create(job, todo[i] if todo else None)
                if pod is _REFUSED:
                    refused = True
                elif pod is not None:
                    created.append(pod)
            made += size
            batch *= 2
            if refused:
                n = self.refused.get(job["metadata"]["uid"], 0)
                self.refused[job["metadata"]["uid"]] = n + 1
                return active + created, min(MAX_API_BACKOFF, 2.0**n)
        self.refused.pop(job["metadata"]["uid"], None)
        return active + created, (self.next_batch[uid] - now if uid in self.next_batch else None)

    # -- writes -----------------------------------------------------------------------------------------
    def _create(self, job: dict, index: int | None) -> dict | None:
        base = job["metadata"]["name"] + (f"-{index}" if index is not None else "")
        for _ in range(5):
            name = f"{base}-{''.join(self.rng.choice(_ALNUM) for _ in range(5))}"
            try:
                pod = self.store.create(  # a new pod built for this call; the stored one read-only
                    job_rules.pod_from_template(job, name, index),
                    take=True,
                )
            except AlreadyExists:
                continue
            except (Forbidden, Invalid) as err:  # refused by admission or validation (RealPodControl's event)
                # the controller asks with generateName, so the API server names the refused pod by it
                why = err.message.replace(f'"{name}"', f'"{base}-"', 1)
                self.events.record(job, "Warning", "FailedCreate", f"Error creating: {why}")
                return _REFUSED
            self.events.record(job, "Normal", "SuccessfulCreate", f"Created pod: {name}")
            return pod
        return None

    def _delete(self, job: dict, pods: list[dict], count_failed: dict | None = None) -> None:
        """Delete pods; their tracking finalizer goes first, so they are not counted (unless ``count_failed``
        is the status to count them into, as when the job fails)."""
        for pod in pods:
            if count_failed is not None:
                count_failed["failed"] = count_failed.get("failed", 0) + 1
            self._release([pod])
            try:
                self.store.delete("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"])
            except NotFound:
                continue
            self.events.record(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")

    def _release(self, pods: list[dict]) -> None:
        """Remove the tracking finalizer from pods that still have it."""
        for pod in pods:
            fins = pod["metadata"].get("finalizers") or []
            if job_rules.TRACKING_FINALIZER not in fins:
                continue
            cur = self.cache.pods.get((pod["metadata"]["namespace"], pod["metadata"]["name"]))
            if cur is None or cur["metadata"].get("uid") != pod["metadata"].get("uid"):
                continue
            obj = dict(cur)  # read-only: a new top level and metadata, the rest shared with the stored pod
            obj["metadata"] = dict(cur["metadata"])
            obj["metadata"]["finalizers"] = [
                f for f in cur["metadata"].get("finalizers") or [] if f != job_rules.TRACKING_FINALIZER
            ]
            if not obj["metadata"]["finalizers"]:
                del obj["metadata"]["finalizers"]
            obj["metadata"].pop("resourceVersion", None)
            try:
                self.store.update(obj, take=True)
            except NotFound:
                continue

    def _set_counts(self, status: dict, active: list[dict]) -> None:
        status.pop("active", None)
        if active:
            status["active"] = len(active)
        status["ready"] = sum(1 for p in active if is_true(p, "Ready"))
        status.setdefault("uncountedTerminatedPods", {})
        for f in ("succeeded", "failed"):
            if not status.get(f):
                status.pop(f, None)

    def _write_status(self, job: dict, status: dict) -> None:
        if status.get("conditions") == []:
            del status["conditions"]
        if status == (job.get("status") or {}):
            return
        obj = {"apiVersion": "batch/v1", "kind": "Job", "metadata": job["metadata"], "status": status}
        self.store.update_status(obj, take=True)  # ``status`` is only read afterwards

    def _ttl(self, job: dict, status: dict) -> Result | None:
        ttl = job["spec"].get("ttlSecondsAfterFinished")
        cond = job_rules.finished_condition(status)
        if ttl is None or cond is None:
            return None
        at = status.get("completionTime") or cond.get("lastTransitionTime")
        left = (parse_time(at) if at else self.ctx.now()) + ttl - self.ctx.now()
        if left > 0:
            return Result(requeue_after=left)
        with contextlib.suppress(NotFound):
            self.store.delete("Job", job["metadata"]["name"], job["metadata"]["namespace"])
        return None
