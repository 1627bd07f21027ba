"""scheduling.k8s.io/v1 PriorityClasses served as the API server serves them, driven by real kubectl (its
``create priorityclass`` generator speaks protobuf) and the official Python client: the two system classes
from the start, upstream's columns and short name, validation, the one-global-default rule, immutability,
and the system classes' protection."""

from __future__ import annotations

import json
import re

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.http.conftest import Served


@pytest.fixture(scope="module")
def scheduling(served: Served) -> client.SchedulingV1Api:
    cfg = client.Configuration()
    cfg.host = served.url
    cfg.ssl_ca_cert = served.ca
    cfg.api_key = {"authorization": f"Bearer {served.token}"}
    return client.SchedulingV1Api(client.ApiClient(cfg))


def test_the_system_classes_exist_from_the_start_with_upstreams_columns(served: Served) -> None:
    out = served.kubectl("get", "priorityclasses").stdout.splitlines()
    assert out[0].split() == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows["system-cluster-critical"][1:3] == ["2000000000", "false"]
    assert rows["system-node-critical"][1:3] == ["2000001000", "false"]
    assert rows["system-node-critical"][4] == "PreemptLowerPriority"
    assert served.kubectl("get", "pc", "-o", "name").stdout.split() == [
        "priorityclass.scheduling.k8s.io/system-cluster-critical",
        "priorityclass.scheduling.k8s.io/system-node-critical",
    ]
    res = served.kubectl("api-resources", "--api-group=scheduling.k8s.io", "--no-headers").stdout.split()
    assert res[:5] == ["priorityclasses", "pc", "scheduling.k8s.io/v1", "false", "PriorityClass"]
    assert re.search(r"value\s+<integer> -required-", served.kubectl("explain", "priorityclass").stdout)


def test_kubectl_create_priorityclass_and_one_global_default(served: Served) -> None:
    served.kubectl(
        "create", "priorityclass", "batch-high", "--value=1000", "--global-default", "--description=for batch"
    )
    pc = json.loads(served.kubectl("get", "pc", "batch-high", "-o", "json").stdout)
    assert (pc["value"], pc["globalDefault"], pc["description"], pc["preemptionPolicy"]) == (
        1000,
        True,
        "for batch",
        "PreemptLowerPriority",
    )
    served.kubectl("create", "priorityclass", "batch-low", "--value=10", "--preemption-policy=Never")
    low = json.loads(served.kubectl("get", "pc", "batch-low", "-o", "json").stdout)
    assert "globalDefault" not in low and low["preemptionPolicy"] == "Never"
    r = served.kubectl("create", "priorityclass", "second", "--value=5", "--global-default", check=False)
    assert r.returncode != 0
    assert (
        'priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass batch-high is already marked '
        "as default. Only one default can exist" in r.stderr
    )
    r = served.kubectl("patch", "pc", "batch-low", "-p", '{"globalDefault": true}', check=False)
    assert "PriorityClass batch-high is already marked as default" in r.stderr
    served.kubectl(
        "patch", "pc", "batch-high", "-p", '{"description": "changed"}'
    )  # the default itself: fine
    assert "second" not in served.kubectl("get", "pc").stdout


def test_validation_and_immutability(served: Served) -> None:
    too_high = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: huge}\nvalue: 1000000001\n"
    )
    r = served.kubectl("apply", "-f", "-", input=too_high, check=False)
    assert (
        'The PriorityClass "huge" is invalid: value: Forbidden: maximum allowed value of a user '
        "defined priority is 1000000000" in r.stderr
    )
    reserved = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-mine}\nvalue: 5\n"
    )
    r = served.kubectl("apply", "-f", "-", input=reserved, check=False)
    assert (
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: system-mine is not a known system priority class" in r.stderr
    )
    bad_policy = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: odd}\nvalue: 5\npreemptionPolicy: Sometimes\n"
    r = served.kubectl("apply", "-f", "-", input=bad_policy, check=False)
    assert 'preemptionPolicy: Unsupported value: "Sometimes"' in r.stderr
    applied = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: applied}\nvalue: 9\n"
    assert "created" in served.kubectl("apply", "-f", "-", input=applied).stdout
    out = served.kubectl("apply", "-f", "-", input=applied + "description: second apply\n").stdout
    assert "configured" in out
    out = served.kubectl("apply", "--server-side", "-f", "-", input=applied + "description: third\n").stdout
    assert "serverside-applied" in out
    assert json.loads(served.kubectl("get", "pc", "applied", "-o", "json").stdout)["description"] == "third"
    served.kubectl("create", "priorityclass", "fixed", "--value=7")
    r = served.kubectl("patch", "pc", "fixed", "-p", '{"value": 8}', check=False)
    assert 'The PriorityClass "fixed" is invalid: value: Forbidden: may not be changed in an update.' in (
        r.stderr
    )
    r = served.kubectl("patch", "pc", "fixed", "-p", '{"preemptionPolicy": "Never"}', check=False)
    assert 'preemptionPolicy: Invalid value: "Never": field is immutable' in r.stderr
    assert "huge" not in served.kubectl("get", "pc").stdout  # nothing stored on refusal


def test_the_system_classes_cannot_be_deleted_or_changed(
    served: Served, scheduling: client.SchedulingV1Api
) -> None:
    r = served.kubectl("delete", "pc", "system-node-critical", check=False)
    assert (
        'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class '
        "and cannot be deleted" in r.stderr
    )
    with pytest.raises(ApiException) as exc:
        scheduling.patch_priority_class("system-cluster-critical", {"value": 5})
    assert exc.value.status == 422
    assert "value of system-cluster-critical PriorityClass must be 2000000000" in exc.value.body
    got = scheduling.read_priority_class("system-cluster-critical")
    assert got.value == 2000000000 and not got.global_default
    names = [pc.metadata.name for pc in scheduling.list_priority_class().items]
    assert {"system-cluster-critical", "system-node-critical"} <= set(names)
    made = scheduling.create_priority_class(
        client.V1PriorityClass(metadata=client.V1ObjectMeta(name="from-python"), value=42)
    )
    assert made.preemption_policy == "PreemptLowerPriority" and made.value == 42
    scheduling.delete_priority_class("from-python")
    with pytest.raises(ApiException) as exc:
        scheduling.read_priority_class("from-python")
    assert exc.value.status == 404
