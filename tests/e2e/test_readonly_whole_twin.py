"""The whole twin with the stores' read-only check on: controllers read stored objects without copies (peek,
peek_list, the informer caches, watch events) and must never change one in place. The tutorial's two plans,
elastic RayJobs on KubeRay, and Kueue-managed batch Jobs through kube-scheduler, kubelet and the GKE
autoscaler, billing included."""

from __future__ import annotations

import logging

import pytest

from flexq import Twin
from flexq.cli import tutorial as T


def test_no_controller_changes_a_stored_object_in_place(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    twin = Twin(clock="virtual", check_readonly=True)
    try:
        assert twin.core.project.check_readonly
        for path, body in (
            T.create_cluster_request("p"),
            T.create_node_pool_request("p", dws=False),
            T.create_node_pool_request("p", dws=True),
        ):
            twin.gke("POST", path, body)
            twin.run_until_idle(600)
        twin.apply(T.queue_yaml(api="v1beta2"))
        twin.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "jax-train-script"},
                "data": {"train.py": T.train_script()},
            }
        )
        for i in (1, 2, 3):
            twin.apply(
                T.rayjob_yaml(i).replace(
                    'elastic-job: "true"', 'elastic-job: "true"\n    twin.flexq.dev/run-seconds: "600"'
                )
            )
            twin.advance(2)
        for i in range(6):
            twin.create(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {
                        "name": f"cpu-{i}",
                        "namespace": "default",
                        "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                    },
                    "spec": {
                        "template": {
                            "metadata": {"annotations": {"twin.flexq.dev/run-seconds": "30"}},
                            "spec": {
                                "restartPolicy": "Never",
                                "nodeSelector": {"cloud.google.com/gke-nodepool": "default-pool"},
                                "containers": [
                                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                                ],
                            },
                        }
                    },
                }
            )
        twin.advance(3 * 3600)
        assert twin.store.check_readonly
        done = [j for j in twin.list("RayJob") if j["status"].get("jobDeploymentStatus") == "Complete"]
        assert len(done) == 3
        assert all(
            any(c["type"] == "Complete" for c in j["status"].get("conditions", []))
            for j in twin.list("Job")
            if j["metadata"]["name"].startswith("cpu-")
        )
        assert twin.billing()["total"] > 0
        twin.core.project.verify_readonly()
        for rt in twin.core.clusters.values():
            rt.store.verify_readonly()
        assert not [
            r
            for r in caplog.records
            if "in place" in r.getMessage() or (r.exc_info and "in place" in str(r.exc_info[1]))
        ]
    finally:
        twin.close()
