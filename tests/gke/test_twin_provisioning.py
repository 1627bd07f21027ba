"""Acceptance 3 and 5 on the virtual clock: queued provisioning (DWS) timelines, the OSS classes, billing."""

from __future__ import annotations

import pytest

from flexq.api.gke_catalog import TPU_GENERATIONS
from flexq.clock import DEFAULT_EPOCH
from flexq.gke.billing import billing_of
from flexq.testing.gke_twin import (
    D,
    H,
    condition,
    events,
    nodes,
    provisioning_request,
    ready,
    tpu_pod,
    tutorial_twin,
)


def pr(t, name: str = "dws-1") -> dict:
    return t.get("ProvisioningRequest", name, "default")


def state(t, name: str = "dws-1") -> dict[str, str]:
    return {
        c["type"]: f"{c['status']}/{c['reason']}" for c in pr(t, name).get("status", {}).get("conditions", [])
    }


def test_queued_request_waits_three_days_then_gets_the_whole_slice_at_once() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["queued"]},
                    "queueWait": {"fixed": "3d"},
                    "provisionTime": {"fixed": "90s"},
                }
            ]
        }
    )
    provisioning_request(t, "dws-1")
    t.advance(1)
    assert state(t) == {"Accepted": "True/SuccessfullyQueued", "Provisioned": "False/NotProvisioned"}
    assert condition(pr(t), "Accepted")["message"] == "Provisioning Request was successfully queued."
    t.advance(3 * D - 2)  # the request was made 1 s ago
    assert nodes(t, "dws-pool") == [] and state(t)["Provisioned"] == "False/NotProvisioned"
    t.advance(1)
    grown = nodes(t, "dws-pool")
    assert len(grown) == 4  # all 4 hosts of the 4x4 slice, created together
    assert len({n["metadata"]["annotations"]["gke.twin.flexq.dev/created-at"] for n in grown}) == 1
    labels = grown[0]["metadata"]["labels"]
    assert (
        labels["cloud.google.com/gke-queued"] == "true"
        and labels["cloud.google.com/gke-flex-start"] == "true"
    )
    assert labels["autoscaling.gke.io/provisioning-request"].startswith("gke-default-dws-1-")
    assert {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"} in grown[0][
        "spec"
    ]["taints"]
    assert state(t)["Provisioned"] == "False/NotProvisioned"  # VMs booting
    t.advance(89)
    assert state(t)["Provisioned"] == "False/NotProvisioned"
    t.advance(1)
    assert all(ready(n) for n in nodes(t, "dws-pool"))
    assert state(t)["Provisioned"] == "True/Provisioned"
    details = pr(t)["status"]["provisioningClassDetails"]
    assert details["NodePoolName"] == "dws-pool" and details["SelectedZone"] == "us-east5-b"
    assert details["AcceleratorType"] == "tpu-v6e-slice" and details["ProvisioningMode"] == "resize_request"
    provisioned_at = t.now()
    t.advance(599)
    assert "BookingExpired" not in state(t)
    t.advance(1)
    assert state(t)["BookingExpired"] == "True/BookingExpired"
    assert t.now() - provisioned_at == 600
    # nobody came: after the booking the empty nodes are ordinary scale-down candidates (10 min unneeded)
    t.advance(600)
    assert nodes(t, "dws-pool") == []


def test_capacity_is_revoked_at_the_run_duration_limit() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["queued"]},
                    "queueWait": {"fixed": "1h"},
                    "provisionTime": {"fixed": "0s"},
                }
            ]
        }
    )
    provisioning_request(t, "dws-1")
    t.advance(H + 1)
    assert state(t)["Provisioned"] == "True/Provisioned"
    for i in range(4):  # the workers arrive and run far longer than the request may
        t.apply(tpu_pod(f"w{i}", "dws-pool", run_seconds=30 * D, queued=True, consume="dws-1"))
    t.advance(120)
    assert {p["status"]["phase"] for p in t.list("Pod")} == {"Running"}
    t.advance(7 * D - 200)
    assert len(nodes(t, "dws-pool")) == 4 and "CapacityRevoked" not in state(t)
    assert state(t)["BookingExpired"] == "True/BookingExpired"
    t.advance(100)
    assert state(t)["CapacityRevoked"] == "True/CapacityRevoked"
    assert condition(pr(t), "CapacityRevoked")["message"].startswith(
        "Capacity provisioned for the Provisioning"
    )
    assert nodes(t, "dws-pool") == []  # the VMs were deleted by GCE


def test_max_run_duration_parameter() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["queued"]},
                    "queueWait": {"fixed": "10m"},
                    "provisionTime": {"fixed": "0s"},
                }
            ]
        }
    )
    provisioning_request(t, "dws-1", params={"maxRunDurationSeconds": "1800"})
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "dws-pool", run_seconds=D, queued=True, consume="dws-1"))
    t.advance(601)
    assert state(t)["Provisioned"] == "True/Provisioned"
    t.advance(1800)
    assert state(t)["CapacityRevoked"] == "True/CapacityRevoked" and nodes(t, "dws-pool") == []


def test_impossible_request_fails_after_seven_days() -> None:
    t = tutorial_twin(
        {"rules": [{"match": {"provisioningModels": ["queued"]}, "queueWait": {"never": True}}]}
    )
    provisioning_request(t, "dws-1")
    t.advance(7 * D - 1)
    assert state(t) == {"Accepted": "True/SuccessfullyQueued", "Provisioned": "False/NotProvisioned"}
    t.advance(1)
    assert state(t)["Failed"] == "True/WaitTimeExceeded"
    assert condition(pr(t), "Failed")["message"] == (
        "Provisioning Request could not provision queued instances in the allocated time."
    )
    assert nodes(t, "dws-pool") == []
    t.advance(7 * D)  # terminal requests are deleted 7 days later
    assert t.try_get("ProvisioningRequest", "dws-1", "default") is None


def test_valid_until_seconds_bounds_the_wait() -> None:
    t = tutorial_twin(
        {"rules": [{"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": "5h"}}]}
    )
    provisioning_request(t, "dws-1", params={"ValidUntilSeconds": "7200"})
    t.advance(2 * H)
    assert state(t)["Failed"] == "True/WaitTimeExceeded" and nodes(t, "dws-pool") == []


def test_stockout_at_grant_time_delays_the_grant() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["queued"]},
                    "queueWait": {"fixed": "1h"},
                    "provisionTime": {"fixed": "0s"},
                    "windows": [{"start": "0s", "end": "5h", "available": 0}],
                }
            ]
        }
    )
    provisioning_request(t, "dws-1")
    window_end = DEFAULT_EPOCH + 5 * H  # windows count from the profile's creation (the twin's first instant)
    t.advance(window_end - 10 - t.now())
    assert nodes(t, "dws-pool") == [] and t.now() - DEFAULT_EPOCH > 4 * H  # the 1 h wait is long over
    t.advance(20)
    assert len(nodes(t, "dws-pool")) == 4 and state(t)["Provisioned"] == "True/Provisioned"


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("too-big", "NodepoolSizeReached"),
        ("no-queued-pool", "NoQueuedNodepoolAvailable"),
        ("missing-template", "MissingPodTemplates"),
    ],
)
def test_queued_requests_gke_refuses(case: str, reason: str) -> None:
    t = tutorial_twin()
    # a request with two pod sets never gets here: GKE Warden refuses it at creation (tests/gke/test_warden.py)
    if case == "too-big":
        provisioning_request(t, "dws-1", count=8)
    elif case == "no-queued-pool":
        provisioning_request(t, "dws-1", pool="on-demand-pool")
    else:
        provisioning_request(t, "dws-1")
        t.delete("PodTemplate", "ppt-dws-1", "default")
        obj = pr(t)
        t.delete("ProvisioningRequest", "dws-1", "default")
        t.apply(
            {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "metadata": {"name": "dws-1", "namespace": "default"},
                "spec": obj["spec"],
            }
        )
    t.advance(5)
    assert state(t)["Failed"] == f"True/{reason}"
    assert nodes(t, "dws-pool") == []


def test_check_capacity_class() -> None:
    t = tutorial_twin()
    provisioning_request(t, "cc", cls="check-capacity.autoscaling.x-k8s.io", pool="on-demand-pool")
    t.advance(5)
    assert state(t, "cc") == {"Accepted": "True/Accepted", "Provisioned": "False/CapacityIsNotFound"}
    assert nodes(t, "on-demand-pool") == []  # check-capacity never scales up
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "on-demand-pool", run_seconds=10 * H))
    t.advance(120)  # the autoscaler brings a slice up for ordinary pods; it is full
    assert state(t, "cc")["Provisioned"] == "False/CapacityIsNotFound"
    provisioning_request(
        t, "cc2", cls="check-capacity.autoscaling.x-k8s.io", pool="on-demand-pool", params={"noRetry": "true"}
    )
    t.advance(5)
    assert state(t, "cc2")["Failed"] == "True/CapacityIsNotFound"


def test_best_effort_atomic_scale_up_class() -> None:
    t = tutorial_twin(
        {"rules": [{"match": {"provisioningModels": ["on-demand"]}, "provisionTime": {"fixed": "2m"}}]}
    )
    provisioning_request(
        t, "at", cls="best-effort-atomic-scale-up.autoscaling.x-k8s.io", pool="on-demand-pool"
    )
    created = t.now()
    t.advance(1)
    grown = nodes(t, "on-demand-pool")
    assert len(grown) == 4 and not any(ready(n) for n in grown)  # all at once, still booting
    # "best effort": admitted as soon as the scale-up is requested, without waiting for the nodes to start
    assert state(t, "at") == {"Accepted": "True/Accepted", "Provisioned": "True/CapacityIsProvisioned"}
    assert condition(pr(t, "at"), "Provisioned")["message"] == "Capacity is found in the cluster"
    assert (
        condition(pr(t, "at"), "Accepted")["message"]
        == "ProvisioningRequest is accepted by ClusterAutoscaler"
    )
    t.advance(created + 599 - t.now())
    assert "BookingExpired" not in state(t, "at") and len(nodes(t, "on-demand-pool")) == 4
    t.advance(1)
    assert state(t, "at")["BookingExpired"] == "True/CapacityReservationTimeExpired"
    assert condition(pr(t, "at"), "BookingExpired")["message"] == "Capacity reservation time is expired"
    t.advance(
        600
    )  # nobody came: the empty slice is an ordinary scale-down candidate once the booking is over
    assert nodes(t, "on-demand-pool") == []


def test_oss_classes_find_capacity_on_existing_nodes_and_book_it_until_consumed() -> None:
    t = tutorial_twin()
    for i in range(4):  # a slice that is up and empty
        t.apply(tpu_pod(f"w{i}", "on-demand-pool", run_seconds=60))
    t.advance(2 * 60)
    assert len(nodes(t, "on-demand-pool")) == 4
    for name, cls in (
        ("cc", "check-capacity.autoscaling.x-k8s.io"),
        ("at", "best-effort-atomic-scale-up.autoscaling.x-k8s.io"),
    ):
        provisioning_request(t, name, cls=cls, pool="on-demand-pool")
        t.advance(1)
        assert state(t, name) == {"Accepted": "True/Accepted", "Provisioned": "True/CapacityIsFound"}, name
        assert condition(pr(t, name), "Provisioned")["message"] == "Capacity is found in the cluster"
        assert len(nodes(t, "on-demand-pool")) == 4  # nothing new was created
    for i in range(4):  # cc's pods arrive and are all scheduled: the booking is consumed at once
        t.apply(tpu_pod(f"cc{i}", "on-demand-pool", run_seconds=H, consume="cc"))
    t.advance(30)
    assert {t.get("Pod", f"cc{i}", "default")["status"]["phase"] for i in range(4)} == {"Running"}
    assert state(t, "cc")["BookingExpired"] == "True/CapacityBookingConsumed"
    assert (
        condition(pr(t, "cc"), "BookingExpired")["message"] == "Capacity booking consumed: all pods scheduled"
    )
    assert "BookingExpired" not in state(t, "at")  # nobody consumes it: booked for 10 minutes
    t.advance(600)
    assert state(t, "at")["BookingExpired"] == "True/CapacityReservationTimeExpired"


def test_best_effort_atomic_in_a_stockout_retries_with_backoff() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["on-demand"], "machineTypes": ["ct6e-*"]},
                    "windows": [{"start": "0s", "end": "30m", "available": 0}],
                }
            ]
        }
    )
    provisioning_request(
        t, "at", cls="best-effort-atomic-scale-up.autoscaling.x-k8s.io", pool="on-demand-pool"
    )
    t.advance(20 * 60)
    assert state(t, "at")["Provisioned"] == "False/CapacityIsNotFound" and nodes(t, "on-demand-pool") == []
    t.advance(30 * 60)
    assert state(t, "at")["Provisioned"] == "True/CapacityIsProvisioned"


def test_billing_of_four_v6e_hosts_for_two_hours_at_flex_start() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["queued"]},
                    "queueWait": {"fixed": "1h"},
                    "provisionTime": {"fixed": "0s"},
                }
            ]
        }
    )
    t.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "dws"},
            "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": "dws-pool"}},
        }
    )
    provisioning_request(t, "dws-1", params={"maxRunDurationSeconds": "7200"})
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "dws-pool", run_seconds=D, queued=True, consume="dws-1"))
    t.advance(3 * H + 600)
    assert state(t)["CapacityRevoked"] == "True/CapacityRevoked"
    bill = billing_of(
        t.core.project, "proj-x", "us-east5-b", "tpu-cluster", t.now(), t.list("ResourceFlavor")
    )
    chip_hour = TPU_GENERATIONS["v6e"].chip_price.flex_start  # the catalog's flex-start price per chip-hour
    expected = 4 * 4 * 2 * chip_hour  # hosts x chips x hours x price
    assert chip_hour == 1.35 and bill["pools"]["dws-pool"] == pytest.approx(expected, abs=1e-9) == 43.2
    # readable from the twin: the cluster's GkeBilling object carries the same totals
    stored = t.core.project.get("GkeBilling", "proj-x.us-east5-b.tpu-cluster")["status"]
    assert stored["totals"]["pools"]["dws-pool"] == pytest.approx(43.2, abs=1e-9)
    assert stored["totals"]["flavors"]["dws"] == pytest.approx(43.2, abs=1e-9)
    dws_nodes = [r for r in stored["nodes"].values() if r["pool"] == "dws-pool"]
    assert len(dws_nodes) == 4 and all(r["deleted"] - r["created"] == 2 * H for r in dws_nodes)
    assert bill["flavors"]["dws"] == pytest.approx(43.2, abs=1e-9)
    assert bill["provisioningModels"]["flex-start"] == pytest.approx(43.2, abs=1e-9)
    jobs = {k: v for k, v in bill["jobs"].items() if k.startswith("Pod/default/w")}
    assert sum(jobs.values()) == pytest.approx(43.2, abs=1e-6)  # each worker had a whole host


def test_a_full_queued_pool_delays_the_next_grant() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"provisioningModels": ["queued"]},
                    "queueWait": {"fixed": "1h"},
                    "provisionTime": {"fixed": "0s"},
                }
            ]
        }
    )
    provisioning_request(t, "a", params={"maxRunDurationSeconds": "10800"})
    provisioning_request(t, "b")
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "dws-pool", run_seconds=D, queued=True, consume="a"))
    t.advance(H + 60)
    assert state(t, "a")["Provisioned"] == "True/Provisioned"
    assert state(t, "b")["Provisioned"] == "False/NotProvisioned"  # max-nodes 4: one slice at a time
    assert len(nodes(t, "dws-pool")) == 4
    t.advance(3 * H)  # a's capacity is revoked at 3 h; b gets the pool
    assert state(t, "a")["CapacityRevoked"] == "True/CapacityRevoked"
    assert state(t, "b")["Provisioned"] == "True/Provisioned"


def test_pods_consuming_a_request_never_trigger_ordinary_scale_up() -> None:
    t = tutorial_twin(
        {"rules": [{"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": "2h"}}]}
    )
    provisioning_request(t, "dws-1")
    t.apply(tpu_pod("early", "dws-pool", queued=True, consume="dws-1"))
    t.apply(tpu_pod("orphan", "on-demand-pool", consume="nope"))
    t.advance(60)
    ignored = events(t, "early", "IgnoredInScaleUp")
    assert ignored and "ProvisioningRequest default/dws-1 that is in Accepted state" in ignored[0]["message"]
    assert events(t, "orphan", "MissingProvisioningRequest")
    assert nodes(t, "on-demand-pool") == [] and nodes(t, "dws-pool") == []
    t.advance(2 * H + 60)  # granted: the early pod runs on the request's capacity
    assert t.get("Pod", "early", "default")["status"]["phase"] == "Running"


def test_gpu_queued_pool_gets_whole_vms_for_a_request() -> None:
    t = tutorial_twin(
        {
            "rules": [
                {
                    "match": {"machineTypes": ["a3-*"], "provisioningModels": ["queued"]},
                    "queueWait": {"fixed": "30m"},
                    "provisionTime": {"fixed": "0s"},
                }
            ]
        },
        pools=("create-gpu-dws-pool",),
    )
    gpu = {"cpu": "100", "memory": "1000Gi", "nvidia.com/gpu": "8"}
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "ppt-g", "namespace": "default"},
            "template": {
                "spec": {
                    "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Exists"},
                        {"key": "cloud.google.com/gke-queued", "operator": "Exists"},
                    ],
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": gpu, "limits": gpu}}
                    ],
                }
            },
        }
    )
    t.apply(
        {
            "apiVersion": "autoscaling.x-k8s.io/v1",
            "kind": "ProvisioningRequest",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {
                "provisioningClassName": "queued-provisioning.gke.io",
                "podSets": [{"podTemplateRef": {"name": "ppt-g"}, "count": 2}],
            },
        }
    )
    t.advance(31 * 60)
    assert state(t, "g")["Provisioned"] == "True/Provisioned"
    gpus = nodes(t, "gpu")
    assert len(gpus) == 2 and gpus[0]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert pr(t, "g")["status"]["provisioningClassDetails"]["AcceleratorType"] == "nvidia-h100-80gb"


def test_billing_per_job_shares_a_node_by_its_accelerator_and_stops_with_the_cluster() -> None:
    t = tutorial_twin()
    t.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "on-demand"},
            "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": "on-demand-pool"}},
        }
    )

    def worker(name: str, job: str, seconds: float) -> dict:
        pod = tpu_pod(name, "on-demand-pool", run_seconds=seconds)
        pod["metadata"]["labels"] = {"batch.kubernetes.io/job-name": job}
        res = {"cpu": "1", "memory": "1Gi", "google.com/tpu": "2"}  # half a ct6e-standard-4t host
        pod["spec"]["containers"][0]["resources"] = {"requests": dict(res), "limits": dict(res)}
        return pod

    for i in range(4):  # two jobs of four 2-chip pods share one 4x4 slice (two pods per host)
        t.apply(worker(f"a{i}", "a", H))
        t.apply(worker(f"b{i}", "b", 2 * H))
    t.advance(30)
    assert len(nodes(t, "on-demand-pool")) == 4
    assert {p["status"]["phase"] for p in t.list("Pod")} == {"Running"}
    t.advance(3 * H)
    assert nodes(t, "on-demand-pool") == []  # gone 10 min after job b's pods finished
    bill = billing_of(
        t.core.project, "proj-x", "us-east5-b", "tpu-cluster", t.now(), t.list("ResourceFlavor")
    )
    host_hour = 4 * 2.70  # a ct6e-standard-4t at the on-demand price
    # each job pays, per pod, half a host for the time the pod was bound: a 4 x 1/2 x 1 h, b 4 x 1/2 x 2 h
    assert bill["jobs"]["Job/default/a"] == pytest.approx(4 * 0.5 * 1 * host_hour, rel=1e-3)
    assert bill["jobs"]["Job/default/b"] == pytest.approx(4 * 0.5 * 2 * host_hour, rel=1e-3)
    slice_cost = bill["pools"]["on-demand-pool"]  # 4 hosts for 2 h of work + 10 min idle before scale-down
    assert slice_cost == pytest.approx(4 * host_hour * (2 * H + 600) / H, rel=2e-3)
    assert bill["flavors"]["on-demand"] == slice_cost
    assert bill["provisioningModels"]["on-demand"] == pytest.approx(
        slice_cost + bill["pools"]["default-pool"]
    )
    t.gke("DELETE", "/v1/projects/proj-x/locations/us-east5-b/clusters/tpu-cluster")
    t.advance(60)
    closed = billing_of(t.core.project, "proj-x", "us-east5-b", "tpu-cluster", t.now())
    assert (
        closed["pools"] == bill["pools"]
    )  # the default pool's VMs went as the deletion began (same instant)
    t.advance(10 * H)
    assert (
        billing_of(t.core.project, "proj-x", "us-east5-b", "tpu-cluster", t.now()) == closed
    )  # nothing runs on


def test_a_check_capacity_booking_keeps_the_nodes_it_found_from_scale_down() -> None:
    t = tutorial_twin()
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "on-demand-pool", run_seconds=60))
    t.advance(70)
    emptied = t.now()  # the workers ran their minute; the slice is idle from here
    assert {p["status"]["phase"] for p in t.list("Pod")} == {"Succeeded"}
    t.advance(5 * 60)
    provisioning_request(t, "cc", cls="check-capacity.autoscaling.x-k8s.io", pool="on-demand-pool")
    booked = t.now()
    t.advance(1)
    assert state(t, "cc")["Provisioned"] == "True/CapacityIsFound"
    t.advance(emptied + 11 * 60 - t.now())  # without the booking the slice would be gone by now
    assert len(nodes(t, "on-demand-pool")) == 4
    t.advance(booked + 600 - t.now())
    assert state(t, "cc")["BookingExpired"] == "True/CapacityReservationTimeExpired"
    t.advance(9 * 60)  # unneeded again from the booking's end: removed 10 min later
    assert len(nodes(t, "on-demand-pool")) == 4
    t.advance(2 * 60)
    assert nodes(t, "on-demand-pool") == []


@pytest.mark.parametrize(
    "params",
    [
        {"maxRunDurationSeconds": "soon"},
        {"maxRunDurationSeconds": "1e400"},
        {"maxRunDurationSeconds": "-5"},
        {"maxRunDurationSeconds": "604801"},
        {"ValidUntilSeconds": "9" * 40},
        {"validUntilSeconds": "0"},
    ],
)
def test_a_bad_parameter_fails_the_request_naming_it(params: dict[str, str]) -> None:
    """Kueue copies a job's ``provreq.kueue.x-k8s.io/`` annotations into its requests' parameters, so they are
    what a tenant wrote: a bad one fails the request ``InvalidArgument``, naming it (the controller parsed them
    with ``float()`` on every look: "soon" raised in the reconcile, 1e400 ran forever)."""
    t = tutorial_twin()
    provisioning_request(t, "dws-1", params=params)
    t.advance(5)
    got = pr(t)["status"]["conditions"]
    failed = next(c for c in got if c["type"] == "Failed")
    assert failed["status"] == "True" and failed["reason"] == "InvalidArgument", got
    assert next(iter(params)) in failed["message"] and len(failed["message"]) < 300
    assert nodes(t, "dws-pool") == []


def test_a_forecasts_continued_request_is_accepted_at_a_full_pool_and_waits_for_room() -> None:
    """``flexqForecastWaitedSeconds``: a forward run's request continues one the cluster accepted; accepted again
    though the pool is full (a new one is refused NodepoolSizeReached), its grant then waits for room."""
    t = tutorial_twin(
        {"rules": [{"match": {"provisioningModels": ["queued"]}, "queueWait": {"fixed": "1m"}}]}
    )
    provisioning_request(t, "dws-1")
    for i in range(4):
        t.apply(tpu_pod(f"w{i}", "dws-pool", run_seconds=H, queued=True, consume="dws-1"))
    t.advance(300)
    assert len(nodes(t, "dws-pool")) == 4
    provisioning_request(t, "dws-2")
    provisioning_request(t, "dws-3", params={"flexqForecastWaitedSeconds": "600"})
    t.advance(5)
    assert state(t, "dws-2")["Failed"] == "True/NodepoolSizeReached"
    assert state(t, "dws-3") == {"Accepted": "True/SuccessfullyQueued", "Provisioned": "False/NotProvisioned"}
    t.advance(600)
    assert state(t, "dws-3")["Provisioned"] == "False/NotProvisioned"  # the pool is still full
