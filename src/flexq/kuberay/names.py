"""KubeRay's fixed strings: labels, ports, container names, name generation.

Owns: the label keys and values KubeRay puts on what it creates (``ray-operator/controllers/ray/utils/constant.go``),
the default ports, the twin's own annotations that route a RayJob to the simulated executor, and the
``<name>-<5 chars>`` suffixes (Kubernetes ``rand.String(5)``: alphabet ``bcdfghjklmnpqrstvwxz2456789``).
Pure; must not import anything in flexq but ``flexq.api``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from flexq.api.wellknown import QUEUE_NAME_LABEL, RAY_REPLICA_NAME_LABEL

# Labels on RayCluster pods (utils/constant.go).
LABEL_CLUSTER = "ray.io/cluster"
LABEL_NODE_TYPE = "ray.io/node-type"  # "head" | "worker"
LABEL_GROUP = "ray.io/group"
LABEL_IS_HEAD = "ray.io/is-ray-node"
LABEL_IDENTIFIER = "ray.io/identifier"
LABEL_REPLICA_INDEX = "ray.io/worker-group-replica-index"
LABEL_REPLICA_NAME = RAY_REPLICA_NAME_LABEL
# Labels on objects a RayJob creates.
LABEL_ORIGIN_NAME = "ray.io/originated-from-cr-name"
LABEL_ORIGIN_CRD = "ray.io/originated-from-crd"
LABEL_CREATED_BY = "app.kubernetes.io/created-by"
LABEL_SUBMISSION_MODE = "ray.io/job-submission-mode"
CREATED_BY = "kuberay-operator"
HEAD_GROUP = "headgroup"

FINALIZER_RAYJOB = "ray.io/rayjob-finalizer"

PORT_GCS = 6379
PORT_DASHBOARD = 8265
PORT_CLIENT = 10001
PORT_METRICS = 8080
PORT_AGENT = 52365

SUBMITTER_CONTAINER = "ray-job-submitter"

# Twin-only annotations (DESIGN.md §5): a RayJob carrying run-seconds runs on the simulated executor.
ANN_RUN_SECONDS = "twin.flexq.dev/run-seconds"
ANN_OUTCOME = "twin.flexq.dev/outcome"
# Put by the RayJob controller on the RayCluster (and so on its pods) of a simulated RayJob: its head and
# workers are simulated too (they run until deleted), never real Ray processes.
ANN_SIMULATED = "twin.flexq.dev/simulated"
QUEUE_LABEL = QUEUE_NAME_LABEL

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def rand_suffix(rng: random.Random, n: int = 5) -> str:
    """Kubernetes ``utilrand.String(n)``: ``n`` characters from the vowel-free alphabet."""
    return "".join(rng.choice(_ALPHABET) for _ in range(n))


def head_service_name(name: str) -> str:
    """``<name>-head-svc``: a RayCluster's head Service, and also the one a RayJob keeps pointing at its cluster."""
    return f"{name}-head-svc"


def cluster_of_service(service: str) -> str | None:
    """The RayCluster (or RayJob) name a ``<name>-head-svc`` Service is named after, else None."""
    suffix = "-head-svc"
    return service[: -len(suffix)] if service.endswith(suffix) and len(service) > len(suffix) else None


def dashboard_url(cluster: str, namespace: str) -> str:
    """The ``status.dashboardURL`` KubeRay records: ``<cluster>-head-svc.<ns>.svc.cluster.local:8265``."""
    return f"{head_service_name(cluster)}.{namespace}.svc.cluster.local:{PORT_DASHBOARD}"


def is_ray_node_pod(pod: dict) -> bool:
    """True for a RayCluster head or worker pod (by KubeRay's labels)."""
    labels = pod.get("metadata", {}).get("labels") or {}
    return bool(labels.get(LABEL_CLUSTER)) and labels.get(LABEL_NODE_TYPE) in ("head", "worker")


def _is(obj: dict, group: str, kind: str) -> bool:
    return obj.get("kind") == kind and str(obj.get("apiVersion", "")).rpartition("/")[0] == group


def created_by_kuberay(pod: dict, owners: Sequence[dict]) -> str | None:
    """What KubeRay created this pod as, by who controls it (``owners``: its controller chain, closest first,
    as the kubelet resolved it), never by its command: ``"head"`` or ``"worker"`` for a pod whose controller is
    the RayCluster its ``ray.io/cluster`` label names; ``"submitter"`` for a pod of the batch Job a RayJob
    controls and names after itself (K8sJobMode's submitter); None for anything else — a Pod created directly,
    whatever ``ray job submit`` it says."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    first = owners[0] if owners else {}
    if is_ray_node_pod(pod):
        named = (first.get("metadata") or {}).get("name")
        return (
            labels[LABEL_NODE_TYPE]
            if _is(first, "ray.io", "RayCluster") and named == labels[LABEL_CLUSTER]
            else None
        )
    name_of = [(o.get("metadata") or {}).get("name") for o in owners[:2]]
    if len(owners) >= 2 and _is(first, "batch", "Job") and _is(owners[1], "ray.io", "RayJob"):
        return "submitter" if name_of[0] == name_of[1] else None
    return None


def is_simulated(obj: dict) -> bool:
    """True when the object (RayJob, RayCluster, pod) is simulated: it declares ``twin.flexq.dev/run-seconds``
    or carries ``twin.flexq.dev/simulated: "true"``."""
    anns = obj.get("metadata", {}).get("annotations") or {}
    return ANN_RUN_SECONDS in anns or anns.get(ANN_SIMULATED) == "true"
