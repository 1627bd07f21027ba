"""Acceptance 1, 2 and 4 on the virtual clock: the tutorial's pools, scale-up of a multi-host slice, scale-down,
stock-outs, queued pools, fixed-size and spot pools, cluster deletion and the RayOperator addon."""

from __future__ import annotations

import copy

import pytest

from flexq.errors import NotFound
from flexq.gke.backend import cluster_settings
from flexq.testing.gke_twin import (
    BASE,
    POOLS,
    H,
    condition,
    events,
    fixture,
    nodes,
    provisioning_request,
    ready,
    tpu_pod,
    tutorial_twin,
)


def test_tutorial_pools_start_empty_and_describe_shows_flex_start() -> None:
    t = tutorial_twin()
    dws = t.gke("GET", POOLS + "/dws-pool")
    assert dws["config"]["flexStart"] is True and dws["status"] == "RUNNING"
    assert t.gke("GET", POOLS + "/on-demand-pool")["config"].get("flexStart") is None
    assert nodes(t, "dws-pool") == [] and nodes(t, "on-demand-pool") == []
    default = nodes(t, "default-pool")
    assert len(default) == 3 and all(ready(n) for n in default)
    n = default[0]
    assert n["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "n2-standard-16"
    assert n["status"]["allocatable"]["cpu"] == "15890m"


def test_v6e_4x4_pool_scales_0_to_4_at_once_and_back_10_minutes_after() -> None:
    t = tutorial_twin()
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "on-demand-pool", run_seconds=H))
    t.advance(1)
    grown = nodes(t, "on-demand-pool")
    assert len(grown) == 4  # the whole slice, in one step
    assert len({n["metadata"]["annotations"]["gke.twin.flexq.dev/created-at"] for n in grown}) == 1
    assert len({n["metadata"]["annotations"]["gke.twin.flexq.dev/slice"] for n in grown}) == 1
    n = grown[0]
    assert n["metadata"]["labels"]["cloud.google.com/gke-tpu-accelerator"] == "tpu-v6e-slice"
    assert n["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"} in n["spec"]["taints"]
    assert events(t, "w0", "TriggeredScaleUp")[0]["message"].endswith("0->4 (max: 4)}]")
    t.advance(60)
    assert all(ready(n) for n in nodes(t, "on-demand-pool"))
    pods = t.list("Pod")
    assert {p["status"]["phase"] for p in pods} == {"Running"}
    assert len({p["spec"]["nodeName"] for p in pods}) == 4
    busy = {n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in nodes(t, "on-demand-pool")}
    finished = t.now() + H - 60
    t.advance(H)
    assert {p["status"]["phase"] for p in t.list("Pod")} == {"Succeeded"}
    t.advance(finished + 599 - t.now())
    assert len(nodes(t, "on-demand-pool")) == 4  # still inside scale-down-unneeded-time
    # when each node became unneeded is the autoscaler's own memory (upstream's unneededNodes), not a write
    assert {
        n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in nodes(t, "on-demand-pool")
    } == busy
    t.advance(10)
    assert nodes(t, "on-demand-pool") == []
    assert len(nodes(t, "default-pool")) == 3  # fixed-size pool untouched


def test_stockout_window_keeps_pods_pending_then_pool_grows() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"machineTypes": ["ct6e-*"], "provisioningModels": ["on-demand"]},
                    "windows": [{"start": "0s", "end": "2h", "available": 0}],
                }
            ]
        }
    )
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "on-demand-pool"))
    t.advance(H)
    assert nodes(t, "on-demand-pool") == []
    pod = t.get("Pod", "w0", "default")
    assert pod["status"]["phase"] == "Pending"
    scheduled = condition(pod, "PodScheduled")
    assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
    assert scheduled["message"].startswith(
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    )  # kube-scheduler's FitError, the 3 CPU nodes
    failed = events(t, "w0", "FailedScaleUp")
    assert failed and "GCE out of resources" in failed[0]["message"]
    stockout = t.gke("GET", POOLS + "/on-demand-pool")
    assert stockout.get("conditions") is None  # autoscaled pools report through events, not pool conditions
    t.advance(H + 5)  # the window ends at 2h after the profile was created
    assert len(nodes(t, "on-demand-pool")) == 4
    t.advance(120)
    assert {p["status"]["phase"] for p in t.list("Pod")} == {"Running"}


def test_never_available_partial_capacity_does_not_split_a_slice() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {"match": {"provisioningModels": ["on-demand"], "machineTypes": ["ct6e-*"]}, "available": 3}
            ]
        }
    )
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "on-demand-pool"))
    t.advance(2 * H)
    assert nodes(t, "on-demand-pool") == []  # 3 hosts obtainable, a slice needs 4: all or nothing


def test_queued_pool_never_grows_for_ordinary_pods() -> None:
    t = tutorial_twin()
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "dws-pool", queued=True))
    t.advance(2 * H)
    assert nodes(t, "dws-pool") == []
    assert t.get("Pod", "w0", "default")["status"]["phase"] == "Pending"


def test_pool_max_nodes_bounds_the_scale_up() -> None:
    t = tutorial_twin()
    for i in range(8):  # two slices' worth of pods, max-nodes is one slice
        t.apply(tpu_pod(f"w{i}", "on-demand-pool"))
    t.advance(600)
    assert len(nodes(t, "on-demand-pool")) == 4
    assert sum(p["status"]["phase"] == "Running" for p in t.list("Pod")) == 4


def test_fixed_size_pool_and_set_size() -> None:
    t = tutorial_twin(pools=())
    t.gke(
        "POST",
        POOLS,
        {"nodePool": {"name": "cpu", "initialNodeCount": 2, "config": {"machineType": "e2-standard-4"}}},
    )
    t.advance(30)
    assert len(nodes(t, "cpu")) == 2
    t.gke("POST", POOLS + "/cpu:setSize", {"nodeCount": 5})
    t.advance(30)
    assert len(nodes(t, "cpu")) == 5
    t.gke("POST", POOLS + "/cpu:setSize", {"nodeCount": 1})
    t.advance(30)
    assert len(nodes(t, "cpu")) == 1
    t.gke("DELETE", POOLS + "/cpu")
    t.advance(30)
    assert nodes(t, "cpu") == []


def test_fixed_size_pool_in_a_stockout_reports_gce_stockout() -> None:
    t = tutorial_twin({"rules": [{"match": {"machineTypes": ["ct5lp-*"]}, "available": 0}]}, pools=())
    t.gke(
        "POST",
        POOLS,
        {"nodePool": {"name": "v5e", "initialNodeCount": 1, "config": {"machineType": "ct5lp-hightpu-4t"}}},
    )
    t.advance(60)
    pool = t.gke("GET", POOLS + "/v5e")
    assert pool["conditions"][0]["code"] == "GCE_STOCKOUT"
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in pool["conditions"][0]["message"]
    assert nodes(t, "v5e") == []


def test_spot_nodes_are_preempted() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["spot"]},
                    "preemption": {"fixed": "30m"},
                    "provisionTime": {"fixed": "1m"},
                }
            ]
        },
        pools=("create-spot-pool",),
    )
    for i in range(2):
        pod = tpu_pod(f"s{i}", "spot", run_seconds=10 * H)
        pod["spec"]["nodeSelector"] = {"cloud.google.com/gke-nodepool": "spot"}
        t.apply(pod)
    t.advance(5)
    spot = nodes(t, "spot")
    assert len(spot) == 2 and spot[0]["metadata"]["labels"]["cloud.google.com/gke-spot"] == "true"
    assert spot[0]["metadata"]["labels"]["cloud.google.com/gke-provisioning"] == "spot"
    t.advance(60 + 30 * 60 - 10)  # Ready after 1 min, preempted 30 min later
    assert len(nodes(t, "spot")) == 2
    assert {p["status"]["phase"] for p in t.list("Pod")} == {"Running"}
    t.advance(20)
    first = {n["metadata"]["name"] for n in spot}
    assert not first & {n["metadata"]["name"] for n in nodes(t, "spot")}  # the preempted VMs are gone
    assert events(t, spot[0]["metadata"]["name"], "Preempted")
    for p in t.list("Pod"):  # the pods on them are lost, as the pod GC marks pods of deleted nodes
        assert (p["status"]["phase"], p["status"].get("reason")) == ("Failed", "NodeLost")


def test_a_preempted_host_takes_its_whole_multi_host_slice() -> None:
    # random preemption times: each slice draws one, so the 2 hosts of a 2x4 slice always go together
    t = tutorial_twin(
        {
            "seed": 5,
            "rules": [
                {
                    "match": {"provisioningModels": ["spot"]},
                    "preemption": {"exponential": {"mean": "1h"}},
                    "provisionTime": {"uniform": {"min": "10s", "max": "5m"}},
                }
            ],
        },
        pools=("create-spot-pool",),
    )
    t.gke(
        "POST",
        POOLS + "/spot:setAutoscaling",
        {"autoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 6}},
    )
    t.advance(30)
    for i in range(6):
        pod = tpu_pod(f"s{i}", "spot", run_seconds=10 * H)
        pod["spec"]["nodeSelector"] = {"cloud.google.com/gke-nodepool": "spot"}
        t.apply(pod)
    t.advance(5)
    grown = nodes(t, "spot")
    assert len(grown) == 6
    by_slice: dict[str, set[str]] = {}
    for n in grown:
        ann = n["metadata"]["annotations"]
        by_slice.setdefault(ann["gke.twin.flexq.dev/slice"], set()).add(ann["gke.twin.flexq.dev/preempt-at"])
    assert len(by_slice) == 3 and all(len(times) == 1 for times in by_slice.values())
    assert len({t for times in by_slice.values() for t in times}) == 3  # the slices drew different times


def test_cluster_deletion_removes_everything() -> None:
    t = tutorial_twin()
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "on-demand-pool"))
    t.advance(120)
    assert "tpu-cluster" in t.core.clusters
    t.gke("DELETE", BASE + "/clusters/tpu-cluster")
    t.advance(60)
    assert "tpu-cluster" not in t.core.clusters
    assert t.core.project.list("GkeNodePool") == []
    assert t.core.project.list("GkeCluster") == []
    with pytest.raises(Exception, match="Not found: projects"):
        t.gke("GET", BASE + "/clusters/tpu-cluster")


def test_ray_operator_addon_decides_whether_ray_kinds_are_served() -> None:
    t = tutorial_twin(pools=())
    assert t.list("RayJob") == []  # the tutorial's cluster has --addons=RayOperator
    assert t.core.clusters["tpu-cluster"].settings["addons"] == ["RayOperator"]
    t.gke("POST", BASE + "/clusters", {"cluster": {"name": "plain", "initialNodeCount": 1}})
    plain = t.core.project.get("GkeCluster", "proj-x.us-east5-b.plain")
    assert cluster_settings(plain)["addons"] == []


def test_cluster_without_ray_operator_does_not_serve_rayjobs() -> None:
    t = tutorial_twin(pools=())
    t.gke("POST", BASE + "/clusters", {"cluster": {"name": "plain", "initialNodeCount": 1}})
    t.advance(30)
    t.cluster("plain")
    with pytest.raises(NotFound):
        t.list("RayJob")


def test_pods_no_pool_can_take_get_not_trigger_scale_up() -> None:
    t = tutorial_twin()
    t.apply(tpu_pod("q0", "dws-pool", queued=True))  # only a ProvisioningRequest can grow the DWS pool
    big = tpu_pod("big", "on-demand-pool")
    big["spec"]["containers"][0]["resources"] = {
        "requests": {"google.com/tpu": "8"},
        "limits": {"google.com/tpu": "8"},
    }
    t.apply(big)
    t.advance(60)
    queued = events(t, "q0", "NotTriggerScaleUp")
    assert len(queued) == 1 and "queued provisioning" in queued[0]["message"]
    assert "didn't match Pod's node affinity/selector" in queued[0]["message"]
    too_big = events(t, "big", "NotTriggerScaleUp")[0]["message"]
    assert too_big.startswith("pod didn't trigger scale-up: ") and "Insufficient google.com/tpu" in too_big
    t.advance(600)
    assert (
        len(events(t, "q0", "NotTriggerScaleUp")) == 1
        and events(t, "q0", "NotTriggerScaleUp")[0]["count"] == 1
    )


def test_flex_start_vms_without_queue_scale_for_pods_and_end_at_their_run_duration() -> None:
    t = tutorial_twin(pools=())
    body = fixture("create-dws-pool")["body"]
    pool = body["nodePool"]
    pool["name"] = "flex"
    pool.pop("queuedProvisioning")
    pool["config"]["maxRunDuration"] = "7200s"
    t.gke("POST", POOLS, body)
    t.advance(30)
    for i in range(4):
        t.apply(tpu_pod(f"f{i}", "flex", run_seconds=10 * H))
    t.advance(60)
    flex = nodes(t, "flex")
    assert len(flex) == 4 and all(ready(n) for n in flex)
    labels = flex[0]["metadata"]["labels"]
    assert labels["cloud.google.com/gke-flex-start"] == "true" and "cloud.google.com/gke-queued" not in labels
    assert labels["cloud.google.com/gke-max-run-duration-seconds"] == "7200"
    t.advance(2 * H)
    assert not {n["metadata"]["name"] for n in flex} & {n["metadata"]["name"] for n in nodes(t, "flex")}
    assert events(t, flex[0]["metadata"]["name"], "MaxRunDuration")


def test_same_seed_same_story() -> None:
    def story() -> list[tuple[str, str]]:
        t = tutorial_twin(
            {
                "seed": 3,
                "rules": [
                    {
                        "match": {"provisioningModels": ["queued"]},
                        "queueWait": {"exponential": {"mean": "6h"}},
                    }
                ],
            }
        )
        provisioning_request(t, "a")
        provisioning_request(t, "b")
        t.advance(2 * 86400)
        ledger = t.core.project.get("GkeBilling", "proj-x.us-east5-b.tpu-cluster")["status"]["nodes"]
        out = sorted((name, rec["pool"], rec["created"], rec["deleted"]) for name, rec in ledger.items())
        t.close()
        return out

    first = story()
    assert [r[1] for r in first].count("dws-pool") == 8  # two slices came and went (nobody used them)
    assert first == story()


def test_an_ordinary_pool_scales_between_its_min_and_max_nodes() -> None:
    t = tutorial_twin(pools=())
    t.gke(
        "POST",
        POOLS,
        {
            "nodePool": {
                "name": "cpu",
                "initialNodeCount": 1,
                "config": {"machineType": "e2-standard-4"},
                "autoscaling": {"enabled": True, "minNodeCount": 1, "maxNodeCount": 3},
            }
        },
    )
    t.advance(30)
    assert len(nodes(t, "cpu")) == 1  # its minimum
    for i in range(5):  # 3 cpu each: one pod per e2-standard-4 node, five pods, at most 3 nodes
        t.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"c{i}",
                    "namespace": "default",
                    "annotations": {"twin.flexq.dev/run-seconds": "1800"},
                },
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"cloud.google.com/gke-nodepool": "cpu"},
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}
                    ],
                },
            }
        )
    t.advance(60)
    assert len(nodes(t, "cpu")) == 3  # grew to max-nodes and no further
    phases = [p["status"]["phase"] for p in t.list("Pod")]
    assert phases.count("Running") == 3 and phases.count("Pending") == 2
    assert events(t, "c3", "NotTriggerScaleUp")[0]["message"] == (
        "pod didn't trigger scale-up: 1 max node group size reached"
    )
    t.advance(2 * H)  # all five ran (the last two after the first three finished)
    assert {p["status"]["phase"] for p in t.list("Pod")} == {"Succeeded"}
    assert len(nodes(t, "cpu")) == 1  # idle nodes removed after 10 minutes, down to min-nodes, not below


def test_pod_placement_by_selector_affinity_tolerations_and_resources() -> None:
    t = tutorial_twin()
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "on-demand-pool", run_seconds=10 * H))
    t.advance(60)
    assert len(nodes(t, "on-demand-pool")) == 4
    intolerant = tpu_pod("no-toleration", "on-demand-pool")
    intolerant["spec"]["tolerations"] = []
    intolerant["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    affine = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "affine", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "cloud.google.com/gke-nodepool",
                                        "operator": "In",
                                        "values": ["default-pool"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        },
    }
    huge = copy.deepcopy(affine)
    huge["metadata"]["name"] = "huge"
    huge["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    for pod in (intolerant, affine, huge):
        t.apply(pod)
    t.advance(10)
    placed = t.get("Pod", "affine", "default")
    assert placed["spec"]["nodeName"] in {n["metadata"]["name"] for n in nodes(t, "default-pool")}
    bad = condition(t.get("Pod", "no-toleration", "default"), "PodScheduled")
    assert bad["reason"] == "Unschedulable" and bad["message"].startswith(
        "0/7 nodes are available: 3 node(s) didn't match Pod's node affinity/selector, 4 node(s) had untolerated "
        "taint {google.com/tpu: present}."
    )
    too_big = condition(t.get("Pod", "huge", "default"), "PodScheduled")
    assert too_big["reason"] == "Unschedulable" and "3 Insufficient cpu" in too_big["message"]
    assert t.get("Pod", "huge", "default")["status"]["phase"] == "Pending"
