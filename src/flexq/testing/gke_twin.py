"""Builders shared by the GKE twin scenario tests: a twin with the tutorial's cluster and pools, TPU pods,
capacity profiles and ProvisioningRequests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flexq import Twin
from flexq.api.scheme import ADMIT

DATA = Path(__file__).parent / "data" / "gke"  # the tutorial's GKE request bodies
BASE = "/v1/projects/proj-x/locations/us-east5-b"
POOLS = BASE + "/clusters/tpu-cluster/nodePools"
H, D = 3600.0, 86400.0


def fixture(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def profile(spec: dict[str, Any], name: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "twin.flexq.dev/v1alpha1",
        "kind": "CapacityProfile",
        "metadata": {"name": name},
        "spec": spec,
    }


def tutorial_twin(
    spec: dict[str, Any] | None = None, pools: tuple[str, ...] = ("create-ondemand-pool", "create-dws-pool")
) -> Twin:
    """A virtual twin with the tutorial's cluster and node pools, created with gcloud's exact bodies."""
    t = Twin(clock="virtual")
    if spec is not None:
        t.core.project.create(profile(spec), admission=ADMIT)
    for name in ("create-cluster", *pools):
        req = fixture(name)
        t.gke("POST", req["path"], req["body"])
        t.advance(30)
    return t


def tpu_pod(
    name: str, pool: str, run_seconds: float = 3600, *, queued: bool = False, consume: str | None = None
) -> dict[str, Any]:
    """One of the tutorial's TPU workers (cpu 8, 16Gi, 4 chips), pinned to ``pool``."""
    tolerations = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    if queued:
        tolerations.append(
            {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"}
        )
    res = {"cpu": "8", "memory": "16Gi", "google.com/tpu": "4"}
    ann = {"twin.flexq.dev/run-seconds": str(run_seconds)}
    if consume:
        ann["autoscaling.x-k8s.io/consume-provisioning-request"] = consume
        ann["autoscaling.x-k8s.io/provisioning-class-name"] = "queued-provisioning.gke.io"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": ann},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4",
                "cloud.google.com/gke-nodepool": pool,
            },
            "tolerations": tolerations,
            "containers": [
                {
                    "name": "worker",
                    "image": "rayproject/ray:2.53.0-py311",
                    "resources": {"requests": dict(res), "limits": dict(res)},
                }
            ],
        },
    }


def provisioning_request(
    t: Twin,
    name: str,
    *,
    count: int = 4,
    cls: str = "queued-provisioning.gke.io",
    pool: str = "dws-pool",
    params: dict[str, str] | None = None,
) -> None:
    """A PodTemplate and a ProvisioningRequest for ``count`` TPU workers, as Kueue creates them."""
    pod = tpu_pod("x", pool, queued=True)
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": f"ppt-{name}", "namespace": "default"},
            "template": {"metadata": {}, "spec": pod["spec"]},
        }
    )
    spec: dict[str, Any] = {
        "provisioningClassName": cls,
        "podSets": [{"podTemplateRef": {"name": f"ppt-{name}"}, "count": count}],
    }
    if params:
        spec["parameters"] = params
    t.apply(
        {
            "apiVersion": "autoscaling.x-k8s.io/v1",
            "kind": "ProvisioningRequest",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )


def nodes(t: Twin, pool: str) -> list[dict[str, Any]]:
    return t.list("Node", label_selector=f"cloud.google.com/gke-nodepool={pool}")


def ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def events(t: Twin, name: str, reason: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in t.list("Event")
        if e["involvedObject"]["name"] == name and (reason is None or e["reason"] == reason)
    ]
