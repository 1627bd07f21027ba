"""The RayJob controller: KubeRay's ``rayjob_controller.go`` state machine, in K8sJobMode.

Owns (one writer): ``RayJob.status`` (``jobDeploymentStatus``, ``jobStatus``, ``jobId``, ``rayClusterName``,
``dashboardURL``, ``startTime``, ``endTime``, ``reason``, ``message``, ``succeeded``, ``failed``,
``rayJobInfo``, ``rayClusterStatus``, ``observedGeneration``) and the finalizer ``ray.io/rayjob-finalizer``;
it creates the RayCluster ``<rayjob>-<5 chars>``, the Service ``<rayjob>-head-svc`` and the submitter batch
Job named exactly ``<rayjob>``.

States (``research/cloud.md`` §4.4): New → Initializing (ids drawn; suspended jobs go on to Suspending) →
[cluster ready] → submitter created → Running → Complete | Failed (reasons ``AppFailed``,
``SubmissionFailed``, ``DeadlineExceeded``, ``PreRunningDeadlineExceeded``). Suspending (``spec.suspend``
while Initializing/Running: Kueue's switch) deletes the cluster and submitter, resets status → Suspended;
unsuspending → New with fresh ids. Failed with ``failed <= backoffLimit`` → Retrying (cleanup) → New.
``shutdownAfterJobFinishes`` deletes the cluster ``ttlSecondsAfterFinished`` after the end.

Where the Ray job's status comes from (KubeRay asks the dashboard): a live cluster run by the local Ray
executor is asked through ``JobInfoSource.job_info`` (cached, non-blocking); a simulated RayJob (run-seconds
annotation, or a twin whose executor is ``simulated``) reads it from its submitter Job: running while the
Job runs, ``SUCCEEDED``/``FAILED`` when it completes or fails. Must not import kube, kueue or gke.
"""

from __future__ import annotations

import copy
from typing import Protocol

from flexq.clock import format_time, parse_time
from flexq.runtime import Controller, Result, Watch
from flexq.store.store import WatchEvent

from . import names, pods

POLL_S = 2.0  # how often a running real job's dashboard status is read (KubeRay: 3 s)
TERMINAL_JOB = ("SUCCEEDED", "FAILED", "STOPPED")


class JobInfoSource(Protocol):
    """Answers ``GET /api/jobs/<id>`` for a cluster, without blocking (None: not known yet)."""

    def job_info(self, namespace: str, cluster: str, job_id: str) -> dict | None:
        """The dashboard's job details (``status``, ``message``, ``start_time``, ``end_time``...)."""


def _origin(ev: WatchEvent) -> list:
    labels = ev.object["metadata"].get("labels") or {}
    name = labels.get(names.LABEL_ORIGIN_NAME)
    if name and labels.get(names.LABEL_ORIGIN_CRD) == "RayJob":
        return [(ev.object["metadata"].get("namespace", ""), name)]
    return []


def _job_finished(job: dict | None) -> tuple[str, str] | None:
    """``("Complete"|"Failed", message)`` once the batch Job has that condition, else None."""
    for c in ((job or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c["type"], c.get("message", "") or c.get("reason", "")
    return None


class RayJobController(Controller):
    """Drives RayJobs through KubeRay's states (see the module docstring)."""

    name = "kuberay-rayjob"

    def __init__(self, ctx, sources: list[JobInfoSource] | None = None) -> None:
        super().__init__(ctx)
        self.sources = list(sources or [])

    def watches(self) -> list[Watch]:
        return [Watch("RayJob"), Watch("RayCluster", _origin), Watch("Job", _origin)]

    # -- entry --------------------------------------------------------------------------------------

    def reconcile(self, key) -> Result | None:
        ns, name = key
        rj = self.store.try_get("RayJob", name, ns)
        if rj is None:
            return None
        if rj["metadata"].get("deletionTimestamp"):
            return self._finalize(rj)
        if names.FINALIZER_RAYJOB not in (rj["metadata"].get("finalizers") or []):
            rj["metadata"].setdefault("finalizers", []).append(names.FINALIZER_RAYJOB)
            rj = self.store.update(rj, validate=False)
        status = dict(rj.get("status") or {})
        state = status.get("jobDeploymentStatus", "")
        handler = {
            "": self._new, "New": self._new, "Initializing": self._initializing, "Running": self._running,
            "Suspending": self._suspending, "Retrying": self._suspending, "Suspended": self._suspended,
            "Complete": self._finished, "Failed": self._finished,
        }.get(state)
        if handler is None:  # ValidationFailed, Waiting: nothing to do
            return None
        return handler(rj, status)

    def _write(self, rj: dict, status: dict) -> dict:
        status["observedGeneration"] = rj["metadata"].get("generation", 1)
        if status != (rj.get("status") or {}):
            rj["status"] = status
            rj = self.store.update_status(rj)
        return rj

    def _finalize(self, rj: dict) -> Result | None:
        fins = [f for f in rj["metadata"].get("finalizers") or [] if f != names.FINALIZER_RAYJOB]
        if fins != (rj["metadata"].get("finalizers") or []):
            rj["metadata"]["finalizers"] = fins
            self.store.update(rj, validate=False)
        return None

    # -- states -------------------------------------------------------------------------------------

    def _new(self, rj: dict, st: dict) -> Result | None:
        spec = rj["spec"]
        if not spec.get("rayClusterSpec") and not spec.get("clusterSelector"):
            st.update({"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed",
                       "message": "one of RayClusterSpec or ClusterSelector must be set"})
            self._write(rj, st)
            return None
        if spec.get("submissionMode", "K8sJobMode") != "K8sJobMode":
            st.update({"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed",
                       "message": f"submissionMode {spec.get('submissionMode')} is not supported by the flexq "
                                  "twin (K8sJobMode only)"})
            self._write(rj, st)
            return None
        rng = self.ctx.rng("kuberay")
        name = rj["metadata"]["name"]
        st.update({"jobId": spec.get("jobId") or f"{name}-{names.rand_suffix(rng)}",
                   "rayClusterName": (spec.get("clusterSelector") or {}).get(names.LABEL_CLUSTER)
                   or f"{name}-{names.rand_suffix(rng)}",
                   "jobStatus": "", "jobDeploymentStatus": "Initializing",
                   "startTime": format_time(self.ctx.now())})
        self._write(rj, st)
        return Result(requeue_after=0)

    def _deadline(self, rj: dict, st: dict) -> Result | None:
        """activeDeadlineSeconds / preRunningDeadlineSeconds: Failed, or a requeue at the deadline."""
        spec = rj["spec"]
        start = parse_time(st["startTime"]) if st.get("startTime") else self.ctx.now()
        now = self.ctx.now()
        checks = [(spec.get("activeDeadlineSeconds"), "DeadlineExceeded", "activeDeadlineSeconds")]
        if st.get("jobDeploymentStatus") == "Initializing" or st.get("jobStatus") in ("", "PENDING"):
            checks.append((spec.get("preRunningDeadlineSeconds"), "PreRunningDeadlineExceeded",
                           "preRunningDeadlineSeconds"))
        soonest = None
        for limit, reason, field in checks:
            if limit is None:
                continue
            if now >= start + limit:
                st.update({"jobDeploymentStatus": "Failed", "reason": reason, "endTime": format_time(now),
                           "message": f"The RayJob has passed the {field}. StartTime: {st.get('startTime')}. "
                                      f"{field[0].upper() + field[1:]}: {limit}",
                           "failed": (st.get("failed") or 0) + 1})
                self._write(rj, st)
                self.events.record(rj, "Warning", reason, st["message"])
                return Result(requeue_after=0)
            soonest = start + limit - now if soonest is None else min(soonest, start + limit - now)
        return None if soonest is None else Result(requeue_after=soonest)

    def _initializing(self, rj: dict, st: dict) -> Result | None:
        if rj["spec"].get("suspend"):
            st["jobDeploymentStatus"] = "Suspending"
            self._write(rj, st)
            return Result(requeue_after=0)
        timer = self._deadline(rj, st)
        if st["jobDeploymentStatus"] == "Failed":
            return timer
        ns = rj["metadata"]["namespace"]
        cluster = self.store.try_get("RayCluster", st["rayClusterName"], ns)
        if cluster is None and not rj["spec"].get("clusterSelector"):
            cluster = self.store.create(self._cluster_for(rj, st["rayClusterName"]))
            self.events.record(rj, "Normal", "Created", f"Created RayCluster {ns}/{st['rayClusterName']}")
        self._ensure_job_service(rj, st["rayClusterName"])
        if cluster is None or (cluster.get("status") or {}).get("state") != "ready":
            st["rayClusterStatus"] = (cluster or {}).get("status") or {}
            self._write(rj, st)
            return timer  # woken by the RayCluster's status change
        st["dashboardURL"] = names.dashboard_url(st["rayClusterName"], ns)
        st["rayClusterStatus"] = cluster.get("status") or {}
        if self.store.try_get("Job", rj["metadata"]["name"], ns) is None:
            self.store.create(pods.submitter_job(rj, job_id=st["jobId"], dashboard_url=st["dashboardURL"]))
            self.events.record(rj, "Normal", "Created", f"Created Kubernetes Job {ns}/{rj['metadata']['name']}")
        st["jobDeploymentStatus"] = "Running"
        self._write(rj, st)
        return Result(requeue_after=0)

    def _running(self, rj: dict, st: dict) -> Result | None:
        if rj["spec"].get("suspend"):
            st["jobDeploymentStatus"] = "Suspending"
            self._write(rj, st)
            return Result(requeue_after=0)
        timer = self._deadline(rj, st)
        if st["jobDeploymentStatus"] == "Failed":
            return timer
        ns, name = rj["metadata"]["namespace"], rj["metadata"]["name"]
        self._ensure_job_service(rj, st["rayClusterName"])
        job = self.store.try_get("Job", name, ns)
        finished = _job_finished(job)
        if finished is not None and finished[0] == "Failed" and not self._simulated(rj):
            st.update({"jobDeploymentStatus": "Failed", "reason": "SubmissionFailed",
                       "message": f"Job submission has failed. Reason: {finished[1]}",
                       "endTime": format_time(self.ctx.now()), "failed": (st.get("failed") or 0) + 1})
            self._write(rj, st)
            return Result(requeue_after=0)
        info = self._job_info(rj, st, job)
        if info is not None:
            st["jobStatus"] = info.get("status", st.get("jobStatus", ""))
            jinfo = {}
            for src, dst in (("start_time", "startTime"), ("end_time", "endTime")):
                if info.get(src):
                    jinfo[dst] = format_time(float(info[src]) / 1000.0)
            st["rayJobInfo"] = jinfo
            if info.get("message") and st["jobStatus"] in TERMINAL_JOB:
                st["message"] = info["message"]
        if st.get("jobStatus") in TERMINAL_JOB and finished is not None:
            ok = st["jobStatus"] == "SUCCEEDED"
            st.update({"jobDeploymentStatus": "Complete" if ok else "Failed",
                       "endTime": format_time(self.ctx.now())})
            if ok:
                st["succeeded"] = (st.get("succeeded") or 0) + 1
                st.pop("reason", None)
            else:
                st.update({"reason": "AppFailed", "failed": (st.get("failed") or 0) + 1})
            self._write(rj, st)
            return Result(requeue_after=0)
        self._write(rj, st)
        if self._simulated(rj):
            return timer
        return Result(requeue_after=min(POLL_S, timer.requeue_after) if timer and timer.requeue_after else POLL_S)

    def _suspending(self, rj: dict, st: dict) -> Result | None:
        """Suspending and Retrying: delete the cluster and the submitter; when both are gone, reset."""
        ns, name = rj["metadata"]["namespace"], rj["metadata"]["name"]
        gone = True
        cname = st.get("rayClusterName")
        if cname and not rj["spec"].get("clusterSelector"):
            c = self.store.try_get("RayCluster", cname, ns)
            if c is not None:
                gone = False
                if not c["metadata"].get("deletionTimestamp"):
                    self.store.delete("RayCluster", cname, ns)
        job = self.store.try_get("Job", name, ns)
        if job is not None:
            gone = False
            if not job["metadata"].get("deletionTimestamp"):
                self.store.delete("Job", name, ns)
        if not gone:
            return Result(requeue_after=1.0)
        nxt = "Suspended" if st["jobDeploymentStatus"] == "Suspending" else "New"
        for f in ("jobId", "rayClusterName", "dashboardURL", "message", "reason", "rayJobInfo", "endTime",
                  "rayClusterStatus"):
            st.pop(f, None)
        st.update({"jobStatus": "", "jobDeploymentStatus": nxt})
        if nxt == "Suspended":
            st.pop("startTime", None)
        self._write(rj, st)
        return Result(requeue_after=0)

    def _suspended(self, rj: dict, st: dict) -> Result | None:
        if rj["spec"].get("suspend"):
            return None
        st["jobDeploymentStatus"] = "New"
        self._write(rj, st)
        return Result(requeue_after=0)

    def _finished(self, rj: dict, st: dict) -> Result | None:
        spec = rj["spec"]
        ns = rj["metadata"]["namespace"]
        if (st["jobDeploymentStatus"] == "Failed" and st.get("reason") not in (
                "DeadlineExceeded", "PreRunningDeadlineExceeded", "ValidationFailed")
                and (st.get("failed") or 0) <= (spec.get("backoffLimit") or 0)):
            st["jobDeploymentStatus"] = "Retrying"
            self._write(rj, st)
            return Result(requeue_after=0)
        if not spec.get("shutdownAfterJobFinishes") or spec.get("clusterSelector"):
            return None
        cname = st.get("rayClusterName")
        if not cname or self.store.try_get("RayCluster", cname, ns) is None:
            return None
        end = parse_time(st["endTime"]) if st.get("endTime") else self.ctx.now()
        wait = end + (spec.get("ttlSecondsAfterFinished") or 0) - self.ctx.now()
        if wait > 0:
            return Result(requeue_after=wait)
        self.store.delete("RayCluster", cname, ns)
        self.events.record(rj, "Normal", "Deleted", f"Deleted RayCluster {ns}/{cname}")
        return None

    # -- helpers ------------------------------------------------------------------------------------

    def _simulated(self, rj: dict) -> bool:
        return names.is_simulated(rj) or self.ctx.settings.get("executor") == "simulated" or not self.sources

    def _job_info(self, rj: dict, st: dict, job: dict | None) -> dict | None:
        if self._simulated(rj):
            return _info_from_submitter(job)
        for src in self.sources:
            info = src.job_info(rj["metadata"]["namespace"], st["rayClusterName"], st["jobId"])
            if info is not None:
                return info
        return None

    def _cluster_for(self, rj: dict, cname: str) -> dict:
        meta = rj["metadata"]
        anns = {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith("twin.flexq.dev/")
                and k not in (names.ANN_RUN_SECONDS, names.ANN_OUTCOME)}
        if names.is_simulated(rj):
            anns[names.ANN_SIMULATED] = "true"
        cmeta = {"name": cname, "namespace": meta["namespace"],
                 "labels": {**{k: v for k, v in (meta.get("labels") or {}).items() if k != names.QUEUE_LABEL},
                            names.LABEL_ORIGIN_NAME: meta["name"], names.LABEL_ORIGIN_CRD: "RayJob"},
                 "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": meta["name"],
                                      "uid": meta.get("uid", ""), "controller": True, "blockOwnerDeletion": True}]}
        if anns:
            cmeta["annotations"] = anns
        return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": cmeta,
                "spec": copy.deepcopy(rj["spec"]["rayClusterSpec"])}

    def _ensure_job_service(self, rj: dict, cname: str) -> None:
        """``<rayjob>-head-svc``, pointing at the current cluster's head (what the tutorial port-forwards)."""
        ns = rj["metadata"]["namespace"]
        sname = names.head_service_name(rj["metadata"]["name"])
        want = pods.head_service(rj, name=sname, cluster_name=cname)
        cur = self.store.try_get("Service", sname, ns)
        if cur is None:
            self.store.create(want)
        elif cur["spec"].get("selector") != want["spec"]["selector"]:
            cur["spec"]["selector"] = want["spec"]["selector"]
            self.store.update(cur)


def _info_from_submitter(job: dict | None) -> dict | None:
    """The simulated dashboard: the Ray job's status is the submitter Job's."""
    if job is None:
        return None
    finished = _job_finished(job)
    if finished is not None:
        return {"status": "SUCCEEDED" if finished[0] == "Complete" else "FAILED", "message": finished[1]}
    return {"status": "RUNNING" if ((job.get("status") or {}).get("active") or 0) > 0 else "PENDING"}
