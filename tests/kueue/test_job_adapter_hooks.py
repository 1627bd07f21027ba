"""Job-kind specifics reach Kueue's generic job framework only through JobAdapter hooks with safe defaults."""

from __future__ import annotations

from flexq.api.kinds import default_registry
from flexq.clock import VirtualClock
from flexq.kueue.jobs import BatchJob, JobAdapter, RayJob
from flexq.store import Store


def test_defaults_add_no_watch_and_keep_the_spec_counts() -> None:
    store = Store(default_registry(), VirtualClock(), namespaces=("default",))
    job = BatchJob({"metadata": {"name": "j", "namespace": "default"}, "spec": {}})
    assert JobAdapter.owned_kinds() == () and BatchJob.owned_kinds() == ()
    assert job.live_pod_set_counts(store) == {}


def test_rayjob_follows_its_rayclusters_replicas() -> None:
    store = Store(default_registry(), VirtualClock(), namespaces=("default",))
    store.serve_addons(("RayOperator",))
    store.create({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc", "namespace": "default"},
                  "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "r"}]}}},
                           "workerGroupSpecs": [
                               {"groupName": "TPU", "replicas": 2, "numOfHosts": 4, "minReplicas": 0,
                                "maxReplicas": 4,
                                "template": {"spec": {"containers": [{"name": "w", "image": "r"}]}}}]}})
    job = RayJob({"metadata": {"name": "j", "namespace": "default"}, "spec": {},
                  "status": {"rayClusterName": "rc"}})
    assert RayJob.owned_kinds() == ("RayCluster",)
    assert job.live_pod_set_counts(store) == {"tpu": 8}
    assert RayJob({"metadata": {"name": "k", "namespace": "default"}, "spec": {}}).live_pod_set_counts(store) == {}
