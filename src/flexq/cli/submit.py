"""``flexq submit``'s core: a training script and a few flags -> the ConfigMap and Kueue-labelled RayJob.

Owns: ``SubmitSpec`` (the flags), ``build_objects(spec, script_name, script_text)`` (pure: the ConfigMap
holding the script and a RayJob shaped like the tutorial's — head on the CPU pool, one TPU worker group whose
hosts come from the accelerator and topology, tolerations for TPU and DWS (queued-provisioning) taints,
``kueue.x-k8s.io/queue-name``, elastic workload slices with in-tree autoscaling, pip packages in
``runtimeEnvYAML``), ``choose_machine`` (the TPU machine type for an accelerator and topology, from
``flexq.api.gke_catalog``) and ``to_yaml``. With the tutorial's flags it reproduces the tutorial's manifest.
Must not import flexq.assembly, flexq.twin or flexq.http.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import yaml
from rich.markup import escape

from flexq.api import gke_catalog as catalog
from flexq.api.wellknown import QUEUE_NAME_LABEL
from flexq.cli.args import examples, kube_flags
from flexq.cli.views import console, err_console

__all__ = ["SubmitSpec", "build_objects", "choose_machine", "to_yaml", "default_name", "SubmitError"]

DEFAULT_IMAGE = "rayproject/ray:2.53.0-py311"


class SubmitError(ValueError):
    """Flags that cannot make a valid job (unknown accelerator, topology not offered ...)."""


@dataclass
class SubmitSpec:
    """What ``flexq submit`` was asked for."""

    name: str
    queue: str = "user-queue"
    accelerator: str = "tpu-v6e-slice"
    topology: str = "4x4"
    machine_type: str | None = None  # inferred from accelerator + topology when None
    pip: list[str] = field(default_factory=list)
    configmap: str | None = None  # default "<name>-script"
    image: str = DEFAULT_IMAGE
    head_pool: str | None = "default-pool"  # the head's cloud.google.com/gke-nodepool (None: anywhere)
    head_cpu: str = "2"
    head_memory: str = "4Gi"
    worker_cpu: str = "8"
    worker_memory: str = "16Gi"
    replicas: int = 1
    max_replicas: int = 2
    elastic: bool = True
    group_name: str = "tpu-group"
    namespace: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)


def default_name(script_path: str) -> str:
    """``rayjob-<script stem>`` as a DNS-1123 name."""
    stem = re.sub(r"[^a-z0-9-]+", "-", PurePath(script_path).stem.lower()).strip("-") or "job"
    return f"rayjob-{stem}"[:63].rstrip("-")


def choose_machine(accelerator: str, topology: str, machine_type: str | None = None) -> catalog.MachineType:
    """The TPU machine type a pool for ``accelerator``/``topology`` uses (fewest hosts per slice wins)."""
    if machine_type:
        try:
            mt = catalog.machine_type(machine_type)
        except catalog.CatalogError as exc:
            raise SubmitError(str(exc)) from None
        catalog_hosts(mt, topology)
        return mt
    fits = [
        mt
        for mt in catalog.MACHINE_TYPES.values()
        if mt.tpu is not None
        and mt.tpu.accelerator_label == accelerator
        and topology in catalog.valid_topologies(mt)
    ]
    if not fits:
        known = sorted({mt.tpu.accelerator_label for mt in catalog.MACHINE_TYPES.values() if mt.tpu})
        raise SubmitError(
            f'no TPU machine type offers accelerator "{accelerator}" with topology "{topology}" '
            f"(accelerators: {', '.join(known)})"
        )
    return min(fits, key=lambda mt: (catalog.hosts_per_slice(mt, topology), mt.name))


def catalog_hosts(mt: catalog.MachineType, topology: str) -> int:
    try:
        return catalog.hosts_per_slice(mt, topology)
    except catalog.CatalogError as exc:
        raise SubmitError(str(exc)) from None


def _runtime_env_yaml(pip: list[str]) -> str:
    if not pip:
        return ""
    return "pip:\n" + "".join(f"  - {p}\n" for p in pip)


def _volume(configmap: str) -> tuple[dict[str, Any], dict[str, Any]]:
    mount = {"mountPath": "/app", "name": "train-script-volume"}
    vol = {"name": "train-script-volume", "configMap": {"name": configmap}}
    return mount, vol


def _head(spec: SubmitSpec, configmap: str) -> dict[str, Any]:
    mount, vol = _volume(configmap)
    res = {"cpu": spec.head_cpu, "memory": spec.head_memory}
    pod: dict[str, Any] = {}
    if spec.head_pool:
        pod["nodeSelector"] = {catalog.LABEL_NODEPOOL: spec.head_pool}
    pod["containers"] = [
        {
            "name": "ray-head",
            "image": spec.image,
            "ports": [
                {"containerPort": 6379, "name": "gcs-server"},
                {"containerPort": 8265, "name": "dashboard"},
                {"containerPort": 10001, "name": "client"},
            ],
            "resources": {"limits": dict(res), "requests": dict(res)},
            "volumeMounts": [mount],
        }
    ]
    pod["volumes"] = [vol]
    return {"rayStartParams": {}, "template": {"spec": pod}}


def _workers(spec: SubmitSpec, configmap: str, mt: catalog.MachineType, hosts: int) -> dict[str, Any]:
    mount, vol = _volume(configmap)
    res = {"cpu": spec.worker_cpu, catalog.RESOURCE_TPU: str(mt.chips), "memory": spec.worker_memory}
    pod = {
        "tolerations": [
            {"key": catalog.RESOURCE_TPU, "operator": "Exists", "effect": "NoSchedule"},
            {"key": catalog.LABEL_QUEUED, "operator": "Exists", "effect": "NoSchedule"},
        ],
        "containers": [
            {
                "name": "ray-worker",
                "image": spec.image,
                "resources": {"limits": dict(res), "requests": dict(res)},
                "volumeMounts": [mount],
            }
        ],
        "volumes": [vol],
        "nodeSelector": {
            catalog.LABEL_TPU_ACCELERATOR: spec.accelerator,
            catalog.LABEL_TPU_TOPOLOGY: spec.topology,
        },
    }
    return {
        "replicas": spec.replicas,
        "minReplicas": min(spec.replicas, 1) if spec.elastic else spec.replicas,
        "maxReplicas": spec.max_replicas if spec.elastic else spec.replicas,
        "numOfHosts": hosts,
        "groupName": spec.group_name,
        "rayStartParams": {},
        "template": {"spec": pod},
    }


def build_objects(spec: SubmitSpec, script_name: str, script_text: str) -> list[dict[str, Any]]:
    """[ConfigMap, RayJob] for ``spec``; the script is mounted at ``/app/<script_name>`` and run with python."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", spec.name) or len(spec.name) > 47:
        raise SubmitError(
            f'invalid job name "{spec.name}": a DNS-1123 label of at most 47 characters '
            "(KubeRay appends suffixes)"
        )
    if spec.replicas < 0 or spec.max_replicas < spec.replicas:
        raise SubmitError("--replicas must be >= 0 and <= --max-replicas")
    mt = choose_machine(spec.accelerator, spec.topology, spec.machine_type)
    hosts = catalog_hosts(mt, spec.topology)
    configmap = spec.configmap or f"{spec.name}-script"
    script_key = PurePath(script_name).name
    ns_meta = {"namespace": spec.namespace} if spec.namespace else {}
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": configmap, **ns_meta},
        "data": {script_key: script_text},
    }
    annotations = dict(spec.annotations)
    if spec.elastic:
        annotations["kueue.x-k8s.io/elastic-job"] = "true"
    meta: dict[str, Any] = {"name": spec.name, **ns_meta, "labels": {QUEUE_NAME_LABEL: spec.queue}}
    if annotations:
        meta["annotations"] = annotations
    job_spec: dict[str, Any] = {"shutdownAfterJobFinishes": True, "entrypoint": f"python /app/{script_key}"}
    if spec.pip:
        job_spec["runtimeEnvYAML"] = _runtime_env_yaml(spec.pip)
    cluster: dict[str, Any] = {}
    if spec.elastic:
        cluster["enableInTreeAutoscaling"] = True
    cluster["headGroupSpec"] = _head(spec, configmap)
    cluster["workerGroupSpecs"] = [_workers(spec, configmap, mt, hosts)]
    job_spec["rayClusterSpec"] = cluster
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta, "spec": job_spec}
    return [cm, job]


class _Dumper(yaml.SafeDumper):
    pass


def _str_repr(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_repr)


def to_yaml(objs: list[dict[str, Any]]) -> str:
    """Multi-document YAML, block scalars for multi-line strings (scripts, runtimeEnvYAML)."""
    return "---\n".join(yaml.dump(o, Dumper=_Dumper, sort_keys=False, default_flow_style=False) for o in objs)


# -- the command line -------------------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    """``flexq submit``."""
    from flexq.cli.submit import DEFAULT_IMAGE

    b = sub.add_parser(
        "submit",
        help="submit a training script as a Kueue-managed RayJob",
        description="Submit a training script as a Kueue-managed RayJob shaped like the tutorial's: the "
        "script in a ConfigMap, a CPU head, one TPU worker group sized from the accelerator and topology, "
        "elastic workload slices. The LocalQueue must exist; a name that exists is refused (nothing is "
        "changed).",
        epilog=examples(
            "flexq submit train.py",
            "flexq submit train.py --name rayjob-tpu-v6e-dws-1 --configmap jax-train-script \\\n"
            "      --pip 'jax[tpu]==0.8.2' --pip pandas==2.3.3     # the tutorial's RayJob",
            "flexq submit train.py --topology 2x4 --queue team-a -n research",
            "flexq submit train.py --dry-run > job.yaml",
        ),
    )
    b.add_argument("script", help="the Python script the job runs (mounted at /app/<its name>)")
    b.add_argument("--name", help="the RayJob's name (default: rayjob-<script name>)")
    b.add_argument("--accelerator", default="tpu-v6e-slice", help="TPU accelerator (GKE's node label value)")
    b.add_argument("--topology", default="4x4", help="TPU slice topology")
    b.add_argument("--machine-type", default=None, help="TPU machine type (default: from the accelerator)")
    b.add_argument("--queue", default="user-queue", help="Kueue LocalQueue in the namespace")
    b.add_argument(
        "--pip", action="append", default=[], help="pip requirement of the job (repeat or comma-separate)"
    )
    b.add_argument("--configmap", default=None, help="ConfigMap for the script (default: <name>-script)")
    b.add_argument("--image", default=DEFAULT_IMAGE, help="the Ray container image")
    b.add_argument("--head-pool", default="default-pool", help="node pool of the Ray head ('' for any)")
    b.add_argument("--worker-cpu", default="8", help="CPU request of each TPU worker")
    b.add_argument("--worker-memory", default="16Gi", help="memory request of each TPU worker")
    b.add_argument("--replicas", type=int, default=1, help="TPU slices to start with")
    b.add_argument("--max-replicas", type=int, default=2, help="TPU slices the autoscaler may grow to")
    b.add_argument(
        "--annotation",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="RayJob annotation (e.g. twin.flexq.dev/run-seconds=60 on a simulated twin)",
    )
    b.add_argument("--no-elastic", action="store_true", help="no Kueue workload slices / Ray autoscaling")
    b.add_argument("--dry-run", action="store_true", help="print the YAML instead of creating it")
    kube_flags(b)
    b.set_defaults(func=cmd_submit)


def cmd_submit(args: argparse.Namespace) -> int:
    path = Path(args.script)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not a UTF-8 text file"
        err_console.print(f"[red]error:[/] cannot read {args.script}: {why}", highlight=False)
        return 1
    pip = [p for item in args.pip for p in item.split(",") if p.strip()]
    annotations = {}
    for item in args.annotation:
        key, sep, value = item.partition("=")
        if not sep or not key:
            err_console.print(f"[red]error:[/] --annotation wants KEY=VALUE, got {item!r}")
            return 2
        annotations[key] = value
    spec = SubmitSpec(
        name=args.name or default_name(args.script),
        queue=args.queue,
        accelerator=args.accelerator,
        topology=args.topology,
        machine_type=args.machine_type,
        pip=pip,
        configmap=args.configmap,
        image=args.image,
        head_pool=args.head_pool or None,
        worker_cpu=args.worker_cpu,
        worker_memory=args.worker_memory,
        replicas=args.replicas,
        max_replicas=max(args.max_replicas, args.replicas),
        elastic=not args.no_elastic,
        namespace=args.namespace if args.dry_run else None,
        annotations=annotations,
    )
    try:
        objs = build_objects(spec, path.name, text)
    except SubmitError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    if args.dry_run:
        sys.stdout.write(to_yaml(objs))
        return 0
    from flexq.cli import jobclient, kubeclient

    try:
        api = kubeclient.connect(args.kubeconfig, args.context)
        kubeclient.check_not_placeholder(api)
        for line in jobclient.submit_objects(api, objs, args.namespace):
            console.print(line, highlight=False)
    except kubeclient.ClientError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        return 1
    return 0
