"""Common gcloud commands beyond the tutorial, with real gcloud against a served twin: a regional cluster
(clusters list, get-credentials' context name), node-pool autoscaling and management updates, addons, labels,
get-server-config, a master upgrade, a node upgrade canceled and rolled back, create-auto refused, and the nodes'
addresses as ``kubectl get nodes -o wide`` prints them."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.http.conftest import Served, gcloud_runner

pytestmark = pytest.mark.slow
R = ["--region=us-east5"]
POOL = ["default-pool", "--cluster=r1", *R]


# GKE's operations as quick as the commands allow, DONE at gcloud's first poll (the live default: create 5 s,
# update 1 s — about 6 s a call with gcloud's polling —, upgrade 20 s: 90 s for this test, 40 s so); the node
# upgrade the test cancels is made long (``_upgrades``) so it is still RUNNING however loaded the machine is
QUICK = {
    "apiVersion": "twin.flexq.dev/v1alpha1",
    "kind": "CapacityProfile",
    "metadata": {"name": "default"},
    "spec": {
        "operations": {
            "createCluster": "0s",
            "deleteCluster": "0s",
            "createNodePool": "0s",
            "deleteNodePool": "0s",
            "update": "0s",
            "upgrade": "2s",
        }
    },
}


def _upgrades(served: Served, seconds: int) -> None:
    """How long the upgrades started from now on take (an operation's length is set when it starts)."""
    served.twin.core.project.patch(
        "CapacityProfile", "default", {"spec": {"operations": {"upgrade": f"{seconds}s"}}}
    )


def test_common_gcloud_commands_on_a_regional_cluster(served: Served) -> None:
    run = gcloud_runner(served, "proj-c", "gcloud-commands-kubeconfig", timeout=120)
    served.twin.core.project.create(QUICK)

    def gc(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run("gcloud", "container", *args, check=check)

    def describe(fmt: str, *args: str) -> str:
        return gc(*args, f"--format=value({fmt})").stdout.strip()

    gc("clusters", "create", "r1", *R, "--num-nodes=1", "--machine-type=n2-standard-16")
    assert gc("clusters", "list", "--format=value(name,zone)").stdout.split() == ["r1", "us-east5"]
    gc("clusters", "get-credentials", "r1", *R)
    assert run("kubectl", "config", "current-context").stdout.strip() == "gke_proj-c_us-east5_r1"

    # node-pools update --enable-autoscaling: clusters.update with desiredNodePoolAutoscaling
    gc("node-pools", "update", *POOL, "--enable-autoscaling", "--min-nodes=0", "--max-nodes=8")
    auto = json.loads(gc("node-pools", "describe", *POOL, "--format=json(autoscaling)").stdout)["autoscaling"]
    assert auto == {"enabled": True, "minNodeCount": 0, "maxNodeCount": 8}
    gc("node-pools", "update", *POOL, "--no-enable-autorepair")
    assert describe(
        "management.autoRepair,management.autoUpgrade", "node-pools", "describe", *POOL
    ).split() == ["False", "True"]

    # addons switch what the cluster serves
    assert "rayjobs" not in run("kubectl", "api-resources", "--api-group=ray.io").stdout
    gc("clusters", "update", "r1", *R, "--update-addons=RayOperator=ENABLED")
    assert "rayjobs" in run("kubectl", "api-resources", "--api-group=ray.io").stdout

    gc("clusters", "update", "r1", *R, "--update-labels=team=ml")
    assert describe("resourceLabels", "clusters", "describe", "r1", *R) == "team=ml"

    cfg = json.loads(gc("get-server-config", *R, "--format=json").stdout)
    assert cfg["defaultClusterVersion"] in cfg["validMasterVersions"]
    gc("clusters", "upgrade", "r1", *R, "--master", "--cluster-version=1.35")
    assert describe("currentMasterVersion", "clusters", "describe", "r1", *R) == "1.35.0-gke.1795000"

    # a node upgrade, canceled, then rolled back
    _upgrades(served, 600)
    gc("clusters", "upgrade", "r1", *R, "--node-pool=default-pool", "--async")
    op = describe("name", "operations", "list", *R, "--filter=operationType=UPGRADE_NODES AND status=RUNNING")
    assert op, "no running node upgrade"
    gc("operations", "cancel", op, *R)
    _upgrades(served, 2)
    assert describe("status,error.code", "operations", "describe", op, *R).split() == ["DONE", "1"]
    gc("node-pools", "rollback", *POOL)
    assert describe("version", "node-pools", "describe", *POOL) == "1.34.1-gke.1829001"

    refused = gc("clusters", "create-auto", "a1", *R, check=False)
    assert refused.returncode != 0 and "Autopilot clusters" in refused.stderr

    wide = run("kubectl", "get", "nodes", "-o", "wide").stdout.splitlines()
    header = wide[0].split()
    internal, kernel = header.index("INTERNAL-IP"), header.index("KERNEL-VERSION")
    row = wide[1].split()
    assert row[internal].startswith("10.202.") and row[kernel] != "<unknown>", wide
    gc("clusters", "delete", "r1", *R, "--quiet")
