"""The tutorial's material, shipped as package data, and the GKE requests its gcloud commands send.

Owns: the verbatim files of "Optimize AI training on TPUs with DWS and Kueue" under ``cli/tutorial/``
(``dws-tpu-queue.yaml``, ``rayjob-tpu-v6e-dws.yaml``, ``train.py.txt``), ``envsubst`` (the shell tool's
``$VAR``/``${VAR}`` substitution, unknown variables become empty), the tutorial's environment variables
(``TUTORIAL_ENV``) and the REST bodies gcloud sends for the tutorial's ``clusters create`` and both
``node-pools create`` commands (recorded from Google Cloud SDK 528.0.0 against a capturing endpoint).
Pure data and pure functions; must not import anything from flexq.
"""

from __future__ import annotations

import copy
import re
from importlib import resources
from typing import Any

__all__ = [
    "TUTORIAL_ENV",
    "read",
    "envsubst",
    "queue_yaml",
    "rayjob_yaml",
    "train_script",
    "create_cluster_request",
    "create_node_pool_request",
    "GCLOUD_SCOPES",
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

# The OAuth scopes gcloud adds to every node config it creates (recorded from Google Cloud SDK 528.0.0).
GCLOUD_SCOPES = [
    "https://www.googleapis.com/auth/devstorage.read_only",
    "https://www.googleapis.com/auth/logging.write",
    "https://www.googleapis.com/auth/monitoring",
    "https://www.googleapis.com/auth/service.management.readonly",
    "https://www.googleapis.com/auth/servicecontrol",
    "https://www.googleapis.com/auth/trace.append",
]

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def read(name: str) -> str:
    """One file of the tutorial as shipped (``dws-tpu-queue.yaml``, ``rayjob-tpu-v6e-dws.yaml``, ``train.py.txt``)."""
    return (resources.files("flexq.cli") / "tutorial" / name).read_text(encoding="utf-8")


def envsubst(text: str, env: dict[str, str]) -> str:
    """What GNU ``envsubst`` does with no arguments: replace ``$VAR`` and ``${VAR}``; unset ones become ''."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), text)


def queue_yaml(env: dict[str, str] | None = None) -> str:
    """``envsubst < dws-tpu-queue.yaml`` with the tutorial's node pool names (or ``env``'s)."""
    return envsubst(read("dws-tpu-queue.yaml"), {**TUTORIAL_ENV, **(env or {})})


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
                    "config": {"machineType": "n2-standard-16", "oauthScopes": list(GCLOUD_SCOPES)},
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


_POOL = {
    "autoscaling": {"enabled": True, "maxNodeCount": 4, "minNodeCount": 0},
    "config": {
        "machineType": "ct6e-standard-4t",
        "oauthScopes": GCLOUD_SCOPES,
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
