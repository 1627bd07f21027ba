"""GKE Warden's constraint on ProvisioningRequests (issue 26, item 3): a ``queued-provisioning.gke.io`` request with
more than one pod set is refused at admission, with GKE's exact message (ray-project/ray#57839), and Kueue shows the
refusal on the Workload's admission check. It is why the tutorial's ProvisioningRequestConfig sets
``managedResources``: without it the head and the submitter join the TPU workers in the request."""

from __future__ import annotations

import pytest
import yaml

from flexq.cli import tutorial as T
from flexq.errors import AdmissionDenied
from flexq.testing.gke_twin import provisioning_request, tutorial_twin

WARDEN_MESSAGE = (
    'admission webhook "warden-validating.common-webhooks.networking.gke.io" denied the request: GKE Warden '
    "rejected the request because it violates one or more constraints.\n"
    'Violations details: {"[denied by provisioning-request-cr-validation]":["the queued provisioning feature '
    'currently supports only single PodSet per request"]}'
)


def _two_pod_sets(t, cls: str = "queued-provisioning.gke.io") -> dict:
    provisioning_request(t, "one", cls=cls)
    spec = t.get("ProvisioningRequest", "one", "default")["spec"]
    spec["podSets"].append(dict(spec["podSets"][0]))
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": "two", "namespace": "default"},
        "spec": spec,
    }


def test_warden_refuses_a_queued_request_with_two_pod_sets() -> None:
    t = tutorial_twin()
    with pytest.raises(AdmissionDenied) as err:
        t.create(_two_pod_sets(t))
    assert str(err.value) == WARDEN_MESSAGE
    status = err.value.to_status()
    assert (status["code"], status["reason"]) == (400, "GKE Warden constraints violations")
    assert t.try_get("ProvisioningRequest", "two", "default") is None


@pytest.mark.parametrize(
    "cls", ["best-effort-atomic-scale-up.autoscaling.x-k8s.io", "check-capacity.autoscaling.x-k8s.io"]
)
def test_warden_lets_the_other_classes_have_several_pod_sets(cls: str) -> None:
    t = tutorial_twin()
    t.create(_two_pod_sets(t, cls))
    assert len(t.get("ProvisioningRequest", "two", "default")["spec"]["podSets"]) == 2


def test_without_managed_resources_kueue_shows_wardens_refusal_on_the_workload() -> None:
    """The tutorial's queue without ``managedResources``: job 1 runs on on-demand, job 2 is given the ``dws``
    flavor and its ProvisioningRequest would carry the head, TPU workers and submitter pod sets."""
    t = tutorial_twin()
    docs = list(yaml.safe_load_all(T.queue_yaml(api="v1beta2")))
    for d in docs:
        if d["kind"] == "ProvisioningRequestConfig":
            d["spec"].pop("managedResources")
        t.apply(d)
    t.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ray-job-code-sample"},
            "data": {"a": "b"},
        }
    )
    for job in (1, 2):
        t.apply(T.rayjob_yaml(job))
        t.advance(60)
    wl = next(
        w
        for w in t.list("Workload", "default")
        if w["metadata"]["ownerReferences"][0]["name"] == "rayjob-tpu-v6e-dws-2"
    )
    check = next(c for c in wl["status"]["admissionChecks"] if c["name"] == "dws-prov")
    name = f"{wl['metadata']['name']}-dws-prov-1"
    assert check["state"] == "Pending"
    assert check["message"] == f'Error creating ProvisioningRequest "{name}": {WARDEN_MESSAGE}'
    assert t.list("ProvisioningRequest", "default") == []
    events = [
        e
        for e in t.list("Event", "default")
        if e["involvedObject"]["name"] == wl["metadata"]["name"] and e["reason"] == "FailedCreate"
    ]
    assert [e["message"] for e in events] == [check["message"]]
