"""Changes to a running GKE cluster: clusters.update (ClusterUpdate), labels, node-pool management, upgrades
with cancel and rollback, getServerConfig, regional clusters' ``zone``, and the nodes' addresses — through the
backend's REST surface, and through a twin where the change reaches the cluster (addons, node IPs)."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

import pytest

from flexq import Twin
from flexq.cli import tutorial
from flexq.errors import NotFound
from tests.gke.test_backend import BASE, Api, fixture

C = BASE + "/clusters/tpu-cluster"
POOL = C + "/nodePools/default-pool"


@pytest.fixture
def api() -> Api:
    a = Api()
    req = fixture("create-cluster")
    a.ok("POST", req["path"], req["body"])
    a.wait()
    return a


def _state(api: Api) -> list[Any]:
    return sorted(
        (copy.deepcopy(o) for k in ("GkeCluster", "GkeNodePool") for o in api.storage.list(k)),
        key=lambda o: o["metadata"]["name"],
    )


def _second_pool(api: Api) -> None:
    req = fixture("create-ondemand-pool")
    api.ok("POST", req["path"], req["body"])
    api.wait()


def test_node_pool_autoscaling_through_clusters_update(api: Api) -> None:
    # gcloud container node-pools update default-pool --enable-autoscaling --min-nodes=0 --max-nodes=8
    op = api.ok(
        "PUT",
        C,
        {
            "name": "projects/proj-x/locations/us-east5-b/clusters/tpu-cluster",
            "update": {
                "desiredNodePoolAutoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 8},
                "desiredNodePoolId": "default-pool",
            },
        },
    )
    assert op["operationType"] == "UPDATE_CLUSTER" and op["targetLink"].endswith("/nodePools/default-pool")
    assert api.ok("GET", C)["status"] == "RECONCILING"
    api.wait()
    assert api.ok("GET", POOL)["autoscaling"] == {"enabled": True, "minNodeCount": 0, "maxNodeCount": 8}
    assert api.ok("GET", C)["status"] == "RUNNING"
    # --no-enable-autoscaling: gcloud sends enabled=false with zeroed limits
    api.ok(
        "PUT",
        C,
        {
            "update": {
                "desiredNodePoolId": "default-pool",
                "desiredNodePoolAutoscaling": {
                    "enabled": False,
                    "minNodeCount": 0,
                    "maxNodeCount": 0,
                    "locationPolicy": "LOCATION_POLICY_UNSPECIFIED",
                },
            }
        },
    )
    api.wait()
    assert "autoscaling" not in api.ok("GET", POOL)


@pytest.mark.parametrize(
    ("update", "code", "message"),
    [
        ({"desiredDatapathProvider": "ADVANCED_DATAPATH"}, 400, "desiredDatapathProvider are not supported"),
        ({"desiredMasterVersion": "1.35", "desiredLoggingService": "none"}, 400, "Exactly one update"),
        ({}, 400, "at least one field"),
        ({"desiredNodePoolId": "default-pool"}, 400, "at least one field"),
        (
            {"desiredNodePoolAutoscaling": {"enabled": True, "minNodeCount": 5, "maxNodeCount": 2}},
            400,
            "max_node_count (2) must be greater than or equal",
        ),
        (
            {"desiredNodePoolAutoscaling": {"enabled": True, "maxNodeCount": 2}, "desiredNodePoolId": "nope"},
            404,
            "nodePools/nope",
        ),
        ({"desiredMasterVersion": "1.30.1-gke.1"}, 400, 'Master version "1.30.1-gke.1" is unsupported.'),
        ({"desiredMasterVersion": "1.33"}, 400, "cannot be downgraded"),
        ({"desiredNodeVersion": "1.35"}, 400, "must not be newer than the master version"),
        ({"desiredLoggingService": "logging.googleapis.com"}, 400, "Invalid value for loggingService"),
        ({"desiredBogus": True}, 400, 'Unknown name "desiredBogus"'),
    ],
    ids=[
        "unmodelled",
        "two-updates",
        "empty",
        "pool-id-only",
        "bad-limits",
        "no-such-pool",
        "old-minor",
        "master-downgrade",
        "nodes-above-master",
        "legacy-logging",
        "misspelt",
    ],
)
def test_refused_updates_change_nothing(api: Api, update: dict, code: int, message: str) -> None:
    before = _state(api)
    status, out = api("PUT", C, {"update": update})
    assert status == code, out
    assert message in out["error"]["message"]
    assert out["error"]["status"] == ("NOT_FOUND" if code == 404 else "INVALID_ARGUMENT")
    assert _state(api) == before
    assert api.ok("GET", BASE + "/operations")["operations"][-1]["operationType"] == "CREATE_CLUSTER"


def test_node_pool_id_is_required_with_several_pools(api: Api) -> None:
    body = {"update": {"desiredNodePoolAutoscaling": {"enabled": True, "maxNodeCount": 3}}}
    api.ok("PUT", C, body)  # one pool: that pool
    api.wait()
    _second_pool(api)
    status, out = api("PUT", C, body)
    assert status == 400 and out["error"]["message"] == (
        "Node pool id must be specified if cluster has more than one node pool."
    )


def test_master_and_node_upgrades_land_when_their_operations_finish(api: Api) -> None:
    op = api.ok("PUT", C, {"update": {"desiredMasterVersion": "1.35"}})
    assert op["operationType"] == "UPGRADE_MASTER"
    assert api.ok("GET", C)["currentMasterVersion"] == "1.34.1-gke.1829001"
    status, out = api("PUT", C, {"update": {"desiredLoggingService": "none"}})
    assert status == 400 and out["error"]["status"] == "FAILED_PRECONDITION"  # one operation at a time
    api.wait()
    cluster = api.ok("GET", C)
    assert cluster["currentMasterVersion"] == "1.35.0-gke.1795000"
    assert cluster["currentNodeVersion"] == "1.34.1-gke.1829001"  # nodes are upgraded separately
    # gcloud container clusters upgrade tpu-cluster --node-pool=default-pool: desiredNodeVersion "-" = master's
    op = api.ok("PUT", C, {"update": {"desiredNodeVersion": "-", "desiredNodePoolId": "default-pool"}})
    assert op["operationType"] == "UPGRADE_NODES" and api.ok("GET", POOL)["status"] == "RECONCILING"
    api.wait()
    assert api.ok("GET", POOL)["version"] == "1.35.0-gke.1795000"
    assert api.ok("GET", C)["currentNodeVersion"] == "1.35.0-gke.1795000"
    status, out = api("PUT", C, {"update": {"desiredMasterVersion": "1.34"}})
    assert status == 400 and "cannot be downgraded" in out["error"]["message"]


def test_cancel_an_upgrade_then_roll_back(api: Api) -> None:
    api.ok("PUT", C, {"update": {"desiredMasterVersion": "1.35"}})
    api.wait()
    status, out = api("POST", POOL + ":rollback", {})
    assert status == 400 and "no canceled or failed upgrade" in out["error"]["message"]
    op = api.ok("PUT", C, {"update": {"desiredNodeVersion": "1.35", "desiredNodePoolId": "default-pool"}})
    assert api.ok("POST", f"{BASE}/operations/{op['name']}:cancel", {}) == {}
    done = api.ok("GET", f"{BASE}/operations/{op['name']}")
    assert done["status"] == "DONE" and done["error"]["code"] == 1  # google.rpc.Code CANCELLED
    api.wait()
    pool = api.ok("GET", POOL)
    assert pool["version"] == "1.34.1-gke.1829001" and pool["status"] == "RUNNING"  # the upgrade never landed
    status, out = api("POST", f"{BASE}/operations/{op['name']}:cancel", {})
    assert status == 400 and "already DONE" in out["error"]["message"]
    rb = api.ok("POST", POOL + ":rollback", {"respectPdb": True})
    assert rb["operationType"] == "UPGRADE_NODES"
    api.wait()
    assert api.ok("GET", POOL)["version"] == "1.34.1-gke.1829001"
    assert api("POST", POOL + ":rollback", {})[0] == 400  # nothing left to roll back
    # only node-pool upgrades can be canceled
    op = api.ok("PUT", C, {"update": {"desiredLoggingService": "none"}})
    status, out = api("POST", f"{BASE}/operations/{op['name']}:cancel", {})
    assert status == 400 and "cannot be canceled" in out["error"]["message"]


def test_resource_labels_with_fingerprint(api: Api) -> None:
    cluster = api.ok("GET", C)
    assert cluster["labelFingerprint"] == "a9dc16a7" and "resourceLabels" not in cluster
    status, out = api("POST", C + ":setResourceLabels", {"resourceLabels": {"team": "ml"}})
    assert status == 400 and out["error"] == {
        "code": 400,
        "status": "FAILED_PRECONDITION",
        "message": (
            "Labels could not be set due to fingerprint mismatch; try again with the proper fingerprint: incorrect "
            'fingerprint supplied was "", the expected one is "a9dc16a7".'
        ),
    }
    status, out = api(
        "POST", C + ":setResourceLabels", {"resourceLabels": {"Team": "ml"}, "labelFingerprint": "a9dc16a7"}
    )
    assert status == 400 and "Invalid resource label" in out["error"]["message"]
    op = api.ok(
        "POST", C + ":setResourceLabels", {"resourceLabels": {"team": "ml"}, "labelFingerprint": "a9dc16a7"}
    )
    assert op["operationType"] == "SET_LABELS"
    api.wait()
    cluster = api.ok("GET", C)
    assert cluster["resourceLabels"] == {"team": "ml"} and cluster["labelFingerprint"] != "a9dc16a7"
    # the old fingerprint no longer matches; the zonal form (/resourceLabels) takes the current one
    assert (
        api("POST", C + ":setResourceLabels", {"resourceLabels": {}, "labelFingerprint": "a9dc16a7"})[0]
        == 400
    )
    api.ok(
        "POST",
        "/v1/projects/proj-x/zones/us-east5-b/clusters/tpu-cluster/resourceLabels",
        {"resourceLabels": {}, "labelFingerprint": cluster["labelFingerprint"]},
    )
    api.wait()
    assert "resourceLabels" not in api.ok("GET", C) and api.ok("GET", C)["labelFingerprint"] == "a9dc16a7"


def test_management_logging_monitoring(api: Api) -> None:
    op = api.ok("POST", POOL + ":setManagement", {"management": {"autoRepair": False, "autoUpgrade": True}})
    assert op["operationType"] == "SET_NODE_POOL_MANAGEMENT"
    api.wait()
    assert api.ok("GET", POOL)["management"] == {"autoRepair": False, "autoUpgrade": True}
    op = api.ok("POST", C + ":setLogging", {"loggingService": "none"})
    assert op["operationType"] == "UPDATE_CLUSTER"
    api.wait()
    api.ok("PUT", C, {"update": {"desiredMonitoringService": "none"}})
    api.wait()
    cluster = api.ok("GET", C)
    assert cluster["loggingService"] == "none" and cluster["monitoringService"] == "none"


def test_server_config_offers_the_versions_the_twin_accepts(api: Api) -> None:
    cfg = api.ok("GET", BASE + "/serverConfig")
    assert cfg["defaultClusterVersion"] == api.ok("GET", C)["currentMasterVersion"]
    assert cfg["validMasterVersions"][0] == "1.35.0-gke.1795000"
    assert {c["channel"] for c in cfg["channels"]} == {"RAPID", "REGULAR", "STABLE"}
    regular = next(c for c in cfg["channels"] if c["channel"] == "REGULAR")
    assert regular["defaultVersion"] == cfg["defaultClusterVersion"]
    for version in cfg["validMasterVersions"]:  # every offered version is one a create accepts
        body = fixture("create-cluster")["body"]
        body["cluster"].update(
            name="v" + version.replace(".", "-").split("-gke")[0], initialClusterVersion=version
        )
        assert api("POST", BASE + "/clusters", body)[0] == 200, version
    assert api.ok("GET", "/v1/projects/proj-x/zones/us-east5-b/serverconfig") == cfg


def test_regional_cluster_has_zone_and_autopilot_is_refused(api: Api) -> None:
    body = fixture("create-cluster")["body"]
    body["cluster"]["name"] = "r1"
    api.ok("POST", "/v1/projects/proj-x/locations/us-east5/clusters", body)
    api.wait()
    regional = api.ok("GET", "/v1/projects/proj-x/locations/us-east5/clusters/r1")
    assert regional["zone"] == "us-east5" and regional["location"] == "us-east5"
    assert all(c.get("zone") for c in api.ok("GET", "/v1/projects/proj-x/locations/-/clusters")["clusters"])
    auto = {
        "cluster": {
            "name": "a1",
            "autopilot": {"enabled": True},
            "nodePools": [{"name": "default-pool", "initialNodeCount": 1}],
        }
    }
    status, out = api("POST", "/v1/projects/proj-x/locations/us-east5/clusters", auto)
    assert status == 400 and "Autopilot clusters" in out["error"]["message"]
    assert api("GET", "/v1/projects/proj-x/locations/us-east5/clusters/a1")[0] == 404


def test_ray_operator_addon_switched_by_update_and_nodes_have_addresses() -> None:
    twin = Twin(clock="virtual")
    try:
        path, body = tutorial.create_cluster_request("proj-u", {"CLUSTER_NAME": "c1"})
        twin.gke("POST", path, body)
        twin.run_until_idle(max_seconds=3600)
        cluster = twin.cluster("c1")
        assert cluster.list("RayJob") == []
        twin.gke(
            "PUT",
            f"{path}/c1",
            {"update": {"desiredAddonsConfig": {"rayOperatorConfig": {"enabled": False}}}},
        )
        twin.run_until_idle(max_seconds=3600)
        assert twin.gke("GET", f"{path}/c1")["addonsConfig"]["rayOperatorConfig"] == {"enabled": False}
        with pytest.raises(NotFound):
            cluster.list("RayJob")
        twin.gke(
            "PUT", f"{path}/c1", {"update": {"desiredAddonsConfig": {"rayOperatorConfig": {"enabled": True}}}}
        )
        twin.run_until_idle(max_seconds=3600)
        assert cluster.list("RayJob") == []
        nodes = cluster.list("Node")
        assert len(nodes) == 3
        internal = []
        for n in nodes:
            addrs = {a["type"]: a["address"] for a in n["status"]["addresses"]}
            assert addrs["Hostname"] == n["metadata"]["name"]
            assert ipaddress.ip_address(addrs["ExternalIP"]).is_global
            internal.append(ipaddress.ip_address(addrs["InternalIP"]))
            assert n["status"]["nodeInfo"]["kernelVersion"]
        assert len(set(internal)) == 3  # each VM its own address ...
        region = ipaddress.ip_network("10.202.0.0/20")  # ... in us-east5's subnet range
        assert all(ip in region for ip in internal)
    finally:
        twin.close()


def test_turning_the_ray_operator_addon_on_installs_kuberays_crds() -> None:
    twin = Twin(clock="virtual")
    try:
        path, body = tutorial.create_cluster_request("proj-u", {"CLUSTER_NAME": "c1"})
        body["cluster"].setdefault("addonsConfig", {})["rayOperatorConfig"] = {"enabled": False}
        twin.gke("POST", path, body)
        twin.run_until_idle(max_seconds=3600)
        cluster = twin.cluster("c1")
        assert cluster.try_get("CustomResourceDefinition", "rayjobs.ray.io") is None
        assert (
            cluster.get("CustomResourceDefinition", "workloads.kueue.x-k8s.io")["spec"]["group"]
            == "kueue.x-k8s.io"
        )
        twin.gke(
            "PUT", f"{path}/c1", {"update": {"desiredAddonsConfig": {"rayOperatorConfig": {"enabled": True}}}}
        )
        twin.run_until_idle(max_seconds=3600)
        for name in ("rayjobs.ray.io", "rayclusters.ray.io"):
            assert (
                cluster.get("CustomResourceDefinition", name)["status"]["conditions"][1]["type"]
                == "Established"
            )
    finally:
        twin.close()
