"""Issue 13 acceptance 3 for Concurrent Admission and the plan-A ProvisioningRequest check: real kubectl against a
served twin (what ``flexq up`` serves). The feature gate goes in through ``kueue-manager-config``; apply, get and
describe show the upstream fields; refused manifests get upstream's webhook text; a queued Job becomes a Parent
with one Variant per flavor."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.http.conftest import Served

GATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: kueue-manager-config
  namespace: kueue-system
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    featureGates:
      ConcurrentAdmission: true
"""

QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: ca-reservation}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: ca-spot}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata: {name: ca-capacity-config}
spec:
  provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io
  managedResources: [cpu]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: ca-capacity}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: ca-capacity-config}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: ca-queue}
spec:
  namespaceSelector: {}
  concurrentAdmissionPolicy:
    migration:
      mode: TryPreferredFlavors
      constraints:
        lastAcceptableFlavorName: ca-reservation
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: ca-reservation
      resources: [{name: cpu, nominalQuota: 0}]
    - name: ca-spot
      resources: [{name: cpu, nominalQuota: 4}]
  admissionChecksStrategy:
    admissionChecks:
    - name: ca-capacity
      onFlavors: [ca-reservation]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: ca-local, namespace: default}
spec: {clusterQueue: ca-queue}
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: ca-job
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: ca-local}
  annotations: {twin.flexq.dev/run-seconds: "3600"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources: {requests: {cpu: "1"}}
"""


def _wait(fn, timeout: float = 20.0):
    end = time.monotonic() + timeout
    while True:
        got = fn()
        if got or time.monotonic() > end:
            return got
        time.sleep(0.2)


@pytest.fixture(scope="module")
def gated(served: Served) -> Served:
    served.kubectl("apply", "-f", "-", input=GATE)
    time.sleep(0.5)  # the Kueue controllers read the configuration from their watch
    served.kubectl("apply", "-f", "-", input=QUEUE)
    return served


def test_policy_applies_and_shows_in_get_and_describe(gated: Served) -> None:
    cq = json.loads(gated.kubectl("get", "clusterqueue", "ca-queue", "-o", "json").stdout)
    assert cq["spec"]["concurrentAdmissionPolicy"] == {
        "migration": {
            "mode": "TryPreferredFlavors",
            "constraints": {"lastAcceptableFlavorName": "ca-reservation"},
        }
    }
    out = gated.kubectl("describe", "clusterqueue", "ca-queue").stdout
    assert "Concurrent Admission Policy:" in out
    assert "Last Acceptable Flavor Name:  ca-reservation" in out
    assert re.search(r"\n\s+Mode:\s+TryPreferredFlavors\n", out), out
    ac = json.loads(gated.kubectl("get", "admissioncheck", "ca-capacity", "-o", "json").stdout)
    assert ac["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    prc = gated.kubectl("get", "provisioningrequestconfig", "ca-capacity-config", "-o", "yaml").stdout
    assert "provisioningClassName: best-effort-atomic-scale-up.autoscaling.x-k8s.io" in prc


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            "queueingStrategy: StrictFIFO",
            'spec.queueingStrategy: Invalid value: "StrictFIFO": StrictFIFO queueing strategy cannot be used when '
            "ConcurrentAdmissionPolicy is defined",
        ),
        (
            "concurrentAdmissionPolicy: {migration: {mode: RetainFirstAdmission, constraints: "
            "{lastAcceptableFlavorName: ca-spot}}}",
            "spec.concurrentAdmissionPolicy.migration.constraints: Forbidden: may only be set when migration.mode is "
            '"TryPreferredFlavors" (got "RetainFirstAdmission")',
        ),
        (
            "concurrentAdmissionPolicy: {migration: {mode: TryPreferredFlavors, constraints: "
            "{lastAcceptableFlavorName: gold}}}",
            'spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: Invalid value: "gold": must '
            "be one of the flavors defined in the ClusterQueue: [ca-reservation ca-spot]",
        ),
    ],
)
def test_refused_policies_get_the_webhook_text(gated: Served, change: str, message: str) -> None:
    doc = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: ca-refused}\nspec:\n"
        "  concurrentAdmissionPolicy: {migration: {mode: TryPreferredFlavors}}\n"
        "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
        "    - {name: ca-reservation, resources: [{name: cpu, nominalQuota: 1}]}\n"
        "    - {name: ca-spot, resources: [{name: cpu, nominalQuota: 1}]}\n"
    )
    key = change.split(":")[0]
    lines = [ln for ln in doc.splitlines() if not ln.strip().startswith(key + ":")]
    lines.insert(4, "  " + change)
    r = gated.kubectl("apply", "-f", "-", input="\n".join(lines) + "\n", check=False)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert gated.kubectl("get", "cq", "ca-refused", check=False).returncode != 0


def test_policy_is_immutable(gated: Served) -> None:
    r = gated.kubectl(
        "patch",
        "cq",
        "ca-queue",
        "--type=merge",
        "-p",
        '{"spec":{"concurrentAdmissionPolicy":{"migration":{"mode":"RetainFirstAdmission",'
        '"constraints":null}}}}',
        check=False,
    )
    assert r.returncode != 0
    assert (
        "spec.concurrentAdmissionPolicy: Invalid value: v1beta2.ConcurrentAdmissionPolicy{Migration:"
        in r.stderr
    )
    assert "field is immutable" in r.stderr


def test_job_becomes_a_parent_with_one_variant_per_flavor(gated: Served) -> None:
    gated.kubectl("apply", "-f", "-", input=JOB)

    def family() -> list[dict]:
        items = json.loads(gated.kubectl("get", "workloads", "-n", "default", "-o", "json").stdout)["items"]
        mine = [w for w in items if "ca-job" in w["metadata"]["name"]]
        return (
            mine
            if len(mine) == 3
            and any(
                (w.get("status") or {}).get("admission")
                for w in mine
                if "kueue.x-k8s.io/concurrent-admission-parent" in (w["metadata"].get("labels") or {})
            )
            else []
        )

    wls = _wait(family)
    assert len(wls) == 3, gated.kubectl("get", "workloads", "-n", "default").stdout
    parent = next(
        w
        for w in wls
        if (w["metadata"].get("labels") or {}).get("kueue.x-k8s.io/concurrent-admission-parent") == "true"
    )
    variants = [w for w in wls if w is not parent]
    assert {
        w["metadata"]["annotations"]["kueue.x-k8s.io/workload-allowed-resource-flavors"] for w in variants
    } == {"ca-reservation", "ca-spot"}
    for v in variants:
        assert v["metadata"]["name"].startswith("job-ca-job-variant-")
        [ref] = v["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"]) == (
            "Workload",
            parent["metadata"]["name"],
            parent["metadata"]["uid"],
        )
        assert v["spec"]["preemptionGates"] == [{"name": "kueue.x-k8s.io/concurrent-admission"}]
    # the reservation flavor has no quota: the spot Variant is admitted, and so is the Parent
    adm = parent["status"]["admission"]["podSetAssignments"][0]["flavors"]
    assert adm == {"cpu": "ca-spot"}
    admitted = {c["type"]: c for c in parent["status"]["conditions"]}["Admitted"]
    assert admitted["status"] == "True" and admitted["message"].startswith(
        "The variant job-ca-job-variant-ca-spot-"
    )
    table = gated.kubectl("get", "workloads", "-n", "default").stdout
    assert "job-ca-job-variant-ca-reservation-" in table and "job-ca-job-variant-ca-spot-" in table
    out = gated.kubectl("describe", "workload", "-n", "default", parent["metadata"]["name"]).stdout
    assert "kueue.x-k8s.io/concurrent-admission-parent=true" in out
    events = gated.kubectl(
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        f"involvedObject.name={parent['metadata']['name']}",
    ).stdout
    assert "CreatedVariant" in events and "Variant Workload" in events
    spot = next(
        v
        for v in variants
        if v["metadata"]["annotations"]["kueue.x-k8s.io/workload-allowed-resource-flavors"] == "ca-spot"
    )
    vdesc = gated.kubectl("describe", "workload", "-n", "default", spot["metadata"]["name"]).stdout
    assert "kueue.x-k8s.io/workload-allowed-resource-flavors: ca-spot" in vdesc
    assert "Owner References:" in vdesc and "Kind:                  Workload" in vdesc
    assert "Name:                  " + parent["metadata"]["name"] in vdesc
    assert "Preemption Gates:" in vdesc and "kueue.x-k8s.io/concurrent-admission" in vdesc
