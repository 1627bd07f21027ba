"""Small builders for kube tests: Nodes made by hand (Ready, with allocatable), pods and Jobs."""

from __future__ import annotations

from typing import Any

from flexq import Twin

TPU_TAINT = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
QUEUED_TAINT = {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"}


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pool: str = "default-pool",
    labels: dict | None = None,
    taints: list[dict] | None = None,
    ready: str = "True",
    tpu: int = 0,
    pods: str = "110",
    unschedulable: bool = False,
) -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    if tpu:
        alloc["google.com/tpu"] = str(tpu)
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "cloud.google.com/gke-nodepool": pool,
                "kubernetes.io/hostname": name,
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "addresses": [{"type": "InternalIP", "address": f"10.128.0.{len(name)}"}],
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


def tpu_node(name: str, pool: str, topology: str = "4x4", chips: int = 4, queued: bool = False) -> dict:
    taints = [TPU_TAINT] + ([QUEUED_TAINT] if queued else [])
    return node(
        name,
        cpu="180",
        memory="720Gi",
        pool=pool,
        tpu=chips,
        taints=taints,
        labels={
            "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
            "cloud.google.com/gke-tpu-topology": topology,
        },
    )


def add_node(twin: Twin, obj: dict) -> dict:
    """Create a Node with its status (as a kubelet registering itself would)."""
    return twin.store.create(obj, keep_status=True)


def pod(
    name: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    tpu: int = 0,
    node_selector: dict | None = None,
    tolerations: list[dict] | None = None,
    restart: str = "Never",
    annotations: dict | None = None,
    affinity: dict | None = None,
    **spec: Any,
) -> dict:
    requests = {"cpu": cpu, "memory": memory}
    limits = {}
    if tpu:
        requests["google.com/tpu"] = str(tpu)
        limits["google.com/tpu"] = str(tpu)
    container: dict[str, Any] = {"name": "main", "image": "busybox", "resources": {"requests": requests}}
    if limits:
        container["resources"]["limits"] = limits
    s: dict[str, Any] = {"restartPolicy": restart, "containers": [container], **spec}
    if node_selector:
        s["nodeSelector"] = node_selector
    if tolerations:
        s["tolerations"] = tolerations
    if affinity:
        s["affinity"] = affinity
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def job(
    name: str,
    *,
    run: float | None = 30,
    outcome: str | None = None,
    parallelism: int | None = None,
    completions: int | None = None,
    suspend: bool = False,
    restart: str = "Never",
    **spec: Any,
) -> dict:
    ann = {}
    if run is not None:
        ann["twin.flexq.dev/run-seconds"] = str(run)
    if outcome:
        ann["twin.flexq.dev/outcome"] = outcome
    s: dict[str, Any] = {
        "suspend": suspend,
        "template": {
            "metadata": {"annotations": ann},
            "spec": {
                "restartPolicy": restart,
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    }
                ],
            },
        },
        **spec,
    }
    if parallelism is not None:
        s["parallelism"] = parallelism
    if completions is not None:
        s["completions"] = completions
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": s,
    }


def condition(obj: dict, type_: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def events(twin: Twin, name: str, reason: str | None = None) -> list[dict]:
    return [
        e
        for e in twin.list("Event")
        if e["involvedObject"]["name"] == name and (reason is None or e["reason"] == reason)
    ]


def kubelet(twin: Twin):
    """The current cluster's kubelet controller (to look at what it is running)."""
    return next(c for c in twin.runtime.manager.controllers if c.name == "kubelet")
