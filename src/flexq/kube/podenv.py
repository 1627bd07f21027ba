"""What a node gives a pod at start: ConfigMap volumes as files, and the GKE TPU environment.

Owns the pure functions the kubelet calls before starting a pod:

- ``configmap_files``: every ``configMap`` volume mounted by a container becomes ``{mountPath: {file:
  content}}`` (all keys, or only ``items`` with their ``path``; a ``subPath`` mount puts one key at the
  mount path itself). A missing ConfigMap that is not ``optional`` is reported so the pod stays in
  ``ContainerCreating``, as the kubelet's ``MountVolume.SetUp failed`` does.
- ``start_blocker``: what keeps the kubelet from starting the pod's containers, in its order: a volume whose
  ConfigMap or Secret is missing (``FailedMount``, the pod stays ``ContainerCreating``), an image reference it
  cannot parse (``InvalidImageName``, Event ``InspectFailed``), an ``env``/``envFrom`` reference to a
  missing ConfigMap or Secret or key (``CreateContainerConfigError``, Event ``Failed``: ``Error: configmap
  "x" not found``); None when nothing does. Optional references never block.
- ``tpu_env``: on a TPU node (labels ``cloud.google.com/gke-tpu-accelerator`` and ``-topology``), for a pod
  requesting ``google.com/tpu``: ``TPU_ACCELERATOR_TYPE`` (``<generation>-<cores>``, e.g. ``v6e-16`` for
  a 4x4 v6e slice; cores = chips × 2 on v4/v5p/v7x), ``TPU_TOPOLOGY``, ``TPU_WORKER_ID`` (the host's
  index within its slice), ``TPU_WORKER_HOSTNAMES``, and ``TPU_NAME``. A slice is the
  node pool's nodes of that type (``cloud.google.com/gke-nodepool``, plus the
  ``autoscaling.gke.io/provisioning-request`` label when present), sorted by name and cut into groups of
  hosts-per-slice = chips(topology) / chips per node (``google.com/tpu`` allocatable); when the twin's GKE
  node pools mark a slice's hosts (annotation ``gke.twin.flexq.dev/slice``), that is the slice, named
  ``<pool>-<slice id>``. A pod's own env
  (e.g. from KubeRay's TPU webhook) is applied by the executor after this one and wins.
- ``api_env``: the ``kubernetes`` Service's variables every pod gets (``KUBERNETES_SERVICE_HOST``/``_PORT``...),
  pointing at the twin's API server where it listens (``127.0.0.1:<port>``), so in-cluster clients find it.

Pure; must not import the store, the runtime or other domains.
"""

from __future__ import annotations

import base64
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import prod

from flexq.api.wellknown import RESOURCE_TPU
from flexq.semantics.nodefit import NodeInfo, hosts_per_slice, pod_requests
from flexq.semantics.pods import image_reference_error

LABEL_NODEPOOL = "cloud.google.com/gke-nodepool"
LABEL_TPU_ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
LABEL_TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
LABEL_PROVISIONING_REQUEST = "autoscaling.gke.io/provisioning-request"
TPU_RESOURCE = RESOURCE_TPU

# gke-tpu-accelerator -> (Cloud TPU generation name, TensorCores per chip)
TPU_GENERATIONS: dict[str, tuple[str, int]] = {
    "tpu-v6e-slice": ("v6e", 1),
    "tpu-v5-lite-podslice": ("v5litepod", 1),
    "tpu-v5-lite-device": ("v5litepod", 1),
    "tpu-v5p-slice": ("v5p", 2),
    "tpu-v4-podslice": ("v4", 2),
    "tpu7x": ("tpu7x", 2),
}


def configmap_files(
    pod: dict, get_configmap: Callable[[str], dict | None]
) -> tuple[dict[str, dict[str, str]], list[tuple[str, str]]]:
    """(files by mount path, [(volume, configmap) that are missing])."""
    spec = pod.get("spec") or {}
    sources: dict[str, dict] = {
        v["name"]: v["configMap"] for v in spec.get("volumes") or [] if v.get("configMap")
    }
    contents: dict[str, dict[str, str] | None] = {}
    missing: list[tuple[str, str]] = []
    for vol, src in sorted(sources.items()):
        cm = get_configmap(src.get("name") or "")
        if cm is None:
            contents[vol] = None
            if not src.get("optional"):
                missing.append((vol, src.get("name") or ""))
            continue
        data = dict(cm.get("data") or {})
        for k, v in (cm.get("binaryData") or {}).items():
            data[k] = base64.b64decode(v).decode("utf-8", errors="replace")
        if src.get("items"):
            data = {it["path"]: data[it["key"]] for it in src["items"] if it.get("key") in data}
        contents[vol] = data
    files: dict[str, dict[str, str]] = {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for mount in c.get("volumeMounts") or []:
            mounted = contents.get(mount.get("name", ""))
            if mounted is None:
                continue
            path = mount["mountPath"]
            if mount.get("subPath"):
                if mount["subPath"] in mounted:
                    parent, base = posixpath.split(path.rstrip("/"))
                    files.setdefault(parent or "/", {})[base] = mounted[mount["subPath"]]
                continue
            files.setdefault(path, {}).update(mounted)
    return files, missing


@dataclass(frozen=True)
class StartBlocker:
    """Why the kubelet cannot start a pod's containers yet (``start_blocker``)."""

    waiting_reason: str  # the containers' waiting reason: ContainerCreating, InvalidImageName, ...
    waiting_message: str
    event_reason: str  # the Warning Event's reason: FailedMount, InspectFailed, Failed
    event_message: str
    refs: tuple[tuple[str, str], ...] = ()  # (kind, name) whose creation may unblock it


def _missing(kind: str, name: str) -> str:
    return f'{kind.lower()} "{name}" not found'


def start_blocker(pod: dict, get: Callable[[str, str], dict | None]) -> StartBlocker | None:
    """What keeps the kubelet from starting ``pod`` (see the module docstring); ``get(kind, name)`` reads a
    ConfigMap or Secret of the pod's namespace."""
    spec = pod.get("spec") or {}
    for vol in spec.get("volumes") or []:
        for kind, src, key in (
            ("ConfigMap", vol.get("configMap"), "name"),
            ("Secret", vol.get("secret"), "secretName"),
        ):
            if isinstance(src, dict) and not src.get("optional") and get(kind, src.get(key) or "") is None:
                msg = f'MountVolume.SetUp failed for volume "{vol.get("name", "")}" : {_missing(kind, src.get(key) or "")}'
                return StartBlocker(
                    "ContainerCreating", "", "FailedMount", msg, ((kind, src.get(key) or ""),)
                )
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    for c in containers:
        why = image_reference_error(str(c.get("image") or ""))
        if why is not None:
            msg = f'Failed to apply default image tag "{c.get("image") or ""}": {why}'
            return StartBlocker("InvalidImageName", msg, "InspectFailed", msg)
    ns = (pod.get("metadata") or {}).get("namespace") or "default"
    for c in containers:
        for ref in c.get("envFrom") or []:
            for kind, src in (("ConfigMap", ref.get("configMapRef")), ("Secret", ref.get("secretRef"))):
                if (
                    isinstance(src, dict)
                    and not src.get("optional")
                    and get(kind, src.get("name") or "") is None
                ):
                    why = _missing(kind, src.get("name") or "")
                    return StartBlocker(
                        "CreateContainerConfigError",
                        why,
                        "Failed",
                        f"Error: {why}",
                        ((kind, src.get("name") or ""),),
                    )
        for env in c.get("env") or []:
            value_from = env.get("valueFrom") or {}
            for kind, src, field in (
                ("ConfigMap", value_from.get("configMapKeyRef"), "data"),
                ("Secret", value_from.get("secretKeyRef"), "data"),
            ):
                if not isinstance(src, dict) or src.get("optional"):
                    continue
                name = src.get("name") or ""
                obj = get(kind, name)
                if obj is None:
                    why = _missing(kind, name)
                elif src.get("key") not in (obj.get(field) or {}) and src.get("key") not in (
                    obj.get("binaryData" if kind == "ConfigMap" else "stringData") or {}
                ):
                    why = f"couldn't find key {src.get('key')} in {kind} {ns}/{name}"
                else:
                    continue
                return StartBlocker(
                    "CreateContainerConfigError", why, "Failed", f"Error: {why}", ((kind, name),)
                )
    return None


def _slice_key(node: NodeInfo) -> tuple[str, ...]:
    lab = node.labels
    return (
        lab.get(LABEL_NODEPOOL, ""),
        lab.get(LABEL_TPU_ACCELERATOR, ""),
        lab.get(LABEL_TPU_TOPOLOGY, ""),
        lab.get(LABEL_PROVISIONING_REQUEST, ""),
        node.slice,
    )


def tpu_env(pod: dict, node: NodeInfo, all_nodes: Iterable[NodeInfo]) -> dict[str, str]:
    """The TPU_* variables a GKE TPU node gives a pod using its chips ({} elsewhere)."""
    accel, topology = node.labels.get(LABEL_TPU_ACCELERATOR), node.labels.get(LABEL_TPU_TOPOLOGY)
    if not accel or not topology or pod_requests(pod).get(TPU_RESOURCE, 0) <= 0:
        return {}
    try:
        chips = prod(int(d) for d in topology.lower().split("x"))
    except ValueError:
        return {}
    gen, cores = TPU_GENERATIONS.get(accel, (accel.removeprefix("tpu-").split("-")[0], 1))
    hosts = hosts_per_slice(node)
    key = _slice_key(node)
    members = sorted(n.name for n in all_nodes if _slice_key(n) == key)
    if node.name not in members:
        members.append(node.name)
        members.sort()
    pos = members.index(node.name)
    group, worker = divmod(pos, hosts)
    slice_nodes = members[group * hosts : (group + 1) * hosts]
    pool = key[0] or node.name
    if node.slice:
        name = f"{pool}-{node.slice}"
    else:
        name = pool if len(members) <= hosts else f"{pool}-{group}"
    return {
        "TPU_ACCELERATOR_TYPE": f"{gen}-{chips * cores}",
        "TPU_TOPOLOGY": topology,
        "TPU_WORKER_ID": str(worker),
        "TPU_WORKER_HOSTNAMES": ",".join(slice_nodes),
        "TPU_NAME": name,
    }


def api_env(endpoint: str | None) -> dict[str, str]:
    """The ``kubernetes`` Service's environment (docker links style, as the kubelet writes it) for the API
    server at ``host:port`` ({} when the twin does not serve its API)."""
    if not endpoint:
        return {}
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    tcp = f"tcp://{endpoint}"
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": tcp,
        f"KUBERNETES_PORT_{port}_TCP": tcp,
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": port,
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }
