"""Hardening round 4 (issue 49): protobuf bodies and JSON numbers as the API server decodes them, over HTTPS with a
tenant's token that may only create ConfigMaps and Deployments in its namespace.

- a singular embedded message repeated many times is merged as Go merges it (every occurrence's fields, the last
  scalar winning), in one pass over the body;
- a ``Time`` Go decodes but cannot print (seconds 1e15, -2^63, 2^62) and ``FieldsV1`` JSON nested past any decoder
  are a 400 Status naming the field, not a 500;
- a JSON number with a fraction or an exponent into an integer field is Go's ``cannot unmarshal number <literal>``
  with the literal as sent (``1e-400``, not Python's ``0.0``); an integer of 10,001 digits gets the same words,
  not Python's "Exceeds the limit (4300 digits)"."""

from __future__ import annotations

import json

import pytest

from tests.http.conftest import Served
from tests.http.test_rbac_served import token_for
from tests.http.test_units import _pb_body, _pb_field

NS = "round4-decoding"
CMS = f"/api/v1/namespaces/{NS}/configmaps"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
PB = {"Content-Type": "application/vnd.kubernetes.protobuf"}


@pytest.fixture(scope="module")
def tenant(served: Served) -> str:
    served.kubectl("create", "namespace", NS)
    served.kubectl("create", "serviceaccount", "tenant", "-n", NS)
    served.kubectl(
        "create", "role", "writer", "-n", NS, "--verb=get,create", "--resource=configmaps,deployments.apps"
    )
    served.kubectl(
        "create", "rolebinding", "writer", "-n", NS, "--role=writer", f"--serviceaccount={NS}:tenant"
    )
    return token_for(served, NS, "tenant")


def _configmap(meta: bytes) -> bytes:
    return _pb_body(
        "v1", "ConfigMap", _pb_field(1, meta) + _pb_field(2, _pb_field(1, "k") + _pb_field(2, "v"))
    )


def test_a_repeated_embedded_message_is_merged_as_go_merges_it(served: Served, tenant: str) -> None:
    """ObjectMeta sent as many occurrences: the name from one, the labels of all, the last namespace."""
    parts = [_pb_field(1, "merged"), _pb_field(11, _pb_field(1, "a") + _pb_field(2, "1"))]
    parts += [_pb_field(1, "")] * 2000 + [_pb_field(11, _pb_field(1, "b") + _pb_field(2, "2"))]
    parts += [_pb_field(1, "merged")]
    meta = b"".join(_pb_field(1, p) for p in parts)  # each part one occurrence of ObjectMeta (field 1)
    r = served.http("POST", CMS, token=tenant, data=_pb_body_raw(meta), headers=PB)
    assert r.status_code == 201, r.text
    got = served.http("GET", f"{CMS}/merged", token=tenant).json()
    assert got["metadata"]["labels"] == {"a": "1", "b": "2"} and got["data"] == {"k": "v"}


def _pb_body_raw(meta_occurrences: bytes) -> bytes:
    """A ConfigMap whose ObjectMeta is sent as the given occurrences of field 1."""
    return _pb_body("v1", "ConfigMap", meta_occurrences + _pb_field(2, _pb_field(1, "k") + _pb_field(2, "v")))


@pytest.mark.slow
def test_780_000_occurrences_of_object_meta_are_decoded(served: Served, tenant: str) -> None:
    """The 3.1 MB body of issue 49: stored, with its one name (the timing is bench/hardening.py's)."""
    meta = _pb_field(1, _pb_field(1, "")) * 780_000 + _pb_field(1, _pb_field(1, "repeat"))
    body = _pb_body_raw(meta)
    assert len(body) > 3_000_000
    r = served.http("POST", CMS, token=tenant, data=body, headers=PB)
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["name"] == "repeat"


def _seconds(n: int) -> bytes:
    return _pb_field(1, n)  # Timestamp.seconds (a varint; a negative one as its 64-bit two's complement)


@pytest.mark.parametrize(
    "seconds", [10**15, -(2**63), 2**62, 2**63 - 1], ids=["1e15", "-2^63", "2^62", "max"]
)
def test_a_time_go_cannot_print_is_a_400_naming_the_field(served: Served, tenant: str, seconds: int) -> None:
    meta = _pb_field(1, "t") + _pb_field(8, _seconds(seconds))  # ObjectMeta.creationTimestamp
    r = served.http("POST", CMS, token=tenant, data=_configmap(meta), headers=PB)
    assert r.status_code == 400, r.text
    status = r.json()
    assert status["kind"] == "Status" and status["reason"] == "BadRequest"
    assert status["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: metadata.creationTimestamp: '
        "Time.MarshalJSON: year outside of range [0,9999]"
    )
    # in a list's element too: the managed fields' time
    entry = _pb_field(1, "m") + _pb_field(4, _seconds(seconds))
    r = served.http(
        "POST", CMS, token=tenant, data=_configmap(_pb_field(1, "t2") + _pb_field(17, entry)), headers=PB
    )
    assert r.status_code == 400, r.text
    assert "metadata.managedFields.time: Time.MarshalJSON: year outside" in r.json()["message"]


def test_fields_v1_nested_100_000_deep_is_a_400_naming_the_field(served: Served, tenant: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    entry = _pb_field(1, "m") + _pb_field(6, "FieldsV1") + _pb_field(7, _pb_field(1, deep))
    r = served.http(
        "POST", CMS, token=tenant, data=_configmap(_pb_field(1, "f") + _pb_field(17, entry)), headers=PB
    )
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: metadata.managedFields.fieldsV1: '
        "json: exceeded max depth"
    )
    assert served.http("GET", f"{CMS}/f", token=tenant).status_code == 404


def _deployment(name: str, replicas: str) -> str:
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


@pytest.mark.parametrize(
    "literal",
    ["1.0", "2147483647.0", "1e-400", "1e40", "1E2", "-0.0", "1" + "0" * 10_000],
    ids=["1.0", "int32-max.0", "1e-400", "1e40", "1E2", "-0.0", "10^10000"],
)
def test_a_number_that_is_no_int32_is_refused_in_go_s_words_with_its_literal(
    served: Served, tenant: str, literal: str
) -> None:
    name = f"d{len(literal)}-{abs(hash(literal)) % 1000}"
    r = served.http(
        "POST",
        DEPLOYMENTS,
        token=tenant,
        data=_deployment(name, literal),
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number '
        f"{literal} into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    assert served.http("GET", f"{DEPLOYMENTS}/{name}", token=tenant).status_code == 404


def test_a_negative_replicas_is_validation_s_words(served: Served, tenant: str) -> None:
    r = served.http(
        "POST",
        DEPLOYMENTS,
        token=tenant,
        data=_deployment("neg", "-1"),
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 422, r.text
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in r.json()["message"]


def test_a_yaml_integer_of_10_001_digits_is_go_yaml_s_string(served: Served, tenant: str) -> None:
    """go-yaml resolves a scalar that is neither an int nor a float64 as a string: the int32 field refuses it in
    encoding/json's words, not Python's 4,300-digit limit."""
    body = json.loads(_deployment("yaml-big", "0"))
    text = json.dumps(body).replace('"replicas": 0', '"replicas": ' + "1" * 10_001)
    r = served.http(
        "POST", DEPLOYMENTS, token=tenant, data=text, headers={"Content-Type": "application/yaml"}
    )
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
        "struct field DeploymentSpec.spec.replicas of type int32"
    )
