"""The GKE API backend over in-memory storage: the tutorial's gcloud bodies, operations, and refusals."""

import copy
import json
import random
from pathlib import Path

import pytest

from flexq.gke.backend import GkeBackend
from flexq.gke.rest import handle
from flexq.gke.storage import MemoryStorage

DATA = Path(__file__).resolve().parents[2] / "src" / "flexq" / "testing" / "data" / "gke"
T0 = 1_800_000_000.0
BASE = "/v1/projects/proj-x/locations/us-east5-b"
POOLS = BASE + "/clusters/tpu-cluster/nodePools"


def fixture(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


class Api:
    def __init__(self) -> None:
        self.storage = MemoryStorage()
        self.backend = GkeBackend(self.storage, random.Random(1))
        self.now = T0

    def __call__(self, method: str, path: str, body=None) -> tuple[int, dict]:
        return handle(self.backend, method, path, body, self.now)

    def ok(self, method: str, path: str, body=None) -> dict:
        code, out = self(method, path, body)
        assert code == 200, out
        return out

    def wait(self, seconds: float = 60) -> None:
        self.now += seconds
        self.backend.settle(self.now)


@pytest.fixture
def api() -> Api:
    a = Api()
    req = fixture("create-cluster")
    op = a.ok("POST", req["path"], req["body"])
    assert op["operationType"] == "CREATE_CLUSTER" and op["status"] == "RUNNING"
    a.wait()
    return a


def test_tutorial_cluster_and_pools(api: Api) -> None:
    cluster = api.ok("GET", BASE + "/clusters/tpu-cluster")
    assert cluster["status"] == "RUNNING"
    assert cluster["addonsConfig"]["rayOperatorConfig"] == {"enabled": True}
    assert [p["name"] for p in cluster["nodePools"]] == ["default-pool"]
    assert cluster["nodePools"][0]["config"]["machineType"] == "n2-standard-16"
    assert cluster["nodePools"][0]["initialNodeCount"] == 3
    for name in ("create-ondemand-pool", "create-dws-pool"):
        req = fixture(name)
        op = api.ok("POST", req["path"], req["body"])
        assert op["operationType"] == "CREATE_NODE_POOL"
        assert api.ok("GET", BASE + "/operations/" + op["name"])["status"] == "RUNNING"
        api.wait()
        assert api.ok("GET", BASE + "/operations/" + op["name"])["status"] == "DONE"
    dws = api.ok("GET", POOLS + "/dws-pool")
    assert dws["config"]["flexStart"] is True  # `--format="get(config.flexStart)"` prints True
    assert dws["queuedProvisioning"] == {"enabled": True}
    assert dws["placementPolicy"]["tpuTopology"] == "4x4"
    assert dws["initialNodeCount"] == 0 and dws["status"] == "RUNNING"
    assert dws["autoscaling"] == {"enabled": True, "minNodeCount": 0, "maxNodeCount": 4}
    ondemand = api.ok("GET", POOLS + "/on-demand-pool")
    assert "flexStart" not in ondemand["config"]
    twin = api.storage.get("GkeNodePool", "proj-x.us-east5-b.tpu-cluster.dws-pool")["status"]
    assert twin["hostsPerSlice"] == 4 and twin["queued"] and twin["provisioningModel"] == "flex-start"
    names = [p["name"] for p in api.ok("GET", POOLS)["nodePools"]]
    assert names == ["default-pool", "on-demand-pool", "dws-pool"]
    assert len(api.ok("GET", "/v1/projects/proj-x/locations/-/clusters")["clusters"]) == 1


def test_other_gcloud_bodies_are_accepted(api: Api) -> None:
    for name in ("create-gpu-dws-pool", "create-spot-pool"):
        req = fixture(name)
        api.ok("POST", req["path"], req["body"])
        api.wait()
    spot = api.storage.get("GkeNodePool", "proj-x.us-east5-b.tpu-cluster.spot")["status"]
    assert spot["provisioningModel"] == "spot" and spot["hostsPerSlice"] == 2


def test_one_operation_at_a_time(api: Api) -> None:
    api.ok("POST", fixture("create-ondemand-pool")["path"], fixture("create-ondemand-pool")["body"])
    code, out = api("POST", POOLS, fixture("create-dws-pool")["body"])
    assert code == 400 and out["error"]["status"] == "FAILED_PRECONDITION"
    assert "incompatible operation" in out["error"]["message"]


def test_delete_pool_and_cluster(api: Api) -> None:
    api.ok("POST", POOLS, fixture("create-dws-pool")["body"])
    api.wait()
    op = api.ok("DELETE", POOLS + "/dws-pool")
    assert op["operationType"] == "DELETE_NODE_POOL"
    assert api.ok("GET", POOLS + "/dws-pool")["status"] == "STOPPING"
    api.wait()
    assert api("GET", POOLS + "/dws-pool")[0] == 404
    api.ok("DELETE", BASE + "/clusters/tpu-cluster")
    assert api.ok("GET", BASE + "/clusters/tpu-cluster")["status"] == "STOPPING"
    api.wait()
    assert api("GET", BASE + "/clusters/tpu-cluster")[0] == 404
    assert api.storage.list("GkeNodePool") == []


def test_set_size_and_autoscaling(api: Api) -> None:
    api.ok("POST", POOLS, fixture("create-ondemand-pool")["body"])
    api.wait()
    api.ok("POST", POOLS + "/on-demand-pool:setSize", {"nodeCount": 4})
    api.wait()
    assert (
        api.storage.get("GkeNodePool", "proj-x.us-east5-b.tpu-cluster.on-demand-pool")["status"][
            "desiredNodeCount"
        ]
        == 4
    )
    code, out = api("POST", POOLS + "/on-demand-pool:setSize", {"nodeCount": 3})
    assert code == 400 and "whole slices of 4" in out["error"]["message"]
    api.ok(
        "POST",
        POOLS + "/on-demand-pool:setAutoscaling",
        {"autoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 8}},
    )
    api.wait()
    assert api.ok("GET", POOLS + "/on-demand-pool")["autoscaling"]["maxNodeCount"] == 8


def _pool(**changes) -> dict:
    body = copy.deepcopy(fixture("create-dws-pool")["body"])
    pool = body["nodePool"]
    for path, value in changes.items():
        target = pool
        keys = path.split("__")
        for k in keys[:-1]:
            target = target.setdefault(k, {})
        if value is None:
            target.pop(keys[-1], None)
        else:
            target[keys[-1]] = value
    return body


MALFORMED = {
    # name: (method, path, body, code, google status, message fragment)
    "unknown-field": (
        "POST",
        POOLS,
        _pool(config__flexStrat=True),
        400,
        "INVALID_ARGUMENT",
        "Unknown name \"flexStrat\" at 'node_pool.config': Cannot find field.",
    ),
    "wrong-type": (
        "POST",
        POOLS,
        _pool(initialNodeCount="four"),
        400,
        "INVALID_ARGUMENT",
        "initial_node_count",
    ),
    "bad-enum": (
        "POST",
        POOLS,
        _pool(config__reservationAffinity={"consumeReservationType": "NONE"}),
        400,
        "INVALID_ARGUMENT",
        "consume_reservation_type",
    ),
    "no-node-pool": ("POST", POOLS, {"parent": "x"}, 400, "INVALID_ARGUMENT", "must be specified"),
    "bad-pool-name": (
        "POST",
        POOLS,
        _pool(name="DWS_Pool"),
        400,
        "INVALID_ARGUMENT",
        "Must be a match of regex",
    ),
    "pool-exists": (
        "POST",
        POOLS,
        _pool(name="default-pool", queuedProvisioning=None, config__flexStart=None),
        409,
        "ALREADY_EXISTS",
        "Already exists: projects/proj-x/locations/us-east5-b/clusters/tpu-cluster/nodePools/default-pool",
    ),
    "unknown-cluster": (
        "POST",
        BASE + "/clusters/nope/nodePools",
        _pool(),
        404,
        "NOT_FOUND",
        "Not found: projects/proj-x/locations/us-east5-b/clusters/nope.",
    ),
    "unknown-machine": (
        "POST",
        POOLS,
        _pool(config__machineType="ct9-mega-4t"),
        400,
        "INVALID_ARGUMENT",
        'Invalid machine type "ct9-mega-4t"',
    ),
    "bad-topology": (
        "POST",
        POOLS,
        _pool(placementPolicy__tpuTopology="3x3"),
        400,
        "INVALID_ARGUMENT",
        'Invalid TPU topology "3x3" for machine type "ct6e-standard-4t"',
    ),
    "topology-on-cpu": (
        "POST",
        POOLS,
        _pool(config__machineType="n2-standard-16", queuedProvisioning=None, config__flexStart=None),
        400,
        "INVALID_ARGUMENT",
        "only supported for TPU machine types",
    ),
    "queued-without-autoscaling": (
        "POST",
        POOLS,
        _pool(autoscaling=None),
        400,
        "INVALID_ARGUMENT",
        "Queued provisioning requires autoscaling",
    ),
    "flex-start-without-autoscaling": (
        "POST",
        POOLS,
        _pool(autoscaling=None, queuedProvisioning=None),
        400,
        "INVALID_ARGUMENT",
        "Flex-start node pools with no initial nodes require autoscaling",
    ),
    "queued-without-flex-start": (
        "POST",
        POOLS,
        _pool(config__flexStart=None),
        400,
        "INVALID_ARGUMENT",
        "Queued provisioning requires flex-start",
    ),
    "queued-with-nodes": ("POST", POOLS, _pool(initialNodeCount=4), 400, "INVALID_ARGUMENT", "0 nodes"),
    "queued-with-reservation": (
        "POST",
        POOLS,
        _pool(config__reservationAffinity={"consumeReservationType": "ANY_RESERVATION"}),
        400,
        "INVALID_ARGUMENT",
        "NO_RESERVATION",
    ),
    "flex-start-and-spot": (
        "POST",
        POOLS,
        _pool(queuedProvisioning=None, config__spot=True),
        400,
        "INVALID_ARGUMENT",
        "cannot be combined with spot",
    ),
    "spot-and-preemptible": (
        "POST",
        POOLS,
        _pool(queuedProvisioning=None, config__flexStart=None, config__spot=True, config__preemptible=True),
        400,
        "INVALID_ARGUMENT",
        "Only one of spot or preemptible",
    ),
    "flex-start-on-v4": (
        "POST",
        POOLS,
        _pool(config__machineType="ct4p-hightpu-4t", placementPolicy__tpuTopology="2x2x4"),
        400,
        "INVALID_ARGUMENT",
        'Flex-start is not supported for machine type "ct4p-hightpu-4t"',
    ),
    "min-above-max": (
        "POST",
        POOLS,
        _pool(autoscaling={"enabled": True, "minNodeCount": 8, "maxNodeCount": 4}),
        400,
        "INVALID_ARGUMENT",
        "must be greater than or equal to min_node_count",
    ),
    "total-and-zonal-limits": (
        "POST",
        POOLS,
        _pool(autoscaling={"enabled": True, "maxNodeCount": 4, "totalMaxNodeCount": 4}),
        400,
        "INVALID_ARGUMENT",
        "cannot specify both total and per zone limits",
    ),
    "partial-slice": (
        "POST",
        POOLS,
        _pool(autoscaling={"enabled": True, "minNodeCount": 0, "maxNodeCount": 6}),
        400,
        "INVALID_ARGUMENT",
        "multiples of 4",
    ),
    "run-duration-too-long": (
        "POST",
        POOLS,
        _pool(config__maxRunDuration="700000s"),
        400,
        "INVALID_ARGUMENT",
        "max_run_duration",
    ),
    "wrong-gpu-count": (
        "POST",
        POOLS,
        _pool(
            config__machineType="a3-highgpu-8g",
            placementPolicy=None,
            config__accelerators=[{"acceleratorType": "nvidia-h100-80gb", "acceleratorCount": "4"}],
        ),
        400,
        "INVALID_ARGUMENT",
        "has 8 nvidia-h100-80gb accelerators",
    ),
    "bad-cluster-version": (
        "POST",
        BASE + "/clusters",
        {"cluster": {"name": "c2", "initialNodeCount": 1, "initialClusterVersion": "1.99"}},
        400,
        "INVALID_ARGUMENT",
        'Master version "1.99" is unsupported',
    ),
    "cluster-without-nodes": (
        "POST",
        BASE + "/clusters",
        {"cluster": {"name": "c2"}},
        400,
        "INVALID_ARGUMENT",
        "initial_node_count must be greater than zero",
    ),
    "cluster-exists": (
        "POST",
        BASE + "/clusters",
        {"cluster": {"name": "tpu-cluster", "initialNodeCount": 1}},
        409,
        "ALREADY_EXISTS",
        "Already exists",
    ),
    "bad-location": (
        "POST",
        "/v1/projects/proj-x/locations/mars/clusters",
        {"cluster": {"name": "c2", "initialNodeCount": 1}},
        400,
        "INVALID_ARGUMENT",
        "mars",
    ),
    "unknown-path": ("PATCH", POOLS + "/dws-pool", {}, 404, "NOT_FOUND", "Requested entity was not found."),
    "body-not-object": ("POST", POOLS, ["nodePool"], 400, "INVALID_ARGUMENT", "Invalid JSON payload"),
    "negative-node-count": (
        "POST",
        POOLS,
        _pool(queuedProvisioning=None, config__flexStart=None, autoscaling=None, initialNodeCount=-4),
        400,
        "INVALID_ARGUMENT",
        "non-negative",
    ),
    "gpu-accelerator-on-tpu": (
        "POST",
        POOLS,
        _pool(config__accelerators=[{"acceleratorType": "nvidia-l4", "acceleratorCount": "1"}]),
        400,
        "INVALID_ARGUMENT",
        'Accelerator type "nvidia-l4" is not supported with machine type "ct6e-standard-4t"',
    ),
    "queued-with-spot": (
        "POST",
        POOLS,
        _pool(config__flexStart=None, config__spot=True),
        400,
        "INVALID_ARGUMENT",
        "Queued provisioning cannot be used with spot",
    ),
    "bad-cluster-name": (
        "POST",
        BASE + "/clusters",
        {"cluster": {"name": "Tpu_Cluster", "initialNodeCount": 1}},
        400,
        "INVALID_ARGUMENT",
        "Invalid value for field 'cluster.name'",
    ),
    "cluster-name-too-long": (
        "POST",
        BASE + "/clusters",
        {"cluster": {"name": "c" * 41, "initialNodeCount": 1}},
        400,
        "INVALID_ARGUMENT",
        "no longer than 40 characters",
    ),
    "duplicate-pool-names": (
        "POST",
        BASE + "/clusters",
        {
            "cluster": {
                "name": "c2",
                "nodePools": [{"name": "p", "initialNodeCount": 1}, {"name": "p", "initialNodeCount": 1}],
            }
        },
        400,
        "INVALID_ARGUMENT",
        "unique",
    ),
    "delete-unknown-pool": (
        "DELETE",
        POOLS + "/nope",
        None,
        404,
        "NOT_FOUND",
        "Not found: projects/proj-x/locations/us-east5-b/clusters/tpu-cluster/nodePools/nope.",
    ),
    "single-host-topology-on-8t": (
        "POST",
        POOLS,
        _pool(config__machineType="ct6e-standard-8t"),
        400,
        "INVALID_ARGUMENT",
        'Invalid TPU topology "4x4" for machine type "ct6e-standard-8t"',
    ),
    "bad-duration": (
        "POST",
        POOLS,
        _pool(config__maxRunDuration="2h"),
        400,
        "INVALID_ARGUMENT",
        "google.protobuf.Duration",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_requests_are_refused_and_change_nothing(api: Api, case: str) -> None:
    method, path, body, code, status, fragment = MALFORMED[case]
    before = copy.deepcopy(api.storage.objects)
    got, out = api(method, path, body)
    assert (got, out["error"]["status"], out["error"]["code"]) == (code, status, code), out
    assert fragment in out["error"]["message"], out["error"]["message"]
    assert api.storage.objects == before


def test_at_least_fifteen_kinds_of_refusal() -> None:
    assert len(MALFORMED) >= 15
    assert len({(m[3], m[4], m[5]) for m in MALFORMED.values()}) == len(MALFORMED)  # each refused its own way


def _ready_pools(api: Api) -> None:
    for name in ("create-ondemand-pool", "create-dws-pool"):
        api.ok("POST", POOLS, fixture(name)["body"])
        api.wait()


REFUSED_ON_EXISTING = {
    "resize-queued-pool": (
        "POST",
        POOLS + "/dws-pool:setSize",
        {"nodeCount": 4},
        400,
        "FAILED_PRECONDITION",
        "queued provisioning cannot be resized",
    ),
    "negative-size": (
        "POST",
        POOLS + "/on-demand-pool:setSize",
        {"nodeCount": -1},
        400,
        "INVALID_ARGUMENT",
        "non-negative",
    ),
    "partial-slice-size": (
        "POST",
        POOLS + "/on-demand-pool:setSize",
        {"nodeCount": 3},
        400,
        "INVALID_ARGUMENT",
        "whole slices of 4",
    ),
    "queued-pool-without-autoscaling": (
        "POST",
        POOLS + "/dws-pool:setAutoscaling",
        {"autoscaling": {"enabled": False}},
        400,
        "INVALID_ARGUMENT",
        "Queued provisioning requires autoscaling",
    ),
    "autoscaling-partial-slice": (
        "POST",
        POOLS + "/on-demand-pool:setAutoscaling",
        {"autoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 5}},
        400,
        "INVALID_ARGUMENT",
        "multiples of 4",
    ),
    "update-to-bad-machine": (
        "PUT",
        POOLS + "/on-demand-pool",
        {"machineType": "ct6e-standard-8t"},
        400,
        "INVALID_ARGUMENT",
        'Invalid TPU topology "4x4"',
    ),
    "update-unknown-field": (
        "PUT",
        POOLS + "/on-demand-pool",
        {"flexStrat": True},
        400,
        "INVALID_ARGUMENT",
        'Unknown name "flexStrat"',
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED_ON_EXISTING))
def test_refusals_on_existing_pools_change_nothing(api: Api, case: str) -> None:
    _ready_pools(api)
    method, path, body, code, status, fragment = REFUSED_ON_EXISTING[case]
    before = copy.deepcopy(api.storage.objects)
    got, out = api(method, path, body)
    assert (got, out["error"]["status"]) == (code, status), out
    assert fragment in out["error"]["message"], out["error"]["message"]
    assert api.storage.objects == before


def test_deleting_a_cluster_twice_is_refused(api: Api) -> None:
    api.ok("DELETE", BASE + "/clusters/tpu-cluster")
    before = copy.deepcopy(api.storage.objects)
    code, out = api("DELETE", BASE + "/clusters/tpu-cluster")
    assert (code, out["error"]["status"]) == (400, "FAILED_PRECONDITION") and "already being deleted" in out[
        "error"
    ]["message"]
    assert api.storage.objects == before


@pytest.mark.parametrize(
    ("version", "pool", "refused"),
    [
        ("1.32", "create-dws-pool", True),  # TPU flex-start needs 1.33.0-gke.1712000
        ("1.33.0-gke.1000000", "create-dws-pool", True),
        ("1.33.0-gke.1712000", "create-dws-pool", False),
        ("1.33", "create-dws-pool", False),  # 1.33's default patch is newer
        ("1.32.1-gke.1000000", "create-gpu-dws-pool", True),  # GPU flex-start needs 1.32.2-gke.1652000
        ("1.32", "create-gpu-dws-pool", False),
        ("1.31", "create-ondemand-pool", False),  # no flex-start: any supported version
    ],
)
def test_flex_start_needs_a_recent_enough_gke_version(version: str, pool: str, refused: bool) -> None:
    a = Api()
    body = copy.deepcopy(fixture("create-cluster")["body"])
    body["cluster"]["initialClusterVersion"] = version
    a.ok("POST", BASE + "/clusters", body)
    a.wait()
    cluster = a.ok("GET", BASE + "/clusters/tpu-cluster")
    assert (
        cluster["currentMasterVersion"].startswith(version)
        and cluster["currentMasterVersion"].count(".") == 3
    )
    before = copy.deepcopy(a.storage.objects)
    code, out = a("POST", POOLS, fixture(pool)["body"])
    if refused:
        assert (code, out["error"]["status"]) == (400, "INVALID_ARGUMENT")
        assert "requires GKE version" in out["error"]["message"]
        assert a.storage.objects == before
    else:
        assert code == 200, out
