"""Hardening round 3's smaller findings (issue 36), each answered as kube-apiserver answers it, over HTTPS with
kubectl and the twin's token."""

from __future__ import annotations

import json

from .conftest import Served

CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


def _cq(served: Served, name: str) -> None:
    served.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": name, "labels": {"team": "a"}},
                "spec": {"namespaceSelector": {}},
            }
        ),
    )


def test_a_merge_patch_that_removes_the_metadata_is_refused_as_the_patcher_refuses_it(served: Served) -> None:
    """``{"metadata": null}`` leaves the patched object without a name: the API server's patcher checks the name
    (``checkName``: ``ContextBasedNaming.ObjectName`` answers ``name must be provided``) and refuses with 400
    before anything is stored. Before, the twin answered 200 and dropped the labels and annotations."""
    _cq(served, "r3-meta")
    for patch in ({"metadata": None}, {"metadata": {"name": None}}):
        r = served.kubectl(
            "patch", "clusterqueue", "r3-meta", "--type=merge", "-p", json.dumps(patch), check=False
        )
        assert r.returncode == 1
        assert r.stderr.strip() == (
            "Error from server (BadRequest): the name of the object (r3-meta based on URL) was undeterminable: "
            "name must be provided"
        )
    r = served.kubectl(
        "patch", "clusterqueue", "r3-meta", "--type=merge", "-p", '{"metadata":{"name":"other"}}', check=False
    )
    assert "the name of the object (other) does not match the name on the URL (r3-meta)" in r.stderr
    live = json.loads(served.kubectl("get", "clusterqueue", "r3-meta", "-o", "json").stdout)
    assert live["metadata"]["labels"] == {"team": "a"}


def test_a_patch_may_not_move_an_object_to_another_namespace(served: Served) -> None:
    served.kubectl("create", "configmap", "r3-ns", "-n", "default")
    r = served.kubectl(
        "patch",
        "configmap",
        "r3-ns",
        "--type=merge",
        "-p",
        '{"metadata":{"namespace":"kube-system"}}',
        check=False,
    )
    assert r.stderr.strip() == (
        "Error from server (BadRequest): the namespace of the provided object does not match the namespace sent "
        "on the request"
    )


def test_a_merge_patch_that_removes_a_cluster_queue_s_spec_is_kueue_s_200(served: Served) -> None:
    """``{"spec": null}`` on a ClusterQueue: Kueue's ``spec`` is optional (``+optional``, ``omitempty``; its CRD
    requires no ``spec``) and its webhook finds nothing wrong with an empty one (only a
    ``concurrentAdmissionPolicy`` may not change), so the API server answers 200: the queue has no quota
    left. A core kind whose ``spec`` is required (a Job) is refused."""
    _cq(served, "r3-spec")
    r = served.http(
        "PATCH",
        f"{CQ}/r3-spec",
        data='{"spec":null}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 200, r.text
    assert not (r.json().get("spec") or {}).get("resourceGroups")
    served.kubectl("create", "job", "r3-job", "--image=registry.k8s.io/pause:3.10", "-n", "default")
    r = served.kubectl(
        "patch", "job", "r3-job", "-n", "default", "--type=merge", "-p", '{"spec":null}', check=False
    )
    assert r.returncode == 1 and 'The Job "r3-job" is invalid: spec' in r.stderr, r.stderr


def test_a_pod_without_an_image_is_refused(served: Served) -> None:
    """``validateContainerCommon``: every container of a Pod or a core pod template names its image. Before,
    the twin stored such a pod (and its kubelet refused it later)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "r3-noimage", "namespace": "default"},
        "spec": {"containers": [{"name": "main"}]},
    }
    r = served.kubectl("create", "-f", "-", input=json.dumps(pod), check=False)
    assert r.returncode == 1
    assert 'The Pod "r3-noimage" is invalid: spec.containers[0].image: Required value' in r.stderr, r.stderr
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "r3-noimage", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                    "initContainers": [{"name": "init"}],
                }
            }
        },
    }
    r = served.kubectl("create", "-f", "-", input=json.dumps(job), check=False)
    assert "spec.template.spec.initContainers[0].image: Required value" in r.stderr, r.stderr
