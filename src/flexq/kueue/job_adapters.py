"""Job integrations: how a batch/v1 Job and a ray.io/v1 RayJob look to Kueue's job framework.

Owns: ``JobAdapter`` — the small ``GenericJob`` protocol with safe defaults (style rule 6) — and the
two adapters, each a thin reading of the upstream adapter:
- ``BatchJob`` (``pkg/controller/jobs/job/job_controller.go``): one pod set ``main`` with
  ``min(parallelism, completions)`` pods; active ⇔ ``status.active``; finished ⇔ Complete/Failed
  condition; pods ready ⇔ ready + succeeded ≥ pod count.
- ``RayJob`` (``pkg/controller/jobs/rayjob``, ``raycluster/common.go``): pod sets ``head`` (+ the
  in-tree autoscaler sidecar's 500m/512Mi, + a SidecarMode submitter), one per worker group
  (``(replicas ?? 1) × numOfHosts``), and, from Kueue 0.20 (kueue#14670), KubeRay v1.7's History Server
  collector sidecar in the head's and every worker group's pods when ``historyServerOptions.collectorOptions``
  is set (its ``resources``, else KubeRay's 50m/64Mi requests, 200m/256Mi limits), ``submitter`` last in K8sJobMode (default template: head image,
  500m/200Mi requests, 1/1Gi limits); active ⇔ ``jobDeploymentStatus`` ∉ {Suspended, New, ""};
  finished ⇔ Complete/Failed; on hold ⇔ ``ValidationFailed`` (kueue#13415, in v0.19.1 and later: the workload
  gives its quota back and is not queued); pods ready ⇔ ``rayClusterStatus.state == ready``; Kueue's validation.
``JOB_ADAPTERS`` is the explicit registry (kind → adapter class).
Must not import ``flexq.kuberay``, ``flexq.kube``, ``flexq.gke`` or ``flexq.http``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flexq.api.jsoncopy import clone
from flexq.api.kueue_versions import DEFAULT as DEFAULT_KUEUE
from flexq.api.kueue_versions import KueueVersion
from flexq.kueue.podset import PodSetInfo, merge_into_template, restore_template

if TYPE_CHECKING:
    from flexq.store import Store

__all__ = ["JOB_ADAPTERS", "BatchJob", "JobAdapter", "RayJob"]

ELASTIC_ANNOTATION = "kueue.x-k8s.io/elastic-job"
# KubeRay v1.7's History Server collector sidecar (``BuildCollectorContainer``): its default resources
COLLECTOR = "ray-history-collector"
COLLECTOR_RESOURCES = {
    "requests": {"cpu": "50m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "256Mi"},
}
RAYCLUSTER_GENERATION = "kueue.x-k8s.io/raycluster-generation"


class JobAdapter:
    """A job kind as Kueue's job framework sees it. Subclasses override what differs."""

    kind = ""
    group = ""

    def __init__(self, obj: dict, release: KueueVersion | None = None) -> None:
        self.obj = obj
        self.release = release or DEFAULT_KUEUE  # the Kueue release reading the job (what it counts)

    @property
    def spec(self) -> dict:
        spec = self.obj.get("spec")
        return spec if spec is not None else self.obj.setdefault("spec", {})

    @property
    def status(self) -> dict:
        return self.obj.get("status") or {}

    def pod_sets(self) -> list[dict]:
        """Workload pod sets (name, count, template)."""
        raise NotImplementedError

    def pod_set_counts(self) -> list[tuple[str, int]]:
        """(name, count) of each pod set, as ``pod_sets`` gives them, without copying templates."""
        return [(ps["name"], ps["count"]) for ps in self.pod_sets()]

    def templates(self) -> list[dict]:
        """The job's own pod templates, in pod-set order (mutated on start and stop)."""
        raise NotImplementedError

    @classmethod
    def status_read(cls, status: dict) -> object:
        """What Kueue's job reconciler reads of the job's status (``is_active``, ``finished``, ``is_on_hold``,
        ``pods_ready``, ``pod_sets``, ``live_pod_set_counts``): an update that leaves it, the spec and the
        metadata as they were does not wake the reconciler (``JobController.watches``). The whole status by
        default; a kind that overrides it names every status field its methods read."""
        return status

    def is_suspended(self) -> bool:
        return bool(self.spec.get("suspend"))

    def suspend(self) -> None:
        self.spec["suspend"] = True

    def is_active(self) -> bool:
        return False

    def finished(self) -> tuple[str, bool, bool]:
        """(message, success, finished)."""
        return "", True, False

    def is_on_hold(self) -> bool:
        """``JobWithOnHold.IsOnHold``: the job asks its Workload to give up its quota and wait (None by
        default)."""
        return False

    def pods_ready(self) -> bool:
        return False

    def skip(self) -> bool:
        """Jobs Kueue leaves alone."""
        return False

    def validate(self) -> list[str]:
        """Problems Kueue's webhook would refuse."""
        return []

    def elastic(self, gate: bool) -> bool:
        """Workload slicing applies."""
        return gate and (self.obj["metadata"].get("annotations") or {}).get(ELASTIC_ANNOTATION) == "true"

    def name_extra(self) -> str:
        """Extra hash input for workload-slice names."""
        return str(self.obj["metadata"].get("generation", 1))

    @classmethod
    def owned_kinds(cls) -> tuple[str, ...]:
        """Kinds this job controls whose changes must re-reconcile it (mapped through their controller
        ownerReference). None by default."""
        return ()

    def live_pod_set_counts(self, store: Store) -> dict[str, int]:
        """Pod-set counts of an elastic job as its running resources say now (pod-set name → count),
        overriding ``pod_sets()``. None by default: the job's own spec is the truth."""
        return {}

    def run_with(self, infos: list[PodSetInfo]) -> None:
        """``RunWithPodSetsInfo``: unsuspend and inject."""
        tpls = self.templates()
        if len(infos) != len(tpls):
            raise ValueError(f"invalid podset infos: expecting {len(tpls)} podset, got {len(infos)}")
        self.spec["suspend"] = False
        for tpl, info in zip(tpls, infos, strict=True):
            merge_into_template(tpl, info)

    def restore(self, infos: list[PodSetInfo]) -> bool:
        """``RestorePodSetsInfo``."""
        tpls = self.templates()
        if len(infos) != len(tpls):
            return False
        changed = False
        for tpl, info in zip(tpls, infos, strict=True):
            changed = restore_template(tpl, info) or changed
        return changed


class BatchJob(JobAdapter):
    """batch/v1 Job."""

    kind, group = "Job", "batch"

    def _count(self) -> int:
        par = self.spec.get("parallelism")
        count = 1 if par is None else int(par)
        comp = self.spec.get("completions")
        if comp is not None:
            count = min(count, int(comp) - int(self.status.get("succeeded") or 0))
        return max(count, 0)

    def pod_sets(self) -> list[dict]:
        return [{"name": "main", "count": self._count(), "template": clone(self.spec.get("template") or {})}]

    def pod_set_counts(self) -> list[tuple[str, int]]:
        return [("main", self._count())]

    def templates(self) -> list[dict]:
        return [self.spec.setdefault("template", {})]

    @classmethod
    def status_read(cls, status: dict) -> object:
        return (status.get("active"), status.get("succeeded"), status.get("ready"), status.get("conditions"))

    def is_active(self) -> bool:
        return int(self.status.get("active") or 0) != 0

    def finished(self) -> tuple[str, bool, bool]:
        for c in self.status.get("conditions") or []:
            if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
                return c.get("message", ""), c["type"] != "Failed", True
        return "", True, False

    def pods_ready(self) -> bool:
        return int(self.status.get("ready") or 0) + int(self.status.get("succeeded") or 0) >= self._count()


def _default_submitter(head_image: str) -> dict:
    return {
        "spec": {
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": head_image,
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "500m", "memory": "200Mi"},
                    },
                }
            ],
            "restartPolicy": "Never",
        }
    }


class RayJob(JobAdapter):
    """ray.io/v1 RayJob."""

    kind, group = "RayJob", "ray.io"

    @property
    def cluster(self) -> dict:
        """``spec.rayClusterSpec`` to read (the job may be a read-only stored object: nothing is added)."""
        return self.spec.get("rayClusterSpec") or {}

    def _mode(self) -> str:
        return self.spec.get("submissionMode") or "K8sJobMode"

    def pod_sets(self) -> list[dict]:
        rc = self.cluster
        head_tpl = clone((rc.get("headGroupSpec") or {}).get("template") or {})
        containers = head_tpl.setdefault("spec", {}).setdefault("containers", [])
        if rc.get("enableInTreeAutoscaling"):
            res = (rc.get("autoscalerOptions") or {}).get("resources") or {
                "requests": {"cpu": "500m", "memory": "512Mi"},
                "limits": {"cpu": "500m", "memory": "512Mi"},
            }
            # KubeRay's sidecar runs autoscalerOptions.image, by default the head's Ray image
            image = (rc.get("autoscalerOptions") or {}).get("image") or (
                containers[0].get("image") if containers else None
            )
            containers.append(
                {"name": "autoscaler", **({"image": image} if image else {}), "resources": clone(res)}
            )
        if self._mode() == "SidecarMode":
            containers.append(
                {
                    "name": "ray-job-submitter",
                    # KubeRay's sidecar submitter runs the head's Ray image
                    **(
                        {"image": containers[0]["image"]} if containers and containers[0].get("image") else {}
                    ),
                    "resources": {
                        "limits": {"cpu": "1", "memory": "1Gi"},
                        "requests": {"cpu": "500m", "memory": "200Mi"},
                    },
                }
            )
        collector = self._collector()
        if collector is not None:
            containers.append(collector)
        out = [{"name": "head", "count": 1, "template": head_tpl}]
        for wg in rc.get("workerGroupSpecs") or []:
            count = 1 if wg.get("replicas") is None else int(wg["replicas"])
            if int(wg.get("numOfHosts") or 1) > 1:
                count *= int(wg["numOfHosts"])
            tpl = clone(wg.get("template") or {})
            if collector is not None:
                tpl.setdefault("spec", {}).setdefault("containers", []).append(clone(collector))
            out.append({"name": str(wg["groupName"]).lower(), "count": count, "template": tpl})
        if self._mode() == "K8sJobMode":
            out.append({"name": "submitter", "count": 1, "template": clone(self._submitter_template())})
        return out

    def _collector(self) -> dict | None:
        """The History Server collector KubeRay v1.7 adds to every Ray pod (``historyServerOptions.
        collectorOptions``), as Kueue 0.20 counts it (kueue#14670); None where it is not counted (Kueue 0.19)."""
        if not self.release.counts_history_collector:
            return None
        options = ((self.cluster.get("historyServerOptions") or {}).get("collectorOptions")) or None
        if not isinstance(options, dict):
            return None
        res = options.get("resources") or COLLECTOR_RESOURCES
        return {"name": COLLECTOR, "resources": clone(res)}

    def pod_set_counts(self) -> list[tuple[str, int]]:
        out = [("head", 1)]
        for wg in self.cluster.get("workerGroupSpecs") or []:
            count = 1 if wg.get("replicas") is None else int(wg["replicas"])
            if int(wg.get("numOfHosts") or 1) > 1:
                count *= int(wg["numOfHosts"])
            out.append((str(wg["groupName"]).lower(), count))
        if self._mode() == "K8sJobMode":
            out.append(("submitter", 1))
        return out

    def _submitter_template(self) -> dict:
        if self.spec.get("submitterPodTemplate"):
            return self.spec["submitterPodTemplate"]
        head = ((self.cluster.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
        image = ((head.get("containers") or [{}])[0]).get("image", "")
        return _default_submitter(image)

    def templates(self) -> list[dict]:
        rc = self.spec.setdefault("rayClusterSpec", {})
        out = [rc.setdefault("headGroupSpec", {}).setdefault("template", {})]
        out += [wg.setdefault("template", {}) for wg in rc.get("workerGroupSpecs") or []]
        if self._mode() == "K8sJobMode":
            if not self.spec.get("submitterPodTemplate"):
                self.spec["submitterPodTemplate"] = self._submitter_template()
            out.append(self.spec["submitterPodTemplate"])
        return out

    @classmethod
    def status_read(cls, status: dict) -> object:
        return (
            status.get("jobDeploymentStatus"),
            status.get("jobStatus"),
            status.get("message", ""),
            (status.get("rayClusterStatus") or {}).get("state"),
            status.get("rayClusterName"),
        )

    def is_active(self) -> bool:
        return self.status.get("jobDeploymentStatus") not in (None, "", "Suspended", "New")

    def finished(self) -> tuple[str, bool, bool]:
        ds = self.status.get("jobDeploymentStatus")
        return (
            self.status.get("message", ""),
            self.status.get("jobStatus") == "SUCCEEDED",
            ds in ("Complete", "Failed"),
        )

    def is_on_hold(self) -> bool:
        """kueue#13415 (backported to v0.19.1 as #14192): a RayJob KubeRay found invalid (``ValidationFailed``)
        releases its quota; it was held for ever before."""
        return self.status.get("jobDeploymentStatus") == "ValidationFailed"

    def pods_ready(self) -> bool:
        return ((self.status.get("rayClusterStatus") or {}).get("state")) == "ready"

    def skip(self) -> bool:
        return bool(self.spec.get("clusterSelector"))

    @classmethod
    def owned_kinds(cls) -> tuple[str, ...]:
        # the autoscaler resizes the RayCluster: elastic jobs follow its replicas
        return ("RayCluster",)

    def live_pod_set_counts(self, store: Store) -> dict[str, int]:
        """Worker groups' replicas × numOfHosts as the job's RayCluster has them (the autoscaler's writes)."""
        rc_name = self.status.get("rayClusterName")
        if not rc_name:
            return {}
        rc = store.peek("RayCluster", rc_name, self.obj["metadata"]["namespace"])  # read-only
        out: dict[str, int] = {}
        for wg in ((rc or {}).get("spec") or {}).get("workerGroupSpecs") or []:
            if wg.get("replicas") is None:
                continue
            out[str(wg["groupName"]).lower()] = int(wg["replicas"]) * max(1, int(wg.get("numOfHosts") or 1))
        return out

    def name_extra(self) -> str:
        extra = str(self.obj["metadata"].get("generation", 1))
        gen = (self.obj["metadata"].get("annotations") or {}).get(RAYCLUSTER_GENERATION)
        return extra + ("_" + gen if gen else "")

    def validate(self) -> list[str]:
        """Kueue's RayJob webhook rules (``rayjob_webhook.go``)."""
        errs: list[str] = []
        if self.spec.get("clusterSelector"):
            return errs
        if not self.spec.get("shutdownAfterJobFinishes"):
            errs.append(
                "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should "
                "delete the cluster after finishing"
            )
        rc = self.cluster
        wgs = rc.get("workerGroupSpecs") or []
        if len(wgs) > 17:
            errs.append(
                "spec.rayClusterSpec.workerGroupSpecs: Too many: the maximum number of worker groups is 17"
            )
        for i, wg in enumerate(wgs):
            if str(wg.get("groupName", "")).lower() == "head":
                errs.append(
                    f"spec.rayClusterSpec.workerGroupSpecs[{i}].groupName: Forbidden: "
                    '"head" is reserved for the head group'
                )
        if (
            rc.get("enableInTreeAutoscaling")
            and (self.obj["metadata"].get("annotations") or {}).get(ELASTIC_ANNOTATION) != "true"
        ):
            errs.append(
                "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job "
                "should only use autoscaling when workload slicing is enabled"
            )
        return errs


JOB_ADAPTERS: dict[str, type[JobAdapter]] = {"Job": BatchJob, "RayJob": RayJob}
