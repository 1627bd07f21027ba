"""CustomResourceDefinitions for the kinds the twin implements (issue 26, item 4): ``kubectl get crd`` and the tools
that discover custom resources through them see what a cluster with Kueue, KubeRay and GKE's CRDs installed
shows."""

from __future__ import annotations

import json

from .conftest import Served

CUSTOM = {
    "admissionchecks.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "cohorts.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "provisioningrequestconfigs.kueue.x-k8s.io",
    "resourceflavors.kueue.x-k8s.io",
    "workloadpriorityclasses.kueue.x-k8s.io",
    "workloads.kueue.x-k8s.io",
    "provisioningrequests.autoscaling.x-k8s.io",
    "computeclasses.cloud.google.com",
    "capacityprofiles.twin.flexq.dev",
}


def test_kubectl_get_crd_lists_the_custom_kinds(served: Served) -> None:
    out = served.kubectl("get", "crd").stdout.splitlines()
    assert out[0].split() == ["NAME", "CREATED", "AT"]
    names = {line.split()[0] for line in out[1:]}
    assert names >= CUSTOM
    assert not any(n.endswith(".k8s.io") or "." not in n for n in names)  # no compiled-in kind
    created = out[1].split()[1]
    assert created.endswith("Z") and "T" in created  # RFC 3339, as the default table convertor prints it


def test_a_crd_describes_what_is_served(served: Served) -> None:
    crd = json.loads(served.kubectl("get", "crd", "workloads.kueue.x-k8s.io", "-o", "json").stdout)
    spec = crd["spec"]
    assert spec["group"] == "kueue.x-k8s.io" and spec["scope"] == "Namespaced"
    assert spec["names"] == {  # config/components/crd/bases/kueue.x-k8s.io_workloads.yaml (v0.19.2)
        "plural": "workloads",
        "singular": "workload",
        "kind": "Workload",
        "listKind": "WorkloadList",
        "shortNames": ["kwl", "kueueworkload", "kueueworkloads"],
    }
    columns = [
        c["name"]
        for c in next(v for v in spec["versions"] if v["name"] == "v1beta2")["additionalPrinterColumns"]
    ]
    assert columns == ["Queue", "Reserved in", "Admitted", "Finished", "Age"]
    versions = {v["name"]: v for v in spec["versions"]}
    assert set(versions) == {"v1beta1", "v1beta2"}
    assert versions["v1beta2"]["storage"] and not versions["v1beta1"]["storage"]
    assert all(v["served"] and v["subresources"] == {"status": {}} for v in versions.values())
    schema = versions["v1beta2"]["schema"]["openAPIV3Schema"]
    pod_sets = schema["properties"]["spec"]["properties"]["podSets"]
    assert pod_sets["maxItems"] == 18 and pod_sets["minItems"] == 1
    assert "$ref" not in json.dumps(schema)  # structural: every reference inlined
    assert crd["status"]["storedVersions"] == ["v1beta2"]
    established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert established == {"NamesAccepted": "True", "Established": "True"}
    # the discovery documents agree with the definitions (what kubectl api-resources shows)
    resources = served.kubectl("api-resources", "--api-group=kueue.x-k8s.io", "-o", "name").stdout.split()
    assert "workloads.kueue.x-k8s.io" in resources


def test_crds_are_discovered_as_the_api_servers_own(served: Served) -> None:
    out = served.kubectl("api-resources", "--api-group=apiextensions.k8s.io").stdout
    line = next(x for x in out.splitlines() if x.startswith("customresourcedefinitions"))
    assert line.split()[:4] == ["customresourcedefinitions", "crd,crds", "apiextensions.k8s.io/v1", "false"]
