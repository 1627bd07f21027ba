"""Bad input over HTTP gets the API server's status code and a Kubernetes ``Status`` (or Google error) body,
and the twin keeps serving."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.http.conftest import Served

CQ = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues"
CM = "/api/v1/namespaces/default/configmaps"


def _cm(name: str, **extra: Any) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}


@dataclass
class Case:
    id: str
    method: str
    path: str
    status: int
    reason: str = ""
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    token: str | None = ""
    message: str = ""


CASES = [
    Case("no-token", "GET", CM, 401, "Unauthorized", token=None),
    Case("wrong-token", "GET", CM, 401, "Unauthorized", token="not-the-token"),
    Case(
        "malformed-json",
        "POST",
        CM,
        400,
        "BadRequest",
        raw=b'{"apiVersion": "v1", "kind": ',
        headers={"Content-Type": "application/json"},
        message="json parse error",
    ),
    Case(
        "malformed-yaml",
        "POST",
        CM,
        400,
        "BadRequest",
        raw=b"kind: ConfigMap\n  bad: [indent\n",
        headers={"Content-Type": "application/yaml"},
        message="YAML",
    ),
    Case("body-not-object", "POST", CM, 400, "BadRequest", body=[1, 2, 3]),
    Case("empty-body", "POST", CM, 400, "BadRequest", raw=b"", headers={"Content-Type": "application/json"}),
    Case("unknown-resource", "GET", "/api/v1/namespaces/default/frobnicators", 404, "NotFound"),
    Case("unknown-group", "GET", "/apis/nope.example.com/v1/things", 404, "NotFound"),
    Case("unknown-version", "GET", "/apis/kueue.x-k8s.io/v9/clusterqueues", 404, "NotFound"),
    Case("unknown-path", "GET", "/nothing/here", 404, "NotFound"),
    Case("missing-object", "GET", f"{CM}/nope", 404, "NotFound", message='configmaps "nope" not found'),
    Case("already-exists", "POST", CM, 409, "AlreadyExists", body=_cm("exists")),
    Case(
        "invalid-enum",
        "POST",
        CQ,
        422,
        "Invalid",
        body={
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "badq"},
            "spec": {"queueingStrategy": "Random"},
        },
        message="spec.queueingStrategy",
    ),
    Case("invalid-name", "POST", CM, 422, "Invalid", body=_cm("Not_A_Name"), message="metadata.name"),
    Case(
        "invalid-quantity",
        "POST",
        CQ,
        422,
        "Invalid",
        body={
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "badqty"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "lots"}]}],
                    }
                ]
            },
        },
        message="nominalQuota",
    ),
    Case(
        "strict-unknown-field",
        "POST",
        f"{CM}?fieldValidation=Strict",
        400,
        "BadRequest",
        body=_cm("strict", spec={"x": 1}),
        message='unknown field "spec"',
    ),
    Case(
        "namespace-mismatch",
        "POST",
        CM,
        400,
        "BadRequest",
        body={**_cm("nsm"), "metadata": {"name": "nsm", "namespace": "kube-system"}},
    ),
    Case(
        "kind-mismatch",
        "POST",
        CM,
        400,
        "BadRequest",
        body={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "k"}},
    ),
    Case("name-mismatch", "PUT", f"{CM}/exists", 400, "BadRequest", body=_cm("other")),
    Case(
        "too-large",
        "POST",
        CM,
        413,
        "RequestEntityTooLarge",
        raw=json.dumps(_cm("big", data={"x": "a" * (3 * 1024 * 1024 + 10)})).encode(),
        headers={"Content-Type": "application/json"},
    ),
    Case(
        "patch-media-type",
        "PATCH",
        f"{CM}/exists",
        415,
        "UnsupportedMediaType",
        body={"data": {}},
        headers={"Content-Type": "text/plain"},
    ),
    Case(
        "json-patch-test-fails",
        "PATCH",
        f"{CM}/exists",
        422,
        "Invalid",
        body=[{"op": "test", "path": "/metadata/name", "value": "other"}],
        headers={"Content-Type": "application/json-patch+json"},
    ),
    Case(
        "stale-update",
        "PUT",
        f"{CM}/exists",
        409,
        "Conflict",
        body={**_cm("exists"), "metadata": {"name": "exists", "resourceVersion": "1"}},
    ),
    Case(
        "missing-namespace",
        "POST",
        "/api/v1/namespaces/ghost/configmaps",
        404,
        "NotFound",
        body=_cm("g"),
        message='namespaces "ghost" not found',
    ),
    Case("bad-label-selector", "GET", f"{CM}?labelSelector=a%20%3D%3D%3D%20b", 400, "BadRequest"),
    Case(
        "bad-field-validation", "POST", f"{CM}?fieldValidation=Sometimes", 400, "BadRequest", body=_cm("fv")
    ),
    Case("bad-dry-run", "POST", f"{CM}?dryRun=Maybe", 400, "BadRequest", body=_cm("dr")),
    Case("bad-watch-version", "GET", f"{CM}?watch=true&resourceVersion=abc", 400, "BadRequest"),
    Case("method-not-allowed", "PUT", CM, 405, "MethodNotAllowed", body=_cm("x")),
    Case(
        "apply-without-manager",
        "PATCH",
        f"{CM}/exists",
        400,
        "BadRequest",
        raw=b"kind: ConfigMap\n",
        headers={"Content-Type": "application/apply-patch+yaml"},
    ),
    Case(
        "cluster-kind-in-namespace",
        "GET",
        "/apis/kueue.x-k8s.io/v1beta1/namespaces/default/clusterqueues",
        404,
        "NotFound",
    ),
    Case(
        "protobuf-unsupported-kind",
        "POST",
        "/api/v1/namespaces/default/pods",
        415,
        "UnsupportedMediaType",
        raw=b"k8s\x00\n\x0b\n\x02v1\x12\x03Pod\x12\x00",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    ),
    Case("bad-propagation", "DELETE", f"{CM}/exists?propagationPolicy=Sometimes", 400, "BadRequest"),
    Case(
        "wrong-container-logs",
        "GET",
        "/api/v1/namespaces/default/pods/lp/log?container=nope",
        400,
        "BadRequest",
    ),
]


@pytest.fixture(scope="module")
def prepared(served: Served) -> Served:
    served.twin.create(_cm("exists"))
    served.twin.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "lp"},
            "spec": {
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                "nodeSelector": {"none": "x"},
            },
        }
    )
    return served


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(prepared: Served, case: Case) -> None:
    headers = dict(case.headers)
    data = case.raw
    if case.body is not None:
        data = json.dumps(case.body).encode()
        headers.setdefault("Content-Type", "application/json")
    r = prepared.http(case.method, case.path, token=case.token, data=data, headers=headers)
    assert r.status_code == case.status, r.text
    body = r.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == case.status
    assert body["reason"] == case.reason
    assert case.message in body["message"]
    if case.reason == "Invalid" and case.body and isinstance(case.body, dict):  # object problems name fields
        assert body["details"]["causes"], body


def test_invalid_body_lists_every_cause(prepared: Served) -> None:
    r = prepared.http(
        "POST",
        CQ,
        json={
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "many"},
            "spec": {"queueingStrategy": "Random", "stopPolicy": "Never"},
        },
    )
    causes = {c["field"] for c in r.json()["details"]["causes"]}
    assert {"spec.queueingStrategy", "spec.stopPolicy"} <= causes


def test_google_errors_on_the_gke_face(prepared: Served) -> None:
    path = "/v1/projects/p/locations/us-central1/clusters"
    r = prepared.http("GET", path, token=None)
    assert r.status_code == 401 and r.json()["error"]["status"] == "UNAUTHENTICATED"
    r = prepared.http("POST", path, data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_still_serving_after_bad_input(prepared: Served) -> None:
    assert prepared.http("GET", "/version", token=None).json()["major"] == "1"
    assert prepared.http("GET", f"{CM}/exists").json()["metadata"]["name"] == "exists"
    assert prepared.kubectl("get", "cm", "exists").returncode == 0
