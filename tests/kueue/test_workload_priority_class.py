"""A Workload's priority as Kueue's ``jobframework.ExtractPriority`` sets it (``pkg/util/priority``): the
WorkloadPriorityClass of the job's ``kueue.x-k8s.io/priority-class`` label first, else the PriorityClass its pod
template names (``priorityClassRef`` group ``scheduling.k8s.io``), else the global default PriorityClass, else 0;
a template naming no existing class gets no Workload until the class exists (the reconcile's NotFound is
retried)."""

from __future__ import annotations

from flexq import Twin

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "100"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: wpc}
value: 7
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: pc-high}
value: 500
"""


def _job(name: str, class_name: str | None = None, wpc: str | None = None) -> dict:
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if wpc:
        labels["kueue.x-k8s.io/priority-class"] = wpc
    spec: dict = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    if class_name:
        spec["priorityClassName"] = class_name
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": {"template": {"spec": spec}},
    }


def _workload_spec(twin: Twin, job: str) -> dict | None:
    for wl in twin.list("Workload", "default"):
        if wl["metadata"]["ownerReferences"][0]["name"] == job:
            spec: dict = wl["spec"]
            return spec
    return None


def _ref(spec: dict) -> tuple:
    ref = spec.get("priorityClassRef")
    return (spec.get("priority"), (ref["group"], ref["kind"], ref["name"]) if ref else None)


def test_priority_sources_in_upstreams_order(twin: Twin) -> None:
    twin.apply(SETUP)
    twin.apply(_job("from-pod-class", "pc-high"))
    twin.apply(_job("from-label", "pc-high", wpc="wpc"))
    twin.apply(_job("from-nothing"))
    twin.advance(1)
    assert _ref(_workload_spec(twin, "from-pod-class") or {}) == (
        500,
        ("scheduling.k8s.io", "PriorityClass", "pc-high"),
    )
    assert _ref(_workload_spec(twin, "from-label") or {}) == (
        7,
        ("kueue.x-k8s.io", "WorkloadPriorityClass", "wpc"),
    )
    assert _ref(_workload_spec(twin, "from-nothing") or {}) == (0, None)
    twin.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "everyone"},
            "value": 42,
            "globalDefault": True,
        }
    )
    twin.apply(_job("from-default"))
    twin.advance(1)
    assert _ref(_workload_spec(twin, "from-default") or {}) == (
        42,
        ("scheduling.k8s.io", "PriorityClass", "everyone"),
    )
    # the job's pods get the same priority from the API server's Priority plugin once Kueue starts the job
    pods = twin.list("Pod", "default", label_selector="job-name=from-pod-class")
    assert [p["spec"]["priority"] for p in pods] == [500]


def test_a_missing_pod_priority_class_holds_the_workload_until_it_exists(twin: Twin) -> None:
    twin.apply(SETUP)
    twin.apply(_job("waits", "later"))
    twin.advance(30)
    assert _workload_spec(twin, "waits") is None
    twin.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "later"},
            "value": 3,
        }
    )
    twin.advance(120)
    assert _ref(_workload_spec(twin, "waits") or {}) == (3, ("scheduling.k8s.io", "PriorityClass", "later"))
