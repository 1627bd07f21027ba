"""``RayCluster.status.head`` as KubeRay's ``updateHeadInfo`` writes it: ``podIP`` the head pod's IP,
``serviceIP`` the head Service's cluster IP, or the pod's for the headless head Service KubeRay makes by default
(``getHeadServiceIPAndName``, ``BuildServiceForHeadPod``); and KubeRay's ``FailedToCreateHeadPod`` event when the API server refuses the head pod (here: its
template names a PriorityClass that does not exist), the pod made once the class exists."""

from __future__ import annotations

from flexq import Twin
from flexq.kuberay import names
from tests.kuberay.test_kuberay_twin import _advance_until, _st, rayjob


def test_head_info_holds_the_pod_ip_and_the_headless_services_ip(cluster: Twin) -> None:
    twin = cluster
    twin.apply(rayjob(3, run=3600))
    _advance_until(twin, lambda: _st(twin, "rayjob-tpu-v6e-dws-3").get("jobDeploymentStatus") == "Running")
    cname = _st(twin, "rayjob-tpu-v6e-dws-3")["rayClusterName"]
    head = (twin.get("RayCluster", cname, "default").get("status") or {})["head"]
    pod = twin.get("Pod", head["podName"], "default")
    svc = twin.get("Service", names.head_service_name(cname), "default")
    assert head["serviceName"] == svc["metadata"]["name"]
    assert head["podIP"] == pod["status"]["podIP"] != ""
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert head["serviceIP"] == head["podIP"]


def test_a_refused_head_pod_is_an_event_and_is_retried(cluster: Twin) -> None:
    twin = cluster
    job = rayjob(4, run=60)
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["priorityClassName"] = "ray-head"
    twin.apply(job)
    _advance_until(twin, lambda: bool(_st(twin, "rayjob-tpu-v6e-dws-4").get("rayClusterName")), limit=60)
    cname = _st(twin, "rayjob-tpu-v6e-dws-4")["rayClusterName"]
    twin.advance(5)
    events = [
        (e["reason"], e["message"])
        for e in twin.list("Event", "default")
        if e["involvedObject"]["name"] == cname and e["type"] == "Warning"
    ]
    assert events and events[0][0] == "FailedToCreateHeadPod"
    assert events[0][1] == (  # KubeRay creates with generateName: the pod has no name, the error its prefix
        f'Failed to create head Pod default/, pods "{cname}-head-" is forbidden: no PriorityClass with name '
        "ray-head was found"
    )
    assert len(events) == 1  # retried, but one event (its count grows) as the message stays the same
    assert twin.list("Pod", "default", label_selector=f"{names.LABEL_CLUSTER}={cname}") == []
    twin.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "ray-head"},
            "value": 9,
        }
    )
    _advance_until(
        twin,
        lambda: bool(twin.list("Pod", "default", label_selector=f"{names.LABEL_CLUSTER}={cname}")),
        limit=120,
    )
    heads = twin.list(
        "Pod", "default", label_selector=f"{names.LABEL_CLUSTER}={cname},{names.LABEL_NODE_TYPE}=head"
    )
    assert [p["spec"]["priority"] for p in heads] == [9]
