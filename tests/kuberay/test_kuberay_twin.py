"""RayJob and RayCluster controllers in a virtual twin (simulated executor): KubeRay's states and objects.

The tutorial's RayJob (without a queue name, so Kueue leaves it alone) runs on hand-made nodes: one CPU node
of the default pool and a 4-host v6e 4x4 slice. Its submitter "runs" for ``twin.flexq.dev/run-seconds``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from flexq import Twin
from flexq.kuberay import names
from tests.kube.kube_builders import add_node, tpu_node

DATA = Path(__file__).resolve().parent / "data"


def rayjob(job_id: int = 1, *, run: float | None = 120, outcome: str | None = None, **spec) -> dict:
    obj = yaml.safe_load((DATA / "rayjob-tpu-v6e-dws.yaml").read_text().replace("${JOB_ID}", str(job_id)))
    del obj["metadata"]["labels"]  # no queue: KubeRay alone
    anns = obj["metadata"]["annotations"]
    if run is not None:
        anns[names.ANN_RUN_SECONDS] = str(run)
    if outcome:
        anns[names.ANN_OUTCOME] = outcome
    obj["spec"].update(spec)
    return obj


def _st(twin: Twin, name: str) -> dict:
    return twin.get("RayJob", name, "default").get("status") or {}


def _advance_until(twin: Twin, cond, limit: float = 3600, step: float = 1.0) -> float:
    t = 0.0
    while not cond():
        assert t < limit, "condition never became true"
        twin.advance(step)
        t += step
    return t


def test_tutorial_rayjob_runs_through_kuberay_states(cluster: Twin):
    twin = cluster
    twin.apply(rayjob(1))
    twin.advance(1)
    st = _st(twin, "rayjob-tpu-v6e-dws-1")
    cname, job_id = st["rayClusterName"], st["jobId"]
    assert cname.startswith("rayjob-tpu-v6e-dws-1-") and len(cname) == len("rayjob-tpu-v6e-dws-1-") + 5
    assert job_id.startswith("rayjob-tpu-v6e-dws-1-") and job_id != cname
    rc = twin.get("RayCluster", cname, "default")
    assert rc["metadata"]["labels"][names.LABEL_ORIGIN_NAME] == "rayjob-tpu-v6e-dws-1"
    assert (
        twin.get("Service", "rayjob-tpu-v6e-dws-1-head-svc", "default")["spec"]["selector"][
            names.LABEL_CLUSTER
        ]
        == cname
    )
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-1").get("jobDeploymentStatus") == "Running")
    pods = twin.list("Pod", "default", label_selector=f"{names.LABEL_CLUSTER}={cname}")
    workers = [p for p in pods if p["metadata"]["labels"][names.LABEL_NODE_TYPE] == "worker"]
    assert len(pods) == 5 and len(workers) == 4
    assert sorted(p["spec"]["nodeName"] for p in workers) == [f"gke-on-demand-pool-{i}" for i in range(4)]
    assert twin.get("RayCluster", cname, "default")["status"]["state"] == "ready"
    status = twin.get("RayCluster", cname, "default")["status"]
    # KubeRay sums Quantities: the head's 4Gi and four workers' 16Gi print as 68Gi (kubectl's MEMORY column)
    assert (status["desiredTPU"], status["desiredMemory"], status["desiredCPU"]) == ("16", "68Gi", "34")
    job = twin.get("Job", "rayjob-tpu-v6e-dws-1", "default")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    st = _st(twin, "rayjob-tpu-v6e-dws-1")
    assert st["dashboardURL"] == f"{cname}-head-svc.default.svc.cluster.local:8265"
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-1").get("jobDeploymentStatus") == "Complete")
    st = _st(twin, "rayjob-tpu-v6e-dws-1")
    assert (st["jobStatus"], st["succeeded"], st.get("failed", 0)) == ("SUCCEEDED", 1, 0)
    assert st["endTime"] >= st["startTime"]
    twin.advance(2)
    # shutdownAfterJobFinishes: the cluster and its pods are gone, the submitter Job stays (logs readable).
    assert twin.try_get("RayCluster", cname, "default") is None
    assert not twin.list("Pod", "default", label_selector=f"{names.LABEL_CLUSTER}={cname}")
    assert twin.try_get("Job", "rayjob-tpu-v6e-dws-1", "default") is not None


def test_suspend_deletes_the_cluster_and_resets_status_then_resume_starts_over(cluster: Twin):
    twin = cluster
    twin.apply(rayjob(2, run=600))
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-2").get("jobDeploymentStatus") == "Running")
    first = _st(twin, "rayjob-tpu-v6e-dws-2")
    twin.patch("RayJob", "rayjob-tpu-v6e-dws-2", {"spec": {"suspend": True}}, "default")
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-2").get("jobDeploymentStatus") == "Suspended")
    st = _st(twin, "rayjob-tpu-v6e-dws-2")
    assert st["jobStatus"] == "" and "rayClusterName" not in st and "jobId" not in st
    assert twin.try_get("RayCluster", first["rayClusterName"], "default") is None
    assert twin.try_get("Job", "rayjob-tpu-v6e-dws-2", "default") is None
    assert not twin.list("Pod", "default")
    twin.patch("RayJob", "rayjob-tpu-v6e-dws-2", {"spec": {"suspend": False}}, "default")
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-2").get("jobDeploymentStatus") == "Running")
    again = _st(twin, "rayjob-tpu-v6e-dws-2")
    assert again["rayClusterName"] != first["rayClusterName"] and again["jobId"] != first["jobId"]


def test_created_suspended_never_makes_a_cluster(cluster: Twin):
    twin = cluster
    twin.apply(rayjob(3, suspend=True))
    twin.advance(30)
    assert _st(twin, "rayjob-tpu-v6e-dws-3")["jobDeploymentStatus"] == "Suspended"
    assert not twin.list("RayCluster", "default")


def test_active_deadline_ends_a_job_that_can_never_get_resources(cluster: Twin):
    twin = cluster
    obj = rayjob(4, activeDeadlineSeconds=300)
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"][
        "cloud.google.com/gke-tpu-topology"
    ] = "8x8"  # no such slice here: the workers stay Pending
    twin.apply(obj)
    twin.advance(299)
    assert _st(twin, "rayjob-tpu-v6e-dws-4")["jobDeploymentStatus"] == "Initializing"
    twin.advance(2)
    st = _st(twin, "rayjob-tpu-v6e-dws-4")
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "DeadlineExceeded")
    assert "activeDeadlineSeconds" in st["message"]
    twin.advance(1)
    assert not twin.list("RayCluster", "default")  # shutdownAfterJobFinishes


def test_failed_app_retries_up_to_backoff_limit_with_a_new_cluster(cluster: Twin):
    twin = cluster
    twin.apply(rayjob(5, run=30, outcome="Failed", backoffLimit=1))
    seen: set[str] = set()

    def done() -> bool:
        st = _st(twin, "rayjob-tpu-v6e-dws-5")
        if st.get("rayClusterName"):
            seen.add(st["rayClusterName"])
        return st.get("jobDeploymentStatus") == "Failed" and st.get("failed") == 2

    _advance_until(twin, done)
    st = _st(twin, "rayjob-tpu-v6e-dws-5")
    assert (st["jobStatus"], st["reason"]) == ("FAILED", "AppFailed")
    assert len(seen) == 2  # each retry made a new RayCluster
    twin.advance(5)
    assert _st(twin, "rayjob-tpu-v6e-dws-5")["jobDeploymentStatus"] == "Failed"


def test_ttl_keeps_the_cluster_for_a_while_after_the_end(cluster: Twin):
    twin = cluster
    twin.apply(rayjob(6, run=10, ttlSecondsAfterFinished=100))
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-6").get("jobDeploymentStatus") == "Complete")
    cname = _st(twin, "rayjob-tpu-v6e-dws-6")["rayClusterName"]
    twin.advance(90)
    assert twin.try_get("RayCluster", cname, "default") is not None
    twin.advance(15)
    assert twin.try_get("RayCluster", cname, "default") is None


def test_worker_replicas_follow_the_raycluster_spec_atomically(cluster: Twin):
    twin = cluster
    for i in range(4, 8):
        add_node(twin, tpu_node(f"gke-on-demand-pool-{i}", "on-demand-pool"))
    twin.apply(rayjob(7, run=3600))
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-7").get("jobDeploymentStatus") == "Running")
    cname = _st(twin, "rayjob-tpu-v6e-dws-7")["rayClusterName"]
    rc = twin.get("RayCluster", cname, "default")
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 2  # what the autoscaler writes
    twin.store.update(rc)
    twin.advance(5)
    workers = twin.list(
        "Pod", "default", label_selector=f"{names.LABEL_CLUSTER}={cname},{names.LABEL_NODE_TYPE}=worker"
    )
    replicas = {p["metadata"]["labels"][names.LABEL_REPLICA_NAME] for p in workers}
    assert len(workers) == 8 and len(replicas) == 2
    ids = sorted(
        (
            p["metadata"]["labels"][names.LABEL_REPLICA_NAME],
            next(e["value"] for e in p["spec"]["containers"][0]["env"] if e["name"] == "TPU_WORKER_ID"),
        )
        for p in workers
    )
    assert [w for _, w in ids] == ["0", "1", "2", "3"] * 2
    assert twin.get("RayCluster", cname, "default")["status"]["desiredWorkerReplicas"] == 8
    rc = twin.get("RayCluster", cname, "default")
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    twin.store.update(rc)
    twin.advance(5)
    assert (
        len(
            twin.list(
                "Pod",
                "default",
                label_selector=f"{names.LABEL_CLUSTER}={cname},{names.LABEL_NODE_TYPE}=worker",
            )
        )
        == 4
    )


class FakeRay:
    """A stand-in for the local Ray executor's ``cluster_status`` (what ``ray status`` prints)."""

    def __init__(self) -> None:
        self.text: str | None = None

    def cluster_status(self, namespace: str, cluster: str) -> str | None:
        return self.text


BUSY = """Node status
Active:
 1 headgroup
 4 tpu-group
Idle:
 (no idle nodes)
Pending:
 (no pending nodes)
Pending Demands:
 {'TPU': 4.0, 'accelerator_type:TPU-V6E': 0.001} * 4 (PACK): 1+ pending placement groups
"""
IDLE = """Node status
Active:
 1 headgroup
Idle:
 8 tpu-group
Pending:
 (no pending nodes)
Pending Demands:
 (no resource demands)
"""


def test_in_tree_autoscaling_grows_to_max_replicas_on_demand_and_shrinks_when_idle(cluster: Twin):
    from flexq.kuberay.autoscaler import AutoscalerController

    twin = cluster
    for i in range(4, 8):
        add_node(twin, tpu_node(f"gke-on-demand-pool-{i}", "on-demand-pool"))
    fake = FakeRay()
    twin.runtime.manager.add(AutoscalerController(twin.runtime.ctx, sources=[fake]))
    spec = rayjob(8)["spec"]["rayClusterSpec"]
    twin.apply(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "default"},
            "spec": spec,
        }
    )
    _advance_until(
        twin, lambda: (twin.get("RayCluster", "rc", "default").get("status") or {}).get("state") == "ready"
    )
    fake.text = BUSY
    twin.advance(10)
    assert twin.get("RayCluster", "rc", "default")["spec"]["workerGroupSpecs"][0]["replicas"] == 2
    _advance_until(
        twin, lambda: twin.get("RayCluster", "rc", "default")["status"]["readyWorkerReplicas"] == 8
    )
    twin.advance(30)  # still busy: never past maxReplicas
    assert twin.get("RayCluster", "rc", "default")["spec"]["workerGroupSpecs"][0]["replicas"] == 2
    fake.text = IDLE
    twin.advance(40)
    assert (
        twin.get("RayCluster", "rc", "default")["spec"]["workerGroupSpecs"][0]["replicas"] == 2
    )  # < 60 s idle
    twin.advance(40)
    assert twin.get("RayCluster", "rc", "default")["spec"]["workerGroupSpecs"][0]["replicas"] == 1
    twin.advance(5)
    assert len(twin.list("Pod", "default", label_selector="ray.io/cluster=rc,ray.io/node-type=worker")) == 4
    assert any(e["reason"] == "Autoscaled" for e in twin.list("Event", "default"))


def test_raycluster_controller_wakes_for_spec_labels_annotations_and_pods_not_status(cluster: Twin):
    """KubeRay's ``For(&RayCluster{}, Or(GenerationChanged, LabelChanged, AnnotationChanged))``: a write of
    a RayCluster's status alone (its own, or anyone's) does not run the controller again."""
    twin = cluster
    twin.apply(rayjob(1, run=3600))
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-1").get("jobDeploymentStatus") == "Running")
    cname = _st(twin, "rayjob-tpu-v6e-dws-1")["rayClusterName"]
    managers = [c.manager for c in twin.core.clusters.values()]
    ctrl = next(c for m in managers for c in m.controllers if c.name == "kuberay-raycluster")
    calls: list = []
    real = ctrl.reconcile
    ctrl.reconcile = lambda key: (calls.append(key), real(key))[1]  # type: ignore[method-assign]
    twin.patch("RayCluster", cname, {"status": {"reason": "set by hand"}}, "default", subresource="status")
    twin.advance(1)
    assert calls == []
    twin.patch("RayCluster", cname, {"metadata": {"annotations": {"example.com/note": "x"}}}, "default")
    twin.advance(1)
    assert calls == [("default", cname)]
