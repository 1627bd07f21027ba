"""The tutorial's manifests validate, get the real API defaults, and convert between Kueue versions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flexq.api.kinds import REGISTRY
from flexq.api.scheme import admit, render, resolve_object
from flexq.errors import Invalid

DATA = Path(__file__).parent / "data"


def _admit_all(name: str) -> dict[tuple[str, str], dict]:
    docs = [d for d in yaml.safe_load_all((DATA / name).read_text()) if d]
    out = {}
    for doc in docs:
        stored = admit(resolve_object(REGISTRY, doc), doc)
        out[(stored["kind"], stored["metadata"]["name"])] = stored
    return out


@pytest.fixture(scope="module")
def queue_objects() -> dict[tuple[str, str], dict]:
    return _admit_all("dws-tpu-queue.yaml")


def test_all_tutorial_kueue_objects_are_stored_as_v1beta2(queue_objects):
    assert sorted(queue_objects) == [
        ("AdmissionCheck", "dws-prov"),
        ("ClusterQueue", "cluster-queue"),
        ("LocalQueue", "user-queue"),
        ("ProvisioningRequestConfig", "dws-config"),
        ("ResourceFlavor", "default-cpu"),
        ("ResourceFlavor", "dws"),
        ("ResourceFlavor", "on-demand"),
    ]
    assert {o["apiVersion"] for o in queue_objects.values()} == {"kueue.x-k8s.io/v1beta2"}


def test_cluster_queue_gets_kueue_defaults(queue_objects):
    spec = queue_objects[("ClusterQueue", "cluster-queue")]["spec"]
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    assert spec["preemption"] == {
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "Never"},
        "withinClusterQueue": "Never",
    }
    assert spec["stopPolicy"] == "None"
    assert spec["namespaceSelector"] == {}
    assert spec["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "dws-prov", "onFlavors": ["dws"]}]
    }
    assert "cohortName" not in spec and "cohort" not in spec


def test_cluster_queue_quotas_are_stored_as_written(queue_objects):
    # A CRD's quantities are stored as the JSON the API server got (no resource.Quantity round trip): the
    # tutorial's `nominalQuota: 10` stays the integer 10, so re-applying the manifest changes nothing.
    group = queue_objects[("ClusterQueue", "cluster-queue")]["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "google.com/tpu"]
    quotas = {f["name"]: [r["nominalQuota"] for r in f["resources"]] for f in group["flavors"]}
    assert quotas == {
        "default-cpu": [10, "20Gi", 0],
        "on-demand": [40, "75Gi", 16],
        "dws": [1000000000, "1000000000Gi", 1000000000],
    }
    assert [f["name"] for f in group["flavors"]] == [
        "default-cpu",
        "on-demand",
        "dws",
    ]  # preference order kept


def test_quantities_are_canonical_in_built_in_kinds_and_as_written_in_custom_resources():
    res = {"requests": {"cpu": 2, "memory": "1024Mi"}, "limits": {"cpu": "1e3", "memory": "1.5Gi"}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": res}]},
    }
    stored = admit(REGISTRY.resolve("Pod"), pod)
    assert stored["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "2", "memory": "1Gi"},
        "limits": {"cpu": "1e3", "memory": "1536Mi"},
    }
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": res}]}},
                }
            ]
        },
    }
    stored = admit(REGISTRY.resolve("Workload"), wl)
    assert stored["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == res
    bad = {
        **wl,
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "i", "resources": {"requests": {"cpu": "2 cores"}}}
                            ]
                        }
                    },
                }
            ]
        },
    }
    with pytest.raises(Invalid) as err:  # still validated
        admit(REGISTRY.resolve("Workload"), bad)
    field = err.value.causes[0].field
    assert (
        field.startswith("spec.podSets[0].template.spec.containers[0].resources.requests") and "cpu" in field
    )


def test_flavors_local_queue_and_check_defaults(queue_objects):
    assert queue_objects[("ResourceFlavor", "on-demand")]["spec"] == {
        "nodeLabels": {"cloud.google.com/gke-nodepool": "on-demand-pool"}
    }
    assert queue_objects[("ResourceFlavor", "dws")]["spec"]["nodeLabels"] == {
        "cloud.google.com/gke-nodepool": "dws-pool"
    }
    lq = queue_objects[("LocalQueue", "user-queue")]
    assert lq["metadata"]["namespace"] == "default"
    assert lq["spec"] == {"clusterQueue": "cluster-queue", "stopPolicy": "None"}
    prc = queue_objects[("ProvisioningRequestConfig", "dws-config")]["spec"]
    assert prc["retryStrategy"] == {
        "backoffLimitCount": 3,
        "backoffBaseSeconds": 60,
        "backoffMaxSeconds": 1800,
    }
    assert prc["provisioningClassName"] == "queued-provisioning.gke.io"
    ac = queue_objects[("AdmissionCheck", "dws-prov")]["spec"]
    assert ac == {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "ProvisioningRequestConfig",
            "name": "dws-config",
        },
    }  # v1beta1 retryDelayMinutes is gone in v1beta2


def test_tutorial_objects_read_back_as_v1beta1(queue_objects):
    info = REGISTRY.resolve("clusterqueue")
    cq = render(info, queue_objects[("ClusterQueue", "cluster-queue")], "kueue.x-k8s.io/v1beta1")
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] == ["dws"]
    ac = render(
        REGISTRY.resolve("ac"), queue_objects[("AdmissionCheck", "dws-prov")], "kueue.x-k8s.io/v1beta1"
    )
    assert ac["spec"]["retryDelayMinutes"] == 15
    # admitting what was read back changes nothing: a v1beta1 object round-trips
    again = admit(info, cq)
    assert again == queue_objects[("ClusterQueue", "cluster-queue")]


def test_every_tutorial_object_round_trips_through_v1beta1(queue_objects):
    for (kind, _), stored in queue_objects.items():
        info = REGISTRY.resolve(kind)
        as_v1 = render(info, stored, "kueue.x-k8s.io/v1beta1")
        assert admit(info, as_v1) == stored, kind
        assert render(info, admit(info, as_v1), "kueue.x-k8s.io/v1beta1") == as_v1, kind


def test_rayjob_gets_kuberay_defaults():
    job = _admit_all("rayjob-tpu-v6e-dws-1.yaml")[("RayJob", "rayjob-tpu-v6e-dws-1")]
    spec = job["spec"]
    assert spec["submissionMode"] == "K8sJobMode"
    assert spec["backoffLimit"] == 0
    assert spec["ttlSecondsAfterFinished"] == 0
    assert spec["shutdownAfterJobFinishes"] is True
    assert spec["runtimeEnvYAML"] == "pip:\n  - jax[tpu]==0.8.2\n  - pandas==2.3.3\n"
    assert "entrypointNumCpus" not in spec  # no KubeRay default
    worker = spec["rayClusterSpec"]["workerGroupSpecs"][0]
    assert (worker["replicas"], worker["minReplicas"], worker["maxReplicas"], worker["numOfHosts"]) == (
        1,
        1,
        2,
        4,
    )
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert head["containers"][0]["ports"][0] == {
        "containerPort": 6379,
        "name": "gcs-server",
        "protocol": "TCP",
    }
    assert "restartPolicy" not in head  # pod defaults are not applied inside a custom resource


def test_worker_group_defaults():
    job = yaml.safe_load((DATA / "rayjob-tpu-v6e-dws-1.yaml").read_text())
    worker = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    for key in ("replicas", "minReplicas", "maxReplicas", "numOfHosts"):
        del worker[key]
    stored = admit(REGISTRY.resolve("rayjob"), job)
    worker = stored["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert (worker["replicas"], worker["minReplicas"], worker["maxReplicas"], worker["numOfHosts"]) == (
        0,
        0,
        2147483647,
        1,
    )


def test_kueue_suspends_queued_ray_jobs_on_create_only():
    from flexq.api.ray import mutate_on_create

    job = admit(REGISTRY.resolve("rayjob"), yaml.safe_load((DATA / "rayjob-tpu-v6e-dws-1.yaml").read_text()))
    created = mutate_on_create(job, None)
    assert created["spec"]["suspend"] is True and job["spec"]["suspend"] is True  # admit runs the webhook
    running = {**created, "spec": {**created["spec"], "suspend": False}}
    assert mutate_on_create(running, created) is running  # Kueue's unsuspend is an update: left alone
    unqueued = {**job, "metadata": {"name": "plain"}}
    assert mutate_on_create(unqueued, None) is unqueued


def test_null_fields_of_a_custom_resource_are_pruned_before_validation():
    # `envsubst` of dws-tpu-queue.yaml with ONDEMAND_NODEPOOL unset leaves `cloud.google.com/gke-nodepool:` (null):
    # the API server prunes a CRD's null fields, so the flavor is stored without that label.
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": "on-demand"},
        "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": None, "a": "b"}, "tolerations": None},
    }
    stored = admit(REGISTRY.resolve("ResourceFlavor"), flavor)
    assert stored["spec"]["nodeLabels"] == {"a": "b"}
    bad = {**flavor, "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": None, "a": 3}}}
    with pytest.raises(Invalid) as err:  # what is still wrong after pruning is reported
        admit(REGISTRY.resolve("ResourceFlavor"), bad)
    assert [c.field for c in err.value.causes] == ["spec.nodeLabels.a"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"a": None}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    with pytest.raises(Invalid):  # built-in kinds are not pruned
        admit(REGISTRY.resolve("Pod"), pod)
