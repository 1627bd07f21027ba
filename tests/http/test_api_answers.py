"""Issue 36's smaller findings, each answered as the API server answers it, over real HTTPS with the twin's token
(kubectl where kubectl is the client): negative resource requests, a garbage ``continue`` token,
``resourceVersion=abc`` and ``resourceVersionMatch=Bogus`` on a list."""

from __future__ import annotations

import base64
import json

import pytest

from .conftest import Served

PODS = "/api/v1/namespaces/default/pods"


def test_a_negative_request_is_refused_by_kubectl_apply(served: Served) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "negative", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "-1"}}}]},
    }
    r = served.kubectl("apply", "-f", "-", input=json.dumps(pod), check=False)
    assert r.returncode != 0
    assert (
        'The Pod "negative" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
        "must be greater than or equal to 0" in r.stderr
    ), r.stderr
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "negative", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "resources": {"limits": {"memory": "-4Gi"}}}],
                }
            }
        },
    }
    r = served.http("POST", "/apis/batch/v1/namespaces/default/jobs", json=job)
    assert r.status_code == 422, r.text
    assert r.json()["message"].endswith(
        'spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "-4Gi": '
        "must be greater than or equal to 0"
    )


def _token(data: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("%%%garbage", "illegal base64 data at input byte 0"),
        ("abcde", "illegal base64 data at input byte 4"),
        ("abc=", "illegal base64 data at input byte 3"),
        (
            _token({"v": "meta.k8s.io/v1", "rv": 0, "start": "a\x00"}),
            "incorrect encoded start resourceVersion",
        ),
        (
            _token({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}),
            "encoded start key empty (version meta.k8s.io/v1)",
        ),
        (_token({"v": "other", "rv": 5, "start": "a"}), "server does not recognize this encoded version"),
        (
            _token({"v": "meta.k8s.io/v1", "rv": "5", "start": "a"}),
            "cannot unmarshal string into Go struct field",
        ),
    ],
)
def test_a_garbage_continue_token_is_go_s_400(served: Served, token: str, why: str) -> None:
    r = served.http("GET", f"{PODS}?limit=1&continue={token}")
    assert r.status_code == 400, r.text
    message = r.json()["message"]
    assert message.startswith("invalid continue token: continue key is not valid: ") and why in message, (
        message
    )


def test_resource_version_and_its_match_are_checked_on_a_list(served: Served) -> None:
    r = served.http("GET", f"{PODS}?resourceVersion=abc")
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: '
        'parsing "abc": invalid syntax'
    )
    r = served.http("GET", f"{PODS}?resourceVersion=1&resourceVersionMatch=Bogus")
    assert r.status_code == 422, r.text
    assert r.json()["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Bogus": '
        'supported values: "Exact", "NotOlderThan", ""'
    )
    r = served.http("GET", f"{PODS}?resourceVersionMatch=NotOlderThan")
    assert r.status_code == 422 and "forbidden unless resourceVersion is provided" in r.json()["message"]
    assert (
        served.http("GET", f"{PODS}?resourceVersion=0&resourceVersionMatch=NotOlderThan").status_code == 200
    )
