"""What KubeRay creates for a RayCluster and a RayJob, as plain Kubernetes objects (pure builders).

Owns: the head and worker Pods (labels ``ray.io/cluster``, ``ray.io/node-type``, ``ray.io/group``; the
container command ``ray start ...`` from ``commands``; KubeRay's env such as ``RAY_CLUSTER_NAME``; the TPU
env the GKE Ray add-on's webhook gives multi-host worker groups: ``TPU_WORKER_ID`` = host index within the
replica, ``TPU_NAME`` = the replica's slice name), the ``in-tree`` autoscaler sidecar container on the head,
the head Services, and the RayJob's submitter batch Job (named exactly after the RayJob) — and whether a submitter
pod's script is the one KubeRay builds for its RayJob (``trusted_submitter_script``: the local Ray executor runs
no other).
Names are passed in (the controllers draw the random suffixes). Pure; imports only ``flexq.api`` and this
package.
"""

from __future__ import annotations

import json

from flexq.api.jsoncopy import clone

from . import commands, names
from .validation import runtime_env_text

_AUTOSCALER_RESOURCES = {
    "limits": {"cpu": "500m", "memory": "512Mi"},
    "requests": {"cpu": "500m", "memory": "512Mi"},
}
_SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}


def _owner(obj: dict, controller: bool = True) -> dict:
    return {
        "apiVersion": obj.get("apiVersion", "ray.io/v1"),
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"].get("uid", ""),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def _copy_annotations(src: dict, dst_meta: dict, prefix: str = "twin.flexq.dev/") -> None:
    anns = {
        k: v for k, v in (src.get("metadata", {}).get("annotations") or {}).items() if k.startswith(prefix)
    }
    if anns:
        dst_meta.setdefault("annotations", {}).update(anns)


def _env(container: dict, values: dict[str, str | dict]) -> None:
    env = container.setdefault("env", [])
    have = {e.get("name") for e in env}
    for k, v in values.items():
        if k not in have:
            env.append({"name": k, "valueFrom": v} if isinstance(v, dict) else {"name": k, "value": v})


def _node_pod(
    cluster: dict,
    template: dict,
    *,
    name: str,
    node_type: str,
    group: str,
    params: dict,
    extra_labels: dict[str, str],
    extra_env: dict[str, str | dict],
) -> dict:
    meta = cluster["metadata"]
    ns = meta.get("namespace", "default")
    pod_meta = clone(template.get("metadata") or {})
    spec = clone(template.get("spec") or {})
    labels = pod_meta.setdefault("labels", {})
    labels.update(
        {
            names.LABEL_CLUSTER: meta["name"],
            names.LABEL_NODE_TYPE: node_type,
            names.LABEL_GROUP: group,
            names.LABEL_IS_HEAD: "yes",
            names.LABEL_IDENTIFIER: f"{meta['name']}-{node_type}",
            "app.kubernetes.io/name": "kuberay",
            names.LABEL_CREATED_BY: names.CREATED_BY,
        }
    )
    labels.update(extra_labels)
    pod_meta.update({"name": name, "namespace": ns, "ownerReferences": [_owner(cluster)]})
    _copy_annotations(cluster, pod_meta)
    spec.setdefault("restartPolicy", "Always")
    containers = spec.setdefault("containers", [{"name": f"ray-{node_type}"}])
    ray = containers[0]
    head_addr = f"{names.head_service_name(meta['name'])}.{ns}.svc.cluster.local:{names.PORT_GCS}"
    full = commands.default_ray_start_params(ray, params, head=node_type == "head", head_address=head_addr)
    start = commands.ray_start_command(full, head=node_type == "head")
    if not ray.get("command"):
        ray["command"] = ["/bin/bash", "-lc", "--"]
        ray["args"] = [start]
    _env(
        ray,
        {
            "RAY_CLUSTER_NAME": {"fieldRef": {"fieldPath": f"metadata.labels['{names.LABEL_CLUSTER}']"}},
            "RAY_CLOUD_INSTANCE_ID": {"fieldRef": {"fieldPath": "metadata.name"}},
            "RAY_NODE_TYPE_NAME": {"fieldRef": {"fieldPath": f"metadata.labels['{names.LABEL_GROUP}']"}},
            "KUBERAY_GEN_RAY_START_CMD": start.split("; ", 1)[-1],
            "RAY_PORT": str(names.PORT_GCS),
            "RAY_USAGE_STATS_KUBERAY_IN_USE": "1",
            **extra_env,
        },
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def head_pod(cluster: dict, *, name: str) -> dict:
    """The head Pod of a RayCluster (plus the autoscaler sidecar when ``enableInTreeAutoscaling``)."""
    hg = cluster["spec"]["headGroupSpec"]
    pod = _node_pod(
        cluster,
        hg.get("template") or {},
        name=name,
        node_type="head",
        group=names.HEAD_GROUP,
        params=hg.get("rayStartParams") or {},
        extra_labels={},
        extra_env={"RAY_ADDRESS": f"127.0.0.1:{names.PORT_GCS}"},
    )
    if cluster["spec"].get("enableInTreeAutoscaling"):
        image = pod["spec"]["containers"][0].get("image", "")
        pod["spec"]["containers"].append(
            {
                "name": "autoscaler",
                "image": image,
                "resources": clone(_AUTOSCALER_RESOURCES),
                "command": ["/bin/bash", "-lc", "--"],
                "args": [
                    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
                    "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
                ],
            }
        )
    return pod


def is_tpu_group(group: dict) -> bool:
    """True when the group's ray container asks for ``google.com/tpu``."""
    containers = (group.get("template") or {}).get("spec", {}).get("containers") or [{}]
    res = containers[0].get("resources") or {}
    return any(commands.TPU_RESOURCE in (res.get(k) or {}) for k in ("limits", "requests"))


def worker_pod(
    cluster: dict, group: dict, *, name: str, replica_name: str, replica_index: int, host_index: int
) -> dict:
    """One host of one replica of a worker group."""
    meta = cluster["metadata"]
    ns = meta.get("namespace", "default")
    gname = group["groupName"]
    extra_env: dict[str, str | dict] = {
        "FQ_RAY_IP": f"{names.head_service_name(meta['name'])}.{ns}.svc.cluster.local",
        "RAY_IP": names.head_service_name(meta["name"]),
    }
    if is_tpu_group(group):
        # The GKE Ray add-on's TPU webhook: one slice per replica, worker ids 0..numOfHosts-1.
        extra_env.update({"TPU_WORKER_ID": str(host_index), "TPU_NAME": replica_name})
    labels = {
        names.LABEL_REPLICA_NAME: replica_name,
        names.LABEL_REPLICA_INDEX: str(replica_index),
        "ray.io/worker-group-host-index": str(host_index),
    }
    return _node_pod(
        cluster,
        group.get("template") or {},
        name=name,
        node_type="worker",
        group=gname,
        params=group.get("rayStartParams") or {},
        extra_labels=labels,
        extra_env=extra_env,
    )


def head_service(owner: dict, *, name: str, cluster_name: str) -> dict:
    """The Service selecting the cluster's head pod (ports gcs/dashboard/client/metrics): headless, as KubeRay
    makes it unless its operator runs with ``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true`` (``BuildServiceForHeadPod``:
    a RayCluster has one head pod, so the name resolves straight to it; not-ready addresses are published so
    workers find the GCS while the head starts)."""
    ns = owner["metadata"].get("namespace", "default")
    ports = [
        ("gcs-server", names.PORT_GCS),
        ("dashboard", names.PORT_DASHBOARD),
        ("client", names.PORT_CLIENT),
        ("metrics", names.PORT_METRICS),
    ]
    labels = {names.LABEL_NODE_TYPE: "head", names.LABEL_CREATED_BY: names.CREATED_BY}
    if owner["kind"] == "RayJob":
        labels.update({names.LABEL_ORIGIN_NAME: owner["metadata"]["name"], names.LABEL_ORIGIN_CRD: "RayJob"})
    else:
        labels[names.LABEL_CLUSTER] = cluster_name
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "ownerReferences": [_owner(owner)]},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {names.LABEL_CLUSTER: cluster_name, names.LABEL_NODE_TYPE: "head"},
            "ports": [{"name": n, "port": p, "targetPort": p, "protocol": "TCP"} for n, p in ports],
        },
    }


def runtime_env_json(rayjob: dict) -> str:
    """``runtimeEnvYAML`` converted to JSON, as KubeRay passes it to ``--runtime-env-json``."""
    text = rayjob["spec"].get("runtimeEnvYAML") or ""
    if not text.strip():
        return ""
    return runtime_env_text(text)


def submitter_job(rayjob: dict, *, job_id: str, dashboard_url: str, cluster: dict | None = None) -> dict:
    """The K8sJobMode submitter ``batch/v1`` Job, named exactly after the RayJob. Its default container runs the
    image of the RayCluster's head (``GetDefaultSubmitterTemplate(rayClusterInstance)``): ``cluster``, the one the
    RayJob runs on — a cluster a ``clusterSelector`` names has its own spec — else the RayJob's ``rayClusterSpec``."""
    meta = rayjob["metadata"]
    spec = rayjob["spec"]
    cluster_spec = ((cluster or {}).get("spec") or spec.get("rayClusterSpec")) or {}
    head_c = ((cluster_spec.get("headGroupSpec") or {}).get("template") or {}).get("spec", {}).get(
        "containers"
    ) or [{}]
    script = commands.submitter_script(
        address=dashboard_url,
        job_id=job_id,
        entrypoint=spec.get("entrypoint", ""),
        runtime_env_json=runtime_env_json(rayjob),
        metadata_json=json.dumps(spec["metadata"]) if spec.get("metadata") else "",
        entrypoint_num_cpus=float(spec.get("entrypointNumCpus") or 0),
        entrypoint_num_gpus=float(spec.get("entrypointNumGpus") or 0),
        entrypoint_resources=spec.get("entrypointResources") or "",
    )
    if spec.get("submitterPodTemplate"):
        template = clone(spec["submitterPodTemplate"])
    else:
        template = {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": names.SUBMITTER_CONTAINER,
                        "image": head_c[0].get("image", ""),
                        "resources": clone(_SUBMITTER_RESOURCES),
                    }
                ],
            }
        }
    container = template["spec"]["containers"][0]
    if not container.get("command"):
        container["command"] = ["/bin/bash", "-ce", "--"]
        container["args"] = [script]
    _env(
        container,
        {"PYTHONUNBUFFERED": "1", "RAY_DASHBOARD_ADDRESS": dashboard_url, "RAY_JOB_SUBMISSION_ID": job_id},
    )
    tmeta = template.setdefault("metadata", {})
    tlabels = tmeta.setdefault("labels", {})
    origin = {names.LABEL_ORIGIN_NAME: meta["name"], names.LABEL_ORIGIN_CRD: "RayJob"}
    tlabels.update(origin)
    _copy_annotations(rayjob, tmeta)
    backoff = (spec.get("submitterConfig") or {}).get("backoffLimit", 2)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "labels": {**origin, names.LABEL_CREATED_BY: names.CREATED_BY},
            "ownerReferences": [_owner(rayjob)],
        },
        "spec": {"backoffLimit": backoff, "template": template},
    }


def trusted_submitter_script(pod: dict, rayjob: dict) -> tuple[str, str]:
    """The script a RayJob's submitter ``pod`` may run on this machine, rebuilt from the ``rayjob`` that controls
    it (KubeRay's ``BuildJobSubmitCommand`` for its ``status.jobId`` and ``dashboardURL``), and "" with the reason
    when it is not run: a ``submitterPodTemplate`` with its own command (a container image's program, which this
    machine does not run), or a pod whose command is not the one KubeRay builds for that RayJob."""
    st, name = rayjob.get("status") or {}, rayjob["metadata"]["name"]
    job = submitter_job(rayjob, job_id=st.get("jobId", ""), dashboard_url=st.get("dashboardURL", ""))
    container = job["spec"]["template"]["spec"]["containers"][0]
    if container.get("command") != ["/bin/bash", "-ce", "--"] or len(container.get("args") or []) != 1:
        return (
            "",
            f"RayJob {name}'s submitterPodTemplate has its own command, which is not run on this machine",
        )
    script = str(container["args"][0])
    if commands.submitter_script_of(pod) != script:
        return "", f"the pod's command is not the submitter KubeRay builds for RayJob {name}"
    return script, ""
