"""Issue 48, item 6: small refusals the API server makes, over real HTTPS.

- a PUT whose body says ``"metadata": null`` (or carries no name): the update handler's ``checkName``
  (``k8s.io/apiserver/pkg/endpoints/handlers/rest.go``) answers 400 "the name of the object () does not match the
  name on the URL (...)"; nothing is stored;
- a string of digits where an integer is expected (``replicas: "3"``): Go's ``encoding/json`` does not turn a string
  into an ``int32``, 400 ``json: cannot unmarshal string into Go struct field ... of type int32``
  (``transformDecodeError``); the same for ``1.0`` (a number with a fraction part);
- a malformed time in a built-in kind: ``metav1.Time.UnmarshalJSON``'s ``time.Parse`` error ends the decode, 400
  (not the 422 of a validation error), worded as Go's ``time.Parse``.
Custom resources (Kueue's) are checked against their schema instead and keep their 422s.
"""

from __future__ import annotations

import json

from tests.http.conftest import Served

JSON = {"Content-Type": "application/json"}


def _deployment(name: str, replicas: object) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"a": name}},
            "template": {
                "metadata": {"labels": {"a": name}},
                "spec": {"containers": [{"name": "c", "image": "b"}]},
            },
        },
    }


def test_put_with_metadata_null_is_refused(served: Served) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "put-null"}, "data": {"a": "1"}}
    assert served.http("POST", "/api/v1/namespaces/default/configmaps", data=json.dumps(cm), headers=JSON).ok
    for meta in (None, {}, {"labels": {"x": "y"}}):
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "2"}}
        r = served.http(
            "PUT", "/api/v1/namespaces/default/configmaps/put-null", data=json.dumps(body), headers=JSON
        )
        assert r.status_code == 400, (meta, r.text)
        status = r.json()
        assert status["reason"] == "BadRequest"
        assert status["message"] == "the name of the object () does not match the name on the URL (put-null)"
    got = served.http("GET", "/api/v1/namespaces/default/configmaps/put-null").json()
    assert got["data"] == {"a": "1"}  # nothing stored


def test_digits_in_a_string_or_a_fraction_are_not_an_int32(served: Served) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    for i, (value, shown) in enumerate(
        (("3", "string"), (1.0, "number 1.0"), (2147483647.0, "number 2147483647.0"))
    ):
        r = served.http("POST", path, data=json.dumps(_deployment(f"digits-{i}", value)), headers=JSON)
        assert r.status_code == 400, (value, r.text)
        assert r.json()["message"].startswith(
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
        ), r.text
        assert (
            f"cannot unmarshal {shown} into Go struct field DeploymentSpec.spec.replicas of type int32"
            in (r.json()["message"])
        ), r.text
        assert served.http("GET", f"{path}/digits-{i}").status_code == 404
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "digits-job"},
        "spec": {
            "activeDeadlineSeconds": "30",
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}},
        },
    }
    r = served.http("POST", "/apis/batch/v1/namespaces/default/jobs", data=json.dumps(job), headers=JSON)
    assert r.status_code == 400 and r.json()["message"] == (
        'Job in version "v1" cannot be handled as a Job: json: cannot unmarshal string into Go struct field '
        "JobSpec.spec.activeDeadlineSeconds of type int64"
    ), r.text


def test_a_malformed_time_in_a_built_in_kind_is_a_decode_error(served: Served) -> None:
    ev = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "bad-time"},
        "involvedObject": {"kind": "Pod", "name": "x", "namespace": "default"},
        "reason": "R",
        "message": "m",
        "lastTimestamp": "yesterday",
    }
    r = served.http("POST", "/api/v1/namespaces/default/events", data=json.dumps(ev), headers=JSON)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'Event in version "v1" cannot be handled as a Event: parsing time "yesterday" as '
        '"2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'
    )
    ev["lastTimestamp"] = "2025-13-01T00:00:00Z"
    r = served.http("POST", "/api/v1/namespaces/default/events", data=json.dumps(ev), headers=JSON)
    assert r.status_code == 400 and r.json()["message"].endswith(
        'parsing time "2025-13-01T00:00:00Z": month out of range'
    ), r.text


def test_a_negative_count_is_refused_in_apimachinerys_words(served: Served) -> None:
    """Issue 49 (decoding words): ``ValidateNonnegativeField``'s "must be greater than or equal to 0", not the
    validator library's "Input should be ..."."""
    r = served.http(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        data=json.dumps(_deployment("neg", -1)),
        headers=JSON,
    )
    assert r.status_code == 422, r.text
    assert r.json()["message"] == (
        'Deployment.apps "neg" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    ), r.text
