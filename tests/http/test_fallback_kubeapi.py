"""``KubernetesAPI`` (the fallback's ClusterAPI over the official kubernetes client) against the served twin:
reads, writes, optimistic concurrency, Events as kubectl shows them, state, and API errors as flexq.errors."""

from __future__ import annotations

import json
import re

import pytest

from flexq import errors
from flexq.cli.kubeclient import connect
from flexq.fallback.kubeapi import KubernetesAPI


class StepClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


@pytest.fixture
def api(served):
    from flexq.clock import WallClock

    return KubernetesAPI(connect(served.kubeconfig), clock=StepClock(WallClock().now() - 60))


def _cm(name: str, **data: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


def test_get_list_replace_patch_delete(api, served) -> None:
    served.kubectl("apply", "-f", "-", input=json.dumps(_cm("kapi-a", a="1")))
    cm = api.get("ConfigMap", "kapi-a", "default")
    assert cm is not None and cm["data"] == {"a": "1"} and cm["kind"] == "ConfigMap"
    assert api.get("ConfigMap", "kapi-none", "default") is None
    assert "kapi-a" in [c["metadata"]["name"] for c in api.list("ConfigMap", "default")]
    assert all(c["kind"] == "ConfigMap" and c["apiVersion"] == "v1" for c in api.list("ConfigMap", "default"))
    stale = json.loads(json.dumps(cm))
    cm["data"]["a"] = "2"
    api.replace(cm)
    stale["data"]["a"] = "3"
    with pytest.raises(errors.Conflict) as exc:
        api.replace(stale)
    assert "the object has been modified" in exc.value.message
    out = api.merge_patch("ConfigMap", "kapi-a", "default", {"data": {"b": "x"}})
    assert out["data"] == {"a": "2", "b": "x"}
    api.delete("ConfigMap", "kapi-a", "default")
    api.delete("ConfigMap", "kapi-a", "default")  # NotFound is not an error
    assert api.get("ConfigMap", "kapi-a", "default") is None


def test_kueue_kinds_are_read_in_v1beta2(api, served) -> None:
    from tests.http.conftest import tutorial_queue_yaml

    served.kubectl("apply", "-f", "-", input=tutorial_queue_yaml())
    cq = api.get("ClusterQueue", "cluster-queue")
    assert cq is not None and cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert {f["metadata"]["name"] for f in api.list("ResourceFlavor")} >= {"on-demand", "dws", "default-cpu"}
    assert [
        lq["spec"]["clusterQueue"]
        for lq in api.list("LocalQueue", "default")
        if lq["metadata"]["name"] == "user-queue"
    ] == ["cluster-queue"]
    assert (
        api.get("ProvisioningRequestConfig", "dws-config")["spec"]["provisioningClassName"]
        == "queued-provisioning.gke.io"
    )


def test_api_errors_become_flexq_errors(api, served) -> None:
    served.kubectl("apply", "-f", "-", input=json.dumps(_cm("kapi-err")))
    with pytest.raises(errors.Invalid) as exc:
        api.merge_patch("ConfigMap", "kapi-err", "default", {"data": {"bad key!": "x"}})
    assert exc.value.status == 422 and exc.value.causes and exc.value.causes[0].field == "data[bad key!]"
    assert 'ConfigMap "kapi-err" is invalid' in exc.value.message
    with pytest.raises(errors.NotFound):
        api.merge_patch("Workload", "no-such-workload", "default", {"spec": {"active": False}})
    with pytest.raises(errors.NotFound):
        api.resource("Secret")
    old = api.resource("Workload")
    from flexq.fallback import kubeapi

    kubeapi.KINDS["Workload"] = kubeapi.Resource(old.group, "v1alpha9", old.plural, True)
    try:  # a cluster without Kueue's v1beta2 API: an error, not an empty list
        with pytest.raises(errors.NotFound, match="needs Kueue 0.15 or later"):
            api.list("Workload", "default")
    finally:
        kubeapi.KINDS["Workload"] = old
    kubeapi.KINDS["RayJob"], saved = (
        kubeapi.Resource("ray.io", "v9", "rayjobs", True),
        kubeapi.KINDS["RayJob"],
    )
    try:  # an optional kind the cluster does not serve: nothing to read
        assert api.list("RayJob", "default") == []
    finally:
        kubeapi.KINDS["RayJob"] = saved


def test_events_are_created_and_counted_as_kubectl_shows_them(api, served) -> None:
    served.kubectl("apply", "-f", "-", input=json.dumps(_cm("kapi-ev")))
    cm = api.get("ConfigMap", "kapi-ev", "default")
    api.event(cm, "Warning", "FallbackEvicting", "on-demand stocked out: moving it")
    api.clock.t += 30
    api.event(cm, "Warning", "FallbackEvicting", "on-demand stocked out: moving it")
    api.event(cm, "Normal", "FallbackMoved", "moved to dws")
    out = served.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=kapi-ev", "-o", "json"
    ).stdout
    evs = {e["reason"]: e for e in json.loads(out)["items"]}
    ev = evs["FallbackEvicting"]
    assert ev["count"] == 2 and ev["type"] == "Warning" and ev["source"]["component"] == "flexq-fallback"
    assert (
        ev["involvedObject"]["uid"] == cm["metadata"]["uid"] and ev["involvedObject"]["kind"] == "ConfigMap"
    )
    assert ev["firstTimestamp"] != ev["lastTimestamp"]
    assert evs["FallbackMoved"]["count"] == 1
    described = served.kubectl("describe", "configmap", "kapi-ev").stdout
    assert re.search(r"Warning\s+FallbackEvicting\s+3\ds \(x2 over 6\ds\)\s+flexq-fallback", described), (
        described
    )


def test_capacity_events_select_the_autoscalers_reasons(api, served) -> None:
    for reason in ("FailedScaleUp", "NotTriggerScaleUp", "Scheduled"):
        served.twin.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"kapi-{reason.lower()}", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                "reason": reason,
                "message": "GCE out of resources",
                "type": "Warning",
            }
        )
    got = {e["metadata"]["name"] for e in api.capacity_events("default")}
    assert {"kapi-failedscaleup", "kapi-nottriggerscaleup"} <= got and "kapi-scheduled" not in got


def test_state_configmap_round_trip(api) -> None:
    assert api.load_state("kueue-system", "kapi-state") == {}
    api.save_state("kueue-system", "kapi-state", {"on-demand": '{"since": 1}'})
    api.save_state("kueue-system", "kapi-state", {"on-demand": '{"since": 2}'})
    assert api.load_state("kueue-system", "kapi-state") == {"on-demand": '{"since": 2}'}
    cm = api.get("ConfigMap", "kapi-state", "kueue-system")
    assert cm["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "flexq-fallback"}
    with pytest.raises(errors.NotFound):
        api.save_state("no-such-namespace", "kapi-state", {})
