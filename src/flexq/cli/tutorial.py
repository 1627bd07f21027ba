"""The tutorial's material, shipped as package data, and the GKE requests its gcloud commands send.

Owns: the verbatim files of "Optimize AI training on TPUs with DWS and Kueue" under ``cli/tutorial/``
(``dws-tpu-queue.yaml``, ``rayjob-tpu-v6e-dws.yaml``, ``train.py.txt``), the v1beta2 form of the queue file
(``dws-tpu-queue.v1beta2.yaml``: the published file through ``flexq convert``'s conversion, for Kueue 0.20 and
later, which no longer serve kueue.x-k8s.io/v1beta1), ``envsubst`` (the shell tool's
``$VAR``/``${VAR}`` substitution, unknown variables become empty), the tutorial's environment variables
(``TUTORIAL_ENV``) and the REST bodies gcloud sends for the tutorial's ``clusters create`` and both
``node-pools create`` commands (recorded from Google Cloud SDK 528.0.0 against a capturing endpoint).
Pure data and pure functions; must not import anything from flexq but ``flexq.api.kueue_convert``.
"""

from __future__ import annotations

import copy
import re
from importlib import resources
from typing import Any

from flexq.api.gke_catalog import GCLOUD_OAUTH_SCOPES

__all__ = [
    "TUTORIAL_ENV",
    "read",
    "envsubst",
    "queue_yaml",
    "QUEUE_FILE",
    "QUEUE_FILE_V1BETA2",
    "rayjob_yaml",
    "train_script",
    "create_cluster_request",
    "create_node_pool_request",
]

# The tutorial's `export` lines (PROJECT_ID comes from gcloud config; flexq's demo uses its own).
TUTORIAL_ENV: dict[str, str] = {
    "ZONE": "us-east5-b",
    "REGION": "us-east5",
    "CLUSTER_NAME": "tpu-cluster",
    "GKE_VERSION": "1.34",
    "ONDEMAND_NODEPOOL": "on-demand-pool",
    "DWS_NODEPOOL": "dws-pool",
}

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


QUEUE_FILE = "dws-tpu-queue.yaml"  # as published: kueue.x-k8s.io/v1beta1 (Kueue 0.19 and earlier serve it)
QUEUE_FILE_V1BETA2 = "dws-tpu-queue.v1beta2.yaml"  # the same objects as v1beta2 (what Kueue 0.20 serves)
_V1BETA2_HEADER = (
    "# The tutorial's dws-tpu-queue.yaml as kueue.x-k8s.io/v1beta2, converted by `flexq convert dws-tpu-queue.yaml`.\n"
    "# Kueue 0.20 and later (what the tutorial's unpinned `helm install` gives today) no longer serve v1beta1.\n"
)


def read(name: str) -> str:
    """One file of the tutorial as shipped (``dws-tpu-queue.yaml``, ``rayjob-tpu-v6e-dws.yaml``, ``train.py.txt``),
    or ``dws-tpu-queue.v1beta2.yaml``, made from the published queue file by ``flexq convert``'s conversion."""
    if name == QUEUE_FILE_V1BETA2:
        from flexq.api.kueue_convert import convert_text

        return _V1BETA2_HEADER + convert_text(read(QUEUE_FILE), QUEUE_FILE).text
    return (resources.files("flexq.cli") / "tutorial" / name).read_text(encoding="utf-8")


def envsubst(text: str, env: dict[str, str]) -> str:
    """What GNU ``envsubst`` does with no arguments: replace ``$VAR`` and ``${VAR}``; unset ones become ''."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), text)


def queue_yaml(env: dict[str, str] | None = None, api: str = "v1beta1") -> str:
    """``envsubst < dws-tpu-queue.yaml`` with the tutorial's node pool names (or ``env``'s); ``api="v1beta2"``:
    the same from ``dws-tpu-queue.v1beta2.yaml`` (what a Kueue 0.20 twin serves)."""
    if api not in ("v1beta1", "v1beta2"):
        raise ValueError(f"api must be v1beta1 or v1beta2, not {api!r}")
    name = QUEUE_FILE if api == "v1beta1" else QUEUE_FILE_V1BETA2
    return envsubst(read(name), {**TUTORIAL_ENV, **(env or {})})


def rayjob_yaml(job_id: int | str, env: dict[str, str] | None = None) -> str:
    """``JOB_ID=<n> envsubst < rayjob-tpu-v6e-dws.yaml``."""
    return envsubst(read("rayjob-tpu-v6e-dws.yaml"), {**TUTORIAL_ENV, **(env or {}), "JOB_ID": str(job_id)})


def train_script() -> str:
    """The tutorial's ``train.py``, verbatim."""
    return read("train.py.txt")


def create_cluster_request(project: str, env: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """(path, body) of ``gcloud container clusters create ${CLUSTER_NAME} --cluster-version=${GKE_VERSION}
    --machine-type=n2-standard-16 --location=${ZONE} --enable-image-streaming --addons=RayOperator``."""
    e = {**TUTORIAL_ENV, **(env or {})}
    parent = f"projects/{project}/locations/{e['ZONE']}"
    body = {
        "cluster": {
            "addonsConfig": {
                "horizontalPodAutoscaling": {"disabled": True},
                "httpLoadBalancing": {"disabled": True},
                "kubernetesDashboard": {"disabled": True},
                "networkPolicyConfig": {"disabled": True},
                "rayOperatorConfig": {"enabled": True},
            },
            "initialClusterVersion": e["GKE_VERSION"],
            "name": e["CLUSTER_NAME"],
            "nodePoolDefaults": {"nodeConfigDefaults": {"gcfsConfig": {"enabled": True}}},
            "nodePools": [
                {
                    "config": {"machineType": "n2-standard-16", "oauthScopes": list(GCLOUD_OAUTH_SCOPES)},
                    "initialNodeCount": 3,
                    "management": {"autoRepair": True, "autoUpgrade": True},
                    "name": "default-pool",
                    "upgradeSettings": {"maxSurge": 1},
                }
            ],
        },
        "parent": parent,
    }
    return f"/v1/{parent}/clusters", body


_POOL: dict[str, Any] = {
    "autoscaling": {"enabled": True, "maxNodeCount": 4, "minNodeCount": 0},
    "config": {
        "machineType": "ct6e-standard-4t",
        "oauthScopes": list(GCLOUD_OAUTH_SCOPES),
        "reservationAffinity": {"consumeReservationType": "NO_RESERVATION"},
    },
    "initialNodeCount": 0,
    "management": {"autoRepair": True, "autoUpgrade": True},
    "placementPolicy": {"tpuTopology": "4x4"},
    "upgradeSettings": {"maxSurge": 1},
}


def create_node_pool_request(
    project: str, *, dws: bool, env: dict[str, str] | None = None
) -> tuple[str, dict[str, Any]]:
    """(path, body) of the tutorial's ``node-pools create`` for plan A (``dws=False``) or plan B
    (``--enable-queued-provisioning --flex-start``)."""
    e = {**TUTORIAL_ENV, **(env or {})}
    parent = f"projects/{project}/locations/{e['ZONE']}/clusters/{e['CLUSTER_NAME']}"
    pool = copy.deepcopy(_POOL)
    pool["name"] = e["DWS_NODEPOOL"] if dws else e["ONDEMAND_NODEPOOL"]
    if dws:
        pool["config"]["flexStart"] = True
        pool["queuedProvisioning"] = {"enabled": True}
    return f"/v1/{parent}/nodePools", {"nodePool": pool, "parent": parent}
