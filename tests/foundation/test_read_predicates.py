"""Predicates on the fields a controller reads (issue 47): an update that leaves what a reconcile reads as it was
does not wake it, and every field it does read still does. Each test below changes one field a controller reads
and fails if that change would be dropped (a predicate dropping a needed change is a silent, lasting bug), then
checks that a change of an unread field is dropped.

- Kueue's job reconciler (RayJob and batch Job): the metadata, the spec and the status fields its adapter reads
  (``JobAdapter.status_read``); of an owned RayCluster, the spec and the owner references.
- KubeRay's RayCluster controller on its pods: metadata, phase, the Ready condition, IP, container statuses.
- GKE billing: a pod's node, end and uid (once its record is open); a Node update only before its record opens.
- The kubelet (``Watch.unchanged``: podsDifferSemantically, or the pod ended).
- Node registration (only a Node without conditions) and node leases (the deletion mark, or no Lease yet).
"""

from __future__ import annotations

import copy

import pytest

from flexq import Twin
from flexq.api.kinds import default_registry
from flexq.kueue.job_adapters import BatchJob, RayJob
from flexq.store.store import WatchEvent
from tests.foundation.running_twin import running_tutorial_twin

pytestmark = pytest.mark.xdist_group("test_read_predicates")

_REG = default_registry()


@pytest.fixture(scope="module")
def twin():
    t = running_tutorial_twin()
    yield t
    t.close()


def _controller(twin: Twin, name: str):
    return next(
        c
        for rt in twin.core.clusters.values()
        for c in rt.manager.controllers
        if c.name == name and c.store is twin.store
    )


def _keys(controller, ev: WatchEvent) -> list:
    kind = ev.kind
    return [k for w in controller.watches() if _REG.resolve(w.kind).key == kind for k in w.keys(ev)]


def _unchanged(controller, ev: WatchEvent) -> bool:
    """Whether the watch of ``ev``'s kind calls it unchanged (its key would be skipped in turn)."""
    (w,) = [w for w in controller.watches() if _REG.resolve(w.kind).key == ev.kind]
    return w.unchanged is not None and w.unchanged(ev)


def _update(obj: dict, path: str, value) -> WatchEvent:
    """A MODIFIED event of ``obj`` with ``path`` set to ``value`` (and the resourceVersion moved)."""
    new = copy.deepcopy(obj)
    *head, last = path.split(".")
    d = new
    for k in head:
        d = d.setdefault(k, {}) if not isinstance(d, list) else d[int(k)]
    if isinstance(d, list):
        d[int(last)] = value
    else:
        d[last] = value
    new["metadata"]["resourceVersion"] = str(int(obj["metadata"].get("resourceVersion", "0")) + 1)
    return WatchEvent("MODIFIED", _REG.resolve(obj["kind"]).key, new, 0, obj)


def _first(twin: Twin, kind: str, **labels: str) -> dict:
    objs = twin.store.peek_list(kind, labels=labels or None)
    assert objs, kind
    return objs[0]


# -- Kueue's job reconciler ----------------------------------------------------------------------------
RAYJOB_READ = [
    ("status.jobDeploymentStatus", "Complete"),
    ("status.jobStatus", "SUCCEEDED"),
    ("status.message", "done"),
    ("status.rayClusterStatus.state", "suspended"),
    ("status.rayClusterName", "other"),
    ("spec.suspend", True),
    ("spec.shutdownAfterJobFinishes", False),
    ("metadata.labels", {"kueue.x-k8s.io/queue-name": "other"}),
    ("metadata.annotations", {"x": "y"}),
    ("metadata.deletionTimestamp", "2027-01-01T00:00:00Z"),
    ("metadata.finalizers", ["x"]),
]


@pytest.mark.parametrize(("path", "value"), RAYJOB_READ)
def test_kueue_job_reconciler_is_woken_by_each_rayjob_field_it_reads(twin, path, value) -> None:
    ctrl = _controller(twin, "kueue-job-rayjob")
    rj = _first(twin, "RayJob")
    assert _keys(ctrl, _update(rj, path, value)) == [(rj["metadata"]["namespace"], rj["metadata"]["name"])]


def test_kueue_job_reconciler_ignores_rayjob_status_it_does_not_read(twin) -> None:
    ctrl = _controller(twin, "kueue-job-rayjob")
    rj = _first(twin, "RayJob")
    for path, value in (
        ("status.rayClusterStatus.availableWorkerReplicas", 99),
        ("status.startTime", "2027-01-01T00:00:00Z"),
        ("status.dashboardURL", "x"),
    ):
        assert _keys(ctrl, _update(rj, path, value)) == [], path


def test_status_read_names_every_status_field_the_adapters_read(twin) -> None:
    """An unread status field changed leaves every answer of the adapter as it was (what the reconciler reads
    of a job goes through these methods), so ``status_read`` is complete for the fields tried."""
    rj = _first(twin, "RayJob")
    for path, value in (("availableWorkerReplicas", 9), ("startTime", "x"), ("observedGeneration", 9)):
        new = copy.deepcopy(rj)
        new["status"][path] = value
        a, b = RayJob(rj), RayJob(new)
        assert RayJob.status_read(rj["status"]) == RayJob.status_read(new["status"])
        assert (a.is_active(), a.finished(), a.is_on_hold(), a.pods_ready(), a.pod_set_counts()) == (
            b.is_active(),
            b.finished(),
            b.is_on_hold(),
            b.pods_ready(),
            b.pod_set_counts(),
        )
    job = {"spec": {"parallelism": 2, "completions": 2, "template": {}}, "status": {"active": 1}}
    for field, value in (("active", 0), ("succeeded", 1), ("ready", 2)):
        changed = {**job["status"], field: value}
        assert BatchJob.status_read(job["status"]) != BatchJob.status_read(changed), field
    cond = {**job["status"], "conditions": [{"type": "Complete", "status": "True"}]}
    assert BatchJob.status_read(job["status"]) != BatchJob.status_read(cond)
    assert BatchJob.status_read(job["status"]) == BatchJob.status_read({**job["status"], "startTime": "x"})


def test_kueue_job_reconciler_reads_only_the_spec_of_its_raycluster(twin) -> None:
    ctrl = _controller(twin, "kueue-job-rayjob")
    rc = _first(twin, "RayCluster")
    owner = [(rc["metadata"]["namespace"], r["name"]) for r in rc["metadata"]["ownerReferences"]]
    assert _keys(ctrl, _update(rc, "spec.workerGroupSpecs.0.replicas", 7)) == owner
    assert _keys(ctrl, _update(rc, "status.readyWorkerReplicas", 7)) == []
    other = [{**owner_ref, "name": "other"} for owner_ref in rc["metadata"]["ownerReferences"]]
    assert _keys(ctrl, _update(rc, "metadata.ownerReferences", other)) == [
        (rc["metadata"]["namespace"], "other")
    ]


def test_kueue_job_reconciler_leaves_a_job_without_a_queue_alone_until_it_gets_one(twin) -> None:
    ctrl = _controller(twin, "kueue-job-job")
    job = _first(twin, "Job")  # the RayJob's submitter: no queue label
    assert "kueue.x-k8s.io/queue-name" not in (job["metadata"].get("labels") or {})
    key = [(job["metadata"]["namespace"], job["metadata"]["name"])]
    assert _keys(ctrl, _update(job, "status.active", 5)) == []
    assert _keys(ctrl, _update(job, "spec.parallelism", 5)) == []
    labels = {**(job["metadata"].get("labels") or {}), "kueue.x-k8s.io/queue-name": "q"}
    assert _keys(ctrl, _update(job, "metadata.labels", labels)) == key
    queued = copy.deepcopy(job)
    queued["metadata"]["labels"] = labels
    assert _keys(ctrl, _update(queued, "status.active", 5)) == key
    assert _keys(ctrl, _update(queued, "status.startTime", "x")) == []


# -- KubeRay's RayCluster controller on pods ----------------------------------------------------------------
POD_READ = [
    ("status.phase", "Failed"),
    ("status.conditions", [{"type": "Ready", "status": "False", "reason": "PodCompleted"}]),
    ("status.podIP", "10.9.9.9"),
    ("status.containerStatuses", [{"name": "x", "ready": False, "state": {"waiting": {"reason": "R"}}}]),
    ("metadata.labels", {"ray.io/cluster": "x"}),
    ("metadata.deletionTimestamp", "2027-01-01T00:00:00Z"),
]


@pytest.mark.parametrize(("path", "value"), POD_READ)
def test_raycluster_controller_is_woken_by_each_pod_field_it_reads(twin, path, value) -> None:
    ctrl = _controller(twin, "kuberay-raycluster")
    pod = _first(twin, "Pod", **{"ray.io/node-type": "head"})
    assert _keys(ctrl, _update(pod, path, value)) != [], path  # (a relabelled pod maps to its new cluster)


def test_raycluster_controller_ignores_a_pods_scheduling_and_binding(twin) -> None:
    ctrl = _controller(twin, "kuberay-raycluster")
    pod = _first(twin, "Pod", **{"ray.io/node-type": "head"})
    conds = [c for c in pod["status"]["conditions"] if c["type"] != "PodScheduled"]
    sched = [*conds, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    assert _keys(ctrl, _update(pod, "status.conditions", sched)) == []
    assert _keys(ctrl, _update(pod, "spec.nodeName", "elsewhere")) == []


# -- GKE billing ---------------------------------------------------------------------------------------
def test_billing_is_woken_by_what_opens_or_closes_a_pod_record(twin) -> None:
    ctrl = _controller(twin, "gke-billing")
    pod = _first(twin, "Pod", **{"ray.io/node-type": "head"})
    md = pod["metadata"]
    key = ("pod", md["namespace"], md["name"])
    assert (md["namespace"], md["name"]) in ctrl._pod_record  # its record is open
    for path, value in (("spec.nodeName", "other"), ("status.phase", "Succeeded"), ("metadata.uid", "u2")):
        assert _keys(ctrl, _update(pod, path, value)) == [key], path
    assert _keys(ctrl, _update(pod, "status.podIP", "10.9.9.9")) == []  # a running pod's status write
    assert _keys(ctrl, WatchEvent("DELETED", "pods", pod, 0)) == [key]
    fresh = copy.deepcopy(pod)
    fresh["metadata"]["name"] = "not-yet-recorded"
    assert _keys(ctrl, _update(fresh, "status.podIP", "1.2.3.4")) == [
        ("pod", md["namespace"], "not-yet-recorded")
    ]


def test_billing_hears_a_node_update_only_before_its_record_opens(twin) -> None:
    ctrl = _controller(twin, "gke-billing")
    node = _first(twin, "Node")
    assert node["metadata"]["name"] in ctrl._open_nodes
    assert _keys(ctrl, _update(node, "metadata.labels.x", "y")) == []
    assert _keys(ctrl, WatchEvent("ADDED", "nodes", node, 0)) and _keys(
        ctrl, WatchEvent("DELETED", "nodes", node, 0)
    )
    other = copy.deepcopy(node)
    other["metadata"]["name"] = "not-open"
    assert _keys(ctrl, _update(other, "status.conditions", [])) != []


# -- the kubelet ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "value", "sync"),
    [
        ("spec.activeDeadlineSeconds", 5, True),
        ("metadata.labels", {"x": "y"}, True),
        ("metadata.annotations", {"x": "y"}, True),
        ("metadata.deletionTimestamp", "2027-01-01T00:00:00Z", True),
        ("status.phase", "Failed", True),  # ended by another writer: stopped
        ("status.podIP", "10.9.9.9", False),
        ("status.conditions", [], False),
    ],
)
def test_kubelet_syncs_a_pod_for_what_upstream_syncs_it(twin, path, value, sync) -> None:
    ctrl = _controller(twin, "kubelet")
    pod = _first(twin, "Pod", **{"ray.io/node-type": "head"})
    ev = _update(pod, path, value)
    assert _keys(ctrl, ev), path  # queued either way: the key keeps its turn
    assert _unchanged(ctrl, ev) is (not sync), path


# -- node registration and leases ---------------------------------------------------------------------------
def test_node_registration_and_leases_hear_what_they_act_on(twin) -> None:
    reg, leases = _controller(twin, "node-registration"), _controller(twin, "node-lease")
    node = _first(twin, "Node")
    name = node["metadata"]["name"]
    assert _keys(reg, _update(node, "status.conditions", [])) == [("", name)]  # no conditions: it registers
    assert _keys(reg, _update(node, "metadata.labels.x", "y")) == []
    assert _keys(reg, WatchEvent("ADDED", "nodes", node, 0)) == [("", name)]
    assert _keys(leases, _update(node, "metadata.deletionTimestamp", "2027-01-01T00:00:00Z")) == [("", name)]
    from flexq.api.coordination import NODE_LEASE_NAMESPACE

    has_lease = twin.store.peek("Lease", name, NODE_LEASE_NAMESPACE) is not None
    # an update of a Node with its Lease has nothing for it; one without a Lease yet may get one
    assert _keys(leases, _update(node, "status.conditions", [])) == ([] if has_lease else [("", name)])
    assert _keys(leases, WatchEvent("DELETED", "nodes", node, 0)) == [("", name)]
    gone = copy.deepcopy(node)
    gone["metadata"]["name"] = "no-lease-yet"
    assert _keys(leases, _update(gone, "status.conditions", [])) == [("", "no-lease-yet")]


# -- KubeRay's in-tree autoscaler ------------------------------------------------------------------------
def test_kuberay_autoscaler_watches_only_with_a_ray_to_read() -> None:
    """Its reconcile returns at once without a load source (a simulated cluster), so it watches nothing then;
    with one it hears every RayCluster event."""
    from flexq.kuberay.autoscaler import AutoscalerController

    bare = AutoscalerController.__new__(AutoscalerController)
    bare.sources = []
    assert bare.watches() == []
    bare.sources = [object()]
    (w,) = bare.watches()
    assert w.kind == "RayCluster" and w.predicate is None and w.unchanged is None
