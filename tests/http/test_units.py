"""The HTTP faces' pure parts: paths, printing, server-side apply, protobuf bodies, discovery, OpenAPI."""

from __future__ import annotations

import json

import pytest
from starlette.datastructures import QueryParams

from flexq.api.kinds import default_registry
from flexq.errors import BadRequest, Conflict, UnsupportedMediaType
from flexq.http.kube import apply as ssa
from flexq.http.kube import discovery, openapi, protobuf, table
from flexq.http.requestinfo import request_info


@pytest.mark.parametrize(
    "path,want",
    [
        # (resource, namespace, name, subresource, namespaced path, verb)
        ("/api/v1/namespaces/default/pods/x/log", ("pods", "default", "x", "log", True, "get")),
        ("/api/v1/namespaces/foo", ("namespaces", "foo", "foo", "", False, "get")),
        ("/api/v1/namespaces/foo/status", ("namespaces", "foo", "foo", "status", False, "get")),
        ("/api/v1/namespaces/foo/configmaps", ("configmaps", "foo", "", "", True, "list")),
        (
            "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq/status",
            ("clusterqueues", "", "cq", "status", False, "get"),
        ),
        ("/api/v1/watch/namespaces/default/pods", ("pods", "default", "", "", True, "watch")),
        # a namespace subresource in any group, as RequestInfoFactory parses it: never a resource "status"
        ("/apis/example.com/v1/namespaces/x/status", ("namespaces", "x", "x", "status", False, "get")),
        ("/apis/ray.io/v1", None),
        ("/apis/ray.io", None),
        ("/healthz", None),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_paths(path: str, want: tuple[str, str, str, str, bool, str] | None) -> None:
    info = request_info("GET", path, QueryParams(""))
    if want is None:
        assert not info.resource_request
        return
    got = (info.resource, info.namespace, info.name, info.subresource, info.namespaced_path, info.verb)
    assert got == want


def test_jsonpath_and_durations() -> None:
    obj = {
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "False"},
            ]
        },
        "spec": {"a": [{"b": 1}]},
    }
    assert table.jsonpath(obj, ".status.conditions[?(@.type=='Admitted')].status") == ["False"]
    assert table.jsonpath(obj, ".spec.a[0].b") == [1]
    assert table.jsonpath(obj, ".spec.a[*].b") == [1]
    assert table.jsonpath(obj, ".spec.missing") == []
    assert [table.human_duration(s) for s in (5, 119, 130, 600, 7200, 30000, 90000, 200000, 86400 * 30)] == [
        "5s",
        "119s",
        "2m10s",
        "10m",
        "120m",
        "8h",
        "25h",
        "2d7h",
        "30d",
    ]


def test_table_uses_printer_columns() -> None:
    reg = default_registry()
    info = reg.resolve("workloads")
    wl = {
        "metadata": {"name": "w", "creationTimestamp": "2027-01-01T00:00:00Z"},
        "spec": {"queueName": "user-queue"},
        "status": {
            "admission": {"clusterQueue": "cluster-queue"},
            "conditions": [{"type": "Admitted", "status": "True"}],
        },
    }
    t = table.table(info, [wl], now=1_798_761_600.0 + 65, resource_version="7")
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name",
        "Queue",
        "Reserved in",
        "Admitted",
        "Finished",
        "Age",
    ]
    assert t["rows"][0]["cells"] == ["w", "user-queue", "cluster-queue", "True", None, "65s"]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_ssa_fields_conflicts_and_removal() -> None:
    applied = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1"}},
        "data": {"x": "1", "y": "2"},
    }
    first = ssa.apply(None, applied, "alice", False, "v1", "t")
    assert ssa.decode(first["metadata"]["managedFields"][0]["fieldsV1"]) == {
        ("metadata", "labels", "a"),
        ("data", "x"),
        ("data", "y"),
    }
    with pytest.raises(Conflict) as exc:
        ssa.apply(first, {**applied, "data": {"x": "9"}}, "bob", False, "v1", "t")
    assert exc.value.causes[0].field == ".data.x"
    forced = ssa.apply(first, {**applied, "data": {"x": "9"}}, "bob", True, "v1", "t")
    assert forced["data"] == {"x": "9", "y": "2"}
    dropped = ssa.apply(forced, {**applied, "data": {}}, "alice", False, "v1", "t")
    assert dropped["data"] == {"x": "9"}  # alice gave up y (nobody else had it); x is bob's now


def _pb_varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative ints go on the wire as their 64-bit two's complement
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _pb_field(num: int, payload: bytes | str | int | bool) -> bytes:
    """One protobuf field: length-delimited for bytes and str, a varint for int and bool."""
    if isinstance(payload, bool | int):
        return _pb_varint(num << 3) + _pb_varint(int(payload))
    data = payload.encode() if isinstance(payload, str) else payload
    return _pb_varint(num << 3 | 2) + _pb_varint(len(data)) + data


def _pb_body(api_version: str, kind: str, raw: bytes) -> bytes:
    """The ``k8s\\x00`` envelope (runtime.Unknown) around one object's message."""
    return protobuf.MAGIC + _pb_field(1, _pb_field(1, api_version) + _pb_field(2, kind)) + _pb_field(2, raw)


def test_protobuf_configmap() -> None:
    meta = _pb_field(1, b"cm") + _pb_field(3, b"ns")
    entry = _pb_field(1, b"k") + _pb_field(2, b"v")
    raw = _pb_field(1, meta) + _pb_field(2, entry)
    assert protobuf.decode(_pb_body("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {"k": "v"},
        "metadata": {"name": "cm", "namespace": "ns", "creationTimestamp": None},
    }  # Go prints a zero Time
    with pytest.raises(UnsupportedMediaType):
        protobuf.decode(_pb_body("apps/v1", "StatefulSet", b""))  # a kind the twin does not serve
    with pytest.raises(BadRequest):
        protobuf.decode(b"not protobuf")


def test_discovery_and_openapi_agree() -> None:
    kinds = list(default_registry())
    agg = discovery.aggregated(kinds, core=False)
    kueue = next(i for i in agg["items"] if i["metadata"]["name"] == "kueue.x-k8s.io")
    assert [v["version"] for v in kueue["versions"]] == ["v1beta2", "v1beta1"]
    cq = next(r for r in kueue["versions"][0]["resources"] if r["resource"] == "clusterqueues")
    assert cq["scope"] == "Cluster" and cq["shortNames"] == ["cq"]
    assert (
        discovery.wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        )
        == "v2"
    )
    doc = json.loads(openapi.v3_group_version(kinds, "kueue.x-k8s.io", "v1beta1") or b"{}")
    gvks = [
        g for s in doc["components"]["schemas"].values() for g in s.get("x-kubernetes-group-version-kind", [])
    ]
    assert {"group": "kueue.x-k8s.io", "version": "v1beta1", "kind": "ClusterQueue"} in gvks
    patch = doc["paths"]["/apis/kueue.x-k8s.io/v1beta1/clusterqueues/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert set(openapi.v3_index(kinds)["paths"]) >= {"api/v1", "apis/kueue.x-k8s.io/v1beta1"}
