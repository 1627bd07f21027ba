"""The RayJob controller: KubeRay's ``rayjob_controller.go`` state machine.

Owns (one writer): ``RayJob.status`` (``jobDeploymentStatus``, ``jobStatus``, ``jobId``, ``rayClusterName``,
``dashboardURL``, ``startTime``, ``endTime``, ``reason``, ``message``, ``succeeded``, ``failed``,
``rayJobInfo``, ``rayClusterStatus``, ``observedGeneration``) and the finalizer ``ray.io/rayjob-finalizer``;
it creates the RayCluster ``<rayjob>-<5 chars>``, the Service ``<rayjob>-head-svc`` and, in K8sJobMode, the
submitter batch Job named exactly ``<rayjob>``.

One reconcile, as upstream's ``Reconcile``: skip RayJobs ``managedBy`` another controller; on deletion drop
the finalizer; run KubeRay's own checks (``validation.py``: failure → ``ValidationFailed`` and a Warning
``InvalidRayJobSpec``/``…Metadata``/``…Status`` event); then one step of the state machine
(``research/cloud.md`` §4.4):

- New: finalizer; ``jobId`` (``spec.jobId`` or ``<rayjob>-<5>``; none in InteractiveMode), ``rayClusterName``
  (``clusterSelector``'s ``ray.io/cluster`` or ``<rayjob>-<5>``), ``startTime`` → Initializing.
- Initializing: ``spec.suspend`` → Suspending; ``activeDeadlineSeconds`` → Failed ``DeadlineExceeded``;
  ``preRunningDeadlineSeconds`` → Failed ``PreRunningDeadlineExceeded``; create the cluster (or find the
  selected one: event ``RayClusterNotFound`` while it is missing); wait for ``state: ready``; set
  ``dashboardURL``; InteractiveMode → Waiting, K8sJobMode creates the submitter; → Running.
- Waiting (InteractiveMode): pre-running deadline; once ``spec.jobId`` is set it becomes ``status.jobId`` →
  Running.
- Running: suspend, active deadline; keeps ``<rayjob>-head-svc`` on the current cluster (not in
  clusterSelector mode); a failed submitter Job → Failed (``AppFailed`` if the Ray job already failed, else
  ``SubmissionFailed``); copies the Ray job's status, message and ``rayJobInfo``; Complete/Failed
  (``AppFailed``) once the Ray job is terminal and (with a submitter) the submitter Job has finished.
- every step ends in ``checkBackoffLimitAndUpdateStatusIfNeeded``: ``status.failed``/``succeeded`` are kept
  (0 from the first write), and a Failed attempt with ``failed < backoffLimit + 1`` becomes Retrying in the
  same write (never visibly Failed), except after ``DeadlineExceeded``; ``endTime`` is set on entering
  Complete or Failed.
- Suspending / Retrying: delete the cluster and the submitter Job, wait until both are gone, reset the
  status → Suspended / New (fresh ids). Suspended + ``suspend: false`` → New.
- Complete / Failed: nothing in clusterSelector mode; else ``deletionStrategy`` (``deletionRules``, or the
  legacy ``onSuccess``/``onFailure`` with ``ttlSecondsAfterFinished``) or ``shutdownAfterJobFinishes``
  (delete the cluster ``ttlSecondsAfterFinished`` after ``endTime``; the submitter Job stays for its logs).

Where the Ray job's status comes from (KubeRay asks the dashboard): the ``RayDashboard`` that accepts the
RayJob (``flexq.kuberay.dashboards``: the live Ray dashboard or the simulated one, chosen by the assembly).
SidecarMode is not run by the twin (``ValidationFailed`` with a
message saying so). Must not import kube, kueue or gke.
"""

from __future__ import annotations

from flexq.api.jsoncopy import clone, clone_kept
from flexq.api.scheme import BUILT
from flexq.clock import format_time, parse_time
from flexq.runtime import Controller, Result, Watch
from flexq.store.store import WatchEvent

from . import names, pods, validation
from .dashboards import POLL_S, RayDashboard
from .dashboards import job_finished as _job_finished
from .dashboards import submission_mode as _mode

TERMINAL_JOB = ("SUCCEEDED", "FAILED", "STOPPED")
TERMINAL_DEPLOYMENT = ("Complete", "Failed")
_OWN_MANAGER = "ray.io/kuberay-operator"
_IMPACT = {"DeleteSelf": 4, "DeleteCluster": 3, "DeleteWorkers": 2, "DeleteNone": 1}


def _origin(ev: WatchEvent) -> list:
    labels = ev.object["metadata"].get("labels") or {}
    name = labels.get(names.LABEL_ORIGIN_NAME)
    if name and labels.get(names.LABEL_ORIGIN_CRD) == "RayJob":
        return [(ev.object["metadata"].get("namespace", ""), name)]
    return []


def _has_submitter(rj: dict) -> bool:
    return _mode(rj) in ("K8sJobMode", "SidecarMode")


class RayJobController(Controller):
    """Drives RayJobs through KubeRay's states (see the module docstring)."""

    name = "kuberay-rayjob"

    def __init__(self, ctx, dashboards: list[RayDashboard]) -> None:
        super().__init__(ctx)
        self.dashboards = list(dashboards)

    def watches(self) -> list[Watch]:
        return [Watch("RayJob"), Watch("RayCluster", _origin), Watch("Job", _origin)]

    # -- entry --------------------------------------------------------------------------------------

    def reconcile(self, key) -> Result | None:
        ns, name = key
        stored = self.store.peek("RayJob", name, ns)  # read-only
        if stored is None:
            return None
        # not a deep copy of the whole RayJob (its cluster spec is large): the steps replace only its
        # top-level ``status`` and its metadata's ``finalizers`` (metadata is copied one level); the rest is read
        rj = dict(stored)
        rj["metadata"] = dict(stored["metadata"])
        if (rj["spec"].get("managedBy") or _OWN_MANAGER) != _OWN_MANAGER:
            return None  # e.g. kueue.x-k8s.io/multikueue: another controller runs it
        if rj["metadata"].get("deletionTimestamp"):
            return self._finalize(rj)
        # stored by the status write (take): the steps set and remove its top-level fields only, and replace
        # (never change) its nested ones (``rayClusterStatus``, ``rayJobInfo``), so one level is copied
        status = dict(rj.get("status") or {})
        err = validation.validate_rayjob(rj)
        if err is None and _mode(rj) == "SidecarMode":
            err = validation.SpecRefused(
                "InvalidRayJobSpec",
                "submissionMode SidecarMode is not supported by the "
                "flexq twin (K8sJobMode, HTTPMode and InteractiveMode are)",
            )
        if err is not None:
            if (status.get("jobDeploymentStatus"), status.get("message")) != ("ValidationFailed", str(err)):
                self.events.record(rj, "Warning", err.reason, f"{ns}/{name}: {err}")
                status.update(
                    {
                        "jobDeploymentStatus": "ValidationFailed",
                        "reason": "ValidationFailed",
                        "message": str(err),
                    }
                )
                self._write(rj, status)
            return None
        handler = {
            "": self._new,
            "New": self._new,
            "Initializing": self._initializing,
            "Waiting": self._waiting,
            "Running": self._running,
            "Suspending": self._suspending,
            "Retrying": self._suspending,
            "Suspended": self._suspended,
            "Complete": self._finished,
            "Failed": self._finished,
        }.get(status.get("jobDeploymentStatus", ""))
        if handler is None:  # ValidationFailed (KubeRay leaves it there even once the spec is fixed)
            return None
        return handler(rj, status)

    def _end_step(self, rj: dict, st: dict, result: Result | None) -> Result | None:
        """``checkBackoffLimitAndUpdateStatusIfNeeded`` and the status write that follows every step."""
        old = rj.get("status") or {}
        failed, succeeded = st.get("failed") or 0, st.get("succeeded") or 0
        ds = st.get("jobDeploymentStatus", "")
        if ds == "Failed":
            failed += 1
        if ds == "Complete" and st.get("jobStatus") == "SUCCEEDED":
            succeeded += 1
        st["failed"], st["succeeded"] = failed, succeeded
        limit = rj["spec"].get("backoffLimit")
        if (
            ds == "Failed"
            and limit is not None
            and failed < limit + 1
            and st.get("reason") not in ("DeadlineExceeded", "JobStatusCheckTimeoutExceeded")
        ):
            st["jobDeploymentStatus"] = ds = "Retrying"
        if ds in TERMINAL_DEPLOYMENT and old.get("jobDeploymentStatus") != ds:
            st["endTime"] = format_time(self.ctx.now())
        self._write(rj, st)
        if ds != old.get("jobDeploymentStatus"):
            return Result(requeue_after=0)
        return result

    def _write(self, rj: dict, status: dict) -> dict:
        status["observedGeneration"] = rj["metadata"].get("generation", 1)
        if status != (rj.get("status") or {}):
            rj["status"] = status
            # ``status`` is this reconcile's own (a copy; only read after this write): the store keeps it
            rj = self.store.update_status(rj, take=True)
        return rj

    def _finalize(self, rj: dict) -> Result | None:
        fins = [f for f in rj["metadata"].get("finalizers") or [] if f != names.FINALIZER_RAYJOB]
        if fins != (rj["metadata"].get("finalizers") or []):
            rj["metadata"]["finalizers"] = fins
            self.store.update(rj)
        return None

    # -- states -------------------------------------------------------------------------------------

    def _new(self, rj: dict, st: dict) -> Result | None:
        """``initRayJobStatusIfNeed``: ids and ``startTime`` before anything is created."""
        if names.FINALIZER_RAYJOB not in (rj["metadata"].get("finalizers") or []):
            rj["metadata"]["finalizers"] = [*(rj["metadata"].get("finalizers") or []), names.FINALIZER_RAYJOB]
            rj = clone(self.store.update(rj))  # the stored version is read-only
        spec = rj["spec"]
        if not (st.get("jobId") and st.get("rayClusterName") and st.get("jobStatus")):
            rng = self.ctx.rng("kuberay")
            name = rj["metadata"]["name"]
            if _mode(rj) != "InteractiveMode" and not st.get("jobId"):
                st["jobId"] = spec.get("jobId") or f"{name}-{names.rand_suffix(rng)}"
            if not st.get("rayClusterName"):
                st["rayClusterName"] = (spec.get("clusterSelector") or {}).get(
                    names.LABEL_CLUSTER
                ) or f"{name}-{names.rand_suffix(rng)}"
            st.setdefault("jobStatus", "")
            st.update({"jobDeploymentStatus": "Initializing", "startTime": format_time(self.ctx.now())})
        return self._end_step(rj, st, Result(requeue_after=0))

    def _deadline(self, rj: dict, st: dict, field: str, reason: str) -> tuple[bool, float | None]:
        """``check…DeadlineAndUpdateStatusIfNeeded``: (passed, seconds left)."""
        limit = rj["spec"].get(field)
        if limit is None:
            return False, None
        start = parse_time(st["startTime"]) if st.get("startTime") else self.ctx.now()
        left = start + limit - self.ctx.now()
        if left > 0:
            return False, left
        st.update(
            {
                "jobDeploymentStatus": "Failed",
                "reason": reason,
                "message": f"The RayJob has passed the {field}. StartTime: {st.get('startTime')}. "
                f"{field[0].upper() + field[1:]}: {limit}",
            }
        )
        return True, None

    def _deadlines(self, rj: dict, st: dict, pre_running: bool) -> tuple[bool, Result | None]:
        checks = (
            [("activeDeadlineSeconds", "DeadlineExceeded")] if st["jobDeploymentStatus"] != "Waiting" else []
        )
        if pre_running:
            checks.append(("preRunningDeadlineSeconds", "PreRunningDeadlineExceeded"))
        soonest: float | None = None
        for field, reason in checks:
            passed, left = self._deadline(rj, st, field, reason)
            if passed:
                return True, None
            if left is not None:
                soonest = left if soonest is None else min(soonest, left)
        return False, None if soonest is None else Result(requeue_after=soonest)

    def _suspend_if_asked(self, rj: dict, st: dict) -> bool:
        """``updateStatusToSuspendingIfNeeded`` (only Initializing and Running may suspend)."""
        if rj["spec"].get("suspend"):
            st["jobDeploymentStatus"] = "Suspending"
            return True
        return False

    def _initializing(self, rj: dict, st: dict) -> Result | None:
        if self._suspend_if_asked(rj, st):
            return self._end_step(rj, st, None)
        passed, timer = self._deadlines(rj, st, pre_running=True)
        if passed:
            return self._end_step(rj, st, None)
        ns = rj["metadata"]["namespace"]
        cluster = self._get_or_create_cluster(rj, st)
        if cluster is None:  # clusterSelector names a cluster that is not there (yet): look again in 3 s
            return self._end_step(
                rj, st, Result(requeue_after=min(3.0, timer.requeue_after or 3.0) if timer else 3.0)
            )
        if not st.get("dashboardURL"):
            if (cluster.get("status") or {}).get("state") != "ready":
                st["rayClusterStatus"] = cluster.get("status") or {}
                if rj["spec"].get("clusterSelector"):  # not ours, so not watched: KubeRay's 3 s requeue
                    timer = Result(requeue_after=min(3.0, timer.requeue_after or 3.0) if timer else 3.0)
                return self._end_step(rj, st, timer)  # woken by the RayCluster's status change
            st["dashboardURL"] = names.dashboard_url(st["rayClusterName"], ns)
        st["rayClusterStatus"] = cluster.get("status") or {}
        if _mode(rj) == "InteractiveMode":
            st["jobDeploymentStatus"] = "Waiting"
            return self._end_step(rj, st, None)
        if _mode(rj) == "K8sJobMode" and self.store.peek("Job", rj["metadata"]["name"], ns) is None:
            self.store.create(
                pods.submitter_job(rj, job_id=st["jobId"], dashboard_url=st["dashboardURL"], cluster=cluster),
                admission=BUILT,  # a built-in Job from the RayJob's template: the API server defaults it
                take=True,  # built for this call
            )
            self.events.record(
                rj,
                "Normal",
                "CreatedRayJobSubmitter",
                f"Created Kubernetes Job {ns}/{rj['metadata']['name']}",
            )
        st["jobDeploymentStatus"] = "Running"
        return self._end_step(rj, st, None)

    def _waiting(self, rj: dict, st: dict) -> Result | None:
        """InteractiveMode: the user submits the job and then writes its id into ``spec.jobId``."""
        passed, timer = self._deadlines(rj, st, pre_running=True)
        if not passed:
            if not rj["spec"].get("jobId"):
                return timer  # woken when the spec changes
            st.update({"jobId": rj["spec"]["jobId"], "jobDeploymentStatus": "Running"})
        return self._end_step(rj, st, None)

    def _running(self, rj: dict, st: dict) -> Result | None:
        if self._suspend_if_asked(rj, st):
            return self._end_step(rj, st, None)
        passed, timer = self._deadlines(rj, st, pre_running=False)
        if passed:
            return self._end_step(rj, st, None)
        ns, name = rj["metadata"]["namespace"], rj["metadata"]["name"]
        cluster = self._get_or_create_cluster(rj, st)
        if cluster is None:
            return self._end_step(rj, st, Result(requeue_after=3.0))
        if not rj["spec"].get("clusterSelector"):
            self._ensure_job_service(rj, st["rayClusterName"])
        job = self.store.peek("Job", name, ns) if _mode(rj) == "K8sJobMode" else None  # read-only
        finished = _job_finished(job)
        dash = self._dashboard(rj)
        if finished is not None and finished[0] == "Failed" and dash is not None and dash.polls:
            st["jobDeploymentStatus"] = "Failed"
            if st.get("jobStatus") == "FAILED":
                st["reason"] = "AppFailed"
            else:
                st.update(
                    {
                        "reason": "SubmissionFailed",
                        "message": f"Job submission has failed. Reason: {finished[1]}. Message: {finished[2]}",
                    }
                )
            return self._end_step(rj, st, None)
        info, wait = self._job_info(rj, st, job)
        if info is None:  # not known to the dashboard (yet)
            return self._end_step(rj, st, self._poll(rj, timer, wait))
        terminal = info.get("status") in TERMINAL_JOB and (finished is not None or not _has_submitter(rj))
        st.update(
            {
                "rayClusterStatus": cluster.get("status") or {},
                "jobStatus": info.get("status", ""),
                "jobDeploymentStatus": "Running",
                "message": info.get("message", ""),
            }
        )
        st.pop("reason", None)
        if terminal:
            st["jobDeploymentStatus"] = "Complete" if info["status"] == "SUCCEEDED" else "Failed"
            if info["status"] == "FAILED":
                st["reason"] = "AppFailed"
        jinfo = dict(st.get("rayJobInfo") or {})
        for src, dst in (("start_time", "startTime"), ("end_time", "endTime")):
            if info.get(src):
                jinfo[dst] = format_time(float(info[src]) / 1000.0)
        st["rayJobInfo"] = jinfo
        if not st["message"]:
            st.pop("message")
        return self._end_step(rj, st, self._poll(rj, timer, wait))

    def _poll(self, rj: dict, timer: Result | None, wait: float | None) -> Result | None:
        """When to look again: the deadline, the simulated job's end, or the real dashboard's poll period."""
        options = [t for t in (timer.requeue_after if timer else None, wait) if t is not None]
        dash = self._dashboard(rj)
        if dash is not None and dash.polls:
            options.append(POLL_S)
        return Result(requeue_after=min(options)) if options else None

    def _suspending(self, rj: dict, st: dict) -> Result | None:
        """Suspending and Retrying: delete the cluster and the submitter; when both are gone, reset."""
        ns, name = rj["metadata"]["namespace"], rj["metadata"]["name"]
        gone = True
        cname = st.get("rayClusterName")
        if cname and not rj["spec"].get("clusterSelector"):
            c = self.store.peek("RayCluster", cname, ns)
            if c is not None:
                gone = False
                if not c["metadata"].get("deletionTimestamp"):
                    self._delete_cluster(rj, cname)
        job = self.store.peek("Job", name, ns) if _mode(rj) == "K8sJobMode" else None
        if job is not None:
            gone = False
            if not job["metadata"].get("deletionTimestamp"):
                self.store.delete("Job", name, ns)
                self.events.record(
                    rj, "Normal", "DeletedRayJobSubmitter", f"Deleted submitter K8s Job {ns}/{name}"
                )
        if not gone:
            return Result(requeue_after=1.0)
        for f in (
            "jobId",
            "rayClusterName",
            "dashboardURL",
            "message",
            "reason",
            "rayJobInfo",
            "rayClusterStatus",
        ):
            st.pop(f, None)
        st.update(
            {
                "jobStatus": "",
                "jobDeploymentStatus": "Suspended" if st["jobDeploymentStatus"] == "Suspending" else "New",
            }
        )
        return self._end_step(rj, st, None)

    def _suspended(self, rj: dict, st: dict) -> Result | None:
        if rj["spec"].get("suspend"):
            return None
        st.update({"jobStatus": "", "jobDeploymentStatus": "New"})
        return self._end_step(rj, st, None)

    # -- after the end ------------------------------------------------------------------------------

    def _finished(self, rj: dict, st: dict) -> Result | None:
        """Complete / Failed: the deletion mechanisms (none for an existing cluster chosen by selector)."""
        spec = rj["spec"]
        if spec.get("clusterSelector"):
            return None
        strategy = spec.get("deletionStrategy")
        if strategy is not None:
            if strategy.get("deletionRules"):
                return self._deletion_rules(rj, st, strategy["deletionRules"])
            key = {"SUCCEEDED": "onSuccess", "FAILED": "onFailure"}.get(st.get("jobStatus", ""))
            policy = ((strategy.get(key) or {}).get("policy") if key else None) or "DeleteNone"
            if policy == "DeleteNone":
                return None
            wait = self._since_end(st) + (spec.get("ttlSecondsAfterFinished") or 0)
            return Result(requeue_after=wait) if wait > 0 else self._execute(rj, st, policy)
        if not spec.get("shutdownAfterJobFinishes"):
            return None
        wait = self._since_end(st) + (spec.get("ttlSecondsAfterFinished") or 0)
        if wait > 0:
            return Result(requeue_after=wait)
        return self._execute(rj, st, "DeleteCluster")

    def _since_end(self, st: dict) -> float:
        """``endTime - now`` (negative once the end is past)."""
        return (parse_time(st["endTime"]) if st.get("endTime") else self.ctx.now()) - self.ctx.now()

    def _deletion_rules(self, rj: dict, st: dict, rules: list[dict]) -> Result | None:
        """``handleDeletionRules``: run the most destructive overdue rule, requeue for the next pending one."""
        overdue, nxt = [], None
        for rule in rules:
            cond = rule.get("condition") or {}
            if cond.get("jobStatus") is not None:
                if cond["jobStatus"] != st.get("jobStatus"):
                    continue
            elif cond.get("jobDeploymentStatus") != st.get("jobDeploymentStatus"):
                continue
            wait = self._since_end(st) + (cond.get("ttlSeconds") or 0)
            if wait > 0:
                nxt = wait if nxt is None else min(nxt, wait)
            elif not self._deletion_done(rj, st, rule["policy"]):
                overdue.append(rule)
        if overdue:
            self._execute(rj, st, max(overdue, key=lambda r: _IMPACT.get(r["policy"], 0))["policy"])
        return Result(requeue_after=nxt) if nxt is not None else None

    def _deletion_done(self, rj: dict, st: dict, policy: str) -> bool:
        cluster = self.store.peek("RayCluster", st.get("rayClusterName") or "", rj["metadata"]["namespace"])
        if policy == "DeleteNone":
            return True
        if policy == "DeleteSelf":
            return False
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return True
        if policy == "DeleteWorkers":
            return all(g.get("suspend") for g in cluster["spec"].get("workerGroupSpecs") or [])
        return False

    def _execute(self, rj: dict, st: dict, policy: str) -> Result | None:
        """``executeDeletionPolicy``."""
        ns, cname = rj["metadata"]["namespace"], st.get("rayClusterName") or ""
        if policy == "DeleteCluster":
            cluster = self.store.peek("RayCluster", cname, ns)
            if cluster is not None and not cluster["metadata"].get("deletionTimestamp"):
                self._delete_cluster(rj, cname)
        elif policy == "DeleteWorkers":
            cluster = self.store.try_get("RayCluster", cname, ns)
            if cluster is not None:
                for g in cluster["spec"].get("workerGroupSpecs") or []:
                    g["suspend"] = True
                self.store.update(cluster)
                self.events.record(
                    rj,
                    "Normal",
                    "UpdatedRayCluster",
                    f"Set the `suspend` field to true for all worker groups in cluster {ns}/{cname}",
                )
        elif policy == "DeleteSelf":
            self.store.delete("RayJob", rj["metadata"]["name"], ns)
        return None

    # -- helpers ------------------------------------------------------------------------------------

    def _delete_cluster(self, rj: dict, cname: str) -> None:
        ns = rj["metadata"]["namespace"]
        self.store.delete("RayCluster", cname, ns)
        self.events.record(rj, "Normal", "DeletedRayCluster", f"Deleted cluster {ns}/{cname}")

    def _get_or_create_cluster(self, rj: dict, st: dict) -> dict | None:
        """``getOrCreateRayClusterInstance``: the selected cluster, or the RayJob's own (created if missing)."""
        ns, cname = rj["metadata"]["namespace"], st["rayClusterName"]
        cluster = self.store.peek("RayCluster", cname, ns)  # read-only: the steps only read it
        if cluster is not None:
            return cluster
        if rj["spec"].get("clusterSelector"):
            self.events.record(
                rj,
                "Warning",
                "RayClusterNotFound",
                f"RayCluster {ns}/{cname} set in the "
                "clusterSelector is not found. It must be created manually",
            )
            return None
        cluster = self.store.create(self._cluster_for(rj, cname), take=True)
        self.events.record(rj, "Normal", "CreatedRayCluster", f"Created RayCluster {ns}/{cname}")
        return cluster

    def _dashboard(self, rj: dict) -> RayDashboard | None:
        return next((d for d in self.dashboards if d.accepts(rj)), None)

    def _job_info(self, rj: dict, st: dict, job: dict | None) -> tuple[dict | None, float | None]:
        """The dashboard's answer for ``status.jobId`` and, when it knows, seconds until it changes."""
        dash = self._dashboard(rj)
        return dash.job_info(rj, st, job, self.ctx.now()) if dash else (None, None)

    def _cluster_for(self, rj: dict, cname: str) -> dict:
        """``constructRayClusterForRayJob``: the RayJob's labels and annotations, plus where it came from."""
        meta = rj["metadata"]
        anns = {
            k: v
            for k, v in (meta.get("annotations") or {}).items()
            if k not in (names.ANN_RUN_SECONDS, names.ANN_OUTCOME)
        }
        if names.is_simulated(rj):
            anns[names.ANN_SIMULATED] = "true"
        # The queue-name label stays on the RayJob: flexq's Kueue would otherwise queue the child cluster too.
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != names.QUEUE_LABEL}
        labels.update(
            {
                names.LABEL_ORIGIN_NAME: meta["name"],
                names.LABEL_ORIGIN_CRD: "RayJob",
                names.LABEL_SUBMISSION_MODE: _mode(rj),
            }
        )
        cmeta = {
            "name": cname,
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayJob",
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        if anns:
            cmeta["annotations"] = anns
        return {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": cmeta,
            "spec": clone_kept(rj["spec"]["rayClusterSpec"]),
        }

    def _ensure_job_service(self, rj: dict, cname: str) -> None:
        """``reconcileServices``: ``<rayjob>-head-svc`` on the current cluster's head (what the tutorial
        port-forwards); its selector follows the cluster when a retry or resume makes a new one."""
        ns = rj["metadata"]["namespace"]
        sname = names.head_service_name(rj["metadata"]["name"])
        want = pods.head_service(rj, name=sname, cluster_name=cname)
        cur = self.store.peek("Service", sname, ns)  # read-only
        if cur is None:
            self.store.create(want, admission=BUILT)  # defaulted (built-in)
            self.events.record(rj, "Normal", "CreatedService", f"Created the service {ns}/{sname}")
        elif cur["spec"].get("selector") != want["spec"]["selector"]:
            cur = clone(cur)
            cur["spec"]["selector"] = want["spec"]["selector"]
            self.store.update(cur)
            self.events.record(rj, "Normal", "UpdatedService", f"Updated the service {ns}/{sname}")
