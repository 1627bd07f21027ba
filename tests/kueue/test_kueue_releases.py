"""Issue 34, item 1 and acceptance 2: what Kueue 0.19.2 and 0.20.7 do differently, one test per change, each run
on both releases with the outcome each one has (so each fails on the other release), named after the upstream
change (``docs/upstream-versions.md`` has the table):

- kueue#18785 (v0.20.7): a check in Retry no longer keeps the quota through its back-off;
- kueue#14916 (v0.20.0): no endless ProvisioningRequest create/delete loop when the name must be shortened;
- kueue#14309 (v0.20.0): a check Rejected while the workload is being evicted deactivates it (Admitted=True stayed);
- kueue#14670 (v0.20.0): KubeRay v1.7's History Server collector sidecars count against quota;
- kueue#15949 (v0.20.0): Concurrent Admission allows 32 flavors per resource group (16 before);
- v0.20.7 (Concurrent Admission): a finished Parent gets no Variant for a flavor added later;
- ``WaitForPodsReadyUnscheduledTimeout``: a 0.20 gate 0.19.2 does not have.

And two changes the v0.20 notes list that are not differences: kueue#13415 (a RayJob in ValidationFailed kept its
quota) and kueue#13785 (a transient creation error later reported as a deactivation's cause) were backported to
v0.19.1 (#14192, #13874), so both releases behave the same; the tests say so."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from flexq import Twin
from flexq.api.kueue_versions import V0_19_2, V0_20_7
from flexq.cli import tutorial as T
from flexq.errors import Invalid, Livelock
from flexq.kueue.config import KueueConfig
from flexq.kueue.workload import parse_ts, ts
from flexq.semantics.conditions import find_condition, is_true

RELEASES = ["0.19.2", "0.20.7"]
V2 = "kueue.x-k8s.io/v1beta2"


def _active(t: Twin, name: str, controller: str) -> None:
    t.apply(
        {
            "apiVersion": V2,
            "kind": "AdmissionCheck",
            "metadata": {"name": name},
            "spec": {"controllerName": controller},
        }
    )
    if controller != "kueue.x-k8s.io/provisioning-request":
        cond = {
            "type": "Active",
            "status": "True",
            "reason": "ByTest",
            "message": "m",
            "lastTransitionTime": ts(t.now()),
        }
        t.patch("AdmissionCheck", name, {"status": {"conditions": [cond]}}, subresource="status")


def _queue(t: Twin, checks: list[str], quota: str = "4") -> None:
    t.apply({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": quota}]}],
            }
        ],
    }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    t.apply({"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
    t.apply(
        {
            "apiVersion": V2,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        }
    )


def _workload(name: str, cpu: str = "1") -> dict:
    """A Workload made by hand (no job owns it: nothing ends an eviction, as in upstream's unit tables)."""
    return {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
                            ]
                        }
                    },
                }
            ],
        },
    }


def _set_check(t: Twin, wl: str, state: str, **extra: Any) -> None:
    entry = {
        "name": "ac",
        "state": state,
        "message": f"by test: {state}",
        "lastTransitionTime": ts(t.now()),
        **extra,
    }
    t.patch("Workload", wl, {"status": {"admissionChecks": [entry]}}, "default", subresource="status")


def _job(name: str = "j") -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "template": {
                "metadata": {"annotations": {"twin.flexq.dev/run-seconds": "3600"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                },
            }
        },
    }


# -- kueue#18785 -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kueue", RELEASES)
def test_kueue_18785_a_retry_keeps_the_quota_through_the_backoff_only_before_0_20_7(kueue: str) -> None:
    """A check goes to Retry with a 60 s back-off. 0.19.2 holds the job's quota for the 60 s, then evicts;
    0.20.7 evicts at once and waits out the back-off without quota."""
    t = Twin(clock="virtual", kueue=kueue)
    _active(t, "ac", "example.com/ac")
    _queue(t, ["ac"])
    t.create(_job())
    t.advance(2)
    wl = next(w for w in t.list("Workload", "default"))
    name = wl["metadata"]["name"]
    assert is_true(wl, "QuotaReserved")
    _set_check(t, name, "Retry", requeueAfterSeconds=60)
    retried_at = t.now()
    t.advance(30)
    held = is_true(t.get("Workload", name, "default"), "QuotaReserved")
    t.advance(60)
    evictions = [e for e in t.list("Event", "default") if e["reason"] == "EvictedDueToAdmissionCheck"]
    assert len(evictions) == 1
    after = parse_ts(evictions[0]["lastTimestamp"]) - retried_at
    if kueue == "0.20.7":
        assert not held and after < 1  # evicted at once: the back-off is spent without quota
    else:
        assert held and 60 <= after < 62  # the quota was held through the back-off, then the eviction came


# -- kueue#14916 -----------------------------------------------------------------------------------------------
def _provisioning(t: Twin) -> None:
    t.apply(
        {
            "apiVersion": V2,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "cfg"},
            "spec": {"provisioningClassName": "queued-provisioning.gke.io"},
        }
    )
    t.apply(
        {
            "apiVersion": V2,
            "kind": "AdmissionCheck",
            "metadata": {"name": "ac"},
            "spec": {
                "controllerName": "kueue.x-k8s.io/provisioning-request",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "ProvisioningRequestConfig",
                    "name": "cfg",
                },
            },
        }
    )
    _queue(t, ["ac"])


LONG = ".".join(["w" * 61] * 4)  # a 247-character Workload name: `<name>-ac-1` (252) must be shortened


@pytest.mark.parametrize("kueue", RELEASES)
def test_kueue_14916_a_shortened_request_name_loops_before_0_20(kueue: str) -> None:
    """0.19.2 shortens `<workload>-<check>-<attempt>` as a whole (hash over the attempt too) but looks for its
    requests by the shortened `<workload>-<check>-` prefix: it never finds the one it made, deletes it and makes it
    again, without end (the twin stops the run: controllers waking each other at one instant). 0.20 shortens the
    prefix and appends the attempt: one request, found again."""
    t = Twin(clock="virtual", kueue=kueue)
    _provisioning(t)
    t.advance(1)
    t.create(_workload(LONG))
    if kueue == "0.19.2":
        with pytest.raises(Livelock) as err:
            t.advance(5)
        assert "kueue-provisioning" in str(err.value)
        return
    t.advance(5)
    prs = t.list("ProvisioningRequest", "default")
    assert len(prs) == 1
    name = prs[0]["metadata"]["name"]
    assert len(name) <= 253 and name.endswith("-1") and name.startswith(LONG[:200])
    # created once, and not again: no Event says so, as "<workload>.<hex>" is past the 253 characters an Event's
    # name may have (the API server refuses it; client-go's recorder drops it)
    t.advance(5)
    assert [p["metadata"]["name"] for p in t.list("ProvisioningRequest", "default")] == [name]
    assert not [e for e in t.list("Event", "default") if e["reason"] == "ProvisioningRequestCreated"]


# -- kueue#14309 -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kueue", RELEASES)
def test_kueue_14309_a_check_rejected_during_an_eviction_deactivates_from_0_20(kueue: str) -> None:
    """An admitted workload is evicted for a Retry (its quota stays until what it runs stops: nothing runs this
    Workload); the check is then Rejected. 0.19.2 skips every check-based step for an evicted workload, so it
    stays active with Admitted=True beside the Rejected check; 0.20 deactivates it (kueue#10807's report)."""
    t = Twin(clock="virtual", kueue=kueue)
    _active(t, "ac", "example.com/ac")
    _queue(t, ["ac"])
    t.create(_workload("w"))
    t.advance(1)
    _set_check(t, "w", "Ready")
    t.advance(1)
    assert is_true(t.get("Workload", "w", "default"), "Admitted")
    _set_check(t, "w", "Retry")
    t.advance(1)
    wl = t.get("Workload", "w", "default")
    assert is_true(wl, "Evicted") and is_true(wl, "QuotaReserved")
    _set_check(t, "w", "Rejected")
    t.advance(1)
    wl = t.get("Workload", "w", "default")
    rejected = [e for e in t.list("Event", "default") if e["reason"] == "AdmissionCheckRejected"]
    if kueue == "0.20.7":
        assert wl["spec"]["active"] is False
        assert len(rejected) == 1 and 'AdmissionCheck in Rejected state: "ac"' in rejected[0]["message"]
    else:
        assert wl["spec"].get("active", True) is True and not rejected
        assert is_true(wl, "Admitted") and wl["status"]["admissionChecks"][0]["state"] == "Rejected"


# -- kueue#14670 -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kueue", RELEASES)
def test_kueue_14670_history_server_collectors_count_against_quota_from_0_20(kueue: str) -> None:
    """KubeRay v1.7 injects a `ray-history-collector` sidecar into the head and every worker pod when
    `historyServerOptions.collectorOptions` is set (50m CPU, 64Mi by default); 0.20 counts it in every Ray pod set,
    0.19.2 reserved too little."""
    t = Twin(clock="virtual", kueue=kueue)
    t.apply(T.queue_yaml(api="v1beta2"))
    rj = yaml.safe_load(T.rayjob_yaml(1))
    rj["spec"]["rayClusterSpec"]["historyServerOptions"] = {"collectorOptions": {"image": "collector:v1.7.0"}}
    t.apply(rj)
    t.advance(1)
    wl = next(w for w in t.list("Workload", "default"))
    sets = {ps["name"]: ps["template"]["spec"]["containers"] for ps in wl["spec"]["podSets"]}
    collectors = {n: [c for c in cs if c["name"] == "ray-history-collector"] for n, cs in sets.items()}
    usage = {a["name"]: a["resourceUsage"] for a in wl["status"]["admission"]["podSetAssignments"]}
    if kueue == "0.20.7":
        assert [len(collectors["head"]), len(collectors["tpu-group"]), len(collectors["submitter"])] == [
            1,
            1,
            0,
        ]
        assert collectors["tpu-group"][0]["resources"]["requests"] == {"cpu": "50m", "memory": "64Mi"}
        assert usage["tpu-group"]["cpu"] == "32200m"  # 4 hosts x (8 CPUs + the collector's 50m)
        assert (
            usage["head"]["memory"] == "4672Mi"
        )  # 4Gi + the in-tree autoscaler's 512Mi + the collector's 64Mi
    else:
        assert not any(collectors.values())
        assert usage["tpu-group"]["cpu"] == "32"
        assert usage["head"]["memory"] == "4608Mi"  # 4Gi + the in-tree autoscaler's 512Mi


# -- kueue#15949 -----------------------------------------------------------------------------------------------
GATE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    featureGates:
      ConcurrentAdmission: true
"""


def _policy_cq(name: str, flavors: int) -> dict:
    return {
        "apiVersion": V2,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": f"f{i}", "resources": [{"name": "cpu", "nominalQuota": 1}]}
                        for i in range(flavors)
                    ],
                }
            ],
            "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
        },
    }


@pytest.mark.parametrize("kueue", RELEASES)
def test_kueue_15949_concurrent_admission_allows_32_flavors_from_0_20(kueue: str) -> None:
    t = Twin(clock="virtual", kueue=kueue)
    t.apply(GATE)
    t.advance(1)
    if kueue == "0.19.2":
        with pytest.raises(Invalid) as err:
            t.apply(_policy_cq("seventeen", 17))
        assert "Invalid value: 17: cannot have more than 16 resource flavors in the ResourceGroup" in str(
            err.value
        )
        return
    t.apply(_policy_cq("seventeen", 17))
    with pytest.raises(Invalid) as err:
        t.apply(_policy_cq("thirty-three", 33))
    assert "Invalid value: 33: cannot have more than 32 resource flavors in the ResourceGroup" in str(
        err.value
    )


# -- v0.20.7, Concurrent Admission -----------------------------------------------------------------------------
@pytest.mark.parametrize("kueue", RELEASES)
def test_v0_20_7_a_finished_parent_gets_no_variant_for_an_added_flavor(kueue: str) -> None:
    t = Twin(clock="virtual", kueue=kueue)
    t.apply(GATE)
    t.apply({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "reservation"}})
    t.apply({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "spot"}})
    cq = _policy_cq("cq", 0)
    cq["spec"]["resourceGroups"][0]["flavors"] = [
        {"name": "reservation", "resources": [{"name": "cpu", "nominalQuota": 5}]}
    ]
    t.apply(cq)
    t.apply(
        {
            "apiVersion": V2,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        }
    )
    parent = _workload("parent-wl")
    parent["metadata"]["labels"] = {"kueue.x-k8s.io/concurrent-admission-parent": "true"}
    t.create(parent)
    t.advance(5)
    got = t.get("Workload", "parent-wl", "default")
    assert is_true(got, "Admitted")
    finished = {
        "type": "Finished",
        "status": "True",
        "reason": "Succeeded",
        "message": "done",
        "lastTransitionTime": ts(t.now()),
    }
    t.patch(
        "Workload",
        "parent-wl",
        {"status": {"conditions": got["status"]["conditions"] + [finished]}},
        "default",
        subresource="status",
    )
    t.advance(5)
    cq["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": 5}]}
    )
    t.apply(cq)
    t.advance(5)
    flavors = sorted(
        (w["metadata"].get("annotations") or {}).get("kueue.x-k8s.io/workload-allowed-resource-flavors", "")
        for w in t.list("Workload", "default")
        if w["metadata"]["name"] != "parent-wl"
    )
    assert flavors == (["reservation", "spot"] if kueue == "0.19.2" else ["reservation"])


# -- feature gates ---------------------------------------------------------------------------------------------
def test_a_gate_the_release_does_not_have_stays_off() -> None:
    doc = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "featureGates": {"WaitForPodsReadyUnscheduledTimeout": True},
    }
    assert KueueConfig.from_dict(doc, V0_20_7.gates).gate("WaitForPodsReadyUnscheduledTimeout")
    assert not KueueConfig.from_dict(doc, V0_19_2.gates).gate("WaitForPodsReadyUnscheduledTimeout")
    for release in (
        V0_19_2,
        V0_20_7,
    ):  # beta and on since 0.18: the tutorial's --set featureGates is redundant
        assert KueueConfig.from_configmap(None, release.gates).gate("ElasticJobsViaWorkloadSlices")


# -- not differences: backported to v0.19.1 ---------------------------------------------------------------------
@pytest.mark.parametrize("kueue", RELEASES)
def test_kueue_13415_a_rayjob_in_validation_failed_gives_its_quota_back_on_both(kueue: str) -> None:
    """KubeRay refuses a RayJob whose name is over 47 characters (ValidationFailed). Kueue puts its Workload on
    hold: its quota goes back and it is not queued again (kueue#13415, in v0.19.1 as #14192, so in both
    releases). The twin held the on-demand slice's quota for ever before."""
    t = Twin(clock="virtual", kueue=kueue)
    t.apply(T.queue_yaml(api="v1beta2"))
    rj = yaml.safe_load(T.rayjob_yaml(1))
    rj["metadata"]["name"] = "r" * 48
    t.apply(rj)
    t.advance(5)
    assert t.get("RayJob", "r" * 48, "default")["status"]["jobDeploymentStatus"] == "ValidationFailed"
    wl = next(w for w in t.list("Workload", "default"))
    qr = find_condition(wl, "QuotaReserved")
    assert (qr["status"], qr["reason"], qr["message"]) == ("False", "OnHold", "Job is on hold")
    assert not wl["status"].get("admission") and not is_true(wl, "Admitted")
    cq = t.get("ClusterQueue", "cluster-queue")
    reserved = {
        (f["name"], r["name"]): r["total"]
        for f in cq["status"].get("flavorsReservation") or []
        for r in f["resources"]
    }
    assert reserved.get(("on-demand", "google.com/tpu"), "0") == "0", reserved
    t.advance(600)  # still on hold: not queued, not admitted again
    assert not t.get("Workload", wl["metadata"]["name"], "default")["status"].get("admission")


@pytest.mark.parametrize("kueue", RELEASES)
def test_kueue_13785_a_stale_creation_error_is_cleared_from_the_check_on_both(kueue: str) -> None:
    """The check of a workload whose ProvisioningRequest exists and has no condition yet carries an error an
    earlier, failed attempt left ("Error creating PodTemplate ..."): Kueue clears it (kueue#13785, in v0.19.1 as
    #13874, so in both releases), where it was kept and later quoted as a deactivation's cause."""
    t = Twin(clock="virtual", kueue=kueue)
    _provisioning(t)
    t.advance(1)
    t.create(_workload("w"))
    t.advance(1)
    assert [p["metadata"]["name"] for p in t.list("ProvisioningRequest", "default")] == ["w-ac-1"]
    stale = 'Error creating PodTemplate "ppt-w-ac-1-main": the object has been modified'
    _set_check(t, "w", "Pending")
    wl = t.get("Workload", "w", "default")
    wl["status"]["admissionChecks"][0]["message"] = stale
    t.patch(
        "Workload",
        "w",
        {"status": {"admissionChecks": wl["status"]["admissionChecks"]}},
        "default",
        subresource="status",
    )
    assert t.get("Workload", "w", "default")["status"]["admissionChecks"][0]["message"] == stale
    t.advance(1)
    check = t.get("Workload", "w", "default")["status"]["admissionChecks"][0]
    assert check["state"] == "Pending" and check.get("message", "") == ""
