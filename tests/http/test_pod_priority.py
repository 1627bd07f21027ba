"""The Priority admission plugin on pod create, through real kubectl (``kubectl run`` sends protobuf) and the
official Python client: a pod's ``priority`` and ``preemptionPolicy`` come from its PriorityClass, an unknown
class or a different integer priority is refused with upstream's 403, a pod without a class gets the global
default class; a Job whose template names no existing class gets the Job controller's FailedCreate event."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.http.conftest import Served


@pytest.fixture(scope="module")
def core(served: Served) -> client.CoreV1Api:
    cfg = client.Configuration()
    cfg.host = served.url
    cfg.ssl_ca_cert = served.ca
    cfg.api_key = {"authorization": f"Bearer {served.token}"}
    return client.CoreV1Api(client.ApiClient(cfg))


def _pod(name: str, **spec: object) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")], **spec),
    )


def test_kubectl_run_takes_priority_and_policy_from_the_class(served: Served) -> None:
    served.kubectl("create", "priorityclass", "team-high", "--value=5000", "--preemption-policy=Never")
    served.kubectl(
        "run",
        "runs-high",
        "--image=busybox",
        "--restart=Never",
        '--overrides={"spec": {"priorityClassName": "team-high"}}',
    )
    spec = json.loads(served.kubectl("get", "pod", "runs-high", "-o", "json").stdout)["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "team-high",
        5000,
        "Never",
    )
    r = served.kubectl(
        "run",
        "runs-ghost",
        "--image=busybox",
        '--overrides={"spec": {"priorityClassName": "ghost"}}',
        check=False,
    )
    assert (
        'Error from server (Forbidden): pods "runs-ghost" is forbidden: no PriorityClass with name ghost was found'
        in (r.stderr)
    )
    assert served.kubectl("get", "pod", "runs-ghost", check=False).returncode != 0  # nothing stored


def test_a_different_integer_priority_is_refused(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod("default", _pod("says-seven", priority_class_name="team-high", priority=7))
    assert exc.value.status == 403
    body = json.loads(exc.value.body)
    assert body["reason"] == "Forbidden" and body["details"] == {"name": "says-seven", "kind": "pods"}
    assert body["message"] == (
        'pods "says-seven" is forbidden: the integer value of priority (7) must not be provided in pod spec; '
        "priority admission controller computed 5000 from the given PriorityClass name"
    )
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod(
            "default",
            _pod("says-preempt", priority_class_name="team-high", preemption_policy="PreemptLowerPriority"),
        )
    assert "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec" in (
        exc.value.body
    )
    same = core.create_namespaced_pod(
        "default", _pod("says-5000", priority_class_name="team-high", priority=5000)
    )
    assert same.spec.priority == 5000


def test_a_pod_without_a_class_gets_the_global_default(served: Served, core: client.CoreV1Api) -> None:
    plain = core.create_namespaced_pod("default", _pod("before-default"))
    assert (plain.spec.priority, plain.spec.priority_class_name, plain.spec.preemption_policy) == (
        0,
        None,
        "PreemptLowerPriority",
    )
    served.kubectl("create", "priorityclass", "everyone", "--value=100", "--global-default")
    got = core.create_namespaced_pod("default", _pod("after-default"))
    assert (got.spec.priority, got.spec.priority_class_name) == (100, "everyone")
    with pytest.raises(
        ApiException
    ) as exc:  # the name a refusal gives is the generateName (none is made yet)
        core.create_namespaced_pod(
            "default",
            client.V1Pod(
                metadata=client.V1ObjectMeta(generate_name="gen-"),
                spec=client.V1PodSpec(
                    containers=[client.V1Container(name="c", image="busybox")], priority_class_name="nope"
                ),
            ),
        )
    assert (
        json.loads(exc.value.body)["message"]
        == 'pods "gen-" is forbidden: no PriorityClass with name nope was found'
    )
    served.kubectl("delete", "pc", "everyone")
    assert core.create_namespaced_pod("default", _pod("after-delete")).spec.priority == 0


def test_a_job_whose_pods_are_refused_records_failed_create(served: Served) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "ghostly"},
        "spec": {
            "template": {
                "spec": {
                    "priorityClassName": "ghost",
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    }
    served.kubectl("apply", "-f", "-", input=json.dumps(job))
    deadline = time.monotonic() + 20
    out = ""
    while time.monotonic() < deadline:
        out = served.kubectl("events", "--for", "job/ghostly").stdout
        if "FailedCreate" in out:
            break
        time.sleep(0.2)
    assert "FailedCreate" in out
    assert 'Error creating: pods "ghostly-" is forbidden: no PriorityClass with name ghost was found' in out
    assert served.kubectl("get", "pods", "-l", "job-name=ghostly", "-o", "name").stdout == ""

    def counts() -> list[int]:  # retried after 1 s, 2 s, ...: one Event whose count grows
        sel = "involvedObject.name=ghostly,reason=FailedCreate"
        items = json.loads(served.kubectl("get", "events", "--field-selector", sel, "-o", "json").stdout)[
            "items"
        ]
        return [e.get("count", 1) for e in items]

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and counts()[0] < 2:
        time.sleep(0.3)
    assert len(counts()) == 1 and counts()[0] >= 2
    served.kubectl("create", "priorityclass", "ghost", "--value=3")  # the controller retries: the pod comes
    deadline = time.monotonic() + 20
    pods = ""
    while time.monotonic() < deadline and not pods:
        pods = served.kubectl(
            "get", "pods", "-l", "job-name=ghostly", "-o", "jsonpath={.items[*].spec.priority}"
        ).stdout
        time.sleep(0.2)
    assert pods == "3"
