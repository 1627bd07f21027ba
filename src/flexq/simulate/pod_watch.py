"""What each job's pods met, for the recorder (``flexq.simulate.recorder``): whether they have a node, the
cluster autoscaler's word when the cloud refused them capacity (a stock-out, GCE quota, a back-off; per
``flexq.api.reasons.classify_capacity``), and the kubelet's Warning Events when it could not start them
(``START_ERRORS``). Each change moves the job's wait to its bucket (``Recorder.rebucket``). Must not import
flexq.http."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flexq.api.reasons import classify_capacity
from flexq.simulate.records import CAPACITY_REASONS, START_ERRORS, JobRecord
from flexq.twin import Twin

__all__ = ["PodWatch"]

_RAY_CLUSTER = "ray.io/cluster"
_RAY_ORIGIN = "ray.io/originated-from-cr-name"
_JOB_NAME = ("batch.kubernetes.io/job-name", "job-name")
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"


class PodWatch:
    """The watches on Pods and Events of one run (see the module docstring)."""

    def __init__(
        self,
        twin: Twin,
        records: dict[tuple[str, str, str], JobRecord],
        rebucket: Callable[[JobRecord], None],
    ) -> None:
        self.twin, self.records, self.rebucket = twin, records, rebucket
        self.pod_job: dict[tuple[str, str], JobRecord] = {}  # (namespace, pod) -> job
        self.cluster_job: dict[tuple[str, str], tuple[str, str, str] | None] = {}  # RayCluster -> job key
        self.last_refusal: tuple[str, str] | None = None  # the last capacity refusal heard (kind, code)

    def _pod_owner(self, pod: dict[str, Any]) -> JobRecord | None:
        md = pod["metadata"]
        ns = md.get("namespace", "default")
        labels = md.get("labels") or {}
        origin = labels.get(_RAY_ORIGIN)
        if origin:
            return self.records.get(("RayJob", ns, origin))
        cluster = labels.get(_RAY_CLUSTER)
        if cluster:
            ck = (ns, cluster)
            if ck not in self.cluster_job:
                rc = self.twin.store.try_get("RayCluster", cluster, ns)
                name = ((rc or {}).get("metadata", {}).get("labels") or {}).get(_RAY_ORIGIN)
                self.cluster_job[ck] = ("RayJob", ns, name) if name else ("RayCluster", ns, cluster)
            jk = self.cluster_job[ck]
            return self.records.get(jk) if jk else None
        for label in _JOB_NAME:
            if labels.get(label):
                return self.records.get(("Job", ns, labels[label]))
        return None

    def on_pod(self, ev: Any) -> None:
        pod = ev.object
        md = pod["metadata"]
        pk = (md.get("namespace", "default"), md["name"])
        rec = self.pod_job.get(pk)
        if rec is None:
            if ev.type == "DELETED":
                return
            rec = self._pod_owner(pod)
            if rec is None:
                return
            self.pod_job[pk] = rec
        phase = (pod.get("status") or {}).get("phase")
        if ev.type == "DELETED" or phase in ("Succeeded", "Failed"):
            self.pod_job.pop(pk, None)
            if md["name"] in rec.unscheduled or md["name"] in rec.blocked:
                rec.discard("unscheduled", md["name"])
                rec.discard("blocked", md["name"])
                self.rebucket(rec)
            return
        if phase == "Running" and md["name"] in rec.blocked:
            rec.discard("blocked", md["name"])
            self.rebucket(rec)
        if (pod.get("spec") or {}).get("nodeName"):
            if md["name"] in rec.unscheduled:
                rec.discard("unscheduled", md["name"])
                self.rebucket(rec)
        elif md["name"] not in rec.unscheduled:
            rec.owned_set("unscheduled").add(md["name"])
            self.rebucket(rec)

    def on_event(self, ev: Any) -> None:
        obj = ev.object
        if ev.type != "DELETED" and obj.get("reason") in START_ERRORS and obj.get("type") == "Warning":
            self._start_error(obj)
            return
        if ev.type == "DELETED" or obj.get("reason") not in CAPACITY_REASONS:
            return
        inv = obj.get("involvedObject") or {}
        if inv.get("kind") != "Pod":
            return
        rec = self.pod_job.get((inv.get("namespace") or "default", inv.get("name") or ""))
        if rec is None or not rec.admitted_now:
            return
        refusal = classify_capacity(obj.get("message") or "")
        if refusal is None or rec.refused in ("stockout", "quota"):
            return
        if refusal.kind == "backoff":
            # the autoscaler backs the pods' node groups off after a failed scale-up: a capacity refusal
            # (the twin's, like GKE's, are stock-outs and quota), named by the last one it heard
            kind, code = self.last_refusal or ("stockout", "GCE_STOCKOUT")
        else:
            kind, code = refusal.kind, refusal.code
            if refusal.cannot_grow:
                self.last_refusal = (kind, code)
        rec.refused, rec.refused_code = kind, code
        pod = self.twin.store.peek("Pod", inv.get("name") or "", inv.get("namespace") or "default")
        rec.refused_pool = (((pod or {}).get("spec") or {}).get("nodeSelector") or {}).get(NODEPOOL_LABEL, "")
        self.rebucket(rec)

    def _start_error(self, event: dict[str, Any]) -> None:
        """The kubelet could not start a pod of a job (``START_ERRORS``): noted with its words, and the job's
        wait goes to ``podErrors`` until the pod runs or goes."""
        inv = event.get("involvedObject") or {}
        message = str(event.get("message") or "")
        if inv.get("kind") != "Pod" or (
            event.get("reason") == "Failed" and not message.startswith("Error: ")
        ):
            return
        rec = self.pod_job.get((inv.get("namespace") or "default", inv.get("name") or ""))
        if rec is None:
            return
        rec.owned_counter("start_errors")[
            f"{START_ERRORS[event['reason']]}: {message.removeprefix('Error: ')}"
        ] += 1
        if inv.get("name") not in rec.blocked:
            rec.owned_set("blocked").add(inv.get("name") or "")
            self.rebucket(rec)
