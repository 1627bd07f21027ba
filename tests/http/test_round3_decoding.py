"""Hardening round 3 (issue 36): what the API server's decoder answers, over HTTPS with the twin's token (and
kubectl where kubectl is the client), and a /metrics page that only names objects that exist."""

from __future__ import annotations

import json

import pytest

from .conftest import Served

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
CMS = "/api/v1/namespaces/default/configmaps"
WLS = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads"


def _deployment(name: str, replicas: str) -> str:
    # the number is spliced in as text: 10**40 must reach the server as a JSON integer literal
    spec = {
        "replicas": "@R@",
        "selector": {"matchLabels": {"a": "b"}},
        "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
    }
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}
    return json.dumps(body).replace('"@R@"', replicas)


def _post(served: Served, path: str, body: str, query: str = "") -> object:
    return served.http("POST", path + query, data=body, headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            DEPLOYMENTS,
            _deployment("d-int32", "1" + "0" * 40),
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number '
            "1" + "0" * 40 + " into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENTS,
            _deployment("d-type", '"many"'),
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into '
            "Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            JOBS,
            '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j-type"},"spec":{"parallelism":2,'
            '"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox",'
            '"ports":[{"containerPort":"http"}]}]}}}}',
            'Job in version "v1" cannot be handled as a Job: json: cannot unmarshal string into Go struct '
            "field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
        ),
        (
            JOBS,
            '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j-list"},"spec":{"template":{"spec":'
            '{"restartPolicy":"Never","containers":{"name":"c"}}}}}',
            'Job in version "v1" cannot be handled as a Job: json: cannot unmarshal object into Go struct '
            "field PodSpec.spec.template.spec.containers of type []v1.Container",
        ),
    ],
    ids=["int32-overflow", "string-for-int32", "nested-port", "object-for-list"],
)
def test_a_value_that_does_not_decode_is_go_s_400_and_nothing_is_stored(
    served: Served, path: str, body: str, message: str
) -> None:
    """kube-apiserver decodes a built-in kind into its Go struct before validating: a value of the wrong JSON
    type, or a number past an int32, is ``transformDecodeError``'s 400, not a 422 in pydantic's words."""
    r = _post(served, path, body)
    assert r.status_code == 400, r.text
    status = r.json()
    assert status["reason"] == "BadRequest" and status["message"] == message
    name = json.loads(body)["metadata"]["name"]
    assert served.http("GET", f"{path}/{name}").status_code == 404


def test_a_custom_resource_s_type_error_stays_its_schema_s_422(served: Served) -> None:
    """A custom resource is decoded as unstructured JSON and checked against its schema: 422 Invalid."""
    r = _post(
        served,
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        '{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue","metadata":{"name":"cq-type"},'
        '"spec":{"resourceGroups":"none"}}',
    )
    assert r.status_code == 422, r.text


def test_a_field_set_twice_is_refused_under_strict_and_a_warning_under_warn(served: Served) -> None:
    """The strict decoder names each field a JSON object sets twice (``duplicate field "data"``): 400 under
    ``fieldValidation=Strict`` with nothing stored, a ``Warning`` header under Warn (the last value kept, as
    Go's decoder keeps it), nothing under Ignore."""
    body = (
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","labels":{"a":"1","a":"2"}},'
        '"data":{"k":"first"},"data":{"k":"second"}}'
    )
    r = _post(served, CMS, body % "dup-strict", "?fieldValidation=Strict")
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "metadata.labels.a", duplicate field "data"'
    )
    assert served.http("GET", f"{CMS}/dup-strict").status_code == 404

    r = _post(served, CMS, body % "dup-warn", "?fieldValidation=Warn")
    assert r.status_code == 201, r.text
    assert r.json()["data"] == {"k": "second"}
    assert r.headers["Warning"] == (
        '299 - "duplicate field \\"metadata.labels.a\\"", 299 - "duplicate field \\"data\\""'
    )
    r = _post(served, CMS, body % "dup-ignore", "?fieldValidation=Ignore")
    assert r.status_code == 201 and "Warning" not in r.headers

    # a string value that looks like keys is not a duplicate
    r = _post(
        served,
        CMS,
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup-none"},"data":{"k":"\\"k\\": \\"v\\""}}',
        "?fieldValidation=Strict",
    )
    assert r.status_code == 201, r.text


def test_kubectl_reads_openapi_v2_as_protobuf_and_says_no_matches_for_an_unknown_kind(served: Served) -> None:
    """kubectl asks ``/openapi/v2`` for protobuf and parses the answer as protobuf: the twin answers gnostic's
    ``Document``, so ``kubectl apply`` of a kind nobody serves ends as upstream's does ("no matches for kind",
    not "proto: cannot parse invalid wire-format data"), and ``kubectl explain`` reads the v2 document."""
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"
    r = served.kubectl("apply", "-f", "-", input=widget, check=False)
    assert r.returncode == 1
    assert 'no matches for kind "Widget" in version "example.com/v1"' in r.stderr, r.stderr
    assert "proto" not in r.stderr
    r = served.kubectl("explain", "deployment.spec.replicas", "--output=plaintext-openapiv2")
    assert "FIELD:    replicas <integer>" in r.stdout
    r = served.kubectl("explain", "clusterqueue.spec", "--output=plaintext-openapiv2")
    assert "resourceGroups" in r.stdout and "KIND:     ClusterQueue" in r.stdout
    answer = served.http(
        "GET", "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
    )
    assert answer.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert answer.content[:2] == b"\x0a\x03" and answer.content[2:5] == b"2.0"  # field 1: swagger "2.0"
    assert served.http("GET", "/openapi/v2").json()["swagger"] == "2.0"


def _samples(served: Served) -> int:
    text = served.http("GET", "/metrics").text
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def test_metrics_name_only_queues_that_exist(served: Served) -> None:
    """A Workload's status can name any ClusterQueue, LocalQueue and priority class: the page grows by none of
    them unless they exist (kube-state-metrics' rule for the objects it labels by), and nothing stays after."""
    before = _samples(served)
    for i in range(20):
        wl = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": f"made-up-{i}"},
            "spec": {
                "queueName": f"no-such-lq-{i}",
                "priority": 5,
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": f"no-such-pc-{i}",
                },
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "c", "image": "busybox"}],
                            }
                        },
                    }
                ],
            },
        }
        assert served.http("POST", WLS, json=wl).status_code == 201
        t = "2026-12-05T00:00:00Z"
        status = {
            "status": {
                "conditions": [
                    {"type": c, "status": "True", "reason": c, "message": "m", "lastTransitionTime": t}
                    for c in ("QuotaReserved", "Admitted", "Finished")
                ],
                "admission": {
                    "clusterQueue": f"no-such-cq-{i}",
                    "podSetAssignments": [{"name": "main", "count": 1}],
                },
            }
        }
        r = served.http(
            "PATCH",
            f"{WLS}/made-up-{i}/status",
            data=json.dumps(status),
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert r.status_code == 200, r.text
    page = served.http("GET", "/metrics").text
    assert "no-such" not in page
    assert _samples(served) <= before + 5  # gauges of existing objects may move; no series per made-up name
    for i in range(20):
        served.http("DELETE", f"{WLS}/made-up-{i}")
    assert "no-such" not in served.http("GET", "/metrics").text


def test_kubectl_apply_of_a_replica_count_past_int32_prints_the_decoder_s_400(served: Served) -> None:
    """Through kubectl (its YAML reader turns 10**40 into the float 1e+40, as upstream's does)."""
    manifest = _deployment("d-kubectl", "1" + "0" * 40)
    r = served.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert r.returncode == 1
    assert r.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" cannot be '
        "handled as a Deployment: json: cannot unmarshal number 1e+40 into Go struct field "
        "DeploymentSpec.spec.replicas of type int32"
    )
