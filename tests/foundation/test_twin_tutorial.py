"""The tutorial's manifests go through Twin.apply and come back with the real API defaults (issue 2, point 2).

They are kueue.x-k8s.io/v1beta1, which Kueue 0.19 serves and 0.20 does not (issue 34): the twin here runs Kueue
0.19.2; the v1beta2 set ``flexq tutorial init`` writes beside them applies the same on Kueue 0.20.7."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.cli.tutorial import queue_yaml, rayjob_yaml
from flexq.errors import Invalid, NotFound


@pytest.fixture
def twin():
    """Kueue 0.19.2: the tutorial's v1beta1 manifests as published apply."""
    t = Twin(clock="virtual", kueue="0.19.2")
    yield t
    t.close()


@pytest.mark.parametrize(("kueue", "api"), [("0.19.2", "v1beta1"), ("0.20.7", "v1beta2")])
def test_tutorial_queue_config_applies_with_defaults(kueue: str, api: str) -> None:
    """As published on Kueue 0.19.2; as ``flexq convert`` writes it on Kueue 0.20.7: the same stored objects."""
    twin = Twin(clock="virtual", kueue=kueue)
    out = twin.apply(queue_yaml(api=api))
    assert [o["kind"] for o in out] == ["ResourceFlavor"] * 3 + [
        "ClusterQueue",
        "LocalQueue",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
    ]
    cq = twin.get("clusterqueue", "cluster-queue")
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert cq["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "dws-prov", "onFlavors": ["dws"]}
    ]
    quotas = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
        for f in cq["spec"]["resourceGroups"][0]["flavors"]
    }
    assert quotas["on-demand"] == {"cpu": 40, "memory": "75Gi", "google.com/tpu": 16}  # as written (a CRD)
    assert quotas["dws"]["memory"] == "1000000000Gi"
    rf = twin.get("resourceflavor", "on-demand")
    assert rf["spec"]["nodeLabels"] == {"cloud.google.com/gke-nodepool": "on-demand-pool"}
    assert twin.get("lq", "user-queue", "default")["spec"]["clusterQueue"] == "cluster-queue"


def test_v1beta1_object_reads_back_in_both_versions(twin: Twin) -> None:
    twin.apply("""
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  cohort: research
  namespaceSelector: {}
  admissionChecks: [dws-prov]
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-cpu
      resources: [{name: cpu, nominalQuota: 10, borrowingLimit: 5}]
""")
    v2 = twin.get("clusterqueue", "team")
    assert v2["spec"]["cohortName"] == "research" and "cohort" not in v2["spec"]
    assert v2["spec"]["admissionChecksStrategy"]["admissionChecks"] == [{"name": "dws-prov"}]
    v1 = twin.get("clusterqueue", "team", api_version="kueue.x-k8s.io/v1beta1")
    assert v1["apiVersion"] == "kueue.x-k8s.io/v1beta1" and v1["spec"]["cohort"] == "research"
    assert twin.get("clusterqueues.v1beta1.kueue.x-k8s.io", "team")["spec"]["cohort"] == "research"


def test_tutorial_rayjob_applies_with_kuberay_defaults(twin: Twin) -> None:
    twin.apply(queue_yaml())
    out = twin.apply(rayjob_yaml(1))[0]
    assert out["metadata"]["name"] == "rayjob-tpu-v6e-dws-1"
    rj = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert rj["spec"]["submissionMode"] == "K8sJobMode"
    assert rj["spec"]["shutdownAfterJobFinishes"] is True
    wg = rj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert wg["numOfHosts"] == 4 and wg["groupName"] == "tpu-group"


def test_apply_is_create_or_update_and_ignores_status(twin: Twin) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    first = twin.apply(cm)[0]
    second = twin.apply({**cm, "data": {"a": "2"}})[0]
    assert second["metadata"]["uid"] == first["metadata"]["uid"] and second["data"] == {"a": "2"}
    twin.apply(queue_yaml())
    cq = twin.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "x"},
            "spec": {"namespaceSelector": {}},
            "status": {"pendingWorkloads": 7},
        }
    )[0]
    assert "status" not in cq


def test_patch_status_subresource(twin: Twin) -> None:
    twin.apply(queue_yaml())
    twin.patch("clusterqueue", "cluster-queue", {"status": {"pendingWorkloads": 3}}, subresource="status")
    assert twin.get("cq", "cluster-queue")["status"]["pendingWorkloads"] == 3


def test_refused_manifest_stores_nothing(twin: Twin) -> None:
    before = twin.store.resource_version
    with pytest.raises(Invalid) as err:
        twin.apply("""
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: Bad_Queue, namespace: default}
spec: {}
""")
    fields = {c.field for c in err.value.causes}
    assert "metadata.name" in fields
    assert twin.store.resource_version == before
    with pytest.raises(NotFound):
        twin.get("localqueue", "Bad_Queue", "default")


@pytest.mark.parametrize(
    "name",
    ["ClusterQueue", "clusterqueues", "cq", "clusterqueue.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io"],
)
def test_kinds_resolve_like_kubectl(twin: Twin, name: str) -> None:
    twin.apply(queue_yaml())
    assert twin.get(name, "cluster-queue")["kind"] == "ClusterQueue"
