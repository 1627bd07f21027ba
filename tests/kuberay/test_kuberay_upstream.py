"""The RayJob controller against KubeRay's own tests and rules (ray-operator/controllers/ray at v1.7).

Each test names the upstream test or function whose behaviour it follows: ``rayjob_controller_test.go``
(envtest, Ginkgo ``Describe`` blocks), ``rayjob_controller_unit_test.go`` and ``utils/validation.go``. Virtual
twin, simulated executor; the tutorial's RayJob without its queue name, so Kueue leaves it alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flexq import Twin
from flexq.kuberay import names
from flexq.kuberay.validation import validate_rayjob
from tests.kuberay.test_kuberay_twin import rayjob as twin_rayjob

DATA = Path(__file__).resolve().parent / "data"
NS = "default"


def rayjob(job_id: int = 1, *, run: float | None = 60, outcome: str | None = None, **spec) -> dict:
    return twin_rayjob(job_id, run=run, outcome=outcome, **spec)


def _st(twin: Twin, name: str) -> dict:
    return twin.get("RayJob", name, NS).get("status") or {}


def _until(twin: Twin, cond, limit: float = 3600) -> None:
    t = 0.0
    while not cond():
        assert t < limit, "condition never became true"
        twin.advance(1)
        t += 1


def _history(twin: Twin, name: str) -> list[dict]:
    """Every status the RayJob was written with, in order (a store watch sees transient states too)."""
    seen: list[dict] = []

    def on(ev) -> None:
        if ev.object["metadata"]["name"] == name and ev.type != "DELETED":
            st = ev.object.get("status") or {}
            if not seen or seen[-1] != st:
                seen.append(st)

    twin.store.watch(on, kinds=["RayJob"])
    return seen


def _reasons(twin: Twin, name: str) -> list[str]:
    return [e["reason"] for e in twin.list("Event", NS) if e["involvedObject"]["name"] == name]


# -- checkBackoffLimitAndUpdateStatusIfNeeded --------------------------------------------------------


def test_retry_goes_from_running_straight_to_retrying_and_counts_attempts(cluster: Twin):
    """``Retrying RayJob in K8sJobMode``: Running -> Retrying -> New -> Initializing with a new cluster; a
    retried attempt is never written as Failed (Kueue would take it for finished); ``succeeded``/``failed``."""
    twin = cluster
    seen = _history(twin, "rayjob-tpu-v6e-dws-1")
    twin.apply(rayjob(1, run=30, outcome="Failed", backoffLimit=1))
    _until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-1").get("jobDeploymentStatus") == "Failed")
    flow = [s.get("jobDeploymentStatus", "") for s in seen]
    compact = [d for i, d in enumerate(flow) if i == 0 or flow[i - 1] != d]
    assert compact == ["", "Initializing", "Running", "Retrying", "New", "Initializing", "Running", "Failed"]
    retrying = next(s for s in seen if s.get("jobDeploymentStatus") == "Retrying")
    assert (retrying["failed"], retrying["succeeded"], retrying["reason"]) == (1, 0, "AppFailed")
    assert "endTime" not in retrying  # only Complete and Failed get an endTime
    clusters = {s["rayClusterName"] for s in seen if s.get("rayClusterName")}
    assert len(clusters) == 2
    st = _st(twin, "rayjob-tpu-v6e-dws-1")
    assert (st["failed"], st["succeeded"], st["reason"], st["jobStatus"]) == (2, 0, "AppFailed", "FAILED")


def test_counters_are_zero_from_the_first_status_write(cluster: Twin):
    """``checkBackoffLimitAndUpdateStatusIfNeeded`` runs on every pass: ``failed: 0``/``succeeded: 0`` early."""
    twin = cluster
    seen = _history(twin, "rayjob-tpu-v6e-dws-2")
    twin.apply(rayjob(2))
    twin.advance(1)
    first = next(s for s in seen if s)
    assert (first["jobDeploymentStatus"], first["failed"], first["succeeded"]) == ("Initializing", 0, 0)
    _until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-2").get("jobDeploymentStatus") == "Complete")
    assert (_st(twin, "rayjob-tpu-v6e-dws-2")["failed"], _st(twin, "rayjob-tpu-v6e-dws-2")["succeeded"]) == (
        0,
        1,
    )


def _unschedulable(obj: dict) -> dict:
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"][
        "cloud.google.com/gke-tpu-topology"
    ] = "8x8"  # no such slice: the workers stay Pending
    return obj


def test_deadline_exceeded_is_not_retried(cluster: Twin):
    """``RayJob has passed the ActiveDeadlineSeconds``; retries skip ``DeadlineExceeded``."""
    twin = cluster
    twin.apply(_unschedulable(rayjob(3, activeDeadlineSeconds=100, backoffLimit=2)))
    twin.advance(101)
    st = _st(twin, "rayjob-tpu-v6e-dws-3")
    assert (st["jobDeploymentStatus"], st["reason"], st["failed"]) == ("Failed", "DeadlineExceeded", 1)
    twin.advance(30)
    assert _st(twin, "rayjob-tpu-v6e-dws-3")["jobDeploymentStatus"] == "Failed"


def test_pre_running_deadline_counts_only_before_running(cluster: Twin):
    """``checkPreRunningDeadlineAndUpdateStatusIfNeeded`` is called in Initializing and Waiting only."""
    twin = cluster
    twin.apply(rayjob(4, run=600, preRunningDeadlineSeconds=120))
    _until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-4").get("jobDeploymentStatus") == "Running", limit=100)
    twin.advance(200)
    assert _st(twin, "rayjob-tpu-v6e-dws-4")["jobDeploymentStatus"] == "Running"
    twin.apply(_unschedulable(rayjob(5, preRunningDeadlineSeconds=120)))
    twin.advance(121)
    st = _st(twin, "rayjob-tpu-v6e-dws-5")
    assert (st["jobDeploymentStatus"], st["reason"]) == ("Failed", "PreRunningDeadlineExceeded")
    assert "preRunningDeadlineSeconds" in st["message"]


# -- validateRayJob ----------------------------------------------------------------------------------


def _with_cluster(**changes) -> dict:
    obj = rayjob(9)
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(changes)
    return obj


def _selector(**spec) -> dict:
    obj = rayjob(9)
    del obj["spec"]["rayClusterSpec"]
    obj["spec"].update({"clusterSelector": {"ray.io/cluster": "shared"}, **spec})
    return obj


INVALID = [
    (
        "suspend-without-shutdown",
        rayjob(9, suspend=True, shutdownAfterJobFinishes=False),
        "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended",
    ),
    (
        "ttl-without-shutdown",
        rayjob(9, shutdownAfterJobFinishes=False, ttlSecondsAfterFinished=10),
        "shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished",
    ),
    ("selector-and-suspend", _selector(suspend=True), "the ClusterSelector mode doesn't support the suspend"),
    (
        "selector-and-backoff",
        _selector(backoffLimit=1),
        "BackoffLimit is incompatible with ClusterSelector mode",
    ),
    (
        "interactive-and-backoff",
        rayjob(9, submissionMode="InteractiveMode", backoffLimit=2),
        "BackoffLimit is incompatible with InteractiveMode",
    ),
    (
        "min-over-max",
        _with_cluster(minReplicas=3, maxReplicas=2),
        "worker group tpu-group has minReplicas 3 greater than maxReplicas 2",
    ),
    (
        "labels-in-ray-start-params",
        _with_cluster(rayStartParams={"labels": "a=b"}),
        "rayStartParams['labels'] is not supported for tpu-group group",
    ),
    ("bad-runtime-env", rayjob(9, runtimeEnvYAML="pip: [a\n"), "failed to unmarshal RuntimeEnvYAML"),
    (
        "deletion-rules-and-shutdown",
        rayjob(
            9,
            deletionStrategy={
                "deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}]
            },
        ),
        "spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive",
    ),
]


@pytest.mark.parametrize(("obj", "message"), [pytest.param(o, m, id=i) for i, o, m in INVALID])
def test_kuberay_validation_fails_the_rayjob_with_an_event(cluster: Twin, obj: dict, message: str):
    """``validateRayJob`` -> ``ValidationFailed`` (reason ``ValidationFailed``) and an ``InvalidRayJobSpec``
    Warning; nothing is created."""
    twin = cluster
    twin.apply(obj)
    twin.advance(5)
    st = _st(twin, "rayjob-tpu-v6e-dws-9")
    assert (st["jobDeploymentStatus"], st["reason"]) == ("ValidationFailed", "ValidationFailed")
    assert message in st["message"]
    assert "InvalidRayJobSpec" in _reasons(twin, "rayjob-tpu-v6e-dws-9")
    assert not twin.list("RayCluster", NS) and twin.try_get("Job", "rayjob-tpu-v6e-dws-9", NS) is None


def test_validation_rules_that_pass_and_the_name_rule():
    """``ValidateRayJobMetadata``: at most 47 characters; the tutorial's RayJob itself is valid, and KubeRay
    (unlike Kueue's webhook) accepts a clusterSelector beside a rayClusterSpec."""
    assert validate_rayjob(rayjob(1)) is None
    both = rayjob(1, clusterSelector={"ray.io/cluster": "shared"})
    assert validate_rayjob(both) is None
    long = rayjob(1)
    long["metadata"]["name"] = "r" * 48
    err = validate_rayjob(long)
    assert (
        err is not None and err.reason == "InvalidRayJobMetadata" and "no more than 47 characters" in str(err)
    )


# -- submission modes --------------------------------------------------------------------------------


def test_interactive_mode_waits_for_the_user_job_id(cluster: Twin):
    """``RayJob in InteractiveMode``: Initializing -> Waiting (no jobId, no submitter); setting ``spec.jobId``
    -> Running with that id."""
    twin = cluster
    twin.apply(rayjob(10, submissionMode="InteractiveMode"))
    _until(
        twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-10").get("jobDeploymentStatus") == "Waiting", limit=100
    )
    st = _st(twin, "rayjob-tpu-v6e-dws-10")
    assert "jobId" not in st and st["dashboardURL"].endswith(":8265")
    assert twin.try_get("Job", "rayjob-tpu-v6e-dws-10", NS) is None
    twin.advance(60)
    assert _st(twin, "rayjob-tpu-v6e-dws-10")["jobDeploymentStatus"] == "Waiting"
    twin.patch("RayJob", "rayjob-tpu-v6e-dws-10", {"spec": {"jobId": "my-job"}}, NS)
    twin.advance(1)
    st = _st(twin, "rayjob-tpu-v6e-dws-10")
    assert (st["jobDeploymentStatus"], st["jobId"]) == ("Running", "my-job")


def test_http_mode_runs_without_a_submitter_job(cluster: Twin):
    """HTTPMode: the operator submits to the dashboard itself, so there is no submitter Job and the RayJob is
    terminal as soon as the Ray job is (``utils.HasSubmitter`` is false)."""
    twin = cluster
    twin.apply(rayjob(11, run=45, submissionMode="HTTPMode"))
    _until(
        twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-11").get("jobDeploymentStatus") == "Running", limit=100
    )
    assert twin.try_get("Job", "rayjob-tpu-v6e-dws-11", NS) is None
    st = _st(twin, "rayjob-tpu-v6e-dws-11")
    assert st["jobStatus"] == "RUNNING"
    labels = twin.get("RayCluster", st["rayClusterName"], NS)["metadata"]["labels"]
    assert labels[names.LABEL_SUBMISSION_MODE] == "HTTPMode"
    start = st["rayJobInfo"]["startTime"]
    twin.advance(43)
    assert _st(twin, "rayjob-tpu-v6e-dws-11")["jobDeploymentStatus"] == "Running"
    twin.advance(2)
    st = _st(twin, "rayjob-tpu-v6e-dws-11")
    assert (st["jobDeploymentStatus"], st["jobStatus"], st["succeeded"]) == ("Complete", "SUCCEEDED", 1)
    assert st["rayJobInfo"]["startTime"] == start and st["rayJobInfo"]["endTime"] > start


# -- clusterSelector ---------------------------------------------------------------------------------


def test_cluster_selector_uses_an_existing_cluster_and_never_deletes_it(cluster: Twin):
    """``getOrCreateRayClusterInstance`` in clusterSelector mode: a missing cluster is a ``RayClusterNotFound``
    Warning; the selected cluster is used as is (no ``<rayjob>-head-svc``) and kept after the end."""
    twin = cluster
    twin.apply(_selector())
    twin.advance(5)
    st = _st(twin, "rayjob-tpu-v6e-dws-9")
    assert (st["jobDeploymentStatus"], st["rayClusterName"]) == ("Initializing", "shared")
    assert "RayClusterNotFound" in _reasons(twin, "rayjob-tpu-v6e-dws-9")
    spec = rayjob(1)["spec"]["rayClusterSpec"]
    spec.pop("enableInTreeAutoscaling")
    twin.apply(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "shared", "namespace": NS},
            "spec": spec,
        }
    )
    _until(
        twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-9").get("jobDeploymentStatus") == "Complete", limit=600
    )
    assert [c["metadata"]["name"] for c in twin.list("RayCluster", NS)] == ["shared"]
    assert twin.try_get("Service", "rayjob-tpu-v6e-dws-9-head-svc", NS) is None
    twin.advance(30)
    assert twin.try_get("RayCluster", "shared", NS) is not None


# -- objects, labels, events -------------------------------------------------------------------------


def test_created_objects_carry_kuberay_labels_annotations_and_events(cluster: Twin):
    """``constructRayClusterForRayJob`` (RayJob labels and annotations, ``ray.io/originated-from-*``,
    ``ray.io/job-submission-mode``) and the event reasons of ``utils/constant.go``."""
    twin = cluster
    obj = rayjob(12, run=20)
    obj["metadata"]["labels"] = {"team": "ml"}
    twin.apply(obj)
    twin.advance(1)
    cname = _st(twin, "rayjob-tpu-v6e-dws-12")["rayClusterName"]
    rc = twin.get("RayCluster", cname, NS)
    assert rc["metadata"]["labels"] == {
        "team": "ml",
        names.LABEL_ORIGIN_NAME: "rayjob-tpu-v6e-dws-12",
        names.LABEL_ORIGIN_CRD: "RayJob",
        names.LABEL_SUBMISSION_MODE: "K8sJobMode",
    }
    assert rc["metadata"]["annotations"]["kueue.x-k8s.io/elastic-job"] == "true"
    _until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-12").get("jobDeploymentStatus") == "Complete")
    twin.advance(1)
    reasons = _reasons(twin, "rayjob-tpu-v6e-dws-12")
    for r in ("CreatedRayCluster", "CreatedService", "CreatedRayJobSubmitter", "DeletedRayCluster"):
        assert r in reasons
    job = twin.get("Job", "rayjob-tpu-v6e-dws-12", NS)
    assert job["metadata"]["labels"][names.LABEL_CREATED_BY] == "kuberay-operator"
    assert job["spec"]["backoffLimit"] == 2


def test_managed_by_multikueue_is_left_alone(cluster: Twin):
    """``ManagedByExternalController``: KubeRay skips a RayJob managed by MultiKueue."""
    twin = cluster
    twin.apply(rayjob(13, managedBy="kueue.x-k8s.io/multikueue"))
    twin.advance(10)
    assert not _st(twin, "rayjob-tpu-v6e-dws-13") and not twin.list("RayCluster", NS)


# -- deletionStrategy --------------------------------------------------------------------------------


def test_deletion_rules_run_in_order_workers_then_cluster(cluster: Twin):
    """``Should process multi-stage deletions in order on success``: DeleteWorkers at once (worker groups
    suspended, head kept), DeleteCluster ``ttlSeconds`` later."""
    twin = cluster
    twin.apply(
        rayjob(
            14,
            run=20,
            shutdownAfterJobFinishes=False,
            deletionStrategy={
                "deletionRules": [
                    {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
                    {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 60}},
                ]
            },
        )
    )
    _until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-14").get("jobDeploymentStatus") == "Complete")
    cname = _st(twin, "rayjob-tpu-v6e-dws-14")["rayClusterName"]
    twin.advance(2)
    rc = twin.get("RayCluster", cname, NS)
    assert all(g["suspend"] for g in rc["spec"]["workerGroupSpecs"])
    ray_pods = twin.list("Pod", NS, label_selector=f"{names.LABEL_CLUSTER}={cname}")
    assert [p["metadata"]["labels"][names.LABEL_NODE_TYPE] for p in ray_pods] == ["head"]
    twin.advance(50)
    assert twin.try_get("RayCluster", cname, NS) is not None
    twin.advance(10)
    assert twin.try_get("RayCluster", cname, NS) is None
    assert twin.try_get("RayJob", "rayjob-tpu-v6e-dws-14", NS) is not None


def test_legacy_deletion_policy_delete_self_on_failure(cluster: Twin):
    """``Delete self on failure``: ``onFailure: DeleteSelf`` removes the RayJob (and what it owns)."""
    twin = cluster
    twin.apply(
        rayjob(
            15,
            run=20,
            outcome="Failed",
            deletionStrategy={
                "onSuccess": {"policy": "DeleteCluster"},
                "onFailure": {"policy": "DeleteSelf"},
            },
        )
    )
    _until(twin, lambda: twin.try_get("RayJob", "rayjob-tpu-v6e-dws-15", NS) is None, limit=600)
    assert not twin.list("RayCluster", NS)


# -- RayCluster status -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "want"),
    [
        pytest.param(None, (False, "HeadPodNotFound"), id="no-head"),
        pytest.param({"status": {"phase": "Pending"}}, (False, "Unknown"), id="no-ready-condition"),
        pytest.param(
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            (True, "HeadPodRunningAndReady"),
            id="ready-without-reason",
        ),
        pytest.param(
            {
                "status": {
                    "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
                    "containerStatuses": [
                        {"ready": False, "state": {"waiting": {"reason": "ImagePullBackOff"}}}
                    ],
                }
            },
            (False, "ImagePullBackOff"),
            id="containers-not-ready",
        ),
    ],
)
def test_head_pod_ready_condition_reason(head, want):
    """``utils.TestFindHeadPodReadyCondition``: the RayCluster's ``HeadPodReady`` follows the head pod."""
    from flexq.kuberay.raycluster_controller import _head_ready_reason

    assert _head_ready_reason(head) == want
